#!/bin/bash
# record-kstack.sh -- the real before/after pair of sample_traces/kstack-6.1/: Debian's
# linux-source-6.1 with a boot switch for the "per-cpu kthread waking a task stacks it on
# the same CPU" clause of select_idle_sibling() (kernel/sis-kthread-stack-toggle.patch),
# booted under qemu TCG with 8 CPUs, dbench on XFS with the clause on (the fix, upstream
# since 5.6) and off (before the fix), 3 iterations each.
#
# usage: record-kstack.sh DEST [WORKDIR]
#   DEST     e.g. ../../sample_traces/kstack-6.1
#   WORKDIR  scratch (default /root/kstack; about 4 GB): kernel build, initramfs, all runs
# Takes about 30 min to build the kernel and 2 min per guest boot on a 2-CPU host.
# The series records dbench 1, 2 and 4 clients per boot; DEST gets the 2-client runs as
# k61-dbench-c2-kstack-{on,off}-i{1,2,3}.dat + .topology.json (the rest stay in WORKDIR),
# and one 2-client run per mode on two LLCs (-smp 8,sockets=2,cores=4) as
# k61-2llc-dbench-c2-kstack-{on,off}.dat.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=$1; work=${2:-/root/kstack}
mkdir -p "$work" "$dest"
nice -n 10 "$here/kernel/build-kernel.sh" "$work/kb" 2
nice -n 5 "$here/nested/build-initramfs.sh" none "$work/initrd-none.cpio.gz"
WORK=$work/vm nice -n 5 "$here/kernel/run-kstack-series.sh" "$work/traces" \
    "$work/kb/out/bzImage" "$work/initrd-none.cpio.gz" all
for mode in on off; do
    for i in 1 2 3; do
        d=$work/traces/k61sis-smp8-kstack-$mode-dbench-c2-i$i
        cp "$d/trace.dat" "$dest/k61-dbench-c2-kstack-$mode-i$i.dat"
        cp "$d/topology.json" "$dest/k61-dbench-c2-kstack-$mode-i$i.topology.json"
    done
done
for mode in on off; do
    d=$work/traces/k61sis-smp8-2llc-kstack-$mode-dbench-c2-i1
    cp "$d/trace.dat" "$dest/k61-2llc-dbench-c2-kstack-$mode.dat"
    cp "$d/topology.json" "$dest/k61-2llc-dbench-c2-kstack-$mode.topology.json"
done
