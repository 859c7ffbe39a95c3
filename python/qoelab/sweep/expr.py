"""The small, safe expression language of sweep files (``[derived]`` values and ``where`` filters).

An expression is a Python-syntax expression over numbers, strings, booleans, the names of the
sweep's columns (axes and derived values) and a few functions; nothing else is evaluated (no
attributes, subscripts, comprehensions or lambdas), so a sweep file cannot run code.

Functions: ``min``, ``max``, ``round``, ``ceil``, ``floor``, ``abs``, ``int``, ``float``, ``str``;
unit conversions ``bps(x)``, ``seconds(x)``, ``bytes(x)`` (a number or a string with a unit, as in
scenario files); ``bdp_bytes(rate, rtt)`` and ``bdp_pkts(rate, rtt, mtu=1500)``; and ``get(key)``,
the value of a dotted scenario key in this run's scenario (after the axes are applied).

Every step is bounded, so that no expression hangs or exhausts memory: integers are at most
:data:`MAX_INT_BITS` bits (about 308 digits, the range of a float), strings and lists at most
:data:`MAX_LEN` characters (as ``str`` would show them); ``**``, ``*`` on strings and lists,
``%`` formatting, ``str`` and ``round`` check their operands before computing, and the result of
every operation is checked. Anything beyond is an :class:`ExprError` saying which limit.
"""

from __future__ import annotations

import ast
import math
import operator
import re

from qoelab import units

_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
        ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}


MAX_INT_BITS = 1024        # integers: |x| < 2**1024 (~1.8e308, the largest float)
MAX_LEN = 10_000           # strings: characters; lists: characters of their str()
MAX_ROUND_DIGITS = 400     # round(x, n): |n| (round(5, -10**9) computes 10**(10**9))
MAX_FMT_WIDTH = 1_000      # "%0999999999d" % 1: widths and precisions of % formatting
MAX_TEXT_SHOWN = 60        # characters of an expression or value quoted in a message


class ExprError(ValueError):
    """A problem with an expression (the caller adds the file and key)."""


def _short(v) -> str:
    """repr(v), cut to MAX_TEXT_SHOWN characters (messages are one line of reasonable length)."""
    if isinstance(v, (str, list, tuple, dict)) and _size(v, 4 * MAX_TEXT_SHOWN) > 4 * MAX_TEXT_SHOWN:
        if isinstance(v, str):
            return repr(v[:MAX_TEXT_SHOWN]) + f"... ({len(v):,} characters)"
        return f"a {type(v).__name__} of {len(v):,} items"
    r = repr(v)
    return r if len(r) <= MAX_TEXT_SHOWN else r[:MAX_TEXT_SHOWN] + "..."


def _size(v, budget: int = MAX_LEN) -> int:
    """About len(str(v)), computed without building it; stops counting once above ``budget``."""
    if isinstance(v, str):
        return len(v)
    if isinstance(v, bool) or v is None:
        return 5
    if isinstance(v, int):
        return v.bit_length() * 3 // 10 + 2          # decimal digits (log10 2 ~ 0.301) and a sign
    if isinstance(v, float):
        return 24
    if isinstance(v, (list, tuple, dict)):
        n = 2
        for x in (v.items() if isinstance(v, dict) else v):
            n += 2 + (_size(x[0], budget - n) + 2 + _size(x[1], budget - n) if isinstance(v, dict)
                      else _size(x, budget - n))
            if n > budget:
                return n
        return n
    return 24


def _check(v):
    """Refuse a value beyond the limits (every operation's result passes here)."""
    if isinstance(v, int) and not isinstance(v, bool):
        if v.bit_length() > MAX_INT_BITS:
            raise ExprError(f"an integer beyond the limit of expressions (|x| < 2**{MAX_INT_BITS}, about 308 digits)")
    elif isinstance(v, complex):
        raise ExprError(f"a complex number ({_short(v)}): expected a real number")
    elif isinstance(v, (str, list, tuple, dict)):
        if _size(v) > MAX_LEN:
            what = f"a string of {len(v):,} characters" if isinstance(v, str) else \
                f"a {type(v).__name__} of more than {MAX_LEN:,} characters (as text)"
            raise ExprError(f"{what}: values in expressions are limited to {MAX_LEN:,} characters")
    return v


def _is_int(x) -> bool:
    return isinstance(x, int)          # bools included: True * "ab" repeats too


def _pow(a, b):
    if _is_int(a) and _is_int(b) and b > 0 and abs(a) >= 2:
        # the result has at least (bits(a) - 1) * b bits: refuse before computing it
        if (abs(a).bit_length() - 1) * b > MAX_INT_BITS:
            raise ExprError(f"{_short(a)} ** {_short(b)} is too large (integers in expressions are limited to "
                            f"2**{MAX_INT_BITS}, about 308 digits)")
    return a ** b


def _repeat_size(seq, n) -> int:
    return (len(seq) if isinstance(seq, str) else _size(seq)) * n


def _mul(a, b):
    for seq, n in ((a, b), (b, a)):
        if isinstance(seq, (str, list, tuple)) and _is_int(n) and n > 1:
            if _repeat_size(seq, n) > MAX_LEN:
                raise ExprError(f"{_short(seq)} * {_short(n)} is too long (values in expressions are limited to "
                                f"{MAX_LEN:,} characters)")
    return a * b


_FMT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d*))?")


def _mod(a, b):
    if isinstance(a, str):
        # printf-style formatting: a width or precision allocates that many characters
        for m in _FMT_SPEC.finditer(a.replace("%%", "")):
            for g in m.groups():
                if g == "*":
                    raise ExprError("'*' widths in % formatting are not supported in expressions")
                if g and (len(g) > 6 or int(g) > MAX_FMT_WIDTH):
                    shown = g if len(g) <= 12 else f"{g[:12]}... ({len(g):,} digits)"
                    raise ExprError(f"a width or precision of {shown} in % formatting (at most {MAX_FMT_WIDTH:,})")
        if isinstance(b, list):       # (x, y) evaluates to a list: format it as the tuple it was written as
            b = tuple(b)
    return a % b


def _str(*args, **kw):
    if len(args) == 1 and not kw and _size(args[0], MAX_LEN) > MAX_LEN:
        raise ExprError(f"str() of {_short(args[0])}: values in expressions are limited to {MAX_LEN:,} characters")
    return str(*args, **kw)


def _round(x, ndigits=None):
    if _is_int(ndigits) and abs(ndigits) > MAX_ROUND_DIGITS:
        raise ExprError(f"round(x, {_short(ndigits)}): expected a number of digits in "
                        f"-{MAX_ROUND_DIGITS}..{MAX_ROUND_DIGITS}")
    return round(x, ndigits)


_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: _mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Mod: _mod, ast.Pow: _pow}


def _num(x, conv, what):
    if isinstance(x, bool):
        raise ExprError(f"{what}: expected a number or a string with a unit, found {x!r}")
    if isinstance(x, (int, float)):
        return x
    if isinstance(x, str):
        try:
            return conv(x)
        except Exception as e:
            raise ExprError(f"{what}({_short(x)}): {_short_msg(e)}") from None
    raise ExprError(f"{what}: expected a number or a string with a unit, found {_short(x)}")


def bps(x) -> float:
    return float(_num(x, units.rate, "bps"))


def seconds(x) -> float:
    v = _num(x, units.duration, "seconds")
    return v / 1e9 if isinstance(x, str) else float(v)


def nbytes(x) -> float:
    return float(_num(x, units.size, "bytes"))


def bdp_bytes(rate, rtt) -> float:
    """Bandwidth-delay product in bytes (rate in bit/s or with a unit, rtt in s or with a unit)."""
    return bps(rate) * seconds(rtt) / 8.0


def bdp_pkts(rate, rtt, mtu=1500) -> float:
    """Bandwidth-delay product in packets of ``mtu`` bytes (not rounded)."""
    return bdp_bytes(rate, rtt) / float(mtu)


def _short_msg(e) -> str:
    m = str(e)
    return m if len(m) <= 4 * MAX_TEXT_SHOWN else m[:4 * MAX_TEXT_SHOWN] + "..."


FUNCS = {"min": min, "max": max, "round": _round, "ceil": math.ceil, "floor": math.floor, "abs": abs,
         "int": int, "float": float, "str": _str, "bps": bps, "seconds": seconds, "bytes": nbytes,
         "bdp_bytes": bdp_bytes, "bdp_pkts": bdp_pkts}

_ALLOWED = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Constant, ast.Name,
            ast.Call, ast.List, ast.Tuple, ast.Load, ast.keyword, ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd,
            *_BIN, *_CMP)


def compile_expr(text: str) -> ast.Expression:
    """Parse and check ``text``; raises ExprError naming what is not allowed."""
    if not isinstance(text, str) or not text.strip():
        raise ExprError(f"expected an expression string, found {_short(text)}")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise ExprError(f"invalid expression {_short(text)}: {e.msg}") from None
    except (RecursionError, MemoryError):   # "Parser stack overflowed", deep ast construction
        raise ExprError(f"invalid expression {_short(text)}: nested too deeply") from None
    except ValueError as e:                 # e.g. an integer literal of more than 4300 digits
        raise ExprError(f"invalid expression {_short(text)}: {_short_msg(e)}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise ExprError(f"{type(node).__name__.lower()} is not allowed in expressions ({_short(text)})")
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, (str, int, float)) and node.value is not None:
                raise ExprError(f"{type(node.value).__name__} constants ({_short(node.value)}) are not allowed in "
                                f"expressions ({_short(text)})")
            try:
                _check(node.value)
            except ExprError as e:
                raise ExprError(f"a constant in {_short(text)}: {e}") from None
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and
                                               (node.func.id in FUNCS or node.func.id == "get")):
            name = node.func.id if isinstance(node.func, ast.Name) else "?"
            raise ExprError(f"unknown function {name!r} in {_short(text)} (known: {', '.join(sorted(FUNCS))}, get)")
    return tree


def names(tree: ast.Expression) -> set[str]:
    """Free names an expression refers to (functions excluded)."""
    funcs = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in funcs}


def evaluate(tree: ast.Expression, env: dict, get=None):
    """Evaluate a compiled expression with column values ``env`` and ``get(key)`` for scenario keys."""
    def ev(n):
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Name):
            if n.id in env:
                return env[n.id]
            if n.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[n.id]
            raise ExprError(f"unknown name {n.id!r} (columns: {', '.join(sorted(env)) or 'none'})")
        if isinstance(n, ast.BinOp):
            return _check(_BIN[type(n.op)](ev(n.left), ev(n.right)))
        if isinstance(n, ast.UnaryOp):
            v = ev(n.operand)
            return _check(-v if isinstance(n.op, ast.USub) else +v if isinstance(n.op, ast.UAdd) else not v)
        if isinstance(n, ast.BoolOp):
            if isinstance(n.op, ast.And):
                v = True
                for x in n.values:
                    v = ev(x)
                    if not v:
                        return v
                return v
            v = False
            for x in n.values:
                v = ev(x)
                if v:
                    return v
            return v
        if isinstance(n, ast.Compare):
            left = ev(n.left)
            for op, c in zip(n.ops, n.comparators):
                right = ev(c)
                if not _CMP[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(n, ast.IfExp):
            return ev(n.body) if ev(n.test) else ev(n.orelse)
        if isinstance(n, (ast.List, ast.Tuple)):
            return _check([ev(x) for x in n.elts])
        if isinstance(n, ast.Call):
            args = [ev(a) for a in n.args]
            kw = {k.arg: ev(k.value) for k in n.keywords}
            if n.func.id == "get":
                if get is None or len(args) != 1 or kw or not isinstance(args[0], str):
                    raise ExprError("get(key) takes one dotted scenario key (a string)")
                return get(args[0])
            return _check(FUNCS[n.func.id](*args, **kw))
        raise ExprError(f"{type(n).__name__} is not allowed")  # pragma: no cover (compile_expr refused it)
    try:
        return ev(tree)
    except ExprError:
        raise
    except (TypeError, ValueError, ZeroDivisionError, OverflowError, KeyError) as e:
        raise ExprError(f"{type(e).__name__}: {_short_msg(e)}") from None
    except RecursionError:
        raise ExprError("the expression is nested too deeply") from None
    except MemoryError:   # not expected within the limits above; still bad input, not an internal error
        raise ExprError("the expression needs more memory than is available") from None
