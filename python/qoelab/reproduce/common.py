"""Pieces every reproduction shares: recognising and replacing its own output directory."""

from __future__ import annotations

import json
import os

from qoelab import outdir
from qoelab.errors import InputError


def is_ours(path: str, reproduction: str) -> bool:
    """``path`` holds a previous run of ``reproduction`` (its meta.json says so)."""
    try:
        with open(os.path.join(path, "meta.json")) as f:
            return json.load(f).get("reproduction") == reproduction
    except (OSError, ValueError, AttributeError):
        return False


def check_out_dir(out_dir: str, reproduction: str) -> str:
    """The absolute output directory, refused (one line, exit 2) if it exists, is not empty and is not
    a previous run of this reproduction; see :func:`qoelab.outdir.check`."""
    out_dir = os.path.abspath(out_dir)
    if os.path.isdir(out_dir) and os.listdir(out_dir) and not is_ours(out_dir, reproduction):
        raise InputError(out_dir, None, message="output directory exists, is not empty and is not a previous "
                                                f"{reproduction} reproduction (refusing to replace it)")
    return outdir.check(out_dir, replaceable=lambda p: is_ours(p, reproduction))
