"""The metadata of one trace (:class:`TraceMeta`): what the reader learnt about the file
beside its tables (format, CPUs, clock, time span, lost events, event counts, the
damage it read around), in one typed, frozen record.

Every reader builds one; :class:`schedwake.Trace` carries it as ``trace.meta``. A
copy with some facts changed (a slice, a trace renamed to the path it was given as) is
``dataclasses.replace(meta, ...)``. :meth:`TraceMeta.to_dict` and
:meth:`TraceMeta.from_dict` convert at the boundaries that speak JSON (the libtracecmd
child's pipe), with the key names of earlier versions' dict
(:data:`schedwake.schema.META_KEYS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True, slots=True)
class SliceFacts:
    """What a slice of a trace (:meth:`schedwake.Trace.sliced`) remembers of the whole
    trace; a slice of a slice keeps the whole trace's."""

    #: The window's part of the whole trace's duration (0 to 1): the detectors scale
    #: the amounts they count by it (``detect.for_slice``).
    share: float
    #: The events the whole trace has records of: one the slice lacks did not happen
    #: in it, rather than was not recorded.
    events: tuple[str, ...]
    #: The window's bounds (trace timestamps, ns).
    t0_ns: int
    t1_ns: int
    #: The whole trace's first and last timestamps.
    whole_first_ns: int
    whole_last_ns: int


@dataclass(frozen=True, slots=True)
class TraceMeta:
    """The facts a reader gives about a trace file, beside its tables."""

    #: The file that was read (as given; ``"-"`` for standard input).
    path: str
    #: The input format (a name of :data:`schedwake.ingest.FORMATS`; ``"synthetic"``
    #: for :mod:`schedwake.synth`'s traces).
    format: str
    #: The number of CPUs the trace covers (None where the file does not say and no
    #: event shows one).
    cpus: int | None
    #: The trace clock (``"local"``, ``"global"``, ``"counter"``, ...), None if unknown.
    clock: str | None
    #: The first and last event timestamps (the ``ts`` unit); None without events.
    first_ts_ns: int | None
    last_ts_ns: int | None
    #: The kernel release, None where the file does not say.
    kernel: str | None
    #: Events the ring buffer lost, by CPU: at least this many (see ``lost_unknown``).
    lost_events: Mapping[int, int]
    #: CPUs whose buffer also lost an unknown number of events.
    lost_unknown: tuple[int, ...]
    #: Events in the file by name, read or not.
    event_counts: Mapping[str, int]
    #: The subsystem of each event (``"sched"``, ``"workqueue"``, ...; None unknown).
    systems: Mapping[str, str | None]
    #: One-line texts of damage the reader read around and bounded (every report
    #: shows them among its caveats); empty for a whole, clean file.
    warnings: tuple[str, ...]
    #: The format's own facts (trace.dat's version and compression, whether the text
    #: was sorted, perf.data's header, ...), open-ended per reader; every reader sets
    #: ``source["timestamps"]``: ``"ns"``, ``"us"`` (text printed with microseconds)
    #: or ``"raw"`` (clock ticks, see ``schema.RAW_CLOCKS``).
    source: Mapping[str, Any]
    #: The CPU map the file's header records (perf.data's CACHE, CPU_TOPOLOGY and
    #: NUMA_TOPOLOGY: ``{"cpus", "llc", "level", "smt", "numa"}``), None otherwise.
    topology: Mapping[str, Any] | None = None
    #: The CPUs whose events a CPU slice kept (None: every CPU of ``cpus``).
    recorded_cpus: tuple[int, ...] | None = None
    #: For a slice of a trace: what it remembers of the whole trace.
    slice: SliceFacts | None = None

    @property
    def ncpus(self) -> int:
        """``cpus``, or 1 where the trace does not say."""
        return int(self.cpus or 1)

    @property
    def timestamps(self) -> str | None:
        """The unit of the timestamps (``source["timestamps"]``): ``"ns"``, ``"us"``
        or ``"raw"`` clock ticks."""
        unit = self.source.get("timestamps")
        return None if unit is None else str(unit)

    def to_dict(self) -> dict[str, Any]:
        """The metadata as the plain dict of earlier versions (``schema.META_KEYS``, and
        ``topology``, ``recorded_cpus`` and ``slice`` where they are set), with lists
        for the tuples: what :meth:`from_dict` reads back."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _OPTIONAL and value is None:
                continue
            if isinstance(value, SliceFacts):
                value = {g.name: getattr(value, g.name) for g in fields(value)}
                value["events"] = list(value["events"])
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, Mapping):
                value = dict(value)
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TraceMeta:
        """The record of a metadata dict with the keys of :meth:`to_dict` (missing
        optional ones are None; ``lost_events`` keys become ints)."""
        whole = d.get("slice")
        return cls(
            path=str(d["path"]),
            format=str(d["format"]),
            cpus=d.get("cpus"),
            clock=d.get("clock"),
            first_ts_ns=d.get("first_ts_ns"),
            last_ts_ns=d.get("last_ts_ns"),
            kernel=d.get("kernel"),
            lost_events={int(c): int(n) for c, n in (d.get("lost_events") or {}).items()},
            lost_unknown=tuple(int(c) for c in d.get("lost_unknown") or ()),
            event_counts=dict(d.get("event_counts") or {}),
            systems=dict(d.get("systems") or {}),
            warnings=tuple(str(w) for w in d.get("warnings") or ()),
            source=dict(d.get("source") or {}),
            topology=d.get("topology"),
            recorded_cpus=(None if d.get("recorded_cpus") is None else tuple(d["recorded_cpus"])),
            slice=None
            if whole is None
            else SliceFacts(**{**whole, "events": tuple(whole.get("events") or ())}),
        )


_OPTIONAL = ("topology", "recorded_cpus", "slice")
