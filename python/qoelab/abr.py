"""Write an ABR in Python.

A Python ABR is any object with a ``choose(obs)`` method (and optionally ``on_download(obs,
record)``); the core calls ``choose`` once per segment decision, from inside the simulation (the
same player, HTTP and TCP as the built-in ABRs). Use it in a scenario as::

    [[client]]
    abr = "python:my_abrs:Greedy"          # module:Class (importable), or
    abr = "python:path/to/my_abrs.py:Greedy" # file (relative to the scenario):Class
    [client.abr_params]                    # passed to the class as keyword arguments
    margin = 0.8

or from Python: ``qoelab.run(scenario, abrs={"python:greedy": Greedy})``.

``obs`` is a dict: ``now_s``, ``segment`` (index to decide for), ``n_segments``,
``segment_duration_s``, ``buffer_s``, ``buffer_max_s``, ``last_rung`` (None before the first),
``playing``, ``bitrates_bps`` (ascending), ``sizes`` (bytes of this segment per rung), ``history``
(the last 20 downloads: ``segment``, ``rung``, ``bytes``, ``t_request_s``, ``t_first_byte_s``,
``t_last_byte_s``, ``tput_bps`` (request to last byte), ``tput_first_byte_bps``, ``abandoned``).

``choose`` returns a rung index, or ``(rung, delay_s)`` to wait before requesting, or a dict
``{"rung": r, "delay_s": d, "reason": "..."}`` (the reason is logged in the segments table, cut at
256 bytes; no other keys; a bool is not a rung nor a delay). An exception (``SystemExit`` included; ``KeyboardInterrupt`` is Ctrl-C) or an invalid
return value stops the run at once (the ABR is not called again) with a one-line error naming the
ABR. In a sweep's worker process a ``KeyboardInterrupt`` raised by the ABR fails that run, and a
worker ended by the ABR (``os._exit``) stops the sweep with one line.

Determinism (same scenario and seed, same decisions, in any process and with any ``--jobs``):

* A class whose constructor names a ``seed`` parameter gets the client's seed, derived from the
  scenario seed and the client's name as the built-in randomized ABRs' (FESTIVE), unless
  ``[client.abr_params]`` sets ``seed``; use it for a generator of your own
  (``random.Random(seed)``).
* Python's global ``random`` (and NumPy's legacy global generator, when NumPy is imported) is
  seeded from the scenario seed for the run; the caller's state is restored afterwards.
* The module is executed anew each time a scenario naming it is loaded (a ``file.py`` as well as a
  ``module``; its own imports are cached as usual), so module globals and class attributes do not
  carry from one run to the next, as they did in a sweep's worker processes.
* A working directory changed by the module (at import or in a hook) is changed back, so relative
  paths (``--out``, the scenario's files) keep their meaning.

Not covered: state kept elsewhere (files, other modules' globals, ``PYTHONHASHSEED``-dependent
set iteration order) and a ``qoelab.run(scenario_object)`` called twice with the same loaded
:class:`qoelab.scenario.Scenario`, whose class is the one loaded with it.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any, Protocol, runtime_checkable

from qoelab.errors import InputError, not_a_file


@runtime_checkable
class Abr(Protocol):
    def choose(self, obs: dict[str, Any]) -> int | tuple[int, float] | dict[str, Any]:
        ...


def resolve(spec: str, base_dir: str | None = None, src: str | None = None, key: str | None = None):
    """The class named by ``python:<module>:<Class>`` or ``python:<file.py>:<Class>``."""
    body = spec[len("python:"):]
    mod_name, sep, cls_name = body.rpartition(":")
    if not sep or not mod_name or not cls_name:
        raise InputError(src, key, "\"python:<module>:<Class>\" or \"python:<file.py>:<Class>\"", repr(spec))
    cwd = os.getcwd()
    try:
        if mod_name.endswith(".py"):
            path = mod_name if os.path.isabs(mod_name) else os.path.join(base_dir or os.getcwd(), mod_name)
            if not os.path.exists(path):
                raise InputError(src, key, "an existing Python file", repr(mod_name))
            if not os.path.isfile(path):   # a FIFO blocked the import, /dev/zero filled memory
                raise InputError(src, key, "a regular Python file", f"{mod_name!r} ({not_a_file(path)})")
            if os.path.getsize(path) > 64 * 2**20:
                raise InputError(src, key, "a Python file of at most 64 MiB", f"{os.path.getsize(path):,} bytes")
            mod = _exec_module(importlib.util.spec_from_file_location(f"qoelab_user_abr_{abs(hash(path))}", path))
        else:
            mod = _fresh_import(mod_name)
    except (InputError, KeyboardInterrupt):
        raise
    except BaseException as e:  # the user's module failed to import (or called exit(), or raised a BaseException)
        raise InputError(src, key, message=f"importing {mod_name} failed: {type(e).__name__}: {e}") from None
    finally:
        _restore_cwd(cwd)
    cls = getattr(mod, cls_name, None)
    if cls is None:
        raise InputError(src, key, f"a class {cls_name} in {mod_name}", "none")
    if not callable(getattr(cls, "choose", None)):
        raise InputError(src, key, f"{cls_name} to have a choose(obs) method", "none")
    return cls


def source_digest(cls) -> str | None:
    """SHA-256 of the source file of the module defining ``cls`` (None when it has none): part of a
    sweep run's key, so that a run is not taken as done after its ABR's code changed."""
    from qoelab.filememo import sha256_file
    path = getattr(sys.modules.get(getattr(cls, "__module__", ""), None), "__file__", None)
    if not path or not os.path.isfile(path):
        return None
    try:
        return sha256_file(path)
    except OSError:
        return None


def _exec_module(spec):
    """The module of ``spec``, executed now. It is registered in sys.modules while it runs, as an
    import does (dataclasses with postponed annotations look their module up there), and removed
    again if it fails."""
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop(spec.name, None)
        raise
    return mod


def _fresh_import(mod_name: str):
    """A new copy of the module named, executed now, so that no state (module globals, class
    attributes) carries from one run to the next: in a sweep's worker process, runs of one scenario
    would otherwise see what earlier runs of that worker left, and results would depend on
    ``--jobs``. Its package and the modules it imports are imported as usual (once per process).
    A module that is not Python source (an extension module, a namespace package) is imported as
    usual."""
    spec = importlib.util.find_spec(mod_name)
    if spec is None:
        raise ModuleNotFoundError(f"No module named {mod_name!r}")
    origin = spec.origin or ""
    if not (spec.has_location and origin.endswith(".py") and os.path.isfile(origin)):
        return importlib.import_module(mod_name)
    parent, _, leaf = mod_name.rpartition(".")
    # in the module's own package, so that relative imports resolve as they would
    private = (parent + "." if parent else "") + "_qoelab_fresh_" + leaf
    return _exec_module(importlib.util.spec_from_file_location(
        private, origin, submodule_search_locations=spec.submodule_search_locations))


def _restore_cwd(cwd: str) -> None:
    """An ABR module that changed the working directory (at import, or in a hook) would move every
    relative path read or written after it (the scenario's files, ``--out``): it is changed back."""
    try:
        if os.getcwd() != cwd:
            os.chdir(cwd)
    except OSError:
        pass


class run_guard:
    """Around one run with Python ABRs: Python's global ``random`` (and NumPy's, when imported) seeded
    from the scenario seed, so that an ABR drawing from them gives the same decisions in every run
    of the same scenario and seed, in any process (``--jobs``); the caller's generator state and
    working directory restored afterwards."""

    def __init__(self, seed: int):
        self.seed = int(seed)

    def __enter__(self):
        import hashlib
        import random
        self.cwd = os.getcwd()
        self.state = random.getstate()
        random.seed(f"qoelab-python-abr:{self.seed}")
        self.np = sys.modules.get("numpy")
        self.np_state = None
        if self.np is not None:
            try:
                self.np_state = self.np.random.get_state()
                d = hashlib.sha256(f"qoelab-python-abr:{self.seed}".encode()).digest()
                self.np.random.seed(int.from_bytes(d[:4], "little"))
            except Exception:   # a NumPy without the legacy global generator
                self.np_state = None
        return self

    def __exit__(self, *exc):
        import random
        random.setstate(self.state)
        if self.np_state is not None:
            try:
                self.np.random.set_state(self.np_state)
            except Exception:
                pass
        _restore_cwd(self.cwd)
        return False
