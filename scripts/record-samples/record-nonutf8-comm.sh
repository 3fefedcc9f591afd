#!/bin/bash
# record-nonutf8-comm.sh -- re-record sample_traces/nonutf8-comm.* (as root).
#
# usage: scripts/record-samples/record-nonutf8-comm.sh [DEST]   (default: sample_traces/)
#
# Traces nonutf8-comm-workload.c (threads whose names are not UTF-8) in a private
# tracefs instance (sched_switch, sched_waking, sched_wakeup, sched_migrate_task, plus
# the "lab: start" / "lab: stop" trace_marker lines), then runs it a second time under
# `perf record -a` of the same four tracepoints, and writes:
#   nonutf8-comm.dat                 trace.dat v7, zstd (trace-cmd restore + convert)
#   nonutf8-comm.ftrace.txt.gz       the instance's `trace` file (raw ftrace text) of
#                                    the same ring buffer
#   nonutf8-comm.report.txt.gz       `trace-cmd report` of nonutf8-comm.dat
#   nonutf8-comm.perf-script.txt.gz  `perf script --header --ns --show-lost-events` of
#                                    the second run
#   nonutf8-comm.topology.json
# The trace.dat holds the formats of the ftrace and sched systems only (as
# `trace-cmd record -e sched` would), and an empty kallsyms (none of these events
# prints a kernel address): `trace-cmd restore -c` runs in a private mount namespace
# where a copy of just those format files is bind-mounted over tracefs' events/ and
# an empty file over /proc/kallsyms, so the file stays a few tens of KB.
# Local paths in the perf header are replaced by `$WORK`. Before each run the script
# waits (up to QUIET_TRIES s, default 120) until the machine is >= QUIET_IDLE %
# (default 85) idle over 1 s, so that other users' tasks fill the trace less.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=$(cd "${1:-$here/../../sample_traces}" && pwd)
work=$(mktemp -d /tmp/nonutf8-comm.XXXXXX)
export LAB_INSTANCE=schedwake-nonutf8 BUF_KB=${BUF_KB:-4096}
export LAB_EVENTS="sched/sched_switch sched/sched_waking sched/sched_wakeup sched/sched_migrate_task"
. "$here/../scripts/record-samples/tracelib.sh"
orig_cmdl=$(cat "$TRACEFS/saved_cmdlines_size" 2>/dev/null || echo 128)
trap 'trace_cleanup 1408 "$orig_cmdl"; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

idle_pct() {
    local a b
    a=$(awk '/^cpu / {print $2+$3+$4+$5+$6+$7+$8, $5+$6}' /proc/stat); sleep 1
    b=$(awk '/^cpu / {print $2+$3+$4+$5+$6+$7+$8, $5+$6}' /proc/stat)
    echo "$a $b" | awk '{ t = $3 - $1; printf "%d\n", (t > 0 ? 100 * ($4 - $2) / t : 0) }'
}
wait_quiet() {
    local i idle
    for i in $(seq 1 "${QUIET_TRIES:-120}"); do
        idle=$(idle_pct)
        [ "$idle" -ge "${QUIET_IDLE:-85}" ] && break
    done
    echo "machine idle before the run: $idle %" >&2
}

gcc -O2 -Wall -pthread -o "$work/workload" "$here/nonutf8-comm-workload.c"
trace_setup
wait_quiet
trace_on
trace_mark start
"$work/workload"
trace_mark stop
trace_off
trace_stats "$work/ringbuf-stats.txt"
echo "lost (overrun + dropped): $(trace_lost "$work/ringbuf-stats.txt")" >&2
cat "$TI/trace" | gzip -9n > "$dest/nonutf8-comm.ftrace.txt.gz"   # before the raw read
for cpu in "$TI"/per_cpu/cpu*; do
    dd if="$cpu/trace_pipe_raw" of="$work/${cpu##*/}.raw" bs=4096 iflag=nonblock 2>/dev/null
done
topology_json "$dest/nonutf8-comm.topology.json"

# the format files of the ftrace and sched systems, and the page/event headers
slim=$work/events
mkdir -p "$slim"
cat "$TRACEFS/events/header_page" > "$slim/header_page"
cat "$TRACEFS/events/header_event" > "$slim/header_event"
for sys in ftrace sched; do
    for ev in "$TRACEFS/events/$sys"/*/; do
        [ -r "$ev/format" ] || continue
        mkdir -p "$slim/$sys/$(basename "$ev")"
        cat "$ev/format" > "$slim/$sys/$(basename "$ev")/format"
    done
done
: > "$work/kallsyms.empty"
unshare -m sh -c "mount --bind '$slim' '$TRACEFS/events' &&
    mount --bind '$work/kallsyms.empty' /proc/kallsyms &&
    trace-cmd restore -c -o '$work/head.dat'"
trace_cleanup 1408 "$orig_cmdl"       # (after restore -c, which saves the cmdlines)
n=$(ls "$work"/cpu*.raw | wc -l)
trace-cmd restore -i "$work/head.dat" -o "$work/raw.dat" \
    $(i=0; while [ $i -lt "$n" ]; do echo "$work/cpu$i.raw"; i=$((i+1)); done)
trace-cmd convert -i "$work/raw.dat" -o "$dest/nonutf8-comm.dat" --compression zstd
trace-cmd report -i "$dest/nonutf8-comm.dat" | gzip -9n > "$dest/nonutf8-comm.report.txt.gz"
wait_quiet
perf record -q -a -m 1M -o "$work/perf.data" \
    -e sched:sched_switch -e sched:sched_waking -e sched:sched_wakeup \
    -e sched:sched_migrate_task -- "$work/workload"
perf script -i "$work/perf.data" --header --ns --show-lost-events 2>/dev/null |
    LC_ALL=C sed "s#$work#\$WORK#g" | gzip -9n > "$dest/nonutf8-comm.perf-script.txt.gz"
ls -l "$dest"/nonutf8-comm.*
