#!/bin/bash
# record-profiles.sh -- real profiles, several runs a side, for `schedwake profile --side`
# (schedwake/profile_compare.py, tests/test_profile_compare.py, notebooks/07-...).
#
# usage: record-profiles.sh [DEST]     (as root; DEST defaults to sample_traces/profiles/)
# Records RUNS (3) runs of each side, interleaved (base, aa, seccomp, base, aa, ...) so a
# slow drift of the machine falls on every side alike:
#   base/runN.perf.data     perf bench sched messaging -g 4 -l LOOPS
#   aa/runN.perf.data       the same again: an A/A pair with base, where nothing may be starred
#   seccomp/runN.perf.data  the same behind a seccomp filter of RULES (300) argument checks
#                           (seccomp-exec.py): the known cause; its path (__secure_computing,
#                           __seccomp_filter, the filter's JIT code) must be starred
# Each: perf record -z -g -F 999 (the command's own threads, cpu-clock on a VM), with a
# run.txt of the benchmark's output beside it. Work per run: 4 groups x 20 senders x 20
# receivers x LOOPS (600) messages = 960,000 messages (--work 960000). The kernel's
# symbols, which perf writes into no perf.data, are saved as KALLSYMS_DIR/RELEASE.gz
# (default DEST/../kallsyms: sample_traces/kallsyms/), gzip'd: give them with --kallsyms.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-$here/../../sample_traces/profiles}
runs=${RUNS:-3}
loops=${LOOPS:-600}
rules=${RULES:-300}
command -v perf > /dev/null || { echo "record-profiles.sh: perf is not installed" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "record-profiles.sh: run as root (kernel callchains)" >&2; exit 1; }
bench=(perf bench sched messaging -g 4 -l "$loops")
for side in base aa seccomp; do mkdir -p "$dest/$side"; done
for i in $(seq 1 "$runs"); do
    for side in base aa seccomp; do
        cmd=("${bench[@]}")
        [ "$side" = seccomp ] && cmd=(python3 "$here/seccomp-exec.py" "$rules" -- "${bench[@]}")
        out=$dest/$side/run$i.perf.data
        perf record -q -z -g -F 999 -o "$out" -- "${cmd[@]}" > "$dest/$side/run$i.txt" 2>&1
        echo "$side run $i: $(grep 'Total time' "$dest/$side/run$i.txt")"
    done
done
ksdir=${KALLSYMS_DIR:-$dest/../kallsyms}
mkdir -p "$ksdir" && gzip -9n < /proc/kallsyms > "$ksdir/$(uname -r).gz"
{
    echo "recorded by scripts/record-samples/record-profiles.sh on $(date -u +%F)"
    echo "kernel: $(uname -r); perf: $(perf --version); CPUs: $(nproc)"
    echo "workload: ${bench[*]} (work per run: $((4 * 20 * 20 * loops)) messages)"
    echo "seccomp side: seccomp-exec.py $rules -- (the same command)"
    echo "kernel symbols: ../kallsyms/$(uname -r).gz (/proc/kallsyms at the recording, gzip'd)"
} > "$dest/README.txt"
