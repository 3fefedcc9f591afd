#!/bin/bash
# sample_traces/series/recorded-unchanged/: an unchanged series recorded as a CI records
# builds, one after another: five "builds" of the same machine and command, three runs
# each, back to back (b1's three runs, then b2's, ...): `perf bench sched messaging -g 1
# -l 200`, no other load. What `schedwake series` must find nothing in (docs/series.md).
# Usage (root): ./record-series-unchanged.sh OUTDIR
set -eu
OUT=${1:?usage: $0 OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
SW=${SCHEDWAKE:-$HERE/../../.venv/bin/schedwake}
for b in 1 2 3 4 5; do
  mkdir -p "$OUT/b$b"
  for r in 1 2 3; do
    n="b$b/msg-r$r"
    echo "$n $(date -u +%FT%TZ)" >> "$OUT/recorded-at.txt"
    "$SW" record -o "$OUT/$n.dat" --no-kallsyms -q -- perf bench sched messaging -g 1 -l 200
  done
done
