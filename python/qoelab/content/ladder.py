"""Bitrate ladders.

``table6.2`` is the dissertation's Table 6.2 (13 quality levels, 144p-2160p, 0.16-10 Mbit/s) capped at 1080p
(Q0-Q10, 11 rungs): the default of ``qoelab video prepare``. ``corpus`` is the reduced-resolution ladder used
for the committed corpus (same bitrates Q0-Q7, resolutions capped at 360p; see docs/content.md for why).
``hd`` is the 8-rung 0.2-6 Mbit/s, 240p-1080p ladder of the ``hd`` corpus (docs/corpus.md).
A custom ladder is ``WxH@RATE,...`` with RATE in bit/s and an optional k/M suffix, e.g. ``640x360@750k``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from qoelab.errors import InputError


@dataclass(frozen=True)
class Rung:
    width: int
    height: int
    bitrate: int  # average (target) bit/s; peak capped at 2x (capped VBR)

    @property
    def label(self) -> str:
        return f"{self.width}x{self.height}@{self.bitrate // 1000}k"


_R = {144: (256, 144), 240: (426, 240), 360: (640, 360), 480: (854, 480), 720: (1280, 720),
      1080: (1920, 1080), 1440: (2560, 1440), 2160: (3840, 2160)}

#: Table 6.2 of the dissertation: (resolution height, average Mbit/s) for Q0..Q12.
TABLE_6_2 = [(144, 0.16), (240, 0.23), (240, 0.37), (360, 0.56), (360, 0.75), (480, 1.05), (480, 1.75),
             (720, 2.35), (720, 3.0), (1080, 4.3), (1080, 5.8), (1440, 7.4), (2160, 10.0)]


# Bounds of a hand-written ladder (ffmpeg failed with a ZeroDivisionError of ours at 0x0@0, or with a
# line of its own that named no option at 100000x100000): 8K UHD is 7680x4320; libx264's smallest
# useful frame is a macroblock or so.
MIN_SIDE, MAX_SIDE = 16, 8192
MIN_RATE, MAX_RATE = 10_000, 1_000_000_000
MAX_RUNGS = 32


def _even(x: int) -> int:
    return x + (x % 2)


def table62(max_height: int = 1080) -> list[Rung]:
    return [Rung(*_R[hh], int(round(mb * 1e6))) for hh, mb in TABLE_6_2 if hh <= max_height]


#: The ``hd`` corpus ladder (docs/corpus.md): 8 rungs 0.2-6 Mbit/s, 240p-1080p, resolutions switching where
#: public fixed ladders switch (Apple's HLS authoring ladder, YouTube's recommended rates): 720p from 1 Mbit/s,
#: 1080p for the top two. Minerva's own ladder is not public (claims file: probably 0.375-5.8 Mbit/s).
HD_LADDER = [(240, 0.2), (360, 0.4), (480, 0.65), (720, 1.0), (720, 1.6), (720, 2.5), (1080, 4.0), (1080, 6.0)]


def hd_ladder() -> list[Rung]:
    return [Rung(*_R[hh], int(round(mb * 1e6))) for hh, mb in HD_LADDER]


def corpus_ladder() -> list[Rung]:
    """Q0..Q7 bitrates of Table 6.2, resolution capped at 360p (the corpus' display resolution)."""
    return [Rung(*_R[min(hh, 360)], int(round(mb * 1e6))) for hh, mb in TABLE_6_2[:8]]


def _rate(s: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmM]?)", s)
    if not m:
        raise ValueError(s)
    mult = {"": 1, "k": 1e3, "K": 1e3, "m": 1e6, "M": 1e6}[m.group(2)]
    return int(round(float(m.group(1)) * mult))


def parse(spec: str) -> list[Rung]:
    """Parse a ladder spec: ``table6.2``, ``table6.2:720`` (capped at 720p), ``corpus``, ``hd`` or ``WxH@RATE,...``."""
    spec = spec.strip()
    if spec.startswith("table6.2"):
        cap = 1080
        if ":" in spec:
            try:
                cap = int(spec.split(":", 1)[1].rstrip("p"))
            except ValueError:
                raise InputError(None, "--ladder", "table6.2[:HEIGHT]", repr(spec)) from None
        rungs = table62(cap)
    elif spec == "corpus":
        rungs = corpus_ladder()
    elif spec == "hd":
        rungs = hd_ladder()
    else:
        rungs = []
        for part in spec.split(","):
            m = re.fullmatch(r"\s*(\d{1,9})x(\d{1,9})@(\d{1,12}(?:\.\d{1,9})?[kKmM]?)\s*", part)
            if not m:
                raise InputError(None, "--ladder", "WxH@RATE[,WxH@RATE...] (e.g. 640x360@750k)", repr(part))
            w, h, rate = int(m.group(1)), int(m.group(2)), _rate(m.group(3))
            if not (MIN_SIDE <= w <= MAX_SIDE and MIN_SIDE <= h <= MAX_SIDE):
                raise InputError(None, "--ladder", f"WIDTHxHEIGHT from {MIN_SIDE} to {MAX_SIDE} pixels a side",
                                 repr(part.strip()[:60]))
            if not MIN_RATE <= rate <= MAX_RATE:
                raise InputError(None, "--ladder", f"a RATE from {MIN_RATE // 1000}k to {MAX_RATE // 10**6}M bit/s",
                                 repr(part.strip()[:60]))
            rungs.append(Rung(_even(w), _even(h), rate))
            if len(rungs) > MAX_RUNGS:
                raise InputError(None, "--ladder", f"at most {MAX_RUNGS} rungs", "more")
    if not rungs:
        raise InputError(None, "--ladder", "at least one rung", "none")
    rates = [r.bitrate for r in rungs]
    if any(a >= b for a, b in zip(rates, rates[1:])):
        raise InputError(None, "--ladder", "strictly ascending bitrates", ",".join(map(str, rates)))
    return rungs


def to_spec(rungs: list[Rung]) -> str:
    return ",".join(f"{r.width}x{r.height}@{r.bitrate}" for r in rungs)
