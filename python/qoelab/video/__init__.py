"""Video descriptions: loaders (Sabre JSON, Pensieve sizes, DASH MPD, HLS), built-in ladders and the
seeded synthetic VBR generator. Every loader returns the normalized ``Video`` dict of the core."""

from qoelab.video.ladders import LADDERS, Ladder, get_ladder
from qoelab.video.loaders import (
    PENSIEVE_BITRATES_KBPS,
    layout_from_sizes,
    load_pensieve_sizes,
    load_sabre_movie,
    load_video,
    make_video,
    save_sabre_movie,
    validate_video,
)
from qoelab.video.synthetic import synthetic_video


def load_mpd(*args, **kwargs):
    from qoelab.video.mpd import load_mpd as _f
    return _f(*args, **kwargs)


def load_hls(*args, **kwargs):
    from qoelab.video.hls import load_hls as _f
    return _f(*args, **kwargs)


__all__ = [
    "LADDERS", "Ladder", "get_ladder", "PENSIEVE_BITRATES_KBPS", "load_pensieve_sizes", "load_sabre_movie",
    "load_video", "make_video", "save_sabre_movie", "validate_video", "layout_from_sizes", "synthetic_video",
    "load_mpd", "load_hls",
]
