"""Type stubs of the compiled core (crates/qoelab-py/src/lib.rs): the module ``qoelab._core``."""

from typing import Any, Callable, Literal

# (column name, kind, data): kind "i64"/"f64" with little-endian bytes, or "str" with a list
Column = tuple[str, Literal["i64", "f64", "str"], bytes | list[str]]

def version() -> str:
    """Version of the core."""

def describe(family: Literal["aqm", "cc", "abr", "data_plane"]) -> str:
    """JSON list of the registered models of a family: name, summary, reference, params.
    Raises ValueError for another family."""

def describe_tcp() -> str:
    """JSON list of the TCP endpoint options (the ``[flow.tcp]`` section)."""

def check_video(video_json: str) -> str:
    """Check a Video JSON document with the core's model; returns a JSON description
    (name, segments, rungs, duration_s, quality, byte_layout: whether it has ``byte_offsets``).
    Raises ValueError((path, message))."""

def run(
    config_json: str,
    abrs: dict[str, Callable[..., Any]] | None = None,
    progress: Callable[[float, float], object] | None = None,
) -> tuple[str, dict[str, list[Column]], dict[str, bytes]]:
    """Run a normalized config: (summary JSON, {table: columns}, {link: pcap bytes}). The summary
    follows docs/tables.md (schema_version 2, config_hash = SHA-256 of the normalized config).

    Simulates in slices with the GIL released; between slices pending signals are handled
    (KeyboardInterrupt stops the run) and ``progress(now_s, end_s)`` is called. A config the core
    rejects, a failing Python ABR or a broken invariant raises ValueError((path, message))."""

def check(config_json: str, abrs: dict[str, Callable[..., Any]] | None = None) -> None:
    """Check a normalized config the way ``run`` does before simulating (parse, validate, build
    the driver: models, routes, clients) without simulating. Raises ValueError((path, message))
    like ``run``. What ``qoelab validate`` calls."""
