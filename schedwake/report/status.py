"""One-line terminal summaries of the commands that make files: ``schedwake record``
(what was written, events, lost events, the command's exit) and ``schedwake batch``
(the traces analysed, kept and failed)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..batch.run import BatchResult
    from ..record import RecordResult

__all__ = ["batch_line", "record_line"]


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n} bytes"


def record_line(result: RecordResult) -> str:
    """One line: what was written, events, lost events, the command's exit."""
    parts = [f"wrote {result.output} ({_size(result.bytes)}"]
    if result.entries is not None:
        parts[0] += f", {result.entries} events"
    parts[0] += f", {result.cpus} CPUs, {result.wall_s:.2f} s, {result.method})"
    if result.topology:
        parts.append(f"topology {result.topology}")
    if result.counters:
        parts.append(f"counters {result.counters}")
    if result.perf_stat:
        parts.append(f"perf stat {result.perf_stat}")
    lost = result.lost
    if lost is None:
        parts.append("lost events: unknown")
    elif lost:
        parts.append(
            f"LOST {lost} events (overrun {result.overrun or 0}, dropped {result.dropped or 0})"
        )
    else:
        parts.append("lost events: 0")
    if result.events_intact is False:
        parts.append("EVENT SETUP CHANGED DURING THE RECORDING")
    if result.command:
        if result.exit_signal is not None:
            parts.append(f"command killed by signal {result.exit_signal}")
        elif result.exit_code is not None:
            parts.append(f"command exit code {result.exit_code}")
        else:
            parts.append("command exit code unknown")
    if result.interrupted:
        parts.append("interrupted")
    return "; ".join(parts)


def batch_line(result: BatchResult) -> str:
    """One line for the terminal: the traces analysed, kept and failed, and where."""
    ok = len(result.analysed) - len(result.errors)
    out = f"batch: {ok} trace(s) analysed"
    if result.skipped:
        out += f", {len(result.skipped)} already done"
    if result.errors:
        out += f", {len(result.errors)} could not be analysed"
    return out + f" -> {result.out}"
