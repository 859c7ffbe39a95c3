"""Claims P1-P21 of ../shared/reference/claims/socket-intents.md §4, judged by their rules on the
grid of :mod:`qoelab.reproduce.socket_intents`.

A *case* is (page, scenario) of one set; the primary set is the Alexa-100-like one. Speedup of
policy P over baseline X: s = PLT(X) / PLT(P); faster: s > 1 + eps, slower: s < 1 - eps, equal
otherwise, eps = 1e-3 (the sensitivity at 1e-2 is reported). Grades: PASS / PARTIAL / FAIL as the
claims file defines them (direction or ordering holds but a magnitude is outside its band:
PARTIAL); mapped to the verdicts by :data:`qoelab.reproduce.common.GRADE_TO_VERDICT`.
"""

from __future__ import annotations

import math

import numpy as np

from qoelab.reproduce.common import claim

EPS = 1e-3
PRIMARY = "alexa100"
SECOND = "alexa1000"


def wide(df, set_name: str, value: str = "plt_s", seed: int = 1):
    d = df[(df["set"] == set_name) & (df["seed"] == seed)]
    return d.pivot(index=["page", "scenario"], columns="policy", values=value)


def fractions(s, eps: float = EPS) -> dict:
    """Faster / slower / equal fractions of the finite speedups (a case without a result, NaN, is
    in none: it was counted as equal until 2026-11-30)."""
    s = np.asarray(s, dtype=float)
    s = s[np.isfinite(s)]
    n = len(s)
    if n == 0:
        return {"faster": math.nan, "slower": math.nan, "equal": math.nan, "n": 0}
    f = float(np.mean(s > 1 + eps))
    sl = float(np.mean(s < 1 - eps))
    return {"faster": f, "slower": sl, "equal": 1.0 - f - sl, "n": n}


def pct(x: float) -> str:
    return "n/a" if x != x else f"{100 * x:.1f}%"


def inband(x: float, lo: float, hi: float) -> bool:
    return x == x and lo <= x <= hi


def spearman(x, y) -> float:
    import pandas as pd
    a = pd.Series(np.asarray(x, dtype=float)).rank().to_numpy()
    b = pd.Series(np.asarray(y, dtype=float)).rank().to_numpy()
    if a.std() == 0 or b.std() == 0:
        return math.nan
    return float(np.corrcoef(a, b)[0, 1])


def spearman_ci(x, y, reps: int = 200, n_max: int = 20_000, seed: int = 13) -> tuple[float, float, float]:
    """Spearman's rho on (a subsample of) the cases, with a bootstrap 95% CI."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    rng = np.random.default_rng(seed)
    if len(x) > n_max:
        k = rng.choice(len(x), n_max, replace=False)
        x, y = x[k], y[k]
    rho = spearman(x, y)
    boots = []
    for _ in range(reps):
        k = rng.integers(0, len(x), len(x))
        boots.append(spearman(x[k], y[k]))
    boots = np.sort(np.array([b for b in boots if b == b]))
    if len(boots) == 0:
        return rho, math.nan, math.nan
    return rho, float(boots[int(0.025 * len(boots))]), float(boots[int(0.975 * len(boots)) - 1])


def ks(a, b) -> float:
    a = np.sort(np.asarray(a, dtype=float))
    b = np.sort(np.asarray(b, dtype=float))
    if len(a) == 0 or len(b) == 0:
        return math.nan
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / len(a)
    fb = np.searchsorted(b, grid, side="right") / len(b)
    return float(np.max(np.abs(fa - fb)))


def ftime(s: float, b: float, rtt: float, mss: float = 1460.0) -> float:
    """The public code's closed form for one transfer after the handshake (claims file §1.4)."""
    rem, ws, t = s, 10.0, 0.0
    while ws * mss / rtt < b and rem > ws * mss:
        rem -= ws * mss
        t += rtt
        ws *= 2
    return t + rem / b


def hand_cases() -> list[dict]:
    """P19: the public code's hand-computed cases in the model, 8 Mbit/s (1e6 B/s) and 20 ms."""
    from qoelab import _core
    b, rtt = 1e6, 0.02
    ifs = [(1_000_000, 20_000_000, []), (1_000_000, 20_000_000, [])]
    first = 2 * rtt + ftime(1e6, b, rtt)
    out = []
    for label, extra in (("1 x 1 MB", []), ("1 MB then 2 x 200 KB", [200_000] * 2),
                         ("1 MB then 14 x 200 KB (14 origins)", [200_000] * 14)):
        n = len(extra)
        page = ([1_000_000] + extra, [0] + list(range(1, n + 1)), [False] * (n + 1), [-1] + [0] * n)
        got = _core.pageload_run(page, ifs, "if1")["plt_ns"] / 1e9
        want = first + (2 * rtt + ftime(2e5, b / n, rtt) if n else 0.0)
        out.append({"case": label, "model_s": got, "hand_s": want, "ok": abs(got - want) <= rtt})
    return out


P17_RULE = ("cross-model: handcrafted pages in qoelab's packet-level HTTP/1.1 + TCP browser (NewReno, IW10, 6 "
             "connections per origin, 1,000-packet drop-tail buffer) vs the flow model at (50 ms, 6 Mbit/s) and "
             "(50 ms, 0.5 Mbit/s): PASS if flow <= packet in >= 80% of the pages and the median |relative "
             "difference| <= 15%, and flow-EAF s > 1 at (50 ms/6) + (50 ms/5) for every page with >= 2 objects "
             ">= 100 KB; PARTIAL if only one of the two parts holds")
P18_RULE = ("closed loop: Alexa-100-like pages loaded by the packet-level browser at (10 ms, 50 Mbit/s) and (50 ms, "
            "6 Mbit/s) -> HAR files -> bandwidth estimated by the paper's method (objects > 50 KB, parallelism "
            "taken into account, median over all pages), RTT by ping (the base RTT) -> flow-model replay with "
            "Interface 1; PASS if the pooled median relative difference (flow - packet) / packet is within +-5% "
            "and its IQR within +-25%")


def crossmodel_claims(cross: dict | None) -> list[dict]:
    """P17 and P18 from :func:`qoelab.reproduce.socket_intents.run_crossmodel`."""
    if not cross or "error" in cross:
        why = cross.get("error") if cross else "the cross-model validation did not run"
        return [claim("P17", "§3.5.1, Fig. 3.2", "simulator vs the real proxy/testbed: slightly optimistic, small "
                      "differences", P17_RULE, "NOT RUN", f"not run: {why}"),
                claim("P18", "§3.5.2, Fig. 3.3", "HAR replay close to the real load times", P18_RULE, "NOT RUN",
                      f"not run: {why}")]
    a = cross["p17"]
    ok_cmp = a["frac_flow_le_packet"] >= 0.8 and a["median_abs_rel_diff"] <= 0.15
    ok_eaf = a["eaf_all_faster"]
    slow = [x["page"] for x in a["eaf"] if not x["speedup"] > 1]
    bys = "; ".join(f"{k}: flow <= packet {pct(v['frac_flow_le_packet'])}, median |diff| "
                    f"{pct(v['median_abs_rel_diff'])}" for k, v in a["by_setting"].items())
    out = [claim("P17", "§3.5.1, Fig. 3.2", "the simulator is somewhat more optimistic than the testbed, the "
                 "differences are small, and EAF gives speedups in both", P17_RULE,
                 _grade(ok_cmp and ok_eaf, ok_cmp or ok_eaf),
                 f"flow <= packet in {pct(a['frac_flow_le_packet'])} of {a['n']} (page, setting) pairs, median "
                 f"|relative difference| {pct(a['median_abs_rel_diff'])} ({bys}); flow-EAF s > 1 for "
                 f"{sum(x['speedup'] > 1 for x in a['eaf'])} of {len(a['eaf'])} pages with >= 2 objects >= 100 KB"
                 + (f" (s = 1 for {', '.join(slow)}: root + one child, a chain that no policy can parallelize)"
                    if slow else "") + " (cross-model, not a testbed)")]
    b = cross["p18"]
    pooled = b["pooled"]
    ok_med = abs(pooled["median_rel_diff"]) <= 0.05
    ok_iqr = pooled["p25"] >= -0.25 and pooled["p75"] <= 0.25
    sets = "; ".join(f"{k}: bw estimate {v['bw_estimate_bytes'] * 8 / 1e6:.2f} Mbit/s (true "
                     f"{v['bw_true_bytes'] * 8 / 1e6:.2f}), median {100 * v['median_rel_diff']:+.1f}%"
                     for k, v in b.items() if k != "pooled")
    out.append(claim("P18", "§3.5.2, Fig. 3.3", "replaying a HAR in the simulator (one interface, estimated "
                     "bandwidth and RTT) gives load times close to the real ones: median difference 1.5%",
                     P18_RULE, "PASS" if ok_med and ok_iqr else "FAIL",
                     f"pooled over {pooled['n']} loads: median relative difference "
                     f"{100 * pooled['median_rel_diff']:+.1f}%, IQR [{100 * pooled['p25']:+.1f}%, "
                     f"{100 * pooled['p75']:+.1f}%] ({sets}); the flow model is optimistic: see "
                     "docs/validation/pageload.md for the decomposition (closed loop, not real pages)"))
    return out


def sensitivity(df, sens, primary: str = PRIMARY) -> list[dict]:
    """The headline fractions (P1, P2, P5, P8) on the primary set under each sensitivity variant, next
    to the base model's: EAF / EAF-MPTCP / MPTCP if1 faster or slower than Interface 1, P(EAF s > 2),
    the median Interface 1 load time."""
    import pandas as pd
    base = df[(df["set"] == primary) & (df["seed"] == 1)][["page", "scenario", "policy", "plt_ns"]].copy()
    base["variant"] = "base"
    both = pd.concat([base, sens], ignore_index=True)
    out = []
    for v, d in both.groupby("variant", sort=False, observed=True):
        w = d.pivot_table(index=["page", "scenario"], columns="policy", values="plt_ns", observed=True)
        if "if1" not in w:
            continue
        row = {"variant": v, "cases": int(len(w)), "if1_median_s": float(w["if1"].median() / 1e9)}
        for p in ("eaf", "eaf-mptcp", "mptcp-if1"):
            if p in w:
                f = fractions(w["if1"] / w[p])
                row[f"{p}_faster"], row[f"{p}_slower"] = f["faster"], f["slower"]
        if "eaf" in w:
            row["eaf_s_gt_2"] = float(np.mean(w["if1"] / w["eaf"] > 2))
        if "mptcp-if1" in w:
            # P5's own statistic: s < 0.99
            row["mptcp-if1_s_lt_099"] = float(np.mean(w["if1"] / w["mptcp-if1"] < 0.99))
        out.append(row)
    return out


def _grade(ok_all: bool, ok_dir: bool) -> str:
    return "PASS" if ok_all else ("PARTIAL" if ok_dir else "FAIL")


def evaluate(df, pages, scen, wstats: dict, spec, perf: dict, cross: dict | None = None) -> list[dict]:
    import pandas as pd
    claims = []
    # the workload is the pages loaded (the quick run loads a few of the generated set; the gate
    # looked at the whole generated set until 2026-11-30)
    wl_ok = bool(wstats.get(PRIMARY, {}).get("loaded", {}).get("all_targets_met"))
    wl_note = ("workload targets met by the pages loaded" if wl_ok else
               "workload targets NOT met by the pages loaded: at most PARTIAL")

    def wd(grade: str) -> str:  # workload-dependent: PASS only with a calibrated workload
        return "PARTIAL" if grade == "PASS" and not wl_ok else grade

    w = wide(df, PRIMARY)
    if w.empty or "if1" not in w:
        return [claim("P1", "-", "-", "-", "NOT RUN", "no runs")]
    base = w["if1"]
    s = {p: (base / w[p]).to_numpy() for p in w.columns}
    fr = {p: fractions(s[p]) for p in s}
    fr2 = {p: fractions(s[p], 1e-2) for p in s}
    cases = w.reset_index()[["page", "scenario"]]
    cases = cases.merge(scen, on="scenario", how="left").merge(
        pages[pages["set"] == PRIMARY][["page", "bytes", "objects", "median_object_bytes"]], on="page", how="left")
    off = wide(df, PRIMARY, "off_first")
    blk = wide(df, PRIMARY, "blocked")
    heur = fr.get("eaf-heuristic")

    # P1
    f = fr["eaf"]
    g = wd(_grade(inband(f["faster"], 0.30, 0.60), f["faster"] > f["slower"]))
    ours = (f"EAF faster than if1 in {pct(f['faster'])} of {f['n']} cases (equal {pct(f['equal'])}, slower "
            f"{pct(f['slower'])}; eps 1e-2: faster {pct(fr2['eaf']['faster'])})"
            + (f"; prototype estimator (eaf-heuristic): faster {pct(heur['faster'])}, slower {pct(heur['slower'])}"
               if heur else "") + f"; {wl_note}")
    claims.append(claim("P1", "§3.5.3, Fig. 3.4a", "EAF faster than Interface 1 in more than 42% of cases",
                        "faster fraction in [30%, 60%] (workload-dependent)", g, ours, value=f["faster"]))
    # P2
    fe, fm = fr["eaf"]["faster"], fr["eaf-mptcp"]["faster"]
    order = fm >= fe + 0.05
    g = "FAIL" if not order else wd(_grade(inband(fm, 0.45, 0.80), True))
    claims.append(claim("P2", "§3.5.3, Fig. 3.4a", "EAF-MPTCP faster than if1 in 63% of cases, more often than EAF",
                        "frac(EAF-MPTCP) > frac(EAF) by >= 5 pp (strict); EAF-MPTCP in [45%, 80%]", g,
                        f"EAF-MPTCP faster in {pct(fm)} vs EAF {pct(fe)} ({100 * (fm - fe):+.1f} pp)", value=fm))
    # P3
    eq_mask = np.abs(s["eaf"] - 1) <= EPS
    mech = float(np.mean(off["eaf"].to_numpy()[eq_mask] == 0)) if eq_mask.any() else math.nan
    near = int(np.sum(eq_mask & (s["eaf"] != 1)))
    fe_eq = fr["eaf"]["equal"]
    g = "FAIL" if not (mech >= 0.99) else wd(_grade(inband(fe_eq, 0.40, 0.70), True))
    claims.append(claim("P3", "§3.5.3, §3.5.5", "otherwise EAF ties with if1 (56.6% equal): everything over if1",
                        "(a) EAF equal fraction in [40%, 70%]; (b) >= 99% of equal cases put every object on if1", g,
                        f"EAF equal in {pct(fe_eq)}; of those, every object on if1 in {pct(mech)} ({near} of the "
                        f"{int(eq_mask.sum())} equal cases are near-ties, 0 < |s - 1| <= {EPS:g}: an object went over "
                        "interface 2 and moved the load time by less than eps)", value=fe_eq))
    # P4
    se, sm = fr["eaf"]["slower"], fr["eaf-mptcp"]["slower"]
    sl_mask = s["eaf"] < 1 - EPS
    diag = float(np.mean(blk["eaf"].to_numpy()[sl_mask])) if sl_mask.any() else math.nan
    worst = float(np.min(s["eaf"])) if len(s["eaf"]) else math.nan
    g = "PASS" if max(se, sm) <= 0.03 else ("PARTIAL" if max(se, sm) <= 0.06 else "FAIL")
    claims.append(claim("P4", "§3.5.3, Fig. 3.7", "EAF and EAF-MPTCP slower than if1 in ~1.5% of cases",
                        "slower fraction <= 3% for both (PARTIAL <= 6%)", g,
                        f"slower: EAF {pct(se)}, EAF-MPTCP {pct(sm)}; min EAF speedup {worst:.3f}; EAF slower cases "
                        f"with a limit-blocked transfer: {pct(diag)}", value=max(se, sm)))
    # P5
    fm1 = fr["mptcp-if1"]
    slow99 = float(np.mean(s["mptcp-if1"] < 0.99))
    g = "FAIL" if slow99 > 0.005 else _grade(inband(fm1["faster"], 0.60, 0.90), True)
    claims.append(claim("P5", "§3.5.3-3.5.4", "MPTCP if1 faster than if1 in 78% of cases, practically never slower",
                        "faster in [60%, 90%]; slower (s < 0.99) <= 0.5% (strict)", g,
                        f"faster {pct(fm1['faster'])}, s < 0.99 in {pct(slow99)} (min s {np.min(s['mptcp-if1']):.3f})",
                        value=fm1["faster"]))
    # P6 (seeds)
    rnd = df[(df["set"] == PRIMARY) & (df["policy"] == "mptcp-rnd")].pivot(index=["page", "scenario"], columns="seed",
                                                                          values="plt_s")
    rnd = rnd.reindex(w.index)
    per_seed = {int(k): fractions((base / rnd[k]).to_numpy()) for k in rnd.columns}
    sl = [v["slower"] for v in per_seed.values()]
    mins = [float(np.min((base / rnd[k]).to_numpy())) for k in rnd.columns]
    sl_mean = float(np.mean(sl)) if sl else math.nan
    min_s = min(mins) if mins else math.nan
    a, b = inband(sl_mean, 0.35, 0.60), min_s <= 0.33
    # "Report min s; 0.1 +- factor 2 = PASS": the magnitude band of min s is [0.05, 0.2]
    g = wd(_grade(a and inband(min_s, 0.05, 0.2), a or b))
    claims.append(claim("P6", "§3.5.3-3.5.4, Fig. 3.4a", "MPTCP rnd slower than if1 in 48% of cases, up to 10x",
                        "slower in [35%, 60%] (seed mean); min s <= 0.33, and in [0.05, 0.2] (0.1 +- factor 2) "
                        "for PASS", g,
                        f"slower {pct(sl_mean)} (seeds {len(sl)}: {pct(min(sl)) if sl else 'n/a'}-"
                        f"{pct(max(sl)) if sl else 'n/a'}); min s {min_s:.3f} (1/{1 / min_s:.1f})", value=sl_mean))
    # P7
    s2, sr = fr["if2"]["slower"], fr["rr"]["slower"]
    g = wd(_grade(inband(s2, 0.55, 0.85) and inband(sr, 0.55, 0.85), s2 > 0.5 and sr > 0.5))
    claims.append(claim("P7", "§3.5.3", "Interface 2 and Round Robin slower than if1 in about 70% of cases",
                        "both slower in [55%, 85%]", g,
                        f"slower: if2 {pct(s2)}, RR {pct(sr)}; ordering if2 >= RR - 5 pp: {s2 >= sr - 0.05}",
                        value=s2))
    # P8
    se_ = s["eaf"]
    b1 = float(np.mean((se_ > 1 + EPS) & (se_ <= 2)))
    b2 = float(np.mean((se_ > 2) & (se_ <= 5)))
    b3 = float(np.mean(se_ > 5))
    p2, p5 = float(np.mean(se_ > 2)), b3
    order = b1 > b2 > b3
    g = wd(_grade(inband(p2, 0.10, 0.30) and inband(p5, 0.04, 0.15) and order, order))
    hs = s.get("eaf-heuristic")
    claims.append(claim("P8", "§3.5.3, Fig. 3.4b; abstract", "EAF speedups: (1,2] ~23%, (2,5] ~11%, >5 8.5%; "
                        "> 2x in 20% of cases", "P(s > 2) in [10%, 30%]; P(s > 5) in [4%, 15%]; bins ordered",
                        g, f"(1,2] {pct(b1)}, (2,5] {pct(b2)}, >5 {pct(b3)}; P(s > 2) {pct(p2)}"
                        + (f"; prototype estimator: P(s > 2) {pct(float(np.mean(hs > 2)))}" if hs is not None else ""),
                        value=p2))
    # P9
    ok_lo, ok_hi, txt = True, True, []
    for k in (1.5, 2, 5):
        pe = float(np.mean(s["eaf"] > k))
        for x in ("eaf-mptcp", "mptcp-if1"):
            px = float(np.mean(s[x] > k))
            ok_lo &= px >= pe - 0.01
            ok_hi &= px <= pe + 0.08
            txt.append(f"s>{k:g}: {x} {pct(px)} vs EAF {pct(pe)}")
    claims.append(claim("P9", "§3.5.3", "EAF-MPTCP and MPTCP if1 reach only negligibly higher speedups than EAF",
                        "P_X(s > k) in [P_EAF - 1 pp, P_EAF + 8 pp] for k in 1.5, 2, 5", _grade(ok_lo and ok_hi, ok_lo),
                        "; ".join(txt)))
    # P10
    w2 = wide(df, SECOND)
    if not w2.empty:
        kss, dif = {}, {}
        for p in POL7:
            a_ = s[p]
            b_ = (w2["if1"] / w2[p]).to_numpy()
            kss[p] = ks(a_, b_) if p != "if1" else 0.0
            f2 = fractions(b_)
            dif[p] = max(abs(f2["faster"] - fr[p]["faster"]), abs(f2["slower"] - fr[p]["slower"]))
        mk, md = max(kss.values()), max(dif.values())
        g = _grade(mk <= 0.08 and md <= 0.08, mk <= 0.16)
        claims.append(claim("P10", "§3.5.3, Fig. 3.5", "results on Alexa 1000 look like those on Alexa 100",
                            "per policy KS distance <= 0.08 and fractions within 8 pp (substitute-only: tests the "
                            "generator's stability)", g,
                            f"max KS {mk:.3f} ({max(kss, key=kss.get)}), max fraction difference {100 * md:.1f} pp "
                            f"({w2.shape[0]} Alexa-1000-like cases)"))
    else:
        claims.append(claim("P10", "§3.5.3, Fig. 3.5", "Alexa 1000 like Alexa 100", "-", "NOT RUN", "no second set"))
    # P11
    base_m = w["mptcp-if1"]
    txt, ok_all, ok_med = [], True, True
    for p in ("eaf", "eaf-mptcp"):
        sp = (base_m / w[p]).to_numpy()
        med, low, mn = float(np.median(sp)), float(np.mean(sp < 0.8)), float(np.min(sp))
        ok_med &= inband(med, 0.95, 1.05)
        ok_all &= inband(med, 0.95, 1.05) and low <= 0.02 and mn >= 0.5
        txt.append(f"{p}: median s' {med:.3f}, s' < 0.8 in {pct(low)}, min s' {mn:.3f}")
    # a mechanism (claims file §4: "judged strictly"): every condition or FAIL
    claims.append(claim("P11", "§3.5.4, Fig. 3.6", "against MPTCP if1, EAF and EAF-MPTCP are close to 1 and never "
                        "considerably worse", "median s' in [0.95, 1.05]; P(s' < 0.8) <= 2%; min s' >= 0.5 (a "
                        "mechanism, judged strictly)", "PASS" if ok_all else "FAIL", "; ".join(txt)))
    # P12
    mins_p = [float(np.min((base_m / rnd[k]).to_numpy())) for k in rnd.columns]
    mp = min(mins_p) if mins_p else math.nan
    # direction: >= 10x slower somewhere; magnitude: 30x +- factor 3, i.e. min s' in [1/90, 1/10]
    g = "FAIL" if not mp <= 0.1 else ("PASS" if mp >= 1 / 90 else "PARTIAL")
    claims.append(claim("P12", "§3.5.4, Fig. 3.6", "MPTCP rnd can be ~30x slower than MPTCP if1",
                        "min s'(MPTCP rnd) <= 0.1; PASS on magnitude if >= 1/90 (30x +- factor 3)", g,
                        f"min s' {mp:.4f} (1/{1 / mp:.1f})", value=mp))
    # P13
    sub = ((cases["rtt2_ms"] < cases["rtt1_ms"]) | (cases["bw1_mbit"] == 0.5)).to_numpy()
    r = (base_m / w["eaf-mptcp"]).to_numpy()
    fa, sl_ = float(np.mean(r[sub] > 1.01)), float(np.mean(r[sub] < 1 / 1.01))
    worse5 = float(np.mean(r < 1 / 1.05))
    claims.append(claim("P13", "§3.5.4", "EAF-MPTCP beats MPTCP if1 where if1 is not the best first-subflow "
                        "interface; slightly worse in some cases", "on rtt2 < rtt1 or bw1 = 0.5: P(faster by > 1%) > "
                        "P(slower by > 1%) (an ordering, judged strictly); overall slower by > 5% in <= 10% is "
                        "reported, not graded (the claims file's '(report)', as for P7's ordering)",
                        "PASS" if fa > sl_ else "FAIL",
                        f"subset ({int(sub.sum())} cases): faster {pct(fa)}, slower {pct(sl_)}; all cases slower by "
                        f"> 5%: {pct(worse5)}"))
    # P14
    sv = s["eaf"]
    r1 = spearman_ci(sv, cases["bw1_mbit"])
    r2 = spearman_ci(sv, cases["bw2_mbit"])
    r3 = spearman_ci(sv, cases["rtt2_ms"])
    signs = r1[2] < 0 and r2[1] > 0 and r3[2] < 0
    big = sv > 5
    eqm = np.abs(sv - 1) <= EPS
    mb_big = float(np.median(cases["bw1_mbit"].to_numpy()[big])) if big.any() else math.nan
    mb_eq = float(np.median(cases["bw1_mbit"].to_numpy()[eqm])) if eqm.any() else math.nan
    mags = (mb_big <= 2) and (mb_eq >= 12)
    claims.append(claim("P14", "§3.5.5, Fig. 3.7a", "high EAF speedups with low if1 bandwidth, high if2 bandwidth, "
                        "low if2 RTT; equal cases with high if1 bandwidth", "Spearman rho(s, bw1) < 0, rho(s, bw2) > 0, "
                        "rho(s, rtt2) < 0 (bootstrap CI excluding 0); median bw1 of s > 5 <= 2 Mbit/s, of equal "
                        ">= 12 Mbit/s", _grade(signs and mags, signs),
                        f"rho bw1 {r1[0]:.3f} [{r1[1]:.3f}, {r1[2]:.3f}], bw2 {r2[0]:.3f} [{r2[1]:.3f}, {r2[2]:.3f}], "
                        f"rtt2 {r3[0]:.3f} [{r3[1]:.3f}, {r3[2]:.3f}]; median bw1: s > 5 {mb_big:g}, equal {mb_eq:g} "
                        "Mbit/s"))
    # P15
    tb = cases["bytes"].to_numpy()
    m2 = float(np.median(tb[sv > 2])) if (sv > 2).any() else math.nan
    me = float(np.median(tb[eqm])) if eqm.any() else math.nan
    q1 = spearman_ci(sv, cases["median_object_bytes"])
    q2 = spearman_ci(sv, cases["objects"])
    ratio = m2 / me if me and me == me else math.nan
    ok_r = ratio >= 2
    ok_rho = q1[1] > 0 and q2[1] > 0
    claims.append(claim("P15", "§3.5.5, Fig. 3.7b", "high speedups much more often for large pages, larger median "
                        "object size and more objects", "median page size of s > 2 cases >= 2x that of equal cases; "
                        "rho(s, median object size) > 0 and rho(s, objects) > 0 (CI excluding 0)",
                        wd(_grade(ok_r and ok_rho, ok_r or ok_rho)),
                        f"median page size: s > 2 {m2 / 1e3:.0f} KB vs equal {me / 1e3:.0f} KB ({ratio:.2f}x); rho "
                        f"median object size {q1[0]:.3f} [{q1[1]:.3f}, {q1[2]:.3f}], objects {q2[0]:.3f} "
                        f"[{q2[1]:.3f}, {q2[2]:.3f}]"))
    # P16
    beta = (tb / cases["bw1_bytes"].to_numpy()) / base.to_numpy()
    qs = pd.qcut(pd.Series(beta), 4, labels=False, duplicates="drop").to_numpy()
    means = [float(np.mean(sv[qs == q])) for q in range(int(np.nanmax(qs)) + 1)]
    # the claims file's "one inversion <= 2% allowed": a drop of at most 2% of the quartile before it
    # (it was 2% of the top quartile's mean, five times looser in the quick run)
    inv = [(means[i] - means[i + 1]) / means[i] for i in range(len(means) - 1) if means[i + 1] < means[i]]
    mono = len(inv) == 0 or (len(inv) == 1 and inv[0] <= 0.02)
    top = float(np.mean(qs[sv > 2] == qs.max())) if (sv > 2).any() else math.nan
    claims.append(claim("P16", "§3.5.5", "multi-access policies help when the page load is bandwidth-limited",
                        "mean EAF speedup rises over quartiles of beta = (bytes / bw1) / PLT(if1) (one drop of at "
                        "most 2% of the quartile before it allowed); top quartile holds >= 60% of the s > 2 cases", _grade(mono and top >= 0.6, mono or top >= 0.6),
                        "mean s by beta quartile: " + ", ".join(f"{m:.2f}" for m in means)
                        + f"; top quartile holds {pct(top)} of the s > 2 cases"))
    claims.extend(crossmodel_claims(cross))
    # P19
    hc = hand_cases()
    grid_bound = _lower_bound_ok(df, pages, scen)
    # with two identical interfaces MPTCP if1 is at least as fast as if1 (s >= 1 - eps in every case)
    same = ((cases["bw1_bytes"] == cases["bw2_bytes"]) & (cases["rtt1_ms"] == cases["rtt2_ms"])).to_numpy()
    s_same = s["mptcp-if1"][same]
    s_same = s_same[np.isfinite(s_same)]
    bad_same = int(np.sum(s_same < 1 - EPS))
    worst_same = float(np.min(s_same)) if len(s_same) else math.nan
    ok = all(c["ok"] for c in hc) and grid_bound[0] and bad_same == 0 and len(s_same) > 0
    claims.append(claim("P19", "§3.3.4; unit_validation.py", "hand-computed load times for simple patterns",
                        "each case within +-1 RTT of 2 RTT + ftime(...); invariants: PLT >= bytes / sum bw + 2 min "
                        "RTT, and with two identical interfaces MPTCP if1 >= if1 (s >= 1 - eps)",
                        "PASS" if ok else "FAIL",
                        "; ".join(f"{c['case']}: model {c['model_s']:.4f} s vs hand {c['hand_s']:.4f} s" for c in hc)
                        + f"; lower bound violated in {grid_bound[1]} of {grid_bound[2]} grid loads; identical "
                          f"interfaces: MPTCP if1 slower than if1 in {bad_same} of {len(s_same)} cases"
                        + (f" (min s {worst_same:.3f})" if len(s_same) else "")))
    # P20
    gmap = {c["id"]: c["grade"] for c in claims}
    parts = [gmap.get(k) for k in ("P2", "P8", "P4", "P9")]
    g = "PASS" if all(p == "PASS" for p in parts) else ("FAIL" if "FAIL" in parts else "PARTIAL")
    claims.append(claim("P20", "abstract, §1.3, §3.7", "benefits in > 50% of cases, > 2x in 20%, no overhead",
                        "composite: P2, P8, P4, P9 all PASS", g,
                        "P2 " + str(parts[0]) + ", P8 " + str(parts[1]) + ", P4 " + str(parts[2]) + ", P9 "
                        + str(parts[3])))
    # P21
    claims.append(claim("P21", "§3.4.2", "about 9M simulations", "report the count (no verdict)", "N/A",
                        f"{perf['page_loads']:,} page loads"
                        + (f" in {perf['wall_s_runs']:.0f} s wall ({perf['loads_per_s_wall']} loads/s)"
                           if not perf.get("tasks_resumed") else
                           f" ({perf['tasks_resumed']} tasks resumed from the store; {perf.get('page_loads_run', 0):,} "
                           f"run now in {perf['wall_s_runs']:.0f} s)")
                        + "; the paper: 3,600 pages x 384 x 7 ~ 9.68M"))
    return claims


POL7 = ("if1", "if2", "rr", "mptcp-if1", "mptcp-rnd", "eaf", "eaf-mptcp")


def _lower_bound_ok(df, pages, scen) -> tuple[bool, int, int]:
    """PLT >= total bytes / (bw1 + bw2) + 2 min RTT for every load of the grid (P19's invariant)."""
    d = df.merge(pages[["set", "page", "bytes"]], on=["set", "page"], how="left").merge(
        scen[["scenario", "bw1_bytes", "bw2_bytes", "rtt1_ms", "rtt2_ms"]], on="scenario", how="left")
    bound = d["bytes"] / (d["bw1_bytes"] + d["bw2_bytes"]) + 2 * np.minimum(d["rtt1_ms"], d["rtt2_ms"]) / 1000.0
    bad = int((d["plt_s"] < bound * (1 - 1e-9)).sum())
    return bad == 0, bad, len(d)
