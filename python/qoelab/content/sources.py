"""Built-in generated sources of different content complexity (ffmpeg lavfi graphs).

Every source is a pure function of (width, height, fps, duration): an ffmpeg filter graph made only of
ffmpeg's own generators and filters with fixed seeds, so the same ffmpeg build renders the same frames
(tested). ffmpeg's ``gradients`` generator is not used: it is not deterministic even with a fixed seed.
``gen:<name>`` names a built-in source anywhere a SOURCE path is accepted.

The catalogue spans the range of "genres" of the Minerva paper's Figure 1: from still slides (a few kbit/s
suffice) to temporal noise and cellular automata (no bitrate on the ladder is enough).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

FONT_CANDIDATES = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/Library/Fonts/Arial.ttf",
)


def _font() -> str | None:
    for f in FONT_CANDIDATES:
        if os.path.isfile(f):
            return f
    return None


def _esc(path: str) -> str:
    return path.replace("\\", "\\\\").replace(":", "\\:").replace("'", "\\'")


@dataclass(frozen=True)
class Source:
    name: str
    complexity: str  # low / medium / high / extreme (expected, documented)
    description: str
    needs: tuple[str, ...]  # ffmpeg filters the graph uses

    def graph(self, w: int, h: int, fps: int, dur: float) -> str:
        return _GRAPHS[self.name](w, h, fps, dur)


def _still(gen: str, w: int, h: int) -> str:
    """One frame of a generator, looped forever (a still image)."""
    return f"{gen},trim=end_frame=1,loop=loop=-1:size=1:start=0,setpts=N/FRAME_RATE/TB"


def _g_slides(w, h, fps, dur):
    font = _font()
    txt = ""
    if font:
        txt = (f",drawtext=fontfile='{_esc(font)}':text='Slide %{{eif\\:trunc(t/10)+1\\:d}}':"
               f"fontsize={h // 8}:fontcolor=white:x={w // 12}:y={h // 10},"
               f"drawtext=fontfile='{_esc(font)}':text='qoelab content pipeline':fontsize={h // 16}:"
               f"fontcolor=white@0.8:x={w // 12}:y={h // 3}")
    return f"colorspectrum=s={w}x{h}:r={fps}:type=black,eq=brightness=-0.25,format=yuv420p{txt}"


def _g_talking_head(w, h, fps, dur):
    fw, fh = w // 4 // 2 * 2, h // 2 // 2 * 2
    return (f"colorspectrum=s={w}x{h}:r={fps}:type=white,eq=saturation=0.4,format=yuv420p[bg];"
            f"testsrc2=s={fw}x{fh}:r={fps},hue=s=0.3,format=yuv420p[fg];"
            f"[bg][fg]overlay=x='{w // 2 - fw // 2}+{w // 40}*sin(t*1.3)':y='{h // 3}+{h // 60}*sin(t*2.1)'")


def _g_gradients(w, h, fps, dur):
    return f"colorspectrum=s={w}x{h}:r={fps}:type=all,hue=h='9*t',format=yuv420p"


def _g_testsrc2(w, h, fps, dur):
    return f"testsrc2=s={w}x{h}:r={fps},format=yuv420p"


def _g_mandelbrot(w, h, fps, dur):
    # rendered at half size (mandelbrot is slow) and scaled up
    return (f"mandelbrot=s={w // 2}x{h // 2}:r={fps}:maxiter=300:start_scale=3:end_scale=0.02:"
            f"end_pts={int(dur * fps)}:outer=normalized_iteration_count,scale={w}:{h}:flags=bicubic,format=yuv420p")


def _g_life(w, h, fps, dur):
    return (f"life=s={w // 4}x{h // 4}:r={fps}:mold=8:ratio=0.12:seed=42:"
            f"life_color=#30E060:death_color=#C03020:mold_color=#102040,"
            f"scale={w}:{h}:flags=neighbor,format=yuv420p")


def _g_cellauto(w, h, fps, dur):
    return (f"cellauto=s={w // 2}x{h // 2}:r={fps}:rule=110:random_seed=5:scroll=1:full=1,"
            f"scale={w}:{h}:flags=neighbor,format=yuv420p")


def _g_noise(w, h, fps, dur):
    return (f"colorspectrum=s={w}x{h}:r={fps}:type=all,hue=h='4*t',format=yuv420p,"
            f"noise=alls=28:allf=t+u:all_seed=99")


def _g_scrolling_text(w, h, fps, dur):
    font = _font()
    if not font:  # no font: scroll a static test pattern instead
        return _still(f"testsrc=s={w}x{h * 2}:r={fps}", w, h) + f",scroll=v=0.002,crop={w}:{h}:0:0,format=yuv420p"
    lines = [f"{i:03d}  qoelab credits line {i}  ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789" for i in range(12)]
    parts = []
    for i, ln in enumerate(lines):
        parts.append(f"drawtext=fontfile='{_esc(font)}':text='{ln}':fontsize={h // 18}:fontcolor=white:"
                     f"x={w // 20}:y='{h}+{i * h // 10}-mod(t*{h // 8}\\,{h + 12 * h // 10})'")
    return f"color=c=#101018:s={w}x{h}:r={fps},format=yuv420p," + ",".join(parts)


def _g_zoompan(w, h, fps, dur):
    n = int(dur * fps) + fps
    return (f"mandelbrot=s={2 * w}x{2 * h}:r=1:start_scale=0.6:start_x=-0.75:start_y=0.1:maxiter=200,"
            f"trim=end_frame=1,format=yuv420p,"
            f"zoompan=z='1.2+0.6*sin(on/{fps * 6})':x='iw/2-(iw/zoom/2)+{w // 4}*sin(on/{fps * 4})':"
            f"y='ih/2-(ih/zoom/2)+{h // 4}*cos(on/{fps * 5})':d={n}:s={w}x{h}:fps={fps}")


def _g_camera_shake(w, h, fps, dur):
    pw, ph = w + w // 8, h + h // 8
    return (_still(f"testsrc2=s={pw}x{ph}:r={fps}", pw, ph)
            + f",crop={w}:{h}:x='{w // 16}+{w // 24}*sin(t*7.3)+{w // 60}*sin(t*23.1)':"
              f"y='{h // 16}+{h // 24}*sin(t*9.7)+{h // 60}*cos(t*19.3)',format=yuv420p")


def _g_scene_cuts(w, h, fps, dur):
    piece = 2.5
    n = max(1, int(round(dur / piece + 0.4999)))
    gens = [
        f"testsrc2=s={w}x{h}:r={fps}",
        f"colorspectrum=s={w}x{h}:r={fps}:type=all,hue=h='40*t'",
        f"sierpinski=s={w}x{h}:r={fps}:seed=8:jump=50",
        f"life=s={w // 4}x{h // 4}:r={fps}:mold=4:seed=9,scale={w}:{h}:flags=neighbor",
        f"zoneplate=s={w}x{h}:r={fps}:kt2=3:kx2=110:ky2=80",
        f"smptehdbars=s={w}x{h}:r={fps}",
    ]
    chains = []
    for i in range(n):
        chains.append(f"{gens[i % len(gens)]},trim=duration={piece},setpts=PTS-STARTPTS,format=yuv420p,setsar=1[p{i}]")
    return ";".join(chains) + ";" + "".join(f"[p{i}]" for i in range(n)) + f"concat=n={n}:v=1:a=0"


def _g_zoneplate(w, h, fps, dur):
    return f"zoneplate=s={w}x{h}:r={fps}:kt2=2:kx2=60:ky2=40:kt=1,format=yuv420p"


def _g_sierpinski(w, h, fps, dur):
    return f"sierpinski=s={w}x{h}:r={fps}:seed=4:jump=30:type=triangle,format=yuv420p"


_GRAPHS = {
    "slides": _g_slides,
    "talking-head": _g_talking_head,
    "gradients": _g_gradients,
    "testsrc2": _g_testsrc2,
    "zoompan": _g_zoompan,
    "scrolling-text": _g_scrolling_text,
    "camera-shake": _g_camera_shake,
    "scene-cuts": _g_scene_cuts,
    "mandelbrot": _g_mandelbrot,
    "sierpinski": _g_sierpinski,
    "life": _g_life,
    "cellauto": _g_cellauto,
    "zoneplate": _g_zoneplate,
    "noise": _g_noise,
}

SOURCES: dict[str, Source] = {s.name: s for s in [
    Source("slides", "low", "still slides (dark colour spectrum + text), the slide number changes every 10 s", ("colorspectrum", "eq", "drawtext")),
    Source("talking-head", "low", "static background, a small moving figure in the middle", ("colorspectrum", "eq", "testsrc2", "overlay")),
    Source("gradients", "low", "smooth colour spectrum with slowly rotating hue", ("colorspectrum", "hue")),
    Source("testsrc2", "medium", "ffmpeg test pattern with moving parts and counters", ("testsrc2",)),
    Source("zoompan", "medium", "pan and zoom over a detailed still image (a rendered fractal)", ("mandelbrot", "zoompan")),
    Source("scrolling-text", "medium", "credits-like text scrolling upwards", ("drawtext",)),
    Source("camera-shake", "high", "a detailed still under camera shake", ("testsrc2", "crop", "loop")),
    Source("scene-cuts", "high", "a different generator every 2.5 s (hard cuts)", ("testsrc2", "colorspectrum", "hue", "sierpinski", "life", "zoneplate", "smptehdbars", "concat")),
    Source("mandelbrot", "high", "continuous zoom into the Mandelbrot set", ("mandelbrot",)),
    Source("sierpinski", "high", "jumping Sierpinski fractal", ("sierpinski",)),
    Source("life", "extreme", "Conway's game of life with mould, sharp cells", ("life",)),
    Source("cellauto", "extreme", "scrolling rule-110 cellular automaton", ("cellauto",)),
    Source("zoneplate", "extreme", "moving zone plate (all spatial frequencies)", ("zoneplate",)),
    Source("noise", "extreme", "temporal film-grain noise over a hue-rotating spectrum", ("colorspectrum", "hue", "noise")),
]}


def _register_genres() -> None:
    from qoelab.content import genres

    for name, (fn, genre, cx, desc, needs) in genres.GENRES.items():
        _GRAPHS[name] = fn
        SOURCES[name] = Source(name, cx, f"{desc} (stands for: {genre})", needs)


_register_genres()


def parse(spec: str) -> Source | None:
    """``gen:<name>`` -> Source; anything else -> None (a file path)."""
    if spec.startswith("gen:"):
        return SOURCES.get(spec[4:])
    return None
