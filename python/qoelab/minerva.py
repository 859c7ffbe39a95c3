"""`qoelab minerva value-function VIDEO --out FILE`: Minerva's value function V_h of a video
(docs/models/flow_controller-minerva.md, "Value-function file"), and the loader a scenario's
`[[provider]] value_functions = [...]` uses."""

from __future__ import annotations

import json
import os

from qoelab import units
from qoelab.errors import InputError

FORMAT = "qoelab.value_function"
VERSION = 1


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
                   buffer_max_s=40.0, buffer_step_s=0.5, player_buffer_s=60.0) -> dict:
    """Compute V_h of `video` (a Video dict) in the core; returns the value-function dict."""
    from qoelab import _core
    if metric != "bitrate" and metric not in video.get("quality", {}):
        have = ", ".join(video.get("quality", {})) or "it has none"
        raise InputError(None, "--metric", f"a quality table of the video ({have}) or bitrate", metric)
    params = {"metric": metric, "horizon": horizon, "buffer_max_s": player_buffer_s,
              "rates_bps": _axis(rate_step_bps, rate_max_bps, rate_step_bps),
              "buffers_s": _axis(0.0, buffer_max_s, buffer_step_s)}
    try:
        return json.loads(_core.minerva_value_function(json.dumps(video), json.dumps(params)))
    except ValueError as e:
        if len(e.args) == 2:
            raise InputError(None, e.args[0], message=e.args[1]) from None
        raise


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
                        buffer_step_s=args.buffer_step / 1e9, player_buffer_s=args.player_buffer / 1e9)
    outdir.write_text(args.out, json.dumps(vf, separators=(",", ":")))
    n = sum(len(r) for t in vf["values"] for r in t)
    print(f"value function of {vf['video']}: {len(vf['values'])} rungs x {len(vf['rates_bps'])} rates x "
          f"{len(vf['buffers_s'])} buffers ({n:,} values), h = {vf['horizon']}, metric {vf['metric']} -> {args.out}")
    return 0


def add_parser(subparsers) -> None:
    mp = subparsers.add_parser("minerva", help="Minerva (QoE-fair transport) helpers: value functions",
                               description="Minerva's offline inputs (docs/models/flow_controller-minerva.md).")
    msub = mp.add_subparsers(dest="minerva_cmd", metavar="{value-function}")
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
    v.set_defaults(func=_cmd_value_function)
