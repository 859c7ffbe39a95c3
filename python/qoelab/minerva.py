"""`qoelab minerva ...`: Minerva's offline inputs (docs/models/flow_controller-minerva.md,
docs/minerva-tools.md): the value function V_h of a video (`value-function`), the corpus-wide
normalization f (`normalize`), the Fixed-Rate Optimal baseline (`fixed-rate-optimal`), the loaders
a scenario's `[[provider]] value_functions = [...]` and `normalization_file = "..."` use, and a
cache of computed results keyed by their inputs."""

from __future__ import annotations

import hashlib
import json
import math
import os

from qoelab import units
from qoelab.errors import InputError, interruptible, json_input, read_input

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


def cached(kind: str, inputs, compute, use_cache: bool = True, valid=lambda v: isinstance(v, dict)) -> dict:
    """`compute()` (a JSON-able dict), stored in the cache under `<kind>-<sha256>.json`; a later
    call with the same inputs reads the file instead. An unreadable cache entry is recomputed (one
    that is not a regular file of at most 256 MiB, not JSON, nested too deeply, or not what
    ``valid`` accepts: a FIFO had blocked, /dev/zero filled memory, a wrong object was an internal
    error); an unwritable cache directory is ignored."""
    if not use_cache:
        return compute()
    path = os.path.join(cache_dir(), f"{kind}-{cache_key(kind, inputs)}.json")
    try:
        if os.path.isfile(path) and os.path.getsize(path) <= 256 * 2**20:
            with open(path, "rb") as f:
                v = json.loads(f.read())
            if valid(v):
                CACHE_STATS["hits"] += 1
                return v
    except (OSError, ValueError, RecursionError):
        pass
    CACHE_STATS["misses"] += 1
    v = compute()
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w") as f:
            json.dump(v, f, separators=(",", ":"))
        os.replace(tmp, path)
    except OSError:
        pass
    finally:   # a full disk or Ctrl-C while writing left the partial file in the cache (a probe)
        if os.path.lexists(tmp):
            try:
                os.unlink(tmp)
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


# Largest value-function grid (rungs x rates x buffers): the default grid of an 8-rung video is
# 8 x 80 x 81 = 51,840 values; a 10 kbit/s x 0.1 s grid 2.6 x 10^6. Each value is held as a Rust
# float, in the JSON text and as a Python float (about 60 bytes in all).
MAX_VF_VALUES = 5_000_000
# ... and of the whole search, values x rungs^horizon before pruning: the default grid of an 8-rung
# video at horizon 5 is 1.7 x 10^9 (0.3 s), at horizon 8 8.7 x 10^11 (2.4 s); a 2.6 x 10^6-value
# grid at horizon 8 (4.4 x 10^13) took about two minutes.
MAX_VF_WORK = 10**13


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
    n_rates = int(round((rate_max_bps - rate_step_bps) / rate_step_bps)) + 1
    n_buffers = int(round(buffer_max_s / buffer_step_s)) + 1
    if n_rates < 1:
        raise InputError(None, "--rate-max", f"a rate >= --rate-step ({rate_step_bps:g} bit/s)", f"{rate_max_bps:g} bit/s")
    n_values = len(video.get("bitrates_bps") or [1]) * n_rates * n_buffers
    if n_values > MAX_VF_VALUES:   # (--rate-step 1bps ran out of memory; the values are held three times)
        raise InputError(None, "--rate-step/--buffer-step", f"a grid of at most {MAX_VF_VALUES:,} values (rungs x "
                         "rates x buffers)", f"{n_values:,} ({n_rates:,} rates x {n_buffers:,} buffers)")
    rungs = len(video.get("bitrates_bps") or [1])
    if n_values * rungs ** horizon > MAX_VF_WORK:   # (a 60-rung video at horizon 5 did not end in minutes)
        raise InputError(None, "--horizon", f"a search of at most {MAX_VF_WORK:.0e} rung sequences (grid values x "
                         "rungs^horizon; a smaller horizon, or a coarser grid)",
                         f"{n_values:,} values x {rungs}^{horizon}")
    params = {"metric": metric, "horizon": horizon, "buffer_max_s": player_buffer_s,
              "rates_bps": _axis(rate_step_bps, rate_max_bps, rate_step_bps),
              "buffers_s": _axis(0.0, buffer_max_s, buffer_step_s)}

    def compute():
        try:
            return json.loads(interruptible(_core.minerva_value_function, json.dumps(video), json.dumps(params)))
        except ValueError as e:
            if len(e.args) == 2:
                raise InputError(None, e.args[0], message=e.args[1]) from None
            raise
    return cached("value_function", {"video": video, "params": params}, compute, use_cache, _valid_vf)


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
            return json.loads(interruptible(_core.minerva_normalization, json.dumps(videos), json.dumps(params)))
        except ValueError as e:
            if len(e.args) == 2:
                raise InputError(None, e.args[0], message=e.args[1]) from None
            raise
    return cached("normalization", {"videos": videos, "params": params}, compute, use_cache,
                  lambda v: isinstance(v, dict) and v.get("format") == NORM_FORMAT and _valid_norm(v))


def _read_json(path: str, where: str, what: str) -> tuple[str, object]:
    """The text and the JSON value of file ``path`` (named by scenario key ``where``): a regular file
    of at most 256 MiB (a FIFO blocked the run, /dev/zero filled memory), UTF-8, JSON of bounded
    nesting; otherwise one line naming ``where`` and the file."""
    try:
        data = read_input(path, what)
    except InputError as e:
        raise InputError(None, where, message=str(e)) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(None, where, message=f"{path} is not UTF-8 text (byte {e.start})") from None
    try:
        return text, json_input(text, path)
    except InputError as e:
        raise InputError(None, where, message=f"{path} is not JSON" + (f" (line {e.where})" if e.where else "")
                         + f": {e.found or e.message}") from None


def load_normalization(path: str, where: str) -> dict:
    """Read a normalization file; a malformed one is an InputError naming `where` and the bad key."""
    from qoelab import _core
    text, v = _read_json(path, where, "a normalization file")
    if not isinstance(v, dict) or v.get("format") != NORM_FORMAT or v.get("version") != NORM_VERSION:
        raise InputError(None, where, message=f"{path}: expected a normalization file (format \"{NORM_FORMAT}\" "
                         f"version {NORM_VERSION}, from `qoelab minerva normalize`)")
    try:
        _core.minerva_check_normalization(text)
    except ValueError as e:
        key, msg = e.args if len(e.args) == 2 else ("", str(e))
        raise InputError(None, where, message=f"{path}: key {key}: {msg}") from None
    return v


_VF_MEMO: dict = {}


def _valid_vf(v) -> bool:
    """A cached value function has every key with its type."""
    try:
        _check_vf_shape(v, "cache", "cache")
        return v.get("format") == FORMAT
    except (InputError, AttributeError):
        return False


def _valid_norm(v: dict) -> bool:
    from qoelab import _core
    try:
        _core.minerva_check_normalization(json.dumps(v))
        return True
    except (ValueError, TypeError):
        return False


def _check_vf_shape(v: dict, path: str, where: str) -> None:
    """Each key of a value-function file present with its type (a missing `beta` was reported as "a
    value is out of range" of the scenario, naming neither the file nor the key)."""
    def num(x):
        return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)

    def bad(key, expected):
        x = v.get(key)
        found = "nothing" if key not in v else f"a {type(x).__name__}" if isinstance(x, (list, dict)) else repr(x)[:40]
        raise InputError(None, where, message=f"{path}: key {key}: expected {expected}, found {found}")
    for key in ("video", "metric"):
        if not isinstance(v.get(key), str):
            bad(key, "a string")
    if not (isinstance(v.get("horizon"), int) and not isinstance(v.get("horizon"), bool) and 1 <= v["horizon"] <= 8):
        bad("horizon", "an integer from 1 to 8")
    for key in ("beta", "gamma", "buffer_max_s", "segment_s"):
        if not num(v.get(key)):
            bad(key, "a finite number")
    if not (isinstance(v.get("bitrates_bps"), list) and v["bitrates_bps"] and all(
            isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**64 for x in v["bitrates_bps"])):
        bad("bitrates_bps", "a non-empty list of bit rates (integers)")
    for key in ("rates_bps", "buffers_s"):
        if not (isinstance(v.get(key), list) and all(num(x) for x in v[key])):
            bad(key, "a list of finite numbers")
    vals = v.get("values")
    if not (isinstance(vals, list) and all(isinstance(t, list) and all(isinstance(r, list) and all(num(x) for x in r)
                                                                       for r in t) for t in vals)):
        bad("values", "a list (rungs) of lists (rates) of lists (buffers) of finite numbers")


def load_value_function(path: str, where: str) -> dict:
    """Read a value-function file; a malformed one is an InputError naming `where`. Parsed once per
    unchanged file in a process (qoelab.filememo); callers never change the returned dict."""
    from qoelab import filememo

    def parse(p: str) -> dict:
        _, v = _read_json(p, where, "a value-function file")
        if not isinstance(v, dict) or v.get("format") != FORMAT or v.get("version") != VERSION:
            raise InputError(None, where, message=f"{p}: expected a value-function file (format \"{FORMAT}\" "
                             f"version {VERSION}, from `qoelab minerva value-function`)")
        _check_vf_shape(v, p, where)
        return v
    try:
        return filememo.load(_VF_MEMO, path, parse)
    except OSError as e:
        raise InputError(None, where, message=f"cannot read {path}: {e.strerror}") from None


def _cmd_value_function(args):
    from qoelab import outdir
    outdir.check_file(args.out)
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
    outdir.check_file(args.out)
    videos = [load_video_spec(v) for v in args.videos]
    names = [v.get("name") for v in videos]
    if len(set(names)) != len(names):
        raise InputError(None, "--videos", "videos with distinct names", ", ".join(map(str, names)))
    if args.popularity is not None:
        if len(args.popularity) != len(videos):
            raise InputError(None, "--popularity", f"{len(videos)} weights (one per video)",
                             " ".join(f"{x:g}" for x in args.popularity))
        if any(not (x >= 0 and x < float("inf")) for x in args.popularity) or not 0 < sum(args.popularity) < 1e300:
            raise InputError(None, "--popularity", "non-negative weights with a positive sum below 1e300",
                             " ".join(f"{x:g}" for x in args.popularity))
    if not (args.alpha > 0 and args.alpha < float("inf")):
        raise InputError(None, "--alpha", "a number > 0", f"{args.alpha:g}")
    if not math.isfinite(args.pf_c):
        raise InputError(None, "--pf-c", "a finite number", f"{args.pf_c:g}")
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
                               description="Minerva's offline inputs and baseline (docs/models/flow_controller-minerva.md, "
                                           "docs/minerva-tools.md). Results are cached by their inputs in "
                                           "$QOELAB_CACHE (default ~/.cache/qoelab/minerva).")
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
    _add_fro_parser(msub)


# ---------------------------------------------------------------------------------------------
# Fixed-Rate Optimal (§8.2): the max-min QoE allocation when every video gets a constant rate.

def _eq2_curve(video: dict, metric: str):
    """Eq. 2's chunk-averaged curve: [(rate bit/s, P)], from (0, 0), running maximum."""
    rates = video["bitrates_bps"]
    if metric == "bitrate":
        ps = [r / 1e6 for r in rates]
    else:
        rows = video["quality"][metric]
        ps = [sum(row[k] for row in rows) / len(rows) for k in range(len(rates))]
    pts, m = [(0.0, 0.0)], float("-inf")
    for r, p in zip(rates, ps):
        m = max(m, p)
        pts.append((float(r), m))
    return pts


def _at(pts, x):
    if x <= pts[0][0]:
        return pts[0][1]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x <= x1:
            return y1 if x1 <= x0 else y0 + (x - x0) / (x1 - x0) * (y1 - y0)
    return pts[-1][1]


def _rate_for(pts, q):
    """Smallest rate of the monotone curve `pts` with value >= q (None if it never gets there)."""
    if q <= pts[0][1]:
        return pts[0][0]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if y1 >= q:
            return x1 if y1 <= y0 else x0 + (q - y0) / (y1 - y0) * (x1 - x0)
    return None


def chunk_qoe(segments, video: dict, metric="vmaf", beta=25.0, gamma=2.5) -> float:
    """Mean per-chunk Eq. 1 QoE of one client's segments table rows (played, not abandoned):
    P(segment, rung) - beta x stall_s - gamma |P - P_prev| (stall_s excludes startup)."""
    total, n, prev = 0.0, 0, None
    for s in segments:
        if s["abandoned"]:
            continue
        if metric == "bitrate":
            p = video["bitrates_bps"][s["rung"]] / 1e6
        else:
            rows = video["quality"][metric]
            p = rows[min(s["segment"], len(rows) - 1)][s["rung"]]
        total += p - beta * s["stall_s"] - (gamma * abs(p - prev) if prev is not None else 0.0)
        prev, n = p, n + 1
    return total / n if n else float("nan")


def constant_rate_qoe(videos: list[dict], rate_bps: float, abr="mpc", abr_params=None, metric="vmaf",
                      beta=25.0, gamma=2.5, window_s=200.0, rtt="20ms", client=None) -> list[float]:
    """Mean per-chunk Eq. 1 QoE of each video played alone by one client (ABR `abr`) for
    `window_s` on a constant link of `rate_bps` in qoelab's trace mode."""
    import tempfile

    from qoelab import results
    with tempfile.TemporaryDirectory(prefix="qoelab-fro-") as d:
        clients = []
        for k, v in enumerate(videos):
            path = os.path.join(d, f"v{k}.json")
            with open(path, "w") as f:
                json.dump(v, f)
            c = {"name": f"c{k}", "video": path, "abr": abr, **(client or {})}
            if abr_params:
                c["abr_params"] = dict(abr_params)
            clients.append(c)
        sc = {"scenario": {"duration": f"{window_s}s", "network": "trace"},
              "topology": {"rate": f"{rate_bps:.0f}bps", "rtt": rtt}, "client": clients}
        res = results.run(sc)
        seg = res.table("segments")
    out = []
    for k, v in enumerate(videos):
        rows = seg[seg["client"] == k].sort_values("segment").to_dict("records")
        out.append(chunk_qoe(rows, v, metric, beta, gamma))
    return out


def constant_rate_curve(video: dict, grid: list, abr: str = "mpc", abr_params: dict | None = None,
                        metric: str = "vmaf", beta: float = 25.0, gamma: float = 2.5, window_s: float = 200.0,
                        rtt: str = "20ms", client: dict | None = None, use_cache: bool = True) -> list[float]:
    """Q(r) of one video at each rate of `grid`: :func:`constant_rate_qoe` of the video played alone,
    cached per (video, grid, player settings), so that the combinations of a reproduction that share a
    video and a link rate compute its curve once."""
    inputs = {"video": video, "grid": list(grid), "abr": abr, "abr_params": abr_params, "metric": metric,
              "beta": beta, "gamma": gamma, "window_s": window_s, "rtt": rtt, "client": client}

    def compute():
        return {"qoe": [constant_rate_qoe([video], r, abr, abr_params, metric, beta, gamma, window_s, rtt,
                                          client)[0] for r in grid]}
    return cached("constant_rate_curve", inputs, compute, use_cache,
                  lambda v: isinstance(v, dict) and isinstance(v.get("qoe"), list) and len(v["qoe"]) == len(grid)
                  and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v["qoe"]))["qoe"]


def fixed_rate_optimal(videos: list[dict], rate_bps: float, abr: str = "eq2", abr_params: dict | None = None,
                       metric: str = "vmaf", beta: float = 25.0, gamma: float = 2.5, window_s: float = 200.0,
                       grid_points: int = 50, tol: float = 0.01, rtt: str = "20ms", client: dict | None = None,
                       use_cache: bool = True) -> dict:
    """The Fixed-Rate Optimal of §8.2: constant per-video rates summing to at most `rate_bps` that
    maximize the minimum QoE (docs/minerva-tools.md).

    `abr = "eq2"`: Q_i(r) is Eq. 2's curve (chunk-averaged P, linear between rungs: the fluid
    model). Any other name is a qoelab ABR: Q_i(r) = mean per-chunk Eq. 1 QoE (`beta`, `gamma` on
    `metric`) of one client with that ABR (`abr_params`, extra `client` keys) playing video i for
    `window_s` in trace mode on a constant link of rate r, tabulated at r = C k / grid_points,
    k = 1..grid_points, linear in between. Each Q_i is replaced by its running maximum (a
    video's rate for level q is then the smallest rate reaching q), and the common level q is
    found by bisection (to `tol` QoE points) as the largest with sum_i r_i(q) <= C.

    Returns {"rate_bps", "abr", "metric", "window_s", "min_qoe", "spare_bps", "videos": [{"name",
    "rate_bps", "qoe"}], "curves": [{"name", "rates_bps", "qoe"}]} (`qoe` of a video: its curve at
    its rate; above q only for a video whose curve starts above q at the lowest rate)."""
    if not rate_bps > 0:
        raise InputError(None, "--rate", "a rate > 0", str(rate_bps))
    if not videos:
        raise InputError(None, "--videos", "at least one video", "none")
    for v in videos:
        if metric != "bitrate" and metric not in v.get("quality", {}):
            have = ", ".join(v.get("quality", {})) or "it has none"
            raise InputError(None, "--metric", f"a quality table of video {v.get('name')} ({have}) or bitrate", metric)
    if abr == "eq2":
        curves = [_eq2_curve(v, metric) for v in videos]
    else:
        grid = [rate_bps * k / grid_points for k in range(1, grid_points + 1)]
        tab = [constant_rate_curve(v, grid, abr, abr_params, metric, beta, gamma, window_s, rtt, client, use_cache)
               for v in videos]
        curves = []
        for qs in tab:
            pts, m = [], float("-inf")
            for r, q in zip(grid, qs):
                m = max(m, q)
                pts.append((r, m))
            curves.append(pts)
    lo = min(c[0][1] for c in curves)
    hi = min(c[-1][1] for c in curves)

    def need(q):
        rs = [_rate_for(c, q) for c in curves]
        return None if any(r is None for r in rs) else rs

    def fits(q):
        rs = need(q)
        return rs is not None and sum(rs) <= rate_bps * (1 + 1e-12)
    if fits(hi):
        lo = hi
    while hi - lo > tol:
        mid = (lo + hi) / 2
        if mid in (lo, hi):   # one float step apart: as narrow as it gets (a tol below it never ended)
            break
        if fits(mid):
            lo = mid
        else:
            hi = mid
    rates = need(lo)
    if rates is None or sum(rates) > rate_bps * (1 + 1e-9):   # even the lowest rates do not fit
        rates = [c[0][0] for c in curves]
    qoes = [_at(c, r) for c, r in zip(curves, rates)]
    return {"format": "qoelab.fixed_rate_optimal", "version": 1, "rate_bps": rate_bps, "abr": abr,
            "metric": metric, "beta": beta, "gamma": gamma, "window_s": window_s, "tol": tol,
            "min_qoe": min(qoes), "spare_bps": rate_bps - sum(rates),
            "videos": [{"name": v.get("name"), "rate_bps": r, "qoe": q} for v, r, q in zip(videos, rates, qoes)],
            "curves": [{"name": v.get("name"), "rates_bps": [p[0] for p in c], "qoe": [p[1] for p in c]}
                       for v, c in zip(videos, curves)]}


MIN_TOL = 1e-9


def _cmd_fixed_rate_optimal(args):
    from qoelab import outdir
    outdir.check_file(args.out)
    videos = [load_video_spec(v) for v in args.videos]
    try:
        rate = units.rate(args.rate)
        window = units.duration(args.window) / 1e9
    except ValueError as e:
        raise InputError(None, "--rate/--window", message=str(e)) from None
    if not 2 <= args.grid <= 1000:
        raise InputError(None, "--grid", "2 to 1000 points", str(args.grid))
    if not args.tol > 0:
        raise InputError(None, "--tol", "a tolerance > 0", str(args.tol))
    if not args.tol >= MIN_TOL:   # (1e-300: the bisection stopped narrowing at one float step and never ended)
        raise InputError(None, "--tol", f"a tolerance >= {MIN_TOL:g} (QoE points)", f"{args.tol:g}")
    params = None
    if args.abr_params:
        try:
            params = json_input(args.abr_params, None)
        except InputError as e:
            raise InputError(None, "--abr-params", "a JSON object", e.found or e.message) from None
        if not isinstance(params, dict):
            raise InputError(None, "--abr-params", "a JSON object", args.abr_params[:60])
    if args.abr != "eq2":
        from qoelab import _core
        names = [e["name"] for e in json.loads(_core.describe("abr"))]
        if args.abr not in names:
            raise InputError(None, "--abr", "eq2 or a qoelab ABR (" + ", ".join(names) + ")", args.abr)
    if not 1.0 <= window <= 86_400.0:
        raise InputError(None, "--window", "a session of 1 s to 1 day (24h)", args.window)
    try:
        r = fixed_rate_optimal(videos, rate, abr=args.abr, abr_params=params, metric=args.metric, window_s=window,
                               grid_points=args.grid, tol=args.tol, use_cache=not args.no_cache)
    except InputError as e:   # the generated scenario's keys are these options
        opt = {"topology.rate": "--rate (divided by --grid points)", "scenario.duration": "--window"}.get(e.where or "")
        if e.path != "<scenario>" or opt is None:
            raise
        raise InputError(None, opt, e.expected, e.found, e.message) from None
    outdir.write_text(args.out, json.dumps(r, indent=1))
    per = ", ".join(f"{v['name']} {v['rate_bps'] / 1e6:.3f} Mbit/s QoE {v['qoe']:.2f}" for v in r["videos"])
    print(f"fixed-rate optimum at {rate / 1e6:g} Mbit/s ({args.abr}): min QoE {r['min_qoe']:.2f}; {per} -> {args.out}")
    return 0


def _add_fro_parser(msub) -> None:
    f = msub.add_parser("fixed-rate-optimal", help="max-min QoE with a constant rate per video (§8.2 baseline)",
                        description="The Fixed-Rate Optimal: constant per-video rates summing to the link rate that "
                                    "maximize the minimum QoE, by bisection on the common QoE level "
                                    "(docs/minerva-tools.md).")
    f.add_argument("--videos", nargs="+", required=True, metavar="VIDEO",
                   help="video files, corpus:<clip> or synthetic:<ladder>")
    f.add_argument("--rate", required=True, help="link capacity C shared by the videos, e.g. 4Mbps")
    f.add_argument("--abr", default="eq2", help="eq2 (Eq. 2 fluid curve, default) or a qoelab ABR run in trace mode")
    f.add_argument("--abr-params", metavar="JSON", help="the ABR's parameters as a JSON object")
    f.add_argument("--metric", default="vmaf", help="quality metric or bitrate (default vmaf)")
    f.add_argument("--window", default="200s", help="session length scored (trace mode; default 200s)")
    f.add_argument("--grid", type=int, default=50, help="rates tabulated: C k / grid, k = 1..grid (default 50)")
    f.add_argument("--tol", type=float, default=0.01, help="bisection tolerance in QoE points (default 0.01)")
    f.add_argument("--out", required=True, metavar="FILE")
    f.add_argument("--no-cache", action="store_true", help="do not use the cache")
    f.set_defaults(func=_cmd_fixed_rate_optimal)
