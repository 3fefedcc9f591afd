#!/bin/bash
# record-conformance.sh -- one short real workload seen at the same time by
# two tracefs instances and by perf, written out in every text format the
# schedwake parsers read.
#
# usage: record-conformance.sh OUTDIR
# Environment: CONF_SECS (dbench -t, default 1), CONF_RATE (dbench -R target
#   MB/s, default 55: keeps the trace below ~40k events), CONF_CLIENTS (1),
#   BUF_KB (per-CPU ring buffer of each instance, default 20000),
#   XFS_DIR (/mnt/xfs)
#
# Tracers, all switched on around the same workload:
#   instance schedwake-conf       -> its `trace` file read before the extract
#                                    (conf.ftrace.txt.gz), then the buffer ->
#                                    conf.dat (trace-cmd restore + convert)
#   instance schedwake-conf-pipe  -> streamed live from its trace_pipe by
#                                    pipereader.py (non-blocking reads every
#                                    0.1 s; a blocking `cat trace_pipe` traces
#                                    itself in a feedback loop) -> conf.trace_pipe.txt.gz
#   perf record -a (runs the whole thing as its command) -> conf.perf-script.txt.gz
# Both instances enable the same events, so each tracepoint hit is written
# into both ring buffers (each takes its own timestamp).  perf uses the same
# clock as trace_clock "local" (sched_clock), so its times compare directly.
# Then: trace-cmd report variants of conf.dat (default, -N, -R, -l, -t) and a
# second, separate perf run with call chains (-g) -> conf.perf-script-g.txt.gz.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=$1; mkdir -p "$out"; out=$(cd "$out" && pwd)
secs=${CONF_SECS:-1}; rate=${CONF_RATE:-55}; clients=${CONF_CLIENTS:-1}
export BUF_KB=${BUF_KB:-20000}
xfs=${XFS_DIR:-/mnt/xfs}
loadfile=${DBENCH_LOADFILE:-/usr/share/dbench/client.txt}
LAB_INSTANCE=schedwake-conf
. "$here/tracelib.sh"
TA=$TRACEFS/instances/schedwake-conf
TB=$TRACEFS/instances/schedwake-conf-pipe
work=${WORK:-/root/rec}/conformance; rm -rf "$work"; mkdir -p "$work"
tmp=${TMPDIR:-/tmp}/schedwake-conf.$$; rm -rf "$tmp"; mkdir -p "$tmp"
orig_cmdl=$(cat "$TRACEFS/saved_cmdlines_size" 2>/dev/null || echo 128)
catpid=
PERF_EVENTS="-e sched:sched_waking -e sched:sched_wakeup -e sched:sched_migrate_task -e sched:sched_switch -e workqueue:workqueue_execute_start -e workqueue:workqueue_execute_end -e workqueue:workqueue_queue_work -e workqueue:workqueue_activate_work"
cleanup() {
    [ -n "$catpid" ] && { touch "$tmp/pipe.stop"; wait "$catpid" 2>/dev/null; }
    TI=$TB trace_cleanup 1408 "$orig_cmdl"
    TI=$TA trace_cleanup 1408 "$orig_cmdl"
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$xfs/dbench"; rm -rf "$xfs/dbench/clients"
TI=$TA trace_setup || exit 1
TI=$TB trace_setup || exit 1
topology_json "$out/conf.topology.json"

# the workload perf runs: both instances on, markers, dbench, markers, both off
cat > "$tmp/workload.sh" <<EOF
#!/bin/sh
echo 1 > $TA/tracing_on; echo 1 > $TB/tracing_on
echo "lab: start" > $TA/trace_marker; echo "lab: start" > $TB/trace_marker
dbench -c $loadfile -D $xfs/dbench -t $secs -R $rate $clients > $work/dbench.txt 2>&1
echo "lab: stop" > $TA/trace_marker; echo "lab: stop" > $TB/trace_marker
echo 0 > $TA/tracing_on; echo 0 > $TB/tracing_on
EOF
chmod +x "$tmp/workload.sh"

# wait (up to QUIET_TRIES s) until the machine is >= QUIET_IDLE % idle over 1 s
idle_pct() {
    local a b
    a=$(awk '/^cpu / {print $2+$3+$4+$5+$6+$7+$8, $5+$6}' /proc/stat); sleep 1
    b=$(awk '/^cpu / {print $2+$3+$4+$5+$6+$7+$8, $5+$6}' /proc/stat)
    echo "$a $b" | awk '{ t = $3 - $1; printf "%d\n", (t > 0 ? 100 * ($4 - $2) / t : 0) }'
}
sync; sleep 1
for i in $(seq 1 "${QUIET_TRIES:-60}"); do
    idle_before=$(idle_pct)
    [ "$idle_before" -ge "${QUIET_IDLE:-90}" ] && break
done
python3 "$here/pipereader.py" "$TB" "$tmp/trace_pipe.txt" "$tmp/pipe.stop" 0.1 &
catpid=$!
ev_before=$(TI=$TA trace_enabled_events | sort | tr '\n' ' ')
t0=$(date +%s.%N)
perf record -a -m 16M $PERF_EVENTS -o "$tmp/conf.perf.data" -- "$tmp/workload.sh" > "$work/perf-record.log" 2>&1
prc=$?
t1=$(date +%s.%N)
ev_after=$(TI=$TA trace_enabled_events | sort | tr '\n' ' ')
ev_b=$(TI=$TB trace_enabled_events | sort | tr '\n' ' ')
[ "$ev_before" = "$ev_after" ] && [ "$ev_before" = "$ev_b" ] && intact=yes || intact=NO
# the reader drains instance B one last time and exits
touch "$tmp/pipe.stop"; wait "$catpid"; catpid=
TI=$TA trace_stats "$work/ringbuf-stats.txt"
TI=$TB trace_stats "$work/ringbuf-stats-pipe.txt"
clk=$(grep -o '\[[a-z0-9_-]*\]' "$TA/trace_clock" | tr -d '[]')
lostA=$(trace_lost "$work/ringbuf-stats.txt"); lostB=$(trace_lost "$work/ringbuf-stats-pipe.txt")

# raw text of instance A's buffer (reading `trace` does not consume it)
cat "$TA/trace" > "$tmp/ftrace.txt"
TI=$TA trace_extract "$work/conf.dat" "$tmp/extract" > "$work/extract.log" 2>&1; xrc=$?
TI=$TB trace_cleanup 1408 "$orig_cmdl"
TI=$TA trace_cleanup 1408 "$orig_cmdl"

# keep local paths out of the texts
fix() { sed "s#$loadfile#client.txt#g; s#$xfs#\$XFS_DIR#g; s#$tmp/##g"; }
cp "$work/conf.dat" "$out/conf.dat"
fix < "$tmp/ftrace.txt" | gzip -9 > "$out/conf.ftrace.txt.gz"
fix < "$tmp/trace_pipe.txt" | gzip -9 > "$out/conf.trace_pipe.txt.gz"
trace-cmd report -i "$out/conf.dat" 2> "$work/report.err" | gzip -9 > "$out/conf.report.txt.gz"
for v in N R l t; do
    trace-cmd report -$v -i "$out/conf.dat" 2>> "$work/report.err" | gzip -9 > "$out/conf.report-$v.txt.gz"
done
perf script -i "$tmp/conf.perf.data" 2> "$work/perf-script.err" | fix | gzip -9 > "$out/conf.perf-script.txt.gz"
# ns timestamps, for the comparison only (not kept)
perf script --ns -F comm,tid,cpu,time,event,trace -i "$tmp/conf.perf.data" 2>/dev/null | gzip -1 > "$work/perf-ns.txt.gz"
perf report -i "$tmp/conf.perf.data" --stats 2>/dev/null > "$work/perf-stats.txt"
fix < "$tmp/workload.sh" > "$work/workload.sh"

# second perf run with call chains (not matched to the ftrace buffers)
sync; sleep 1
rm -rf "$xfs/dbench/clients"
perf record -a -g -m 16M $PERF_EVENTS -o "$tmp/conf-g.perf.data" -- \
    dbench -c "$loadfile" -D "$xfs/dbench" -t 1 -R "${CONF_G_RATE:-10}" 1 > "$work/perf-record-g.log" 2>&1
perf script -i "$tmp/conf-g.perf.data" 2>> "$work/perf-script.err" | fix | gzip -9 > "$out/conf.perf-script-g.txt.gz"
perf report -i "$tmp/conf-g.perf.data" --stats 2>/dev/null > "$work/perf-stats-g.txt"
sed -i "s#$loadfile#client.txt#g; s#$xfs#\$XFS_DIR#g; s#$tmp/##g" "$work"/perf-record*.log "$work/dbench.txt"
{
    echo "kernel: $(uname -r) ($(uname -v))"
    echo "cpus_online: $(cat /sys/devices/system/cpu/online)"
    echo "perf: $(perf --version)"
    echo "trace-cmd: $(trace-cmd --version 2>/dev/null | awk '/version/ {print $3; exit}')"
    echo "events_ftrace: $LAB_EVENTS"
    echo "events_perf: $PERF_EVENTS"
    echo "buffer_size_kb_per_cpu: $BUF_KB"
    echo "command: perf record -a -m 16M <events> -o conf.perf.data -- workload.sh (dbench -c client.txt -D \$XFS_DIR/dbench -t $secs -R $rate $clients between tracing_on=1 and tracing_on=0 of both instances)"
    echo "perf_record_rc: $prc"
    echo "extract_rc: $xrc"
    echo "wall_s: $(echo "$t1 - $t0" | bc)"
    echo "lost_events_ringbuf: $lostA"
    echo "lost_events_ringbuf_pipe_instance: $lostB"
    echo "tracing_setup_intact_at_stop: $intact"
    echo "idle_pct_before_start: $idle_before"
    echo "recorded_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "trace_clock: $clk"
} > "$work/meta.txt"
cat "$work/meta.txt"
ls -la "$out"
