#!/bin/bash
# host-record.sh -- record one scheduler trace of a workload on this kernel.
#
# usage: host-record.sh OUTDIR WORKLOAD_COMM_REGEX -- command [args...]
#
# Writes into OUTDIR:
#   trace.dat              trace.dat v7, zstd (trace-cmd restore + convert)
#   trace.report.txt.gz    `trace-cmd report` text (default, with plugins)
#   trace.report-kfmt.txt.gz  `trace-cmd report -N` text (kernel print formats)
#   topology.json          {"cpus": N, "llc": [[...], ...]}
#   topology.txt           per-cpu cache levels and shared_cpu_list
#   ringbuf-stats.txt      per-cpu ring buffer stats after the run (overrun = lost)
#   groundtruth.json, tasks.tsv   (groundtruth.sh)
#   meta.txt               kernel, cpu, timings, sizes, lost events
#   workload.out           stdout+stderr of the command
# (adapted for schedwake sample_traces: tracing is cleaned up by an EXIT trap
#  even when the script fails; SAVE_FTRACE_TEXT=FILE.gz keeps the raw text of
#  the instance's `trace` file of the same buffer)
# Environment: BUF_KB (per-cpu ring buffer KB, default 200000),
#              KEEP_KFMT (1: keep trace.report-kfmt.txt.gz, 0: delete it after
#              the ground truth was computed from it),
#              QUIET_IDLE / QUIET_TRIES (wait for >= QUIET_IDLE % idle, default 90),
#              LAB_DESC (free text put into meta.txt),
#              LAB_CMD_DESC (command line to print in meta.txt instead of the real one)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/tracelib.sh"

out=$1; wl=$2; shift 2
[ "${1:-}" = "--" ] && shift
mkdir -p "$out"
out=$(cd "$out" && pwd)

orig_buf=$(cat "$TRACEFS/buffer_size_kb" 2>/dev/null || echo 1408)
orig_cmdl=$(cat "$TRACEFS/saved_cmdlines_size" 2>/dev/null || echo 128)

# wait (up to QUIET_TRIES s) until the machine is >= QUIET_IDLE % idle over 1 s,
# so that other users of the machine disturb the trace as little as possible
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
# whatever happens from here on: tracing off, events off, instance removed
trap 'trace_cleanup "$orig_buf" "$orig_cmdl"' EXIT
trap 'exit 130' INT TERM
trace_setup || { echo "trace_setup failed" >&2; exit 1; }
ev_before=$(trace_enabled_events | sort | tr '\n' ' ')
topology_json "$out/topology.json"
for c in /sys/devices/system/cpu/cpu[0-9]*; do
    [ -d "$c/cache" ] || continue
    for i in "$c"/cache/index*; do
        echo "${c##*/} L$(cat "$i/level") $(cat "$i/type") shared_cpu_list=$(cat "$i/shared_cpu_list")"
    done
done > "$out/topology.txt"

t0=$(date +%s.%N)
trace_on
trace_mark start
"$@" > "$out/workload.out" 2>&1
rc=$?
trace_mark stop
still_on=$(cat "$TI/tracing_on")
trace_off
t1=$(date +%s.%N)
ev_after=$(trace_enabled_events | sort | tr '\n' ' ')
if [ "$still_on" = 1 ] && [ "$ev_before" = "$ev_after" ]; then intact=yes; else intact=NO; fi

trace_stats "$out/ringbuf-stats.txt"
clk=$(grep -o '\[[a-z0-9_-]*\]' "$TI/trace_clock" | tr -d '[]')
lost=$(trace_lost "$out/ringbuf-stats.txt")
# SAVE_FTRACE_TEXT=FILE.gz: keep the instance's raw `trace` text of the same
# buffer (read before the extract, which consumes the buffer)
if [ -n "${SAVE_FTRACE_TEXT:-}" ]; then cat "$TI/trace" | gzip -9 > "$SAVE_FTRACE_TEXT"; fi
trace_extract "$out/trace.dat" "${TMPDIR:-/tmp}/schedwake-lab.$$" > "$out/extract.log" 2>&1; xrc=$?
entries=$(awk '/^entries:/ {s+=$2} END {print s+0}' "$out/ringbuf-stats.txt")
trace_cleanup "$orig_buf" "$orig_cmdl"

trace-cmd report -i "$out/trace.dat" 2> "$out/report.err" | gzip -6 > "$out/trace.report.txt.gz"
# -N: no plugins, i.e. the kernel's own print formats.  The libtraceevent
# sched_switch plugin prints a preempted prev_state (R+) as plain "R" and
# TASK_REPORT_IDLE as "W" on recent kernels; the kernel format keeps R+ / I.
trace-cmd report -N -i "$out/trace.dat" 2>> "$out/report.err" | gzip -6 > "$out/trace.report-kfmt.txt.gz"
[ -x "$here/groundtruth.sh" ] && "$here/groundtruth.sh" "$out/trace.report-kfmt.txt.gz" "$wl" "$out/topology.json" "$out" || true

{
    echo "kernel: $(uname -r) ($(uname -v))"
    echo "cpu_model: $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
    echo "cpus_online: $(cat /sys/devices/system/cpu/online)"
    echo "tracer: tracefs instance + trace-cmd $(trace-cmd --version 2>/dev/null | awk '/version/ {print $3; exit}') restore/convert (trace.dat v7, zstd)"
    echo "events: $LAB_EVENTS (+ ftrace:print markers 'lab: start' / 'lab: stop')"
    echo "buffer_size_kb_per_cpu: $BUF_KB"
    echo "workload_regex: $wl"
    echo "command: ${LAB_CMD_DESC:-$*}"
    echo "description: ${LAB_DESC:-}"
    echo "command_rc: $rc"
    echo "extract_rc: $xrc"
    echo "wall_s: $(echo "$t1 - $t0" | bc)"
    echo "lost_events_ringbuf: $lost"
    echo "ringbuf_entries: $entries"
    [ -f "${dst:-$out}/groundtruth.json" ] && echo "report_events: $(awk '/"total_events"/ {gsub(/[^0-9]/, "", $2); print $2}' "$out/groundtruth.json")"
    echo "idle_pct_before_start: $idle_before"
    echo "tracing_setup_intact_at_stop: $intact"
    echo "trace_dat_bytes: $(stat -c %s "$out/trace.dat")"
    echo "report_gz_bytes: $(stat -c %s "$out/trace.report.txt.gz")"
    echo "report_kfmt_gz_bytes: $(stat -c %s "$out/trace.report-kfmt.txt.gz")"
    echo "recorded_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "trace_clock: $clk"
} > "$out/meta.txt"
[ -s "$out/report.err" ] || rm -f "$out/report.err"
# KEEP_KFMT=0: drop the -N report after computing the ground truth (to save
# space; regenerate it with `trace-cmd report -N -i trace.dat`)
if [ "${KEEP_KFMT:-1}" = 0 ]; then
    rm -f "$out/trace.report-kfmt.txt.gz"
    sed -i 's/^report_kfmt_gz_bytes: .*/report_kfmt_gz_bytes: (not kept; trace-cmd report -N -i trace.dat)/' "$out/meta.txt"
fi
cat "$out/meta.txt"
