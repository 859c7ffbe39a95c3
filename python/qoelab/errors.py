"""Errors for bad input.

Every problem with user input (scenario, trace, manifest, movie JSON, playlist, CLI argument)
is raised as :class:`InputError`. The CLI prints ``str(err)`` as one line and exits with code 2;
it never shows a traceback for these.
"""

from __future__ import annotations


class InputError(Exception):
    """Bad input: ``<file>:<where>: expected <expected>, found <found>``.

    ``where`` is a line number (``"12"``), a key path (``"links.bottleneck.rate"``), a byte
    offset or an XML path -- whatever locates the problem best. Any part may be omitted.
    """

    def __init__(self, path: str | None, where: str | None = None, expected: str | None = None,
                 found: str | None = None, message: str | None = None):
        self.path = path
        self.where = where
        self.expected = expected
        self.found = found
        self.message = message
        super().__init__(self.__str__())

    def __str__(self) -> str:
        loc = ":".join(str(p) for p in (self.path, self.where) if p not in (None, ""))
        parts = []
        if self.message:
            parts.append(self.message)
        if self.expected is not None:
            parts.append(f"expected {self.expected}")
        if self.found is not None:
            parts.append(f"found {self.found}")
        body = ", ".join(parts) if parts else "invalid input"
        text = f"{loc}: {body}" if loc else body
        # one line whatever the input holds (a JSON key or a TOML string with a newline in it)
        return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when the process receives SIGTERM or SIGHUP (the CLI installs the
    handler), so that they unwind like Ctrl-C: temporary output is removed, child processes are
    stopped, and the CLI exits with 128 + the signal (143, 129)."""

    def __init__(self, signum: int = 15):
        super().__init__(signum)
        self.signum = signum


def is_interrupt(e: BaseException) -> bool:
    """Ctrl-C, also as the libraries report it when it arrives inside them: DuckDB raises a
    ``RuntimeError("Query interrupted")``, pyarrow an ``ArrowCancelled``."""
    return isinstance(e, KeyboardInterrupt) or type(e).__name__ in ("ArrowCancelled", "InterruptException") or \
        (isinstance(e, RuntimeError) and str(e).startswith("Query interrupted"))


def reraise_interrupt(e: BaseException) -> None:
    """In a handler that turns a library's error into an :class:`InputError`: raise
    KeyboardInterrupt instead when the error is Ctrl-C (exit 130, not "bad input")."""
    if is_interrupt(e):
        raise KeyboardInterrupt from None


def interruptible(fn, *args):
    """``fn(*args)`` for a long call into the core that releases the GIL but cannot see signals: it
    runs in a helper thread while this thread waits in slices of 0.1 s, so that Ctrl-C (and SIGTERM,
    :class:`Terminated`) end the command within a second; the abandoned call ends with the process."""
    import threading
    box: list = []

    def target():
        try:
            box.append((True, fn(*args)))
        except BaseException as e:   # handed to the caller's thread
            box.append((False, e))
    t = threading.Thread(target=target, name="qoelab-core-call", daemon=True)
    t.start()
    while t.is_alive():
        t.join(0.1)
    ok, v = box[0]
    if not ok:
        raise v
    return v


# Python refuses to convert a string of more than this many digits to an int (a guard against
# quadratic-time conversion, `sys.get_int_max_str_digits()`); input holding such a number is bad
# input, not a bug, and no quantity qoelab reads needs more than a few dozen digits.
MAX_INT_DIGITS = 4300


def json_kind(v, obj: str = "an object", bool_values: bool = False) -> str:
    """What a JSON value is, in JSON's words (not Python's type names): null, a boolean (or true /
    false with ``bool_values``), a number, a string, a list, ``obj``."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return ("true" if v else "false") if bool_values else "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, dict):
        return obj
    return type(v).__name__


class _RepeatedKey(Exception):
    pass


def _unique_keys(pairs):
    d = dict(pairs)
    if len(d) != len(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise _RepeatedKey(k)
            seen.add(k)
    return d


def json_input(text: str, path: str | None, what: str = "valid JSON", unique_keys: bool = True):
    """``json.loads`` for user input: syntax errors, a key repeated in one object (JSON parsers keep
    either; this one kept the last, silently), nesting too deep for the parser and integers too long
    to convert are :class:`InputError` naming ``path`` (and the line:column where known).
    ``unique_keys=False`` skips the repeated-key check (files qoelab wrote: a sweep's run records)."""
    import json

    try:
        return json.loads(text, object_pairs_hook=_unique_keys) if unique_keys else json.loads(text)
    except _RepeatedKey as e:
        k = str(e.args[0])
        raise InputError(path, None, what + " with each key once in an object",
                         f"{json.dumps(k[:60])} twice") from None
    except json.JSONDecodeError as e:
        raise InputError(path, f"{e.lineno}:{e.colno}", what, e.msg) from None
    except RecursionError:
        raise InputError(path, None, what, "lists or objects nested too deeply") from None
    except MemoryError:   # (200 MB of "[[],[],...]" is ~20x that in Python objects)
        raise InputError(path, None, what + " that fits in memory",
                         f"{len(text) / 1e6:,.0f} MB of JSON, more than the memory available") from None
    except ValueError as e:  # "Exceeds the limit (4300 digits) for integer string conversion"
        raise digit_limit_error(e, text, path, "numbers", r"[0-9]", column=True) from None

def digit_limit_error(e: ValueError, text: str, path: str | None, what: str, digit: str,
                      column: bool) -> InputError:
    """The InputError for a parser's ``int()`` refusing more than :data:`MAX_INT_DIGITS` digits
    (``e``), located in ``text`` at the first run of that many ``digit`` characters (line, or
    line:column)."""
    import re

    m = re.search(r"value has (\d+) digits", str(e))
    found = f"an integer of {m.group(1)} digits" if m else str(e)
    where = None
    d = re.search(f"{digit}{{{MAX_INT_DIGITS + 1},}}", text)
    if d:
        line = text.count("\n", 0, d.start()) + 1
        where = f"{line}:{d.start() - (text.rfind(chr(10), 0, d.start()) + 1) + 1}" if column else str(line)
    return InputError(path, where, f"{what} of at most {MAX_INT_DIGITS} digits", found)


def int_input(s: str, path: str | None, where: str | None, what: str = "an integer") -> int:
    """``int(s)`` for user input: anything that does not convert (including more than
    :data:`MAX_INT_DIGITS` digits) is an :class:`InputError` naming ``path`` and ``where``."""
    try:
        return int(s)
    except ValueError:
        shown = s if len(s) <= 40 else f"{s[:40]}... ({len(s)} characters)"
        raise InputError(path, where, what, repr(shown)) from None


def not_a_file(path: str) -> str:
    """What stands at ``path`` instead of a regular file, for an error message."""
    import os
    if not os.path.lexists(path):
        return "no such file"
    if not os.path.exists(path):
        return "a dangling symbolic link or a link loop"
    return "a folder" if os.path.isdir(path) else "a device, pipe or socket"


def read_input(path: str, what: str, max_bytes: int = 256 * 2**20) -> bytes:
    """The bytes of input file ``path``: a regular file (a FIFO would block forever, /dev/zero never
    end) of at most ``max_bytes``; anything else is an :class:`InputError` naming ``path``."""
    import os
    import stat

    limit = f"{max_bytes // 2**20} MiB" if max_bytes % 2**20 == 0 else f"{max_bytes:,} bytes"
    if not str(path).strip():   # (an unset shell variable)
        raise InputError(None, None, f"the path of {what}", "an empty string")
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(path, None, f"a regular file ({what})", not_a_file(path))
        if st.st_size > max_bytes:
            raise InputError(path, None, f"{what} of at most {limit}", f"{st.st_size:,} bytes")
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise InputError(path, None, message=f"cannot read {what}: {e.strerror or e}") from None
    if len(data) > max_bytes:   # grew while being read
        raise InputError(path, None, f"{what} of at most {limit}", "more")
    return data
