"""Pieces shared by the command-line modules (:mod:`qoelab.cli` and the command groups
:mod:`qoelab.content.cli`, :mod:`qoelab.reproduce.cli`), which therefore do not import each other."""

from __future__ import annotations

import argparse
import re

EXIT_INPUT = 2       # bad input: one line naming the file/key and what was expected
EXIT_SIGINT = 130    # 128 + SIGINT (Ctrl-C)
EXIT_SIGTERM = 143   # 128 + SIGTERM


class Parser(argparse.ArgumentParser):
    """argparse with the house rule for bad arguments: one line, exit 2. A value that starts with
    a minus and a digit (``--rate -1Mbps``, ``--start -5s``) is read as the option's value and
    checked as such; argparse took it for an option ("expected one argument")."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # argparse's own test accepts only plain negative numbers; no option here starts with "-<digit>"
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message):
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message}\n")


def int_at_least(minimum: int, what: str = "an integer", maximum: int | None = None):
    """An argparse ``type``: an integer >= ``minimum`` (and <= ``maximum`` if given); otherwise one
    line naming what was expected."""
    bound = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"

    def conv(s):
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what} {bound}, found {s!r}") from None
        if v < minimum or (maximum is not None and v > maximum):
            raise argparse.ArgumentTypeError(f"expected {what} {bound}, found {s!r}")
        return v
    return conv


def nonempty(what: str):
    """An argparse ``type``: a string that is not empty (an unset shell variable gave "" and an empty
    path named the current directory)."""
    def conv(s):
        if not s.strip():
            raise argparse.ArgumentTypeError(f"expected {what}, found an empty string")
        return s
    return conv


def max_workers() -> int:
    """The most local worker processes a --jobs may ask for: 4 per CPU (simulations are CPU-bound;
    more only costs memory: a worker of `reproduce sprint --quick` holds 190-280 MB)."""
    import os
    return 4 * (os.cpu_count() or 1)


def worker_count(s):
    """An argparse ``type`` for --jobs: 1 .. :func:`max_workers`."""
    return int_at_least(1, "a number of worker processes", max_workers())(s)


def float_in(minimum: float, maximum: float, what: str = "a number"):
    """An argparse ``type``: a finite number with ``minimum`` < value <= ``maximum``; otherwise one
    line naming what was expected."""
    import math

    def conv(s):
        try:
            v = float(s)
        except ValueError:
            v = math.nan
        if not (math.isfinite(v) and minimum < v <= maximum):
            raise argparse.ArgumentTypeError(f"expected {what} > {minimum:g} and <= {maximum:g}, found {s!r}")
        return v
    return conv
