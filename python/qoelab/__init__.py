"""qoelab: a lab for video streaming over shared networks.

Python API::

    import qoelab
    res = qoelab.run("scenarios/dumbbell-cubic-fqcodel.toml", seed=1)
    res.summary["jain_index"]
    res.table("flows")          # pandas DataFrame
"""

from qoelab._core import version as _core_version
from qoelab.errors import InputError
from qoelab.results import Result, run

__version__ = _core_version()
__all__ = ["run", "Result", "InputError", "open_store", "__version__"]


def open_store(path: str):
    """A sweep directory's results store: ``open_store(DIR).sql("SELECT ...")`` returns a pandas
    DataFrame, ``.arrow(...)`` a pyarrow Table (docs/sweeps.md)."""
    from qoelab.sweep.store import open_store as _open
    return _open(path)
