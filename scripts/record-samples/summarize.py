#!/usr/bin/env python3
"""summarize.py -- event counts and a few wake-up figures of a trace.dat.

usage: summarize.py TRACE.dat [WORKLOAD_COMM_REGEX] [--json OUT.json]

Runs `trace-cmd report -N` (no plugins: the kernel's own print formats, so
prev_state keeps R+ and I) and prints, as Markdown lines for the README:
  - trace clock, cpus (from `trace-cmd dump --summary`)
  - per-event counts and the total, per-CPU counts, first/last timestamp
  - "EVENTS DROPPED" / "LOST" lines that trace-cmd report printed
  - sched_switch prev_state distribution (R, R+, S, D, I, ...)
  - sched_migrate_task count (all tasks / workload tasks) and rate
  - wake-ups of workload tasks (sched_waking) by waker kind (kworker or not),
    and how many of them were followed by a sched_migrate_task of the woken
    task before its sched_wakeup (the wake-then-migrate pattern)
"""

import collections
import json
import re
import subprocess
import sys

LINE = re.compile(
    r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?:\S+\s+)?(?P<ts>\d+\.\d+):\s+(?P<ev>[A-Za-z_0-9]+):\s*(?P<rest>.*)$"
)
KV = re.compile(r"(\w+)=(\S*)")


def main():
    args = sys.argv[1:]
    out_json = None
    if "--json" in args:
        i = args.index("--json")
        out_json = args[i + 1]
        del args[i : i + 2]
    dat = args[0]
    wl = re.compile(args[1]) if len(args) > 1 else None

    summ = subprocess.run(
        ["trace-cmd", "dump", "--summary", "-i", dat], capture_output=True, text=True
    ).stdout
    m = re.search(r'\[buffer "[^"]*", "([^"]+)" clock, \d+ page size, (\d+) cpus', summ)
    clock, ncpus = (m.group(1), int(m.group(2))) if m else ("?", 0)
    mv = re.search(r"(\d+)\s+\[Version\]", summ)
    mc = re.search(r"(\S+)\s+\[Compression algorithm\]", summ)

    p = subprocess.Popen(
        ["trace-cmd", "report", "-N", "-i", dat],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        errors="replace",
    )
    ev = collections.Counter()
    percpu = collections.Counter()
    states = collections.Counter()
    dropped_lines = []
    first = last = None
    mig_all = 0
    mig_wl = 0
    mig_by_comm = collections.Counter()
    pid_comm = {}
    pending = {}  # woken pid -> (waker_is_kworker, migrated)
    wake_wl = collections.Counter()  # (kind) -> n
    wake_mig = collections.Counter()
    for line in p.stdout:
        if "DROPPED" in line or "LOST" in line:
            dropped_lines.append(line.rstrip())
        mm = LINE.match(line)
        if not mm:
            continue
        e = mm.group("ev")
        rest = mm.group("rest")
        ts = float(mm.group("ts"))
        if first is None:
            first = ts
        last = ts
        ev[e] += 1
        percpu[int(mm.group("cpu"))] += 1
        if not e.startswith("sched_"):
            continue
        kv = dict(KV.findall(rest))
        if e == "sched_switch":
            states[kv.get("prev_state", "?")] += 1
            pid_comm[kv.get("prev_pid")] = kv.get("prev_comm")
            pid_comm[kv.get("next_pid")] = kv.get("next_comm")
        elif e == "sched_waking":
            pid = kv.get("pid")
            comm = kv.get("comm")
            pid_comm[pid] = comm
            if wl and comm and wl.search(comm):
                kind = "kworker" if mm.group("comm").startswith("kworker") else "other"
                pending[pid] = [kind, False]
                wake_wl[kind] += 1
        elif e == "sched_migrate_task":
            mig_all += 1
            comm = kv.get("comm")
            mig_by_comm[comm] += 1
            if wl and comm and wl.search(comm):
                mig_wl += 1
                if kv.get("pid") in pending:
                    pending[kv.get("pid")][1] = True
        elif e == "sched_wakeup":
            pid = kv.get("pid")
            if pid in pending:
                kind, migd = pending.pop(pid)
                if migd:
                    wake_mig[kind] += 1
        elif e == "sched_process_fork":
            pid_comm[kv.get("child_pid")] = kv.get("child_comm")
    p.wait()
    span = (last - first) if first is not None else 0.0
    total = sum(ev.values())
    res = {
        "file": dat,
        "version": mv.group(1) if mv else "?",
        "compression": mc.group(1) if mc else "?",
        "trace_clock": clock,
        "cpus": ncpus,
        "total_events": total,
        "events": dict(ev.most_common()),
        "per_cpu": {str(k): v for k, v in sorted(percpu.items())},
        "first_ts": first,
        "last_ts": last,
        "span_s": round(span, 6),
        "dropped_lines": len(dropped_lines),
        "dropped_samples": dropped_lines[:5],
        "prev_state": dict(states.most_common()),
        "migrations": mig_all,
        "migrations_per_s": round(mig_all / span, 1) if span else None,
        "migrations_top_comms": dict(mig_by_comm.most_common(6)),
    }
    if wl:
        res.update(
            {
                "workload_regex": wl.pattern,
                "workload_migrations": mig_wl,
                "workload_migrations_per_s": round(mig_wl / span, 1) if span else None,
                "workload_wakings_by_kworker": wake_wl["kworker"],
                "workload_wakings_by_kworker_then_migrate": wake_mig["kworker"],
                "workload_wakings_by_other": wake_wl["other"],
                "workload_wakings_by_other_then_migrate": wake_mig["other"],
            }
        )
    if out_json:
        with open(out_json, "w") as f:
            json.dump(res, f, indent=1)
    print(
        f"- trace.dat: version {res['version']}, compression {res['compression']}, trace clock `{clock}`, {ncpus} CPUs"
    )
    print(
        f"- events in `trace-cmd report` (total {total}, span {span:.3f} s from {first} to {last}):"
    )
    for k, v in ev.most_common():
        print(f"  - {k}: {v}")
    print("- per CPU: " + ", ".join(f"cpu{k}: {v}" for k, v in sorted(percpu.items())))
    print(f"- `EVENTS DROPPED`/`LOST` lines in the report: {len(dropped_lines)}")
    for d in dropped_lines[:3]:
        print(f"  - `{d.strip()}`")
    print(
        "- sched_switch prev_state (kernel format, -N): "
        + ", ".join(f"{k}: {v}" for k, v in states.most_common())
    )
    print(
        f"- sched_migrate_task: {mig_all} ({res['migrations_per_s']}/s); most migrated: "
        + ", ".join(f"{k} {v}" for k, v in mig_by_comm.most_common(5))
    )
    if wl:
        print(
            f"- workload `{wl.pattern}`: {mig_wl} migrations ({res['workload_migrations_per_s']}/s); "
            f"sched_waking of workload tasks by kworkers: {wake_wl['kworker']}, of which followed by "
            f"sched_migrate_task before sched_wakeup: {wake_mig['kworker']}; by other wakers: "
            f"{wake_wl['other']}, then migrated: {wake_mig['other']}"
        )


if __name__ == "__main__":
    main()
