#!/usr/bin/env python3
"""readme_section.py -- print the README.md section of one recorded sample.

usage: readme_section.py NAME [WORKDIR] [DEST]
  WORKDIR: the work directory record-sample.sh used (default /root/rec/NAME)
  DEST:    sample_traces directory (default: ../../sample_traces next to this script)
Reads meta.txt, ringbuf-stats.txt, summary.md, the workload output (dbench.txt
or fio-figures.txt), NAME.topology.json and, when present, notes.md
(free text appended to the section).
"""

import os
import re
import sys

name = sys.argv[1]
work = sys.argv[2] if len(sys.argv) > 2 else f"/root/rec/{name}"
here = os.path.dirname(os.path.abspath(__file__))
dest = (
    sys.argv[3]
    if len(sys.argv) > 3
    else os.path.normpath(os.path.join(here, "..", "..", "sample_traces"))
)

meta = {}
for line in open(os.path.join(work, "meta.txt")):
    k, _, v = line.rstrip("\n").partition(": ")
    meta[k] = v
stats = open(os.path.join(work, "ringbuf-stats.txt")).read()
per_cpu = []
for block in stats.split("== ")[1:]:
    cpu = block.split("\n", 1)[0].strip()
    d = dict(re.findall(r"^([a-z ]+):\s+(\S+)", block, re.M))
    per_cpu.append(
        f"{cpu}: entries {d.get('entries')}, overrun {d.get('overrun')}, "
        f"commit overrun {d.get('commit overrun')}, dropped events {d.get('dropped events')}"
    )
summary = open(os.path.join(work, "summary.md")).read().rstrip()
topo = open(os.path.join(dest, f"{name}.topology.json")).read().strip()
dat = os.path.join(dest, f"{name}.dat")
extra = ""
if os.path.exists(os.path.join(work, "dbench.txt")):
    t = [l for l in open(os.path.join(work, "dbench.txt")) if l.startswith("Throughput")]
    if t:
        extra = f"- dbench result: `{t[-1].strip()}`\n"
if os.path.exists(os.path.join(work, "fio-figures.txt")):
    extra = (
        "- fio / perf stat figures (taken while tracing): "
        + "; ".join(l.strip() for l in open(os.path.join(work, "fio-figures.txt")))
        + "\n"
    )

print(
    f"""### {name}.dat

- files: `{name}.dat` ({os.path.getsize(dat)} bytes), `{name}.topology.json`
- workload: {meta.get("description")}
- command (traced): `{meta.get("command")}` (exit code {meta.get("command_rc")})
- recorded: {meta.get("recorded_utc")}; kernel `{meta.get("kernel")}`; CPU `{meta.get("cpu_model")}`; CPUs online {meta.get("cpus_online")}
- topology: `{topo}`
- tracer: {meta.get("tracer")}; private tracefs instance, ring buffer read from `per_cpu/cpuN/trace_pipe_raw`
- events enabled: {meta.get("events")}
- buffer_size_kb (per CPU): {meta.get("buffer_size_kb_per_cpu")}; trace clock: `{meta.get("trace_clock")}`
- wall time of the traced command: {float(meta.get("wall_s", 0)):.3f} s; machine idle before start: {meta.get("idle_pct_before_start")} %; event setup intact at stop: {meta.get("tracing_setup_intact_at_stop")}
- ring buffer stats after the run (lost events = overrun + dropped = **{meta.get("lost_events_ringbuf")}**):
"""
    + "".join(f"  - {p}\n" for p in per_cpu)
    + extra
    + summary
    + "\n"
    + (
        open(os.path.join(work, "notes.md")).read()
        if os.path.exists(os.path.join(work, "notes.md"))
        else ""
    )
)
