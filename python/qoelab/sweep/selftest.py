"""Extract hooks used by the test-suite, and small examples of the hook interface.

A sweep's ``extract = "module:function"`` is called in the worker after each run as
``function(result, point)`` (a :class:`qoelab.Result` and the run's column values plus ``rep``
and ``seed``) and returns
either a dict of run-level metrics (columns of the ``runs`` view) or ``{"run": {...}, "clients":
[{...}, ...]}`` (the second list is merged, by position, into the ``clients`` rows)."""


def fail_on_codel(result, point):
    """Fails the runs whose ``aqm`` column is ``codel``; others get the metric ``marker = 42.0``."""
    if point.get("aqm") == "codel":
        raise ValueError("codel refused (test hook)")
    return {"marker": 42.0}


def segment_count(result, point):
    """Run-level ``segments_total`` and a per-client ``segments_downloaded`` from the segments table."""
    total = sum(c.get("segments", 0) for c in result.summary.get("clients", []))
    return {"run": {"segments_total": total},
            "clients": [{"segments_downloaded": c.get("segments", 0)} for c in result.summary.get("clients", [])]}


def square_task(point):
    """A task (not a scenario run): run metric ``sq`` = x^2 and a table ``powers`` of x^1..x^3."""
    x = point["x"]
    return {"run": {"sq": x * x}, "note": f"x = {x}",
            "tables": {"powers": [{"p": p, "v": x ** p} for p in (1, 2, 3)]}}
