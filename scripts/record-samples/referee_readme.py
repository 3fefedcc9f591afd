#!/usr/bin/env python3
"""referee_readme.py -- print the sample_traces/README.md lines of the referee samples
(sample_traces/referee/, recorded by record-referee.sh): per recording, what the
kernel's counters said over the stretch between the snapshots, and what the trace
records there (from the counters file, the perf stat output and the trace's own events;
no model).

usage: .venv/bin/python scripts/record-samples/referee_readme.py [DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import schedwake  # noqa: E402
from schedwake import counters, referee  # noqa: E402


def main() -> None:
    d = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "sample_traces" / "referee"
    for path in sorted(d.glob("*.dat")) + sorted(d.glob("*.perf.data")):
        t = schedwake.load(path)
        beside = counters.read_beside(path)
        c = beside.counters
        w, _ = referee.find_window(t, c)
        cmd = " ".join(c.command.argv) if c.command else "(none: --duration)"
        events = sum(t.meta.event_counts.values())
        print(f"### referee/{path.name}\n")
        print(f"- command: `{cmd}`; recorded by {c.recorded_by}; kernel {c.kernel}")
        print(
            f"- file {path.stat().st_size} bytes, {events} events "
            f"({t.meta.event_counts.get('sched_switch', 0)} sched_switch, "
            f"{t.meta.event_counts.get('sched_stat_runtime', 0)} sched_stat_runtime); "
            f"lost events: {sum(t.meta.lost_events.values())}"
        )
        print(
            f"- the stretch between the snapshots: {w.span_s:.6f} s (found by {w.how}); "
            f"the snapshots took {(c.start.end_monotonic_ns - c.start.begin_monotonic_ns) / 1e6:.1f} "
            f"and {(c.stop.end_monotonic_ns - c.stop.begin_monotonic_ns) / 1e6:.1f} ms"
        )
        sw = t.table("sched_switch").select(["ts", "cpu", "prev_pid", "next_pid"]).to_pandas()
        for cpu in c.cpus:
            busy = referee.kernel_busy(c, cpu)
            s = sw[sw.cpu == cpu].sort_values("ts", kind="stable")
            ts, pv, nx = s.ts.to_numpy(), s.prev_pid.to_numpy(), s.next_pid.to_numpy()
            inner = (ts >= w.inner[0]) & (ts < w.inner[1])
            brk = np.r_[False, pv[1:] != nx[:-1]] & inner
            k = referee.kernel_switches(c, cpu)
            print(
                f"- CPU {cpu}: the kernel {busy[0] / 1e9:.6f} s busy of {busy[1] / 1e9:.6f} s "
                f"({busy[4]} idle entries), {k} context switches; the trace records "
                f"{int(inner.sum())} sched_switch there ({k - int(inner.sum())} fewer), "
                f"{int(brk.sum())} breaks of the switch chain, "
                f"{int(((pv == 0) & inner).sum())} switches from idle"
            )
        ctxt = referee.kernel_ctxt(c)
        steal = referee.steal_ns(c)
        line = f"- ctxt grew {ctxt[0]}-{ctxt[1]}; steal (clock - clock_task) {steal / 1e6:.3f} ms"
        if c.command:
            line += (
                f"; the command: {c.command.cpu_ns / 1e9:.6f} s CPU, "
                f"{c.command.voluntary_switches} + {c.command.involuntary_switches} switches"
            )
        print(line)
        if beside.perf_stat:
            ps = beside.perf_stat
            cs = ", ".join(
                f"CPU {k} {v:.0f}" for k, v in sorted(ps.per_cpu("context-switches").items())
            )
            print(f"- perf stat -a -A: context switches {cs}")
        print()


if __name__ == "__main__":
    main()
