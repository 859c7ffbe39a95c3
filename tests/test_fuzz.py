"""CI-sized smoke run of the coverage-guided fuzz target fuzz/fuzz_inputs.py (atheris): a fixed
seed and number of inputs over the seed corpus; any exception other than InputError, a hang
(-timeout) or a memory blow-up (-rss_limit_mb) fails. The long run is in docs/fuzzing.md."""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO


def test_fuzz_smoke(tmp_path):
    try:
        import atheris  # noqa: F401
    except ImportError:
        print("SKIP reason: atheris is not installed (pip install atheris)")
        pytest.skip("atheris is not installed (pip install atheris); fuzz smoke run skipped")
    corpus = tmp_path / "corpus"
    shutil.copytree(os.path.join(REPO, "fuzz", "seeds"), corpus)
    r = subprocess.run([sys.executable, os.path.join(REPO, "fuzz", "fuzz_inputs.py"), "-seed=1", "-runs=3000",
                        "-max_total_time=45", "-timeout=15", "-rss_limit_mb=3072",
                        f"-artifact_prefix={tmp_path}/", str(corpus)],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Done" in r.stderr, r.stderr[-3000:]
