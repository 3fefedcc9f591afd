#!/bin/bash
# record-referee.sh -- the referee samples (sample_traces/referee/): short recordings with
# the kernel's own counters beside them (TRACE.counters.json), for schedwake.referee.
#
# usage: record-referee.sh [DEST]        (as root; DEST defaults to sample_traces/referee/)
#
# trace.dat, each `schedwake record --no-kallsyms --runtime --perf-stat` (the counters,
# sched_stat_runtime, perf stat -a -A over the counters' stretch; no symbol table: 1 MB
# less a file):
#   pipe.dat           perf bench sched pipe (two tasks, unpinned)
#   pipe-cpu1.dat      the same pinned to CPU 1 (taskset -c 1)
#   messaging.dat      perf bench sched messaging -g 1
#   sleeper.dat        sleeper.c: 50 us computing, 200 us asleep, 1 s, unpinned
#   sleeper-cpu1.dat   the same pinned to CPU 1
#   fio-cpu1.dat       fio randwrite, libaio, O_DIRECT, 4000 IO/s for 1 s, on XFS on a
#                      loop device, pinned to CPU 1
#   idle.dat           nothing run: 1 s of the machine as it is
# perf.data, with perf-counters.py (counters.json beside, no markers: the clock relation):
#   pipe.perf.data           perf sched record of perf bench sched pipe
#   sleeper-cpu1.perf.data   perf record -a -e sched:... of the pinned sleeper
# Workload sizes: PIPE_LOOPS (10000), PERF_PIPE_LOOPS (4000), MSG_LOOPS (100), SECONDS_EACH (1).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-$here/../../sample_traces/referee}
mkdir -p "$dest"; dest=$(cd "$dest" && pwd)
sw=${SCHEDWAKE:-$here/../../.venv/bin/schedwake}
py=${PYTHON:-$here/../../.venv/bin/python}
loops=${PIPE_LOOPS:-10000}; perf_loops=${PERF_PIPE_LOOPS:-4000}; msg=${MSG_LOOPS:-100}; secs=${SECONDS_EACH:-1}
[ "$(id -u)" = 0 ] || { echo "record-referee.sh: run as root" >&2; exit 1; }
tmp=$(mktemp -d /tmp/schedwake-referee.XXXXXX)
xfs=$tmp/xfs
cleanup() { mountpoint -q "$xfs" && umount "$xfs"; rm -rf "$tmp"; }
trap cleanup EXIT
cc -O2 -o "$tmp/sleeper" "$here/sleeper.c"
cd "$tmp"   # the commands' argv in the counters files: ./sleeper, not a temporary path

# quiet() waits (60 s at most) until the machine was >= 90 % idle over half a second:
# other users of the machine show in the traces, as they should, but not as the workload
idle_ticks() { awk '/^cpu /{print $5+$6, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
quiet() {
    local i a b c d
    for i in $(seq 120); do
        read -r a b < <(idle_ticks); sleep 0.5; read -r c d < <(idle_ticks)
        [ $(( (c - a) * 100 )) -ge $(( (d - b) * 90 )) ] && return 0
    done
    echo "record-referee.sh: the machine is busy; recording anyway" >&2
}
# (the command's output is kept beside the trace as NAME.cmd.txt: only the summary line here)
rec() {
    local name=$1; shift
    quiet
    "$sw" record -q --no-kallsyms --runtime --perf-stat -o "$dest/$name" "$@" | tail -n 1
}

rec pipe.dat -- perf bench sched pipe -l "$loops"
rec pipe-cpu1.dat -- taskset -c 1 perf bench sched pipe -l "$loops"
rec messaging.dat -- perf bench sched messaging -g 1 -l "$msg"
rec sleeper.dat -- ./sleeper "$secs"
rec sleeper-cpu1.dat -- taskset -c 1 ./sleeper "$secs"

# fio on XFS on a loop device (xfsprogs wants these set for a small filesystem)
truncate -s 2G xfs.img
TEST_DIR=1 TEST_DEV=1 QA_CHECK_FS=1 mkfs.xfs -q -f xfs.img
mkdir -p "$xfs"; mount -o loop xfs.img "$xfs"
fio_args=(--name=randwrite --ioengine=libaio --direct=1 --rw=randwrite --bs=4k --iodepth=32
          --size=64M --filename="$xfs/fio.dat" --output-format=json --rate_iops=4000)
fio "${fio_args[@]}" --runtime=1 --time_based > /dev/null   # lays the file out
rec fio-cpu1.dat -- taskset -c 1 fio "${fio_args[@]}" --runtime="$secs" --time_based
sed -i "s#$xfs#\$XFS_DIR#g" "$dest/fio-cpu1.dat.cmd.txt" "$dest/fio-cpu1.dat.counters.json"
umount "$xfs"

rec idle.dat --duration "$secs"

quiet
"$py" "$here/perf-counters.py" "$dest/pipe.perf.data" -- perf bench sched pipe -l "$perf_loops"
quiet
"$py" "$here/perf-counters.py" "$dest/sleeper-cpu1.perf.data" \
    --events sched:sched_switch,sched:sched_waking,sched:sched_wakeup,sched:sched_migrate_task,sched:sched_process_fork,sched:sched_process_exit,sched:sched_stat_runtime \
    -- taskset -c 1 ./sleeper "$secs"
rm -f "$dest"/*.perf.data.old  # (perf keeps the file it overwrites)
chmod 644 "$dest"/*.perf.data
ls -l "$dest"
