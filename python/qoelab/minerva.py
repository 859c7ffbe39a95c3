"""`qoelab minerva ...`: Minerva's offline inputs (docs/models/flow_controller-minerva.md,
docs/minerva-tools.md): the value function V_h of a video (`value-function`), the corpus-wide
normalization f (`normalize`), the Fixed-Rate Optimal baseline (`fixed-rate-optimal`), the loaders
a scenario's `[[provider]] value_functions = [...]` and `normalization_file = "..."` use, and a
cache of computed results keyed by their inputs."""

from __future__ import annotations

import hashlib
import json
import os

from qoelab import units
from qoelab.errors import InputError

FORMAT = "qoelab.value_function"
VERSION = 1
NORM_FORMAT = "qoelab.normalization"
NORM_VERSION = 1

# Cache statistics of this process (tests): {"hits": n, "misses": n}.
CACHE_STATS = {"hits": 0, "misses": 0}


def cache_dir() -> str:
    """The cache directory: $QOELAB_CACHE, else ~/.cache/qoelab/minerva."""
    return os.environ.get("QOELAB_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "qoelab", "minerva")


def cache_key(kind: str, inputs) -> str:
    """SHA-256 of the inputs (canonical JSON) with the kind and the core version."""
    from qoelab import _core
    blob = json.dumps({"kind": kind, "core": _core.version(), "inputs": inputs}, sort_keys=True,
                      separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def cached(kind: str, inputs, compute, use_cache: bool = True) -> dict:
    """`compute()` (a JSON-able dict), stored in the cache under `<kind>-<sha256>.json`; a later
    call with the same inputs reads the file instead. An unreadable cache entry is recomputed;
    an unwritable cache directory is ignored."""
    if not use_cache:
        return compute()
    path = os.path.join(cache_dir(), f"{kind}-{cache_key(kind, inputs)}.json")
    try:
        with open(path) as f:
            v = json.load(f)
        CACHE_STATS["hits"] += 1
        return v
    except (OSError, ValueError):
        pass
    CACHE_STATS["misses"] += 1
    v = compute()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(v, f, separators=(",", ":"))
        os.replace(tmp, path)
    except OSError:
        pass
    return v


def load_video_spec(spec: str, base_dir: str = ".") -> dict:
    """A Video dict from a file path, `corpus:<clip>` or `synthetic:<ladder>`."""
    from qoelab import video as vmod
    if spec.startswith("synthetic:"):
        from qoelab.video.ladders import LADDERS
        ladder = spec.split(":", 1)[1]
        if ladder not in LADDERS:
            raise InputError(None, "VIDEO", "synthetic:<ladder> with a ladder of " + ", ".join(LADDERS), spec)
        return vmod.synthetic_video(ladder, name=f"{ladder}-seed0")
    if spec.startswith("corpus:"):
        from qoelab.content import corpus
        return corpus.load_video(spec.split(":", 1)[1])
    path = spec if os.path.isabs(spec) else os.path.join(base_dir, spec)
    if not os.path.isfile(path) and not os.path.isdir(path):
        raise InputError(spec, None, message="no such video file (or corpus:<clip>, synthetic:<ladder>)")
    return vmod.load_video(path)


def _axis(lo: float, hi: float, step: float) -> list[float]:
    n = int(round((hi - lo) / step))
    return [lo + k * step for k in range(n + 1)]


def value_function(video: dict, metric="vmaf", horizon=5, rate_max_bps=8e6, rate_step_bps=1e5,
                   buffer_max_s=40.0, buffer_step_s=0.5, player_buffer_s=60.0, use_cache: bool = True) -> dict:
    """Compute V_h of `video` (a Video dict) in the core; returns the value-function dict (from the
    cache when the same inputs were computed before, unless `use_cache` is False)."""
    from qoelab import _core
    if metric != "bitrate" and metric not in video.get("quality", {}):
        have = ", ".join(video.get("quality", {})) or "it has none"
        raise InputError(None, "--metric", f"a quality table of the video ({have}) or bitrate", metric)
    params = {"metric": metric, "horizon": horizon, "buffer_max_s": player_buffer_s,
              "rates_bps": _axis(rate_step_bps, rate_max_bps, rate_step_bps),
              "buffers_s": _axis(0.0, buffer_max_s, buffer_step_s)}

    def compute():
        try:
            return json.loads(_core.minerva_value_function(json.dumps(video), json.dumps(params)))
        except ValueError as e:
            if len(e.args) == 2:
                raise InputError(None, e.args[0], message=e.args[1]) from None
            raise
    return cached("value_function", {"video": video, "params": params}, compute, use_cache)


def normalization(videos: list[dict], popularity: list[float] | None = None, alpha: float = 1.65,
                  metric: str = "vmaf", objective: str = "maxmin", pf_c: float = 1.0,
                  use_cache: bool = True) -> dict:
    """Minerva's corpus-wide normalization (§5.4) of `videos` (Video dicts) with `popularity`
    weights (None = uniform; any positive scale): the `qoelab.normalization` dict, whose table
    maps utility u to the popularity-weighted mean rate the videos need for u; f(u) = that / alpha."""
    from qoelab import _core
    for v in videos:
        if metric != "bitrate" and metric not in v.get("quality", {}):
            have = ", ".join(v.get("quality", {})) or "it has none"
            raise InputError(None, "--metric", f"a quality table of video {v.get('name')} ({have}) or bitrate", metric)
    params = {"popularity": popularity, "metric": metric, "objective": objective, "pf_c": pf_c, "alpha": alpha}

    def compute():
        try:
            return json.loads(_core.minerva_normalization(json.dumps(videos), json.dumps(params)))
        except ValueError as e:
            if len(e.args) == 2:
                raise InputError(None, e.args[0], message=e.args[1]) from None
            raise
    return cached("normalization", {"videos": videos, "params": params}, compute, use_cache)


def load_normalization(path: str, where: str) -> dict:
    """Read a normalization file; a malformed one is an InputError naming `where` and the bad key."""
    from qoelab import _core
    try:
        with open(path) as f:
            text = f.read()
        v = json.loads(text)
    except OSError as e:
        raise InputError(None, where, message=f"cannot read {path}: {e.strerror}") from None
    except ValueError as e:
        line = getattr(e, "lineno", None)
        raise InputError(None, where, message=f"{path} is not JSON" + (f" (line {line})" if line else "")) from None
    if not isinstance(v, dict) or v.get("format") != NORM_FORMAT or v.get("version") != NORM_VERSION:
        raise InputError(None, where, message=f"{path}: expected a normalization file (format \"{NORM_FORMAT}\" "
                         f"version {NORM_VERSION}, from `qoelab minerva normalize`)")
    try:
        _core.minerva_check_normalization(text)
    except ValueError as e:
        key, msg = e.args if len(e.args) == 2 else ("", str(e))
        raise InputError(None, where, message=f"{path}: key {key}: {msg}") from None
    return v


def load_value_function(path: str, where: str) -> dict:
    """Read a value-function file; a malformed one is an InputError naming `where`."""
    try:
        with open(path) as f:
            v = json.load(f)
    except OSError as e:
        raise InputError(None, where, message=f"cannot read {path}: {e.strerror}") from None
    except ValueError as e:
        line = getattr(e, "lineno", None)
        raise InputError(None, where, message=f"{path} is not JSON" + (f" (line {line})" if line else "")) from None
    if not isinstance(v, dict) or v.get("format") != FORMAT or v.get("version") != VERSION:
        raise InputError(None, where, message=f"{path}: expected a value-function file (format \"{FORMAT}\" "
                         f"version {VERSION}, from `qoelab minerva value-function`)")
    return v


def _cmd_value_function(args):
    from qoelab import outdir
    video = load_video_spec(args.video)
    for k, conv in (("rate_max", units.rate), ("rate_step", units.rate), ("buffer_max", units.duration),
                    ("buffer_step", units.duration), ("player_buffer", units.duration)):
        try:
            setattr(args, k, conv(getattr(args, k)))
        except ValueError as e:
            raise InputError(None, "--" + k.replace("_", "-"), message=str(e)) from None
        if getattr(args, k) <= 0:
            raise InputError(None, "--" + k.replace("_", "-"), "a value > 0", getattr(args, k))
    if not 1 <= args.horizon <= 8:
        raise InputError(None, "--horizon", "1 to 8 chunks", str(args.horizon))
    vf = value_function(video, metric=args.metric, horizon=args.horizon, rate_max_bps=args.rate_max,
                        rate_step_bps=args.rate_step, buffer_max_s=args.buffer_max / 1e9,
                        buffer_step_s=args.buffer_step / 1e9, player_buffer_s=args.player_buffer / 1e9,
                        use_cache=not args.no_cache)
    outdir.write_text(args.out, json.dumps(vf, separators=(",", ":")))
    n = sum(len(r) for t in vf["values"] for r in t)
    print(f"value function of {vf['video']}: {len(vf['values'])} rungs x {len(vf['rates_bps'])} rates x "
          f"{len(vf['buffers_s'])} buffers ({n:,} values), h = {vf['horizon']}, metric {vf['metric']} -> {args.out}")
    return 0


def _cmd_normalize(args):
    from qoelab import outdir
    videos = [load_video_spec(v) for v in args.videos]
    names = [v.get("name") for v in videos]
    if len(set(names)) != len(names):
        raise InputError(None, "--videos", "videos with distinct names", ", ".join(map(str, names)))
    if args.popularity is not None:
        if len(args.popularity) != len(videos):
            raise InputError(None, "--popularity", f"{len(videos)} weights (one per video)",
                             " ".join(f"{x:g}" for x in args.popularity))
        if any(not (x >= 0 and x < float("inf")) for x in args.popularity) or sum(args.popularity) <= 0:
            raise InputError(None, "--popularity", "non-negative weights with a positive sum",
                             " ".join(f"{x:g}" for x in args.popularity))
    if not (args.alpha > 0 and args.alpha < float("inf")):
        raise InputError(None, "--alpha", "a number > 0", f"{args.alpha:g}")
    n = normalization(videos, popularity=args.popularity, alpha=args.alpha, metric=args.metric,
                      objective=args.objective, pf_c=args.pf_c, use_cache=not args.no_cache)
    outdir.write_text(args.out, json.dumps(n, indent=1))
    print(f"normalization over {len(videos)} videos ({args.objective}, metric {args.metric}, alpha {args.alpha:g}): "
          f"{len(n['utility'])} points, u {n['utility'][0]:g}..{n['utility'][-1]:g} -> mean rate "
          f"{n['mean_rate_bps'][0] / 1e6:g}..{n['mean_rate_bps'][-1] / 1e6:g} Mbit/s -> {args.out}")
    return 0


def add_parser(subparsers) -> None:
    mp = subparsers.add_parser("minerva", help="Minerva (QoE-fair transport) helpers: value functions, "
                               "normalization, fixed-rate optimum",
                               description="Minerva's offline inputs (docs/models/flow_controller-minerva.md).")
    msub = mp.add_subparsers(dest="minerva_cmd", metavar="{value-function,normalize,fixed-rate-optimal}")
    msub.required = True
    v = msub.add_parser("value-function", help="compute V_h(buffer, rate, current rung) of a video",
                        description="V_h = mean Eq. 1 QoE of the next h chunks when the client keeps a constant "
                                    "download rate and its ABR is an MPC of horizon h on the quality metric "
                                    "(the optimal h-chunk plan), on a grid of rates x buffers x current rungs.")
    v.add_argument("video", metavar="VIDEO", help="a video file, corpus:<clip> or synthetic:<ladder>")
    v.add_argument("--out", required=True, metavar="FILE")
    v.add_argument("--metric", default="vmaf", help="quality metric (a table of the video) or bitrate (default vmaf)")
    v.add_argument("--horizon", type=int, default=5, help="chunks (default 5)")
    v.add_argument("--rate-max", default="8Mbps", help="largest rate of the grid (default 8Mbps)")
    v.add_argument("--rate-step", default="100kbps", help="rate step, also the smallest rate (default 100kbps)")
    v.add_argument("--buffer-max", default="40s", help="largest buffer of the grid (default 40s)")
    v.add_argument("--buffer-step", default="0.5s", help="buffer step (default 0.5s)")
    v.add_argument("--player-buffer", default="60s", help="the player's buffer cap assumed (default 60s)")
    v.add_argument("--no-cache", action="store_true", help="compute even if the cache ($QOELAB_CACHE, default "
                   "~/.cache/qoelab/minerva) has the result, and do not store it")
    v.set_defaults(func=_cmd_value_function)
    n = msub.add_parser("normalize", help="corpus-wide normalization f from a popularity distribution (§5.4)",
                        description="f(u) = (1/alpha) sum_i p_i U_i^-1(u): the popularity-weighted mean rate the "
                                    "videos need for utility u (horizontal average of their chunk-averaged quality "
                                    "curves), over alpha. A provider uses the file with normalization_file = FILE.")
    n.add_argument("--videos", nargs="+", required=True, metavar="VIDEO",
                   help="video files, corpus:<clip> or synthetic:<ladder>")
    n.add_argument("--popularity", nargs="+", type=float, metavar="W", help="one weight per video (default uniform)")
    n.add_argument("--alpha", type=float, default=1.65, help="target mean weight (default 1.65; 0.825 against "
                   "one-connection cubic)")
    n.add_argument("--metric", default="vmaf", help="quality metric (a table of every video) or bitrate (default vmaf)")
    n.add_argument("--objective", default="maxmin", choices=["maxmin", "propfair"],
                   help="the provider's objective (propfair: curves Z = pf_c - P'/P, App. D)")
    n.add_argument("--pf-c", type=float, default=1.0, help="C of the propfair score (default 1)")
    n.add_argument("--out", required=True, metavar="FILE")
    n.add_argument("--no-cache", action="store_true", help="do not use the cache")
    n.set_defaults(func=_cmd_normalize)
