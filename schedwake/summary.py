"""The facts of a trace as a JSON-ready dict: counts, CPUs, duration, clock, lost
events and the reader's warnings (what ``schedwake info`` prints and every report
carries as its ``trace`` section)."""

from __future__ import annotations

from .ingest.meta import TraceMeta
from .model.events import timestamp_problem


def summary(trace) -> dict:
    """The trace's facts as a JSON-ready dict (the keys of ``schedwake info --format json``)."""
    return meta_summary(trace.meta)


def info(trace) -> dict:
    """What ``schedwake info`` prints: :func:`summary`, and with the kernel's counters
    beside the trace, ``referee``: the agreement of the trace with them
    (:meth:`schedwake.referee.Referee.to_dict`; the trace must be loaded with its events)."""
    from .referee import judge

    out = summary(trace)
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
