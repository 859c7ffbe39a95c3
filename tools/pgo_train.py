"""Training run of a profile-guided build (tools/build-core): run the quick benchmark cases (but
the 1-hour memory case and ``bench.UNTRAINED``) and every example scenario (capped at 30
simulated seconds) on the instrumented core given as argv[1].

The instrumented library is loaded as ``qoelab._core`` before the package, so that the Python
front end around it is this checkout's. Scenarios that need files this machine does not have
(``../shared`` traces) are skipped with a note; nothing here asserts anything about results.
"""
import glob
import importlib.machinery
import importlib.util
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(here), "python"))
loader = importlib.machinery.ExtensionFileLoader("qoelab._core", sys.argv[1])
spec = importlib.util.spec_from_file_location("qoelab._core", sys.argv[1], loader=loader)
core = importlib.util.module_from_spec(spec)
loader.exec_module(core)
sys.modules["qoelab._core"] = core

from qoelab import bench, scenario  # noqa: E402  (after the instrumented core is in place)
from qoelab.errors import InputError  # noqa: E402

CAP_S = 30.0


def main() -> None:
    t0 = time.monotonic()
    runs = []
    for name, _, scn in bench.cases(quick=True):
        if name not in bench.ONCE and name not in bench.UNTRAINED:
            runs.append((f"bench {name}", lambda scn=scn: scenario.from_dict(scn, "<bench>")))
    for path in sorted(glob.glob(os.path.join(os.path.dirname(here), "scenarios", "*.toml"))):
        runs.append((os.path.basename(path), lambda path=path: scenario.load(path)))
    done = 0
    for name, make in runs:
        try:
            sc = make()
        except InputError as e:
            print(f"pgo training: skipped {name}: {e}", file=sys.stderr)
            continue
        core.run(_capped(sc.to_json()))
        done += 1
    print(f"pgo training: {done} runs in {time.monotonic() - t0:.1f} s", file=sys.stderr)


def _capped(cfg_json: str) -> str:
    import json
    cfg = json.loads(cfg_json)
    cap = int(CAP_S * 1e9)
    if isinstance(cfg.get("duration"), int) and cfg["duration"] > cap:
        cfg["duration"] = cap
    return json.dumps(cfg)


if __name__ == "__main__":
    main()
