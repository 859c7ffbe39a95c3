"""Generated sources that behave like the genres of real video (the ``hd`` corpus, docs/corpus.md).

Minerva's Table 1 lists the genres of its 19 videos (aerial, nature, gaming livestream, cooking, GoPro,
soccer, action trailer, animated music video, animated shorts, tornado, cat video, news vlog, lecture,
game trailers, music video, product ad, news documentary) and Figure 1 shows their VMAF curves: animation
flat and high, sports and nature steep. No media can be downloaded here, so each genre is approximated by
what makes it easy or hard for an encoder at a 1080p display:

* **spatial detail** (fine texture: foliage, grass, fur, film grain) is lost by the low-resolution rungs,
  which makes the curve steep;
* **predictable motion** (camera pans of a still scene) costs few bits at the top rung; **unpredictable
  change** (temporal grain, rain, particles, cellular automata, hard cuts, zooms that resample every
  frame) costs bits at every rung and keeps the top rung below VMAF 95;
* **flat colour with sharp edges** (animation, slides) survives downscaling and is cheap.

Every graph is made of ffmpeg's own generators and filters with fixed seeds (``perlin`` with
``random_mode=seed``, ``noise`` with ``all_seed``), renders deterministically for one ffmpeg build, and
is cheap at 1920x1080: textures are rendered once as a still (``perlin`` is slow) and moved by ``crop``,
``zoompan`` or ``overlay``; animated noise fields are rendered at a fraction of the size and scaled up.
"""

from __future__ import annotations


def _font():
    from qoelab.content.sources import _esc, _font as f

    p = f()
    return _esc(p) if p else None


def _still(gen: str) -> str:
    """One frame of a generator, looped forever."""
    return f"{gen},trim=end_frame=1,loop=loop=-1:size=1:start=0,setpts=N/FRAME_RATE/TB"


def _texture(w, h, fps, seed, octaves=6, persistence=0.6, scale=1.0, hue=None, sat=0.5, grain=0, light=None,
             post=None):
    """A still texture: multi-octave Perlin noise (seeded), optionally tinted and with static pixel detail."""
    g = (f"perlin=s={w}x{h}:r={fps}:octaves={octaves}:persistence={persistence}:xscale={scale}:"
         f"yscale={scale}:random_mode=seed:random_seed={seed}")
    g += ",trim=end_frame=1,format=yuv420p"
    if grain:
        g += f",noise=alls={grain}:allf=u:all_seed={seed + 1}"  # one frame: static detail
    if hue is not None:
        g += f",colorize=hue={hue}:saturation={sat}:lightness={0.5 if light is None else light}:mix=0.6"
    if post:
        g += "," + post
    return g + ",loop=loop=-1:size=1:start=0,setpts=N/FRAME_RATE/TB"


def _pan(w, h, vx, vy, ax=0, ay=0, fx=0.0, fy=0.0, margin=None):
    """crop a (w, h) window that moves at (vx, vy) px/s (wrapping inside the margin) plus a sinusoid."""
    mx, my = margin or (w // 2, h // 2)
    x = f"mod({vx}*t+{ax}*sin({fx}*t)+{mx * 4}\\,{mx})"
    y = f"mod({vy}*t+{ay}*sin({fy}*t)+{my * 4}\\,{my})"
    return f"crop={w}:{h}:x='{x}':y='{y}'"


def _text(font, lines) -> str:
    """`,drawtext=...` filters, one per (text, size, colour, x, y); "" when no font is installed."""
    if not font:
        return ""
    return "".join(f",drawtext=fontfile='{font}':text='{t}':fontsize={size}:fontcolor={color}:x={x}:y={y}"
                   for t, size, color, x, y in lines)


def _ticker(font, w, h, text, y, size, speed, color="white"):
    return _text(font, [(text, size, color, f"'{w}-mod(t*{speed}\\,{w + len(text) * size})'", y)])


# ----------------------------------------------------------------------------------------------- genres

def g_lecture(w, h, fps, dur):
    title = "Lecture %{eif\\:trunc(t/12)+1\\:d}\\: queues and fairness"
    txt = _text(_font(), [(title, h // 14, "white", w // 16, h // 10),
                          ("- a bottleneck shared by video flows", h // 22, "white@0.9", w // 12, h // 3),
                          ("- weights from utilities", h // 22, "white@0.9", w // 12, h // 3 + h // 12)])
    sw, sh = w // 5 // 2 * 2, h // 4 // 2 * 2
    return (f"color=c=#1d2b4a:s={w}x{h}:r={fps},format=yuv420p{txt}[bg];"
            + _texture(sw, sh, fps, 11, octaves=3, hue=25, sat=0.35) + ","
            + f"crop={sw * 3 // 4}:{sh}:x='{sw // 8}+{sw // 16}*sin(t*0.9)':y=0[sp];"
            f"[bg][sp]overlay=x={w - sw}:y={h - sh - h // 20}")


def g_cartoon(w, h, fps, dur):
    boxes = []
    cols = ["#f0c020", "#e04050", "#40c070", "#ffffff", "#8050d0", "#f08030"]
    for i, c in enumerate(cols):
        bw, bh = w // (8 + i), h // (5 + i % 3)
        x = f"{w // 2}+{w // 3}*sin(t*{0.4 + 0.13 * i:.2f}+{i})-{bw // 2}"
        y = f"{h // 2}+{h // 4}*cos(t*{0.3 + 0.11 * i:.2f}+{2 * i})-{bh // 2}"
        boxes.append(f"drawbox=x='{x}':y='{y}':w={bw}:h={bh}:c={c}:t=fill,"
                     f"drawbox=x='{x}':y='{y}':w={bw}:h={bh}:c=#101010:t={max(2, h // 180)}")
    return (f"color=c=#6cb8f0:s={w}x{h}:r={fps},format=yuv420p,"
            f"drawbox=x=0:y={h * 2 // 3}:w={w}:h={h}:c=#58a848:t=fill,"
            f"drawbox=x='{w // 8}+{w // 40}*sin(t/3)':y={h // 10}:w={h // 6}:h={h // 6}:c=#fff070:t=fill,"
            + ",".join(boxes))


def g_animated_mv(w, h, fps, dur):
    cell = 12
    return (f"life=s={w // cell}x{h // cell}:r={fps}:mold=6:ratio=0.08:seed=21:"
            f"life_color=#f0f0ff:death_color=#3040a0:mold_color=#c03080,"
            f"scale={w}:{h}:flags=neighbor,format=yuv420p,gblur=sigma=2,hue=h='20*t'")


def g_news(w, h, fps, dur):
    font = _font()
    aw, ah = w // 3 // 2 * 2, h * 2 // 3 // 2 * 2
    return (_texture(w, h, fps, 31, octaves=4, scale=0.5, hue=210, sat=0.3) + ",gblur=sigma=6[bg];"
            + _texture(aw, ah, fps, 32, octaves=5, hue=20, sat=0.4, grain=8) + ","
            f"crop={aw - aw // 16}:{ah - ah // 36}:x='{aw // 32}+{aw // 53}*sin(t*1.1)+{aw // 160}*sin(t*5.3)':"
            f"y='{ah // 72}+{ah // 120}*sin(t*0.7)'[an];"
            f"[bg][an]overlay=x={w // 2 - aw // 2}:y={h - ah},"
            f"drawbox=x=0:y={h - h // 8}:w={w}:h={h // 8}:c=#a01010:t=fill"
            + _ticker(font, w, h, "BREAKING  qoelab measures the fairness of video flows  +++  markets  +++  weather",
                      h - h // 10, h // 22, w // 6))


def g_cooking(w, h, fps, dur):
    W2, H2 = w * 3 // 2 // 2 * 2, h * 3 // 2 // 2 * 2
    n = int(dur * fps) + fps
    ow = w // 6 // 2 * 2
    return (_texture(W2, H2, fps, 41, octaves=7, persistence=0.7, hue=30, sat=0.5, grain=14)
            + f",zoompan=z='1.15+0.12*sin(on/{fps * 7})':x='iw/2-(iw/zoom/2)+{w // 10}*sin(on/{fps * 9})':"
              f"y='ih/2-(ih/zoom/2)':d={n}:s={w}x{h}:fps={fps}[bg];"
            + _texture(ow, ow, fps, 42, octaves=5, hue=5, sat=0.7, grain=10) + "[o];"
            f"[bg][o]overlay=x='{w // 2}+{w // 4}*sin(t*1.7)':y='{h // 2}+{h // 5}*sin(t*2.3)'")


def g_nature(w, h, fps, dur):
    W2, H2 = w * 3 // 2 // 2 * 2, h * 3 // 2 // 2 * 2
    return (_texture(W2, H2, fps, 51, octaves=8, persistence=0.8, scale=2.5, hue=100, sat=0.6, grain=45)
            + "," + _pan(w, h, 37, 5, ax=9, fx=0.5, margin=(W2 - w, H2 - h)))


def g_aerial(w, h, fps, dur):
    n = int(dur * fps) + fps
    return (_texture(w * 2, h * 2, fps, 61, octaves=8, persistence=0.65, scale=2.0, hue=80, sat=0.35, grain=10)
            + f",zoompan=z='1.1+0.5*on/{n}':x='iw/2-(iw/zoom/2)+{w // 6}*on/{n}':"
              f"y='ih/2-(ih/zoom/2)':d={n}:s={w}x{h}:fps={fps}")


def g_soccer(w, h, fps, dur):
    W2, H2 = w * 2, h * 3 // 2 // 2 * 2
    players = []
    for i in range(14):
        c = "#f0f0f0" if i % 2 else "#d02020"
        pw, ph = max(4, w // 96), max(8, h // 27)
        x = f"{(i * 137) % w}+{w // 5}*sin(t*{0.5 + 0.07 * i:.2f}+{i})"
        y = f"{h // 4 + (i * 71) % (h // 2)}+{h // 8}*cos(t*{0.4 + 0.05 * i:.2f}+{3 * i})"
        players.append(f"drawbox=x='{x}':y='{y}':w={pw}:h={ph}:c={c}:t=fill")
    return (_texture(W2, H2, fps, 71, octaves=7, persistence=0.7, scale=3.0, hue=110, sat=0.55, grain=70,
                     post=f"drawgrid=w={w // 6}:h={H2}:t={w // 12}:c=white@0.06") + ","
            + _pan(w, h, 260, 8, ax=90, fx=0.9, margin=(W2 - w, H2 - h)) + ","
            + ",".join(players) + ",noise=alls=5:allf=t:all_seed=72")


def g_gopro(w, h, fps, dur):
    W2, H2 = w * 3 // 2 // 2 * 2, h * 3 // 2 // 2 * 2
    return (_texture(W2, H2, fps, 81, octaves=8, persistence=0.7, scale=2.0, hue=35, sat=0.45, grain=40)
            + "," + _pan(w, h, 220, 40, ax=40, ay=30, fx=6.1, fy=7.7, margin=(W2 - w, H2 - h))
            + ",noise=alls=2:allf=t:all_seed=82")


def g_action(w, h, fps, dur):
    piece = 2.0
    n = max(1, int(round(dur / piece + 0.4999)))
    W2, H2 = w * 3 // 2 // 2 * 2, h * 3 // 2 // 2 * 2
    scenes = [(91, 20, 0.6), (92, 200, 0.4), (93, 0, 0.1), (94, 330, 0.5)]
    chains = []
    for i in range(n):
        seed, hue, sat = scenes[i % len(scenes)]
        vx = 300 if i % 2 else -260
        chains.append(_texture(W2, H2, fps, seed, octaves=7, persistence=0.7, scale=1.5, hue=hue, sat=sat,
                               grain=16)
                      + "," + _pan(w, h, vx, 60, ax=30, fx=5.0, margin=(W2 - w, H2 - h))
                      + f",trim=duration={piece},setpts=PTS-STARTPTS,setsar=1[p{i}]")
    return (";".join(chains) + ";" + "".join(f"[p{i}]" for i in range(n)) + f"concat=n={n}:v=1:a=0,"
            "noise=alls=2:allf=t:all_seed=95")


def g_storm(w, h, fps, dur):
    lw, lh = w // 4 // 2 * 2, h // 4 // 2 * 2
    return (f"perlin=s={lw}x{lh}:r={fps}:octaves=5:persistence=0.6:tscale=0.35:random_mode=seed:random_seed=101,"
            f"scale={w}:{h}:flags=bicubic,format=yuv420p,colorize=hue=220:saturation=0.15:lightness=0.45:mix=0.7,"
            f"noise=alls=3:allf=t:all_seed=102")


def g_gaming(w, h, fps, dur):
    hud = _text(_font(), [("HP 87  AMMO %{eif\\:mod(trunc(t*3)\\,30)\\:d}  SCORE 1024", h // 24, "yellow", w // 40,
                           h // 30)])
    return (f"testsrc2=s={w * 3 // 2 // 2 * 2}x{h * 3 // 2 // 2 * 2}:r={fps},"
            + _pan(w, h, 180, 30, ax=80, fx=1.3, margin=(w // 2, h // 2)) + ",format=yuv420p" + hud)


def g_music_video(w, h, fps, dur):
    return (f"cellauto=s={w // 4}x{h // 4}:r={fps}:rule=30:random_seed=111:scroll=1:full=1,"
            f"scale={w}:{h}:flags=neighbor,format=yuv420p,hue=h='60*t':s='1+sin(t*4)',"
            f"eq=brightness='0.15*sin(t*7)':eval=frame")


def g_cat(w, h, fps, dur):
    fw, fh = w // 3 // 2 * 2, h // 3 // 2 * 2
    return (_texture(w, h, fps, 121, octaves=3, scale=0.7, hue=40, sat=0.25) + ",gblur=sigma=10[bg];"
            + _texture(fw, fh, fps, 122, octaves=6, persistence=0.8, scale=4.0, hue=28, sat=0.5, grain=40) + "[cat];"
            f"[bg][cat]overlay=x='{w // 3}+{w // 8}*sin(t*0.8)':y='{h // 3}+{h // 20}*sin(t*1.9)'")


def g_documentary(w, h, fps, dur):
    W2, H2 = w * 5 // 4 // 2 * 2, h * 5 // 4 // 2 * 2
    return (_texture(W2, H2, fps, 131, octaves=5, persistence=0.55, scale=1.0, hue=30, sat=0.3)
            + "," + _pan(w, h, 9, 3, margin=(W2 - w, H2 - h)) + ",noise=alls=2:allf=t:all_seed=132")


def g_crowd(w, h, fps, dur):
    return (f"life=s={w // 5}x{h // 5}:r={fps}:mold=10:ratio=0.15:seed=141:"
            f"life_color=#f0d0a0:death_color=#202030:mold_color=#603020,"
            f"scale={w}:{h}:flags=bicubic,gblur=sigma=1.5,format=yuv420p,noise=alls=2:allf=t:all_seed=142")


def g_product_ad(w, h, fps, dur):
    pw = h // 2 // 2 * 2
    return (f"color=c=#f4f4f4:s={w}x{h}:r={fps},format=yuv420p[bg];"
            f"testsrc2=s={pw}x{pw}:r={fps},format=yuv420p,rotate=a='t*0.4':c=#f4f4f4:ow={pw}:oh={pw}[p];"
            f"[bg][p]overlay=x={w // 2 - pw // 2}:y={h // 2 - pw // 2}")


def g_game_trailer(w, h, fps, dur):
    return (f"mandelbrot=s={w // 3}x{h // 3}:r={fps}:maxiter=180:start_scale=2.5:end_scale=0.05:"
            f"end_pts={int(dur * fps)}:outer=normalized_iteration_count,"
            f"scale={w}:{h}:flags=bicubic,format=yuv420p,noise=alls=5:allf=t:all_seed=151")


#: name -> (graph, Minerva Table 1 genre it stands for, expected difficulty, description, filters used)
GENRES = {
    "lecture": (g_lecture, "lecture", "low", "slide text on a flat background, a small speaker inset", ("drawtext", "perlin", "colorize", "overlay")),
    "cartoon": (g_cartoon, "animated short", "low", "flat-colour shapes with outlines moving over sky and ground", ("drawbox",)),
    "product-ad": (g_product_ad, "product ad", "low", "a test-pattern 'product' rotating slowly on white", ("testsrc2", "rotate", "overlay")),
    "news": (g_news, "news vlog", "low", "blurred studio backdrop, a textured anchor with small motion, a scrolling ticker", ("perlin", "colorize", "gblur", "noise", "overlay", "drawbox", "drawtext")),
    "animated-mv": (g_animated_mv, "animated music video", "medium", "large soft-edged flat cells of a game of life, hue cycling", ("life", "gblur", "hue")),
    "cat": (g_cat, "cat video", "medium", "a furry textured object moving slowly over a soft background", ("perlin", "colorize", "gblur", "noise", "overlay")),
    "documentary": (g_documentary, "news documentary", "medium", "a slow pan over a soft scene with film grain", ("perlin", "colorize", "noise", "crop")),
    "cooking": (g_cooking, "cooking", "medium", "slow zoom over a detailed table top, an object moving over it", ("perlin", "colorize", "noise", "zoompan", "overlay")),
    "gaming": (g_gaming, "gaming livestream", "medium", "a sharp-edged game scene panning fast, a HUD", ("testsrc2", "crop", "drawtext")),
    "aerial": (g_aerial, "aerial", "high", "a slow zoom into a detailed landscape texture", ("perlin", "colorize", "noise", "zoompan")),
    "nature": (g_nature, "nature", "high", "a pan over dense foliage (fine static detail)", ("perlin", "colorize", "noise", "crop")),
    "soccer": (g_soccer, "soccer", "high", "a fast pan over textured grass with moving players and light grain", ("perlin", "colorize", "noise", "drawgrid", "crop", "drawbox")),
    "gopro": (g_gopro, "GoPro ad", "high", "a fast, shaking camera over a detailed texture", ("perlin", "colorize", "noise", "crop")),
    "game-trailer": (g_game_trailer, "game trailer", "high", "a continuous fractal zoom with light grain", ("mandelbrot", "noise")),
    "action": (g_action, "action trailer", "extreme", "hard cuts every 2 s between fast pans over detailed scenes, grain", ("perlin", "colorize", "noise", "crop", "concat")),
    "music-video": (g_music_video, "music video", "extreme", "a strobing, hue-cycling cellular automaton", ("cellauto", "hue", "eq")),
    "storm": (g_storm, "tornado", "extreme", "swirling clouds (animated Perlin noise) under heavy rain-like grain", ("perlin", "colorize", "noise")),
    "crowd": (g_crowd, "concert crowd / action clip", "extreme", "a dense crowd of small soft-edged moving particles", ("life", "gblur", "noise")),
}
