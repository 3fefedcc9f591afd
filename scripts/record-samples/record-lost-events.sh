#!/bin/bash
# record-lost-events.sh -- a real trace that lost events: dbench on XFS recorded
# into a tiny per-CPU ring buffer (BUF_KB, default 32) read by a deliberately
# slow streaming reader (rawreader.py, polling every PERIOD s, default 0.05),
# so the writer overruns the reader.
#
# usage: record-lost-events.sh DEST [NAME] [CLIENTS] [SECONDS]
# Writes DEST/NAME.dat (default lost-events.dat) and DEST/NAME.topology.json;
# the work directory ${WORK:-/root/rec}/NAME keeps meta.txt, ringbuf-stats.txt
# (per-CPU overrun = events lost), dbench.txt, summary.md.
# The trace.dat carries only the kallsyms lines of the workqueue functions in
# the trace (SMALL_KALLSYMS=1, see tracelib.sh) to keep it small.
set -u
here=$(cd "$(dirname "$0")" && pwd)
dest=$1; name=${2:-lost-events}; clients=${3:-1}; secs=${4:-1}
export BUF_KB=${BUF_KB:-32}
PERIOD=${PERIOD:-0.05}
xfs=${XFS_DIR:-/mnt/xfs}
loadfile=${DBENCH_LOADFILE:-/usr/share/dbench/client.txt}
. "$here/tracelib.sh"
work=${WORK:-/root/rec}/$name
rm -rf "$work"; mkdir -p "$work" "$dest"
tmp=${TMPDIR:-/tmp}/schedwake-lost.$$; rm -rf "$tmp"; mkdir -p "$tmp"
orig_cmdl=$(cat "$TRACEFS/saved_cmdlines_size" 2>/dev/null || echo 128)
rpid=
cleanup() {
    [ -n "$rpid" ] && { touch "$tmp/stop"; wait "$rpid" 2>/dev/null; }
    trace_cleanup 1408 "$orig_cmdl"
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$xfs/dbench"; rm -rf "$xfs/dbench/clients"
sync; sleep 1
trace_setup || { echo "trace_setup failed" >&2; exit 1; }
buf_real=$(cat "$TI/buffer_size_kb")
ev_before=$(trace_enabled_events | sort | tr '\n' ' ')
topology_json "$dest/$name.topology.json"
python3 "$here/rawreader.py" "$TI" "$tmp" "$tmp/stop" "$PERIOD" &
rpid=$!
sleep 0.2
t0=$(date +%s.%N)
trace_on
trace_mark start
dbench -c "$loadfile" -D "$xfs/dbench" -t "$secs" "$clients" > "$work/dbench.txt" 2>&1
rc=$?
trace_mark stop
still_on=$(cat "$TI/tracing_on")
trace_off
t1=$(date +%s.%N)
touch "$tmp/stop"; wait "$rpid"; rpid=
ev_after=$(trace_enabled_events | sort | tr '\n' ' ')
if [ "$still_on" = 1 ] && [ "$ev_before" = "$ev_after" ]; then intact=yes; else intact=NO; fi
trace_stats "$work/ringbuf-stats.txt"
clk=$(grep -o '\[[a-z0-9_-]*\]' "$TI/trace_clock" | tr -d '[]')
lost=$(trace_lost "$work/ringbuf-stats.txt")
SMALL_KALLSYMS=1 trace_build "$work/trace.dat" "$tmp" > "$work/extract.log" 2>&1; xrc=$?
mkdir -p "$tmp"
trace_cleanup 1408 "$orig_cmdl"
sed -i "s#$loadfile#client.txt#g; s#$xfs#\$XFS_DIR#g" "$work/dbench.txt"
cp "$work/trace.dat" "$dest/$name.dat"
{
    echo "kernel: $(uname -r) ($(uname -v))"
    echo "cpu_model: $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
    echo "cpus_online: $(cat /sys/devices/system/cpu/online)"
    echo "tracer: tracefs instance, streaming reader rawreader.py (non-blocking reads of per_cpu/cpuN/trace_pipe_raw every ${PERIOD}s) + trace-cmd $(trace-cmd --version 2>/dev/null | awk '/version/ {print $3; exit}') restore/convert (trace.dat v7, zstd; kallsyms reduced to the workqueue functions of the trace)"
    echo "events: $LAB_EVENTS (+ ftrace:print markers 'lab: start' / 'lab: stop')"
    echo "buffer_size_kb_per_cpu: $BUF_KB (tracefs reports $buf_real)"
    echo "command: dbench -c client.txt -D \$XFS_DIR/dbench -t $secs $clients"
    echo "description: deliberately lossy: dbench $clients client(s), ${secs}s, on XFS (loop device), ring buffer ${BUF_KB} KB per CPU, reader polling every ${PERIOD}s"
    echo "command_rc: $rc"
    echo "extract_rc: $xrc"
    echo "wall_s: $(echo "$t1 - $t0" | bc)"
    echo "lost_events_ringbuf: $lost"
    echo "idle_pct_before_start: n/a"
    echo "tracing_setup_intact_at_stop: $intact"
    echo "trace_dat_bytes: $(stat -c %s "$work/trace.dat")"
    echo "recorded_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "trace_clock: $clk"
} > "$work/meta.txt"
python3 "$here/summarize.py" "$dest/$name.dat" '^dbench$' --json "$work/summary.json" > "$work/summary.md"
cat "$work/meta.txt" "$work/ringbuf-stats.txt" "$work/summary.md"
