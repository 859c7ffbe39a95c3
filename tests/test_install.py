"""A real (non-editable) install works: build the wheel, install it into a fresh virtual environment
and run the README tour's commands there, outside the source tree.

The wheel is built with the development venv's maturin from the same release build that `make
build` made (so it takes seconds): tools/build-core leaves its configuration (target directory,
profile-guided flags) in target/build-core.env. The fresh venv gets the wheel only; its third-party dependencies
(numpy, pandas, pyarrow, ...) are borrowed from the development venv through a .pth file, so that
the test needs no network and no second copy of them. The slow tour lines (`bench`, `reproduce livi
--quick`, `video prepare`) run elsewhere in the suite; here their --help must work.
"""

import os
import re
import shutil
import subprocess
import sys
import sysconfig

import pytest

from conftest import REPO, data_dir

FAST_TOUR = ("run", "list", "validate", "video corpus")


def _sh(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)
    assert p.returncode == 0, f"{' '.join(map(str, cmd))} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
    return p


def _build_env():
    """VAR=value lines of target/build-core.env (empty for a plain build, absent before one)."""
    path = os.path.join(REPO, "target", "build-core.env")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    maturin = shutil.which("maturin", path=os.path.dirname(sys.executable))
    if not maturin:
        pytest.skip(f"no maturin beside {sys.executable} (make test installs it)")
    base = tmp_path_factory.mktemp("install")
    env = dict(os.environ, VIRTUAL_ENV=sys.prefix, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    env.update(_build_env())
    # -i the venv's python: the same build configuration as `maturin develop`, so cargo reuses it
    _sh([maturin, "build", "--release", "-q", "-i", sys.executable, "-o", str(base / "dist")], cwd=REPO, env=env)
    wheels = [f for f in os.listdir(base / "dist") if f.endswith(".whl")]
    assert len(wheels) == 1, wheels
    venv = base / "venv"
    _sh([sys.executable, "-m", "venv", str(venv)])
    py = venv / "bin" / "python"
    _sh([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(base / "dist" / wheels[0])])
    site = _sh([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    with open(os.path.join(site, "_qoelab_test_deps.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    work = base / "work"
    work.mkdir()
    shutil.copytree(os.path.join(REPO, "scenarios"), work / "scenarios")
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "QOELAB_CORPUS", "VIRTUAL_ENV")}
    clean["PATH"] = str(venv / "bin") + os.pathsep + os.environ["PATH"]
    clean["QOELAB_DATA"] = data_dir()       # the tour's trace scenario reads the shared data folder
    return venv, work, clean


def test_the_package_comes_from_the_wheel(installed):
    venv, work, env = installed
    out = _sh([str(venv / "bin" / "python"), "-c",
               "import qoelab, qoelab._core, os; print(qoelab.__file__); "
               "print(os.path.isfile(os.path.join(os.path.dirname(qoelab.__file__), '_core.pyi'))); "
               "print(qoelab._core.build())"],
              cwd=work, env=env).stdout.split()
    assert out[0].startswith(str(venv)) and out[1] == "True", out
    # built the way `make build` built the development copy (profile-guided or not)
    from qoelab import _core
    assert out[2] == _core.build(), (out[2], _core.build())


def _tour():
    readme = open(os.path.join(REPO, "README.md")).read()
    block = readme.split("## A 60-second tour", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    return [ln.split("#", 1)[0].strip() for ln in block.splitlines() if ln.startswith("qoelab ")]


def test_readme_tour_runs_from_the_installed_package(installed):
    venv, work, env = installed
    lines = _tour()
    assert len(lines) >= 8
    ran = []
    for line in lines:
        argv = line.split()[1:]
        if not line.startswith(tuple(f"qoelab {c}" for c in FAST_TOUR)):
            # slow lines: the command and its options must exist in the installed CLI
            sub = [a for a in argv if not a.startswith("-") and ":" not in a][:2]
            _sh([str(venv / "bin" / "qoelab"), *sub[:1 if sub[0] == "bench" else 2], "--help"], cwd=work, env=env)
            continue
        if "validate" in argv:
            import glob
            argv = ["validate", *sorted(f for f in glob.glob(str(work / "scenarios" / "*.toml"))
                                        if os.path.isdir(data_dir()) or '"data:' not in open(f).read())]
        p = _sh([str(venv / "bin" / "qoelab"), *argv], cwd=work, env=env)
        ran.append(argv[0])
        if argv[:3] == ["video", "corpus", "list"]:
            assert len(p.stdout.splitlines()) == 12 and "VMAF@" in p.stdout, p.stdout
    assert {"run", "list", "validate", "video"} <= set(ran)
    assert (work / "out" / "fq" / "summary.json").is_file()


def test_a_corpus_video_streams_from_the_installed_package(installed):
    venv, work, env = installed
    (work / "corpus.toml").write_text(
        '[scenario]\nname = "c"\nduration = "30s"\n[topology]\nrate = "3Mbps"\nrtt = "40ms"\n'
        '[[client]]\nname = "v"\nabr = "bba0"\nvideo = "corpus:noise"\n')
    p = _sh([str(venv / "bin" / "qoelab"), "run", "corpus.toml", "--out", "o", "--json"], cwd=work, env=env)
    assert re.search(r'"clients"', p.stdout)
