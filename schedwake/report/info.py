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
    return "\n".join(lines) + "\n"
