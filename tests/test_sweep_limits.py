"""Sweep files at their limits: bounded expressions, the run cap of expansion, the range of seeds
(docs/sweeps.md). Every bad input is one line naming the file and the key, exit 2; nothing here
hangs, runs out of memory or raises an internal error."""

import copy
import os

import pytest

from conftest import qoelab_cli
from test_sweep import BASE as SWEEP_BASE

from qoelab.errors import InputError

# test_sweep's small scenario, shorter: expansion is what these tests exercise, not the runs
BASE = (SWEEP_BASE.replace('duration = "20s"', 'duration = "5s"')
        .replace('video_duration = "18s"', 'video_duration = "4s"').replace('start = "5s"', 'start = "1s"'))

U64_MAX = 2 ** 64 - 1


def write(tmp_path, body: str, base: str = BASE, name: str = "s.toml") -> str:
    (tmp_path / "base.toml").write_text(base)
    p = tmp_path / name
    p.write_text(body)
    return str(p)


def load_error(path: str) -> str:
    """The InputError of expanding sweep file ``path`` (one line)."""
    from qoelab.sweep import spec
    with pytest.raises(InputError) as ei:
        spec.load(path)
    msg = str(ei.value)
    assert "\n" not in msg and len(msg) < 1000, msg
    return msg


# ----------------------------------------------------------------------------------------------
# 1. expressions are bounded


def derived(expr: str, key: str = "topology.buffer", unit: str | None = "pkts") -> str:
    u = f', unit = "{unit}"' if unit else ""
    e = expr.replace("\\", "\\\\").replace('"', '\\"')
    return f'[sweep]\nbase = "base.toml"\n[axes]\nx = [1, 2]\n[derived]\n"{key}" = {{ expr = "{e}"{u} }}\n'


def where(expr: str) -> str:
    e = expr.replace("\\", "\\\\").replace('"', '\\"')
    return f'[sweep]\nbase = "base.toml"\nwhere = "{e}"\n[axes]\n"topology.aqm" = ["codel", "pie"]\nx = [1, 2]\n'


@pytest.mark.parametrize("body,where_,what", [
    (derived("9**9**9 + x"), "derived.topology.buffer", "too large"),
    (where("9**9**9 > x"), "sweep.where", "too large"),
    (derived("str(x) * 10000000000", "scenario.name", None), "derived.scenario.name", "too long"),
    (derived("10000000000 * str(x)", "scenario.name", None), "derived.scenario.name", "too long"),
    (derived("[x] * 10**9", "scenario.name", None), "derived.scenario.name", "too long"),
    (derived("2 ** 1024 + x"), "derived.topology.buffer", "limit"),
    (derived("(x * 10**300) * (x * 10**300)"), "derived.topology.buffer", "limit"),
    (derived("round(x, -10**9)"), "derived.topology.buffer", "round"),
    (derived("'%0999999999d' % x", "scenario.name", None), "derived.scenario.name", "width"),
    (derived("'%*d' % (10**9, x)", "scenario.name", None), "derived.scenario.name", "'*'"),
    (derived("int('1' * 4000) + x"), "derived.topology.buffer", "limit"),
    (derived("str([str(x) * 9000, str(x) * 9000])", "scenario.name", None), "derived.scenario.name", "10,000"),
    (derived("'a' * 9999 + str(x) * 2", "scenario.name", None), "derived.scenario.name", "10,000"),
    (derived("(-8) ** 0.5 + x"), "derived.topology.buffer", "complex"),
    (derived("b'a' * x", "scenario.name", None), "derived.scenario.name", "bytes"),
    (derived("-" * 100_000 + "x"), "derived.topology.buffer", "nested too deeply"),
    (derived("+".join(["x"] * 100_000)), "derived.topology.buffer", "nested too deeply"),
    (where("not " * 50_000 + "x"), "sweep.where", "nested too deeply"),
    (derived("get(5)"), "derived.topology.buffer", "dotted scenario key"),
])
def test_expensive_expressions_are_refused_naming_the_key(tmp_path, body, where_, what):
    p = write(tmp_path, body)
    msg = load_error(p)
    assert msg.startswith(f"{p}:{where_}:") and what in msg, msg


def test_expression_cli_one_line_exit_2(tmp_path):
    """The reported cases through the CLI, --dry-run included: one line, exit 2, nothing written."""
    for body, key in ((derived("9**9**9 + x"), "derived.topology.buffer"), (where("9**9**9 > x"), "sweep.where"),
                      (derived("str(x) * 10000000000", "scenario.name", None), "derived.scenario.name")):
        p = write(tmp_path, body)
        out = str(tmp_path / "out")
        for extra in ((), ("--dry-run",)):
            r = qoelab_cli("sweep", p, "--out", out, *extra)
            assert r.returncode == 2, r.stderr
            lines = r.stderr.strip().splitlines()
            assert len(lines) == 1 and f"{p}:{key}:" in lines[0] and "Traceback" not in r.stderr, r.stderr
            assert not os.path.exists(out)


@pytest.mark.parametrize("text,env,value", [
    ("2 ** 10", {}, 1024),
    ("2 ** 1023", {}, 2 ** 1023),
    ("(-2) ** 3", {}, -8),
    ("2 ** -2", {}, 0.25),
    ("1 ** (10 ** 300)", {}, 1),
    ("0.5 ** (10 ** 300)", {}, 0.0),
    ("'ab' * 3", {}, "ababab"),
    ("3 * 'ab'", {}, "ababab"),
    ("'ab' * 5000", {}, "ab" * 5000),
    ("[1, 2] * 2", {}, [1, 2, 1, 2]),
    ("'%s-%s' % (x, 2)", {"x": 1}, "1-2"),
    ("'%5.2f' % 3.14159", {}, " 3.14"),
    ("'100%%'", {}, "100%%"),
    ("'%d%%' % 5", {}, "5%"),
    ("round(1234, -2)", {}, 1200),
    ("round(2.567, 1)", {}, 2.6),
    ("ceil(1.7e308) > 0", {}, True),
    ("int('1' * 300) > 0", {}, True),
    ("max(2, ceil(0.5 * bdp_pkts('4Mbps', '40ms')))", {}, 7),
])
def test_bounded_expressions_still_compute(text, env, value):
    from qoelab.sweep import expr
    assert expr.evaluate(expr.compile_expr(text), env) == value


def test_expression_messages_are_short():
    """An expression or value of thousands of characters is quoted in part."""
    from qoelab.sweep import expr
    long_name = "x" * 50_000
    with pytest.raises(expr.ExprError) as ei:
        expr.compile_expr(f"{long_name} +")
    assert len(str(ei.value)) < 300
    with pytest.raises(expr.ExprError) as ei:
        expr.evaluate(expr.compile_expr("seconds(s)"), {"s": "z" * 9000})
    assert len(str(ei.value)) < 600


# ----------------------------------------------------------------------------------------------
# 2. expansion: the run cap, copy on write, progress


def test_run_cap_refuses_before_building(tmp_path):
    from qoelab.sweep import spec
    n = spec.MAX_RUNS // 2 + 1
    values = ", ".join(str(i) for i in range(1, n + 1))
    p = write(tmp_path, f'[sweep]\nbase = "base.toml"\n[axes]\n"topology.buffer" = [{values}]\n'
                        f'"topology.rate" = ["1Mbps", "2Mbps"]\n')
    msg = load_error(p)
    assert f"{p}:axes:" in msg and f"at most {spec.MAX_RUNS:,} runs" in msg and f"{2 * n:,}" in msg, msg
    # repetitions count
    p = write(tmp_path, f'[sweep]\nbase = "base.toml"\nrepetitions = 3\n[axes]\nx = [{values}]\n')
    assert f"at most {spec.MAX_RUNS:,} runs" in load_error(p)


def test_combination_cap_with_filters(tmp_path, monkeypatch):
    from qoelab.sweep import spec
    monkeypatch.setattr(spec, "MAX_POINTS", 1000)
    monkeypatch.setattr(spec, "MAX_RUNS", 50)
    a = ", ".join(str(i) for i in range(40))
    body = f'[sweep]\nbase = "base.toml"\nwhere = "{{}}"\n[axes]\nx = [{a}]\ny = [{a}]\n'
    msg = load_error(write(tmp_path, body.format("x < 2")))       # 1,600 combinations
    assert ":axes:" in msg and "at most 1,000 combinations" in msg and "before where" in msg, msg
    monkeypatch.setattr(spec, "MAX_POINTS", 10_000)
    # a filter that keeps few runs of many combinations is fine (x and y are variables: the derived
    # scenario.name makes the runs' scenarios distinct)
    body2 = body.format("x == y and x < 3") + '[derived]\n"scenario.name" = "str(x)"\n'
    sw = spec.load(write(tmp_path, body2))
    assert len(sw.runs) == 3
    named = '[derived]\n"scenario.name" = "str(x) + \'-\' + str(y)"\n'
    msg = load_error(write(tmp_path, body.format("x < 30") + named))
    assert ":axes:" in msg and "at most 50 runs" in msg and "after where" in msg, msg


def test_runs_share_the_base_copy_on_write(tmp_path):
    """Runs share the tables no axis changes; each run's scenario is still its own where an axis, a
    derived value or the seed changes it, and the keys are those of independent deep copies."""
    from qoelab import scenario as scn
    from qoelab.sweep import spec
    p = write(tmp_path, """
[sweep]
base = "base.toml"
repetitions = 2
[axes]
"topology.aqm" = ["codel", "pie"]
abr = { key = "client.*.abr", values = ["bola", "dynamic"] }
[derived]
"topology.buffer" = { expr = "2 + len_", unit = "pkts" }
""".replace("len_", "(1 if aqm == 'pie' else 0)"))
    sw = spec.load(p)
    assert len(sw.runs) == 2 * 2 * 2
    for r in sw.runs:
        sc = r.scenario
        assert sc["scenario"]["seed"] == r.seed and sc["topology"]["aqm"] == r.point["aqm"]
        assert sc["topology"]["buffer"] == r.point["buffer"]
        assert [c["abr"] for c in sc["client"]] == [r.point["abr"]]
        again = scn.from_dict(copy.deepcopy(sc), str(tmp_path / "base.toml"), check=False)
        assert spec.run_key(again.config, spec._core_version()) == r.key
    # the [[flow]] table no axis touches is one object for all runs; the changed ones are not
    assert len({id(r.scenario["flow"]) for r in sw.runs}) == 1
    assert len({id(r.scenario["topology"]) for r in sw.runs}) == len({r.index for r in sw.runs})
    assert len({id(r.scenario["scenario"]) for r in sw.runs}) == len(sw.runs)
    # expanding again gives the same keys (nothing shared was changed by the first expansion)
    assert [r.key for r in spec.load(p).runs] == [r.key for r in sw.runs]


def test_set_key_copy_on_write_leaves_the_shared_data_alone():
    from qoelab.sweep import spec
    base = {"a": {"b": {"c": 1}, "keep": [1, 2]}, "l": [{"x": 1}, {"x": 2}]}
    snapshot = copy.deepcopy(base)
    mine = dict(base)
    fresh = {id(mine)}
    spec.set_key(mine, "a.b.c", 2, fresh)
    spec.set_key(mine, "l.*.x", 9, fresh)
    spec.set_key(mine, "a.new.deep", 3, fresh)
    spec.set_key(mine, "a.b.d", 4, fresh)          # a.b is this run's copy now: not copied again
    assert base == snapshot
    assert mine == {"a": {"b": {"c": 2, "d": 4}, "keep": [1, 2], "new": {"deep": 3}}, "l": [{"x": 9}, {"x": 9}]}
    assert mine["a"]["keep"] is base["a"]["keep"]
    with pytest.raises(KeyError):
        spec.set_key(mine, "l.5.x", 1, fresh)


def test_long_expansion_reports_progress(tmp_path, monkeypatch):
    from qoelab.sweep import spec
    monkeypatch.setattr(spec._Progress, "EVERY_S", 0.0)
    p = write(tmp_path, '[sweep]\nbase = "base.toml"\n[axes]\n"topology.buffer" = [2, 3, 4]\n')
    lines = []
    sw = spec.load(p, progress=lines.append)
    assert len(sw.runs) == 3 and lines
    assert any("building and keying" in x for x in lines) and "3 runs expanded and checked" in lines[-1]
    # looked at before every run (it was every 256th: minutes without a line when runs build slowly)
    assert sum("building and keying" in x for x in lines) == 3, lines
    monkeypatch.setattr(spec._Progress, "EVERY_S", 5.0)
    quiet = []
    spec.load(p, progress=quiet.append)       # a short expansion: no line
    assert quiet == []


# ----------------------------------------------------------------------------------------------
# 3. seeds


AXIS = '[axes]\n"topology.aqm" = ["codel", "pie"]\n'


@pytest.mark.parametrize("seed_lines,reps,ok", [
    (f"seed = {U64_MAX}", 1, True),
    (f"seed = {U64_MAX - 2}\nrepetitions = 3", 3, True),
    (f"seeds = [0, {U64_MAX}]", 2, True),
])
def test_large_seeds_are_accepted(tmp_path, seed_lines, reps, ok):
    from qoelab.sweep import spec
    sw = spec.load(write(tmp_path, f'[sweep]\nbase = "base.toml"\n{seed_lines}\n{AXIS}'))
    assert len(sw.runs) == 2 * reps and max(r.seed for r in sw.runs) == U64_MAX
    assert all(r.scenario["scenario"]["seed"] == r.seed for r in sw.runs)


@pytest.mark.parametrize("seed_lines,where_,expected,found", [
    (f"seed = {U64_MAX}\nrepetitions = 3", "sweep.seed", f"0..{U64_MAX - 2}", str(U64_MAX)),
    (f"seed = {2 ** 64}", "sweep.seed", f"0..{U64_MAX}", str(2 ** 64)),
    (f"seed = {2 ** 70}", "sweep.seed", f"0..{U64_MAX}", str(2 ** 70)),
    ("seed = -1", "sweep.seed", f"0..{U64_MAX}", "-1"),
    ('seed = "7"', "sweep.seed", "an integer", "'7'"),
    (f"seeds = [{2 ** 64}]", "sweep.seeds.0", f"0..{U64_MAX}", str(2 ** 64)),
    (f"seeds = [1, 2, {2 ** 64}]", "sweep.seeds.2", f"0..{U64_MAX}", str(2 ** 64)),
    ("seeds = [1, 2, 1]", "sweep.seeds", "distinct", "1 twice"),
])
def test_bad_sweep_seeds_name_the_range(tmp_path, seed_lines, where_, expected, found):
    p = write(tmp_path, f'[sweep]\nbase = "base.toml"\n{seed_lines}\n{AXIS}')
    msg = load_error(p)
    assert msg.startswith(f"{p}:{where_}:") and expected in msg and msg.endswith(f"found {found}"), msg
    assert ">= 0, found" not in msg


def test_top_seeds_run_and_are_queried_as_unsigned(tmp_path):
    """The store keeps seeds up to 2^64 - 1 (its views were int64: a sweep stopped at 2^63 - 1):
    they run, the views give them back exactly, and views of the old layout are made again."""
    import json

    from qoelab.sweep import runner, spec
    from qoelab.sweep.store import open_store
    p = write(tmp_path, f'[sweep]\nbase = "base.toml"\nseed = {U64_MAX - 1}\nrepetitions = 2\n'
                        '[set]\n"output.tables" = ["segments"]\n[axes]\n"topology.aqm" = ["codel"]\n')
    out = str(tmp_path / "out")
    res = runner.run(spec.load(p), out, jobs=1, quiet=True)
    assert res["ran"] == 2 and res["failed"] == 0
    st = open_store(out)
    assert st.arrow("SELECT seed FROM runs ORDER BY seed").column("seed").to_pylist() == [U64_MAX - 1, U64_MAX]
    assert st.sql("SELECT typeof(seed) AS t FROM runs LIMIT 1")["t"].tolist() == ["UBIGINT"]
    segs = st.arrow("SELECT DISTINCT seed FROM tables.segments ORDER BY seed").column("seed").to_pylist()
    assert segs == [U64_MAX - 1, U64_MAX]
    man = os.path.join(out, "store", "manifest.json")
    m = json.load(open(man))
    m["views"] = 1                                   # views written by the int64 layout
    open(man, "w").write(json.dumps(m))
    assert not st.compacted()
    st.ensure_compacted()
    assert st.compacted()


def test_base_scenario_seed_is_blamed_in_the_base_file(tmp_path):
    big = BASE.replace("seed = 7", f"seed = {2 ** 64}")
    p = write(tmp_path, f'[sweep]\nbase = "base.toml"\n{AXIS}', base=big)
    base_file = str(tmp_path / "base.toml")
    msg = load_error(p)
    assert msg.startswith(f"{base_file}:scenario.seed:") and f"0..{U64_MAX}" in msg and "sweep.seed" in msg, msg
    # with repetitions the range leaves room for seed + rep
    edge = BASE.replace("seed = 7", f"seed = {U64_MAX}")
    p = write(tmp_path, f'[sweep]\nbase = "base.toml"\nrepetitions = 2\n{AXIS}', base=edge)
    msg = load_error(p)
    assert msg.startswith(f"{base_file}:scenario.seed:") and f"0..{U64_MAX - 1}" in msg, msg
    # the sweep's own seed replaces the base's
    from qoelab.sweep import spec
    p = write(tmp_path, f'[sweep]\nbase = "base.toml"\nseed = 5\n{AXIS}', base=big)
    assert {r.seed for r in spec.load(p).runs} == {5}
    # a [set] or an inline [base] is named as such
    p = write(tmp_path, f'[sweep]\nbase = "base.toml"\n[set]\n"scenario.seed" = {2 ** 64}\n{AXIS}')
    assert load_error(p).startswith(f"{p}:set.scenario.seed:")
    inline = "[base]\n" + BASE.replace("[scenario]", "[base.scenario]").replace("[topology]", "[base.topology]") \
        .replace("[[client]]", "[[base.client]]").replace("[[flow]]", "[[base.flow]]") \
        .replace("seed = 7", f"seed = {2 ** 64}")
    p = write(tmp_path, f'[sweep]\nname = "inline"\n{inline}\n{AXIS}')
    assert load_error(p).startswith(f"{p}:base.scenario.seed:")


def test_base_seed_cli_one_line(tmp_path):
    big = BASE.replace("seed = 7", f"seed = {2 ** 64}")
    p = write(tmp_path, f'[sweep]\nbase = "base.toml"\n{AXIS}', base=big)
    r = qoelab_cli("sweep", p, "--out", str(tmp_path / "out"), "--dry-run")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{tmp_path / 'base.toml'}:scenario.seed:" in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_progress_line_goes_on_while_runs_are_under_way(monkeypatch):
    """A long run finishes nothing for minutes: the line is redrawn anyway (elapsed, ETA), every
    30 s off a terminal, at most once a second on one; before, it stood still."""
    import io

    from qoelab.sweep import runner
    now = [1000.0]
    monkeypatch.setattr(runner.time, "monotonic", lambda: now[0])
    out = io.StringIO()
    p = runner.Progress("s", 2, 0, stream=out)
    now[0] += 1
    p.update(False)                      # 1/2 (50%): a line (a new 10% step)
    for _ in range(29):
        now[0] += 1
        p.tick()                         # within 30 s of the last line: nothing
    now[0] += 1
    p.tick()                             # 30 s: the line again, elapsed 31 s
    lines = out.getvalue().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("sweep s: 1/2 runs (50%), 0 failed, 1s elapsed")
    assert lines[1].startswith("sweep s: 1/2 runs (50%), 0 failed, 31s elapsed, ETA 31s")
    now[0] += 5
    p.update(False)                      # the last run: always drawn
    assert out.getvalue().splitlines()[-1].startswith("sweep s: 2/2 runs (100%), 0 failed, 36s elapsed")


def test_views_never_replace_the_run_identity_or_the_axes():
    """An axis named like a summary field (`events`) showed the summary's value in `runs`; a record
    whose summary held `key` replaced the run's key. Identity and axes win; the summary's value
    is kept beside them."""
    from qoelab.sweep.store import Store
    rec = {"key": "abc", "index": 0, "rep": 0, "seed": 1, "point": {"events": 2, "aqm": "codel"},
           "status": "ok", "error": None, "wall_s": 0.1,
           "summary": {"events": 6377, "key": 1, "aqm": "zzz", "duration_s": 5.0,
                       "clients": [{"name": "c0", "events": 9, "qoe": 3.5}], "flows": [], "links": []},
           "metrics": {"run": {"aqm": "m"}, "clients": [{"qoe": 4.0}]}}
    rows = Store._rows(None, rec, ["events", "aqm"])
    run = rows["runs"][0]
    assert (run["key"], run["events"], run["aqm"]) == ("abc", 2, "codel")
    assert (run["summary_events"], run["summary_key"], run["summary_aqm"], run["metrics_aqm"]) == (6377, 1, "zzz", "m")
    assert run["duration_s"] == 5.0
    c = rows["clients"][0]
    assert (c["events"], c["summary_events"], c["qoe"], c["client"]) == (2, 9, 4.0, "c0")
