"""MODELLED stand-ins for VOXEL's four films (Big Buck Bunny, Tears of Steel, Elephants Dream, Sintel):
Video JSON files with the VOXEL table, for ``qoelab reproduce voxel``.

These are **not encodes**. The films, their 13-rung B-frame encodes and the per-prefix SSIM decodes
of the dissertation are not available here (and would take hours to make), so every number below
comes from a small, seeded, deterministic model whose constants are listed at the top of this module
and in docs/reproductions/voxel.md ("Content stand-ins"):

* **Ladder**: the 13 rungs of Table 6.2 (``qoelab.video.ladders.LADDERS["voxel"]``), 4-s segments,
  24 fps = 96 frames per segment, 75 segments (300 s).
* **Segment sizes**: a per-segment complexity series ``c[s]`` (mean 1) with each film's pattern
  (§6.4.2: BBB steady variance; ToS a large drop from segment 12 and spikes at 55; ED more and larger
  spikes; Sintel a continuous decline, a very low region, then a sudden steep rise), capped at 2
  ("2x capped VBR"); size[s][r] = bitrate[r] x 4 s / 8 x c[s], so each rung's mean is its bitrate.
* **Frames**: decode order I, then P and B alternating with a B every third frame (frames 2, 5, 8, ...:
  32 B, 63 P); byte shares near I 15% / P 65% / B 20% (seeded per-frame lognormal jitter).
* **Bytes of a segment**: a container box (``CONTAINER_BYTES``), then the frames in decode order.
  Reliable = the container box + the I-frame + the first 15 bytes (``HEADER_BYTES``) of every other
  frame; unreliable = the other frames' payloads in importance order: P frames first, earlier before
  later (a P frame is referenced by every later frame of the GOP), then the (unreferenced) B frames,
  earlier before later; the tail is dropped first.
* **SSIM** (against Q12, so a pristine Q12 segment scores 1.0, §0): pristine
  ``1 - A x ln(b12/b_r)^P x c[s]^C_EXP x film_gain x jitter``; a prefix of k unreliable ranges
  loses (i) ``B_COST x m[s] / 96`` per dropped B frame (repeat of its neighbour) and (ii) for the
  frames after the last kept P frame, which freeze on it, ``D_MAX x (1 - exp(-t x m[s] / TAU)) / 96``
  for the frame t frames after the freeze (at least the B cost); m[s] = the segment's motion
  (film motion x c[s]^M_EXP x jitter) makes the drop tolerance content-dependent. Levels: one
  ``ssims`` entry per distinct 3-decimal value from k = 0 (I-frame and headers only; "poor",
  ~0.5-0.85; ``levels="all"``) or, by default, from the pristine SSIM of the rung below (Q0: 0.5) as
  the thesis's §1.4 (:func:`qoelab.content.voxel.ssim_levels`) to the pristine value.

``generate(film)`` returns the Video dict (validated by :func:`qoelab.video.model.validate_video`);
``write_all(dir)`` writes the four as ``voxel-standin-<film>.json``. All four take well under 10 s.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np

from qoelab.content.voxel import HEADER_BYTES, ssim_levels
from qoelab.video.ladders import LADDERS
from qoelab.video.model import layout_from_sizes, make_video, validate_video

#: Label written into every stand-in (name and report): these are modelled, not encoded.
LABEL = "MODELLED stand-in (not an encode)"
FILMS = ("bbb", "tos", "ed", "sintel")
FILM_NAME = {"bbb": "Big Buck Bunny", "tos": "Tears of Steel", "ed": "Elephants Dream", "sintel": "Sintel"}
#: The films' std. dev. of the segment bitrate at Q12 (Mbit/s, Table 6.1): the target of the series.
FILM_SD_MBPS = {"bbb": 3.77, "tos": 3.52, "ed": 5.6, "sintel": 7.5}
#: Film-level motion (drop tolerance: higher = fewer droppable frames) and distortion gains.
FILM_MOTION = {"bbb": 0.8, "tos": 1.0, "ed": 1.3, "sintel": 1.1}
FILM_DIST_GAIN = {"bbb": 0.9, "tos": 1.0, "ed": 1.15, "sintel": 1.05}
SEEDS = {"bbb": 11, "tos": 12, "ed": 13, "sintel": 14}

SEGMENTS = 75
SEG_S = 4
FPS = 24
FRAMES = SEG_S * FPS                     # 96
CAP = 2.0                                # 2x capped VBR: peak segment <= 2 x the rung's average
FLOOR = 0.08                             # lowest complexity (a near-black segment still costs bytes)
INIT_BYTES = 1000                        # init segment at the start of each rung's file
CONTAINER_BYTES = 800                    # moof/mdat boxes at the start of each segment (reliable)
SHARE_I, SHARE_B = 0.15, 0.20            # target byte shares of the frames; P gets the rest (0.65)
FRAME_JITTER = 0.35                      # sd of the per-frame lognormal size jitter
# SSIM model (module docstring)
A, P_EXP, C_EXP = 0.0264, 1.585, 0.5     # pristine distortion: Q9 ~0.98, Q0 ~0.75, Q11 ~0.996 at c = 1
DIST_JITTER = 0.10
B_COST = 0.03                            # frame-level SSIM loss of a repeated (dropped) B frame at m = 1
D_MAX = 0.38                             # frame-level SSIM loss of a frame long after a freeze (relative)
TAU = 24.0                               # frames until a freeze costs 63% of D_MAX at m = 1
M_EXP = 0.7                              # motion ~ complexity^M_EXP
M_JITTER = 0.25
POOR = 0.5                               # Table 5.1's "poor" boundary: Q0's lowest level


def frame_types() -> np.ndarray:
    """Decode-order frame types of a segment: 0 = I (frame 0), 1 = P, 2 = B (every third frame,
    frames 2, 5, 8, ...)."""
    t = np.ones(FRAMES, dtype=np.int8)
    t[0] = 0
    t[2::3] = 2
    return t


def importance_order() -> list[int]:
    """Droppable frames (1..95), most important first: P frames in decode order, then B frames in
    decode order (the tail, the last B frame, is dropped first)."""
    t = frame_types()
    return [i for i in range(1, FRAMES) if t[i] == 1] + [i for i in range(1, FRAMES) if t[i] == 2]


def _normalise(c: np.ndarray) -> np.ndarray:
    for _ in range(50):
        c = np.clip(c / c.mean(), FLOOR, CAP)
    return c / c.mean()


def complexity(film: str, n: int = SEGMENTS) -> np.ndarray:
    """The film's per-segment complexity series (mean 1, within [FLOOR, CAP] up to the final
    renormalisation), its std. dev. scaled towards Table 6.1's value / 10 Mbit/s."""
    rng = np.random.default_rng(SEEDS[film])
    s = np.arange(n, dtype=float)
    ar = np.zeros(n)
    e = rng.normal(0, 1, n)
    for i in range(n):
        ar[i] = (0.6 * ar[i - 1] if i else 0.0) + e[i]
    ar /= ar.std() or 1.0
    if film == "bbb":                    # steady variance around a constant level
        c = 1.0 + 0.4 * ar
    elif film == "tos":                  # high first act, a large drop from segment 12, spikes at 55
        c = np.where(s < 12, 1.6, 0.8) + 0.18 * ar
        c[55:58] = [2.0, 1.8, 1.6]
    elif film == "ed":                   # more and larger spikes over a calmer base
        c = 0.75 + 0.15 * ar
        for k in sorted(rng.choice(np.arange(3, n - 3), size=10, replace=False)):
            c[k] += rng.uniform(0.9, 1.5)
            c[k + 1] += rng.uniform(0.2, 0.6)
    elif film == "sintel":               # continuous decline, a very low region, then a steep rise
        c = np.where(s < 40, 1.5 - 1.1 * s / 40, 0.0)
        c[40:50] = 0.1
        c[50:] = 1.9
        c = c + 0.08 * ar
    else:
        raise ValueError(f"film: expected one of {', '.join(FILMS)}, found {film!r}")
    c = _normalise(c)
    target = FILM_SD_MBPS[film] / 10.0
    for _ in range(20):                  # stretch or shrink around 1 towards the target sd (keeps the shape)
        sd = c.std()
        if abs(sd - target) < 0.01 or sd == 0:
            break
        c = _normalise(1.0 + (c - 1.0) * target / sd)
    return c


def _frame_bytes(rng, seg_bytes: np.ndarray) -> np.ndarray:
    """[segment, rung, frame] byte counts: the segment's bytes minus the container, split by type
    shares with per-frame jitter (the same jitter pattern on every rung of a segment)."""
    t = frame_types()
    nseg = seg_bytes.shape[0]
    jit = rng.lognormal(0.0, FRAME_JITTER, (nseg, FRAMES))
    ishare = SHARE_I * rng.lognormal(0.0, 0.15, nseg)
    bshare = SHARE_B * rng.lognormal(0.0, 0.10, nseg)
    w = np.empty((nseg, FRAMES))
    for kind, share in ((0, ishare), (1, 1.0 - ishare - bshare), (2, bshare)):
        m = t == kind
        w[:, m] = jit[:, m] / jit[:, m].sum(axis=1, keepdims=True) * share[:, None]
    payload = seg_bytes - CONTAINER_BYTES                                   # [seg, rung]
    fb = np.floor(w[:, None, :] * payload[:, :, None]).astype(np.int64)     # [seg, rung, frame]
    fb = np.maximum(fb, HEADER_BYTES + 1)
    fb[:, :, 0] += payload - fb.sum(axis=2)                                 # rounding rest to the I-frame
    return fb


def _deficits(m: np.ndarray) -> np.ndarray:
    """[segment, k] segment-SSIM loss with the first k unreliable ranges (k = 0..95) for motion m[s]."""
    t = frame_types()
    order = importance_order()
    nseg = len(m)
    out = np.zeros((nseg, len(order) + 1))
    pos = np.arange(FRAMES)
    b_cost = np.minimum(B_COST * m, D_MAX)                                  # [seg]
    last_p_all = int(pos[t == 1].max())
    for k in range(len(order) + 1):
        kept = np.zeros(FRAMES, dtype=bool)
        kept[0] = True
        kept[order[:k]] = True
        last_p = int(pos[kept & (t != 2)].max())
        if last_p == last_p_all:          # every P frame kept: only dropped B frames (repeated neighbours)
            out[:, k] = int(((t == 2) & ~kept).sum()) * b_cost / FRAMES
            continue
        # (P frames are kept before any B frame, so every B frame is dropped here.) B frames before the
        # freeze repeat their neighbour; every frame after the last kept P freezes on it.
        nb = int(((t == 2) & ~kept & (pos < last_p)).sum())
        dist = pos[pos > last_p] - last_p
        f = D_MAX * (1.0 - np.exp(-np.outer(m, dist) / TAU))
        frozen = np.maximum(f, b_cost[:, None]).sum(axis=1)
        out[:, k] = (nb * b_cost + frozen) / FRAMES
    return out


def _model(film: str):
    """(rates, segment bytes [seg, rung], frame bytes [seg, rung, frame], pristine SSIM [seg, rung],
    motion [seg], SSIM loss D(k) [seg, k]) of a film: every random draw, in a fixed order."""
    lad = LADDERS["voxel"]
    rates = np.array(lad.bitrates_kbps, dtype=float) * 1000.0
    rng = np.random.default_rng(SEEDS[film] + 1000)
    c = complexity(film)
    seg_bytes = np.rint(np.outer(c, rates) * SEG_S / 8.0).astype(np.int64)   # [seg, rung]
    fb = _frame_bytes(rng, seg_bytes)
    x = np.log(rates[-1] / rates)                                             # 0 at Q12
    dist = A * x[None, :] ** P_EXP * (c[:, None] ** C_EXP) * FILM_DIST_GAIN[film] \
        * rng.lognormal(0.0, DIST_JITTER, (SEGMENTS, 1))
    pristine = np.clip(1.0 - dist, 0.0, 1.0)
    pristine[:, -1] = 1.0
    motion = FILM_MOTION[film] * c ** M_EXP * rng.lognormal(0.0, M_JITTER, SEGMENTS)
    return rates, seg_bytes, fb, pristine, motion, _deficits(motion)


def generate(film: str, validate: bool = True, levels: str = "bound") -> dict:
    """The stand-in Video dict of ``film`` (bbb, tos, ed, sintel), with its VOXEL table (checked by
    :func:`validate_video` unless ``validate`` is false: the check takes most of the time).
    ``levels``: ``"bound"`` (default, the thesis's §1.4) lists the SSIM levels from the pristine SSIM
    of the rung below (Q0: from 0.5, "poor"), so no partial level is worse than the next rung down;
    ``"all"`` lists every level down to the I-frame alone (k = 0)."""
    if film not in FILMS:
        raise ValueError(f"film: expected one of {', '.join(FILMS)}, found {film!r}")
    lad = LADDERS["voxel"]
    rates, seg_bytes, fb, pristine, motion, defs = _model(film)
    nr = len(rates)
    order = importance_order()
    sizes = seg_bytes.tolist()
    offs = layout_from_sizes(sizes, [INIT_BYTES] * nr)
    offs_a = np.array(offs, dtype=np.int64)                                   # [seg, rung]
    fstart = offs_a[:, :, None] + CONTAINER_BYTES + np.concatenate(
        (np.zeros((SEGMENTS, nr, 1), dtype=np.int64), np.cumsum(fb, axis=2)[:, :, :-1]), axis=2)
    # reliable: [container + I frame + header of frame 1], then the header of every other frame
    rel = np.stack((fstart, fstart + HEADER_BYTES - 1), axis=3)               # [seg, rung, frame, 2]
    rel = rel[:, :, 1:, :].copy()
    rel[:, :, 0, 0] = offs_a
    pay = np.stack((fstart + HEADER_BYTES, fstart + fb - 1), axis=3)[:, :, order, :]
    plen = pay[:, :, :, 1] - pay[:, :, :, 0] + 1
    nbytes = np.concatenate((np.zeros((SEGMENTS, nr, 1), dtype=np.int64), np.cumsum(plen, axis=2)), axis=2)
    qs = np.maximum(0.0, pristine[:, :, None] * (1.0 - defs[:, None, :]))     # [seg, rung, k]
    rel_l, pay_l, nb_l, qs_l = rel.tolist(), pay.tolist(), nbytes.tolist(), qs.tolist()
    if levels == "bound":         # §1.4: from the pristine SSIM of the rung below (Q0: 0.5, "poor")
        bound = np.concatenate((np.full((SEGMENTS, 1), POOR), pristine[:, :-1]), axis=1)
    elif levels == "all":         # every level down to the I-frame alone
        bound = np.zeros((SEGMENTS, nr))
    else:
        raise ValueError(f"levels: expected 'bound' or 'all', found {levels!r}")
    vox_rows = []
    ks = range(len(order) + 1)
    for s in range(SEGMENTS):
        row = []
        for r in range(nr):
            lv = ssim_levels(list(zip(ks, nb_l[s][r], qs_l[s][r])), float(bound[s, r]))
            row.append({"reliable": rel_l[s][r], "unreliable": pay_l[s][r],
                        "ssims": [[float(a), int(k), int(n)] for a, k, n in lv]})
        vox_rows.append(row)
    res = [list(lad.resolutions[i]) for i in range(nr)] if lad.resolutions else None
    v = make_video(f"voxel-standin-{film}", SEG_S * 10**9, [int(b) for b in rates], sizes,
                   quality={"ssim": np.round(pristine, 4).tolist()}, resolutions=res, byte_offsets=offs)
    v["voxel"] = {"avg_ssim": [round(float(a), 4) for a in pristine.mean(axis=0)], "segments": vox_rows}
    return validate_video(v) if validate else v


def byte_shares(film: str) -> dict:
    """I/P/B byte shares of the stand-in's frames (over all segments and rungs; container boxes
    excluded) and the reliable share of the segment bytes."""
    _, seg_bytes, fb, _, _, _ = _model(film)
    t = frame_types()
    tot = fb.sum()
    rel = seg_bytes.sum() - (fb[:, :, 1:] - HEADER_BYTES).sum()
    return {"I": float(fb[:, :, t == 0].sum() / tot), "P": float(fb[:, :, t == 1].sum() / tot),
            "B": float(fb[:, :, t == 2].sum() / tot), "reliable": float(rel / seg_bytes.sum()),
            "frames_P": int((t == 1).sum()), "frames_B": int((t == 2).sum())}


def content_stats(video: dict) -> dict:
    """Summary numbers of a stand-in for the report: sd of the Q12 segment bitrate (Mbit/s), mean
    pristine SSIM per rung, SSIM of the I-frame-only level at Q12 (median), median droppable share of
    the Q12 bytes at SSIM >= 0.99 and share of Q9 segments with pristine SSIM < 0.99."""
    sizes = np.array(video["sizes"], dtype=float)
    top = sizes[:, -1] * 8 / (video["segment_duration"] / 1e9) / 1e6
    segs = video["voxel"]["segments"]
    n = len(segs)
    film = video["name"].rsplit("-", 1)[-1]
    i_only, drop99 = [], []
    if film in FILMS:                     # from the model's whole prefix curve at Q12
        _, seg_bytes, fb, pristine, _, defs = _model(film)
        order = importance_order()
        i_only = list(pristine[:n, -1] * (1.0 - defs[:n, 0]))
        for s in range(n):
            q = np.round(pristine[s, -1] * (1.0 - defs[s]), 3)
            k = int(np.argmax(q >= 0.99)) if (q >= 0.99).any() else len(order)
            drop99.append(float(sum(fb[s, -1, i] - HEADER_BYTES for i in order[k:]) / seg_bytes[s, -1]))
    q = np.array(video["quality"]["ssim"])
    return {"sd_q12_mbps": float(top.std()), "mean_q12_mbps": float(top.mean()),
            "avg_ssim": video["voxel"]["avg_ssim"], "i_only_ssim_median": float(np.median(i_only)) if i_only else float("nan"),
            "drop_at_099_median": float(np.median(drop99)) if drop99 else float("nan"), "q9_below_099": float((q[:, 9] < 0.99).mean())}


def truncate(video: dict, n: int) -> dict:
    """The first ``n`` segments of a stand-in (sizes, quality, layout and VOXEL table cut together;
    the core's ``video_duration`` does not cut the VOXEL table)."""
    v = dict(video)
    v["sizes"] = video["sizes"][:n]
    v["quality"] = {k: t[:n] for k, t in video["quality"].items()}
    v["byte_offsets"] = video["byte_offsets"][:n]
    v["voxel"] = {**video["voxel"], "segments": video["voxel"]["segments"][:n]}
    return v


def write_all(out_dir: str, films=FILMS, validate: bool = False, segments: int = SEGMENTS) -> dict:
    """Write ``voxel-standin-<film>.json`` (the first ``segments`` segments) for every film into
    ``out_dir``; returns {film: path}."""
    os.makedirs(out_dir, exist_ok=True)
    out = {}
    for f in films:
        p = os.path.join(out_dir, f"voxel-standin-{f}.json")
        v = generate(f, validate=validate)
        if segments < SEGMENTS:
            v = truncate(v, segments)
        tmp = p + ".tmp"
        with open(tmp, "w") as fh:
            fh.write(json.dumps(v, separators=(",", ":")))
        os.replace(tmp, p)
        out[f] = p
    return out


__all__ = ["LABEL", "FILMS", "FILM_NAME", "generate", "write_all", "byte_shares", "content_stats", "complexity",
           "frame_types", "importance_order", "truncate", "math"]
