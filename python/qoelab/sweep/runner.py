"""Running a sweep's missing runs on local processes or on Ray, writing each into the store as it
finishes (docs/sweeps.md)."""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import sys
import threading
import time

from qoelab.errors import InputError
from qoelab.sweep.spec import Sweep
from qoelab.sweep.store import Store


def _extract_fn(ref: str | None):
    if not ref:
        return None
    mod, _, fn = ref.partition(":")
    try:
        return getattr(importlib.import_module(mod), fn)
    except (ImportError, AttributeError) as e:
        raise InputError(None, "sweep.extract", message=f"cannot import {ref!r}: {e}") from None


def execute(task: dict, sim=None) -> tuple:
    """Run one task (a dict: ``key``, ``index``, ``rep``, ``seed``, ``point``, and either ``scenario``
    (a scenario dict, with ``base_src``, ``tables``, ``extract``) or ``task`` ("module:function", a
    computation that is not a scenario run), and ``payload``) and return ``(record, {table: parquet
    bytes})``. Never raises for a failing run: the record says ``status = "error"`` with the error's
    first line. Module-level so that process pools and Ray can ship it. ``sim`` (tests) replaces the
    simulator: scenario dict -> an object with ``summary`` and ``table(name)``."""
    key, index, rep, seed, point = task["key"], task["index"], task["rep"], task["seed"], task["point"]
    payload = task.get("payload")
    hook_point = {**point, "rep": rep, "seed": seed, **({"payload": payload} if payload is not None else {})}
    t0 = time.perf_counter()
    rec = {"key": key, "index": index, "rep": rep, "seed": seed, "point": point, "status": "ok", "error": None}
    tables = {}
    try:
        if task.get("task"):
            # a computation: fn(point) -> {"run": {metrics}, "tables": {name: DataFrame | Arrow table | rows}}
            out = _extract_fn(task["task"])(hook_point) or {}
            rec["summary"] = {}
            rec["metrics"] = {"run": {}, **{k: v for k, v in out.items() if k != "tables"}}
            for n, t in (out.get("tables") or {}).items():
                tables[n] = _parquet(t)
        else:
            if sim is not None:
                res = sim(task["scenario"])
            else:
                from qoelab import results
                from qoelab import scenario as scn
                res = results.run(scn.from_dict(task["scenario"], task.get("base_src", "<sweep>"), check=False))
            rec["summary"] = res.summary
            rec["sim_wall_s"] = (getattr(res, "perf", None) or {}).get("wall_s")
            fn = _extract_fn(task.get("extract"))
            if fn is not None:
                m = fn(res, hook_point)
                rec["metrics"] = m if isinstance(m, dict) and ("run" in m or "clients" in m) else {"run": m}
            keep = task.get("tables")
            names = res.tables if keep is None else [t for t in keep if t in res.tables]
            for n in names:
                tables[n] = _parquet(res.arrow(n))
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # a failing run is recorded, not fatal (PanicException is a BaseException)
        rec["status"] = "error"
        rec["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:2000]
        rec.pop("summary", None)
        rec.pop("metrics", None)
        tables = {}
    rec["wall_s"] = round(time.perf_counter() - t0, 6)
    return rec, tables


def _execute_in_worker(task: dict) -> tuple:
    """:func:`execute` in a pool worker, which ignores SIGINT: a KeyboardInterrupt there was raised
    by the run's own code (a python: ABR), and is that run's failure. Re-raised, it killed the worker
    and the pool waited for the lost run forever."""
    try:
        return execute(task)
    except KeyboardInterrupt as e:
        rec = {"key": task["key"], "index": task["index"], "rep": task["rep"], "seed": task["seed"],
               "point": task["point"], "status": "error", "wall_s": 0.0,
               "error": f"{type(e).__name__} raised by the run's code{': ' + str(e) if str(e) else ''}"[:2000]}
        return rec, {}


def _parquet(t) -> bytes:
    """A table (pyarrow Table, pandas DataFrame or list of row dicts) as zstd Parquet bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    if isinstance(t, list):
        t = pa.Table.from_pylist(t)
    elif not isinstance(t, pa.Table):
        t = pa.Table.from_pandas(t, preserve_index=False)
    buf = io.BytesIO()
    pq.write_table(t, buf, compression="zstd")
    return buf.getvalue()


def ignore_stop_signals():
    """Pool initializer: workers leave Ctrl-C (and SIGHUP, a closed terminal) to the parent, which
    stops them (:func:`kill_pool`)."""
    import signal
    for s in (signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
    # A worker started while the parent was stopping inherits the SIGTERM it ignores then (cli._stopping),
    # and Pool.terminate's SIGTERM would not end it
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextlib.contextmanager
def stoppable_pool(ctx, processes: int):
    """``with stoppable_pool(ctx, n) as pool:`` a pool of workers that leave the stop signals to this
    process: closed and joined when the block ends, stopped at once (:func:`kill_pool`) when it
    raises (Ctrl-C, SIGTERM, an error)."""
    pool = ctx.Pool(processes=processes, initializer=ignore_stop_signals)
    try:
        yield pool
    except BaseException:
        kill_pool(pool)     # (it bounds its own wait; Pool.join could wait for ever after a kill)
        raise
    pool.close()
    pool.join()


def kill_pool(pool) -> None:
    """Stop a pool at once: no new workers, SIGKILL to the workers, then Pool.terminate.

    Pool.terminate alone first takes the task queue's lock, which an idle worker holds while it
    waits for a task: a worker killed there (a SIGTERM to the whole process group, a run's code
    calling os._exit) never releases it, and terminate waited forever. The workers are dead when the
    lock is released here, so nobody else holds it."""
    import multiprocessing.pool as mpp
    handler = pool._worker_handler
    handler._state = mpp.TERMINATE     # (private) the pool no longer replaces workers...
    # ...once the round under way ends: after a SIGTERM to the whole process group it may be starting
    # replacements through a new forkserver, which inherit this process's ignored SIGTERM
    # (cli._stopping) before they can reset it, so that Pool.terminate's SIGTERM left them alive and
    # waited for them forever. Workers are SIGKILLed until the handler has stopped (at most 5 s).
    deadline = time.monotonic() + 5.0
    while True:
        stopped = not handler.is_alive()
        for w in list(pool._pool):
            with contextlib.suppress(Exception):
                w.kill()
        for w in list(pool._pool):
            with contextlib.suppress(Exception):
                w.join(1.0)
        if stopped or time.monotonic() > deadline:
            break
        handler.join(0.05)
    # Locks a killed worker may have held: the task queue's read lock (an idle worker waits for a task
    # holding it) and the result queue's write lock (a worker killed while sending a result; the
    # result handler, the task handler and Pool.terminate's own sentinel then waited for it for ever:
    # 3 of 4 Ctrl-Cs of a sweep of 2,000 two-second runs hung). Nobody else holds them now.
    # A thread of this process may hold the result queue's lock for a moment (the task handler sending
    # its sentinel): taking it from that thread made its release fail ("released too many times"), so
    # a lock is released unasked only when it stays held for 0.2 s (by a worker killed above).
    for lock in (pool._inqueue._rlock, getattr(pool._outqueue, "_wlock", None)):
        if lock is not None:
            lock.acquire(timeout=0.2)
            lock.release()
    # The task handler ends when the worker handler sends it None; a worker handler that died (it
    # could not start a replacement through a forkserver killed by the same SIGTERM) never did, and
    # terminate waited for the task handler forever.
    pool._taskqueue.put(None)
    # A worker killed in the middle of a large result leaves a partial message in the result pipe,
    # which the result handler can wait on for ever: terminate gets 0.5 s in a thread of its own (it
    # takes about 50 ms when nothing is stuck), and the pool's (daemon) threads are then left to the
    # process's exit.
    t = threading.Thread(target=pool.terminate, name="qoelab-pool-terminate", daemon=True)
    t.start()
    t.join(0.5)


class Progress:
    """One status line on stderr: runs done, failures, elapsed, ETA. On a terminal it is redrawn in
    place (at most 5 times a second); otherwise a line is printed every 10% or 30 s."""

    def __init__(self, name: str, total: int, skipped: int, stream=None, quiet: bool = False):
        self.name, self.total, self.skipped = name, total, skipped
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.quiet = quiet
        self.t0 = time.monotonic()
        self.done = self.failed = 0
        self.last = 0.0
        self.last_pct = -1

    def update(self, failed: bool) -> None:
        self.done += 1
        self.failed += failed
        self._draw(False)

    def tick(self) -> None:
        """While runs are under way and none finishes: redraw (elapsed time and ETA go on), at most
        once a second on a terminal, every 30 s otherwise."""
        self._draw(True)

    def _draw(self, tick: bool) -> None:
        if self.quiet:
            return
        el = time.monotonic() - self.t0
        pct = int(100 * self.done / self.total) if self.total else 100
        final = self.done == self.total and not tick
        if self.tty:
            if el - self.last < (1.0 if tick else 0.2) and not final:
                return
        elif not final and (tick or pct // 10 == self.last_pct // 10) and el - self.last < 30:
            return
        self.last, self.last_pct = el, pct
        eta = el / self.done * (self.total - self.done) if self.done else float("nan")
        line = (f"sweep {self.name}: {self.done}/{self.total} runs ({pct}%), {self.failed} failed, "
                f"{_fmt_s(el)} elapsed, ETA {_fmt_s(eta)}")
        if self.tty:
            self.stream.write("\r" + line[:150].ljust(100) + ("\n" if final else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty and self.done < self.total and self.done:
            self.stream.write("\n")
            self.stream.flush()


def _fmt_s(s: float) -> str:
    if s != s:
        return "?"
    s = int(round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def tasks_for(sweep: Sweep, keys: set | None = None) -> list[dict]:
    out = []
    for r in sweep.runs:
        if keys is not None and r.key not in keys:
            continue
        t = {"key": r.key, "index": r.index, "rep": r.rep, "seed": r.seed, "point": r.point}
        if r.task:
            t["task"] = r.task
        else:
            t.update(scenario=r.scenario, base_src=sweep.base_src, tables=sweep.tables, extract=sweep.extract)
        if r.payload is not None:
            t["payload"] = r.payload
        out.append(t)
    return out


def run(sweep: Sweep, out_dir: str, jobs: int = 0, ray: str | None = None, force: bool = False,
        retry_failed: bool = False, log=None, quiet: bool = False, max_runs: int | None = None,
        sim=None) -> dict:
    """Run what the store at ``out_dir`` does not hold yet; returns counts and timings.

    ``ray``: None (local processes), ``"auto"`` (an existing cluster), ``"local"`` (a Ray instance
    started in this process) or a cluster address. ``max_runs`` stops after that many new runs
    (tests of interruption). ``sim`` (tests) replaces the simulator and runs everything in this
    process. Ctrl-C stops within a second; finished runs stay in the store."""
    log = log or (lambda m: None)
    if ray:
        _ray_module()   # refused before the store is made or anything is printed
    store = Store.create_or_open(out_dir, sweep, force=force)
    done = store.done_keys()
    wanted = {r.key for r in sweep.runs}
    if retry_failed:
        failed = store.failed_keys() & wanted
        store.remove_runs(failed)
        done -= failed
    store.check_runs(done & wanted)     # a damaged run is named before hours of simulation, not after
    todo = [t for t in tasks_for(sweep) if t["key"] not in done]
    if max_runs is not None:
        todo = todo[:max_runs]
    skipped = len(wanted & done)
    jobs = jobs or os.cpu_count() or 1
    where = f"Ray ({ray})" if ray else f"{min(jobs, max(1, len(todo)))} local process" + \
        ("es" if min(jobs, max(1, len(todo))) > 1 else "")
    log(f"sweep {sweep.name}: {len(sweep.runs)} runs, {skipped} already in the store, {len(todo)} to run on {where}")
    prog = Progress(sweep.name, len(todo), skipped, quiet=quiet)
    t0 = time.perf_counter()
    failed = 0
    sim_wall = 0.0

    def sink(rec, tables):
        nonlocal failed, sim_wall
        store.write_run(rec, tables)
        failed += rec["status"] != "ok"
        sim_wall += rec.get("sim_wall_s") or 0.0
        prog.update(rec["status"] != "ok")
    try:
        if todo:
            if ray:
                _run_ray(todo, ray, sink, prog.tick)
            elif sim is not None or jobs == 1 or len(todo) == 1:
                for t in todo:
                    sink(*execute(t, sim))
            else:
                _run_local(todo, jobs, sink, prog.tick)
    finally:
        prog.close()
    wall = time.perf_counter() - t0
    counts = store.compact()
    return {"runs": len(sweep.runs), "skipped": skipped, "ran": len(todo), "failed": failed,
            "failed_total": len(store.failed_keys() & wanted), "wall_s": round(wall, 3),
            "sim_wall_s": round(sim_wall, 3), "rows": counts, "out_dir": store.path}


def _run_local(todo: list, jobs: int, sink, tick=lambda: None) -> None:
    import multiprocessing as mp
    ctx = mp.get_context("forkserver" if sys.platform.startswith("linux") else "spawn")
    with stoppable_pool(ctx, min(jobs, len(todo))) as pool:
        workers = {p.pid for p in pool._pool}
        results = pool.imap_unordered(_execute_in_worker, todo, chunksize=1)
        while True:
            try:
                rec, tables = results.next(timeout=1.0)
            except mp.TimeoutError:   # runs under way, none finished this second: keep the line alive
                tick()
                # A worker that died (a run's code called os._exit, a crash) is replaced by the pool,
                # but its run is lost and this loop would wait for it forever.
                gone = workers - {p.pid for p in pool._pool}
                if gone:
                    raise InputError(None, None, message=f"a worker process died while running a run (pid "
                                     f"{min(gone)}: a run's code ended the process, or it crashed); the runs "
                                     "that finished are in the store, run the sweep again to resume")
                continue
            except StopIteration:
                break
            sink(rec, tables)


def _ray_module():
    try:
        import ray
    except ImportError:
        raise InputError(None, "--ray", message="Ray is not installed (pip install 'qoelab[ray]')") from None
    return ray


def _run_ray(todo: list, address: str, sink, tick=lambda: None) -> None:
    ray = _ray_module()
    started = False
    if not ray.is_initialized():
        kw = {"include_dashboard": False, "log_to_driver": False}
        if address == "local":
            ray.init(num_cpus=os.cpu_count() or 1, **kw)
        else:
            try:
                ray.init(address=address, **kw)
            except (ConnectionError, RuntimeError, ValueError) as e:
                raise InputError(None, "--ray", message=f"cannot connect to Ray at {address!r}: "
                                                        f"{str(e).splitlines()[0]}") from None
        started = True
    remote = ray.remote(num_cpus=1, max_retries=1)(execute)
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    pending = []
    it = iter(todo)
    try:
        for t in it:
            pending.append(remote.remote(t))
            if len(pending) >= 2 * cpus:
                break
        while pending:
            ready, pending = ray.wait(pending, num_returns=1, timeout=0.5)
            if not ready:
                tick()
            for ref in ready:
                sink(*ray.get(ref))
                nxt = next(it, None)
                if nxt is not None:
                    pending.append(remote.remote(nxt))
    except BaseException:
        for ref in pending:
            try:
                ray.cancel(ref, force=True)
            except Exception:
                pass
        raise
    finally:
        if started:
            ray.shutdown()
