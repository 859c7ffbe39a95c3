"""Sweeps: expansion, keys, the store, resume after kills, queries, the report, bad input."""

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO, qoelab_cli

BASE = """
[scenario]
name = "tiny"
duration = "20s"
seed = 7

[topology]
rate = "4Mbps"
rtt = "40ms"
buffer = "1bdp"
aqm = "fq_codel"

[[client]]
name = "dash"
count = 2
abr = "dynamic"
video = "synthetic:has-testbed"
video_duration = "18s"

[[flow]]
name = "bulk"
start = "5s"
"""


def write_sweep(tmp_path, body: str, base: str = BASE) -> str:
    (tmp_path / "base.toml").write_text(base)
    p = tmp_path / "s.toml"
    p.write_text(body)
    return str(p)


SIMPLE = """
[sweep]
name = "t"
base = "base.toml"
repetitions = 2

[axes]
"topology.aqm" = ["pfifo", "codel", "fq_codel"]
buffer_bdp = [0.5, 2.0]

[derived]
"topology.buffer" = { expr = "max(2, ceil(buffer_bdp * bdp_pkts(get('topology.rate'), get('topology.rtt'))))", unit = "pkts" }
"""


def test_expansion_product_zip_derived_filters(tmp_path):
    from qoelab.sweep import spec
    sw = spec.load(write_sweep(tmp_path, SIMPLE))
    assert len(sw.runs) == 3 * 2 * 2
    assert sw.columns == ["aqm", "buffer_bdp", "buffer"]
    assert [r.seed for r in sw.runs[:2]] == [7, 8]           # base seed + rep
    r = sw.runs[0]
    assert r.scenario["topology"]["aqm"] == "pfifo" and r.scenario["topology"]["buffer"] == "7pkts"
    assert r.point == {"aqm": "pfifo", "buffer_bdp": 0.5, "buffer": "7pkts"}   # 0.5 x 4 Mbit/s x 40 ms / 1500 B
    assert len({x.key for x in sw.runs}) == len(sw.runs)
    # the same sweep gives the same keys; keys follow the normalized config, not its spelling
    again = spec.load(write_sweep(tmp_path, SIMPLE))
    assert [x.key for x in again.runs] == [x.key for x in sw.runs]
    respelled = write_sweep(tmp_path, SIMPLE, BASE.replace('rate = "4Mbps"', 'rate = "4000kbps"'))
    assert [x.key for x in spec.load(respelled).runs] == [x.key for x in sw.runs]

    z = spec.load(write_sweep(tmp_path, """
[sweep]
base = "base.toml"
seeds = [11, 12, 13]
where = "not (aqm == 'pfifo' and rate == '8Mbps')"
[axes]
"topology.aqm" = ["pfifo", "codel"]
[zip.link]
"topology.rate" = ["2Mbps", "8Mbps"]
"topology.rtt" = ["20ms", "80ms"]
[[exclude]]
aqm = "codel"
rtt = "20ms"
"""))
    points = sorted({(r.point["aqm"], r.point["rate"], r.point["rtt"]) for r in z.runs})
    assert points == [("codel", "8Mbps", "80ms"), ("pfifo", "2Mbps", "20ms")]
    assert sorted({r.seed for r in z.runs}) == [11, 12, 13] and len(z.runs) == 6

    v = spec.load(write_sweep(tmp_path, """
[sweep]
base = "base.toml"
[axes]
system = { values = { plain = { "client.*.abr" = "dynamic" }, bola = { "client.0.abr" = "bola", "topology.aqm" = "codel" } } }
"""))
    assert [r.point["system"] for r in v.runs] == ["plain", "bola"]
    assert v.runs[1].scenario["client"][0]["abr"] == "bola" and v.runs[1].scenario["topology"]["aqm"] == "codel"


@pytest.mark.parametrize("body,where,what", [
    ('[sweep]\nbase = "base.toml"\n[axes]\n"topology.aqmm" = ["codel"]\n', "axes.topology.aqmm", "aqmm"),
    ('[sweep]\nbase = "base.toml"\n[axes]\n"topology.aqm" = ["codel", "nonesuch"]\n', "axes.topology.aqm", "nonesuch"),
    ('[sweep]\nbase = "base.toml"\n[axes]\n"topology.rate" = [10, "1Mbps"]\n', "axes.topology.rate", "rate"),
    ('[sweep]\nbase = "base.toml"\n[axes]\n"topology.aqm" = []\n', "axes.topology.aqm", "non-empty"),
    ('[sweep]\nbase = "base.toml"\nwhere = "aqm == 1"\n[axes]\n"topology.aqm" = ["codel"]\n', "axes", "no runs"),
    ('[sweep]\nbase = "base.toml"\nwhere = "\'yes\'"\n[axes]\n"topology.aqm" = ["codel"]\n', "sweep.where",
     "expected true or false (a comparison), found 'yes'"),      # (was taken as true)
    ('[sweep]\nbase = "base.toml"\n[axes]\n"client.5.abr" = ["bola"]\n', "axes.client.5.abr", "out of range"),
    ('[sweep]\nbase = "base.toml"\n[axes]\nx = [1, 2]\n', "axes", "same scenario"),
    ('[sweep]\nbase = "base.toml"\n[derived]\n"topology.buffer" = "__import__(\'os\')"\n', "derived.topology.buffer",
     "unknown function"),
    ('[sweep]\nbase = "nope.toml"\n', "sweep.base", "cannot read"),
    ('[sweep]\nbase = "base.toml"\nrepetitons = 3\n', "sweep.repetitons", "unknown key"),
    ('[sweep]\nbase = "base.toml"\n[axes]\n"topology.aqm" = ["codel"]\n"a.aqm" = ["x"]\n', "axes.a.aqm", "two axes"),
    # (found by a probe) two axes, or an axis and a derived value, setting one key: the later one
    # silently replaced a variant's value, whatever the order of the tables
    ('[sweep]\nbase = "base.toml"\n[axes.system.values]\nA = { "topology.aqm" = "pie" }\nB = { "topology.rate" = "5Mbps" }'
     '\n[axes]\n"topology.aqm" = ["pfifo", "codel"]\n', "axes.topology.aqm", "axes.system sets too"),
    ('[sweep]\nbase = "base.toml"\n[axes.system.values]\nA = { "topology.buffer" = "100pkts" }\nB = {}\n'
     '[derived]\n"topology.buffer" = "7"\n', "derived.topology.buffer", "axes.system sets too"),
    # a typo in sweep.tables kept no table at all
    ('[sweep]\nbase = "base.toml"\ntables = ["segmentz"]\n[axes]\n"topology.aqm" = ["codel", "pie"]\n', "sweep.tables",
     "segmentz"),
    ('[sweep]\nbase = "base.toml"\ntables = ["segments", "segments"]\n[axes]\n"topology.aqm" = ["codel", "pie"]\n',
     "sweep.tables", "each table once"),
    # errors of list keys and of [set] keys name the axis or the key (they said `axes`)
    ('[sweep]\nbase = "base.toml"\n[axes]\n"client.*.abr" = ["dynamic", 3]\n', "axes.client.*.abr", "expected a string"),
    ('[sweep]\nbase = "base.toml"\n[set]\n"scenario.durationn" = "5s"\n[axes]\n"topology.aqm" = ["codel", "pie"]\n',
     "set.scenario.durationn", "unknown key"),
])
def test_bad_sweep_files_one_line_exit_2(tmp_path, body, where, what):
    p = write_sweep(tmp_path, body)
    out = str(tmp_path / "out")
    r = qoelab_cli("sweep", p, "--out", out)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert f"{p}:{where}" in lines[0] and what in lines[0], lines[0]
    assert "Traceback" not in r.stderr
    assert not os.path.exists(out), "nothing written for a bad sweep"


def _frame(d):
    """The store's rows without the wall-clock columns, for comparisons."""
    import qoelab
    st = qoelab.open_store(d)
    out = {}
    for v in ("runs", "clients", "flows", "links"):
        df = st.sql(f"SELECT * FROM {v} ORDER BY index, rep, key")
        out[v] = df.drop(columns=[c for c in ("wall_s",) if c in df.columns]).to_json(orient="records")
    return out


def test_run_query_resume_and_backends_agree(tmp_path):
    from qoelab.sweep import runner, spec
    sw = spec.load(write_sweep(tmp_path, SIMPLE))
    a = runner.run(sw, str(tmp_path / "a"), jobs=2, quiet=True)
    assert a["ran"] == 12 and a["failed"] == 0 and a["rows"]["runs"] == 12 and a["rows"]["clients"] == 24
    again = runner.run(spec.load(write_sweep(tmp_path, SIMPLE)), str(tmp_path / "a"), jobs=2, quiet=True)
    assert again["ran"] == 0 and again["skipped"] == 12          # nothing run twice
    b = runner.run(sw, str(tmp_path / "b"), jobs=1, quiet=True)     # in-process back end
    assert _frame(tmp_path / "a") == _frame(tmp_path / "b")
    # an interrupted sweep (max_runs) resumed gives the same store
    part = runner.run(sw, str(tmp_path / "c"), jobs=2, quiet=True, max_runs=5)
    assert part["ran"] == 5
    rest = runner.run(sw, str(tmp_path / "c"), jobs=2, quiet=True)
    assert rest["ran"] == 7 and rest["skipped"] == 5
    assert _frame(tmp_path / "c") == _frame(tmp_path / "a")
    assert b["rows"] == a["rows"]

    import qoelab
    st = qoelab.open_store(str(tmp_path / "a"))
    df = st.sql("SELECT aqm, buffer_bdp, count(*) n, avg(qoe_mean) q FROM clients GROUP BY ALL ORDER BY ALL")
    assert len(df) == 6 and set(df["n"]) == {4}
    t = st.arrow("SELECT key, aqm FROM runs")
    assert t.num_rows == 12
    # every run's summary is the one `qoelab run` gives for the same scenario and seed
    from qoelab import results
    r0 = sw.runs[3]
    res = results.run(r0.scenario)
    row = st.sql(f"SELECT config_hash, events FROM runs WHERE key = '{r0.key}'")
    assert row["config_hash"][0] == res.summary["config_hash"] and row["events"][0] == res.summary["events"]


def test_cli_sweep_killed_at_random_points_resumes_identically(tmp_path):
    body = SIMPLE.replace("repetitions = 2", "repetitions = 3")
    p = write_sweep(tmp_path, body)
    ref = tmp_path / "ref"
    t0 = time.monotonic()
    r = qoelab_cli("sweep", p, "--out", str(ref), "--quiet")
    whole = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    out = tmp_path / "killed"
    rng = random.Random(4)
    env = dict(os.environ)
    kills = 0
    for attempt in range(6):
        proc = subprocess.Popen([sys.executable, "-m", "qoelab.cli", "sweep", p, "--out", str(out), "--quiet"],
                                cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                start_new_session=True)
        # Kill points as fractions of the whole sweep's time on this machine (0.6 s to 3 s seen).
        time.sleep(rng.uniform(0.35, 0.95) * whole)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)     # the whole group: parent and workers, mid-write
            kills += 1
        proc.wait()
        if proc.returncode == 0:
            break
    r = qoelab_cli("sweep", p, "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert kills >= 1
    first = r.stderr.splitlines()[0]
    done_before = int(first.split(", ")[1].split()[0])
    assert "18 runs" in first and f"{18 - done_before} to run" in first
    assert _frame(out) == _frame(ref)
    leftovers = [f for _, _, fs in os.walk(out) for f in fs if f.startswith(".qoelab-tmp-")]
    assert not leftovers


def test_failing_runs_are_recorded_and_do_not_stop_others(tmp_path):
    from qoelab.sweep import runner, spec
    body = SIMPLE.replace('name = "t"', 'name = "t"\nextract = "qoelab.sweep.selftest:fail_on_codel"')
    sw = spec.load(write_sweep(tmp_path, body))
    res = runner.run(sw, str(tmp_path / "f"), jobs=2, quiet=True)
    assert res["failed"] == 4 and res["ran"] == 12
    import qoelab
    df = qoelab.open_store(str(tmp_path / "f")).sql("SELECT aqm, status, error, marker FROM runs ORDER BY index")
    assert set(df[df["aqm"] == "codel"]["status"]) == {"error"}
    assert all("ValueError: codel refused" in e for e in df[df["aqm"] == "codel"]["error"])
    assert set(df[df["aqm"] != "codel"]["marker"]) == {42.0}
    # --retry-failed runs them again (and they fail again, deterministically)
    again = runner.run(sw, str(tmp_path / "f"), jobs=2, quiet=True, retry_failed=True)
    assert again["ran"] == 4 and again["failed"] == 4


def test_store_refuses_other_sweeps_and_versions(tmp_path):
    from qoelab.sweep import runner, spec
    p = write_sweep(tmp_path, SIMPLE)
    runner.run(spec.load(p), str(tmp_path / "s"), jobs=2, quiet=True)
    other = write_sweep(tmp_path, SIMPLE.replace("[0.5, 2.0]", "[0.5, 3.0]"))
    r = qoelab_cli("sweep", other, "--out", str(tmp_path / "s"))
    assert r.returncode == 2 and "different sweep" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    meta = json.loads((tmp_path / "s" / "sweep.json").read_text())
    meta["store_format"] = 99
    (tmp_path / "s" / "sweep.json").write_text(json.dumps(meta))
    r = qoelab_cli("query", str(tmp_path / "s"), "SELECT 1")
    assert r.returncode == 2 and "incompatible" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    os.makedirs(tmp_path / "notastore")
    (tmp_path / "notastore" / "x").write_text("keep me")
    r = qoelab_cli("sweep", p, "--out", str(tmp_path / "notastore"), "--force")
    assert r.returncode == 2 and "not a sweep store" in r.stderr
    assert (tmp_path / "notastore" / "x").read_text() == "keep me"
    r = qoelab_cli("query", str(tmp_path / "notastore"), "SELECT 1")
    assert r.returncode == 2 and "sweep.json" in r.stderr


def test_a_resumed_sweep_with_other_extract_or_tables_is_refused_and_takes_a_new_report(tmp_path):
    """Resuming with an edited sweep file: a changed `extract` or `tables` (what each run records)
    is refused, one line, exit 2 (the missing runs used the new file's, the store kept the old
    one's: 43 runs of one hook, 5 of the other); a changed `[report]` or description is taken into
    sweep.json and the copy sweep.toml (it was kept from the first file, silently)."""
    from qoelab.sweep import runner, spec
    body = SIMPLE.replace('repetitions = 2', 'repetitions = 2\ntables = ["segments"]')
    p = write_sweep(tmp_path, body)
    runner.run(spec.load(p), str(tmp_path / "s"), jobs=2, quiet=True)
    for edited, what in ((body.replace('tables = ["segments"]', 'tables = ["segments", "flows"]'), "tables"),
                         (body.replace('tables = ["segments"]', 'tables = ["segments"]\n'
                                       'extract = "qoelab.sweep.selftest:segment_count"'), "extract")):
        (tmp_path / "s.toml").write_text(edited)
        r = qoelab_cli("sweep", p, "--out", str(tmp_path / "s"))
        assert r.returncode == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and what in lines[0] and "--force" in lines[0], r.stderr
    panel = body + '\n[[report.panel]]\ny = "clients.qoe_mean"\nx = "aqm"\n'
    (tmp_path / "s.toml").write_text(panel)
    r = qoelab_cli("sweep", p, "--out", str(tmp_path / "s"))
    assert r.returncode == 0, r.stderr
    meta = json.loads((tmp_path / "s" / "sweep.json").read_text())
    assert meta["report"] == {"panel": [{"y": "clients.qoe_mean", "x": "aqm"}]}
    assert (tmp_path / "s" / "sweep.toml").read_text() == panel


def test_query_and_report_cli(tmp_path):
    p = write_sweep(tmp_path, SIMPLE.replace("[axes]", '[set]\n"output.tables" = ["segments"]\n\n[axes]'))
    d = str(tmp_path / "q")
    r = qoelab_cli("sweep", p, "--out", d, "--quiet")
    assert r.returncode == 0, r.stderr
    r = qoelab_cli("query", d, "SELECT aqm, count(*) AS n FROM runs GROUP BY aqm ORDER BY aqm", "--format", "csv")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["aqm,n", "codel,4", "fq_codel,4", "pfifo,4"]
    r = qoelab_cli("query", d, "SELECT count(*) AS n, count(DISTINCT key) AS k FROM tables.segments", "--format", "json")
    row = json.loads(r.stdout.splitlines()[0])
    assert row["k"] == 12 and row["n"] > 12 * 2 * 5
    r = qoelab_cli("query", d, "SELECT nonesuch FROM runs")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "nonesuch" in r.stderr
    r = qoelab_cli("query", d, "SELECT 1", "--max-rows", "-1")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--max-rows" in r.stderr
    r = qoelab_cli("query", d)
    assert r.returncode == 0 and "runs (12 rows)" in r.stdout and "tables.segments" in r.stdout
    (tmp_path / "afile").write_text("x")
    r = qoelab_cli("report", d, "--out", str(tmp_path / "afile"))
    assert r.returncode == 2 and "--out names a file" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = qoelab_cli("report", d, "--out", str(tmp_path / "rep"))
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "rep" / "report.html").read_text()
    assert page.count("<svg") >= 8 and "95% CI" in page and "aqm = codel" in page
    assert "<script" not in page and 'href="http' not in page and 'src="http' not in page   # self-contained
    # every id once (matplotlib gave every figure figure_1, axes_1, its glyphs), every reference resolves
    import collections
    import re as _re
    ids = collections.Counter(_re.findall(r'\bid="([^"]+)"', page))
    assert ids and max(ids.values()) == 1, [k for k, v in ids.items() if v > 1][:5]
    refs = [a or b for a, b in _re.findall(r'href="#([^"]+)"|url\(#([^)]+)\)', page)]
    assert refs and all(r in ids for r in refs)
    assert str(tmp_path) not in page     # no absolute path (a report is shared)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        pytest.skip("chromium not installed: the page was not rendered in a browser")
    shot = tmp_path / "shot.png"
    r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
                        f"--screenshot={shot}", "--window-size=1400,2000",
                        "file://" + str(tmp_path / "rep" / "report.html")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert shot.exists() and shot.stat().st_size > 20_000
    assert "Uncaught" not in r.stderr and "SyntaxError" not in r.stderr


# ---------------------------------------------------------------------------------------------
# A store damaged by hand is bad input to query, report and a resumed sweep: one line naming the
# file and the key, exit 2, never an internal error.

DAMAGE_SWEEP = """
[sweep]
name = "damage"
base = "base.toml"

[set]
"output.tables" = ["segments"]
"scenario.duration" = "10s"

[axes]
"topology.aqm" = ["pfifo", "codel"]
"""


@pytest.fixture(scope="module")
def finished_store(tmp_path_factory):
    """A finished two-run store (with a per-run table); tests damage copies of it."""
    from qoelab.sweep import runner, spec
    d = tmp_path_factory.mktemp("damage")
    p = write_sweep(d, DAMAGE_SWEEP)
    res = runner.run(spec.load(p), str(d / "store"), jobs=1, quiet=True)
    assert res["ran"] == 2 and res["failed"] == 0
    return p, d / "store"


def _damaged(finished_store, tmp_path):
    """A copy of the finished store, the path of its first run record (by key) and that run's key."""
    p, src = finished_store
    d = tmp_path / "st"
    shutil.copytree(src, d)
    rec = sorted((d / "runs").glob("*/*.json"))[0]
    return p, d, rec, rec.stem


def _one_line_error(r, *parts, after_log=False):
    """Exit 2 and one line (after the sweep's first log line with ``after_log``) holding ``parts``."""
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    if after_log:
        assert lines[0].startswith("sweep "), r.stderr
        lines = lines[1:]
    assert len(lines) == 1, r.stderr
    assert "internal error" not in lines[0] and "Traceback" not in r.stderr
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


def _set(rec, path, value):
    """Set a dotted key of a JSON record file (value None with a path ending in '-' deletes it)."""
    doc = json.loads(rec.read_text())
    *head, last = path.split(".")
    node = doc
    for k in head:
        node = node[int(k)] if isinstance(node, list) else node[k]
    if last.endswith("-"):
        del node[last[:-1]]
    else:
        node[int(last) if isinstance(node, list) else last] = value
    rec.write_text(json.dumps(doc))


@pytest.mark.parametrize("path,value,where,what", [
    ("summary", "x", "summary", "expected an object (the run's summary.json) or null, found 'x'"),
    ("summary.flows", "x", "summary.flows", "expected a list of objects or null, found 'x'"),
    ("summary.clients", [1], "summary.clients.0", "expected an object, found 1"),
    ("summary.links.0", [], "summary.links.0", "found an empty list"),
    ("index", "zero", "index", "expected an integer from 0 to 2^63 - 1, found 'zero'"),
    ("rep", -1, "rep", "found -1"),
    ("seed", 2 ** 70, "seed", f"found {2 ** 70}"),
    ("seed", True, "seed", "found true"),
    ("key-", None, "key", "found no such key"),
    ("key", "abc", "key", "expected the run key of the file's name"),
    ("point", ["pfifo"], "point", "expected an object of column values"),
    ("status", "maybe", "status", "expected \"ok\" or \"error\", found 'maybe'"),
    ("error", {"a": 1}, "error", "found an object"),
    ("wall_s", "1s", "wall_s", "expected a number or null"),
    ("metrics", [1, 2], "metrics", "found a list of 2 items"),
])
def test_damaged_run_record_is_one_line_naming_file_and_key(finished_store, tmp_path, path, value, where, what):
    _, d, rec, key = _damaged(finished_store, tmp_path)
    _set(rec, path, value)
    shutil.rmtree(d / "store")         # the Parquet cache would otherwise still answer
    r = qoelab_cli("query", str(d), "SELECT count(*) FROM runs")
    _one_line_error(r, f"{rec}:{where}: ", what)


@pytest.mark.parametrize("text,what", [
    ("[]", ": expected a JSON object (a run record), found an empty list"),
    ("", "expected valid JSON"),
    ('{"key": "x"', "expected valid JSON"),
    ("\xff", None),
])
def test_run_record_that_is_not_a_record(finished_store, tmp_path, text, what):
    _, d, rec, key = _damaged(finished_store, tmp_path)
    if what is None:
        rec.write_bytes(b"\xff\xfe{}")
        what = "expected UTF-8 text"
    else:
        rec.write_text(text)
    shutil.rmtree(d / "store")
    _one_line_error(qoelab_cli("query", str(d), "SELECT 1"), str(rec), what)
    # the report and a resumed sweep say the same (a sweep compacts the store at its end)
    _one_line_error(qoelab_cli("report", str(d)), str(rec), what)
    p = finished_store[0]
    _one_line_error(qoelab_cli("sweep", p, "--out", str(d), "--quiet"), str(rec), what)
    # deleting the record runs that run again, and the store is whole
    rec.unlink()
    r = qoelab_cli("sweep", p, "--out", str(d), "--quiet")
    assert r.returncode == 0 and "1 runs in" in r.stdout, r.stdout + r.stderr
    r = qoelab_cli("query", str(d), "SELECT count(*) AS n FROM runs", "--format", "csv")
    assert r.returncode == 0 and r.stdout.splitlines() == ["n", "2"], r.stderr


@pytest.mark.parametrize("damage", ["record", "part-folder", "part-fifo"])
def test_resumed_sweep_names_a_damaged_run_before_running_the_missing_ones(finished_store, tmp_path, damage):
    """A resumed sweep checks the runs it keeps first: the damaged one is named and the missing run
    is not simulated (it used to be, and the damage was found only when the store was compacted)."""
    p, d, rec, key = _damaged(finished_store, tmp_path)
    other = sorted((d / "runs").glob("*/*.json"))[1]
    other.unlink()                                   # the run a resume would simulate
    shutil.rmtree(d / "tables" / "segments" / f"key={other.stem}")
    part = d / "tables" / "segments" / f"key={key}" / "part.parquet"
    if damage == "record":
        rec.write_text("[]")
        where = str(rec)
    elif damage == "part-folder":
        shutil.rmtree(part.parent)
        part.parent.write_text("")
        where = f"{part.parent}: expected a folder (a run's partition of a table), found a file"
    else:
        part.unlink()
        os.mkfifo(part)
        where = f"{part}: not a Parquet file written by qoelab (not a regular file)"
    r = qoelab_cli("sweep", p, "--out", str(d), "--quiet")
    _one_line_error(r, where)
    assert not other.exists()                        # nothing was simulated
    assert not (d / "tables" / "segments" / f"key={other.stem}").exists()


@pytest.mark.parametrize("data", [b"", b"PAR1garbagePAR1"])
def test_damaged_per_run_table_is_one_line_naming_the_file(finished_store, tmp_path, data):
    _, d, rec, key = _damaged(finished_store, tmp_path)
    part = d / "tables" / "segments" / f"key={key}" / "part.parquet"
    part.write_bytes(data)
    shutil.rmtree(d / "store")
    line = _one_line_error(qoelab_cli("query", str(d), "SELECT count(*) FROM tables.segments"),
                           f"{part}: not a Parquet file written by qoelab")
    assert f"runs/{key[:2]}/{key}.json" in line       # the remedy names the record to delete with it


def test_per_run_table_with_an_unmergeable_column(finished_store, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    _, d, rec, key = _damaged(finished_store, tmp_path)
    part = d / "tables" / "segments" / f"key={key}" / "part.parquet"
    t = pq.read_table(part)
    i = t.column_names.index("segment")
    pq.write_table(t.set_column(i, "segment", pa.array([[1]] * t.num_rows)), part)
    shutil.rmtree(d / "store")
    _one_line_error(qoelab_cli("query", str(d), "SELECT 1"), f"{part}:segment: expected a column convertible to")


@pytest.mark.parametrize("name,data", [("runs", b""), ("runs", b"PAR1garbagePAR1"),
                                       ("tables/segments", b"PAR1garbagePAR1")])
def test_damaged_parquet_cache_is_one_line_and_rebuilt_once_deleted(finished_store, tmp_path, name, data):
    _, d, rec, key = _damaged(finished_store, tmp_path)
    f = d / "store" / f"{name}.parquet"
    f.write_bytes(data)
    _one_line_error(qoelab_cli("query", str(d), "SELECT count(*) FROM runs"),
                    f"{f}: not a Parquet file written by qoelab", f"delete {d / 'store'}")
    f.unlink()          # a missing cache file (or store/ as a whole) is rebuilt from the records
    r = qoelab_cli("query", str(d), "SELECT count(*) AS n FROM runs", "--format", "csv")
    assert r.returncode == 0 and r.stdout.splitlines() == ["n", "2"], r.stderr
    (d / "store" / "manifest.json").write_text("[]")       # a manifest that is not one: rebuilt too
    r = qoelab_cli("query", str(d), "SELECT count(*) AS n FROM runs", "--format", "csv")
    assert r.returncode == 0 and r.stdout.splitlines() == ["n", "2"], r.stderr


@pytest.mark.parametrize("key,value,where,what,query_ok", [
    ("columns", 5, "columns", "expected a list of column names, found 5", False),
    ("columns", ["aqm; DROP TABLE x"], "columns.0", "expected a column name (an identifier", False),
    ("columns", ["key"], "columns.0", "other than client, error", False),
    ("columns", ["aqm", "aqm"], "columns.1", "distinct column names", False),
    ("report", [1, 2], "report", "expected an object", True),
    ("report", {"panel": {"y": "runs.events"}}, "report.panel", "expected a list of panels", True),
    ("report", {"panel": [{"y": 3}]}, "report.panel.0.y", "expected \"view.column\"", True),
    ("report", {"panel": [{"y": "clients.nonesuch"}]}, "report.panel.0.y", "no column 'nonesuch' in view", True),
    ("report", {"panel": [{"y": "runs.events", "x": "nope"}]}, "report.panel.0.x", "an axis column (aqm)", True),
    ("report", {"panel": [{"y": "links.utilization", "link": [1]}]}, "report.panel.0.link", "a string", True),
    ("report", {"summary_by": "nope"}, "report.summary_by", "an axis column (aqm), found 'nope'", True),
    ("column_values", {"aqm": 5}, "column_values.aqm", "expected a list of values", True),
    ("name", 5, "name", "expected a string, found 5", True),
])
def test_damaged_sweep_json_is_one_line_naming_it(finished_store, tmp_path, key, value, where, what, query_ok):
    _, d, rec, _ = _damaged(finished_store, tmp_path)
    meta = json.loads((d / "sweep.json").read_text())
    meta[key] = value
    (d / "sweep.json").write_text(json.dumps(meta))
    # sweep.json, not the sweep file it was made from, holds the bad value (a report reads it)
    _one_line_error(qoelab_cli("report", str(d)), f"{d / 'sweep.json'}:{where}: ", what)
    r = qoelab_cli("query", str(d), "SELECT count(*) AS n FROM runs", "--format", "csv")
    if query_ok:       # the report's keys do not concern queries
        assert r.returncode == 0 and r.stdout.splitlines() == ["n", "2"], r.stderr
    else:
        _one_line_error(r, f"{d / 'sweep.json'}:{where}: ", what)


def test_changed_columns_rebuild_the_cache(finished_store, tmp_path):
    """The cache records the columns it was built with: columns changed in sweep.json rebuild it
    (a stale cache without the column made the report fail)."""
    _, d, rec, _ = _damaged(finished_store, tmp_path)
    meta = json.loads((d / "sweep.json").read_text())
    meta["columns"] = ["aqm", "other"]
    (d / "sweep.json").write_text(json.dumps(meta))
    r = qoelab_cli("query", str(d), "SELECT count(*) AS n, count(other) AS o FROM runs", "--format", "csv")
    assert r.returncode == 0 and r.stdout.splitlines() == ["n,o", "2,0"], r.stderr
    r = qoelab_cli("report", str(d))
    assert r.returncode == 0, r.stderr


def test_query_output_is_bounded_and_streamed(finished_store, tmp_path):
    _, d = finished_store
    # --max-rows applies to every format: at most N rows fetched, a note on stderr when cut
    r = qoelab_cli("query", str(d), "SELECT * FROM range(100000000)", "--format", "json", "--max-rows", "5")
    assert r.returncode == 0, r.stderr
    assert [json.loads(x)["range"] for x in r.stdout.splitlines()] == [0, 1, 2, 3, 4]
    assert "the first 5 rows; the result has more" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = qoelab_cli("query", str(d), "SELECT * FROM range(100000000)")        # table: 200 rows by default
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 201 and "first 200 rows" in r.stderr
    r = qoelab_cli("query", str(d), "SELECT * FROM range(3)", "--max-rows", "3", "--format", "csv")
    assert r.stdout.splitlines() == ["range", "0", "1", "2"] and r.stderr == ""      # not cut: no note
    # without --max-rows csv and json write every row, chunk by chunk (the header once)
    r = qoelab_cli("query", str(d), "SELECT range AS i FROM range(250000)", "--format", "csv")
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and len(lines) == 250001 and lines[0] == "i" and lines[-1] == "249999"
    assert lines.count("i") == 1
    r = qoelab_cli("query", str(d), "SELECT 1 AS a WHERE false", "--format", "csv")
    assert r.returncode == 0 and r.stdout.splitlines() == ["a"]
    # streamed: the first rows of a 10^9-row result are written long before it could be held whole
    proc = subprocess.Popen([sys.executable, "-m", "qoelab.cli", "query", str(d), "SELECT * FROM range(1000000000)",
                             "--format", "json"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        assert json.loads(first) == {"range": 0}, proc.stderr.read() if proc.poll() is not None else first
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def test_ray_local_mode(tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'qoelab[ray]'); the Ray back end was not run")
    from qoelab.sweep import runner, spec
    sw = spec.load(write_sweep(tmp_path, SIMPLE))
    a = runner.run(sw, str(tmp_path / "local"), jobs=2, quiet=True)
    b = runner.run(sw, str(tmp_path / "ray"), ray="local", quiet=True)
    assert b["ran"] == 12 and b["failed"] == 0
    assert _frame(tmp_path / "local") == _frame(tmp_path / "ray")
    assert a["rows"] == b["rows"]


def test_docs_sweep_example_expands(tmp_path):
    """The sweep file printed in docs/sweeps.md is valid and expands as described."""
    import re
    from qoelab.sweep import spec
    text = open(os.path.join(REPO, "docs", "sweeps.md")).read()
    block = re.findall(r"```toml\n(.*?)```", text, flags=re.S)[0]
    block = block.replace('"../scenarios/', f'"{REPO}/scenarios/').replace('extract = "mypkg.metrics:extract"', "")
    p = tmp_path / "doc.toml"
    p.write_text(block)
    sw = spec.load(str(p))
    assert sw.columns == ["aqm", "buffer_bdp", "abr0", "system", "rate", "rtt", "buffer"]
    # 4 x 3 x 2 x 2 x 2 points, minus the filtered and excluded ones, x 3 seeds
    pts = {r.index for r in sw.runs}
    assert len(sw.runs) == 3 * len(pts) and 0 < len(pts) < 96
    assert not any(r.point["aqm"] == "pfifo" and r.point["buffer_bdp"] in (0.25, 4.0) for r in sw.runs)


def test_compare_puts_the_systems_side_by_side(tmp_path):
    d = str(tmp_path / "cmp")
    r = qoelab_cli("compare", "--out", d, "--duration", "40s", "--seeds", "2", "--clients", "2",
                   "--systems", "dash,chunklets,minerva")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("system") and "QoE per chunk" in lines[0]
    assert [ln.split()[0] for ln in lines[1:4]] == ["dash", "chunklets", "minerva"]
    # every header whole (two were cut at 22 characters), the columns aligned under them
    assert "Jain's index of goodput" in lines[0] and "bulk flow goodput (bit/s)" in lines[0], lines[0]
    assert len({len(ln) for ln in lines[:4]}) == 1, lines[:4]
    import qoelab
    st = qoelab.open_store(d)
    df = st.sql("SELECT system, max(connections) AS conns, count(DISTINCT key) AS runs FROM clients GROUP BY system "
                "ORDER BY system")
    conns = dict(zip(df["system"], df["conns"]))
    assert conns["chunklets"] >= 4 and conns["dash"] == 1 and set(df["runs"]) == {2}
    fc = st.sql("SELECT count(*) AS n FROM clients WHERE system = 'minerva' AND flow_control_updates > 1")
    assert fc["n"][0] == 4            # every Minerva client had its weight updated
    page = open(os.path.join(d, "report.html")).read()
    assert "Summary by system" in page and page.count("<svg") >= 8
    r = qoelab_cli("compare", "--out", str(tmp_path / "x"), "--systems", "dash,quic")
    assert r.returncode == 2 and "--systems" in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("cross,flows", [("web", {"web"}), ("both", {"bulk", "web"}), ("none", set())])
def test_compare_cross_traffic_runs(tmp_path, cross, flows):
    """Every --cross choice runs (web and both were refused: the web flow was built with a key the
    scenario does not have)."""
    d = str(tmp_path / "cmp")
    r = qoelab_cli("compare", "--out", d, "--duration", "15s", "--seeds", "1", "--clients", "1", "--systems", "dash",
                   "--cross", cross)
    assert r.returncode == 0, r.stderr
    import qoelab
    names = set(qoelab.open_store(d).sql("SELECT DISTINCT flow FROM flows")["flow"])
    assert {n.split("#")[0].split("/")[0] for n in names} - {"video"} == flows, names


@pytest.mark.parametrize("opt,value", [("--duration", "-5"), ("--rate", "0Mbps"), ("--rtt", "5"),
                                       ("--aqm", "nope"), ("--buffer", "lots"), ("--abr", "nope"),
                                       ("--video", "nope"), ("--chunklets-n", "65"), ("--clients", "0"),
                                       ("--jobs", str(4 * (os.cpu_count() or 1) + 1))])
def test_compare_names_the_bad_option(tmp_path, opt, value):
    r = qoelab_cli("compare", "--out", str(tmp_path / "x"), opt, value)
    assert r.returncode == 2 and r.stderr.startswith((f"qoelab compare: error: {opt}: expected ",
                                                      f"qoelab compare: error: argument {opt}: expected "))
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "x").exists()


@pytest.mark.parametrize("sig,code,twice,group", [(signal.SIGINT, 130, False, True), (signal.SIGTERM, 143, False, False),
                                                  (signal.SIGINT, 130, True, True), (signal.SIGTERM, 143, True, False),
                                                  (signal.SIGTERM, 143, True, True)])
def test_ctrl_c_stops_a_sweep_within_a_second(tmp_path, sig, code, twice, group):
    """Also a second signal 20 ms after the first, to the whole process group (Ctrl-C pressed twice,
    or `timeout` forwarding its own): it interrupted the pool's cleanup (exit -2, or a hang with
    multiprocessing's tracebacks). A SIGTERM to the whole group kills the forkserver and the workers;
    the pool's replacements, started through a new forkserver that inherited the ignored SIGTERM,
    outlived Pool.terminate's SIGTERM and the sweep hung (1 run in 4), or the pool's thread printed
    an EOFError traceback."""
    long = BASE.replace('duration = "20s"', 'duration = "3000s"').replace('rate = "4Mbps"', 'rate = "100Mbps"')
    p = write_sweep(tmp_path, SIMPLE, long)
    proc = subprocess.Popen([sys.executable, "-m", "qoelab.cli", "sweep", p, "--out", str(tmp_path / "o")],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    time.sleep(3.0)                     # workers are simulating (each run takes minutes)
    assert proc.poll() is None
    t0 = time.monotonic()
    # Ctrl-C goes to the process group, as a terminal sends it; SIGTERM to the pid, as kill and
    # timeout send it, or to the group
    send = os.killpg if group else os.kill
    send(proc.pid, sig)
    if twice:
        time.sleep(0.02)
        with contextlib.suppress(ProcessLookupError):
            send(proc.pid, sig)
    out, err = proc.communicate(timeout=10)
    assert time.monotonic() - t0 < 1.5, "stopped within a second"
    assert proc.returncode == code, err
    assert err.strip().splitlines()[-1].startswith("qoelab sweep: ")
    assert "Traceback" not in err
    # nothing half-written: no records (no run finished), no temporary files of live processes
    recs = [f for _, _, fs in os.walk(tmp_path / "o" / "runs") for f in fs]
    assert recs == []


def test_ctrl_c_stops_a_sweep_of_many_short_runs(tmp_path):
    """Workers killed while sending a result held the result queue's write lock (or left half a
    message): 3 of 4 Ctrl-Cs of a sweep of 2,000 two-second runs hung for good."""
    short = ('[scenario]\nduration = "2s"\n[topology]\nrate = "10Mbps"\nrtt = "20ms"\nbuffer = "1000pkts"\n'
             'aqm = "fq_codel"\n[[flow]]\nkind = "bulk"\ncc = "cubic"\ncount = 4\n')
    p = write_sweep(tmp_path, '[sweep]\nname = "many"\nbase = "base.toml"\nrepetitions = 50\n[axes]\n'
                              '"topology.aqm" = ["pfifo", "codel", "pie", "fq_codel"]\n'
                              '"topology.rate" = ["5Mbps", "6Mbps", "7Mbps", "8Mbps", "9Mbps", "10Mbps"]\n', short)
    for i, delay in enumerate((2.0, 2.7, 3.4)):
        proc = subprocess.Popen([sys.executable, "-m", "qoelab.cli", "sweep", p, "--out", str(tmp_path / f"o{i}"),
                                 "--jobs", "2"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        time.sleep(delay)
        if proc.poll() is not None:
            continue
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise AssertionError("the sweep hung after Ctrl-C")
        assert time.monotonic() - t0 < 1.5 and proc.returncode == 130, (proc.returncode, err[-500:])
        assert err.strip().splitlines()[-1] == "qoelab sweep: interrupted (SIGINT)" and "Traceback" not in err


def test_sim_real_bad_scenarios_one_line_exit_2(tmp_path):
    sc = tmp_path / "s.toml"
    sc.write_text('[scenario]\nname = "x"\nduration = "10s"\n[topology]\nrate = "2Mbps"\n[[client]]\nname = "c"\n'
                  'video = "synthetic:has-testbed"\n')
    r = qoelab_cli("compare", "sim-real", str(sc), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "client.0.video" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    sc.write_text(sc.read_text() + '[[flow]]\nkind = "bulk"\n')
    r = qoelab_cli("compare", "sim-real", str(sc), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and ":flow:" in r.stderr


def test_task_runs_are_stored_resumed_and_queried(tmp_path):
    from qoelab.sweep import runner, spec
    import qoelab

    def sweep():
        runs = [spec.Run(i, 0, 0, {"x": x}, None, task="qoelab.sweep.selftest:square_task") for i, x in
                enumerate([2, 3, 5])]
        return spec.programmatic("tasks", runs, ["x"])
    a = runner.run(sweep(), str(tmp_path / "t"), jobs=2, quiet=True)
    assert a["ran"] == 3 and a["failed"] == 0
    again = runner.run(sweep(), str(tmp_path / "t"), jobs=2, quiet=True)
    assert again["ran"] == 0 and again["skipped"] == 3
    st = qoelab.open_store(str(tmp_path / "t"))
    assert st.sql("SELECT x, sq FROM runs ORDER BY x").values.tolist() == [[2, 4], [3, 9], [5, 25]]
    assert st.sql("SELECT sum(v) AS s FROM tables.powers WHERE x = 3")["s"][0] == 3 + 9 + 27
    rec = st._load(sweep().runs[1].key)
    assert rec["metrics"]["note"] == "x = 3"


def test_batch_keys_equal_plain_keys_with_shared_objects():
    """programmatic() keys a batch of configurations with a memo of large shared sub-objects; the keys
    must be exactly those of run_key without it (the text hashed is identical)."""
    from qoelab.sweep import spec as sspec
    rng = random.Random(5)
    big = {"values": [[rng.random() for _ in range(300)] for _ in range(8)], "name": "vf", "z": [{"b": 1, "a": 2}]}
    rows = [[rng.randrange(10**6) for _ in range(8)] for _ in range(60)]
    memo = sspec.KeyMemo(budget=400_000)   # small: evictions happen
    for i in range(20):
        cfg = {"seed": i, "providers": [{"value_functions": [big, big], "b": None, "a": 1.5}],
               "videos": [{"sizes": rows, "quality": {"vmaf": rows[i:]}}, {"sizes": [rows[0], rows[i]]}],
               "mixed": [1, {"y": 2, "x": [3, "é", True, None]}], "empty": [[], {}], "f": 0.1 + i}
        assert sspec._key_json(cfg, memo) == json.dumps(cfg, sort_keys=True, separators=(",", ":"))
        assert sspec.run_key(cfg, "v", memo) == sspec.run_key(cfg, "v")
    assert any(o is big for o, _ in memo.items.values()) and memo.size <= 400_000


def test_query_of_nothing_and_report_out_that_cannot_be_made(finished_store, tmp_path):
    """`query DIR ""` was an internal error (AttributeError); `report --out` under /proc or with a
    name over 255 bytes failed after the report was built."""
    from conftest import qoelab_cli
    _, store = finished_store
    for sql, needle in (("", "SQL: expected a query, found an empty string"),
                        ("-- only a comment", "SQL: expected a statement that returns rows"),
                        # a table no run wrote: DuckDB's Catalog Error alone did not say what is there
                        ("SELECT * FROM tables.packets", "this store has runs, clients, flows, links, tables.")):
        r = qoelab_cli("query", str(store), sql)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and needle in r.stderr, r.stderr
    for out, needle in (("/proc/qoelab-no-such-dir", "cannot be created"),
                        (str(tmp_path / ("x" * 300)), "a name of 300 bytes in the path (at most 255)")):
        r = qoelab_cli("report", str(store), "--out", out)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and needle in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(store, "report.html"))


def test_refused_ray_and_uncreatable_out_leave_nothing(tmp_path):
    """`--ray` without Ray installed made the store (sweep.json, store/) and printed a progress line
    before refusing; `--out /proc/x` was an internal error."""
    import importlib.util
    from conftest import qoelab_cli
    p = write_sweep(tmp_path, DAMAGE_SWEEP)
    r = qoelab_cli("sweep", p, "--out", "/proc/qoelab-no-such-dir")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "cannot be created" in r.stderr, r.stderr
    if importlib.util.find_spec("ray") is not None:
        pytest.skip("Ray is installed here: --ray is not refused")
    r = qoelab_cli("sweep", p, "--out", str(tmp_path / "st"), "--ray", "bogus://x")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--ray: Ray is not installed" in r.stderr, r.stderr
    assert not os.path.exists(tmp_path / "st")


def test_interrupts_inside_duckdb_and_pyarrow_are_interrupts():
    """Ctrl-C inside a DuckDB query surfaces as RuntimeError("Query interrupted") (an internal error,
    exit 1, in `qoelab compare`); the CLI maps it, and pyarrow's ArrowCancelled, to exit 130."""
    import signal
    import threading

    import duckdb
    import pyarrow as pa
    from qoelab import cli
    from qoelab.errors import is_interrupt
    con = duckdb.connect()
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        con.execute("SELECT count(*) FROM range(100000000000) a").fetchall()
        caught = None
    except BaseException as e:   # noqa: B036 (what DuckDB raises is the point)
        caught = e
    timer.join()
    assert caught is not None and is_interrupt(caught), repr(caught)
    assert is_interrupt(pa.ArrowCancelled("x")) and not is_interrupt(RuntimeError("other"))
    for exc in (RuntimeError("Query interrupted"), pa.ArrowCancelled("Operation cancelled")):
        def boom(args, exc=exc):
            raise exc
        parser_args = ["list", "aqm"]
        orig = cli.build_parser

        def patched():
            p = orig()
            p.set_defaults(func=boom)
            for a in p._subparsers._group_actions[0].choices.values():
                a.set_defaults(func=boom)
            return p
        cli.build_parser = patched
        try:
            assert cli.main(parser_args) == 130
        finally:
            cli.build_parser = orig


def test_store_files_that_are_not_regular_files(finished_store, tmp_path):
    """A FIFO as a run record, sweep.json or a per-run part.parquet blocked `query` (the last one deaf
    to SIGTERM inside pyarrow); /dev/zero as one filled memory; non-UTF-8 names were internal errors;
    `store` as a file was an internal error: each is one line naming the file, exit 2."""
    import subprocess
    import sys
    from conftest import REPO

    def query(d, *sql):
        return subprocess.run([sys.executable, "-m", "qoelab.cli", "query", str(d), *sql], capture_output=True,
                              text=True, cwd=REPO, timeout=60)
    _, d, rec, key = _damaged(finished_store, tmp_path)
    shutil.rmtree(d / "store")
    rec.unlink()
    os.mkfifo(rec)
    _one_line_error(query(d), str(rec), "expected a regular file (a run record), found a device, pipe or socket")
    rec.unlink()
    rec.symlink_to("/dev/zero")
    _one_line_error(query(d), str(rec), "expected a regular file (a run record)")
    shutil.rmtree(d)

    _, d, rec, key = _damaged(finished_store, tmp_path)
    shutil.rmtree(d / "store")
    part = next((d / "tables").glob("*/key=*/part.parquet"))
    part.unlink()
    os.mkfifo(part)
    _one_line_error(query(d), str(part), "not a regular file")
    shutil.rmtree(d)

    _, d, rec, key = _damaged(finished_store, tmp_path)
    (d / "sweep.json").unlink()
    os.mkfifo(d / "sweep.json")
    _one_line_error(query(d), "sweep.json: expected a regular file")
    shutil.rmtree(d)

    _, d, rec, key = _damaged(finished_store, tmp_path)
    shutil.rmtree(d / "store")
    (d / "store").write_text("x")
    _one_line_error(query(d), "store: not a folder")
    (d / "store").unlink()
    os.rename(rec, os.path.join(os.fsencode(rec.parent), b"\xff\xfe.json"))
    _one_line_error(query(d), "\\xff\\xfe.json: not a run record's name")
    shutil.rmtree(d)

    _, d, rec, key = _damaged(finished_store, tmp_path)
    shutil.rmtree(d / "store")
    t = next((d / "tables").iterdir())
    os.rename(t, os.path.join(os.fsencode(t.parent), b"seg\xffm"))
    _one_line_error(query(d), "seg\\xffm: not a table's folder")


def test_report_on_runs_view_of_another_schema(finished_store, tmp_path):
    """A store/runs.parquet replaced by another Parquet file (the manifest intact) made `report` print
    DuckDB's five-line binder error as an internal error."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from conftest import qoelab_cli
    _, d, rec, key = _damaged(finished_store, tmp_path)
    qoelab_cli("query", str(d), "SELECT 1")   # compacted
    pq.write_table(pa.table({"zzz": [1, 2]}), d / "store" / "runs.parquet")
    r = qoelab_cli("report", str(d), "--out", str(tmp_path / "rep"))
    _one_line_error(r, "store/runs.parquet: not the runs view qoelab writes")
    assert not (tmp_path / "rep").exists()


def test_store_files_where_folders_go(finished_store, tmp_path):
    """A file where the store keeps a folder (runs, runs/<hh>, tables/<name>, a run's partition,
    store/tables) was an internal error, or a silently partial answer (a dangling part.parquet)."""
    import subprocess
    import sys
    from conftest import REPO

    def query(d):
        return subprocess.run([sys.executable, "-m", "qoelab.cli", "query", str(d),
                               "SELECT count(*) AS n FROM tables.segments"], capture_output=True, text=True,
                              cwd=REPO, timeout=60)
    cases = []
    _, d, rec, key = _damaged(finished_store, tmp_path / "a")
    shutil.rmtree(d / "runs")
    (d / "runs").write_text("x")
    cases.append((d, "runs: expected a folder (the run records), found a file"))
    _, d, rec, key = _damaged(finished_store, tmp_path / "b")
    t = next((d / "tables").iterdir())
    shutil.rmtree(t)
    t.write_text("x")
    cases.append((d, f"{t.name}: expected a folder (a table's runs), found a file"))
    _, d, rec, key = _damaged(finished_store, tmp_path / "c")
    part = next((d / "tables").glob(f"*/key={key}/part.parquet"))
    shutil.rmtree(part.parent)
    part.parent.write_text("x")
    cases.append((d, f"key={key}: expected a folder (a run's partition of a table), found a file"))
    _, d, rec, key = _damaged(finished_store, tmp_path / "e")
    part = next((d / "tables").glob(f"*/key={key}/part.parquet"))
    part.unlink()
    os.symlink(part, part)
    cases.append((d, "a dangling symbolic link or a link loop"))
    for d, needle in cases:
        shutil.rmtree(d / "store", ignore_errors=True)
        _one_line_error(query(d), needle)
    _, d, rec, key = _damaged(finished_store, tmp_path / "f")
    query(d)   # compacted
    shutil.rmtree(d / "store" / "tables")
    (d / "store" / "tables").write_text("x")
    (d / "store" / "manifest.json").unlink()
    _one_line_error(query(d), "store/tables: expected a folder (the compacted tables), found a file")


def test_is_store_on_a_deeply_nested_sweep_json(tmp_path):
    """Resuming a reproduction whose sweep/sweep.json was nested 200,000 deep was an internal
    RecursionError (is_store); it is "not a sweep store"."""
    from qoelab.sweep.store import is_store
    (tmp_path / "sweep.json").write_text("[" * 200_000 + "]" * 200_000)
    assert is_store(str(tmp_path)) is False


@pytest.mark.parametrize("body,outcome", [
    ("raise KeyboardInterrupt", "failed"),     # the worker died and the pool waited forever
    ("import os; os._exit(3)", "died"),         # likewise: a lost run, never returned
])
def test_a_run_whose_code_kills_its_worker_does_not_hang_the_sweep(tmp_path, body, outcome):
    (tmp_path / "k.py").write_text(f"class K:\n    def choose(self, obs):\n        {body}\n")
    base = BASE.replace('abr = "dynamic"', f'abr = "python:{tmp_path / "k.py"}:K"').replace('duration = "20s"',
                                                                                           'duration = "5s"')
    p = write_sweep(tmp_path, '[sweep]\nname = "k"\nbase = "base.toml"\n[axes]\n"topology.aqm" = ["pfifo", "codel"]\n',
                    base=base)
    t0 = time.monotonic()
    r = qoelab_cli("sweep", p, "--out", str(tmp_path / "o"), "--jobs", "2", "--quiet")
    assert time.monotonic() - t0 < 60
    if outcome == "failed":
        assert r.returncode == 1 and "2 failed" in (r.stdout + r.stderr), (r.returncode, r.stdout, r.stderr)
        r = qoelab_cli("query", str(tmp_path / "o"), "SELECT error FROM runs", "--format", "csv")
        assert r.stdout.count("KeyboardInterrupt raised by the run's code") == 2, r.stdout
    else:
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and lines[0].startswith("sweep k: 2 runs"), r.stderr
        assert len(lines) == 2 and lines[1].startswith("qoelab sweep: error: a worker process died while running"), \
            r.stderr
