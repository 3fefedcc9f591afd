#!/bin/bash
# record-speed.sh -- sample_traces/speed/: the slow-machine half of the detectors' speed
# check. Debian's 6.12 (bookworm-backports) and 6.1 kernels booted under qemu TCG with 4
# CPUs (20-50x slower than the host), one boot each running fio pinned to CPU 1 in a
# cgroup v2 child with cpu.weight=1000 and in the root cgroup, then dbench 1, 2 and 4
# clients, 10 s each (nested/guest-init.sh).
#
# usage: record-speed.sh DEST [WORKDIR]
#   DEST     e.g. ../../sample_traces/speed
#   WORKDIR  scratch (default /root/speed)
# needs: qemu-system-x86 busybox-static dbench fio xfsprogs trace-cmd (apt-get install)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=$(mkdir -p "$1" && cd "$1" && pwd); work=${2:-/root/speed}
mkdir -p "$work"; cd "$work"
runs=fio:cgroup:10,fio:root:10,dbench:1:10,dbench:2:10,dbench:4:10
# the 6.12 kernel comes from bookworm-backports: fetch its package by hand
if ! ls linux-image-6.12.*-amd64-unsigned_*.deb >/dev/null 2>&1; then
    echo "deb http://deb.debian.org/debian bookworm-backports main" > /etc/apt/sources.list.d/speed-bpo.list
    apt-get update -qq
    apt-get download "$(apt-cache search --names-only '^linux-image-6\.12\..*-amd64-unsigned$' | sort -V | tail -1 | cut -d' ' -f1)"
    rm /etc/apt/sources.list.d/speed-bpo.list; apt-get update -qq
fi
ls linux-image-6.1.0-50-amd64_*.deb >/dev/null 2>&1 || apt-get download linux-image-6.1.0-50-amd64
for tag in g612 g61; do
    if [ $tag = g612 ]; then deb=$(ls linux-image-6.12.*-amd64-unsigned_*.deb | tail -1)
    else deb=$(ls linux-image-6.1.0-50-amd64_*.deb | tail -1); fi
    rm -rf "$work/$tag"; dpkg -x "$deb" "$work/$tag"
    "$here/nested/build-initramfs.sh" "$work/$tag" "$work/$tag.cpio.gz"
    WORK=$work/vm-$tag KERNEL=$(ls "$work/$tag"/boot/vmlinuz-*) INITRD=$work/$tag.cpio.gz \
        KVER_DESC="Debian $(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)" TIMEOUT=1800 \
        "$here/nested/run-guest.sh" "$work/traces" $tag-smp4 4 $runs tcg
done
for d in "$work"/traces/g6*-smp4-*; do
    n=$(basename "$d")
    cp "$d/trace.dat" "$dest/$n.dat"
    cp "$d/topology.json" "$dest/$n.topology.json"
done
