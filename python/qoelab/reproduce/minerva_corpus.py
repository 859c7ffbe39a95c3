"""The video corpus of ``qoelab reproduce minerva``: 8 synthetic videos with VMAF and PSNR tables.

Minerva's 19 4K videos and their VMAF tables are private (claims file §4). qoelab's 12-clip corpus is
360p with flat curves (9 of 12 clips at VMAF 95-100 from 0.56 Mbit/s). This reproduction therefore
builds its own videos, as Video JSON dicts (synthetic ladders carry no quality table): a synthetic
VBR segment layout on the ladder ``LADDER_KBPS`` (the public Minerva code's 0.375-5.8 Mbit/s ladder x
0.405, the factor that maps Minerva's ladder on qoelab's 0.16-2.35 Mbit/s corpus ladder, claims
file §4 item 2) and a VMAF table per segment (constant across segments) from a curve of the
*unscaled* rate r' = r / 0.405 in Mbit/s:

* ``A`` and ``B``: the two VMAF curves hard-coded in the public Minerva server code (claims file
  §1.3), linear between their points;
* ``V3``-``V8``: ``P(r') = 100 - b exp(-c r')`` with a spread of steepness (from steep and low to
  flat and high).

PSNR (the second provider of §8.7, M17/M18): ``PSNR = 20 + 30 sqrt(VMAF / 100)`` (20-50 dB,
flatter at high quality than VMAF, not a linear transform, so its own normalization differs).

The corpus-wide normalization: :func:`normalization_files` (``qoelab.minerva.normalization`` over the
8 videos, uniform popularity, one table per metric, §5.4).

``--corpus hd`` (mode ``"hd"``): the 16 clips of qoelab's ``hd`` corpus (docs/corpus.md: generated
genres, 1080p display, ladder 0.2-6 Mbit/s, measured per-segment VMAF and PSNR), each 60-s clip tiled to
the run length; the ladder sits at Minerva's own rates, so the scale is 1 (the paper's link rates), and
``A``/``B`` (App. B, §8.6) are the public code's curves on that ladder, unscaled.
"""

from __future__ import annotations

import json
import math
import os

SCALE = 0.405
LADDER_KBPS = (150, 300, 430, 710, 950, 1240, 1740, 2350)
SEG_S = 4
_A = ([0.375, 1.05, 1.75, 2.35, 3.05, 4.3, 5.8, 7.5], [14.21, 37.89, 49.42, 59.34, 66.39, 77.02, 85.14, 91.19])
_B = ([0.375, 0.75, 1.05, 1.75, 3.05, 4.3], [52.15, 69.56, 78.46, 84.85, 92.72, 97.23])
#: (b, c) of P(r') = 100 - b exp(-c r')
_EXP = {"V3": (95, 0.25), "V4": (95, 0.4), "V5": (90, 0.6), "V6": (85, 0.9), "V7": (80, 1.3), "V8": (70, 1.8)}
VIDEOS = ("A", "B", "V3", "V4", "V5", "V6", "V7", "V8")


def interp(x, xs, ys) -> float:
    """Linear interpolation, clamped at both ends."""
    if x <= xs[0]:
        return float(ys[0])
    for i in range(1, len(xs)):
        if x <= xs[i]:
            t = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
            return float(ys[i - 1] + t * (ys[i] - ys[i - 1]))
    return float(ys[-1])


MODES = ("synthetic", "hd")
#: the clip of the one-video experiments (§8.3 pooling, Fig. 2 join) per mode: a middle curve
SINGLE = {"synthetic": "V5", "hd": "cooking"}


def check_mode(mode: str) -> str:
    if mode not in MODES:
        from qoelab.errors import InputError
        raise InputError(None, "--corpus", "synthetic or hd", repr(mode))
    return mode


def scale(mode: str = "synthetic") -> float:
    """Factor from the paper's link rates to this mode's (the ladder's position relative to Minerva's)."""
    return SCALE if check_mode(mode) == "synthetic" else 1.0


def ladder_kbps(mode: str = "synthetic") -> tuple:
    if check_mode(mode) == "synthetic":
        return LADDER_KBPS
    from qoelab.content.ladder import HD_LADDER
    return tuple(int(round(mb * 1000)) for _, mb in HD_LADDER)


def pool(mode: str = "synthetic") -> tuple:
    """The videos the experiments draw from."""
    if check_mode(mode) == "synthetic":
        return VIDEOS
    from qoelab.content.corpus import HD_CLIPS
    return tuple(HD_CLIPS)


def vmaf_curve(name: str, mode: str = "synthetic") -> list[float]:
    """VMAF of the synthetic curve ``name`` at each rung of the mode's ladder."""
    out = []
    for k in ladder_kbps(mode):
        r = k / 1000.0 / scale(mode)
        if name == "A":
            v = interp(r, *_A)
        elif name == "B":
            v = interp(r, *_B)
        else:
            b, c = _EXP[name]
            v = 100.0 - b * math.exp(-c * r)
        out.append(round(v, 2))
    return out


def psnr_of(vmaf: float) -> float:
    return round(20.0 + 30.0 * math.sqrt(max(vmaf, 0.0) / 100.0), 2)


def tile(v: dict, n_segments: int) -> dict:
    """``v`` looped (or cut) to ``n_segments`` segments (sizes and quality tables; no byte layout)."""
    n = len(v["sizes"])
    out = {k: x for k, x in v.items() if k not in ("byte_offsets",)}
    out["sizes"] = [list(v["sizes"][i % n]) for i in range(n_segments)]
    out["quality"] = {m: [list(t[i % n]) for i in range(n_segments)] for m, t in v.get("quality", {}).items()}
    out["last_segment_duration"] = None
    return out


def make_video(name: str, n_segments: int, seed: int = 1, mode: str = "synthetic") -> dict:
    if check_mode(mode) == "hd" and name not in _EXP and name not in ("A", "B"):
        from qoelab.content import corpus as cc
        v = cc.load_video(os.path.join(cc.corpus_dir("hd"), f"{name}.json"))
        return tile({**v, "quality": {m: v["quality"][m] for m in ("vmaf", "psnr")}}, n_segments)
    from qoelab.video import synthetic_video
    v = synthetic_video(list(ladder_kbps(mode)), n_segments=n_segments, segment_duration=SEG_S, seed=seed, name=name)
    q = vmaf_curve(name, mode)
    v["quality"] = {"vmaf": [list(q) for _ in range(n_segments)],
                    "psnr": [[psnr_of(x) for x in q] for _ in range(n_segments)]}
    return v


def normalization_files(dirpath: str, alpha: float, n_segments: int = 75, metrics=("vmaf", "psnr"),
                        mode: str = "synthetic") -> dict:
    """The corpus-wide normalization (§5.4) of the 8 videos with uniform popularity, one per metric, from
    :func:`qoelab.minerva.normalization` (the horizontal average of the chunk-averaged curves, over
    ``alpha``), written as ``qoelab.normalization`` JSON to ``dirpath/norm-<metric>.json``.
    Returns {metric: path}."""
    from qoelab import minerva as mnv
    os.makedirs(dirpath, exist_ok=True)
    videos = [make_video(name, n_segments, mode=mode) for name in pool(mode)]
    out = {}
    for m in metrics:
        d = mnv.normalization(videos, popularity=None, alpha=alpha, metric=m)
        p = os.path.join(dirpath, f"norm-{m}.json")
        _write_atomic(p, d)
        out[m] = p
    return out


def _write_atomic(path: str, obj) -> None:
    """Write JSON through a temporary file and rename (worker processes may read the same path while
    another process rewrites it; the content is deterministic, so either version is the same)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.replace(tmp, path)


def prepare(dirpath: str, n_segments: int = 75, vf: bool = True, mode: str = "synthetic") -> dict:
    """Write the videos of the mode's pool plus ``A`` and ``B`` (and their value functions, MPC h = 5,
    60 s player buffer) to ``dirpath``. Returns {name: {"video": path, "vf": path}}."""
    from qoelab import minerva as mnv
    os.makedirs(dirpath, exist_ok=True)
    out = {}
    rmax = 4e6 if mode == "synthetic" else 8e6   # the value-function grid's top rate, above the ladder
    for name in dict.fromkeys(pool(mode) + ("A", "B")):
        v = make_video(name, n_segments, mode=mode)
        p = os.path.join(dirpath, f"{name}.json")
        _write_atomic(p, v)
        ent = {"video": p}
        if vf:
            vfp = os.path.join(dirpath, f"{name}.vf.json")
            d = mnv.value_function(v, metric="vmaf", horizon=5, rate_max_bps=rmax, rate_step_bps=1e5,
                                   buffer_max_s=40.0, buffer_step_s=1.0, player_buffer_s=60.0)
            _write_atomic(vfp, d)
            ent["vf"] = vfp
        out[name] = ent
    return out
