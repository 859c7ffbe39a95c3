"""Locating and running ffmpeg.

The default ffmpeg is the static binary of the PyPI wheel ``imageio-ffmpeg`` (libx264, libvmaf with the
built-in ``vmaf_v0.6.1`` model). A system ffmpeg is accepted with ``--ffmpeg PATH`` or the environment
variable ``QOELAB_FFMPEG`` when it has every encoder and filter the pipeline needs; otherwise the missing
pieces are named in one :class:`~qoelab.errors.InputError` line.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import threading

from qoelab.errors import InputError

#: Encoders / filters the pipeline uses. Generators are only needed by the sources that use them.
REQUIRED_ENCODERS = ("libx264", "ffv1")
REQUIRED_FILTERS = ("libvmaf", "ssim", "psnr", "scale", "fps", "setpts", "split", "tpad", "trim")


def find_ffmpeg(explicit: str | None = None) -> str:
    """Path of the ffmpeg to use: ``explicit``, ``$QOELAB_FFMPEG``, the imageio-ffmpeg wheel, or PATH."""
    cand = explicit or os.environ.get("QOELAB_FFMPEG")
    if cand:
        path = shutil.which(cand) or (cand if os.path.isfile(cand) else None)
        if not path:
            raise InputError(cand, None, "an ffmpeg executable", "no such file")
        return path
    try:
        import imageio_ffmpeg  # type: ignore

        return imageio_ffmpeg.get_ffmpeg_exe()
    except Exception:  # noqa: BLE001 - wheel missing or broken: fall back to PATH
        pass
    path = shutil.which("ffmpeg")
    if not path:
        raise InputError("ffmpeg", None, "the imageio-ffmpeg wheel or an ffmpeg on PATH", "neither")
    return path


@functools.lru_cache(maxsize=None)
def _capabilities(ffmpeg: str) -> tuple[str, frozenset, frozenset]:
    def listing(flag: str) -> str:
        try:
            return subprocess.run([ffmpeg, "-hide_banner", flag], capture_output=True, text=True,
                                  timeout=60).stdout
        except OSError as e:
            raise InputError(ffmpeg, None, "a runnable ffmpeg", str(e)) from None

    ver = listing("-version").splitlines()
    version = ver[0] if ver else "unknown"
    enc, fil = set(), set()
    for line in listing("-encoders").splitlines():
        parts = line.split()
        if len(parts) >= 2 and len(parts[0]) == 6:
            enc.add(parts[1])
    for line in listing("-filters").splitlines():
        parts = line.split()
        if len(parts) >= 3 and "->" in parts[2]:
            fil.add(parts[1])
    return version, frozenset(enc), frozenset(fil)


def version(ffmpeg: str) -> str:
    """First line of ``ffmpeg -version`` (recorded in every output)."""
    return _capabilities(ffmpeg)[0]


def check(ffmpeg: str, filters: tuple[str, ...] = (), encoders: tuple[str, ...] = ()) -> None:
    """Raise one InputError line naming everything ``ffmpeg`` lacks."""
    _, enc, fil = _capabilities(ffmpeg)
    missing = [f"encoder {e}" for e in (*REQUIRED_ENCODERS, *encoders) if e not in enc]
    missing += [f"filter {f}" for f in (*REQUIRED_FILTERS, *filters) if f not in fil]
    if missing:
        raise InputError(ffmpeg, None, "ffmpeg with " + ", ".join(missing),
                         "them missing (install the imageio-ffmpeg wheel or pass --ffmpeg)")


_lock = threading.Lock()
_running: set = set()
_stopping = False


def stop_all() -> None:
    """Kill every ffmpeg this process is running and refuse to start more (on Ctrl-C / SIGTERM, so
    that worker threads return at once); :func:`resume` allows them again."""
    global _stopping
    with _lock:
        _stopping = True
        procs = list(_running)
    for p in procs:
        try:
            p.kill()
        except OSError:
            pass


def stopping() -> bool:
    """Whether :func:`stop_all` was called: long in-process steps (decoding in worker threads) check
    it and raise KeyboardInterrupt, so that the command ends within a second of SIGTERM to its pid
    (the executor waits for its threads: a decode had held the exit for ~6.6 s)."""
    return _stopping


def resume() -> None:
    global _stopping
    with _lock:
        _stopping = False


def run(ffmpeg: str, args: list[str], what: str, path: str | None = None, nice: int = 0,
        cwd: str | None = None) -> str:
    """Run ffmpeg (in ``cwd``); on failure raise InputError with the last stderr line. Returns stderr."""
    cmd = [ffmpeg, "-hide_banner", "-nostdin", "-loglevel", "error", "-y", *args]
    if nice:
        cmd = ["nice", "-n", str(nice), *cmd]
    with _lock:
        if _stopping:
            raise KeyboardInterrupt
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=cwd)
        _running.add(p)
    try:
        _, err = p.communicate()
    except BaseException:       # Ctrl-C / SIGTERM in this thread: do not leave ffmpeg running
        p.kill()
        p.wait()
        raise
    finally:
        with _lock:
            _running.discard(p)
    if _stopping:
        raise KeyboardInterrupt
    p.stderr = err
    if p.returncode != 0:
        lines = [ln.strip() for ln in p.stderr.splitlines() if ln.strip()]
        raise InputError(path, what, "ffmpeg to succeed", lines[-1] if lines else f"exit {p.returncode}")
    return p.stderr
