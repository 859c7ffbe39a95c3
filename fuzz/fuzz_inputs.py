"""Coverage-guided fuzz target (atheris/libFuzzer) for qoelab's input loaders.

One input = one file for one loader, chosen by the first byte: the scenario loader (TOML ->
normalized config -> the core builds the simulation without running it), the network trace
parsers (Mahimahi, Sabre JSON, Pensieve, VOXEL, auto-detect), the video loaders (MPD, HLS, Sabre
movie JSON, Video JSON) and the flow-size CDF parser. The only acceptable failure is
qoelab.errors.InputError (the one-line error of the CLI); any other exception is a crash, and
libFuzzer reports hangs (-timeout) and memory blow-ups (-rss_limit_mb).

    cp -r fuzz/seeds /tmp/c && .venv/bin/python fuzz/fuzz_inputs.py -seed=1 -runs=2000 /tmp/c   # smoke
                                      # (tests/test_fuzz.py; libFuzzer adds new inputs to the first folder)
    .venv/bin/python fuzz/fuzz_inputs.py -timeout=20 -rss_limit_mb=3072 -max_total_time=1800 \\
        -artifact_prefix=fuzz/crashes/ fuzz/corpus fuzz/seeds                 # long run (docs/fuzzing.md)
"""

import os
import sys
import tempfile

import atheris

with atheris.instrument_imports(include=["qoelab", "tomllib"]):
    from qoelab import flowsizes, scenario, traces
    from qoelab.errors import InputError
    from qoelab.video import loaders

# One scratch folder per user, reused by every run: libFuzzer ends the process with exit(), which
# runs no Python cleanup, so a folder per run would stay behind. Each input's file is removed after
# it was loaded.
_DIR = os.path.join(tempfile.gettempdir(), f"qoelab-fuzz-{os.getuid()}")
os.makedirs(_DIR, exist_ok=True)

# (file name, loader)
TARGETS = [
    ("s.toml", lambda p: scenario.load(p)),
    ("t.down", lambda p: traces.load_trace(p, "mahimahi")),
    ("n.json", lambda p: traces.load_trace(p, "sabre")),
    ("p.txt", lambda p: traces.load_trace(p, "pensieve")),
    ("v.sum", lambda p: traces.load_trace(p, "voxel")),
    ("auto.trace", lambda p: traces.load_trace(p)),
    ("m.mpd", lambda p: loaders.load_video(p)),
    ("h.m3u8", lambda p: loaders.load_video(p)),
    ("movie.json", lambda p: loaders.load_video(p, "sabre")),
    ("video.json", lambda p: loaders.load_video(p, "video")),
    ("c.cdf", lambda p: flowsizes.load_cdf(p)),
]


def one_input(data: bytes) -> None:
    if not data:
        return
    name, load = TARGETS[data[0] % len(TARGETS)]
    path = os.path.join(_DIR, f"{os.getpid()}-{name}")
    with open(path, "wb") as f:
        f.write(data[1:])
    try:
        load(path)
    except InputError as e:
        msg = str(e)
        assert "\n" not in msg.strip(), f"multi-line error: {msg!r}"
    finally:
        os.unlink(path)


def main(argv):
    atheris.Setup(argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
