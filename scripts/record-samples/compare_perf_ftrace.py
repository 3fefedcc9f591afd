#!/usr/bin/env python3
"""compare_perf_ftrace.py -- compare the events one tracepoint run gave ftrace and perf.

usage: compare_perf_ftrace.py CONF.dat PERF_NS.txt[.gz]
  CONF.dat     the ftrace instance's trace.dat (read with `trace-cmd report -N -t`)
  PERF_NS.txt  `perf script --ns -F comm,tid,cpu,time,event,trace` of the perf run

Finds the clock offset between the two (median time difference of events whose
(cpu, event, fields) occur exactly once in each), restricts both to the ftrace
window between the "lab: start" and "lab: stop" markers, and prints per event:
ftrace count, perf count, events matched one to one (same CPU, event and
fields, times within 50 us after the offset) and the time differences of the
matched events; then where the ftrace-only events happened.
"""

import collections
import gzip
import re
import statistics
import subprocess
import sys

FT = re.compile(r"^\s*(.*?)-(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d+):\s+([a-z_0-9]+):\s*(.*)$")
PF = re.compile(r"^\s*(.*?)\s+(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d+):\s+[a-z_0-9]+:([a-z_0-9]+):\s*(.*)$")


def ns(s, frac):
    return int(s) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])


def norm(payload):
    return " ".join(payload.split())


dat, perf_txt = sys.argv[1], sys.argv[2]
ft = []
p = subprocess.run(
    ["trace-cmd", "report", "-N", "-t", "-i", dat], capture_output=True, text=True, errors="replace"
)
for line in p.stdout.splitlines():
    m = FT.match(line)
    if m:
        ft.append((ns(m.group(4), m.group(5)), int(m.group(3)), m.group(6), norm(m.group(7))))
pf = []
op = gzip.open if perf_txt.endswith(".gz") else open
with op(perf_txt, "rt", errors="replace") as f:
    for line in f:
        m = PF.match(line)
        if m:
            pf.append((ns(m.group(4), m.group(5)), int(m.group(3)), m.group(6), norm(m.group(7))))

starts = [e[0] for e in ft if e[2] == "print" and "lab: start" in e[3]]
stops = [e[0] for e in ft if e[2] == "print" and "lab: stop" in e[3]]
t0, t1 = starts[0], stops[-1]
# clock offset: perf_ts - ftrace_ts over unique keys
fk = collections.defaultdict(list)
pk = collections.defaultdict(list)
for e in ft:
    fk[(e[1], e[2], e[3])].append(e[0])
for e in pf:
    pk[(e[1], e[2], e[3])].append(e[0])
diffs = [pk[k][0] - v[0] for k, v in fk.items() if len(v) == 1 and len(pk.get(k, ())) == 1]
off = int(statistics.median(diffs)) if diffs else 0
print(
    f"clock offset perf - ftrace(local): median {off} ns over {len(diffs)} unique events "
    f"(min {min(diffs) if diffs else 0}, max {max(diffs) if diffs else 0})"
)
ftw = [e for e in ft if t0 <= e[0] <= t1 and e[2] != "print"]
pfw = [e for e in pf if t0 <= e[0] - off <= t1]
print(
    f"ftrace window [{t0 / 1e9:.6f}, {t1 / 1e9:.6f}] ({(t1 - t0) / 1e9:.3f} s): ftrace {len(ftw)} events, perf {len(pfw)} events in the same window"
)
fc = collections.Counter(e[2] for e in ftw)
pc = collections.Counter(e[2] for e in pfw)
print(
    f"{'event':28s} {'ftrace':>8s} {'perf':>8s} {'matched':>8s} {'ftrace-only':>11s} {'perf-only':>9s}  dt = perf - offset - ftrace of matched, ns: median / max |dt|"
)
TOL = 50000  # ns
fkw = collections.defaultdict(list)
pkw = collections.defaultdict(list)
for e in ftw:
    fkw[(e[1], e[2], e[3])].append(e[0])
for e in pfw:
    pkw[(e[1], e[2], e[3])].append(e[0] - off)
matched = collections.Counter()
dts = collections.defaultdict(list)
for k, fl in fkw.items():
    pl = sorted(pkw.get(k, ()))
    fl = sorted(fl)
    i = j = 0
    while i < len(fl) and j < len(pl):  # greedy one-to-one match in time order
        d = pl[j] - fl[i]
        if abs(d) <= TOL:
            matched[k[1]] += 1
            dts[k[1]].append(d)
            i += 1
            j += 1
        elif d < 0:
            j += 1
        else:
            i += 1
for ev in sorted(set(fc) | set(pc)):
    med = int(statistics.median(dts[ev])) if dts[ev] else 0
    mx = max((abs(d) for d in dts[ev]), default=0)
    print(
        f"{ev:28s} {fc[ev]:8d} {pc[ev]:8d} {matched[ev]:8d} {fc[ev] - matched[ev]:11d} {pc[ev] - matched[ev]:9d}  {med} / {mx}"
    )

# events only ftrace has: which task was current, in which context (from the
# latency flags of `trace-cmd report -l`: h = hardirq, s = softirq, H = hardirq
# in softirq, . = task context); an event counts as seen by perf when perf has
# the same (cpu, event, fields) within 50 us (after the clock offset)
LAT = re.compile(r"^\s*(.*?)-(\d+)\s+(\d+)(\S+)\s+(\d+)\.(\d+):\s+([a-z_0-9]+):\s*(.*)$")
p = subprocess.run(
    ["trace-cmd", "report", "-N", "-l", "-t", "-i", dat],
    capture_output=True,
    text=True,
    errors="replace",
)
pidx = collections.defaultdict(list)
for e in pfw:
    pidx[(e[1], e[2], e[3])].append(e[0] - off)
ctx = collections.Counter()
cur = collections.Counter()
total_ctx = collections.Counter()
n = 0
for line in p.stdout.splitlines():
    m = LAT.match(line)
    if not m:
        continue
    t = ns(m.group(5), m.group(6))
    ev = m.group(7)
    if not (t0 <= t <= t1) or ev == "print":
        continue
    flags = m.group(4)
    c = (
        "hardirq"
        if ("h" in flags[:4] or "H" in flags[:4])
        else ("softirq" if "s" in flags[:4] else "task")
    )
    total_ctx[c] += 1
    if any(abs(x - t) < 50000 for x in pidx.get((int(m.group(3)), ev, norm(m.group(8))), ())):
        continue
    n += 1
    ctx[(ev, c)] += 1
    cur[m.group(1) + "-" + m.group(2)] += 1
print(
    f"ftrace events without a perf event within 50 us: {n}; all window events by context: {dict(total_ctx)}"
)
print("  by event and context: " + ", ".join(f"{k[0]}/{k[1]} {v}" for k, v in ctx.most_common()))
print(
    "  by current task (comm as shown by -l, pid): "
    + ", ".join(f"{k} {v}" for k, v in cur.most_common(8))
)
