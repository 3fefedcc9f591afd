#!/bin/bash
# record-storm.sh -- interleaved host runs of fio pinned to CPU 1, in the root cgroup
# and in a child cgroup with 10x the CPU weight (host-fio.sh), for sample_traces/storm/.
#
# usage: record-storm.sh DEST FIRST LAST [SECONDS]
#   runs FIRST..LAST, each a root run then a weighted run of SECONDS (default 2);
#   writes DEST/root/runN.{dat,topology.json,fio.json} and DEST/weighted/runN.*;
#   work directories in ${WORK:-/root/rec-storm}/{root,cgroup}-runN (meta.txt with the
#   machine's idle % before each run, summary.md for readme_section.py).
# Environment: XFS_DIR (default /mnt/xfs), BUF_KB (default 100000), QUIET_TRIES
#   (default 30: wait at most that many seconds for a quiet machine, then record anyway),
#   LAB_INSTANCE (default schedwake-storm).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=$1; first=$2; last=$3; secs=${4:-2}
work=${WORK:-/root/rec-storm}; xfs=${XFS_DIR:-/mnt/xfs}
export LAB_INSTANCE=${LAB_INSTANCE:-schedwake-storm} BUF_KB=${BUF_KB:-100000}
export QUIET_TRIES=${QUIET_TRIES:-30} KEEP_KFMT=0
mkdir -p "$dest/root" "$dest/weighted"
for i in $(seq "$first" "$last"); do
    for mode in root cgroup; do
        w=$work/$mode-run$i; side=$([ "$mode" = cgroup ] && echo weighted || echo root)
        rm -rf "$w"
        "$here/host-fio.sh" "$w" "$mode" "$secs" "$xfs" 1 > "$w.log" 2>&1
        cp "$w/trace.dat" "$dest/$side/run$i.dat"
        cp "$w/topology.json" "$dest/$side/run$i.topology.json"
        cp "$w/fio.json" "$dest/$side/run$i.fio.json"
        python3 "$here/summarize.py" "$w/trace.dat" '^fio$' --json "$w/summary.json" > "$w/summary.md"
        echo "$side run$i: $(grep -E '^(idle_pct_before_start|lost_events_ringbuf|trace_dat_bytes)' "$w/meta.txt" | tr '\n' ' ')"
    done
done
