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
    try:
        if mod_name.endswith(".py"):
            path = mod_name if os.path.isabs(mod_name) else os.path.join(base_dir or os.getcwd(), mod_name)
            if not os.path.exists(path):
                raise InputError(src, key, "an existing Python file", repr(mod_name))
            if not os.path.isfile(path):   # a FIFO blocked the import, /dev/zero filled memory
                raise InputError(src, key, "a regular Python file", f"{mod_name!r} ({not_a_file(path)})")
            if os.path.getsize(path) > 64 * 2**20:
                raise InputError(src, key, "a Python file of at most 64 MiB", f"{os.path.getsize(path):,} bytes")
            s = importlib.util.spec_from_file_location(f"qoelab_user_abr_{abs(hash(path))}", path)
            mod = importlib.util.module_from_spec(s)
            # registered while it runs, as an import does (dataclasses with postponed annotations
            # look their module up in sys.modules)
            sys.modules[s.name] = mod
            try:
                s.loader.exec_module(mod)
            except BaseException:
                sys.modules.pop(s.name, None)
                raise
        else:
            mod = importlib.import_module(mod_name)
    except (InputError, KeyboardInterrupt):
        raise
    except BaseException as e:  # the user's module failed to import (or called exit(), or raised a BaseException)
        raise InputError(src, key, message=f"importing {mod_name} failed: {type(e).__name__}: {e}") from None
    cls = getattr(mod, cls_name, None)
    if cls is None:
        raise InputError(src, key, f"a class {cls_name} in {mod_name}", "none")
    if not callable(getattr(cls, "choose", None)):
        raise InputError(src, key, f"{cls_name} to have a choose(obs) method", "none")
    return cls
