"""Seeded synthetic VBR video (model ``ar1-lognormal``, version 1).

Model (documented in docs/formats.md):

* A per-segment *complexity* ``c_t`` shared by all rungs: a stationary Gaussian AR(1) process
  ``x_0 = e_0``, ``x_t = rho * x_{t-1} + sqrt(1 - rho^2) * e_t`` (``e_t`` i.i.d. N(0,1)), mapped to a
  lognormal with mean 1 and coefficient of variation ``cv``: ``c_t = exp(s x_t - s^2/2)``,
  ``s^2 = ln(1 + cv^2)``. ``rho`` is the segment-to-segment correlation of log-complexity (scenes).
* A small independent per-(segment, rung) encoder noise ``eta_{t,r}``, lognormal with mean 1 and
  coefficient of variation ``rung_cv``.
* ``factor_{t,r} = c_t * eta_{t,r}``; with ``normalize=True`` (default) each rung's factors are
  divided by their mean over the video, i.e. the encoder hits its target average bitrate over
  the whole video exactly, as 2-pass VBR does. Then
  ``size_{t,r} = max(1, round(bitrate_r * duration / 8 * factor_{t,r}))`` bytes. Finally each
  segment's sizes are sorted ascending across rungs (a higher rung is never smaller; with close
  rungs such as Chunklets' the noise could otherwise invert a pair -- this moves per-rung means by
  far less than 1 %).

Byte layout: one file per rung, an init segment of :data:`INIT_BYTES` (800) bytes -- about the
size of the corpus clips' fMP4 init segments (794-795 bytes) -- then the segments back to back:
``byte_offsets[t][r] = INIT_BYTES + sum(size_{0..t-1,r})`` (``layout_from_sizes``). It is a function
of the sizes only, so it does not touch the random stream.

Random numbers: only the raw 64-bit output of numpy's ``PCG64`` bit generator seeded with
``PCG64(seed)`` is used (its stream is fixed by NumPy's compatibility policy; the ``Generator``
distribution methods are not, so they are avoided). Uniforms ``u = ((raw >> 11) + 0.5) / 2^53``,
normals by Box-Muller (pairs ``sqrt(-2 ln u1) * (cos, sin)(2 pi u2)``). Draw order: ``n`` normals for
``e_t``, then ``n * R`` normals for ``eta`` in segment-major order. Changing any of this bumps
:data:`MODEL_VERSION`.
"""

from __future__ import annotations

import math

import numpy as np

from qoelab.errors import InputError
from qoelab.video.ladders import get_ladder
from qoelab.video.model import NS_PER_S, layout_from_sizes, make_video, validate_video

__all__ = ["MODEL", "MODEL_VERSION", "DEFAULT_VBR", "INIT_BYTES", "synthetic_video"]

MODEL = "ar1-lognormal"
MODEL_VERSION = 1
DEFAULT_VBR = {"cv": 0.3, "rho": 0.6, "rung_cv": 0.02, "normalize": True}
#: Bytes of the init segment at the start of every rung's file (the byte layout's first offset).
INIT_BYTES = 800


def _normals(seed: int, n: int) -> np.ndarray:
    bg = np.random.PCG64(seed)
    m = n + (n & 1)
    raw = bg.random_raw(m)
    u = ((raw >> np.uint64(11)).astype(np.float64) + 0.5) * (1.0 / 9007199254740992.0)
    u1, u2 = u[0::2], u[1::2]
    r = np.sqrt(-2.0 * np.log(u1))
    z = np.empty(m)
    z[0::2] = r * np.cos(2.0 * math.pi * u2)
    z[1::2] = r * np.sin(2.0 * math.pi * u2)
    return z[:n]


def _duration_ns(value, default_s: float) -> int:
    if value is None:
        return round(default_s * NS_PER_S)
    if isinstance(value, str):
        import re
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ms|s)\s*", value)
        if not m:
            raise InputError(None, "segment_duration", "a duration like '2s' or '2000ms'", repr(value))
        v = float(m.group(1)) * (1e6 if m.group(2) == "ms" else 1e9)
        ns = round(v)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        ns = round(value * NS_PER_S)
    else:
        raise InputError(None, "segment_duration", "seconds (a number) or '2s'", repr(value))
    if ns <= 0 or ns > 3600 * NS_PER_S:
        raise InputError(None, "segment_duration", "a duration in (0, 3600] s", repr(value))
    return ns


def synthetic_video(ladder="has-testbed", n_segments: int = 300, segment_duration=None, seed: int = 0,
                    vbr=None, name: str | None = None) -> dict:
    """A synthetic VBR Video dict, laid out in one file per rung (see the module doc).

    ``ladder``: a built-in name (see :data:`qoelab.video.ladders.LADDERS`), a Ladder, or a list of
    kbit/s. ``segment_duration``: seconds (number) or a string ``"2s"``/``"2000ms"``; None = the
    ladder's. ``seed``: non-negative int. ``vbr``: None = :data:`DEFAULT_VBR`; a dict overriding
    some of ``cv``, ``rho``, ``rung_cv``, ``normalize``; or False for CBR (every segment exactly
    nominal bitrate x duration).
    """
    lad = get_ladder(ladder)
    if not isinstance(n_segments, int) or isinstance(n_segments, bool) or n_segments < 1:
        raise InputError(None, "n_segments", "an integer >= 1", repr(n_segments))
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise InputError(None, "seed", "an integer >= 0", repr(seed))
    dur = _duration_ns(segment_duration, lad.segment_duration_s)
    rates = lad.bitrates_bps
    nominal = np.array([b * dur / 8e9 for b in rates])
    R = len(rates)
    if vbr is False:
        factors = np.ones((n_segments, R))
    else:
        p = dict(DEFAULT_VBR)
        if vbr is not None and vbr is not True:
            if not isinstance(vbr, dict):
                raise InputError(None, "vbr", "None, False or a dict of cv, rho, rung_cv, normalize", repr(vbr))
            for k in vbr:
                if k not in DEFAULT_VBR:
                    raise InputError(None, f"vbr.{k}", "one of " + ", ".join(DEFAULT_VBR), repr(k))
            p.update(vbr)
        cv, rho, rcv = p["cv"], p["rho"], p["rung_cv"]
        for k, v, lo, hi in (("cv", cv, 0.0, 10.0), ("rho", rho, 0.0, 0.999999), ("rung_cv", rcv, 0.0, 10.0)):
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not lo <= v <= hi:
                raise InputError(None, f"vbr.{k}", f"a number in [{lo}, {hi}]", repr(v))
        z = _normals(seed, n_segments * (1 + R))
        e, eta_z = z[:n_segments], z[n_segments:].reshape(n_segments, R)
        x = np.empty(n_segments)
        x[0] = e[0]
        a = math.sqrt(1.0 - rho * rho)
        for t in range(1, n_segments):
            x[t] = rho * x[t - 1] + a * e[t]
        s = math.sqrt(math.log1p(cv * cv))
        sr = math.sqrt(math.log1p(rcv * rcv))
        c = np.exp(s * x - s * s / 2.0)
        eta = np.exp(sr * eta_z - sr * sr / 2.0)
        factors = c[:, None] * eta
        if p["normalize"]:
            factors = factors / factors.mean(axis=0, keepdims=True)
    sizes = np.maximum(1, np.rint(factors * nominal[None, :])).astype(np.int64)
    # a higher rung never gets a smaller segment than a lower one (rare with close rungs)
    sizes = np.sort(sizes, axis=1).tolist()
    video = make_video(name or f"synthetic-{lad.name}-s{seed}", dur, rates, sizes,
                       resolutions=list(lad.resolutions) if lad.resolutions else None,
                       byte_offsets=layout_from_sizes(sizes, [INIT_BYTES] * R))
    return validate_video(video)
