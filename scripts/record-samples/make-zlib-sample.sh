#!/bin/sh
# zlib/lost-events-zlib.dat: sample_traces/lost-events.dat rewritten by trace-cmd itself with
# zlib compression, so the reader's zlib path is tested on a file trace-cmd wrote.
# Debian's trace-cmd 3.1.6 is built without zlib (`trace-cmd list -c` shows zstd only),
# so this builds the same version from source, where the Makefile links zlib when
# zlib1g-dev is installed (it needs libtraceevent-dev, libtracefs-dev, zlib1g-dev).
#   TRACE_CMD_SRC=path/to/trace-cmd-checkout ./make-zlib-sample.sh
set -eu
: "${TRACE_CMD_SRC:?a trace-cmd source tree (git clone https://git.kernel.org/pub/scm/utils/trace-cmd/trace-cmd.git)}"
here=$(cd "$(dirname "$0")" && pwd)
samples="$here/../../sample_traces"
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
git -C "$TRACE_CMD_SRC" archive trace-cmd-v3.1.6 | tar -x -C "$build"
make -C "$build" -j"$(nproc)" trace-cmd >/dev/null
tc="$build/tracecmd/trace-cmd"
mkdir -p "$samples/zlib"
"$tc" list -c | grep -q zlib || { echo "trace-cmd was built without zlib" >&2; exit 1; }
"$tc" convert -i "$samples/lost-events.dat" -o "$samples/zlib/lost-events-zlib.dat" --compression zlib
cp "$samples/lost-events.topology.json" "$samples/zlib/lost-events-zlib.topology.json"
"$tc" report -i "$samples/zlib/lost-events-zlib.dat" 2>/dev/null | grep -c '^ *.*\[[0-9]*\]'
