"""The facts of a trace as a JSON-ready dict: counts, CPUs, duration, clock, lost
events and the reader's warnings (what ``schedwake info`` prints and every report
carries as its ``trace`` section)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .ingest.meta import TraceMeta
from .model.events import timestamp_problem

if TYPE_CHECKING:
    from .model.completeness import Told
    from .trace import Trace


def summary(trace: Trace) -> dict[str, Any]:
    """The trace's facts as a JSON-ready dict (the keys of ``schedwake info --format json``),
    with what it shows and does not (``completeness``: :func:`completeness`)."""
    return {**meta_summary(trace.meta), "completeness": completeness(trace)}


def completeness(trace: Trace) -> dict[str, Any] | None:
    """What the trace proves of who ran on each CPU and the contradictions it shows
    (:mod:`schedwake.model.completeness`; docs/semantics.md, 'Incomplete traces'), as a
    JSON-ready dict: ``complete``; ``breaks`` (per kind, all CPUs); ``cpus`` (per CPU:
    each kind's count, ``unknown_s`` and ``unknown_share`` of the time from its first
    sched_switch to the end); ``kinds`` (what each kind means); ``lines`` (one sentence
    per CPU with contradictions). None when the trace was read without its events or
    has no sched_switch (then nothing about the CPUs is known to check). (``schedwake
    info`` on a file whose events cannot be analysed gives ``{"not_checked": why}``.)"""
    if not trace.has_records("sched_switch"):
        return None
    from .errors import TraceError

    try:
        comp = trace.model.completeness
    except TraceError as exc:  # (raw clock ticks: no model) said, not "no sched_switch"
        return {"not_checked": exc.problem}
    return completeness_told(comp.told())


def completeness_told(told: Told) -> dict[str, Any]:
    """:func:`completeness` from what the model tells of it (the whole trace's, or the
    sum of its time parts': :class:`schedwake.model.completeness.Told`)."""
    from .model.completeness import KIND_TEXT, KINDS

    cpus = {}
    for cpu, row in told.counts.iterrows():
        c = int(cpu)
        span = told.t_end - told.first_switch[c] if c in told.first_switch else 0
        u = told.unknown_ns.get(c, 0)
        cpus[str(c)] = {
            **{k: int(row[k]) for k in KINDS},
            "unknown_s": round(u / 1e9, 9),
            "unknown_share": round(u / span, 6) if span > 0 else None,
        }
    totals = told.counts.sum()
    return {
        "complete": told.complete,
        "breaks": {k: int(totals[k]) for k in KINDS},
        "cpus": cpus,
        "kinds": dict(KIND_TEXT),
        "lines": told.describe(),
    }


def info(trace: Trace, facts: dict[str, Any] | None = None) -> dict[str, Any]:
    """What ``schedwake info`` prints: :func:`summary` (or ``facts``, already made), and
    with the kernel's counters beside the trace, ``referee``: the agreement of the trace
    with them (:meth:`schedwake.referee.Referee.to_dict`; the trace must be loaded with
    its events)."""
    from .referee import judge

    out = summary(trace) if facts is None else facts
    ref = judge(trace)
    if ref is not None:
        out["referee"] = ref.to_dict()
    return out


def meta_summary(m: TraceMeta) -> dict:
    """``summary()`` from a trace's metadata alone."""
    first, last = m.first_ts_ns, m.last_ts_ns
    raw = timestamp_problem(m) is not None
    span = 0 if first is None or last is None else last - first
    return {
        "path": m.path,
        "format": m.format,
        "cpus": m.cpus,
        "clock": m.clock,
        "first_ts_ns": first,
        "last_ts_ns": last,
        "timestamps": "raw" if raw else "ns",
        "duration_s": None if raw else span / 1e9,
        "duration_ticks": span if raw else None,
        "events": dict(m.event_counts),
        "lost_events": {str(c): n for c, n in m.lost_events.items()},
        "lost_unknown": [str(c) for c in m.lost_unknown],
        "kernel": m.kernel,
        "warnings": list(m.warnings),
        **_recorded_by(m),
    }


def _recorded_by(m: TraceMeta) -> dict:
    """For a perf.data read by schedwake's reader: what recorded it (``recorded_by``)."""
    src = m.source
    if m.format != "perf.data" or "perf_version" not in src:
        return {}
    return {
        "recorded_by": {
            "perf_version": src.get("perf_version"),
            "command": src.get("cmdline"),
            "events": [e["name"] for e in src.get("events") or []],
            "compressed": src.get("compression"),
            "pipe": src.get("pipe"),
            "callchains": src.get("callchains"),
        }
    }
