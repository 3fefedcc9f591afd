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
# A module is rebuilt only when what it is made of changed: its key (<module>.key beside
# it) hashes its sources, the headers, this script and the compiler's version, so a fresh
# checkout (new mtimes, same bytes) reuses build/ and an edit rebuilds.  One build at a
# time per output dir (flock on <dir>/.lock): test workers that need the same build
# wait for the first one's instead of compiling it again beside it.
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
        # -O0: the replay runs each file once, so compiling (3x faster than at -O1
        # with the sanitizers) costs more than running; the checks are the same
        MODE=asan; OUT=build/asan; CC=${CC:-gcc}; OPT=-O0
        SAN="-fsanitize=address,$UB" ;;
    --atheris)
        # -O1: a fuzzer runs the code millions of times
        MODE=atheris; OUT=build/asan-fuzz; CC=clang; OPT=-O1
        SAN="-fsanitize=address,$UB,fuzzer-no-link" ;;
    *) echo "usage: $0 [--asan | --atheris]" >&2; exit 2 ;;
esac
command -v "$CC" >/dev/null || { echo "build_asan: no $CC (scripts/bootstrap.sh installs it)" >&2; exit 3; }
TDSAN=()
if [[ "$($CC --version | head -1)" == *clang* ]]; then
    TDSAN=(-fsanitize=implicit-conversion)
fi
CFLAGS="-g $OPT -fno-omit-frame-pointer -fno-sanitize-recover=all -std=gnu11 -Wall -Wno-unused-parameter -fPIC"

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
if command -v flock >/dev/null; then
    exec 9>"$OUT/.lock"
    flock 9
fi
CCVERSION=$($CC --version | head -1)

build() {   # module, sources..., then -- and link flags
    local mod=$1; shift
    local srcs=() libs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do srcs+=("$1"); shift; done
    [ $# -gt 0 ] && shift && libs=("$@")
    local so=$DEST/$mod$EXT key
    key=$( { cat "${srcs[@]}" $SRC/*.h "$0"; echo "$CCVERSION $CFLAGS $SAN $PYINC ${libs[*]}"; } | sha256sum)
    if [ -f "$so" ] && [ "$(cat "$so.key" 2>/dev/null)" = "$key" ]; then return; fi
    echo "build_asan: $mod ($CC, $SAN)" >&2
    rm -f "$so" "$so.key"
    # each source compiled in a process of its own, all at once (the sanitizers make
    # compiling slow, and a test worker waiting for this build leaves its CPU free),
    # then linked; the link flags that are compiler flags (-I, -fsanitize) go to both
    local cflags=() objdir=$OUT/obj/$mod objs=() pids=() src obj failed=0
    for f in "${libs[@]}"; do [[ $f == -l* || $f == -L* ]] || cflags+=("$f"); done
    rm -rf "$objdir" && mkdir -p "$objdir"
    for src in "${srcs[@]}"; do
        obj=$objdir/$(basename "$src" .c).o
        objs+=("$obj")
        # shellcheck disable=SC2086
        $CC $CFLAGS $SAN -I"$PYINC" -I$SRC "${cflags[@]}" -c "$src" -o "$obj" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    [ $failed = 0 ] || return 1
    # shellcheck disable=SC2086
    $CC $CFLAGS $SAN -shared "${objs[@]}" -o "$so.tmp" "${libs[@]}" || return 1
    mv "$so.tmp" "$so"
    echo "$key" > "$so.key"
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
