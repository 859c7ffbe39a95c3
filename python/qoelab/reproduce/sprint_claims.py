"""Claims S1-S20 of the Sprint paper (claims file §3) evaluated on the runs of
:mod:`qoelab.reproduce.sprint`.

Each claim gets a *grade* by the claims file's rule (PASS / PARTIAL / FAIL / N/A / NOT RUN) and a
*verdict* on the issue's scale: PASS -> SUPPORTED, PARTIAL -> INCONCLUSIVE (the direction holds,
the magnitude is outside the band; shown as "INCONCLUSIVE (PARTIAL)"), FAIL -> NOT SUPPORTED,
N/A -> OUT OF SCOPE, not computable -> INCONCLUSIVE with the reason. Per-cell values are medians
over seeds with a bootstrap 95% CI.
"""

from __future__ import annotations

import math

from qoelab.reproduce.common import claim
from qoelab.reproduce.sprint import MSS, PLANE_LABEL, median_ci, spearman


def _f(x, nd=0):
    return "n/a" if x is None or x != x else f"{x:.{nd}f}"


def _ci(xs, nd=0, unit=""):
    m, lo, hi, n = median_ci(xs)
    if n == 0:
        return "n/a"
    return f"{m:.{nd}f} [{lo:.{nd}f}, {hi:.{nd}f}]{unit} (n={n})" if n > 1 else f"{m:.{nd}f}{unit} (n=1)"


def _ok(df):
    return df[df["error"].isna()] if "error" in df.columns else df


def cells(df, exp="grid", metric="pct_fs"):
    """{(plane, rate, queue): [values over seeds]}"""
    d = _ok(df)
    d = d[d["exp"] == exp] if len(d) else d
    out: dict = {}
    for (p, r, q), g in d.groupby(["plane", "rate_mbps", "queue_kb"]) if len(d) else []:
        out[(p, float(r), int(q))] = [float(x) for x in g[metric] if x == x]
    return out


def med(xs):
    return median_ci(xs)[0]


def not_run(cid, figures, paper, rule, why):
    return claim(cid, figures, paper, rule, "NOT RUN", f"not run: {why}")


def _grid(df):
    c = cells(df)
    rates = sorted({k[1] for k in c})
    queues = sorted({k[2] for k in c})
    return c, rates, queues


def _missing(c, spec, planes) -> str:
    """The grid cells the spec ran for ``planes`` that have no successful run ("" if none): a rule
    over "every cell" is not graded on the cells that happen to be left."""
    if spec is None or "grid" not in getattr(spec, "families", ()):
        return ""
    miss = [f"{p} {r:g}M/{q} KB" for p in planes for r in spec.rates for q in spec.queues
            if not c.get((p, float(r), int(q)))]
    return "" if not miss else f"no successful run in {len(miss)} grid cell(s): " + ", ".join(miss[:6]) + (
        ", ..." if len(miss) > 6 else "")


def s1(df, spec):
    paper = "Sprint gets its fair share against a bulk flow at every tested rate x queue ([abs] 'consistently above 90%')"
    rule = "PASS: median >= 90% in every cell; PARTIAL: >= 85% everywhere and >= 90% in >= 80% of cells; FAIL otherwise"
    c, rates, queues = _grid(df)
    vals = {(r, q): med(c.get(("sprint", r, q), [])) for r in rates for q in queues if c.get(("sprint", r, q))}
    if not vals:
        return not_run("S1", "Fig. 6", paper, rule, "no E4 grid runs")
    if miss := _missing(c, spec, ("sprint",)):
        return not_run("S1", "Fig. 6", paper, rule, miss)
    v = list(vals.values())
    worst = min(vals, key=vals.get)
    frac90 = sum(x >= 90 for x in v) / len(v)
    grade = "PASS" if min(v) >= 90 else "PARTIAL" if min(v) >= 85 and frac90 >= 0.8 else "FAIL"
    ours = (f"Sprint median %FS over {len(v)} cells: min {_f(min(v))}% at {worst[0]:g} Mbit/s/{worst[1]} KB "
            f"({_ci(c[('sprint',) + worst])}), max {_f(max(v))}%; {frac90:.0%} of cells >= 90%")
    return claim("S1", "Fig. 6", paper, rule, grade, ours, numbers={f"{r:g}M/{q}KB": x for (r, q), x in vals.items()})


def s2(df, spec):
    paper = "DASH loses throughput as the queue grows, down to ~1/3 of its fair share ([abs] '31% under some conditions')"
    rule = ("Direction: at each rate DASH %FS non-increasing in queue (inversions <= 5 points) and pooled Spearman "
            "rho(queue, %FS) <= -0.6; band: worst cell in [15, 50]% and best >= 85%. PASS both; PARTIAL direction only")
    c, rates, queues = _grid(df)
    vals = {(r, q): med(c[("dash", r, q)]) for r in rates for q in queues if c.get(("dash", r, q))}
    if len(queues) < 2:
        return not_run("S2", "Fig. 6", paper, rule, "fewer than 2 queue sizes")
    if miss := _missing(c, spec, ("dash",)):
        return not_run("S2", "Fig. 6", paper, rule, miss)
    inv = 0
    for r in rates:
        seq = [vals[(r, q)] for q in queues if (r, q) in vals]
        inv += sum(1 for a, b in zip(seq, seq[1:]) if b - a > 5)
    xs, ys = [], []
    for (p, r, q), v in c.items():
        if p == "dash":
            xs += [q] * len(v)
            ys += v
    rho = spearman(xs, ys)
    w, b = min(vals.values()), max(vals.values())
    direction = inv == 0 and rho <= -0.6
    band = 15 <= w <= 50 and b >= 85
    grade = "PASS" if direction and band else "PARTIAL" if direction else "FAIL"
    ours = (f"DASH %FS worst {_f(w)}% (paper 31%), best {_f(b)}%; rate-wise inversions > 5 points: {inv}; "
            f"Spearman rho(queue, %FS) = {_f(rho, 3)}; by rate at {queues[0]}->{queues[-1]} KB: "
            + ", ".join(f"{r:g}M {_f(vals.get((r, queues[0])))}->{_f(vals.get((r, queues[-1])))}%" for r in rates))
    return claim("S2", "Fig. 6", paper, rule, grade, ours)


def s3(df, spec):
    paper = "At a fixed queue DASH improves as bandwidth grows (qualitative)"
    rule = "At each queue >= 256 KB: DASH %FS(25) - %FS(3) >= +10 -> PASS; > 0 -> PARTIAL; <= 0 -> FAIL"
    c, rates, queues = _grid(df)
    qs = [q for q in queues if q >= 256]
    if 3 not in rates or 25 not in rates or not qs:
        return not_run("S3", "Fig. 6", paper, rule, "needs 3 and 25 Mbit/s at queues >= 256 KB")
    if miss := [f"{r}M/{q} KB" for r in (3, 25) for q in qs if not c.get(("dash", r, q))]:
        return not_run("S3", "Fig. 6", paper, rule, "no successful DASH run at " + ", ".join(miss))
    d = {q: med(c.get(("dash", 25, q), [])) - med(c.get(("dash", 3, q), [])) for q in qs}
    grade = "PASS" if all(x >= 10 for x in d.values()) else "PARTIAL" if all(x > 0 for x in d.values()) else "FAIL"
    ours = "DASH %FS(25M) - %FS(3M): " + ", ".join(f"{q} KB {_f(x, 1)}" for q, x in d.items())
    return claim("S3", "Fig. 6", paper, rule, grade, ours)


def _paired_diff(df, a, b, exp="grid"):
    """{(rate, queue): [a - b per seed]} over runs sharing rate, queue, rep."""
    d = _ok(df)
    d = d[d["exp"] == exp]
    x = d[d["plane"] == a].set_index(["rate_mbps", "queue_kb", "rep"])["pct_fs"]
    y = d[d["plane"] == b].set_index(["rate_mbps", "queue_kb", "rep"])["pct_fs"]
    j = x.to_frame("a").join(y.to_frame("b"), how="inner").dropna()
    out: dict = {}
    for (r, q, _), row in j.iterrows():
        out.setdefault((float(r), int(q)), []).append(row["a"] - row["b"])
    return out


def _cell_diff(df, a, b, exp="grid"):
    """{(rate, queue): cell value of a - cell value of b}, a cell's value being the median over its
    seeds (claims file §3: "Per-cell value = median over >= 5 seeds"); cells that both planes ran."""
    c = cells(df, exp)
    keys = {k[1:] for k in c if k[0] == a} & {k[1:] for k in c if k[0] == b}
    return {k: med(c[(a,) + k]) - med(c[(b,) + k]) for k in sorted(keys) if c[(a,) + k] and c[(b,) + k]}


def s4(df, spec):
    paper = "Sprint >= DASH everywhere, with large gains where queues are deep"
    rule = ("PASS: Sprint - DASH >= -2 points in every cell and >= +20 in every cell with queue >= 512 KB at 3 Mbit/s; "
            "PARTIAL: first part and the gain >= 10 there; FAIL otherwise (a cell's value: the median over its seeds)")
    meds = _cell_diff(df, "sprint", "dash")
    if not meds:
        return not_run("S4", "Fig. 6", paper, rule, "no grid cells with both Sprint and DASH runs")
    if miss := _missing(cells(df), spec, ("sprint", "dash")):
        return not_run("S4", "Fig. 6", paper, rule, miss)
    deep = {k: v for k, v in meds.items() if k[0] == 3 and k[1] >= 512}
    if not deep:
        return not_run("S4", "Fig. 6", paper, rule, "no 3 Mbit/s cells with a queue >= 512 KB")
    first = min(meds.values()) >= -2
    grade = ("PASS" if first and min(deep.values()) >= 20 else
             "PARTIAL" if first and min(deep.values()) >= 10 else "FAIL")
    worst = min(meds, key=meds.get)
    paired = _paired_diff(df, "sprint", "dash")
    pmeds = {k: med(v) for k, v in paired.items() if v}
    pworst = min(pmeds, key=pmeds.get) if pmeds else None
    ours = (f"Sprint - DASH (cell medians): min {_f(meds[worst], 1)} points at {worst[0]:g}M/{worst[1]} KB, "
            f"max {_f(max(meds.values()), 1)}; at 3 Mbit/s deep queues: "
            + ", ".join(f"{q} KB {_f(deep[(r, q)], 1)}" for (r, q) in sorted(deep))
            + (f". The median of the per-seed paired differences (not the rule's statistic): min "
               f"{_f(pmeds[pworst], 1)} points at {pworst[0]:g}M/{pworst[1]} KB "
               f"({_ci(paired[pworst], 1)})" if pworst else ""))
    return claim("S4", "Fig. 6", paper, rule, grade, ours)


def s5(df, spec):
    paper = "Sprint-x sits between DASH and Sprint (qualitative)"
    rule = ("PASS: Sprint-x >= DASH in >= 80% of cells, Sprint-x <= Sprint + 3 in >= 80% of cells, and mean over cells "
            "DASH < Sprint-x < Sprint; FAIL if the mean order is broken (else PARTIAL)")
    c, rates, queues = _grid(df)
    keys = [(r, q) for r in rates for q in queues if all(c.get((p, r, q)) for p in ("dash", "sprint", "sprintx"))]
    if not keys:
        return not_run("S5", "Fig. 6", paper, rule, "no complete cells")
    if miss := _missing(c, spec, ("dash", "sprint", "sprintx")):
        return not_run("S5", "Fig. 6", paper, rule, miss)
    m = {p: {k: med(c[(p,) + k]) for k in keys} for p in ("dash", "sprint", "sprintx")}
    a = sum(m["sprintx"][k] >= m["dash"][k] for k in keys) / len(keys)
    b = sum(m["sprintx"][k] <= m["sprint"][k] + 3 for k in keys) / len(keys)
    mean = {p: sum(m[p].values()) / len(keys) for p in m}
    order = mean["dash"] < mean["sprintx"] < mean["sprint"]
    grade = "PASS" if a >= 0.8 and b >= 0.8 and order else "FAIL" if not order else "PARTIAL"
    ours = (f"mean %FS over {len(keys)} cells: DASH {_f(mean['dash'], 1)}, Sprint-x {_f(mean['sprintx'], 1)}, "
            f"Sprint {_f(mean['sprint'], 1)}; Sprint-x >= DASH in {a:.0%}, <= Sprint + 3 in {b:.0%} of cells")
    return claim("S5", "Fig. 6", paper, rule, grade, ours)


def s6(df, spec):
    paper = "Sprint and Sprint-x play higher bitrates (Fig. 7) and rebuffer less (Fig. 8) than DASH"
    rule = ("Bitrate: median-bitrate ratio Sprint/DASH and Sprint-x/DASH >= 1.1 in the default cell (3M/256KB) and >= 1.0 "
            "in >= 80% of cells; rebuffering: Sprint stall time <= DASH in >= 80% of cells. Both PASS, one PARTIAL")
    br, rates, queues = cells(df, metric="median_bitrate_kbps"), None, None
    st = cells(df, metric="rebuffer_s")
    keys = sorted({(k[1], k[2]) for k in br})
    keys = [k for k in keys if all(br.get((p,) + k) for p in ("dash", "sprint", "sprintx"))]
    if not keys:
        return not_run("S6", "Figs. 7, 8", paper, rule, "no complete cells")
    rat = {p: {k: med(br[(p,) + k]) / med(br[("dash",) + k]) for k in keys} for p in ("sprint", "sprintx")}
    dflt = (3.0, 256)
    d_ok = dflt in keys and all(rat[p][dflt] >= 1.1 for p in rat)
    frac = min(sum(v >= 1.0 for v in rat[p].values()) / len(keys) for p in rat)
    bitrate = d_ok and frac >= 0.8
    stall_frac = sum(med(st[("sprint",) + k]) <= med(st[("dash",) + k]) for k in keys) / len(keys)
    rebuf = stall_frac >= 0.8
    grade = "PASS" if bitrate and rebuf else "PARTIAL" if bitrate or rebuf else "FAIL"
    ours = ((f"default cell median bitrate ratio Sprint/DASH {_f(rat['sprint'][dflt], 2)}, Sprint-x/DASH "
             f"{_f(rat['sprintx'][dflt], 2)}; " if dflt in keys else "default cell not run; ")
            + f"ratio >= 1 in >= {frac:.0%} of cells; Sprint stall <= DASH in {stall_frac:.0%} of cells")
    return claim("S6", "Figs. 7, 8", paper, rule, grade, ours)


PAPER_T1 = {256: {"bulk+bulk": 0.03, "dash+dash": 0.04, "dash+sprint": 0.12, "dash+bulk": 0.15,
                  "sprint+sprint": 0.06, "sprint+bulk": 0.03},
            512: {"bulk+bulk": 0.05, "dash+dash": 0.10, "dash+sprint": 0.49, "dash+bulk": 0.45,
                  "sprint+sprint": 0.05, "sprint+bulk": 0.03}}


def table1(df) -> dict:
    """{queue: {pair: (median U, [values], median %FS of the first flow)}} from pair runs and the 3 Mbit/s grid."""
    d = _ok(df)
    d = d[(d["rate_mbps"] == 3) & (d["exp"].isin(["pair", "grid"])) & (d["queue_kb"].isin([256, 512]))]
    out: dict = {}
    for (q, parts), g in d.groupby(["queue_kb", "parts"]):
        if parts not in PAPER_T1[256]:
            continue
        out.setdefault(int(q), {})[parts] = (med(list(g["unfairness"])), list(g["unfairness"]), med(list(g["pct_fs"])))
    return out


def s7(df, spec):
    paper = ("Table I unfairness sqrt(1-JFI): 256 KB Bulk-Bulk 0.03, DASH-DASH 0.04, DASH-Sprint 0.12, DASH-Bulk 0.15, "
             "Sprint-Sprint 0.06, Sprint-Bulk 0.03; 512 KB 0.05, 0.10, 0.49, 0.45, 0.05, 0.03")
    rule = ("(a) U(DASH-Bulk), U(DASH-Sprint) > max(U(Bulk-Bulk), U(Sprint-Sprint), U(Sprint-Bulk)) + 0.05 at both "
            "queues; (b) U(512) - U(256) >= 0.15 for DASH-Bulk and DASH-Sprint; (c) every Sprint row <= 0.10; "
            "(d) DASH-DASH <= 0.15. PASS: (a)-(d) and >= 10/12 cells within max(0.10, 0.5 x paper); PARTIAL: "
            "(a)-(c), or (a) and (c) with (b) failing (the direction holds, not the magnitude); FAIL: (a) or (c) "
            "fails")
    t = table1(df)
    need = set(PAPER_T1[256])
    if set(t) != {256, 512} or any(set(t[q]) != need for q in t):
        return not_run("S7", "Table I", paper, rule, "needs all six pairs at 256 and 512 KB (full run)")
    U = {q: {p: t[q][p][0] for p in PAPER_T1[q]} for q in (256, 512)}
    a = all(min(U[q]["dash+bulk"], U[q]["dash+sprint"]) > max(U[q]["bulk+bulk"], U[q]["sprint+sprint"],
                                                              U[q]["sprint+bulk"]) + 0.05 for q in U)
    b = all(U[512][p] - U[256][p] >= 0.15 for p in ("dash+bulk", "dash+sprint"))
    cc = all(U[q][p] <= 0.10 for q in U for p in ("sprint+sprint", "sprint+bulk"))
    dd = all(U[q]["dash+dash"] <= 0.15 for q in U)
    close = sum(abs(U[q][p] - PAPER_T1[q][p]) <= max(0.10, 0.5 * PAPER_T1[q][p]) for q in U for p in need)
    dash_lower = all(t[q][p][2] < 100 for q in t for p in ("dash+bulk", "dash+sprint"))
    grade = ("PASS" if a and b and cc and dd and dash_lower and close >= 10 else "PARTIAL" if a and b and cc
             else "FAIL" if not a or not cc else "PARTIAL")
    ours = ("; ".join(f"{q} KB: " + ", ".join(f"{p} {U[q][p]:.2f}" for p in PAPER_T1[q]) for q in (256, 512))
            + f". (a) {a}, (b) {b}, (c) {cc}, (d) {dd}; {close}/12 cells close to the paper; DASH is the weaker "
              f"flow in DASH-Bulk/DASH-Sprint: {dash_lower}")
    # pairs in the paper's order (iterating the set would follow the string hash: claims.json must
    # be byte-identical between runs)
    return claim("S7", "Table I", paper, rule, grade, ours,
                 table=t and {str(q): {p: [U[q][p], t[q][p][2]] for p in PAPER_T1[q]} for q in (256, 512)})


def s8(df, spec):
    paper = "1 vs 4 bulk flows: similar results. vs 4 bulk: DASH 80%, Sprint 102%; vs 1 bulk: DASH 85%, Sprint 97%"
    rule = ("PASS: Sprint >= 90% in both; DASH <= Sprint - 10 in both; |DASH(4) - DASH(1)| <= 10; DASH within +-15 of "
            "85/80. PARTIAL: the first two")
    d = _ok(df)
    m4 = d[d["exp"] == "multi"]
    g1 = cells(df)
    if not len(m4) or not g1.get(("dash", 3.0, 256)):
        return not_run("S8", "Sec. V-B", paper, rule, "no 4-bulk runs or no 3M/256KB grid cell")
    s4_, d4 = list(m4[m4["plane"] == "sprint"]["pct_fs"]), list(m4[m4["plane"] == "dash"]["pct_fs"])
    s1_, d1 = g1[("sprint", 3.0, 256)], g1[("dash", 3.0, 256)]
    S4, D4, S1, D1 = med(s4_), med(d4), med(s1_), med(d1)
    first = S4 >= 90 and S1 >= 90
    second = D4 <= S4 - 10 and D1 <= S1 - 10
    rest = abs(D4 - D1) <= 10 and abs(D1 - 85) <= 15 and abs(D4 - 80) <= 15
    grade = "PASS" if first and second and rest else "PARTIAL" if first and second else "FAIL"
    ours = (f"1 bulk: DASH {_ci(d1)}%, Sprint {_ci(s1_)}%; 4 bulk: DASH {_ci(d4)}%, Sprint {_ci(s4_)}%")
    return claim("S8", "Sec. V-B", paper, rule, grade, ours)


def alpha_table(df):
    """{(plane, alpha): [% of expected fair share = pct_fs / alpha]}"""
    d = _ok(df)
    d = d[d["exp"] == "alpha"]
    out: dict = {}
    for (p, a), g in d.groupby(["plane", "alpha"]):
        out[(p, float(a))] = [float(x) / float(a) for x in g["pct_fs"]]
    return out


def s9(df, spec):
    paper = ("With a throughput-fraction ABR at alpha < 100% (ON/OFF), Sprint still gets its expected fair share; "
             "without the minimum train throughput degrades significantly (Fig. 11)")
    rule = ("PASS: Sprint >= 90% of expected FS for every alpha in [0.5, 1.0] and no-train >= 15 points below for every "
            "alpha <= 0.9. PARTIAL: gap >= 5 points for alpha <= 0.8 only. FAIL: no gap at alpha <= 0.8")
    t = alpha_table(df)
    alphas = sorted({a for (_, a) in t})
    if not alphas:
        return not_run("S9", "Fig. 11", paper, rule, "no alpha runs")
    sp = {a: med(t.get(("sprint", a), [])) for a in alphas}
    nt = {a: med(t.get(("notrain", a), [])) for a in alphas}
    gap = {a: sp[a] - nt[a] for a in alphas}
    ok1 = all(sp[a] >= 90 for a in alphas if 0.5 <= a <= 1.0)
    ok2 = all(gap[a] >= 15 for a in alphas if a <= 0.9)
    low = [a for a in alphas if a <= 0.8]
    part = low and all(gap[a] >= 5 for a in low)
    grade = "PASS" if ok1 and ok2 else "PARTIAL" if part else "FAIL"
    ours = "% of expected FS (Sprint / no-train / DASH): " + ", ".join(
        f"a={a:g}: {_f(sp[a])}/{_f(nt[a])}/{_f(med(t.get(('dash', a), [])))}" for a in alphas)
    return claim("S9", "Fig. 11", paper, rule, grade, ours)


def s10(df, spec):
    paper = "With Huang's ABR (no pauses) the minimum train is unnecessary: plain pipelining does as well"
    rule = "PASS: |Sprint - plain pipelining (depth 2)| <= 5 points %FS at 3 Mbit/s 256 and 512 KB; FAIL otherwise"
    cd = _cell_diff(df, "sprint", "pipe")
    d = _paired_diff(df, "sprint", "pipe")
    keys = [k for k in cd if k[0] == 3 and k[1] in (256, 512)]
    if not keys:
        return not_run("S10", "Sec. V-C", paper, rule, "no pipelined runs (full run only)")
    ms = {k: cd[k] for k in keys}
    grade = "PASS" if all(abs(x) <= 5 for x in ms.values()) else "FAIL"
    ours = ("Sprint - pipelined (cell medians): " + ", ".join(f"{q} KB {_f(ms[(r, q)], 1)}" for (r, q) in sorted(keys))
            + " points; per-seed paired differences: "
            + ", ".join(f"{q} KB {_ci(d.get((r, q), []), 1)}" for (r, q) in sorted(keys)))
    return claim("S10", "Sec. V-C", paper, rule, grade, ours)


def s11(df, spec):
    paper = ("IWS mechanism: (a) alone cwnd stays above BDP; (b) competitor, no pauses: in-flight drops to 0 at segment "
             "boundaries while cwnd < fair-BDP (IWS at 5, 11, 40, 48, 53 s: ~5 per minute); (c) with pauses cwnd "
             "restarts from IW and never reaches fair-BDP")
    rule = ("IWS onset = a segment boundary (last byte delivered: the flow has no packet left in the bottleneck) "
            "where cwnd (20-ms tcp samples) < (C/n)(base RTT + bottleneck queueing delay). PASS: (b) >= 2 per minute, "
            "(a) <= 0.2 per minute, (c) >= 80% of ON periods (a download after > 1 s idle) start from cwnd <= IW and "
            "peak below fair-BDP. PARTIAL: (b) vs (a) only")
    d = _ok(df)
    d = d[d["exp"] == "iws"]
    if not len(d) or "iws_per_min" not in d:
        return not_run("S11", "Fig. 3", paper, rule, "no E1 runs")
    g = {c: d[d["cell"] == c] for c in "abc"}
    a = med(list(g["a"]["iws_per_min"])) if len(g["a"]) else float("nan")
    b = med(list(g["b"]["iws_per_min"])) if len(g["b"]) else float("nan")
    ab = b >= 2 and a <= 0.2
    c_ok, ctxt = False, "(c) not run"
    if len(g["c"]) and "on_start_iw" in g["c"] and int(g["c"]["on_periods"].sum()):
        # pooled over the ON periods of every seed: "in (c) >= 80% of ON periods start from ..."
        nper = int(g["c"]["on_periods"].sum())
        fi, fp = int(g["c"]["on_start_iw"].sum()) / nper, int(g["c"]["on_peak_below"].sum()) / nper
        c_ok = fi >= 0.8 and fp >= 0.8
        ctxt = (f"(c) {nper} ON periods (all seeds): {_f(100 * fi)}% start from cwnd <= IW (first sample after the "
                f"response's first byte), {_f(100 * fp)}% peak below fair-BDP")
    grade = "PASS" if ab and c_ok else "PARTIAL" if ab else "FAIL"
    times = ", ".join(str(x) for x in g["b"]["iws_times"].head(1)) if len(g["b"]) else ""
    nb = int(g["b"]["iws_boundaries"].sum()) if "iws_boundaries" in g["b"] else 0
    ob = int(g["b"]["iws_onsets"].sum()) if len(g["b"]) else 0
    ours = (f"IWS onsets per minute (median over seeds): (a) alone {_f(a, 2)}, (b) with bulk, no pauses {_f(b, 2)} "
            f"({ob} of {nb} boundaries; first seed at {times} s); " + ctxt)
    return claim("S11", "Fig. 3", paper, rule, grade, ours)


def s12(df, spec):
    paper = "Negative feedback loop without pauses: sequential throughput falls as segment size falls (Fig. 4)"
    rule = ("PASS: %FS monotone non-decreasing in segment size (inversions <= 5 points) and smallest - largest <= -15 "
            "points; PARTIAL: Spearman > 0.6 only")
    d = _ok(df)
    d = d[d["exp"] == "segsize"]
    if not len(d):
        return not_run("S12", "Fig. 4", paper, rule, "fixed-rung runs are in the full run only")
    m = {int(r): med(list(g["pct_fs"])) for r, g in d.groupby("rung")}
    rungs = sorted(m)
    inv = sum(1 for x, y in zip(rungs, rungs[1:]) if m[x] - m[y] > 5)
    rho = spearman(list(d["rung"]), list(d["pct_fs"]))
    diff = m[rungs[0]] - m[rungs[-1]]
    grade = "PASS" if inv == 0 and diff <= -15 else "PARTIAL" if rho > 0.6 else "FAIL"
    from qoelab.reproduce.sprint import LADDER_KBPS
    ours = ("DASH %FS by fixed bitrate: " + ", ".join(f"{LADDER_KBPS[r]}k {_f(m[r])}%" for r in rungs)
            + f"; Spearman {_f(rho, 2)}; smallest - largest {_f(diff, 1)} points")
    return claim("S12", "Fig. 4", paper, rule, grade, ours)


def chunk_points(df, cc="newreno"):
    """E3 points: rows (queue_kb, chunk_b, measured, predicted)."""
    d = _ok(df)
    if "eff_measured" not in d:
        return []
    d = d[(d["exp"] == "chunk") & (d["cc"] == cc)]
    return [(int(r.queue_kb), int(r.chunk_b), float(r.eff_measured), float(r.eff_predicted))
            for r in d.itertuples() if r.eff_measured == r.eff_measured]


def s13(df, spec):
    paper = "Eq. 1 predicts the throughput of real chunk transfers accurately across chunk and queue sizes (Fig. 5)"
    rule = ("E3: an onoff flow sending a chunk after idle (cwnd restarts from IW) against 1 bulk flow, 3 Mbit/s, "
            "chunks 100 KB-10 MB x queues 64/256/1024 KB, 10 transfers per point; prediction = round-by-round Eq. 1 "
            "with the measured fair-BDP and mean ssthresh. PASS: abs error <= 0.10 for >= 80% of points and "
            "Spearman >= 0.9; PARTIAL: abs error <= 0.2 for >= 80%. NewReno primary, Cubic secondary")
    pts = chunk_points(df)
    if not pts:
        return not_run("S13", "Fig. 5", paper, rule, "E3 chunk runs are in the full run only")
    err = [abs(m - p) for _, _, m, p in pts]
    f10 = sum(e <= 0.10 for e in err) / len(err)
    f20 = sum(e <= 0.20 for e in err) / len(err)
    rho = spearman([p for *_, p in pts], [m for _, _, m, _ in pts])
    grade = "PASS" if f10 >= 0.8 and rho >= 0.9 else "PARTIAL" if f20 >= 0.8 else "FAIL"
    bias = sum(m - p for _, _, m, p in pts) / len(pts)
    cub = chunk_points(df, "cubic")
    cerr = [abs(m - p) for _, _, m, p in cub]
    ours = (f"NewReno, {len(pts)} points: |error| <= 0.10 for {f10:.0%}, <= 0.20 for {f20:.0%}; Spearman(pred, meas) "
            f"{_f(rho, 2)}; mean measured - predicted {bias:+.2f}"
            + (f"; Cubic: |error| <= 0.10 for {sum(e <= 0.1 for e in cerr) / len(cerr):.0%}, <= 0.20 for "
               f"{sum(e <= 0.2 for e in cerr) / len(cerr):.0%}" if cerr else ""))
    return claim("S13", "Fig. 5", paper, rule, grade, ours)


def program1_check():
    """S14(a): the model's round-by-round efficiency of S* >= 1 - eps over the claims file's grid."""
    from qoelab import _core
    worst = math.inf
    n = 0
    for bw in (50e3, 100e3, 200e3, 375e3, 750e3, 1.5e6):
        for rtt in (0.02, 0.05, 0.1, 0.2, 0.4, 0.8, 1.5):
            for eps in (0.05, 0.1, 0.2, 0.3, 0.5):
                s = _core.get_chunk_size(bw, rtt, eps, MSS)
                b = bw * rtt
                e = _core.efficiency_rounds(s, b, 0.75 * b, MSS)
                worst = min(worst, e - (1 - eps))
                n += 1
    return worst, n


def s14(df, spec):
    paper = "A chunk of getChunkSize(bw, rtt, eps) bytes reaches efficiency >= 1 - eps (conservatively)"
    rule = ("(a) model: E(S*) >= 1 - eps over bw 50 kB/s-1.5 MB/s x RTT 20 ms-1.5 s x eps {0.05..0.5}; (b) simulated "
            "S* transfer after idle vs a bulk flow (3 Mbit/s, 256 KB, S* from the full-queue RTT, Cubic, 3 transfers) "
            ">= 1 - eps - 0.05 for eps 0.1, 0.25. PASS both; PARTIAL (a) only")
    worst, n = program1_check()
    a = worst >= 0
    d = _ok(df)
    b_txt, b_ok = "(b) not run (full run only)", None
    if "eff_measured" in d and len(d[d["exp"] == "sstar"]):
        x = d[d["exp"] == "sstar"]
        parts, oks = [], []
        for r in x.itertuples():
            eps = float(r.cell[1:])
            oks.append(r.eff_measured >= 1 - eps - 0.05)
            parts.append(f"eps {eps:g}: S* = {r.chunk_b / 1e6:.1f} MB, measured efficiency {r.eff_measured:.2f} "
                         f"(needs >= {1 - eps - 0.05:.2f})")
        b_ok = all(oks)
        b_txt = "(b) " + "; ".join(parts)
    a_txt = f"(a) model min[E(S*) - (1 - eps)] = {worst:+.3f} over {n} points (claims file: +0.040)"
    ours = a_txt + "; " + b_txt
    if b_ok is None and a:
        # PARTIAL means "(b) failed"; a (b) that did not run is not graded
        return not_run("S14", "Program 1", paper, rule, f"(b) has no S* transfer runs; {a_txt}")
    grade = "PASS" if a and b_ok else "PARTIAL" if a else "FAIL"
    return claim("S14", "Program 1", paper, rule, grade, ours)


def s15(df, spec):
    paper = ("Home-router setup with a browser download: Sprint slightly above its fair share, Sprint-x close, DASH less; "
             "median bitrate DASH 1010, Sprint 1519, Sprint-x 1519 kbit/s; no rebuffering; buffer bounded")
    rule = ("E9 = the E4 default cell (3 Mbit/s, 256 KB, 1 bulk flow from its own server). PASS: Sprint >= 95%; Sprint-x "
            ">= 90%; DASH <= Sprint - 10; median bitrate Sprint/DASH >= 1.2; 0 stalls after startup for Sprint and "
            "Sprint-x; max buffer <= 240 s + S*. Direction only (Sprint > DASH by >= 10, bitrate higher): PARTIAL")
    c = cells(df)
    br = cells(df, metric="median_bitrate_kbps")
    st = cells(df, metric="stall_after_startup_s")
    mb = cells(df, metric="max_buffer_s")
    k = (3.0, 256)
    if not all(c.get((p,) + k) for p in ("dash", "sprint", "sprintx")):
        return not_run("S15", "Fig. 10", paper, rule, "default cell 3 Mbit/s/256 KB not in this run")
    S, X, D = (med(c[(p,) + k]) for p in ("sprint", "sprintx", "dash"))
    bS, bX, bD = (med(br[(p,) + k]) for p in ("sprint", "sprintx", "dash"))
    stalls = max(max(st[("sprint",) + k]), max(st[("sprintx",) + k]))
    maxbuf = max(max(mb[("sprint",) + k]), max(mb[("sprintx",) + k]))
    # S* at the default cell (fair share 1.5 Mbit/s, full-queue RTT 783 ms) in seconds of the 1519k rung
    from qoelab import _core
    sstar_s = _core.get_chunk_size(1.5e6 / 8, 0.783, 0.1, MSS) * 8 / 1.519e6
    ok = (S >= 95 and X >= 90 and D <= S - 10 and bS / bD >= 1.2 and stalls == 0 and maxbuf <= 240 + sstar_s)
    direction = D <= S - 10 and bS > bD
    grade = "PASS" if ok else "PARTIAL" if direction else "FAIL"
    ours = (f"%FS Sprint {_ci(c[('sprint',) + k])}, Sprint-x {_ci(c[('sprintx',) + k])}, DASH {_ci(c[('dash',) + k])}; "
            f"median bitrate {bD:.0f}/{bS:.0f}/{bX:.0f} kbit/s (DASH/Sprint/Sprint-x; ratio {bS / bD:.2f}); stall "
            f"after startup (max over seeds) {stalls:.1f} s; max buffer {maxbuf:.0f} s (bound 240 + S* = "
            f"{240 + sstar_s:.0f} s)")
    return claim("S15", "Fig. 10", paper, rule, grade, ours)


def s16(df, spec):
    paper = "Over T-Mobile Sprint uses 98% of its fair share, DASH 80% (5 x 10 min, tethered)"
    rule = ("Analogue only (Mahimahi T-Mobile LTE driving trace, 1 MB droptail buffer, 1 bulk flow, 100 ms base RTT), "
            "graded at most PARTIAL ('proxy'): PARTIAL if the average Sprint %FS >= 90 and DASH <= Sprint - 10; "
            "FAIL otherwise")
    d = _ok(df)
    d = d[d["exp"] == "cell"] if len(d) else d
    if not len(d):
        from qoelab.reproduce.sprint import CELL_TRACE, cell_trace_available
        why = ("the cellular trace " + CELL_TRACE + " is not in the data folder (../shared/data or $QOELAB_DATA)"
               if not cell_trace_available() else "no cellular-proxy runs in this grid")
        return not_run("S16", "Sec. V-D", paper, rule, why)
    sp = [float(x) for x in d[d["plane"] == "sprint"]["pct_fs"]]
    da = [float(x) for x in d[d["plane"] == "dash"]["pct_fs"]]
    if not sp or not da:
        return not_run("S16", "Sec. V-D", paper, rule, "missing DASH or Sprint cellular runs")
    S, D = sum(sp) / len(sp), sum(da) / len(da)
    grade = "PARTIAL" if S >= 90 and D <= S - 10 else "FAIL"
    ours = (f"proxy (cellular trace, not T-Mobile tethering): average %FS Sprint {S:.0f} ({_ci(sp)}), DASH {D:.0f} "
            f"({_ci(da)}) over {len(sp)} seeds")
    return claim("S16", "Sec. V-D", paper, rule, grade, ours)


def s17(df, mdf, spec):
    paper = "Cancelling on bitrate switches costs Sprint-x throughput: fair share only in minutes without changes (Fig. 13)"
    rule = ("Per-minute %FS of Sprint-x (3 Mbit/s, 256 KB, after 60 s warm-up), minutes with 0 vs >= 1 cancel. PASS: "
            "no-cancel median >= 90% and >= 10 points above the with-cancel median, and corr(cancels, %FS) < 0; "
            "PARTIAL: corr < 0 and no-cancel median above with-cancel")
    if mdf is None or not len(mdf):
        return not_run("S17", "Fig. 13", paper, rule, "no Sprint-x per-minute runs")
    m = mdf.dropna(subset=["pct_fs"])
    z = list(m[m["cancels"] == 0]["pct_fs"])
    w = list(m[m["cancels"] > 0]["pct_fs"])
    corr = float(m["cancels"].corr(m["pct_fs"])) if len(m) > 2 and m["cancels"].std() > 0 else float("nan")
    if not z or not w:
        return claim("S17", "Fig. 13", paper, rule, "NOT RUN",
                     f"not computable: {len(z)} minutes without and {len(w)} with cancels")
    mz, mw = med(z), med(w)
    grade = ("PASS" if mz >= 90 and mz - mw >= 10 and corr < 0 else "PARTIAL" if corr < 0 and mz > mw else "FAIL")
    ours = (f"{len(m)} minutes: no cancel {_ci(z, unit='%')}, >= 1 cancel {_ci(w, unit='%')}; "
            f"corr(cancels, %FS) = {_f(corr, 2)}")
    return claim("S17", "Fig. 13", paper, rule, grade, ours)


def s18(df, spec):
    paper = ("Arithmetic anchors: 256 KB at 3 Mbit/s drains in 683 ms; 'BDP could grow by 583%' (100 ms base); 5 Mbit/s "
             "with no queue: BDP 100 kbit < IW 117 kbit")
    rule = "683 ms with KB = 1000; 583% only as 683/100 - 1 (the true growth is +683%, pitfall P13); IW 116.8 kbit"
    drain = 256_000 * 8 / 3e6 * 1000
    growth_paper = drain / 100 - 1
    growth_true = (100 + drain) / 100 - 1
    iw = 10 * MSS * 8 / 1000
    bdp = 5e6 * 0.020 / 1000
    ok = round(drain) == 683 and round(growth_paper * 100) == 583 and round(iw, 1) == 116.8 and bdp < iw
    ours = (f"drain {drain:.1f} ms; 683/100 - 1 = {growth_paper:.2%} (true BDP growth +{growth_true:.0%}); IW "
            f"{iw:.1f} kbit > BDP {bdp:.0f} kbit (5 Mbit/s x 20 ms)")
    return claim("S18", "Sec. II-B, III", paper, rule, "PASS" if ok else "FAIL", ours)


def s19(df, spec):
    paper = "With a small bottleneck queue (Huang's 15 KB) sequential downloads don't suffer"
    rule = "5 Mbit/s, 15 KB, 20 ms base, 1 bulk, Huang ABR. PASS: DASH >= 90% of fair share"
    d = _ok(df)
    d = d[d["exp"] == "smallq"]
    if not len(d):
        return not_run("S19", "Sec. III", paper, rule, "small-queue runs are in the full run only")
    v = list(d["pct_fs"])
    grade = "PASS" if med(v) >= 90 else "FAIL"
    return claim("S19", "Sec. III", paper, rule, grade, f"DASH %FS {_ci(v)}%")


def s20(df, spec):
    paper = ("Industry players (Netflix, Youtube, Hulu, Amazon) fall well short of their fair share against a file "
             "download ([abs] 'often below 50%'; Table II)")
    return claim("S20", "Figs. 9, 12, Table II", paper, "N/A", "N/A",
                 "out of scope: needs the real services, their players and CDNs and a real home network (claims file §4)")


def evaluate(df, mdf, spec) -> list[dict]:
    out = []
    for fn in (s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15, s16, s17, s18, s19, s20):
        cid = "S" + fn.__name__[1:]
        try:
            c = fn(df, mdf, spec) if fn is s17 else fn(df, spec)
        except Exception as e:  # a claim that cannot be evaluated is inconclusive, with the reason
            c = claim(cid, "", "", "", "NOT RUN", f"could not evaluate: {type(e).__name__}: {e}")
        out.append(c)
    return out


__all__ = ["evaluate", "cells", "table1", "alpha_table", "program1_check", "PAPER_T1", "PLANE_LABEL"]
