"""The small, safe expression language of sweep files (``[derived]`` values and ``where`` filters).

An expression is a Python-syntax expression over numbers, strings, booleans, the names of the
sweep's columns (axes and derived values) and a few functions; nothing else is evaluated (no
attributes, subscripts, comprehensions or lambdas), so a sweep file cannot run code.

Functions: ``min``, ``max``, ``round``, ``ceil``, ``floor``, ``abs``, ``int``, ``float``, ``str``;
unit conversions ``bps(x)``, ``seconds(x)``, ``bytes(x)`` (a number or a string with a unit, as in
scenario files); ``bdp_bytes(rate, rtt)`` and ``bdp_pkts(rate, rtt, mtu=1500)``; and ``get(key)``,
the value of a dotted scenario key in this run's scenario (after the axes are applied).
"""

from __future__ import annotations

import ast
import math
import operator

from qoelab import units

_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
        ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}


class ExprError(ValueError):
    """A problem with an expression (the caller adds the file and key)."""


def _num(x, conv, what):
    if isinstance(x, bool):
        raise ExprError(f"{what}: expected a number or a string with a unit, found {x!r}")
    if isinstance(x, (int, float)):
        return x
    if isinstance(x, str):
        try:
            return conv(x)
        except Exception as e:
            raise ExprError(f"{what}({x!r}): {e}") from None
    raise ExprError(f"{what}: expected a number or a string with a unit, found {x!r}")


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


FUNCS = {"min": min, "max": max, "round": round, "ceil": math.ceil, "floor": math.floor, "abs": abs,
         "int": int, "float": float, "str": str, "bps": bps, "seconds": seconds, "bytes": nbytes,
         "bdp_bytes": bdp_bytes, "bdp_pkts": bdp_pkts}

_ALLOWED = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Constant, ast.Name,
            ast.Call, ast.List, ast.Tuple, ast.Load, ast.keyword, ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd,
            *_BIN, *_CMP)


def compile_expr(text: str) -> ast.Expression:
    """Parse and check ``text``; raises ExprError naming what is not allowed."""
    if not isinstance(text, str) or not text.strip():
        raise ExprError(f"expected an expression string, found {text!r}")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise ExprError(f"invalid expression {text!r}: {e.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise ExprError(f"{type(node).__name__.lower()} is not allowed in expressions ({text!r})")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and
                                               (node.func.id in FUNCS or node.func.id == "get")):
            name = node.func.id if isinstance(node.func, ast.Name) else "?"
            raise ExprError(f"unknown function {name!r} in {text!r} (known: {', '.join(sorted(FUNCS))}, get)")
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
            return _BIN[type(n.op)](ev(n.left), ev(n.right))
        if isinstance(n, ast.UnaryOp):
            v = ev(n.operand)
            return -v if isinstance(n.op, ast.USub) else +v if isinstance(n.op, ast.UAdd) else not v
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
            return [ev(x) for x in n.elts]
        if isinstance(n, ast.Call):
            args = [ev(a) for a in n.args]
            kw = {k.arg: ev(k.value) for k in n.keywords}
            if n.func.id == "get":
                if get is None or len(args) != 1 or kw:
                    raise ExprError("get(key) takes one dotted scenario key")
                return get(args[0])
            return FUNCS[n.func.id](*args, **kw)
        raise ExprError(f"{type(n).__name__} is not allowed")  # pragma: no cover (compile_expr refused it)
    try:
        return ev(tree)
    except ExprError:
        raise
    except (TypeError, ValueError, ZeroDivisionError, OverflowError, KeyError) as e:
        raise ExprError(f"{type(e).__name__}: {e}") from None
