#!/bin/bash
# record-sample.sh -- record one sample trace for schedwake's sample_traces/.
#
# usage: record-sample.sh DEST NAME KIND ARGS...
#   KIND dbench CLIENTS SECONDS         dbench on XFS (host-dbench.sh)
#   KIND fio root|cgroup SECONDS [CPU]  fio libaio direct randwrite pinned to CPU (host-fio.sh)
#   KIND cmd REGEX -- COMMAND...        any command (host-record.sh)
# Writes DEST/NAME.dat (trace.dat v7, zstd) and DEST/NAME.topology.json; the
# work directory (meta.txt, ringbuf-stats.txt, workload output, report text,
# summary.md from summarize.py) stays in ${WORK:-/root/rec}/NAME.
# Environment: BUF_KB (per-CPU ring buffer KB, default 200000), XFS_DIR
# (default /mnt/xfs), QUIET_TRIES (see host-record.sh).
#
# XFS on a loop device, once:
#   truncate -s 2G /root/xfs.img && mkfs.xfs -f /root/xfs.img
#   mkdir -p /mnt/xfs && mount -o loop /root/xfs.img /mnt/xfs
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=$1; name=$2; kind=$3; shift 3
work=${WORK:-/root/rec}/$name
xfs=${XFS_DIR:-/mnt/xfs}
rm -rf "$work"; mkdir -p "$work" "$dest"
case $kind in
    dbench) "$here/host-dbench.sh" "$work" "$1" "$2" "$xfs"; wl='^dbench$' ;;
    fio)    "$here/host-fio.sh" "$work" "$1" "$2" "$xfs" "${3:-1}"; wl='^fio$' ;;
    cmd)    wl=$1; shift; [ "${1:-}" = "--" ] && shift
            "$here/host-record.sh" "$work" "$wl" -- "$@" ;;
    *) echo "unknown kind $kind" >&2; exit 2 ;;
esac
cp "$work/trace.dat" "$dest/$name.dat"
cp "$work/topology.json" "$dest/$name.topology.json"
python3 "$here/summarize.py" "$dest/$name.dat" "$wl" --json "$work/summary.json" > "$work/summary.md"
cat "$work/summary.md"
