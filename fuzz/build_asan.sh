#!/usr/bin/env bash
# Build schedwake's compiled readers with AddressSanitizer + UndefinedBehaviorSanitizer,
# apart from the normal build (which stays untouched).
#
#   fuzz/build_asan.sh            -> build/asan/       ($CC, default gcc): for fuzz/replay.py
#   fuzz/build_asan.sh --atheris  -> build/asan-fuzz/  (clang, + -fsanitize=fuzzer-no-link):
#                                    for the atheris harnesses, whose libFuzzer then sees
#                                    the C branches (run with atheris's asan_with_fuzzer.so)
#
# Modules: _textscan (text scanner) and, when its sources exist, _tdread (the trace.dat
# reader: _tdread.c + _td_*.c) and _tracedat (the libtracecmd binding that loads
# trace.dat until _tdread takes over).  _libtracecmd, the conformance oracle run in a
# child process, is not built.  Output: <dir>/schedwake/ingest/<module><EXT_SUFFIX>, and
# <dir>/runtime: the sanitizer runtime to LD_PRELOAD into python.
# A module is rebuilt only when a source, a header or this script is newer than it.
# _textscan must build; a trace.dat module that does not compile (work in progress) is
# left out with a warning and named in <dir>/failed, unless STRICT=1.
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=${1:-asan}
PY=${PYTHON:-.venv/bin/python}
# -fsanitize=undefined includes signed-integer-overflow (named: the class the campaign
# must catch in the decoder's arithmetic on a file's numbers) and, with clang, the
# trace.dat decoder also gets the implicit conversions that change a value
# (truncation, sign change: quiet on the corpora); gcc has no such check.
UB="undefined,signed-integer-overflow,float-divide-by-zero"
case "$MODE" in
    asan|--asan)
        MODE=asan; OUT=build/asan; CC=${CC:-gcc}
        SAN="-fsanitize=address,$UB" ;;
    --atheris)
        MODE=atheris; OUT=build/asan-fuzz; CC=clang
        SAN="-fsanitize=address,$UB,fuzzer-no-link" ;;
    *) echo "usage: $0 [--asan | --atheris]" >&2; exit 2 ;;
esac
command -v "$CC" >/dev/null || { echo "build_asan: no $CC (scripts/bootstrap.sh installs it)" >&2; exit 3; }
TDSAN=()
if [[ "$($CC --version | head -1)" == *clang* ]]; then
    TDSAN=(-fsanitize=implicit-conversion)
fi
CFLAGS="-g -O1 -fno-omit-frame-pointer -fno-sanitize-recover=all -std=gnu11 -Wall -Wno-unused-parameter -fPIC"

# the runtime python must preload: the compiler's own, or atheris's ASan+libFuzzer
if [ "$MODE" = atheris ]; then
    runtime=$("$PY" -c 'import atheris, os; print(os.path.join(atheris.path(), "asan_with_fuzzer.so"))')
elif [[ "$($CC --version | head -1)" == *clang* ]]; then
    SAN="$SAN -shared-libasan"
    runtime=$($CC -print-file-name=libclang_rt.asan-x86_64.so)
else
    runtime=$($CC -print-file-name=libasan.so)
fi
[ -f "$runtime" ] || { echo "build_asan: no sanitizer runtime ($runtime)" >&2; exit 3; }
runtime=$(readlink -f "$runtime")

read -r PYINC EXT < <("$PY" -c 'import sysconfig as s; print(s.get_paths()["include"], s.get_config_var("EXT_SUFFIX"))')
SRC=schedwake/ingest
DEST=$OUT/schedwake/ingest
mkdir -p "$DEST"

build() {   # module, sources..., then -- and link flags
    local mod=$1; shift
    local srcs=() libs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do srcs+=("$1"); shift; done
    [ $# -gt 0 ] && shift && libs=("$@")
    local so=$DEST/$mod$EXT fresh=1
    for f in "${srcs[@]}" $SRC/*.h "$0"; do
        [ "$so" -nt "$f" ] || fresh=0
    done
    if [ $fresh = 1 ]; then return; fi
    echo "build_asan: $mod ($CC, $SAN)" >&2
    rm -f "$so"
    # shellcheck disable=SC2086
    $CC $CFLAGS $SAN -I"$PYINC" -I$SRC -shared "${srcs[@]}" -o "$so.tmp" "${libs[@]}" || return 1
    mv "$so.tmp" "$so"
}

optional() {    # build a module that may be work in progress
    local mod=$1
    if ! build "$@"; then
        rm -f "$DEST/$mod$EXT" "$DEST/$mod$EXT.tmp"
        echo "build_asan: WARNING: $mod does not build: left out of $OUT" >&2
        echo "$mod" >> "$OUT/failed"
        [ "${STRICT:-0}" = 1 ] && exit 1
    fi
    return 0
}

rm -f "$OUT/failed"
build _textscan $SRC/_textscan.c
if [ -f $SRC/_tdread.c ] && [ -f $SRC/_td_merge.c ]; then
    # shellcheck disable=SC2046
    optional _tdread $SRC/_tdread.c $(ls $SRC/_td_*.c) -- -lzstd -lz -lpthread "${TDSAN[@]}"
else
    rm -f "$DEST/_tdread$EXT"
fi
if [ -f $SRC/_tracedat.c ]; then
    # shellcheck disable=SC2046
    optional _tracedat $SRC/_tracedat.c -- $(pkg-config --cflags --libs libtracecmd libtraceevent)
else
    rm -f "$DEST/_tracedat$EXT"
fi
echo "$runtime" > "$OUT/runtime"
