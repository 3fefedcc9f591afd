"""``schedwake latency``: the per-task latency table in ``perf sched latency``'s layout
and the ``perf sched timehist -s`` summary, as text, JSON and CSV
(:mod:`schedwake.analysis.latency` computes them)."""

from __future__ import annotations

import pandas as pd

from ..jsonout import dumps

_RULE = " " + "-" * 139
_SHORT_RULE = " " + "-" * 113


def _usec(ts: int) -> str:
    """A trace time as perf prints it: seconds and microseconds, truncated."""
    us = int(ts) // 1000
    return f"{us // 1_000_000}.{us % 1_000_000:06d}"


def _msec(ns: int) -> str:
    """Nanoseconds as perf timehist prints them: milliseconds, microseconds truncated."""
    us = int(ns) // 1000
    return f"{us // 1000}.{us % 1000:03d}"


def _task(r) -> str:
    """perf's task cell: ``comm:pid``, or ``comm:(N)`` for N tasks of one name."""
    return f"  {r.comm}:({r.tasks}) " if r.tasks > 1 else f"  {r.comm}:{r.pid} "


def text(table: pd.DataFrame, reading: str = "schedwake", notes: list[str] | None = None) -> str:
    """The table as ``perf sched latency`` prints it (with ``reading="perf"`` line for
    line its layout; the default reading adds a Waits column: the waits measured, of
    which the average is taken)."""
    waits = reading != "perf"
    head = "  Task                  |   Runtime ms  | Switches |"
    if waits:
        head += "    Waits |"
    head += (
        " Avg delay ms    | Max delay ms    | Max delay start           | Max delay end          |"
    )
    lines = ["", _RULE, head, _RULE]
    for r in table.itertuples(index=False):
        cell = _task(r)
        line = cell + " " * max(24 - len(cell), 0)
        line += f"|{r.runtime_ns / 1e6:11.3f} ms |{r.switches:9d} |"
        if waits:
            line += f"{r.waits:9d} |"
        line += (
            f" avg:{r.avg_delay_ns / 1e6:8.3f} ms | max:{r.max_delay_ns / 1e6:8.3f} ms |"
            f" max start: {_usec(r.max_start_ts):>12s} s | max end: {_usec(r.max_end_ts):>12s} s"
        )
        lines.append(line)
    lines.append(_SHORT_RULE)
    total = f"  TOTAL:                |{table['runtime_ns'].sum() / 1e6:11.3f} ms |"
    total += f"{int(table['switches'].sum()):9d} |"
    if waits:
        total += f"{int(table['waits'].sum()):9d} |"
    lines += [total, " " + "-" * 51, ""]
    lines += [f"  note: {n}" for n in notes or []]
    return "\n".join(lines) + "\n"


def timehist_text(table: pd.DataFrame, notes: list[str] | None = None) -> str:
    """The summary as ``perf sched timehist -s`` prints its runtime summary."""
    lines = [
        "",
        "Runtime summary",
        f"{'comm':>30s}  parent   sched-in     run-time    min-run     avg-run     max-run"
        "  stddev  migrations",
        f"{'':>30s}             (count)       (msec)     (msec)      (msec)      (msec)       %",
        "-" * 117,
    ]
    for r in table.itertuples(index=False):
        name = f"{r.comm}[{r.pid}]"
        parent = str(r.parent_pid) if r.parent_pid >= 0 else "-"
        lines.append(
            f"{name:>30s}  {parent:>6s} {r.sched_in:10d} {_msec(r.run_ns):>12s}"
            f" {_msec(r.min_run_ns):>10s} {_msec(r.avg_run_ns):>11s} {_msec(r.max_run_ns):>11s}"
            f" {r.stddev_pct:7.2f} {r.migrations:7d}"
        )
    lines += ["", f"    Total number of unique tasks: {len(table)}"]
    lines.append(f"Total number of context switches: {int(table['sched_in'].sum())}")
    lines.append(f"           Total run time (msec): {table['run_ns'].sum() / 1e6:.3f}")
    lines += [f"  note: {n}" for n in notes or []]
    return "\n".join(lines) + "\n"


def to_json(table: pd.DataFrame, kind: str, reading: str, by: str, notes: list[str]) -> str:
    """``--format json``: the rows as objects, with what they are and the notes."""
    return dumps(
        {
            "table": kind,
            "reading": reading,
            "by": by,
            "tasks": table.to_dict(orient="records"),
            "notes": notes,
        }
    )


def to_csv(table: pd.DataFrame) -> str:
    """``--format csv``: one row per task, the columns of the API's table."""
    return table.to_csv(index=False)
