"""Pieces shared by the command-line modules (:mod:`qoelab.cli` and the command groups
:mod:`qoelab.content.cli`, :mod:`qoelab.reproduce.cli`), which therefore do not import each other."""

from __future__ import annotations

import argparse

EXIT_INPUT = 2       # bad input: one line naming the file/key and what was expected
EXIT_SIGINT = 130    # 128 + SIGINT (Ctrl-C)
EXIT_SIGTERM = 143   # 128 + SIGTERM


class Parser(argparse.ArgumentParser):
    """argparse with the house rule for bad arguments: one line, exit 2."""

    def error(self, message):
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message}\n")


def int_at_least(minimum: int, what: str = "an integer"):
    """An argparse ``type``: an integer >= ``minimum``; otherwise one line naming what was expected."""
    def conv(s):
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what} >= {minimum}, found {s!r}") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"expected {what} >= {minimum}, found {s!r}")
        return v
    return conv
