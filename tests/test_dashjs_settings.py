"""`--set KEY=VALUE` of `qoelab dashjs` and `[client.player] set` are checked against dash.js's
settings before anything starts (a probe: `--set streaming=5` stopped dash.js at 0 s, 0 segments,
and the command exited 0; a misspelt key did nothing, silently). No browser needed."""

import pytest

from conftest import qoelab_cli
from qoelab import dashjs
from qoelab.errors import InputError


@pytest.mark.parametrize("item, needle", [
    ("streaming=5", "streaming: a settings object, found a number"),
    ("streaming.abr=null", "streaming.abr: a settings object, found null"),
    ("nosuch.key=1", "setting (python/qoelab/dashjs_settings.json), found nosuch in"),
    ("streaming.buffer.bufferTimeAtTopQualty=30", "found streaming.buffer.bufferTimeAtTopQualty in"),
    ("streaming.buffer.bufferTimeAtTopQuality=abc", "a number (its default: 30), found a string"),
    ('streaming.abr.rules={"bolaRul": {"active": false}}', "found streaming.abr.rules.bolaRul in"),
])
def test_unknown_keys_and_wrong_kinds_are_refused(item, needle):
    with pytest.raises(InputError) as e:
        dashjs.apply_sets({}, [item])
    assert needle in str(e.value) and str(e.value).startswith("--set: expected"), str(e.value)


def test_known_settings_pass_and_qoelabs_own_settings_are_known():
    s = dashjs.apply_sets({}, ["streaming.buffer.bufferTimeAtTopQuality=12",
                               "streaming.abr.throughput.useResourceTimingApi=false",
                               'streaming.abr.rules={"bolaRule": {"active": false}}',
                               "streaming.delay.liveDelay=3"])     # a null default takes any kind
    assert s["streaming"]["buffer"]["bufferTimeAtTopQuality"] == 12
    for abr in dashjs.ABR:
        def walk(d, p=""):
            for k, v in d.items():
                if isinstance(v, dict):
                    walk(v, p + k + ".")
                else:
                    dashjs.check_setting(p + k, v, p + k)
        walk(dashjs.settings(abr, 30.0, 12.0))


def test_cli_and_scenario_refuse_before_starting(tmp_path):
    r = qoelab_cli("dashjs", "http://127.0.0.1:9/manifest.mpd", "--set", "streaming=5", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--set: expected streaming" in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()
    sc = tmp_path / "s.toml"
    sc.write_text('[scenario]\nduration = "10s"\n[topology]\nrate = "10Mbps"\n[[client]]\n'
                  'video = "synthetic:has-testbed"\n[client.player]\nkind = "dashjs"\nset = ["nosuch.key=1"]\n')
    r = qoelab_cli("validate", str(sc))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "client[0].player.set" in r.stderr, r.stderr
