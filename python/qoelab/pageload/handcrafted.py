"""The handcrafted pages of the dissertation's validation (§3.4.3, §3.5.1): "a different number of
objects (2 to 64), of various sizes (1 KB to 1 MB), and a mix of these objects".

Only the *mixed* page is fully specified (32 x 1 KB + 16 x 10 KB + 2 x 100 KB + 2 x 200 KB, 52
objects); the full list was in Fig. 3.2, which is lost. Reconstruction (claims file §2.3): n in
{2, 4, 8, 16, 32, 64} x size in {1 KB, 10 KB, 100 KB, 1 MB}, plus the mixed page. The first
object is the root (the HTML) and every other object its child; one origin over plain HTTP (the
testbed's single web server). KB = 1000 bytes (the text does not say).
"""

from __future__ import annotations

from qoelab.pageload.page import Obj, Page

COUNTS = (2, 4, 8, 16, 32, 64)
SIZES = {"1KB": 1_000, "10KB": 10_000, "100KB": 100_000, "1MB": 1_000_000}
MIXED = [(32, 1_000), (16, 10_000), (2, 100_000), (2, 200_000)]
HOST = "testbed.example"


def _page(name: str, sizes: list[int]) -> Page:
    objs = [Obj(size=s, host=HOST, tls=False, parent=None if i == 0 else 0, url=f"http://{HOST}/o{i}")
            for i, s in enumerate(sizes)]
    return Page(name=name, objects=objs)


def pages() -> list[Page]:
    out = [_page(f"hand-{n}x{label}", [size] * n) for label, size in SIZES.items() for n in COUNTS]
    out.append(mixed())
    return out


def mixed() -> Page:
    """The mixed workload: 52 objects, 792 KB (the 1 KB objects first; the first is the root)."""
    return _page("hand-mixed", [s for n, s in MIXED for _ in range(n)])


def by_name(name: str) -> Page:
    for p in pages():
        if p.name == name or p.name == "hand-" + name:
            return p
    raise KeyError(name)
