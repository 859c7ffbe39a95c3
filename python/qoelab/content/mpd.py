"""DASH MPD writer/reader: one AdaptationSet, one fragmented-MP4 file per Representation, byte-ranged
segments (``SegmentList`` with ``Initialization@range`` and ``SegmentURL@mediaRange``; on-demand style)."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

from qoelab.errors import InputError

NS = "urn:mpeg:dash:schema:mpd:2011"


def iso_duration(seconds: float) -> str:
    return f"PT{seconds:.3f}S"


def min_bandwidth(sizes: list[int], seg_s: float, min_buffer_s: float) -> int:
    """Smallest bit/s that lets a client that buffered ``min_buffer_s`` play continuously (DASH @bandwidth)."""
    bw, cum = 0.0, 0
    for i, sz in enumerate(sizes):
        cum += sz * 8
        bw = max(bw, cum / (min_buffer_s + i * seg_s))
    return int(math.ceil(bw))


def write(path: str, reps: list[dict], duration_s: float, seg_frames: int, fps: int, min_buffer_s: float) -> None:
    """``reps``: dicts with id, file, width, height, codec, timescale, init_end, ranges [(a, b)], bandwidth."""
    ET.register_namespace("", NS)
    mpd = ET.Element(f"{{{NS}}}MPD", {
        "profiles": "urn:mpeg:dash:profile:full:2011", "type": "static",
        "mediaPresentationDuration": iso_duration(duration_s), "minBufferTime": iso_duration(min_buffer_s)})
    period = ET.SubElement(mpd, f"{{{NS}}}Period", {"id": "0", "start": "PT0S"})
    aset = ET.SubElement(period, f"{{{NS}}}AdaptationSet", {
        "id": "0", "contentType": "video", "mimeType": "video/mp4", "segmentAlignment": "true",
        "startWithSAP": "1", "frameRate": str(fps)})
    for r in reps:
        rep = ET.SubElement(aset, f"{{{NS}}}Representation", {
            "id": str(r["id"]), "bandwidth": str(r["bandwidth"]), "codecs": r["codec"],
            "width": str(r["width"]), "height": str(r["height"]), "sar": "1:1"})
        ET.SubElement(rep, f"{{{NS}}}BaseURL").text = r["file"]
        ts = r["timescale"]
        sl = ET.SubElement(rep, f"{{{NS}}}SegmentList", {
            "timescale": str(ts), "duration": str(seg_frames * ts // fps)})
        ET.SubElement(sl, f"{{{NS}}}Initialization", {"range": f"0-{r['init_end'] - 1}"})
        for a, b in r["ranges"]:
            ET.SubElement(sl, f"{{{NS}}}SegmentURL", {"mediaRange": f"{a}-{b - 1}"})
    tree = ET.ElementTree(mpd)
    ET.indent(tree)
    tree.write(path, xml_declaration=True, encoding="utf-8")


def read(path: str) -> dict:
    """Parse an MPD written by :func:`write` (or any single-file byte-ranged SegmentList MPD)."""
    from qoelab.errors import read_input
    try:
        root = ET.fromstring(read_input(path, "a DASH MPD"))
    except ET.ParseError as e:
        raise InputError(path, None, "a DASH MPD (XML)", str(e)) from None
    ns = {"d": NS}
    reps = []
    for rep in root.findall(".//d:Representation", ns):
        sl = rep.find("d:SegmentList", ns)
        base = rep.find("d:BaseURL", ns)
        if sl is None or base is None:
            raise InputError(path, f"Representation[{rep.get('id')}]", "BaseURL and SegmentList", "missing")
        init = sl.find("d:Initialization", ns)

        def rng(s):
            a, b = s.split("-")
            return int(a), int(b) + 1

        reps.append({
            "id": rep.get("id"), "bandwidth": int(rep.get("bandwidth")), "codec": rep.get("codecs"),
            "width": int(rep.get("width")), "height": int(rep.get("height")), "file": base.text,
            "timescale": int(sl.get("timescale")), "duration": int(sl.get("duration")),
            "init": rng(init.get("range")),
            "segments": [rng(u.get("mediaRange")) for u in sl.findall("d:SegmentURL", ns)]})
    return {"duration": root.get("mediaPresentationDuration"), "representations": reps}
