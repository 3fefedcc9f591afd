#!/bin/bash
# record-guest16.sh -- the 16-CPU, 2-LLC guest sample recorded by `trace-cmd record`
# itself (guest16-2llc-tcrecord-dbench.dat): a Debian linux-image kernel booted
# under qemu TCG with -smp 16,sockets=2,cores=8 (two sockets, i.e. two LLCs of 8
# CPUs), dbench 2 clients for 20 s on XFS on a virtio disk, recorded inside the guest with
# `trace-cmd record -e sched -e workqueue -- ...` (run kind tcrecord: of
# nested/guest-init.sh), copied out.  Unlike the other samples, the file is
# written by trace-cmd record's own recorders and file writer (not by
# tracefs + `trace-cmd extract` / `restore`).
#
# usage: record-guest16.sh DEST [KERNEL_DEB]
# needs: apt-get install -y --no-install-recommends qemu-system-x86 busybox-static
#        (plus dbench, xfsprogs, trace-cmd, fio installed here: copied into the initramfs)
# KERNEL_DEB: a Debian linux-image-*.deb (default: downloaded with
#             `apt-get download linux-image-6.1.0-50-amd64`); with KROOT set, it
#             only names the package in meta.txt
# Environment: WORK (default /root/guest16), KROOT (unpacked kernel package,
#              default: unpack KERNEL_DEB into $WORK/k), SMP (16,sockets=2,cores=8),
#              RUNS (tcrecord:2:20), BUF_KB (per-CPU ring buffer, default 20000: ample;
#              in the recorded sample the recorders had read little or nothing when
#              the command ended, so the buffer must hold the whole run), NAME,
#              TIMEOUT (s, 2400)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=$1; deb=${2:-}
WORK=${WORK:-/root/guest16}; SMP=${SMP:-16,sockets=2,cores=8}; RUNS=${RUNS:-tcrecord:2:20}
NAME=${NAME:-guest16-2llc-tcrecord-dbench}; BUF_KB=${BUF_KB:-20000}
mkdir -p "$WORK" "$dest"; dest=$(cd "$dest" && pwd); cd "$WORK"
if [ -z "${KROOT:-}" ]; then
    if [ -z "$deb" ]; then apt-get download linux-image-6.1.0-50-amd64; deb=$(ls -t "$WORK"/linux-image-*.deb | head -1); fi
    KROOT=$WORK/k; rm -rf "$KROOT"; dpkg -x "$deb" "$KROOT"
fi
if [ -n "$deb" ]; then kdesc="Debian $(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)"
else kdesc="Debian linux-image-$(ls "$KROOT/lib/modules" | head -1) (unpacked in $KROOT)"; fi
kernel=$(ls "$KROOT"/boot/vmlinuz-* | head -1)
"$here/nested/build-initramfs.sh" "$KROOT" "$WORK/initrd.cpio.gz"
rm -rf "$WORK/out"; mkdir -p "$WORK/out" "$WORK/work"
t0=$(date +%s)
initrd=$WORK/initrd.cpio.gz; vmwork=$WORK/work
WORK=$vmwork KERNEL=$kernel INITRD=$initrd BUF_KB=$BUF_KB \
    KVER_DESC="$kdesc" TIMEOUT=${TIMEOUT:-2400} \
    nice -n 10 "$here/nested/run-guest.sh" "$WORK/out" guest16 "$SMP" "$RUNS" tcg
# (WORK is the outer one again here)
echo "guest wall time: $(( $(date +%s) - t0 )) s"
d=$(ls -d "$WORK"/out/*/ | head -1); d=${d%/}
cp "$d/trace.dat" "$dest/$NAME.dat"
cp "$d/topology.json" "$dest/$NAME.topology.json"
python3 "$here/summarize.py" "$dest/$NAME.dat" '^dbench$' --json "$d/summary.json" | tee "$d/summary.md"
