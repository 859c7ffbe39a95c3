"""Scenario files: TOML with unit strings -> the normalized config the core runs.

The schema is documented in docs/scenario-format.md. Every error names the file, the key path,
what was expected and what was found (:class:`qoelab.errors.InputError`).
"""

from __future__ import annotations

import copy
import difflib
import functools
import json
import math
import os
import re
import tomllib
from dataclasses import dataclass, field

from qoelab import units
from qoelab.errors import InputError, digit_limit_error, read_input

MTU = 1500

# Limits of scenario values (beyond them a run would overflow, exhaust memory or never end;
# docs/scenario-format.md, "Limits").
MAX_DURATION_NS = 7 * 86_400 * 10**9          # simulated time of a run
MAX_DELAY_NS = 60 * 10**9                     # RTTs, propagation delays
MIN_LINK_RATE_BPS = 1_000                     # below this one 1500-byte packet takes 12 s
MIN_SAMPLE_INTERVAL_NS = 1_000_000
MAX_SAMPLES = 10_000_000                      # duration / sample_interval
# The routing table holds 4 bytes per (node, node) pair (compute_routes in the core): 15,000
# nodes are 0.9 GB (`validate` of 16,002 nodes measured 1.1 GB of RSS, 32,002 nodes aborted at 4 GB).
MAX_NODES = 15_000
MAX_SEGMENTS = 100_000                        # segments of one video
# Web flows keep their state to the end of the run: 2 x 10^5 flows in 1 s measured 1.0 GB of RSS
# (10^5: 0.58 GB; 10^6 aborted at 3.2 GB).
MAX_WEB_ARRIVALS = 200_000                    # expected web flows of all [[flow]] kind = "web" over the run
# Every session (and client) holds its own copy of the video: 10^4 sessions of the default 300 x 8 video
# measured 1.29 GB (~60 KB + ~26 bytes per segment and rung of the video each; 200 clients of a
# 100,000-segment video aborted `validate` at 4 GB).
MAX_SESSIONS = 10_000                         # expected video sessions of all [[client]] arrival_rate
# 10^4 sessions of a 500 x 8 video (4 x 10^7 values) measured 1.56 GB; the default video (300 x 8) fits
# 10^4 sessions.
MAX_CLIENT_VIDEO_VALUES = 30_000_000          # segments x rungs of the videos of all clients and sessions
# Total page objects over all [[page]] copies: 10^6 objects (50 x a 20,000-object HAR) measured
# 1.14 GB of RSS in `run` (0.43 GB in `validate`).
MAX_PAGE_OBJECTS_TOTAL = 1_000_000
# A packet in a link's delay line is 96 bytes (the 88-byte Packet and its exit time) in a VecDeque
# that doubles: 8 x 10^6 packets in flight are a 0.8 GB buffer (1.2 GB while it grows; a 12 Tbit/s
# CBR flow over an 8 ms access link, exactly at the limit, measured 0.82 GB of RSS; 100 Tbit/s
# over 30 s aborted at 6 GiB). The engine's clock is 1 ns: a link sends at most one packet per ns.
MAX_PACKETS_IN_FLIGHT = 8_000_000             # rate x delay / packet size of each link
# A queue holds its packets (~100 bytes each, whatever their size) up to its limit, and TCP flows
# fill whatever limit they are given: a limit is at most as many packets as may be in flight, and a
# byte limit at most 1 GiB (16.8 x 10^6 packets if all were 64-byte ACKs, 1.7 GB).
MAX_QUEUE_PACKETS = MAX_PACKETS_IN_FLIGHT
MAX_QUEUE_BYTES = 2**30
MAX_PACKETS_PER_NS = 1                        # packets a link can serialize per ns (tx_time >= 1 ns)
# A pcap is built in memory (a Vec that doubles) and copied once into Python: a 1 GiB file needs
# up to ~2.5 GB (at the limit, 1 Gbit/s both ways for 94 s, the estimate's data + ACK records give
# a 0.53 GB file and 1.06 GB of RSS; 40 Gbit/s for 600 s aborted). Records are 16 (header) + 20 (IP)
# + 8 (UDP) or 32 (TCP with timestamps) bytes, up to 28 more with SACK blocks; payload is not captured.
MAX_PCAP_BYTES = 2**30
PCAP_RECORD_BYTES = 68                        # header + IP + TCP with the timestamp option
# Writes of onoff flows (one engine event and one TCP write each, ~0.5 us of CPU): 10^8 is ~1 min.
MAX_ONOFF_WRITES = 100_000_000
# Packets of CBR flows: 2 x 10^7 packets of a 12 Tbit/s CBR flow took 2.3 s; 10^9 are ~2 min.
MAX_CBR_PACKETS = 1_000_000_000
U64_MAX = 2**64 - 1
I64_MAX = 2**63 - 1


@functools.lru_cache(maxsize=None)
def _describe(family: str) -> dict:
    """The core's models of ``family`` by name, with their parameters. Cached: the core's registry
    does not change in a process, and a sweep builds thousands of scenarios (this and
    :func:`_describe_tcp` were ~45% of the time). Shared: read only."""
    from qoelab import _core
    return {e["name"]: e for e in json.loads(_core.describe(family))}


class _Section:
    """A TOML table being read: tracks its key path and which keys were used."""

    def __init__(self, src: str, path: str, data: dict):
        self.src, self.path, self.data = src, path, data
        if not isinstance(data, dict):
            raise InputError(src, path or "(top level)", "a table", _show(data))
        self.used: set[str] = set()
        self.asked: set[str] = set()

    def key(self, k: str) -> str:
        return f"{self.path}.{k}" if self.path else k

    def err(self, k: str, expected: str, found=None, message=None):
        return InputError(self.src, self.key(k), expected, None if found is None else _show(found), message)

    def has(self, k):
        self.asked.add(k)
        return k in self.data

    def raw(self, k, default=None):
        self.asked.add(k)
        self.used.add(k)
        return self.data.get(k, default)

    def get(self, k, conv, default=None, required=False):
        self.asked.add(k)
        if k not in self.data:
            if required:
                # A misspelt required key: name the typo, not the missing key.
                typo = difflib.get_close_matches(k, [x for x in self.data if isinstance(x, str)], n=1, cutoff=0.75)
                if typo:
                    raise InputError(self.src, self.key(typo[0]), message=f"unknown key; did you mean \"{k}\"?")
                raise InputError(self.src, self.key(k), message="missing required key")
            return default
        self.used.add(k)
        v = self.data[k]
        try:
            return conv(v)
        except (ValueError, TypeError, OverflowError) as e:
            msg = str(e)
            if isinstance(v, str) and len(v) > MAX_SHOWN:  # a parser's message quoting the whole value
                msg = msg.replace(repr(v), _show(v)).replace(json.dumps(v), _show(v))
            msg = _compact(msg)
            raise InputError(self.src, self.key(k), message=msg[0].lower() + msg[1:] if msg else "invalid") from None

    def str(self, k, default=None, required=False, choices=None):
        def conv(v):
            if not isinstance(v, str):
                raise ValueError(f"expected a string, found {_show(v)}")
            if choices and v not in choices:
                raise ValueError(f"expected one of {', '.join(choices)}, found {_show(v)}")
            return v
        return self.get(k, conv, default, required)

    def int(self, k, default=None, minimum=None, required=False, maximum=I64_MAX):
        def conv(v):
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError(f"expected an integer, found {_show(v)}")
            if minimum is not None and v < minimum:
                raise ValueError(f"expected an integer >= {minimum}, found {v}")
            if maximum is not None and v > maximum:
                raise ValueError(f"expected an integer <= {maximum}, found {v}")
            return v
        return self.get(k, conv, default, required)

    def num(self, k, default=None, minimum=None, required=False):
        def conv(v):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ValueError(f"expected a number, found {_show(v)}")
            try:
                f = float(v)
            except OverflowError:
                f = math.inf
            if not math.isfinite(f):
                raise ValueError(f"expected a finite number, found {_show(v)}")
            if minimum is not None and f < minimum:
                raise ValueError(f"expected a number >= {minimum}, found {v}")
            return f
        return self.get(k, conv, default, required)

    def bool(self, k, default=None):
        def conv(v):
            if not isinstance(v, bool):
                raise ValueError(f"expected true or false, found {_show(v)}")
            return v
        return self.get(k, conv, default)

    def sub(self, k) -> "_Section | None":
        self.asked.add(k)
        if k not in self.data:
            return None
        self.used.add(k)
        return _Section(self.src, self.key(k), self.data[k])

    def finish(self, extra_hint: str = ""):
        unknown = [k for k in self.data if k not in self.used]
        if unknown:
            k = unknown[0]
            known = sorted(self.asked | self.used)
            raise InputError(self.src, self.key(k), message="unknown key" + _did_you_mean(k, known) + (
                f"; known keys here: {', '.join(known)}" if known else "") + extra_hint)


def _did_you_mean(k, known) -> str:
    close = difflib.get_close_matches(str(k), known, n=1, cutoff=0.6)
    return f"; did you mean \"{close[0]}\"?" if close else ""


def _show(v) -> str:
    if isinstance(v, str):
        if len(v) <= MAX_SHOWN:
            return json.dumps(v)
        head = v[:MAX_SHOWN - 20]
        m = re.search(r"\d{21}", head)
        if m:  # shown as typed, not shortened again as a long number
            head = head[:m.start() + 15]
        return json.dumps(head) + f"... ({len(v):,} characters)"
    if isinstance(v, dict):
        return "a table"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10**20:
        return _sci(str(v))
    return json.dumps(v) if isinstance(v, (bool, int, float)) else repr(v)


# Error lines stay short whatever the input holds: values are shown with at most MAX_SHOWN
# characters, numbers of more than 20 digits in scientific notation (`1e300bdp` is not echoed as
# its 300 digits of packets; a 64-bit value, up to 20 digits, is shown exactly: a seed of 2^64 is
# not "1.84e+19" against a limit of "1.84e+19").
MAX_SHOWN = 80
MAX_ERROR_PART = 1000


def _sci(digits: str) -> str:
    """A long run of digits (an integer, or one with a fraction) as `d.dde+N`."""
    sign = "-" if digits.startswith("-") else ""
    whole = digits.lstrip("-").split(".")[0].lstrip("0") or "0"
    if len(whole) <= 20:
        return digits
    return f"{sign}{whole[0]}.{whole[1:3]}e+{len(whole) - 1}"


def _compact(text):
    """`text` with long numbers in scientific notation and at most MAX_ERROR_PART characters."""
    if not isinstance(text, str):
        return text
    text = re.sub(r"-?\d{21,}(?:\.\d+)?", lambda m: _sci(m.group()), text)
    if len(text) > MAX_ERROR_PART:
        text = text[:MAX_ERROR_PART - 20] + f"... ({len(text):,} characters)"
    return text


def _compact_error(e: InputError) -> InputError:
    parts = (e.where, e.expected, e.found, e.message)
    short = tuple(_compact(x) for x in parts)
    if short == parts:
        return e
    return InputError(e.path, *short)


def _clock_cannot_honour(rate: float, size: int) -> tuple[float, float] | None:
    """None if a packet of ``size`` bytes every ``size x 8 / rate`` ns is at least 1 ns and within 1%
    of a whole number of ns (the engine's clock rounds it up); else (that time in ns, the rate that
    would really run)."""
    t = size * 8e9 / rate
    if t >= 1 and math.ceil(t - 1e-9) <= t * 1.01:
        return None
    return t, size * 8e9 / max(1, math.ceil(t - 1e-9))


def _link_rate(v) -> int:
    r = units.rate(v)
    if r < MIN_LINK_RATE_BPS:
        raise ValueError(f"expected a rate of at least 1kbps, found {_show(v)}")
    # A link serializes a packet in ceil(bytes x 8 / rate) ns (the engine's clock is 1 ns): a rate
    # at which a 1500-byte packet's time is under 1 ns, or rounds up by more than 1%, would run
    # slower than asked (100 Tbit/s as 12, 10 Tbit/s as 6), so it is refused, as for CBR sources.
    bad = _clock_cannot_honour(r, MTU)
    if bad:
        t, best = bad
        raise ValueError(f"expected a rate at which a {MTU}-byte packet takes at least 1 ns and within 1% of a whole "
                         f"number of ns (the engine's clock; at most {units.fmt_rate(MTU * 8e9)}), found {_show(v)} "
                         f"({t:.3g} ns: it would run at {units.fmt_rate(best)})")
    return r


def _delay(v) -> int:
    d = units.duration(v)
    if d > MAX_DELAY_NS:
        raise ValueError(f"expected a duration of at most 60s, found {_show(v)}")
    return d


def _positive(conv, what):
    def f(v):
        x = conv(v)
        if x <= 0:
            raise ValueError(f"expected {what} > 0, found {_show(v)}")
        return x
    return f


def convert_params(sec: _Section | None, specs: list, where: str, ctx_rate: int = 0, ctx_rtt: int = 0) -> dict:
    """Convert a model's parameter table using its spec (units from the core's registry)."""
    out = {}
    if sec is None:
        return out
    by_name = {s["name"]: s for s in specs}
    for k, v in sec.data.items():
        if k not in by_name:
            names = ", ".join(sorted(by_name)) or "(none)"
            raise InputError(sec.src, sec.key(k), message=f"unknown parameter of {where}" +
                             _did_you_mean(k, sorted(by_name)) + f"; expected one of: {names}")
        unit = by_name[k]["unit"]
        conv = {
            "duration": units.duration,
            "rate": units.rate,
            "bytes": units.size,
            "packets": units.packets,
        }.get(unit)
        if conv is not None:
            out[k] = sec.get(k, conv)
        elif unit == "float":
            out[k] = sec.num(k)
        elif unit == "int":
            out[k] = sec.int(k, maximum=U64_MAX if k == "seed" else I64_MAX)   # seeds: as scenario.seed
        elif unit == "bool":
            out[k] = sec.bool(k)
        elif unit == "choice":
            out[k] = sec.str(k, choices=by_name[k].get("choices"))
        else:  # pragma: no cover - a new unit kind in the core
            out[k] = sec.raw(k)
    return out


@dataclass
class Scenario:
    """A loaded scenario: the normalized core config plus what reports need."""
    path: str
    name: str
    config: dict
    meta: dict = field(default_factory=dict)
    raw: dict | None = field(default=None, repr=False, compare=False)

    def with_seed(self, seed: int) -> "Scenario":
        """The scenario with another seed (`--seed`); what derives from the seed (the default
        seed of synthetic videos) is derived again."""
        if not isinstance(seed, (bool, int)) and hasattr(seed, "__index__"):
            seed = seed.__index__()      # a numpy integer
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= U64_MAX:
            raise InputError(None, "--seed", f"an integer in 0..{U64_MAX}", str(seed))
        if self.raw is not None:
            return from_dict(self.raw, self.path, seed=seed, real=bool(self.meta.get("real")))
        s = copy.deepcopy(self)
        s.config["seed"] = seed
        return s

    def to_json(self) -> str:
        return json.dumps(self.config, separators=(",", ":"))


def load(path: str, standalone: bool = False, real: bool = False) -> Scenario:
    """Read and validate a scenario TOML file. `standalone` (the CLI): no ABR classes will be
    given at run time, so a bare `python:<name>` ABR is an error now rather than at run time."""
    data = read_toml(path)
    try:
        return from_dict(data, path, standalone=standalone, real=real)
    except RecursionError:
        raise InputError(path, None, message="values nested too deeply") from None


def read_toml(path: str) -> dict:
    """The parsed TOML of a scenario (or sweep) file: a regular file of at most 16 MiB; invalid
    UTF-8 or TOML, nesting too deep and integers of more digits than Python converts are
    :class:`InputError` naming the file (and line:column where known)."""
    raw = _read_scenario_file(path)
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(path, None, "UTF-8 text", "binary data") from None
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        where = None
        m = re.search(r"\s*\(at line (\d+), column (\d+)\)", msg)
        if m:
            where = f"{m.group(1)}:{m.group(2)}"
            msg = msg[:m.start()] + msg[m.end():]
        elif (m := re.search(r"\s*\(at end of document\)", msg)):
            where = str(raw.count(b"\n") + 1)
            msg = msg[:m.start()] + msg[m.end():]
        raise InputError(path, where, message=f"invalid TOML: {msg}") from None
    except RecursionError:
        raise InputError(path, None, message="invalid TOML: arrays or tables nested too deeply") from None
    except ValueError as e:   # tomllib's int(): "Exceeds the limit (4300 digits) ..."
        raise digit_limit_error(e, raw.decode("utf-8"), path, "integers", "[0-9_]", column=False) from None


#: Largest scenario file (a scenario is a few KB; this refuses /dev/zero and mistaken data files
#: before they are read into memory).
MAX_SCENARIO_FILE_BYTES = 16 * 2**20


def _read_scenario_file(path: str) -> bytes:
    """The bytes of scenario file `path`: a regular file of at most MAX_SCENARIO_FILE_BYTES (not a
    folder, a device such as /dev/zero or a FIFO, which could be endless)."""
    return read_input(path, "a TOML file", MAX_SCENARIO_FILE_BYTES)


def from_dict(data: dict, src: str = "<scenario>", seed: int | None = None, check: bool = True,
              standalone: bool = False, real: bool = False) -> Scenario:
    """Validate a scenario given as a dict (the parsed TOML). `seed` overrides the scenario's
    seed. With `check`, the core also builds the simulation from the config (without running
    it), so that a scenario that loads is one that runs. `real`: for `qoelab run --real`, which also
    runs clients of player "dashjs" (refused otherwise)."""
    try:
        return _from_dict(data, src, seed, check, standalone, real)
    except InputError as e:
        raise _compact_error(e) from None


def _from_dict(data: dict, src: str, seed: int | None, check: bool, standalone: bool, real: bool) -> Scenario:
    base_dir = os.path.dirname(os.path.abspath(src)) if os.path.exists(src) else os.getcwd()
    top = _Section(src, "", data)
    sc = top.sub("scenario")
    if sc is None:
        raise InputError(src, "scenario", message="missing required table [scenario]")
    name = sc.str("name", default=os.path.splitext(os.path.basename(src))[0])
    duration = sc.get("duration", units.duration, required=True)
    if not 0 < duration <= MAX_DURATION_NS:
        raise sc.err("duration", "a duration > 0 and at most 7 days", sc.data["duration"])
    file_seed = sc.int("seed", default=1, minimum=0, maximum=U64_MAX)
    seed = file_seed if seed is None else seed
    network = sc.str("network", default="packet", choices=["packet", "trace"])
    sc.finish()

    topo = top.sub("topology")
    if topo is None:
        raise InputError(src, "topology", message="missing required table [topology]")
    kind = topo.str("kind", default="dumbbell", choices=["dumbbell", "chain"])
    aqms = _describe("aqm")
    ccs = _describe("cc")

    flows_raw = data.get("flow", data.get("flows", []))
    flow_key = "flow" if "flow" in data else "flows"
    top.used.add(flow_key)
    top.asked.update(("flow", "client", "output"))
    if not isinstance(flows_raw, list):
        raise InputError(src, flow_key, "an array of tables [[flow]]", _show(flows_raw))
    clients_raw = data.get("client", [])
    top.used.add("client")
    if not isinstance(clients_raw, list):
        raise InputError(src, "client", "an array of tables [[client]]", _show(clients_raw))
    pages_raw = data.get("page", [])
    top.used.add("page")
    if not isinstance(pages_raw, list):
        raise InputError(src, "page", "an array of tables [[page]]", _show(pages_raw))
    providers_raw = data.get("provider", [])
    top.used.add("provider")
    if not isinstance(providers_raw, list):
        raise InputError(src, "provider", "an array of tables [[provider]]", _show(providers_raw))
    if not flows_raw and not clients_raw and not pages_raw:
        raise InputError(src, flow_key if flow_key in data else "flow",
                         message="expected at least one [[flow]], [[client]] or [[page]]")
    if pages_raw and network == "trace":
        raise InputError(src, "page", message="page loads run on the packet network only; use network = \"packet\"")

    builder = _Builder(src, base_dir, aqms, ccs)
    builder.duration = duration
    builder.seed = seed
    builder.network = network
    if kind == "dumbbell":
        builder.dumbbell(topo)
    else:
        builder.chain(topo)
    topo.finish()

    for i, fr in enumerate(flows_raw):
        builder.flow(_Section(src, f"{flow_key}[{i}]", fr))
    for i, cr in enumerate(clients_raw):
        builder.client(_Section(src, f"client[{i}]", cr))
    for i, pr in enumerate(pages_raw):
        if not isinstance(pr, dict):
            raise InputError(src, f"page[{i}]", "a table", _show(pr))
        builder.page(_Section(src, f"page[{i}]", pr))
    if providers_raw and network == "trace":
        raise InputError(src, "provider", message="providers run on the packet network only; use network = \"packet\"")
    for i, pr in enumerate(providers_raw):
        if not isinstance(pr, dict):
            raise InputError(src, f"provider[{i}]", "a table", _show(pr))
        builder.provider(_Section(src, f"provider[{i}]", pr))

    out = top.sub("output")
    output = {"sample_interval": 100_000_000,
              "tables": ["flows", "tcp", "queues", "web", "segments", "weights", "pages"]}
    pcap = None
    if out is not None:
        output["sample_interval"] = out.get("sample_interval", units.duration, 100_000_000)
        si = output["sample_interval"]
        if si < MIN_SAMPLE_INTERVAL_NS or duration // si > MAX_SAMPLES:
            raise out.err("sample_interval", f"a duration >= 1ms and at most {MAX_SAMPLES:,} samples per run "
                          f"(duration / sample_interval)", out.data["sample_interval"])

        def tables(v):
            ok = ["flows", "tcp", "queues", "packets", "web", "segments", "weights", "pages"]
            if not isinstance(v, list):
                raise ValueError(f"expected a list of table names from {ok}, found {_show(v)}")
            bad = [t for t in v if t not in ok]
            if bad:
                raise ValueError(f"expected a list of table names from {ok}, found {', '.join(map(repr, bad))}")
            return v
        output["tables"] = out.get("tables", tables, output["tables"])
        if out.bool("loss_phases", False):
            output["loss_phases"] = True
            for l in builder.monitored():
                builder.links[l]["packet_log"] = True
        if out.bool("packet_log", False):
            for l in builder.monitored():
                builder.links[l]["packet_log"] = True
            if "packets" not in output["tables"]:
                output["tables"].append("packets")
        pcap = out.get("pcap", lambda v: v if v is False or isinstance(v, str) else (_ for _ in ()).throw(
            ValueError(f"expected a link name or false, found {_show(v)}")), None)
        if isinstance(pcap, str):
            names = [l["name"] for l in builder.links]
            if pcap not in names:
                raise out.err("pcap", "a link name (one of " + ", ".join(names) + ")", pcap)
            builder.links[names.index(pcap)]["pcap"] = True
        out.finish()
    _check_table_sizes(src, builder, output, duration, out)
    if builder.cbr_over is not None:
        raise builder.cbr_over
    if network == "packet":
        _check_links(src, builder, duration, out)
    top.finish()
    config = {
        "name": name,
        "seed": seed,
        "duration": duration,
        "nodes": [{"name": n} for n in builder.nodes],
        "links": builder.links,
        "flows": builder.flows,
        "videos": builder.videos,
        "clients": builder.clients,
        "providers": builder.providers,
        "pages": builder.pages,
        "output": output,
        "network": network,
    }
    if network == "trace":
        if kind != "dumbbell":
            raise InputError(src, "scenario.network", "the dumbbell topology for trace mode", kind)
        if flows_raw:
            raise InputError(src, flow_key, message="trace mode simulates video clients only; remove the [[flow]] "
                             "entries or use network = \"packet\"")
        if out is not None:
            # trace mode has no packets: it writes summary.json and the segments table only
            for k in ("pcap", "packet_log", "loss_phases"):
                if out.data.get(k) not in (None, False):
                    raise InputError(src, out.key(k), message="trace mode has no packets to log; remove it or use "
                                     "network = \"packet\"")
            extra = [t for t in out.data.get("tables", []) if t != "segments"]
            if extra:
                raise InputError(src, out.key("tables"), message=f"trace mode writes the segments table only, found "
                                 f"{', '.join(extra)}; list [\"segments\"] or use network = \"packet\"")
        config["trace_schedule"] = builder.trace_schedule()
    result = Scenario(path=src, name=name, config=config, raw=data,
                      meta={"topology": kind, "bottleneck": builder.bottleneck, "python_abrs": builder.python_abrs,
                            "python_abr_sources": builder.python_abr_sources,
                            "origin": builder.origin, "link_origin": builder.link_origin,
                            "has_trace": builder.links[builder.hops[0]["down"]].get("trace") is not None,
                            "players": builder.players, "real": real})
    if builder.players and not real:
        where = next(iter(builder.players.values()))["where"]
        raise InputError(src, where, message="player \"dashjs\" (dash.js in Chromium) runs only on the real network: "
                         "use `qoelab run --real`")
    if check:
        check_core(result, standalone)
    return result


# Rows of the sampled tables (flows, tcp, queues) of one run, counted as duration / sample_interval x
# (flows + clients' connections + monitored links). Measured per row, the Rust table and its Python copy: flows
# 63 B, tcp 407 B (two strings), queues 103 B; 5 x 10^6 counted rows (1 flow, 2 links, all tables)
# took 1.35 GB of RSS, so 2.5 x 10^6 stay within ~1.2 GB whatever the mix.
MAX_SAMPLE_ROWS = 2_500_000
# Rows of the packet log, estimated from the monitored links' rates (an upper bound: the livi
# reproduction's runs estimate 1.2 x 10^7 and log a few thousand). What a run really logs is
# bounded by the run's memory limit (80 bytes a row, counted 3 times; ~8 x 10^6 rows at 2 GB).
MAX_PACKET_EVENTS = 50_000_000


def _connections(client: dict) -> int:
    """Connections a client's data plane opens at the start (chunklets: n; sprint and sprint-x: 2,
    the second for the RTT probe; otherwise 1). An `n` out of its range counts 1, so that the
    core's check names it (not the run's table sizes)."""
    dp = client.get("data_plane") or {}
    if dp.get("kind") in ("sprint", "sprint-x"):
        return 2
    n = (dp.get("params") or {}).get("n", 1)
    return n if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 64 else 1


def _check_table_sizes(src, b, output, duration, out) -> None:
    """Refuse runs whose tables would not fit in memory (rows are kept until the run ends)."""
    def where(k):
        return InputError(src, f"output.{k}" if out is not None and k in out.data else "scenario.duration",
                          message=msg)
    sampled = [t for t in ("flows", "tcp", "queues") if t in output["tables"]]
    if sampled:
        # a client counts once per connection of its data plane (chunklets n): each is sampled
        n = len(b.flows) + sum(_connections(c) for c in b.clients) + len(b.monitored())
        rows = duration // output["sample_interval"] * n
        if rows > MAX_SAMPLE_ROWS:
            msg = (f"expected at most {MAX_SAMPLE_ROWS:,} rows of {'/'.join(sampled)} samples, found ~{rows:,} "
                   f"(duration / sample_interval x {n} flows, client connections and links); raise sample_interval or shorten the run")
            raise where("sample_interval")
    logged = [l for l in b.links if l.get("packet_log")]
    if logged:
        pkts = sum(max(l["rate_bps"], _trace_mean(l.get("trace"))) for l in logged) / (8 * MTU) * duration / 1e9 * 2
        if pkts > MAX_PACKET_EVENTS:
            msg = (f"expected at most {MAX_PACKET_EVENTS:,} packet-log rows, found ~{pkts:,.0f} (link rate x duration); "
                   "shorten the run or turn the packet log off")
            raise where("packet_log" if out is not None and "packet_log" in out.data else "loss_phases")


def _link_packet_rates(b) -> list[float]:
    """Upper estimates of the packets per second each link serializes: its rate in MTU packets (or a
    CBR flow's own rate in its packets on the flow's access links; CBR flows of smaller packets add
    theirs on the hops they cross), at most one packet per ns."""
    pps = []
    for l in b.links:
        rate = max(l["rate_bps"], _trace_peak(l.get("trace")))
        pps.append(rate / (8 * MTU))
    for c in b.cbrs:
        for i in c["links"]:
            pps[i] = c["rate"] / (8 * c["size"])
        if c["size"] < MTU:
            first, last = c["hops"]
            for h in b.hops[first:last]:
                for i in (h["down"], h["up"]):
                    rate = max(b.links[i]["rate_bps"], _trace_peak(b.links[i].get("trace")))
                    pps[i] += min(c["rate"], rate) / (8 * c["size"])
    return [min(x, MAX_PACKETS_PER_NS * 1e9) for x in pps]


def _check_links(src, b, duration, out) -> None:
    """Refuse links whose packets in flight (rate x delay / packet size) or pcap would not fit in
    memory."""
    pps = _link_packet_rates(b)
    for i, l in enumerate(b.links):
        inflight = pps[i] * l["delay"] / 1e9
        if inflight > MAX_PACKETS_IN_FLIGHT:
            rate_key, delay_key = b.link_keys.get(i, ("topology", None))
            rate = max(l["rate_bps"], _trace_peak(l.get("trace")))
            raise InputError(src, delay_key or rate_key, message=(
                f"expected at most {MAX_PACKETS_IN_FLIGHT:,} packets in flight on a link (rate x delay / packet size; "
                f"each takes ~100 bytes of memory until it arrives), found ~{inflight:.3g} on link {l['name']} "
                f"({units.fmt_rate(rate)} x {units.fmt_duration(l['delay'])}); lower the rate or the delay"))
    reverse = {(l["from"], l["to"]): i for i, l in enumerate(b.links)}
    for i, l in enumerate(b.links):
        if not l.get("pcap"):
            continue
        # data packets on the link, and the ACKs of data sent the other way
        j = reverse.get((l["to"], l["from"]))
        acks = 0 if j is None else max(b.links[j]["rate_bps"], _trace_peak(b.links[j].get("trace"))) / (8 * MTU)
        records = min(pps[i] + acks, MAX_PACKETS_PER_NS * 1e9) * duration / 1e9
        size = records * PCAP_RECORD_BYTES
        if size > MAX_PCAP_BYTES:
            raise InputError(src, "output.pcap", message=(
                f"expected a pcap of at most 1 GiB (it is built in memory), found ~{size / 2**30:,.1f} GiB "
                f"(~{records:.3g} packets of link {l['name']} x {PCAP_RECORD_BYTES} bytes: link rate x duration / "
                "packet size); shorten the run or capture a slower link"))


class _StubAbr:
    """Stands in for a `python:<name>` ABR given only at run time (run(abrs=...)) while checking."""

    def __init__(self, **params):
        pass

    def choose(self, obs):  # pragma: no cover - never called (nothing is simulated)
        return 0


def check_core(sc: Scenario, standalone: bool = False) -> None:
    """Build the simulation from the normalized config in the core without running it; a core
    error becomes an InputError naming the scenario's key. Unless `standalone`, a bare
    `python:<name>` ABR (given to qoelab.run(abrs=...) later) is checked with a stand-in."""
    from qoelab import _core
    if not hasattr(_core, "check"):  # an extension built before check() existed
        return
    classes = dict(sc.meta.get("python_abrs", {}))
    if not standalone:
        for c in sc.config.get("clients", []):
            if c["abr"].startswith("python:") and c["abr"] not in classes:
                classes[c["abr"]] = _StubAbr
    try:
        _core.check(sc.to_json(), classes or None)
    except ValueError as e:
        raise core_error(sc, e) from None


def abr_client_path(config: dict, path: str, msg) -> tuple[str, str]:
    """A Python ABR that failed during a run is reported by the core at ``abr``, its message starting
    with the ABR's name (``python:m:C: choose() raised ...``); the client that uses it, as a config
    path (``clients[i].abr``), so that the error names ``client[i].abr`` (it said ``<file>:abr``)."""
    if path != "abr" or not isinstance(msg, str):
        return path, msg
    hits = [i for i, c in enumerate(config.get("clients", [])) if msg.startswith(str(c.get("abr")) + ":")]
    if not hits:
        return path, msg
    more = f" (the ABR of {len(hits)} clients; the first is named)" if len(hits) > 1 else ""
    return f"clients[{hits[0]}].abr", msg + more


def core_error(sc: Scenario, e: ValueError) -> Exception:
    """The InputError for a core ValueError(path, message) about `sc` (other errors unchanged)."""
    if len(e.args) != 2:
        return e
    path, msg = e.args
    if path == "config":  # the normalized config did not parse: a value out of the core's range
        msg = re.sub(r"\s*at line \d+ column \d+", "", str(msg)).removeprefix("config: ")
        return InputError(sc.path, None, message=f"a value is out of range ({msg})")
    path, msg = abr_client_path(sc.config, path, msg)
    key, detail = core_key(sc.meta, path)
    msg = "; ".join(x for x in (detail, msg) if x) or "invalid value"
    return InputError(sc.path, key, message=msg)


# Field names of the normalized config that differ from the scenario's keys.
_FLOW_FIELDS = {"rate_bps": "rate", "bytes": "size", "src": "", "dst": "", "server": "", "client": "",
                "video": "video"}
_PLAYER_FIELDS = {"startup_buffer": "startup", "startup_segments": "startup"}
_LINK_FIELDS = {"rate": "rate", "trace": "trace", "loss": "loss", "aqm": "aqm", "aqm_params": "aqm_params",
                "buffer": "buffer", "buffer_packets": "buffer", "buffer_bytes": "buffer"}


def core_key(meta: dict, path: str) -> tuple[str | None, str]:
    """Map a path of the normalized config (`links[2].aqm_params.alpha`, `clients[0].video.sizes`)
    to the scenario key it came from, plus detail that has no scenario key (e.g. a field of a
    video file). Never returns an internal path."""
    m = re.fullmatch(r"links\[(\d+)\](?:\.([A-Za-z_]+))?(.*)", path)
    if m:
        lo = meta.get("link_origin", {}).get(int(m.group(1)))
        field_, rest = m.group(2) or "", m.group(3)
        if lo is None:
            return "topology", ""
        sec, suffix, access = lo
        if access:
            return ("topology.access_rate", "") if field_ == "rate" else (sec, "")
        if field_ in _LINK_FIELDS:
            rest_key, detail = (rest, "") if re.fullmatch(r"(\.[A-Za-z_]\w*)*", rest) else ("", rest.lstrip("."))
            return f"{sec}.{_LINK_FIELDS[field_]}{suffix}{rest_key}", detail
        return sec, ""
    m = re.fullmatch(r"(providers\[\d+\])\.params\.(\w+)", path)
    if m and m.group(1) in meta.get("origin", {}):
        return f"{meta['origin'][m.group(1)]}.{m.group(2)}", ""
    for prefix, key in meta.get("origin", {}).items():
        if path == prefix or path.startswith(prefix + "."):
            rest = path[len(prefix) + 1:]
            if not rest:
                return key, ""
            head, _, tail = rest.partition(".")
            head = _FLOW_FIELDS.get(head, head)
            if not head:
                return key, ""
            if head == "video" and tail:
                return f"{key}.video", tail
            if head == "player" and tail:
                # the core's player errors read "<field>: <message>"
                m = re.fullmatch(r"(\w+): (.*)", tail, flags=re.S)
                if m:
                    f = _PLAYER_FIELDS.get(m.group(1), m.group(1))
                    return f"{key}.player.{f}", m.group(2)
                return f"{key}.player", tail
            return f"{key}.{head}" + (f".{tail}" if tail else ""), ""
    if path in ("duration", "seed", "network"):
        return f"scenario.{path}", ""
    if path.startswith("output."):
        return path, ""
    if path.startswith("trace_schedule"):
        return ("topology.trace" if meta.get("has_trace") else "topology.rate"), ""
    if path == "nodes":
        return "topology", "too many hosts"
    return None, ""


class _Builder:
    """Expands a topology and flows into nodes, links and flows."""

    def __init__(self, src, base_dir, aqms, ccs):
        self.src, self.base_dir, self.aqms, self.ccs = src, base_dir, aqms, ccs
        self.nodes: list[str] = []
        self.links: list[dict] = []
        self.flows: list[dict] = []
        self.hops: list[dict] = []  # (down link idx, up link idx, delay) per bottleneck hop
        self.routers: list[int] = []
        self.bottleneck = None
        self.default_rtt = None
        self.access_rate = None
        self.videos: list[dict] = []
        self.video_keys: dict = {}
        self.clients: list[dict] = []
        self.duration = 0
        self.abrs = None
        self.planes = None
        self.flowctls = None
        self.providers = []
        self.pages = []
        self.client_groups = {}
        self.python_abrs: dict = {}
        self.python_abr_sources: dict = {}   # spec -> SHA-256 of the module's file (sweep run keys)
        # normalized config path prefix -> scenario key (for errors raised by the core)
        self.origin: dict[str, str] = {}
        #: clients[i] -> its dash.js player (clients of player "dashjs" only)
        self.players: dict[int, dict] = {}
        # link index -> (scenario key of its section, key suffix "" or "_up", access link?)
        self.link_origin: dict[int, tuple] = {}
        self.seed = 1
        self.network = "packet"
        self.node_names: set[str] = set()
        #: link index -> (scenario key of its rate, of its delay or None when the delay is a default)
        self.link_keys: dict[int, tuple] = {}
        self.topo_rtt_key = None  # "topology.rtt" when the file sets it
        #: CBR flow instances: {"links": its access links, "hops": (first, last), "rate", "size"}
        self.cbrs: list[dict] = []
        # running totals of the memory / run-time limits (over all entries)
        self.web_flows = 0.0
        self.sessions = 0.0
        self.video_values = 0.0
        self.onoff_writes = 0.0
        self.cbr_packets = 0.0
        self.cbr_over = None  # the error of the CBR flow that crossed MAX_CBR_PACKETS
        self.page_objects = 0
        self.entry_names = {"flow": set(), "page": set()}

    def node(self, name):
        self.nodes.append(name)
        self.node_names.add(name)
        return len(self.nodes) - 1

    def check_count(self, sec: _Section, count: int):
        """Each instance of an entry adds two hosts; the routing table grows with the square of the
        nodes (MAX_NODES)."""
        n = len(self.nodes) + 2 * count
        if n > MAX_NODES and "count" not in sec.data:  # too many entries
            raise InputError(self.src, sec.path, message=f"expected at most {MAX_NODES:,} nodes in the scenario (each "
                             "flow, client or page copy adds two hosts; the routing table grows with the square of "
                             f"the nodes), found {n:,} with this entry")
        if n > MAX_NODES:
            raise sec.err("count", f"a count that keeps the scenario within {MAX_NODES:,} nodes (each copy adds two "
                          f"hosts; the routing table grows with the square of the nodes), found {count:,} "
                          f"({n:,} nodes)")

    def link(self, name, a, b, rate, delay, origin=("topology", "", False), **kw):
        d = {"name": name, "from": a, "to": b, "rate_bps": rate, "delay": delay}
        d.update(kw)
        self.links.append(d)
        self.link_origin[len(self.links) - 1] = origin
        return len(self.links) - 1

    def monitored(self):
        return [i for i, l in enumerate(self.links) if l.get("monitor")]

    def _queue(self, sec: _Section, suffix: str, rate: int, rtt: int, default_aqm: str, default_buffer):
        aqm = sec.str("aqm" + suffix, default=default_aqm)
        if aqm not in self.aqms:
            raise sec.err("aqm" + suffix, "one of " + ", ".join(sorted(self.aqms)), aqm)
        params = convert_params(sec.sub("aqm_params" + suffix), self.aqms[aqm]["params"], f"aqm {aqm}")
        buf = sec.get("buffer" + suffix, lambda v: units.buffer(v, rate or 10_000_000, rtt, MTU, MAX_QUEUE_PACKETS),
                      None)
        if buf is None:
            buf = default_buffer
        if buf and buf.get("bytes", 0) > MAX_QUEUE_BYTES:
            raise InputError(self.src, sec.key("buffer" + suffix), "a buffer of at most 1 GiB (a queue of small "
                             "packets takes ~100 bytes of memory each)",
                             f"{_show(sec.data.get('buffer' + suffix))} ({buf['bytes']:,} bytes)")
        unit = {s["name"]: s.get("unit") for s in self.aqms[aqm]["params"]}
        for name, v in params.items():
            if name not in ("limit", "limit_bytes") or not isinstance(v, (int, float)):
                continue
            where = f"aqm_params{suffix}.{name}"
            # below one full packet the queue takes nothing (pfifo 0, bfifo 0, a 1-byte limit: the
            # link silently carried no data); 0 is "no limit" where the discipline says so
            none = "" if aqm in ("pfifo", "bfifo", "red", "ared") else ", or 0 for none"
            if unit.get(name) == "packets" and (v > MAX_QUEUE_PACKETS or (v < 1 and not none)):
                raise sec.err(where, f"a limit of 1 to {MAX_QUEUE_PACKETS:,} packets{none}", v)
            if unit.get(name) == "bytes" and (v > MAX_QUEUE_BYTES or (v < MTU and (v != 0 or not none))):
                raise sec.err(where, f"a limit of {MTU} bytes (one full-size packet) to 1 GiB{none}", v)
        q = {"aqm": aqm, "aqm_params": params}
        if buf:
            if "packets" in buf:
                q["buffer_packets"] = buf["packets"]
            else:
                q["buffer_bytes"] = buf["bytes"]
        return q

    def _trace(self, sec: _Section, k: str):
        if not sec.has(k):
            return None
        p = sec.str(k)
        fmt = sec.str(k + "_format", default="auto", choices=["auto", "mahimahi", "sabre", "pensieve", "voxel"])
        from qoelab import filememo, traces
        if p.startswith("data:"):
            full = os.path.join(traces.data_dir(), p[5:])
        else:
            full = p if os.path.isabs(p) else os.path.join(self.base_dir, p)
        if not os.path.exists(full):
            raise sec.err(k, "an existing trace file (\"data:...\" paths are relative to $QOELAB_DATA, default "
                          "../shared/data)", p)
        _regular_file(sec, k, full)
        parse = functools.partial(traces.load_trace, format=None if fmt == "auto" else fmt)
        if os.path.getsize(full) > _TRACE_MEMO_MAX_BYTES:
            return parse(full)
        # parsed once per unchanged file in this process, as JSON videos are: a sweep builds every run's
        # scenario, and the largest reference trace took 0.28 s a run to parse (7.8 h for 100,000 runs)
        return filememo.load(_TRACE_MEMO.setdefault(fmt, {}), full, parse)

    def _loss(self, sec: _Section, k: str):
        if not sec.has(k):
            return None
        v = sec.data[k]
        if isinstance(v, dict):
            ls = sec.sub(k)
            kind = ls.str("kind", required=True, choices=["iid", "bursty"])
            if kind == "iid":
                out = {"kind": "iid", "rate": ls.get("rate", units.probability, required=True)}
            else:
                out = {"kind": "bursty", "rate": ls.get("rate", units.probability, 1.0),
                       "p_enter": ls.get("p_enter", units.probability, required=True),
                       "p_leave": ls.get("p_leave", units.probability, required=True)}
            ls.finish()
            return out
        return {"kind": "iid", "rate": sec.get(k, units.probability)}

    def _profile(self, t: _Section):
        """`rate_profile = [["0s", "4Mbps"], ["120s", "1Mbps"], ...]`: a stepwise rate schedule
        (no loop; the last rate holds until the end)."""
        if not t.has("rate_profile"):
            return None

        def conv(v):
            if not isinstance(v, list) or not v or not all(isinstance(x, list) and len(x) == 2 for x in v):
                raise ValueError('expected a list of [time, rate] pairs like [["0s", "4Mbps"], ["120s", "1Mbps"]]')
            pts = [(units.duration(a), _link_rate(b)) for a, b in v]
            if pts[0][0] != 0:
                raise ValueError("expected the first step at time 0s")
            if any(b[0] <= a[0] for a, b in zip(pts, pts[1:])):
                raise ValueError("expected strictly increasing times")
            return pts
        pts = t.get("rate_profile", conv)
        end = max(self.duration, pts[-1][0] + 1)
        segs = []
        for (a, r), nxt in zip(pts, pts[1:] + [(end, None)]):
            segs.append([nxt[0] - a, r, 0])
        return {"kind": "rates", "segments": segs, "loop": False}

    def dumbbell(self, t: _Section):
        rate = t.get("rate", _link_rate, None)
        trace = self._trace(t, "trace")
        profile = self._profile(t)
        if profile is not None:
            if rate is not None or trace is not None:
                raise t.err("rate_profile", "only one of rate, trace, rate_profile", "several")
            trace = profile
        elif rate is not None and trace is not None:
            raise InputError(self.src, t.key("trace"), message="only one of rate, trace, rate_profile drives the "
                             "downstream link, found rate and trace (rate_up sets the upstream)")
        if rate is None and trace is None:
            raise InputError(self.src, t.key("rate"), message="missing required key (or give a trace)")
        rate_up = t.get("rate_up", _link_rate, rate)
        trace_up = self._trace(t, "trace_up")
        if rate_up is None and trace_up is None:
            if self.network != "trace":
                raise InputError(self.src, t.key("rate_up"), message="missing: needed when the downstream uses a trace "
                                                                        "or a rate_profile (or give trace_up)")
            rate_up = max(MIN_LINK_RATE_BPS, _trace_mean(trace))  # trace mode does not use the upstream
        delay = t.get("delay", _delay, 0)
        self.default_rtt = t.get("rtt", _delay, 40_000_000)
        self.topo_rtt_key = t.key("rtt") if "rtt" in t.data else None
        bdp_rtt = t.get("bdp_rtt", _delay, self.default_rtt)
        self.access_rate = t.get("access_rate", _link_rate, 1_000_000_000)
        nominal = rate or _trace_mean(trace)
        nominal_up = rate_up or _trace_mean(trace_up)
        qd = self._queue(t, "", nominal, bdp_rtt, "pfifo", {"packets": 1000})
        qu = self._queue(t, "_up", nominal_up, bdp_rtt, "pfifo", {"packets": 1000})
        r1 = self.node("router-server")
        r2 = self.node("router-client")
        self.routers = [r1, r2]
        down = self.link("bottleneck", r1, r2, rate or 0, delay, monitor=True, **qd)
        up = self.link("bottleneck_up", r2, r1, rate_up or 0, delay, origin=("topology", "_up", False), monitor=True,
                       **qu)
        if trace is not None:
            self.links[down]["trace"] = trace
        if trace_up is not None:
            self.links[up]["trace"] = trace_up
        rate_key = next((t.key(k) for k in ("rate", "trace", "rate_profile") if k in t.data), t.key("rate"))
        self.link_keys[down] = (rate_key, t.key("delay"))
        self.link_keys[up] = (next((t.key(k) for k in ("rate_up", "trace_up") if k in t.data), rate_key),
                              t.key("delay"))
        for li, k in ((down, "loss"), (up, "loss_up")):
            loss = self._loss(t, k)
            if loss:
                self.links[li]["loss"] = loss
        self.hops = [{"down": down, "up": up, "delay": delay}]
        self.bottleneck = {"link": "bottleneck", "rate_bps": nominal, "buffer": qd.get("buffer_packets"),
                           "aqm": qd["aqm"]}

    def chain(self, t: _Section):
        self.default_rtt = t.get("rtt", _delay, 40_000_000)
        self.topo_rtt_key = t.key("rtt") if "rtt" in t.data else None
        bdp_rtt = t.get("bdp_rtt", _delay, self.default_rtt)
        self.access_rate = t.get("access_rate", _link_rate, 1_000_000_000)
        hops = t.data.get("hop")
        t.used.add("hop")
        t.asked.add("hop")
        if not isinstance(hops, list) or not hops:
            raise InputError(self.src, t.key("hop"), message="expected at least one [[topology.hop]]")
        if len(hops) + 1 > MAX_NODES:
            raise InputError(self.src, t.key("hop"), f"at most {MAX_NODES - 1:,} hops (the routing table grows with "
                             "the square of the nodes)", f"{len(hops):,}")
        self.routers = [self.node("router-0")]
        for i, h in enumerate(hops):
            hs = _Section(self.src, t.key(f"hop[{i}]"), h)
            rate = hs.get("rate", _link_rate, required=True)
            rate_up = hs.get("rate_up", _link_rate, rate)
            delay = hs.get("delay", _delay, 0)
            qd = self._queue(hs, "", rate, bdp_rtt, "pfifo", {"packets": 1000})
            qu = self._queue(hs, "_up", rate_up, bdp_rtt, "pfifo", {"packets": 1000})
            r = self.node(f"router-{i + 1}")
            a = self.routers[-1]
            down = self.link(f"hop{i}", a, r, rate, delay, origin=(hs.path, "", False), monitor=True, **qd)
            up = self.link(f"hop{i}_up", r, a, rate_up, delay, origin=(hs.path, "_up", False), monitor=True, **qu)
            loss = self._loss(hs, "loss")
            if loss:
                self.links[down]["loss"] = loss
            self.link_keys[down] = (hs.key("rate"), hs.key("delay"))
            self.link_keys[up] = (hs.key("rate_up") if "rate_up" in hs.data else hs.key("rate"), hs.key("delay"))
            hs.finish()
            self.routers.append(r)
            self.hops.append({"down": down, "up": up, "delay": delay})
        self.bottleneck = {"link": "hop0", "rate_bps": self.links[self.hops[0]["down"]]["rate_bps"]}

    def trace_schedule(self):
        """The bottleneck's rate over time as trace-mode periods (latency set per client)."""
        link = self.links[self.hops[0]["down"]]
        tr = link.get("trace")
        if tr is None:
            return [{"duration": max(self.duration, 1), "rate_bps": link["rate_bps"], "latency": 0}]
        if tr["kind"] == "opportunities":
            from qoelab import traces
            tr = traces.opportunities_to_rates(tr, bin_ns=100_000_000, merge_empty=True)
        return [{"duration": d, "rate_bps": r, "latency": 0} for d, r, _ in tr["segments"]]

    def hostpair(self, label: str, rtt: int, first: int, last: int, sec: _Section):
        """Server-side host at router `first`, client-side host at router `last`; the server's
        access link carries the propagation delay that makes the base RTT."""
        path_delay = sum(h["delay"] for h in self.hops[first:last])
        access = rtt // 2 - path_delay
        if access < 0:
            if not sec.has("rtt"):   # the RTT is the topology's (or its default): the delay is what is too long
                raise InputError(self.src, "topology", f"a path propagation delay of at most half the RTT "
                                 f"({units.fmt_duration(rtt)}: topology.rtt, or its default)",
                                 f"{path_delay / 1e6:g} ms (topology.delay or the hops' delays)")
            raise sec.err("rtt", f"an RTT >= 2 x the path's propagation delay ({2 * path_delay / 1e6:g} ms)",
                          units.fmt_duration(rtt))
        if len(self.nodes) + 2 > MAX_NODES:
            raise InputError(self.src, sec.path, message=f"expected at most {MAX_NODES:,} nodes in the scenario (each "
                             "flow, client or page copy adds two hosts; the routing table grows with the square of "
                             "the nodes)")
        for host in (f"{label}-server", f"{label}-client"):
            if host in self.node_names:
                raise sec.err("name", "a name of its own (flows, clients and pages name their hosts and links: "
                              f"host \"{host}\" exists already)", label)
        s = self.node(f"{label}-server")
        c = self.node(f"{label}-client")
        ra, rb = self.routers[first], self.routers[last]
        big = {"aqm": "pfifo", "aqm_params": {}, "buffer_packets": 10_000}
        o = (sec.path, "", True)
        keys = ("topology.access_rate", sec.key("rtt") if "rtt" in sec.data else self.topo_rtt_key)
        for name, a, b, d in ((f"{label}-server-up", s, ra, access), (f"{label}-server-down", ra, s, access),
                              (f"{label}-client-down", rb, c, 0), (f"{label}-client-up", c, rb, 0)):
            self.link_keys[self.link(name, a, b, self.access_rate, d, origin=o, **big)] = keys
        return s, c

    def flow(self, f: _Section):
        kind = f.str("kind", default="bulk", choices=["bulk", "cbr", "web", "onoff"])
        name = _entry_name(f, f"{kind}{len(self.flows)}")
        if name in self.entry_names["flow"]:
            raise f.err("name", "a name not used by another [[flow]] entry", name)
        self.entry_names["flow"].add(name)
        count = f.int("count", default=1, minimum=1)
        rtt = f.get("rtt", _delay, self.default_rtt)
        direction = f.str("direction", default="down", choices=["down", "up"])
        first = f.int("from_hop", default=0, minimum=0, maximum=len(self.hops) - 1)
        last = f.int("to_hop", default=len(self.hops), minimum=1, maximum=len(self.hops))
        if last > len(self.hops) or first >= last:
            raise f.err("to_hop", f"0 <= from_hop < to_hop <= {len(self.hops)}", last)
        start = f.get("start", units.duration, 0)
        stagger = f.get("stagger", units.duration, 0)
        stop = f.get("stop", units.duration, None)
        if stop is not None and stop <= start:
            raise f.err("stop", "a time after start", f.data["stop"])
        common = {}
        if kind in ("bulk", "web", "onoff"):
            common["tcp"], common["cc"], common["cc_params"] = _tcp_cc(self, f)
        span = max(0, min(stop if stop is not None else self.duration, self.duration) - start)
        if kind == "bulk":
            transport = f.str("transport", default="tcp", choices=["tcp", "quic"])
            if transport == "quic":
                if "tcp" in f.data:
                    raise f.err("tcp", "no [flow.tcp] options with transport = \"quic\" (TCP options do not "
                                "apply to QUIC)", f.data["tcp"])
                # only QUIC flows carry the key: TCP scenarios keep their configuration (and hash)
                common["transport"] = "quic"
                q = f.sub("quic")
                if q is not None:
                    common["quic"] = _quic_options(q)
            elif "quic" in f.data:
                raise f.err("quic", "no [flow.quic] options without transport = \"quic\"", f.data["quic"])
            size = f.get("size", _positive(units.size, "a size"), None)
            if size is not None:
                common["bytes"] = size

            def sched(v):
                if not isinstance(v, list) or not all(isinstance(x, list) and len(x) == 2 for x in v):
                    raise ValueError("expected a list of [time, weight] pairs like [[\"100s\", 3.0]]")
                out = []
                for t, w in v:
                    if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 < w < math.inf:
                        raise ValueError(f"expected a list of [time, weight] pairs with finite weights > 0, "
                                         f"found weight {_show(w)}")
                    out.append([units.duration(t), float(w)])
                return out
            ws = f.get("weight_schedule", sched, None)
            if ws:
                common["weight_schedule"] = ws
        elif kind == "onoff":
            common["bytes"] = f.get("size", units.size, required=True)
            common["period"] = f.get("period", units.duration, required=True)
            if common["bytes"] <= 0 or common["period"] <= 0:
                raise f.err("period", "size > 0 and period > 0", f.data.get("period"))
        elif kind == "cbr":
            common["rate_bps"] = f.get("rate", _link_rate, required=True)
            if common["rate_bps"] > self.access_rate:
                raise f.err("rate", f"a rate <= the access links' {units.fmt_rate(self.access_rate)} "
                            "(topology.access_rate)", f.data["rate"])
            common["packet_size"] = f.int("packet_size", default=MTU, minimum=28, maximum=65_535)
            _check_cbr_interval(f, common["rate_bps"], common["packet_size"])
        else:
            ar = f.num("arrival_rate", required=True, minimum=0)
            if ar <= 0:
                raise f.err("arrival_rate", "flows per second > 0", ar)
            common["arrival_rate"] = ar
            common["sizes"] = _load_sizes(f, self.base_dir)
        if start + (count - 1) * stagger > units.MAX_DURATION_NS:
            raise f.err("stagger", "start + (count - 1) x stagger of at most 100 years", f.data.get("stagger"))
        self.check_count(f, count)
        self._check_flow_work(f, kind, count, span, common)
        f.finish()
        for k in range(count):
            label = name if count == 1 else f"{name}-{k}"
            s, c = self.hostpair(label, rtt, first, last, f)
            if kind == "cbr":
                self.cbrs.append({"links": range(len(self.links) - 4, len(self.links)), "hops": (first, last),
                                  "rate": common["rate_bps"], "size": common["packet_size"]})
            src, dst = (s, c) if direction == "down" else (c, s)
            d = {"kind": kind, "name": label, "src": src, "dst": dst, "start": start + k * stagger}
            if stop is not None:
                d["stop"] = stop
            d.update(copy.deepcopy(common))
            self.origin[f"flows[{len(self.flows)}]"] = f.path
            self.flows.append(d)


def _check_flow_work(self, f: _Section, kind: str, count: int, span: int, common: dict) -> None:
    """Totals over all flow entries of what grows with the run: web flows (each keeps its state to
    the end), onoff writes and CBR packets (CPU time). The CBR total is reported after the table
    sizes (`cbr_over`): a run with too many sample rows is told that first."""
    if kind == "onoff":
        # one engine event and one TCP write per period (1 B every 1 ns for 10 s never ends)
        self.onoff_writes += count * span / common["period"]
        if self.onoff_writes > MAX_ONOFF_WRITES:
            raise f.err("period", f"a period that keeps the onoff flows at most {MAX_ONOFF_WRITES:,} writes per run "
                        f"(count x (stop - start) / period, over all onoff flows), found {_show(f.data['period'])} "
                        f"(~{self.onoff_writes:,.0f} writes)")
    elif kind == "web":
        self.web_flows += count * common["arrival_rate"] * span / 1e9
        if self.web_flows > MAX_WEB_ARRIVALS:
            raise f.err("arrival_rate", f"at most {MAX_WEB_ARRIVALS:,} web flows expected over the run (count x "
                        "arrival_rate x (stop - start), over all web flows: each keeps its state to the end), "
                        f"found {_show(common['arrival_rate'])} per second (~{self.web_flows:,.0f} flows)")
    elif kind == "cbr":
        self.cbr_packets += count * common["rate_bps"] * span / 1e9 / (8 * common["packet_size"])
        if self.cbr_packets > MAX_CBR_PACKETS and self.cbr_over is None:
            self.cbr_over = f.err("rate", f"at most {MAX_CBR_PACKETS:,} CBR packets per run (count x rate x (stop - "
                                  f"start) / packet size, over all CBR flows), found {_show(f.data['rate'])} "
                                  f"(~{self.cbr_packets:.3g} packets); lower the rate or shorten the run")


_Builder._check_flow_work = _check_flow_work


def _check_cbr_interval(f: _Section, rate: int, size: int) -> None:
    """A CBR source sends a packet every ceil(size x 8 / rate) ns (the engine's clock is 1 ns): refuse
    rates that interval cannot honour within 1% (above size x 8 Gbit/s it would be clamped to 1 ns,
    and e.g. 10 Tbit/s of 1500-byte packets, 1.2 ns, would run at 6 Tbit/s)."""
    bad = _clock_cannot_honour(rate, size)
    if bad:
        interval, best = bad
        raise f.err("rate", f"a rate whose packet interval (packet_size x 8 / rate) is at least 1 ns and within 1% "
                    f"of a whole number of ns, the engine's clock: at most {units.fmt_rate(size * 8e9)} for "
                    f"{size}-byte packets, found {_show(f.data['rate'])} ({interval:.3g} ns; it would run at "
                    f"{units.fmt_rate(min(best, size * 8e9))})")


MAX_INPUT_FILE_BYTES = 256 * 2**20


def _regular_file(sec: _Section, k: str, full: str, allow_dir: bool = False) -> None:
    """Input files must be regular files of a sane size (not /dev/zero, a FIFO or a 10 GB file)."""
    if allow_dir and os.path.isdir(full):
        return
    if not os.path.isfile(full):
        raise sec.err(k, "a regular file" + (" or a folder" if allow_dir else ""), sec.data.get(k))
    if os.path.getsize(full) > MAX_INPUT_FILE_BYTES:
        raise sec.err(k, "a file of at most 256 MiB", sec.data.get(k))


def default_cc(tcp: dict) -> str:
    """The congestion control of a flow or client without a `cc` key: the host profile's own
    (`[....tcp] profile = "freebsd10"` is a FreeBSD NewReno host), else Linux's cubic."""
    return "newreno" if tcp.get("profile") == "freebsd10" else "cubic"


def _tcp_cc(b, sec: _Section) -> tuple[dict, str, dict]:
    """A section's `[...tcp]` options, `cc` (default: the TCP profile's) and `[...cc_params]`."""
    tcp = convert_params(sec.sub("tcp"), _describe_tcp(), "tcp")
    cc = sec.str("cc", default=default_cc(tcp))
    if cc not in b.ccs:
        raise sec.err("cc", "one of " + ", ".join(sorted(b.ccs)), cc)
    return tcp, cc, convert_params(sec.sub("cc_params"), b.ccs[cc]["params"], f"cc {cc}")


def _quic_options(q: _Section) -> dict:
    """A bulk flow's `[flow.quic]` table (docs/models/transport-quic.md, Parameters): only the
    keys given, in engine units (bytes, packets, ns)."""
    out = {}
    for k, lo, hi in (("max_datagram", 1200, 1472), ("initial_window", 1, 1000),
                      ("ack_eliciting_threshold", 1, 100), ("max_ack_ranges", 1, 4)):
        v = q.int(k, minimum=lo, maximum=hi)
        if v is not None:
            out[k] = v
    d = q.get("max_ack_delay", units.duration, None)
    if d is not None:
        if not 0 <= d <= 16_383_000_000:
            raise q.err("max_ack_delay", "a duration of 0 to 16383ms", q.data["max_ack_delay"])
        out["max_ack_delay"] = d
    for k in ("pacing", "handshake"):
        v = q.bool(k)
        if v is not None:
            out[k] = v
    fr = q.num("unreliable_fraction", minimum=0)
    if fr is not None:
        if fr > 1:
            raise q.err("unreliable_fraction", "a number in [0, 1]", q.data["unreliable_fraction"])
        out["unreliable_fraction"] = fr
    per = q.get("unreliable_period", _positive(units.size, "a size"), None)
    if per is not None:
        if per > 1 << 40:
            raise q.err("unreliable_period", "a size of at most 1TiB", q.data["unreliable_period"])
        out["unreliable_period"] = per
    q.finish()
    return out


@functools.lru_cache(maxsize=None)
def _describe_tcp():
    """The ``[client.tcp]`` / ``[flow.tcp]`` parameters (cached and shared like :func:`_describe`)."""
    from qoelab import _core
    if hasattr(_core, "describe_tcp"):
        return json.loads(_core.describe_tcp())
    return []


def _trace_peak(trace) -> int:
    """The highest rate of a trace (the mean rate of an opportunity trace)."""
    if trace is None:
        return 0
    if trace["kind"] == "opportunities":
        return _trace_mean(trace)
    return max((r for _, r, _ in trace["segments"]), default=0)


def _trace_mean(trace) -> int:
    if trace is None:
        return 0
    if trace["kind"] == "opportunities":
        return int(len(trace["times_ns"]) * trace.get("bytes_per_opportunity", 1504) * 8e9 / trace["period_ns"])
    total = sum(d for d, _, _ in trace["segments"])
    return int(sum(d * r for d, r, _ in trace["segments"]) / total)


BUILTIN_SIZES = {}


def _load_sizes(f: _Section, base_dir: str):
    v = f.raw("sizes", "builtin:web")
    if not isinstance(v, str):
        raise f.err("sizes", "\"builtin:web\" or a CDF file path", v)
    from qoelab import flowsizes
    if v.startswith("builtin:"):
        try:
            return flowsizes.builtin(v.split(":", 1)[1])
        except KeyError:
            raise f.err("sizes", "builtin:" + " or builtin:".join(flowsizes.BUILTIN), v) from None
    full = v if os.path.isabs(v) else os.path.join(base_dir, v)
    if os.path.exists(full):
        _regular_file(f, "sizes", full)
    return flowsizes.load_cdf(full)


def _describe_abr():
    return _describe("abr")


def _startup(v):
    """Player startup: "1seg"/"3segments" (segments downloaded) or a duration of buffered media."""
    if isinstance(v, str):
        import re
        m = re.fullmatch(r"\s*(\d+)\s*(seg|segs|segment|segments)\s*", v)
        if m:
            n = int(m.group(1))
            if n < 1:
                raise ValueError("expected at least 1 segment")
            return {"Segments": n}
    try:
        return {"Buffer": units.duration(v)}
    except ValueError:
        raise ValueError(f'expected a segment count like "1seg" or a duration like "2s", found {_show(v)}') from None


@functools.lru_cache(maxsize=16)
def _synthetic(ladder: str, n: int, seed: int) -> dict:
    """A synthetic video (cached: a sweep builds the same video for thousands of runs; callers get a
    shallow copy and never change the nested lists)."""
    from qoelab import video as vmod
    return vmod.synthetic_video(ladder, n_segments=n, seed=seed, name=f"{ladder}-seed{seed}")


_VIDEO_MEMO: dict = {}
_TRACE_MEMO: dict = {}              # trace format -> filememo dict (Builder._trace)
_TRACE_MEMO_MAX_BYTES = 32 << 20    # larger trace files are parsed every time (the memo keeps what it parses)


def _load_video_file(path: str) -> dict:
    """``video.load_video(path)``. A JSON video (Video JSON, Sabre movie: self-contained files) is parsed
    and validated once per unchanged file in this process (qoelab.filememo): a reproduction names
    the same few files in hundreds of scenarios. Callers get a shallow copy and never change the
    nested lists (as ``_synthetic``). Folders and manifests, whose content is spread over files the
    file identity does not cover, are read every time."""
    from qoelab import filememo
    from qoelab import video as vmod
    if os.path.isfile(path) and path.lower().endswith(".json"):
        return dict(filememo.load(_VIDEO_MEMO, path, vmod.load_video))
    return vmod.load_video(path)


def _load_client_video(b, sec: _Section):
    spec = sec.str("video", default="synthetic:has-testbed")
    seed = sec.int("video_seed", default=b.seed, minimum=0, maximum=U64_MAX)
    dur = sec.get("video_duration", _positive(units.duration, "a duration"), None)
    key = (spec, seed, dur)
    if key in b.video_keys:
        return b.video_keys[key]
    from qoelab import video as vmod
    if spec.startswith("synthetic:"):
        ladder = spec.split(":", 1)[1]
        from qoelab.video.ladders import LADDERS
        if ladder not in LADDERS:
            raise sec.err("video", "synthetic:<ladder> with a ladder of " + ", ".join(LADDERS), spec)
        seg = LADDERS[ladder].segment_duration_s
        n = 300 if dur is None else max(1, math.ceil(dur / (seg * 1e9) - 1e-9))
        if n > MAX_SEGMENTS:
            raise sec.err("video_duration", f"at most {MAX_SEGMENTS:,} segments of {seg:g} s",
                          sec.data["video_duration"])
        v = dict(_synthetic(ladder, n, seed))
    else:
        from qoelab import traces
        if spec.startswith("data:"):
            path = os.path.join(traces.data_dir(), spec[5:])
        elif spec.startswith("corpus:"):
            try:
                from qoelab.content import corpus
            except ImportError:
                raise sec.err("video", "a corpus clip (the content corpus is not installed)", spec) from None
            v = corpus.load_video(spec.split(":", 1)[1])
            path = None
        else:
            path = spec if os.path.isabs(spec) else os.path.join(b.base_dir, spec)
        if path is not None:
            if not os.path.exists(path):
                raise sec.err("video", "an existing video file (Sabre movie JSON, MPD, HLS playlist, Video JSON, "
                              "Pensieve size folder), synthetic:<ladder> or corpus:<clip>", spec)
            _regular_file(sec, "video", path, allow_dir=True)
            v = _load_video_file(path)
        if dur is not None:
            n = math.ceil(dur / v["segment_duration"] - 1e-9)
            if n > MAX_SEGMENTS:
                raise sec.err("video_duration", f"at most {MAX_SEGMENTS:,} segments of "
                              f"{v['segment_duration'] / 1e9:g} s", sec.data["video_duration"])
            v = _fit_duration(v, dur)
            offs = v.get("byte_offsets")
            if offs is not None and any(o + z >= 2**64 for o, z in zip(offs[-1], v["sizes"][-1])):
                raise sec.err("video_duration", "a duration whose tiled byte layout (the video's file repeated) "
                              "ends below 2^64 bytes", sec.data["video_duration"])
    b.videos.append(v)
    b.video_keys[key] = len(b.videos) - 1
    return len(b.videos) - 1


def _fit_duration(v: dict, dur_ns: int) -> dict:
    """Truncate (or tile) a video to cover dur_ns of media. A byte layout is truncated likewise; when
    tiled, each rung's file is extended by repeating its media part (first segment to the end of the
    last), so copy c of segment i sits at ``offset[i] + c x (end of the last segment - offset[0])``."""
    n = max(1, math.ceil(dur_ns / v["segment_duration"] - 1e-9))
    k = len(v["sizes"])
    v = dict(v)
    offs = v.get("byte_offsets")
    if offs is not None:
        period = [e + s - o for e, s, o in zip(offs[-1], v["sizes"][-1], offs[0])]
        v["byte_offsets"] = [[o + (i // k) * p for o, p in zip(offs[i % k], period)] for i in range(n)]
    v["sizes"] = [v["sizes"][i % k] for i in range(n)]
    v["quality"] = {m: [t[i % k] for i in range(n)] for m, t in v.get("quality", {}).items()}
    vx = v.get("voxel")
    if vx is not None and offs is not None:
        # VOXEL's ranges follow the byte layout: copy c of segment i shifted by c periods
        def shifted(seg: dict, d: int) -> dict:
            if d == 0:
                return seg
            return {"reliable": [[a + d, b + d] for a, b in seg["reliable"]],
                    "unreliable": [[a + d, b + d] for a, b in seg["unreliable"]], "ssims": seg["ssims"]}
        v["voxel"] = dict(vx, segments=[[shifted(vx["segments"][i % k][r], (i // k) * period[r])
                                         for r in range(len(period))] for i in range(n)])
    v["last_segment_duration"] = None
    return v


def _entry_name(sec: _Section, default: str) -> str:
    """The `name` of a [[flow]], [[client]] or [[page]]: without the separators of the flow names
    the run makes from it (web flows `NAME#k`, session clients `NAME#k`, connections `NAME/req`,
    `NAME/c1/req~1`), so that no two flows share a name, and with it an FQ flow-queue hash or a
    random stream."""
    name = sec.str("name", default=default)
    if "/" in name or "#" in name:
        raise sec.err("name", "a name without '/' or '#' (the run names its web flows NAME#k and its "
                      "connections NAME/c1/req)", name)
    return name


def _client(b, c: _Section):
    if b.abrs is None:
        b.abrs = _describe_abr()
    name = _entry_name(c, f"client{len(b.clients)}")
    if name in b.client_groups:
        raise c.err("name", "a name not used by another [[client]] entry (providers name clients by it)", name)
    count = c.int("count", default=1, minimum=1)
    abr = c.str("abr", default="dynamic")
    kind, ps = "qoelab", None
    if isinstance(c.data.get("player"), str):
        kind = c.str("player", choices=list(PLAYERS))
    else:
        ps = c.sub("player")
        if ps is not None:
            kind = ps.str("kind", default="qoelab", choices=list(PLAYERS))
    browser = None
    if kind == "dashjs":
        browser = _dashjs_client(c, ps, abr)
        # The simulator's counterpart of dash.js's rule stands in the normalized config (the core checks
        # it); the player that runs is dash.js (meta["players"], docs/realnet.md).
        abr, abr_params, ps = browser["core_abr"], {}, None
    elif abr.startswith("python:"):
        from qoelab import abr as pyabr
        if ":" in abr[len("python:"):]:  # python:<module or file>:<Class>; a bare python:<name> comes from run(abrs=...)
            b.python_abrs[abr] = pyabr.resolve(abr, b.base_dir, c.src, c.key("abr"))
            b.python_abr_sources[abr] = pyabr.source_digest(b.python_abrs[abr])
        ap = c.sub("abr_params")
        abr_params = {}
        if ap is not None:
            for k in ap.data:
                abr_params[k] = ap.raw(k)
    else:
        if abr not in b.abrs:
            raise c.err("abr", "one of " + ", ".join(sorted(b.abrs)) + ", or python:<module>:<Class>", abr)
        abr_params = convert_params(c.sub("abr_params"), b.abrs[abr]["params"], f"abr {abr}")
    vid = _load_client_video(b, c)
    rtt = c.get("rtt", _delay, b.default_rtt)
    start = c.get("start", units.duration, 0)
    stagger = c.get("stagger", units.duration, 0)
    tcp, cc, cc_params = _tcp_cc(b, c)
    transport, quic = c.str("transport", default="tcp", choices=["tcp", "quic"]), None
    if transport == "quic":
        if "tcp" in c.data:
            raise c.err("tcp", "no [client.tcp] options with transport = \"quic\" (TCP options do not apply to QUIC)",
                        c.data["tcp"])
        if kind == "dashjs":
            raise c.err("transport", "\"tcp\" for player \"dashjs\" (Chromium's HTTP/1.1 over the kernel's TCP)",
                        transport)
        q = c.sub("quic")
        quic = _quic_options(q) if q is not None else {}
    elif "quic" in c.data:
        raise c.err("quic", "no [client.quic] options without transport = \"quic\"", c.data["quic"])
    player = None
    if ps is not None:
        player = {}
        bm = ps.get("buffer_max", _positive(units.duration, "a duration"), None)
        if bm is not None:
            player["buffer_max"] = bm
            player["abr_buffer_max"] = False
        st = ps.get("startup", _startup, None)
        if st is not None:
            player["startup"] = st
        rr = ps.get("rebuffer_resume", units.duration, None)
        if rr is not None:
            player["rebuffer_resume"] = rr
        qm = ps.str("quality_metric", default=None)
        if qm is not None:
            if qm not in b.videos[vid].get("quality", {}):
                raise ps.err("quality_metric", "a quality table of the video (" +
                             (", ".join(b.videos[vid].get("quality", {})) or "it has none") + ")", qm)
            player["quality_metric"] = qm
        ps.finish()
    http = {}
    hs = c.sub("http")
    if hs is not None:
        def small_size(v):
            x = units.size(v)
            if x > 10**9:
                raise ValueError(f"expected a size of at most 1GB, found {_show(v)}")
            return x
        for k, conv in (("request_bytes", small_size), ("response_header_bytes", small_size),
                        ("think", _delay), ("progress_interval", _positive(_delay, "a duration"))):
            v = hs.get(k, conv, None)
            if v is not None:
                http[k] = v
        hs.finish()
    data_plane = None
    ds = c.sub("data_plane")
    if ds is not None:
        if b.planes is None:
            b.planes = _describe("data_plane")
        kind = ds.str("kind", default="sequential", choices=sorted(b.planes))
        rest = _Section(ds.src, ds.path, {k: v for k, v in ds.data.items() if k != "kind"})
        data_plane = {"kind": kind, "params": convert_params(rest, b.planes[kind]["params"], f"data plane {kind}")}
        ds.used.update(ds.data.keys())
        ds.finish()
        if data_plane == {"kind": "sequential", "params": {}}:
            data_plane = None   # the default, written out: the same configuration (config_hash, sweep keys)
    first = c.int("from_hop", default=0, minimum=0, maximum=len(b.hops) - 1)
    last = c.int("to_hop", default=len(b.hops), minimum=1, maximum=len(b.hops))
    arrival_rate = c.num("arrival_rate", default=None, minimum=0)
    stop = c.get("stop", units.duration, None)
    copies = count
    if arrival_rate is not None:
        span = max(0, min(stop if stop is not None else b.duration, b.duration) - start)
        if arrival_rate <= 0:
            raise c.err("arrival_rate", "sessions per second > 0", arrival_rate)
        b.sessions += arrival_rate * span / 1e9
        if b.sessions > MAX_SESSIONS:
            raise c.err("arrival_rate", f"at most {MAX_SESSIONS:,} video sessions expected over the run "
                        "(arrival_rate x (stop - start), over all clients: each session keeps its state and a copy "
                        "of the video), "
                        f"found {_show(arrival_rate)} per second (~{b.sessions:,.0f} sessions)")
        if count != 1:
            raise c.err("count", "1 when arrival_rate is set (sessions share the entry's hosts)", count)
        copies = math.ceil(arrival_rate * span / 1e9)
    if start + (count - 1) * stagger > units.MAX_DURATION_NS:
        raise c.err("stagger", "start + (count - 1) x stagger of at most 100 years", c.data.get("stagger"))
    b.check_count(c, count)
    # each client and session holds its own copy of the video (~26 bytes per segment and rung)
    v = b.videos[vid]
    values = len(v["sizes"]) * max((len(r) for r in v["sizes"][:1]), default=1) * (1 + len(v.get("quality") or {}))
    b.video_values += copies * values
    if b.video_values > MAX_CLIENT_VIDEO_VALUES:
        k = ("arrival_rate" if arrival_rate is not None else "count" if count > 1
             else "video_duration" if "video_duration" in c.data else "video")
        raise c.err(k, f"at most {MAX_CLIENT_VIDEO_VALUES:,} video values held by all clients and sessions (copies x "
                    "segments x rungs x (1 + quality tables): each client and session holds its own copy of its "
                    f"video), found ~{b.video_values:,.0f} ({copies:,} copies of a video of "
                    f"{len(v['sizes']):,} segments)")
    c.finish()
    b.client_groups.setdefault(name, []).extend(name if count == 1 else f"{name}-{k}" for k in range(count))
    for k in range(count):
        label = name if count == 1 else f"{name}-{k}"
        s, cl = b.hostpair(label, rtt, first, last, c)
        d = {"name": label, "server": s, "client": cl, "video": vid, "abr": abr, "abr_params": abr_params,
             "cc": cc, "cc_params": cc_params, "tcp": tcp, "start": start + k * stagger, "http": http, "rtt": rtt}
        if transport == "quic":
            # only QUIC clients carry the keys: TCP scenarios keep their configuration (and hash)
            d["transport"] = "quic"
            if quic:
                d["quic"] = quic
        if player is not None:
            d["player"] = player
        if data_plane is not None:
            d["data_plane"] = data_plane
        if arrival_rate is not None:
            d["arrival_rate"] = arrival_rate
            if stop is not None:
                d["stop"] = stop
        b.origin[f"clients[{len(b.clients)}]"] = c.path
        if browser is not None:
            b.players[len(b.clients)] = dict(browser, where=f"{c.path}.player")
        b.clients.append(d)


_Builder.client = _client

#: `[[client]] player`: qoelab's own sans-IO player, or dash.js 5 in headless Chromium (real network only).
PLAYERS = {"qoelab": "qoelab's sans-IO player (any ABR of the registry)",
           "dashjs": "dash.js 5 in headless Chromium (qoelab run --real only)"}


def _dashjs_client(c: _Section, ps: "_Section | None", abr: str) -> dict:
    """A dash.js client's settings: its ABR is dash.js's own rules (qoelab.dashjs.ABR), the optional
    `[client.player]` table (`kind = "dashjs"`) may set `buffer_max` (dash.js's buffer targets) and
    `set` (dash.js settings, "KEY=VALUE" strings as `qoelab dashjs --set`)."""
    from qoelab import dashjs
    if abr not in dashjs.ABR:
        raise c.err("abr", "a dash.js ABR for player \"dashjs\" (" + ", ".join(dashjs.ABR) + ")", abr)
    for k in ("abr_params", "cc_params", "tcp", "data_plane", "http", "arrival_rate"):
        if k in c.data:
            raise InputError(c.src, c.key(k), message="not available for player \"dashjs\" (dash.js in Chromium "
                             "has its own HTTP stack and ABR; its connections' TCP is the kernel's)")
    buffer_max, sets = None, []
    if ps is not None:
        buffer_max = ps.get("buffer_max", _positive(units.duration, "a duration"), None)

        def strings(v):
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise ValueError(f"expected a list of \"KEY=VALUE\" strings (dash.js settings), found {_show(v)}")
            try:
                dashjs.apply_sets({}, v)
            except InputError as e:   # the --set message, without its "--set: "
                raise ValueError(str(e).removeprefix("--set: ")) from None
            return v
        sets = ps.get("set", strings, [])
        ps.finish(extra_hint=" (player \"dashjs\" takes kind, buffer_max, set)")
    core = abr if abr in ("dynamic", "bola", "throughput") else "dynamic"
    return {"kind": "dashjs", "abr": abr, "core_abr": core,
            "buffer_max_s": None if buffer_max is None else buffer_max / 1e9, "set": sets}

WEIGHTED_CC = ("wcubic", "multcp", "fast")


def _provider(b, p: _Section):
    """A `[[provider]]`: a flow controller over named clients. A name is a client's name, or the
    name of a `[[client]]` entry with `count`, which covers all its copies (`a` = `a-0`, `a-1`...);
    an arrival entry's name covers its sessions."""
    if b.flowctls is None:
        b.flowctls = _describe("flow_controller")
    i = len(b.providers)
    name = p.str("name", default=f"provider{i}")
    if any(q["name"] == name for q in b.providers):
        raise p.err("name", "a name not used by another provider", name)
    controller = p.str("controller", default="none", choices=sorted(b.flowctls))

    def names(v):
        if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
            raise ValueError(f"expected a non-empty list of client names, found {_show(v)}")
        return v
    listed = p.get("clients", names, required=True)
    labels = []
    known = {c["name"]: k for k, c in enumerate(b.clients)}
    for n in listed:
        group = b.client_groups.get(n)
        if group is None and n in known:
            group = [n]
        if group is None:
            raise p.err("clients", "client names of [[client]] entries (" + ", ".join(sorted(b.client_groups)) + ")",
                        n)
        for lbl in group:
            if lbl in labels or any(lbl in q["clients"] for q in b.providers):
                raise p.err("clients", "each client in one provider only", lbl)
            labels.append(lbl)
    vfs = []
    if "value_functions" in p.data:
        from qoelab import minerva as mv

        def files(v):
            if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
                raise ValueError(f"expected a non-empty list of value-function files, found {_show(v)}")
            return v
        for fpath in p.get("value_functions", files):
            full = fpath if os.path.isabs(fpath) else os.path.join(b.base_dir, fpath)
            try:
                vfs.append(mv.load_value_function(full, p.key("value_functions")))
            except InputError as e:
                raise InputError(p.src, e.where, message=e.message) from None
    norm_table = None
    if "normalization_file" in p.data:
        from qoelab import minerva as mv
        if "normalization" not in {s["name"] for s in b.flowctls[controller]["params"]}:
            raise p.err("normalization_file", "no normalization_file (the controller has no normalization)",
                        p.data["normalization_file"])
        fpath = p.str("normalization_file")
        if p.data.get("normalization", "file") != "file":
            raise p.err("normalization_file", 'normalization = "file" (or no normalization key) with a normalization '
                        "file", p.data["normalization"])
        full = fpath if os.path.isabs(fpath) else os.path.join(b.base_dir, fpath)
        try:
            norm_table = mv.load_normalization(full, p.key("normalization_file"))
        except InputError as e:
            raise InputError(p.src, e.where, message=e.message) from None
    rest = _Section(p.src, p.path, {k: v for k, v in p.data.items()
                                    if k not in ("name", "controller", "clients", "value_functions",
                                                 "normalization_file")})
    params = convert_params(rest, b.flowctls[controller]["params"], f"flow controller {controller}")
    if norm_table is not None:
        params["normalization"] = "file"
    p.used.update(p.data.keys())
    if "w_min" in params and "w_max" in params and params["w_min"] > params["w_max"]:
        raise p.err("w_min", f"w_min <= w_max ({params['w_max']})", params["w_min"])
    metric = params.get("metric", "vmaf") if "metric" in {s["name"] for s in b.flowctls[controller]["params"]} else None
    for lbl in labels:
        c = b.clients[known[lbl]]
        origin = b.origin.get(f"clients[{known[lbl]}]", "client")
        if controller != "none" and c["cc"] not in WEIGHTED_CC:
            raise InputError(p.src, f"{origin}.cc", message=f"client {lbl} is served by provider {name} "
                             f"({controller}), which sets weights: expected one of {', '.join(WEIGHTED_CC)}, "
                             f"found {_show(c['cc'])}")
        if metric is not None and metric != "bitrate" and metric not in b.videos[c["video"]].get("quality", {}):
            have = ", ".join(b.videos[c["video"]].get("quality", {})) or "it has none"
            raise p.err("metric", f"a quality table of the video of client {lbl} ({have})", metric)
    p.finish()
    b.origin[f"providers[{i}]"] = p.path
    b.providers.append({"name": name, "controller": controller, "clients": labels, "params": params,
                        "value_functions": vfs, "normalization_table": norm_table})


_Builder.provider = _provider


MAX_PAGE_OBJECTS = 100_000


def _page(b, p: _Section):
    """A `[[page]]`: a browser loading a web page (a HAR file or a handcrafted page) over HTTP/1.1
    from one server host, `count` times (each copy on its own hosts)."""
    from qoelab.pageload import cli as plcli
    name = _entry_name(p, f"page{len(b.pages)}")
    if name in b.entry_names["page"]:
        raise p.err("name", "a name not used by another [[page]] entry", name)
    b.entry_names["page"].add(name)
    count = p.int("count", default=1, minimum=1)
    if ("har" in p.data) == ("handcrafted" in p.data):
        raise InputError(p.src, p.key("har"), message="expected exactly one of har = \"FILE.har\" or "
                         "handcrafted = \"NAME\" (e.g. \"mixed\", \"8x100KB\")")
    if "har" in p.data:
        hp = p.str("har")
        full = hp if os.path.isabs(hp) else os.path.join(b.base_dir, hp)
        _regular_file(p, "har", full)
        page = plcli.load_page(full)
    else:
        hc = p.str("handcrafted")
        try:
            page = plcli.load_page("hand:" + hc)
        except InputError as e:
            raise InputError(p.src, p.key("handcrafted"), e.expected, e.found) from None
    if len(page.objects) > MAX_PAGE_OBJECTS:
        raise p.err("har", f"a page of at most {MAX_PAGE_OBJECTS:,} objects", len(page.objects))
    rtt = p.get("rtt", _delay, b.default_rtt)
    start = p.get("start", units.duration, 0)
    stagger = p.get("stagger", units.duration, 0)
    tcp, cc, cc_params = _tcp_cc(b, p)
    max_per_origin = p.int("max_per_origin", default=6, minimum=1, maximum=64)
    max_total = p.int("max_total", default=17, minimum=1, maximum=64)
    http = {}
    hs = p.sub("http")
    if hs is not None:
        v = hs.get("request_bytes", units.size, None)
        if v is not None:
            if not 1 <= v <= 10**6:
                raise hs.err("request_bytes", "a size of 1 B to 1 MB", hs.data["request_bytes"])
            http["request_bytes"] = v
        v = hs.get("think", _delay, None)
        if v is not None:
            http["think"] = v
        hs.finish()
    tls = {}
    ts = p.sub("tls")
    if ts is not None:
        for k in ("client_hello", "server_hello", "client_finished", "server_finished"):
            v = ts.get(k, units.size, None)
            if v is not None:
                if not 1 <= v <= 10**6:
                    raise ts.err(k, "a size of 1 B to 1 MB", ts.data[k])
                tls[k] = v
        ts.finish()
    first = p.int("from_hop", default=0, minimum=0, maximum=len(b.hops) - 1)
    last = p.int("to_hop", default=len(b.hops), minimum=1, maximum=len(b.hops))
    if start + (count - 1) * stagger > units.MAX_DURATION_NS:
        raise p.err("stagger", "start + (count - 1) x stagger of at most 100 years", p.data.get("stagger"))
    b.check_count(p, count)
    b.page_objects += count * len(page.objects)
    if b.page_objects > MAX_PAGE_OBJECTS_TOTAL:
        raise p.err("count" if count > 1 else "har" if "har" in p.data else "handcrafted",
                    f"at most {MAX_PAGE_OBJECTS_TOTAL:,} page objects over all page loads (count x objects of the "
                    f"page), found ~{b.page_objects:,} ({count:,} x {len(page.objects):,} objects)")
    p.finish()
    sizes, origins, tlss, parents = page.core_tuple()
    objects = [{"size": sz, "origin": o, "tls": t, "parent": None if q < 0 else q}
               for sz, o, t, q in zip(sizes, origins, tlss, parents)]
    load = {"objects": objects, "max_per_origin": max_per_origin, "max_total": max_total, "http": http, "tls": tls}
    for k in range(count):
        label = name if count == 1 else f"{name}-{k}"
        srv, cl = b.hostpair(label, rtt, first, last, p)
        b.origin[f"pages[{len(b.pages)}]"] = p.path
        b.pages.append({"name": label, "server": srv, "client": cl, "cc": cc, "cc_params": cc_params, "tcp": tcp,
                        "start": start + k * stagger, "load": copy.deepcopy(load) if k else load})


_Builder.page = _page
