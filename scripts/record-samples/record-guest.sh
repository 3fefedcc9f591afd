#!/bin/bash
# record-guest.sh -- the 8-CPU guest sample (guest8-dbench-xfs-2clients.dat):
# a Debian linux-image kernel booted under qemu TCG (no hardware
# virtualisation needed) with -smp 8, dbench 2 clients for 20 s on XFS on a
# virtio disk, traced inside the guest (nested/guest-init.sh), copied out.
#
# usage: record-guest.sh DEST [KERNEL_DEB]
# needs: apt-get install -y --no-install-recommends qemu-system-x86 busybox-static
#        (plus dbench, xfsprogs, trace-cmd, fio installed here: copied into the initramfs)
# KERNEL_DEB: a Debian linux-image-*.deb (default: downloaded with
#             `apt-get download linux-image-6.1.0-50-amd64`)
# Environment: WORK (default /root/guest), SMP (8), RUNS (dbench:2:20), NAME
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=$1; deb=${2:-}
WORK=${WORK:-/root/guest}; SMP=${SMP:-8}; RUNS=${RUNS:-dbench:2:20}
NAME=${NAME:-guest8-dbench-xfs-2clients}
mkdir -p "$WORK" "$dest"; cd "$WORK"
if [ -z "$deb" ]; then apt-get download linux-image-6.1.0-50-amd64; deb=$(ls -t "$WORK"/linux-image-*.deb | head -1); fi
rm -rf "$WORK/k"; dpkg -x "$deb" "$WORK/k"
kernel=$(ls "$WORK"/k/boot/vmlinuz-* | head -1)
"$here/nested/build-initramfs.sh" "$WORK/k" "$WORK/initrd.cpio.gz"
rm -rf "$WORK/out"; mkdir -p "$WORK/out" "$WORK/work"
initrd="$WORK/initrd.cpio.gz"; vmwork="$WORK/work"
WORK=$vmwork KERNEL=$kernel INITRD=$initrd \
    KVER_DESC="Debian $(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)" TIMEOUT=1500 \
    nice -n 10 "$here/nested/run-guest.sh" "$WORK/out" guest8 "$SMP" "$RUNS" tcg
# (WORK is the outer one again here)
d=$(ls -d "$WORK"/out/*/ | head -1); d=${d%/}
cp "$d/trace.dat" "$dest/$NAME.dat"
cp "$d/topology.json" "$dest/$NAME.topology.json"
python3 "$here/summarize.py" "$dest/$NAME.dat" '^dbench$' --json "$d/summary.json" | tee "$d/summary.md"
