"""Parsed files remembered by file identity within one process.

A reproduction builds hundreds of scenarios that name the same few files (videos, value functions);
parsing and validating each once is enough while the file does not change. A file is the same when
its real path, inode, size and modification time are; callers never change what they get back.
"""

from __future__ import annotations

import os
from typing import Callable

MAX_ENTRIES = 64


def load(memo: dict, path: str, parse: Callable[[str], object]):
    """``parse(path)``, or what it returned for this unchanged file before (``memo``: the caller's
    own dict, cleared when it holds ``MAX_ENTRIES``). ``os.stat`` errors propagate."""
    st = os.stat(path)
    ident = (os.path.realpath(path), st.st_ino, st.st_size, st.st_mtime_ns)
    v = memo.get(ident)
    if v is None:
        v = parse(path)
        if len(memo) >= MAX_ENTRIES:
            memo.clear()
        memo[ident] = v
    return v


def sha256_file(path: str) -> str:
    """SHA-256 (hex) of a file's bytes, read in 1 MiB pieces. ``OSError`` propagates."""
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
