"""The ``schedwake info`` summary of a trace: counts, CPUs, duration, clock, lost events,
and the reader's warnings (bounded damage it read around)."""

from __future__ import annotations

from ..model.events import timestamp_problem


def summary(trace) -> dict:
    """The trace's facts as a JSON-ready dict (the keys of ``schedwake info --format json``)."""
    return meta_summary(trace.meta)


def meta_summary(m: dict) -> dict:
    """``summary()`` from a trace's metadata dict alone."""
    first, last = m["first_ts_ns"], m["last_ts_ns"]
    raw = timestamp_problem(m) is not None
    span = 0 if first is None else last - first
    return {
        "path": m["path"],
        "format": m["format"],
        "cpus": m["cpus"],
        "clock": m["clock"],
        "first_ts_ns": first,
        "last_ts_ns": last,
        "timestamps": "raw" if raw else "ns",
        "duration_s": None if raw else span / 1e9,
        "duration_ticks": span if raw else None,
        "events": dict(m["event_counts"]),
        "lost_events": {str(c): n for c, n in m["lost_events"].items()},
        "lost_unknown": [str(c) for c in m.get("lost_unknown", [])],
        "kernel": m["kernel"],
        "warnings": list(m.get("warnings") or []),
    }


def text(s: dict) -> str:
    """``summary()`` as the human text of ``schedwake info``."""
    total = sum(s["events"].values())
    lines = [
        f"file:      {s['path']}",
        f"format:    {s['format']}",
        f"kernel:    {s['kernel'] or 'unknown (not recorded in the file)'}",
        f"cpus:      {s['cpus']}",
        f"clock:     {s['clock'] or 'unknown'}",
        f"duration:  {s['duration_s']:.6f} s" if s["duration_s"] is not None else
        f"duration:  {s['duration_ticks']} ticks (timestamps are raw clock ticks, "
        "not nanoseconds)",
        f"events:    {total}",
    ]
    width = max((len(n) for n in s["events"]), default=0)
    for name, count in sorted(s["events"].items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"  {name:<{width}}  {count:>10}")
    if s["lost_events"]:
        lines.append("lost events:")
        for cpu, n in s["lost_events"].items():
            more = "  (and an unknown number more)" if cpu in s["lost_unknown"] else ""
            lines.append(f"  cpu {cpu:>3}  {n}{more}")
    else:
        lines.append("lost events: none")
    if s["warnings"]:
        lines.append("warnings:")
        lines.extend(f"  {w}" for w in s["warnings"])
    return "\n".join(lines) + "\n"
