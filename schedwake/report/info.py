"""The ``schedwake info`` summary of a trace: counts, CPUs, duration, clock, lost events,
and the reader's warnings (bounded damage it read around)."""

from __future__ import annotations

from ..jsonout import dumps


def to_json(summary: dict) -> str:
    """``schedwake info --format json``: the summary as JSON (:mod:`schedwake.jsonout`)."""
    return dumps(summary)


def _wrapped(label: str, text: str, width: int = 100) -> list[str]:
    """``label`` + ``text`` in lines of ``width`` at most, continued under the text."""
    import textwrap

    return textwrap.wrap(
        text,
        width,
        initial_indent=label,
        subsequent_indent=" " * len(label),
        break_on_hyphens=False,
        break_long_words=False,
    )


def completeness_lines(c: dict | None) -> list[str]:
    """The ``completeness`` of a summary as text lines: one line when the trace shows
    every CPU's switch chain whole, else the contradictions per CPU and what each kind
    means (docs/semantics.md, 'Incomplete traces')."""
    if c is None:
        return ["completeness: not checked (no sched_switch events)"]
    if "not_checked" in c:
        return _wrapped("completeness: ", f"not checked: {c['not_checked']}")
    if c["complete"]:
        return ["completeness: complete (every CPU's switch chain holds and no event "
                "contradicts it)"]  # fmt: skip
    out = ["completeness: INCOMPLETE: the trace does not show everything (what it does not "
           "show is unknown, never idle or waiting)"]  # fmt: skip
    out += [f"  {line}" for line in c["lines"]]
    seen = [k for k, n in c["breaks"].items() if n]
    for k in seen:
        out += _wrapped(f"  {k}: ", c["kinds"][k])
    return out


def text(s: dict) -> str:
    """``summary()`` as the human text of ``schedwake info``."""
    total = sum(s["events"].values())
    lines = [
        f"file:      {s['path']}",
        f"format:    {s['format']}",
        f"kernel:    {s['kernel'] or 'unknown (not recorded in the file)'}",
        f"cpus:      {s['cpus']}",
        f"clock:     {s['clock'] or 'unknown'}",
        f"duration:  {s['duration_s']:.6f} s"
        if s["duration_s"] is not None
        else f"duration:  {s['duration_ticks']} ticks (timestamps are raw clock ticks, "
        "not nanoseconds)",
        f"events:    {total}",
    ]
    rec = s.get("recorded_by")
    if rec:  # a perf.data: what recorded it, after the kernel line
        how = ", ".join(
            k
            for k, on in (
                ("zstd", rec["compressed"]),
                ("pipe", rec["pipe"]),
                ("callchains", rec["callchains"]),
            )
            if on
        )
        head = f"perf {rec['perf_version'] or '?'}" + (f" ({how})" if how else "")
        lines[3:3] = _wrapped("recorded:  ", f"{head}: {rec['command'] or '?'}") + _wrapped(
            "sampled:   ", ", ".join(rec["events"])
        )
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
    lines += completeness_lines(s.get("completeness"))
    if s["warnings"]:
        lines.append("warnings:")
        lines.extend(f"  {w}" for w in s["warnings"])
    if s.get("referee"):
        lines.extend(referee_lines(s["referee"]))
    return "\n".join(lines) + "\n"


def _figure(bounds, unit: str) -> str:
    if bounds is None:
        return "unknown"
    lo, hi = bounds

    def one(v: float) -> str:
        return f"{v:.6f}" if unit == "s" else f"{v:.0f}"

    if hi is None:
        return f"{one(lo)} or more"
    if one(lo) == one(hi):
        return one(lo)
    return f"{one(lo)}-{one(hi)}"


def referee_lines(r: dict) -> list[str]:
    """The agreement table of ``info``: one row per check (a task's fair run time only
    when it disagrees: the JSON has every task), then what the kernel did not give."""
    from pathlib import Path

    head = "kernel counters:"
    if r["counters"]:
        head += f" {Path(r['counters']).name}"
    if r["perf_stat"]:
        head += f", {Path(r['perf_stat']).name}"
    w = r["window"]
    if w:
        how = "the trace's markers" if w["how"] == "markers" else f"the trace's {w['how']}"
        head += f"; the stretch between the snapshots: {w['span_s']:.6f} s (from {how})"
    out = [head]
    if r["problem"]:
        out.append(f"  not compared: {r['problem']}")
    rows = [("check", "where", "unit", "kernel", "trace", "tolerance", "verdict")]
    hidden: dict[str, int] = {}
    for c in r["checks"]:
        task = c["what"] == "fair_run_time" and c["scope"].startswith("pid ")
        if task and c["verdict"] != "disagree":
            hidden[c["verdict"]] = hidden.get(c["verdict"], 0) + 1
            continue
        unit = c["unit"]
        rows.append(
            (
                c["what"].replace("_", " "),
                c["scope"],
                unit,
                _figure(c["kernel"], unit),
                _figure(c["trace"], unit),
                _figure((c["tolerance"], c["tolerance"]), unit),
                c["verdict"],
            )
        )
    if len(rows) > 1:
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        for row in rows:
            out.append(
                "  " + "  ".join(v.ljust(n) for v, n in zip(row, widths, strict=True)).rstrip()
            )
    if hidden:
        out.append(
            "  tasks' fair run time not shown: "
            + ", ".join(f"{n} {v}" for v, n in sorted(hidden.items()))
            + " (--format json lists every task)"
        )
    verdicts = r["verdicts"]
    if r["checks"]:
        out.append("  verdicts: " + ", ".join(f"{n} {v}" for v, n in verdicts.items() if n))
    for source, why in r["unavailable"].items():
        out.append(f"  not available: {source}: {why}")
    return out
