#!/bin/bash
# record-perf.sh -- real perf.data samples for the native perf.data reader
# (schedwake/ingest/perfdata.py) and its conformance tests (tests/test_perfdata.py).
#
# usage: record-perf.sh [DEST]       (as root; DEST defaults to sample_traces/perf/)
# Writes into DEST, each with a NAME.meta.txt beside it (the exact command, perf
# version, kernel, file size, `perf report --stats` and per-event counts of `perf script`):
#   perf-sched-g.perf.data    perf sched record -g (sched tracepoints with callchains)
#   perf-profile-g.perf.data  perf record -g -a -F 999: a cpu-clock profile with call graphs
#   perf-dbench-z.perf.data   perf record -z (zstd records): sched + workqueue, dbench on XFS
#   perf-pipe.perf.data       perf record -o - (pipe mode) redirected into the file
#   perf-threads.perf.data/   perf record --threads (directory mode), when perf supports it
# Workload sizes: SCHED_LOOPS (25), PROFILE_LOOPS (300), PIPE_LOOPS (50), DBENCH_SECS (3),
# DBENCH_CLIENTS (2). A file over MAX_BYTES (3000000) is recorded again with half the
# loops (or seconds), up to 4 times. XFS_DIR (/mnt/xfs) is where dbench runs.
# The kernel's symbols, which perf writes into no perf.data, are saved as
# KALLSYMS_DIR/RELEASE.gz (default DEST/../kallsyms: sample_traces/kallsyms/), gzip'd.
set -u
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-$here/../../sample_traces/perf}
mkdir -p "$dest"; dest=$(cd "$dest" && pwd)
max=${MAX_BYTES:-3000000}
xfs=${XFS_DIR:-/mnt/xfs}
loadfile=${DBENCH_LOADFILE:-/usr/share/dbench/client.txt}
tmp=${TMPDIR:-/tmp}/schedwake-record-perf.$$
rm -rf "$tmp"; mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

command -v perf > /dev/null || { echo "record-perf.sh: perf is not installed" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "record-perf.sh: run as root (machine-wide tracepoints)" >&2; exit 1; }

rc=0
bytes() { du -sb "$1" | cut -f1; }

# perf_in PIPE FILE TOOL ARGS...: `perf TOOL ARGS` on FILE (from stdin for a pipe file)
perf_in() {
    local pipe=$1 f=$2; shift 2
    if [ "$pipe" = 1 ]; then perf "$@" -i - < "$f"; else perf "$@" -i "$f"; fi
}

# write_meta NAME PIPE(0/1) CMD: NAME.meta.txt from the recorded file and perf's log
write_meta() {
    local name=$1 pipe=$2 shown=$3
    local f="$dest/$name"
    {
        echo "file: $name ($(bytes "$f") bytes)"
        echo "command: $shown"
        echo "exit code: $rc"
        echo "recorded: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'))"
        echo "perf version: $(perf --version)"
        echo "kernel: $(uname -r) ($(uname -v))"
        echo "perf record stderr:"
        sed 's/^/    /' "$tmp/record.err"
        if [ -s "$tmp/workload.out" ]; then
            echo "workload output (last lines):"
            tail -n 4 "$tmp/workload.out" | sed 's/^/    /'
        fi
        echo "samples: perf script | grep -cvE '^(TAB.*)?\$' (one line a sample; callchain lines start with a TAB, one empty line after each chain):"
        echo "    $(perf_in "$pipe" "$f" script 2> /dev/null | grep -cvE $'^(\t.*)?$')"
        echo "samples per event (perf script -F event | sort | uniq -c):"
        perf_in "$pipe" "$f" script -F event 2> /dev/null |
            sed 's/^ *//; s/: *$//' | sort | uniq -c | sort -rn | sed 's/^ */    /'
        echo "PERF_RECORD_LOST records (perf script --show-lost-events):"
        echo "    $(perf_in "$pipe" "$f" script --show-lost-events 2> /dev/null | grep -c PERF_RECORD_LOST)"
        echo "perf report --stats:"
        perf_in "$pipe" "$f" report --stats 2>&1 | sed '/^$/d; s/^/    /'
        echo "perf report --header-only -I (topology, compression):"
        perf_in "$pipe" "$f" report --header-only -I 2> /dev/null |
            grep -E 'nrcpus|sibling|CPU [0-9]|L[123] |node[0-9] cpu|compressed' | sed 's/^/    /'
    } > "$f.meta.txt"
    echo "$name: $(bytes "$f") bytes"
}

# record NAME LOOPVAR START PIPE(0/1) CMD-TEMPLATE...: run the command (@N@ = loops,
# @OUT@ = the output file) until the file is at most $max bytes, halving N
record() {
    local name=$1 var=$2 n=$3 pipe=$4; shift 4
    local out="$dest/$name" try cmd
    for try in 1 2 3 4 5; do
        rm -rf "$out" "$out.old"
        cmd=()
        local a
        for a in "$@"; do a=${a//@N@/$n}; cmd+=("${a//@OUT@/$out}"); done
        [ -n "${PRE_RECORD:-}" ] && eval "$PRE_RECORD"
        : > "$tmp/workload.out"
        sync; sleep 1
        if [ "$pipe" = 1 ]; then
            "${cmd[@]}" > "$out" 2> "$tmp/record.err"
        else
            "${cmd[@]}" > "$tmp/workload.out" 2> "$tmp/record.err"
        fi
        rc=$?
        [ -e "$out" ] || { echo "$name: perf failed (rc $rc):" >&2; cat "$tmp/record.err" >&2; return 1; }
        if [ "$(bytes "$out")" -le "$max" ] || [ "$n" -le 1 ]; then break; fi
        echo "$name: $(bytes "$out") bytes with $var=$n, recording again with $((n / 2))" >&2
        n=$((n / 2))
    done
    chmod -R a+rX "$out"
    local shown
    shown=$(printf '%q ' "${cmd[@]}"); shown=${shown% }
    shown=${shown//$dest\//}
    [ "$pipe" = 1 ] && shown="$shown > $name"
    write_meta "$name" "$pipe" "$shown"
    sed -i "s#$dest/##g; s#$tmp/##g" "$dest/$name.meta.txt"
}

# a. sched tracepoints with callchains (perf sched record records machine-wide)
record perf-sched-g.perf.data SCHED_LOOPS "${SCHED_LOOPS:-25}" 0 \
    perf sched record -g -o @OUT@ -- perf bench sched messaging -g 2 -l @N@

# b. a cpu-clock profile with call graphs (no hardware PMU: cpu-clock:ppp)
record perf-profile-g.perf.data PROFILE_LOOPS "${PROFILE_LOOPS:-300}" 0 \
    perf record -g -a -F 999 -o @OUT@ -- perf bench sched messaging -g 4 -l @N@

# c. zstd-compressed records: sched and workqueue events of dbench on XFS
mkdir -p "$xfs/dbench"
PRE_RECORD="rm -rf '$xfs/dbench/clients'" \
    record perf-dbench-z.perf.data DBENCH_SECS "${DBENCH_SECS:-3}" 0 \
    perf record -z -a -o @OUT@ -e sched:sched_waking -e sched:sched_wakeup \
    -e sched:sched_migrate_task -e sched:sched_switch -e 'workqueue:*' \
    -- dbench -c "$loadfile" -D "$xfs/dbench" -t @N@ "${DBENCH_CLIENTS:-2}"
sed -i "s#$loadfile#/usr/share/dbench/client.txt#g" "$dest/perf-dbench-z.perf.data.meta.txt"

# d. pipe mode: perf's stream written to stdout, redirected into the file
#    (perf record points the workload's stdout at its stderr in pipe mode)
record perf-pipe.perf.data PIPE_LOOPS "${PIPE_LOOPS:-50}" 1 \
    perf record -o - -a -e sched:sched_waking -e sched:sched_switch \
    -e sched:sched_migrate_task -e sched:sched_wakeup \
    -- perf bench sched messaging -g 2 -l @N@

# e. directory mode (perf record --threads): data, data.0, data.1, ...
if perf record --threads -o "$tmp/probe.data" -e sched:sched_switch -a -- true \
    > /dev/null 2>&1 && [ -d "$tmp/probe.data" ]; then
    record perf-threads.perf.data THREADS_LOOPS "${THREADS_LOOPS:-10}" 0 \
        perf record --threads -a -o @OUT@ -e sched:sched_switch -e sched:sched_waking \
        -- perf bench sched messaging -g 1 -l @N@
else
    echo "perf record --threads does not work here: no perf-threads.perf.data" >&2
fi

# the recording kernel's symbols, for the files' kernel addresses on any other machine
ksdir=${KALLSYMS_DIR:-$dest/../kallsyms}
mkdir -p "$ksdir" && gzip -9n < /proc/kallsyms > "$ksdir/$(uname -r).gz" ||
    echo "record-perf.sh: could not save /proc/kallsyms into $ksdir" >&2
echo "kallsyms: $ksdir/$(uname -r).gz"

du -sb "$dest"
