"""A page as the flow model sees it (objects with size, origin, TLS flag, parent), plus the HAR
timing it came from."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Obj:
    size: int            # bytes on the wire (body + response headers), >= 1
    host: str            # origin (host name[:port])
    tls: bool
    parent: int | None   # index of the object whose completion enables this one (< own index)
    url: str = ""
    har_start_s: float = 0.0    # relative to the page's first request
    har_finish_s: float = 0.0
    # HAR timing phases in seconds (blocked, connect, wait, receive) when the load's were recorded
    timings: dict | None = None


@dataclass
class Page:
    name: str
    objects: list[Obj] = field(default_factory=list)
    dropped: int = 0     # HAR entries dropped (size < 1 byte)

    def core_tuple(self) -> tuple[list[int], list[int], list[bool], list[int]]:
        """(sizes, origin indices, TLS flags, parents or -1) for ``qoelab._core``."""
        hosts: dict[str, int] = {}
        origins = [hosts.setdefault(o.host, len(hosts)) for o in self.objects]
        return ([o.size for o in self.objects], origins, [o.tls for o in self.objects],
                [-1 if o.parent is None else o.parent for o in self.objects])

    @property
    def total_bytes(self) -> int:
        return sum(o.size for o in self.objects)

    @property
    def n_hosts(self) -> int:
        return len({o.host for o in self.objects})

    def children(self) -> list[list[int]]:
        ch: list[list[int]] = [[] for _ in self.objects]
        for i, o in enumerate(self.objects):
            if o.parent is not None:
                ch[o.parent].append(i)
        return ch
