"""A small thread-safe progress bar with ETA on stderr (cost-weighted units)."""

from __future__ import annotations

import sys
import threading
import time


class Progress:
    def __init__(self, total: float, label: str = "", enabled: bool = True, stream=None):
        self.total = max(total, 1e-9)
        self.done = 0.0
        self.label = label
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.t0 = time.monotonic()
        self.lock = threading.Lock()
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()

    def advance(self, units: float, note: str = "") -> None:
        with self.lock:
            self.done += units
            if not self.enabled:
                return
            frac = min(1.0, self.done / self.total)
            el = time.monotonic() - self.t0
            eta = el * (1 - frac) / frac if frac > 0 else float("nan")
            bar = "#" * int(frac * 30)
            line = f"{self.label} [{bar:<30}] {frac * 100:5.1f}% {el:6.0f}s elapsed, ETA {eta:5.0f}s {note}"
            if self.tty:
                self.stream.write("\r" + line[:150].ljust(150))
                if frac >= 1.0:
                    self.stream.write("\n")
            else:
                self.stream.write(line + "\n")
            self.stream.flush()
