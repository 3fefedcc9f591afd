#!/bin/bash
# sample_traces/cgroup-weight/: the gate's A/A and known-change set (docs/gate.md).
# `perf bench sched messaging -g 1 -l 500` in cgroup swbench competes with a busy-loop hog
# in cgroup swhog (cgroup v1 cpu controller); A: swbench cpu.shares 1024 (as the hog),
# B: 10240 (a heavily weighted cgroup). Order A A B, six times: 12 A and 6 B runs,
# interleaved so that drift of the machine falls on both configurations.
# Usage (root): ./record-cgroup-weight.sh OUTDIR
set -eu
OUT=${1:?usage: $0 OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
SW=${SCHEDWAKE:-$HERE/../../.venv/bin/schedwake}
CG=/sys/fs/cgroup/cpu
mkdir -p "$OUT" $CG/swbench $CG/swhog
( echo $BASHPID > $CG/swhog/tasks; exec sh -c 'while :; do :; done' ) & HOG=$!
trap 'kill $HOG; echo 1024 > $CG/swbench/cpu.shares' EXIT
sleep 1
a=0; b=0
for r in 1 2 3 4 5 6; do
  for c in A A B; do
    if [ $c = A ]; then a=$((a+1)); n=$(printf "msg-w1024-r%02d" $a); w=1024
    else b=$((b+1)); n=$(printf "msg-w10240-r%02d" $b); w=10240; fi
    echo $w > $CG/swbench/cpu.shares
    echo "$n $(date -u +%FT%TZ)" >> "$OUT/recorded-at.txt"
    "$SW" record -o "$OUT/$n.dat" --no-kallsyms -q -- \
      sh -c "echo \$\$ > $CG/swbench/tasks; exec perf bench sched messaging -g 1 -l 500"
  done
done
