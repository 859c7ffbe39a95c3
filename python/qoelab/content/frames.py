"""Frame tables: type, size, byte offset, decode/presentation order and weighted references per frame.

Method. The ladder is encoded with x264 ``bframes=0:ref=1`` and an IDR frame (closed GOP) at every
segment start, so every P frame has exactly one possible reference picture: the frame decoded just before
it. The decoder's motion-vector side data (``flags2=+export_mvs``; PyAV exposes it as
``MOTION_VECTORS``) lists every inter-predicted block, including skipped macroblocks; the intra-coded
blocks are absent. The reference weight of a P frame is the fraction of its coded area (macroblock-aligned)
covered by inter-predicted blocks: 1.0 = fully predicted from the previous frame, 0.0 = intra only
(e.g. a hard scene cut coded as a P frame). Sizes and offsets come from the demuxer (``packet.pos`` and
``packet.size`` of the fragmented MP4), i.e. the length-prefixed NAL units of each frame in the ``mdat``.

Limits: the weight is an area fraction, not a bit or error-propagation measure; a block predicted from a
reference still carries its own residual. With ``ref>1`` or B frames the exported data does not say which
of several past pictures a block uses, which is why the pipeline fixes ``ref=1`` and ``bframes=0``.
"""

from __future__ import annotations

import av
import numpy as np

from qoelab.content import ffmpeg as ff
from qoelab.errors import InputError

COLUMNS = ("segment", "rung", "decode_idx", "pts_idx", "type", "size", "offset", "ref", "weight")


def frame_table(mp4_path: str, fragments, seg_frames: int):
    """Rows (dicts) for every frame of the file, segment-relative."""
    starts = [f.start for f in fragments]
    try:
        cont = av.open(mp4_path)
    except av.FFmpegError as e:
        raise InputError(mp4_path, None, "a decodable MP4", str(e)) from None
    with cont:
        st = cont.streams.video[0]
        st.codec_context.options = {"flags2": "+export_mvs"}
        st.thread_type = "NONE"
        w, h = st.codec_context.width, st.codec_context.height
        coded_area = ((w + 15) // 16 * 16) * ((h + 15) // 16 * 16)
        pkts = []
        decoded = {}
        for pkt in cont.demux(st):
            if ff.stopping():   # Ctrl-C / SIGTERM: the main thread is waiting for this thread to end
                raise KeyboardInterrupt
            if pkt.size == 0 and pkt.pts is None:
                for fr in pkt.decode():
                    decoded[fr.pts] = fr
                continue
            pkts.append((pkt.pts, pkt.dts, pkt.pos, pkt.size, bool(pkt.is_keyframe)))
            for fr in pkt.decode():
                decoded[fr.pts] = _summ(fr, coded_area)
        for k, v in list(decoded.items()):
            if not isinstance(v, tuple):
                decoded[k] = _summ(v, coded_area)
    rows = []
    seg_pts: dict[int, list] = {}
    for i, (pts, dts, pos, size, key) in enumerate(pkts):
        seg = int(np.searchsorted(starts, pos, side="right")) - 1
        if seg < 0 or pos + size > fragments[seg].end:
            raise InputError(mp4_path, f"byte {pos}", "frame data inside a fragment", "outside")
        ptype, area = decoded.get(pts, ("?", 0.0))
        rows.append({"segment": seg, "decode_idx": 0, "pts": pts, "type": ptype, "size": size,
                     "offset": pos - fragments[seg].start, "area": area, "key": key})
        seg_pts.setdefault(seg, []).append(pts)
    counters: dict[int, int] = {}
    last_idx: dict[int, int] = {}
    for r in rows:
        s = r["segment"]
        r["decode_idx"] = counters.get(s, 0)
        counters[s] = r["decode_idx"] + 1
        order = sorted(seg_pts[s])
        r["pts_idx"] = order.index(r["pts"])
        if r["type"] == "I":
            r["ref"], r["weight"] = -1, 0.0
        else:
            r["ref"] = last_idx.get(s, -1)
            r["weight"] = round(min(1.0, r["area"]), 4)
        last_idx[s] = r["decode_idx"]
        for k in ("pts", "area", "key"):
            del r[k]
    return rows


def _summ(fr, coded_area):
    t = fr.pict_type
    if isinstance(t, int):  # PyAV >= 15: AVPictureType as int (1=I, 2=P, 3=B)
        ptype = {1: "I", 2: "P", 3: "B"}.get(t, "?")
    else:
        ptype = {"I": "I", "P": "P", "B": "B"}.get(getattr(t, "name", str(t))[-1:], "?")
    area = 0.0
    sd = fr.side_data.get("MOTION_VECTORS")
    if sd is not None:
        arr = sd.to_ndarray()
        if len(arr):
            # only past references exist with bframes=0; count the area of inter-predicted blocks
            past = arr[arr["source"] < 0]
            area = float((past["w"].astype(np.int64) * past["h"].astype(np.int64)).sum()) / coded_area
    return ptype, area
