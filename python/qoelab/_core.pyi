"""Type stubs of the compiled core (crates/qoelab-py/src/lib.rs): the module ``qoelab._core``."""

from typing import Any, Callable, Literal

# (column name, kind, data): kind "i64"/"f64" with little-endian bytes, or "str" with a list
Column = tuple[str, Literal["i64", "f64", "str"], bytes | list[str]]

def version() -> str:
    """Version of the core."""

def source_id() -> str:
    """A fingerprint of the Rust sources this module was built from (16 hex digits): the emulator
    binary built from the same sources prints the same (`qoelab-netemu --source-id`)."""

def build() -> str:
    """How the core was compiled: "pgo" (profile-guided release build, tools/build-core),
    "pgo+x86-64-v3" (the same for x86-64-v3 CPUs), "pgo-training" (its instrumented build),
    "release" or "debug"."""

def describe(family: Literal["aqm", "cc", "abr", "data_plane", "flow_controller"]) -> str:
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

def get_chunk_size(bandwidth_bytes_per_s: float, rtt_s: float, eps: float, mss: float = 1460.0) -> float:
    """Sprint's Program 1: the chunk (train) size in bytes for an efficiency of at least 1 - eps,
    from the video flow's own throughput estimate (bytes/s) and the RTT (s, queueing included).
    r_1 = max(1, ceil(log2(sst / 10 MSS)) + 1), r_2 = (bdp - sst) / MSS + 1, sst = 0.75 bdp;
    returns (1 - eps) * ((r_1 + r_2) / eps) * bdp. Not capped."""

def efficiency_eq1(chunk_bytes: float, fair_bdp: float, sst: float, mss: float = 1460.0) -> float:
    """Sprint's Eq. 1, continuous form: achieved / fair-share throughput of a transfer of
    ``chunk_bytes`` starting in slow start from 10 MSS (bytes throughout). Valid when the chunk
    reaches the fair-BDP phase; NaN for non-positive sizes."""

def efficiency_rounds(chunk_bytes: float, fair_bdp: float, sst: float, mss: float = 1460.0) -> float:
    """Sprint's efficiency model evaluated round by round (slow start capped at ``sst``, +1 MSS per
    round up to ``fair_bdp``, fractional last round): valid for any chunk size, including chunks
    ending in slow start or additive increase. NaN for non-positive sizes."""

def instability_index_levels(rungs: list[int]) -> list[float]:
    """Chunklets' instability index on 1-based levels (rung 0 -> level 1), k = 10, w(d) = k - d,
    not clamped: one value per chunk once 11 chunks exist."""


def minerva_value_function(video_json: str, params_json: str) -> str:
    """Minerva's value function V_h of a video on a (rate, buffer, rung) grid, as JSON
    (docs/models/flow_controller-minerva.md). Raises ValueError(path, message)."""
    ...


def minerva_normalization(videos_json: str, params_json: str) -> str:
    """Minerva's corpus-wide normalization table (§5.4) of a JSON array of videos, params JSON
    (popularity, metric, objective, pf_c, alpha), as JSON. Raises ValueError(path, message)."""
    ...


def minerva_check_normalization(text: str) -> None:
    """Check a normalization file's JSON; raises ValueError(key, message)."""
    ...

# Flow-level page loads (docs/models/pageload.md). A page is (sizes in bytes, origin indices, TLS
# flags, parent indices with -1 for none; parents precede children). An interface is
# (bytes/s, RTT ns, rate schedule [(t ns, bytes/s)]). Options: mss, iw_segments,
# handshake_rtts, tls_rtts, reuse_rtts, idle_timeout_ns, max_per_origin, max_total,
# sharing ("waterfill" | "maxmin"). Bad input raises ValueError with one line.

PageTuple = tuple[list[int], list[int], list[bool], list[int]]
IfaceTuple = tuple[int, int, list[tuple[int, int]]]

def pageload_run(page: PageTuple, ifaces: list[IfaceTuple], policy: str, seed: int = 1,
                 options: dict[str, Any] | None = None) -> dict[str, Any]:
    """One load: plt_ns, conns_opened, mptcp_opened, off_first, limit_blocked, steps,
    predictions, and records (per object: enable_ns, enqueue_ns, finish_ns, conn, iface_mask,
    mptcp, new_conn)."""

def pageload_batch(pages: list[PageTuple], jobs: list[tuple[int, list[IfaceTuple], str, int]],
                   options: dict[str, Any] | None = None) -> list[tuple[int, int, int, int, bool, int]]:
    """Many loads (page index, interfaces, policy, seed), the GIL released: per job (plt_ns,
    conns_opened, mptcp_opened, off_first, limit_blocked, steps)."""

def pageload_policies() -> list[tuple[str, str, str, str, bool]]:
    """The policy registry: (name, paper name, public simulator name, doc, randomized)."""
