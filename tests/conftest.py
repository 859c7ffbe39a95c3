import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The Ctrl-C tests send SIGINT to child processes. A shell that starts the suite in the background
# (`cmd &` without job control) makes SIGINT ignored, every child inherits that across exec and Python
# then installs no KeyboardInterrupt handler, so those tests would test the launcher, not qoelab:
# give the children the default disposition back (a handler, unlike SIG_IGN, is reset by exec).
import signal  # noqa: E402
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# `qoelab minerva` results are cached by their inputs: keep the tests' cache out of the user's.
if "QOELAB_CACHE" not in os.environ:
    import atexit
    import shutil
    import tempfile
    os.environ["QOELAB_CACHE"] = tempfile.mkdtemp(prefix="qoelab-test-cache-")
    atexit.register(shutil.rmtree, os.environ["QOELAB_CACHE"], True)   # not one folder left per run


def data_dir():
    """The shared data folder (../shared/data beside the checkout, or $QOELAB_DATA)."""
    return os.environ.get("QOELAB_DATA") or os.path.join(os.path.dirname(REPO), "shared", "data")


def need_data(*parts):
    p = os.path.join(data_dir(), *parts)
    if not os.path.exists(p):
        pytest.skip(f"needs the shared data folder ({p} not found; set QOELAB_DATA)")
    return p


def qoelab_cli(*args, cwd=None, env=None):
    """Run the CLI in a subprocess; returns CompletedProcess with text output. ``env``: variables
    added to this process's environment."""
    return subprocess.run([sys.executable, "-m", "qoelab.cli", *args], capture_output=True, text=True,
                          cwd=cwd or REPO, timeout=600, env={**os.environ, **env} if env else None)
