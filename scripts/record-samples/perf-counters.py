#!/usr/bin/env python3
"""perf-counters.py -- a perf.data recording with the kernel's counters beside it, as
``schedwake record`` saves them for a trace.dat (OUTPUT.counters.json, the format of
schedwake/counters.py), for the referee samples (sample_traces/referee/).

    perf-counters.py OUTPUT.perf.data [--events LIST] -- COMMAND...      (as root)

perf records machine-wide, zstd-compressed (``-z``): ``perf sched record`` (its sched
events, sched_stat_runtime among them), or ``perf record -a -e EVENT...`` with
``--events``. perf starts with its
events disabled (``-D -1``) and is driven through its control pipe: enabled, then the
start snapshot, COMMAND (its output kept as OUTPUT.cmd.txt), the stop snapshot, then
disabled. perf.data has no trace_marker lines, so the counters file has no markers: each
snapshot's CLOCK_MONOTONIC readings, with the sched debug file's ``ktime``/``cpu_clk``
pair read in the same snapshot, place it on perf's clock (local_clock(), the clock
perf.data's timestamps use without -k); schedwake.referee does that. debugfs is mounted
for the sched debug file when it is not, and unmounted again.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from schedwake import counters  # noqa: E402


def control(ctl: int, ack: int, command: str) -> None:
    os.write(ctl, command.encode() + b"\n")
    if not select.select([ack], [], [], 10)[0] or not os.read(ack, 64).startswith(b"ack"):
        sys.exit(f"perf-counters.py: perf did not acknowledge {command!r}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("output")
    ap.add_argument("--events", help="comma-separated tracepoints (default: perf sched record)")
    argv = sys.argv[1:]
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        ap.error("give the command after --")
    cut = argv.index("--")
    a = ap.parse_args(argv[:cut])
    command = argv[cut + 1 :]
    if os.geteuid() != 0:
        sys.exit("perf-counters.py: run as root")
    out = Path(a.output)
    mounted = None
    if not os.path.exists(counters.SCHED_DEBUG):
        subprocess.run(["mount", "-t", "debugfs", "none", "/sys/kernel/debug"], check=True)
        mounted = "/sys/kernel/debug"
    if a.events:
        perf = ["perf", "record", "-a"] + [x for e in a.events.split(",") for x in ("-e", e)]
        how = "perf record -a -e " + " -e ".join(a.events.split(","))
    else:
        perf, how = ["perf", "sched", "record"], "perf sched record"
    ctl_r, ctl_w = os.pipe()
    ack_r, ack_w = os.pipe()
    args = perf + ["-z", "-D", "-1", "--control", f"fd:{ctl_r},{ack_w}", "-o", str(out)]
    proc = subprocess.Popen(args, pass_fds=(ctl_r, ack_w), stderr=subprocess.DEVNULL)
    os.close(ctl_r)
    os.close(ack_w)
    unavailable = counters.static_unavailable()
    try:
        control(ctl_w, ack_r, "enable")
        start = counters.snapshot("start", None, unavailable)
        before = counters.rusage_children()
        with open(f"{out}.cmd.txt", "wb") as keep:
            child = subprocess.Popen(command, stdout=keep, stderr=subprocess.STDOUT)
            rc = child.wait()
        after = counters.rusage_children()
        stop = counters.snapshot("stop", None, unavailable)
        control(ctl_w, ack_r, "disable")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait()
        if mounted:
            subprocess.run(["umount", mounted], check=False)
    usage = {k: after[k] - before[k] for k in before}
    doc = counters.document(
        start,
        stop,
        markers=False,
        runtime_events=not a.events or "sched:sched_stat_runtime" in a.events.split(","),
        unavailable=unavailable,
        command={
            "pid": child.pid,
            "argv": command,
            **usage,
            "source": "getrusage(RUSAGE_CHILDREN) of the recorder, before and after",
        },
        recorded_by=f"scripts/record-samples/perf-counters.py ({how})",
    )
    counters.write(counters.counters_path(out), doc)
    print(f"wrote {out} and {counters.counters_path(out)}; command exit code {rc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
