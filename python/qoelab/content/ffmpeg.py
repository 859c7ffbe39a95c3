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


def run(ffmpeg: str, args: list[str], what: str, path: str | None = None, nice: int = 0) -> str:
    """Run ffmpeg; on failure raise InputError with the last stderr line. Returns stderr."""
    cmd = [ffmpeg, "-hide_banner", "-nostdin", "-loglevel", "error", "-y", *args]
    if nice:
        cmd = ["nice", "-n", str(nice), *cmd]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        lines = [ln.strip() for ln in p.stderr.splitlines() if ln.strip()]
        raise InputError(path, what, "ffmpeg to succeed", lines[-1] if lines else f"exit {p.returncode}")
    return p.stderr
