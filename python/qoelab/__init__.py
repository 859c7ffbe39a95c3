"""qoelab: a lab for video streaming over shared networks."""

from qoelab._core import version as _core_version

__version__ = _core_version()
