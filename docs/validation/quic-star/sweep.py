"""QUIC* validation sweep: bottleneck loss x unreliable share, one QUIC Cubic flow for 60 s.

    .venv/bin/python docs/validation/quic-star/sweep.py [OUT_DIR]

Writes the scenarios from star.toml.in into OUT_DIR (default results/quic-star), runs each with
`qoelab run` and prints the table of docs/models/transport-quic.md ("Partial reliability").
"""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LOSSES = ["0%", "1%", "2%", "5%"]
FRACTIONS = ["0.0", "0.5", "1.0"]


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    template = open(os.path.join(HERE, "star.toml.in")).read()
    qoelab = os.path.join(os.path.dirname(sys.executable), "qoelab")
    print("| loss | unreliable | goodput (Mbit/s) | retransmitted bytes | unreliable sent | unreliable lost "
          "| hole bytes | congestion events |")
    print("|---|---|---|---|---|---|---|---|")
    for loss in LOSSES:
        for frac in FRACTIONS:
            name = f"loss{loss[:-1]}-u{frac}"
            text = template.replace("@LOSS@", loss).replace("@FRAC@", frac).replace("@NAME@", name)
            scn = os.path.join(out, f"{name}.toml")
            with open(scn, "w") as f:
                f.write(text)
            run_dir = os.path.join(out, name)
            subprocess.run([qoelab, "run", scn, "--out", run_dir, "--force"], check=True,
                           stdout=subprocess.DEVNULL)
            with open(os.path.join(run_dir, "summary.json")) as f:
                [fl] = json.load(f)["flows"]
            print(f"| {loss} | {frac} | {fl['goodput_bps'] / 1e6:.3f} | {fl['retransmitted_bytes']:,} "
                  f"| {fl['unreliable_bytes_sent']:,} | {fl['unreliable_bytes_lost']:,} | {fl['hole_bytes']:,} "
                  f"| {fl['fast_recoveries']} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results/quic-star")
