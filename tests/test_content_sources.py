"""Built-in generated sources render, and render deterministically (the corpus depends on it)."""

import hashlib
import subprocess

import pytest

from qoelab.content import ffmpeg as ff
from qoelab.content import sources


def _render(ffm, graph):
    cmd = [ffm, "-hide_banner", "-nostdin", "-loglevel", "error", "-filter_complex",
           graph + ",trim=end_frame=6,format=yuv420p[out]", "-map", "[out]", "-f", "rawvideo", "-"]
    p = subprocess.run(cmd, capture_output=True)
    assert p.returncode == 0, p.stderr.decode()[-300:]
    return p.stdout


@pytest.mark.parametrize("name", sorted(sources.SOURCES))
def test_source_is_deterministic(name):
    ffm = ff.find_ffmpeg()
    ff.check(ffm, filters=sources.SOURCES[name].needs)
    g = sources.SOURCES[name].graph(96, 54, 24, 60.0)
    a, b = _render(ffm, g), _render(ffm, g)
    assert len(a) == 6 * 96 * 54 * 3 // 2
    assert hashlib.sha256(a).digest() == hashlib.sha256(b).digest()
