# tracelib.sh -- shared helpers for recording scheduler traces through tracefs.
# Source it from bash (host) or busybox sh (nested guest); needs: mount, cat, echo.
#
# trace-cmd record does not work on every kernel we record on (it wants to write
# /proc/sys/kernel/ftrace_enabled and set_ftrace_pid), so we drive tracefs
# directly and only use `trace-cmd extract` to turn the ring buffers into a
# trace.dat file.
#
# Recording happens in a private tracefs instance (instances/$LAB_INSTANCE):
# its ring buffer, enabled events and tracing_on are independent of the
# top-level buffer, so other users of tracefs on the same machine cannot
# switch our events off (this happened on the first host trace we took).
#
# Variables a caller may set before sourcing:
#   TRACEFS      tracefs mount point (default /sys/kernel/tracing)
#   LAB_INSTANCE instance name (default schedwake-lab); LAB_INSTANCE= (empty)
#                records in the top-level buffer instead
#   BUF_KB       ring buffer size per CPU in KB (default 200000)
#   LAB_EVENTS   space separated list of <system>/<event> or <system> (all events of it)

TRACEFS=${TRACEFS:-/sys/kernel/tracing}
LAB_INSTANCE=${LAB_INSTANCE-schedwake-lab}
if [ -n "$LAB_INSTANCE" ]; then TI="$TRACEFS/instances/$LAB_INSTANCE"; else TI="$TRACEFS"; fi
BUF_KB=${BUF_KB:-200000}
LAB_EVENTS=${LAB_EVENTS:-"sched/sched_waking sched/sched_wakeup sched/sched_wakeup_new sched/sched_migrate_task sched/sched_switch sched/sched_process_fork sched/sched_process_exit workqueue"}

trace_mount() {
    if [ ! -e "$TRACEFS/tracing_on" ]; then
        mount -t tracefs nodev "$TRACEFS" || return 1
    fi
}

# trace_setup: stop tracing, clear the buffers, enable exactly LAB_EVENTS.
trace_setup() {
    trace_mount || return 1
    [ -d "$TI" ] || mkdir "$TI" || return 1
    echo 0 > "$TI/tracing_on"
    echo nop > "$TI/current_tracer"
    echo > "$TI/set_event"                   # disable every event
    echo "$BUF_KB" > "$TI/buffer_size_kb"
    # keep pid->comm for every task so reports never show "<...>"
    { echo "${CMDLINES:-32768}" > "$TRACEFS/saved_cmdlines_size"; } 2>/dev/null
    echo > "$TI/trace"                      # clear all per-cpu buffers
    local _e
    for _e in $LAB_EVENTS; do
        echo 1 > "$TI/events/$_e/enable" || { echo "cannot enable $_e" >&2; return 1; }
    done
    # the "print" event carries our trace_marker lines (workload start/stop)
    # (ftrace:print is always on and cannot be toggled; markers must be allowed)
    { echo 1 > "$TI/options/markers"; } 2>/dev/null
    return 0
}

trace_on()  { echo 1 > "$TI/tracing_on"; }
trace_off() { echo 0 > "$TI/tracing_on"; }
trace_mark() { { echo "lab: $*" > "$TI/trace_marker"; } 2>/dev/null; }
# events currently enabled in our instance (to check nobody changed them)
trace_enabled_events() { cat "$TI/set_event"; }

# trace_extract FILE [TMPDIR]: write the buffers to a trace.dat (top-level
# buffer of the file, zstd-compressed trace.dat v7 when `trace-cmd convert`
# can do it).  For an instance we read each CPU's trace_pipe_raw ourselves and
# let `trace-cmd restore` build the file: `trace-cmd extract -B` would name the
# buffer in the file, so every `trace-cmd report` line would carry a
# "<instance>:" prefix (and extract also deletes the instance).
trace_extract() {
    local _o=$1 _t=${2:-} _n _i
    if [ -z "$LAB_INSTANCE" ]; then trace-cmd extract -o "$_o"; return $?; fi
    [ -n "$_t" ] || _t=$(mktemp -d)
    mkdir -p "$_t"
    _n=$(ls -d "$TI"/per_cpu/cpu* | wc -l); _i=0
    while [ "$_i" -lt "$_n" ]; do
        dd if="$TI/per_cpu/cpu$_i/trace_pipe_raw" of="$_t/cpu$_i.raw" bs=4096 iflag=nonblock 2>/dev/null
        _i=$((_i+1))
    done
    trace_build "$_o" "$_t"
}

# trace_build FILE TMPDIR: TMPDIR/cpu0.raw cpu1.raw ... (raw ring-buffer pages
# of each CPU, in CPU order) -> FILE (trace.dat v7, zstd); TMPDIR is removed.
# SMALL_KALLSYMS=1: store only the kallsyms lines of the functions that the
# trace's workqueue events name (the only events here that print a kernel
# address with %ps), instead of the whole /proc/kallsyms (about 5 MB, about
# 0.9 MB compressed): the file is built twice, the second time with a filtered
# copy bind-mounted over /proc/kallsyms in a private mount namespace.
trace_build() {
    local _o=$1 _t=$2 _n _i _files=""
    _n=$(ls "$_t"/cpu*.raw | wc -l); _i=0
    while [ "$_i" -lt "$_n" ]; do _files="$_files $_t/cpu$_i.raw"; _i=$((_i+1)); done
    trace-cmd restore -c -o "$_t/head.dat" || return 1
    trace-cmd restore -i "$_t/head.dat" -o "$_t/raw.dat" $_files || return 1
    if [ "${SMALL_KALLSYMS:-0}" = 1 ]; then
        trace-cmd report -i "$_t/raw.dat" 2>/dev/null |
            sed -n 's/.*workqueue_execute_start: .*function \([^ ]*\).*/\1/p; s/.*workqueue_queue_work: .*function=\([^ ]*\) .*/\1/p' |
            sort -u > "$_t/wqfuncs.txt"
        awk 'NR == FNR { want[$1] = 1; next } ($3 in want)' "$_t/wqfuncs.txt" /proc/kallsyms > "$_t/kallsyms.small"
        echo "small kallsyms: $(wc -l < "$_t/wqfuncs.txt") workqueue functions, $(wc -l < "$_t/kallsyms.small") kallsyms lines" >&2
        rm -f "$_t/head.dat" "$_t/raw.dat"
        unshare -m sh -c "mount --bind '$_t/kallsyms.small' /proc/kallsyms && trace-cmd restore -c -o '$_t/head.dat'" || return 1
        trace-cmd restore -i "$_t/head.dat" -o "$_t/raw.dat" $_files || return 1
    fi
    if trace-cmd convert -i "$_t/raw.dat" -o "$_o" --compression zstd; then :
    else mv "$_t/raw.dat" "$_o"; fi
    rm -rf "$_t"
}

# trace_stats FILE: per-cpu ring buffer statistics (overrun = lost events)
trace_stats() {
    local _f=$1 _d
    : > "$_f"
    for _d in "$TI"/per_cpu/cpu*; do
        echo "== ${_d##*/}" >> "$_f"
        cat "$_d/stats" >> "$_f"
    done
}

# trace_lost FILE: sum of overrun + dropped events over all cpus in a stats file
trace_lost() {
    awk '/^overrun:/ {s+=$2} /^dropped events:/ {s+=$3} END {print s+0}' "$1"
}

# trace_cleanup [KB [CMDLINES]]: tracing off, no events enabled, buffers
# cleared; the instance is removed (or, when recording in the top-level
# buffer, it is shrunk back to KB per cpu, default 1408, the kernel default);
# saved_cmdlines_size back to CMDLINES (default 128).
trace_cleanup() {
    if [ -n "$LAB_INSTANCE" ]; then
        if [ -d "$TI" ]; then
            echo 0 > "$TI/tracing_on"; echo > "$TI/set_event"; echo > "$TI/trace"
            rmdir "$TI"
        fi
    else
        echo 0 > "$TI/tracing_on"; echo > "$TI/set_event"; echo > "$TI/trace"
        echo "${1:-1408}" > "$TRACEFS/buffer_size_kb"
    fi
    { echo "${2:-128}" > "$TRACEFS/saved_cmdlines_size"; } 2>/dev/null
}

# topology_json FILE: {"cpus": N, "llc": [[...], ...], "smt": [[...], ...],
# "numa": [[...], ...]} from sysfs (the LLC is the highest cache index present;
# smt from cpuN/topology/thread_siblings_list, numa from nodeN/cpulist; CPU
# lists are expanded; groups in order of first appearance).
topology_json() {
    local _f=$1 _n=0 _llc="" _smt="" _numa="" _c _best _bestl _idx _l _nd
    for _c in /sys/devices/system/cpu/cpu[0-9]*; do
        [ -d "$_c/cache" ] || continue
        _n=$((_n+1))
        # pick highest level among indexes
        _best=""; _bestl=0
        for _idx in "$_c"/cache/index*; do
            _l=$(cat "$_idx/level")
            if [ "$_l" -ge "$_bestl" ]; then _bestl=$_l; _best=$_idx; fi
        done
        _llc="$_llc
L $(cat "$_best/shared_cpu_list")"
        [ -r "$_c/topology/thread_siblings_list" ] && _smt="$_smt
S $(cat "$_c/topology/thread_siblings_list")"
    done
    for _nd in /sys/devices/system/node/node[0-9]*; do
        [ -r "$_nd/cpulist" ] || continue
        _l=$(cat "$_nd/cpulist"); [ -n "$_l" ] && _numa="$_numa
N $_l"
    done
    printf '%s\n%s\n%s\n' "$_llc" "$_smt" "$_numa" | awk -v n="$_n" '
        function expand(s,   a, i, k, r, lo, hi, j, out) {
            k = split(s, a, ","); out = ""
            for (i = 1; i <= k; i++) {
                if (split(a[i], r, "-") == 2) { lo = r[1]; hi = r[2] } else { lo = a[i]; hi = a[i] }
                for (j = lo + 0; j <= hi + 0; j++) out = out (out == "" ? "" : ", ") j
            }
            return "[" out "]"
        }
        function group(t,   i, o) {
            o = ""
            for (i = 1; i <= cnt[t]; i++) o = o (i > 1 ? ", " : "") expand(ord[t, i])
            return "[" o "]"
        }
        NF == 2 { if (!(($1, $2) in seen)) { seen[$1, $2] = 1; ord[$1, ++cnt[$1]] = $2 } }
        END {
            printf "{\"cpus\": %d, \"llc\": %s, \"smt\": %s, \"numa\": %s}\n", n, group("L"), group("S"), group("N")
        }' > "$_f"
}
