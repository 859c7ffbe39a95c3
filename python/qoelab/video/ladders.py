"""Built-in bitrate ladders (origins in docs/formats.md).

Each ladder: nominal bitrates (kbit/s, ascending), segment duration (s), optional resolutions,
and where the values come from.
"""

from __future__ import annotations

from dataclasses import dataclass

from qoelab.errors import InputError

__all__ = ["Ladder", "LADDERS", "get_ladder"]


@dataclass(frozen=True)
class Ladder:
    name: str
    bitrates_kbps: tuple[float, ...]
    segment_duration_s: float
    resolutions: tuple[tuple[int, int], ...] | None
    origin: str

    @property
    def bitrates_bps(self) -> list[int]:
        return [round(b * 1000) for b in self.bitrates_kbps]


def _res(*groups):
    out = []
    for (w, h), n in groups:
        out += [(w, h)] * n
    return tuple(out)


LADDERS: dict[str, Ladder] = {
    "has-testbed": Ladder(
        "has-testbed", (350, 470, 630, 845, 1130, 1520, 2040, 2750), 2.0, None,
        "HLS-BBA testbed (Livi et al.), Big Buck Bunny 'bbb8': 8 rates, 2 s segments "
        "(reference/seed-systems.md 3.2)"),
    "chunklets": Ladder(
        "chunklets",
        (46, 89, 131, 178, 222, 263, 334, 396, 533, 595, 800, 1000, 1200, 1500, 2100, 2500, 3100, 3500, 3800, 4200),
        2.0,
        _res(((320, 240), 3), ((480, 360), 5), ((854, 480), 2), ((1280, 720), 4), ((1920, 1080), 6)),
        "Chunklets (Kua et al.), Table I: ITEC-DASH Big Buck Bunny 2-s dataset, 20 representation rates"),
    "sprint": Ladder(
        "sprint",
        (250, 355, 505, 710, 1010, 1519, 2200, 3200, 4600, 6700, 9700, 14000, 20000),
        4.0, None,
        "Sprint (Arye, Sen, Freedman) reproduction, reference/claims/sprint.md 2.5 and pitfall P7: the paper gives "
        "no ladder; 4 s segments [V], a dense ladder (rung ratio 1.41-1.50) through the Fig. 10 medians "
        "1010 and 1519 kbit/s, from 250 kbit/s to 20 Mbit/s (above the 12.5 Mbit/s fair share of every cell)"),
    "voxel": Ladder(
        "voxel",
        (160, 230, 370, 560, 750, 1050, 1750, 2350, 3000, 4300, 5800, 7400, 10000),
        4.0,
        _res(((256, 144), 1), ((426, 240), 2), ((640, 360), 2), ((854, 480), 2), ((1280, 720), 2),
             ((1920, 1080), 2), ((2560, 1440), 1), ((3840, 2160), 1)),
        "Palmer dissertation (Socket Intents / VOXEL), Table 6.2: 13 quality levels Q0-Q12, 4 s segments; "
        "widths are the 16:9 widths of the listed heights"),
    "pensieve": Ladder(
        "pensieve", (300, 750, 1200, 1850, 2850, 4300), 4.0, None,
        "Pensieve VIDEO_BIT_RATE (EnvivioDash3), 4 s chunks (reference/abr-anchors.md 2.1)"),
    "sabre-bbb": Ladder(
        "sabre-bbb", (230, 331, 477, 688, 991, 1427, 2056, 2962, 5027, 6000), 3.0, None,
        "Sabre example movie (Big Buck Bunny, example/movie.json / mmsys18/bbb.json): bitrates_kbps, 3 s"),
}


def get_ladder(ladder) -> Ladder:
    """A built-in ladder by name, a :class:`Ladder`, or a list of kbit/s (segment duration 2 s)."""
    if isinstance(ladder, Ladder):
        return ladder
    if isinstance(ladder, str):
        if ladder not in LADDERS:
            raise InputError(None, "ladder", "one of " + ", ".join(LADDERS), repr(ladder))
        return LADDERS[ladder]
    try:
        rates = tuple(float(b) for b in ladder)
    except (TypeError, ValueError):
        raise InputError(None, "ladder", "a ladder name or a list of kbit/s", repr(ladder)) from None
    if not rates or any(b <= 0 for b in rates) or any(b >= c for b, c in zip(rates, rates[1:])):
        raise InputError(None, "ladder", "strictly ascending kbit/s > 0", repr(list(ladder)))
    return Ladder("custom", rates, 2.0, None, "user-given")
