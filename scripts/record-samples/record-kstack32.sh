#!/bin/bash
# record-kstack32.sh -- sample_traces/kstack-6.1-32cpu/: the 32-CPU, 4-LLC before/after
# set. The kstack toggle kernel (kernel/build-kernel.sh: Debian's linux-source-6.1 with
# a boot switch for the select_idle_sibling() kthread-stacking clause) under qemu TCG with
# -smp 32,sockets=4,cores=8 (4 LLCs of 8 CPUs), dbench 2 and 8 clients for 30 s per boot,
# the clause on (sis_kthread_stack=1) and off (=0), 2 iterations alternating the mode
# order. A boot that leaves no results (rare TCG boot failures) is tried again, twice.
#
# usage: record-kstack32.sh DEST [WORKDIR]
#   DEST     e.g. ../../sample_traces/kstack-6.1-32cpu
#   WORKDIR  scratch (default /root/kstack32): kernel build (about 45 min on 2 CPUs),
#            initramfs, runs (about 4 min per boot)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=$(mkdir -p "$1" && cd "$1" && pwd); work=${2:-/root/kstack32}
mkdir -p "$work"
[ -f "$work/kb/out/bzImage" ] || nice -n 10 "$here/kernel/build-kernel.sh" "$work/kb" 2
[ -f "$work/initrd-none.cpio.gz" ] || "$here/nested/build-initramfs.sh" none "$work/initrd-none.cpio.gz"
srcver=$(dpkg-query -W -f '${Version}' linux-source-6.1 2>/dev/null || echo '?')
for it in 1 2; do
    if [ "$it" = 2 ]; then order="off on"; else order="on off"; fi
    for mode in $order; do
        v=1; [ "$mode" = off ] && v=0
        for try in 1 2 3; do
            echo "=== $(date +%T) mode=$mode it=$it try=$try"
            if WORK=$work/vm BUF_KB=30000 TIMEOUT=3000 KERNEL=$work/kb/out/bzImage \
               INITRD=$work/initrd-none.cpio.gz LAB_SUFFIX="-i$it" EXTRA_APPEND="sis_kthread_stack=$v" \
               KVER_DESC="6.1 built from Debian linux-source-6.1 $srcver + sis-kthread-stack-toggle.patch, booted with sis_kthread_stack=$v" \
               "$here/nested/run-guest.sh" "$work/traces" "k61sis-smp32-4llc-kstack-$mode" \
                   "32,sockets=4,cores=8" dbench:2:30,dbench:8:30 tcg 6G; then
                break
            fi
        done
    done
done
for d in "$work"/traces/k61sis-smp32-4llc-kstack-*; do
    n=$(basename "$d" | sed -E 's/k61sis-smp32-4llc-kstack-(on|off)-dbench-c([0-9]+)-i([0-9])/k61-32cpu-dbench-c\2-kstack-\1-i\3/')
    cp "$d/trace.dat" "$dest/$n.dat"
    cp "$d/topology.json" "$dest/$n.topology.json"
done
