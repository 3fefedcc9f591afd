"""Hostile input (docs/reliability.md): the fuzz corpora and the pinned findings replay
cleanly through the normal build and through the ASan + UBSan build, and a short run
of every fuzz harness finds nothing.

Outcomes allowed for any file: a Trace, or a TraceError of one line naming the file.
An open finding of tests/data/fuzz_regressions/known.json must fail exactly as pinned
(when it stops doing so, the test says to mark it fixed).
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from .conftest import computed_once

ROOT = Path(__file__).resolve().parent.parent
FUZZ = ROOT / "fuzz"
sys.path.insert(0, str(FUZZ))
import _common  # noqa: E402
import replay  # noqa: E402
import run as fuzz_run  # noqa: E402

#: The short runs: each harness starts from FUZZ_SEEDS inputs of its corpora (test_replay
#: and test_asan_replay execute the corpora whole), then executes at least FUZZ_MUTATIONS
#: mutated inputs (a fixed amount of work, a few seconds each; `make fuzz` is the
#: campaign). FUZZ_SECONDS only stops a run that would hang the suite.
FUZZ_SEEDS = int(os.environ.get("SCHEDWAKE_FUZZ_TEST_SEEDS", "40"))
FUZZ_MUTATIONS = int(os.environ.get("SCHEDWAKE_FUZZ_TEST_MUTATIONS", "300"))
FUZZ_SECONDS = int(os.environ.get("SCHEDWAKE_FUZZ_TEST_SECONDS", "300"))
KNOWN = _common.known_findings()
REPLAY_FILES = _common.regression_files() + _common.corpus_files() + _common.hostile_files()


def rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


# ------------------------------------------------------------- the corpora themselves


def test_corpora_are_there_and_small():
    for name in fuzz_run.HARNESSES:
        files = list((FUZZ / "corpus" / name).glob("*"))
        assert any(f.name.startswith("seed-") for f in files), f"no seeds for {name}"
    total = sum(p.stat().st_size for p in _common.corpus_files() + _common.regression_files())
    assert total < 5 << 20, f"fuzz corpora and regressions hold {total} bytes (keep < 5 MB)"


def test_every_regression_is_documented():
    files = {p.name for p in _common.regression_files()}
    assert set(KNOWN) <= files, f"known.json names missing files: {set(KNOWN) - files}"
    readme = (_common.REGRESSIONS / "README.md").read_text()
    for name in files:
        assert name in readme, f"{name}: say in fuzz_regressions/README.md what it triggered"
    for name, entry in KNOWN.items():
        assert entry["status"] in ("open", "fixed") and entry["note"], name
        assert re.fullmatch(r"\w+@[\w/.]+:\w+", entry["signature"]), entry["signature"]


@pytest.mark.slow
def test_replay():
    """Every corpus and regression file through the normal build, in a child process
    (a file that kills the interpreter kills the child, and is named)."""
    proc = subprocess.run(
        [sys.executable, str(FUZZ / "replay.py"), "--normal"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    failed = [ln for ln in proc.stdout.splitlines() if ln.startswith("replay: FAIL")]
    assert proc.returncode == 0 and not failed, "\n".join(failed) or proc.stdout[-5000:]
    assert f"replay: {len(REPLAY_FILES)} files, 0 failed" in proc.stdout, proc.stdout[-3000:]


SEEDS = sorted(p for p in _common.corpus_files() if p.name.startswith("seed-"))


@pytest.mark.parametrize("path", SEEDS, ids=rel)
def test_seeds_load(path):
    """The seeds are real traces cut small (zlib ones too): each one must load, with events;
    and load() runs no code of schedwake's that the harnesses leave uninstrumented (the
    modules outside fuzz/_common.py's LOAD_REACHES)."""
    import schedwake  # noqa: F401  (imported first: what load() runs, not what an import does)

    ran = set()

    def note(frame, event, arg):
        if event == "call":
            ran.add(frame.f_globals.get("__name__", ""))

    sys.setprofile(note)
    try:
        trace = _common.load_path(path)
    finally:
        sys.setprofile(None)
    assert trace is not None, f"{rel(path)} does not load"
    assert sum(trace.meta.event_counts.values()) > 0
    outside = {m for m in ran if m.split(".")[0] == "schedwake" and not _common.reached_by_load(m)}
    assert not outside, f"load() ran {sorted(outside)}: add them to _common.LOAD_REACHES"
    assert _common.reached_by_load("schedwake.ingest.text")  # (the check can see one)


def test_tracedat_model_round_trip():
    """The mutator's writer gives back the seed it parsed (v6), byte for byte."""
    import tracedat_model

    for p in (FUZZ / "corpus" / "fuzz_load_tracedat").glob("seed-*-v6.dat"):
        data = p.read_bytes()
        assert tracedat_model.TraceDat(data).write(6) == data, p.name


MUTANTS = r"""
import collections, glob, json, os, re, sys, tempfile
sys.path.insert(0, sys.argv[1])
import tracedat_model
import schedwake

seed = open(sys.argv[2], "rb").read()
said = collections.Counter()
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "m.dat")
    for i in range(int(sys.argv[3])):
        out = tracedat_model.mutate(seed, 1 << 20, 2 * i + 1)
        open(path, "wb").write(out)
        try:
            schedwake.load(path)
        except schedwake.TraceError as exc:
            said[re.sub(r"\d+", "N", str(exc).split(": ", 1)[-1])[:70]] += 1
print(json.dumps(said))
"""


@pytest.mark.slow
def test_tracedat_mutator_reaches_options_and_formats():
    """The structure-aware mutator's option and event-format families get past the
    framing to the checks they aim at (issue 23): in a few hundred mutants of a seed,
    the decoder names time offsets out of range, CPU tables against CPU counts,
    options twice or of the wrong size, and event formats of one name. (The mutants
    are the same on every run, seeds 1, 3, 5, ...: the last family is reached by the
    191st; 400 keep a margin for changes to the mutator.)"""
    seed = FUZZ / "corpus" / "fuzz_load_tracedat" / "seed-idle-sleep-v6.dat"
    proc = subprocess.run(
        [sys.executable, "-c", MUTANTS, str(FUZZ), str(seed), "400"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = " | ".join(json.loads(proc.stdout))
    for rx in (
        r"(OFFSET|DATE) option|outside N to N\^N",
        r"CPUCOUNT option",
        r"BUFFER option|has data for CPU|no CPU's data holds",
        r"a second [A-Z_]+ option|two BUFFER options",
        r"two event formats named|given to both",
        r"CPUSTAT",
    ):
        assert re.search(rx, said), f"no mutant reached {rx!r}; the decoder said: {said}"


@pytest.mark.slow
def test_perf_mutator_reaches_the_semantic_checks(tmp_path):
    """tdcore_fuzz's perf.data mutator (issue #37) gets past the framing to the checks
    each family aims at: times beyond ten years, ids against payloads, the COMPRESSED
    feature's mmap_len, compressed streams cut or records duplicated, attributes'
    sizes; MMAP2 names and records duplicated or removed keep files that decode
    (fuzz/perf_mutator_stats.c counts 2,000 mutants of each family and seed)."""
    cc = shutil.which("clang") or shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    exe = tmp_path / "perf_mutator_stats"
    src = ROOT / "schedwake" / "ingest"
    build = subprocess.run(
        [cc, "-O1", f"-I{src}", str(FUZZ / "perf_mutator_stats.c"), *map(str, src.glob("_td_*.c")),
         "-lzstd", "-lz", "-lpthread", "-o", str(exe)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-3000:]
    seeds = sorted((FUZZ / "corpus" / "fuzz_load_perfdata").glob("seed-perf-*.data"))
    proc = subprocess.run([str(exe), *map(str, seeds)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    families: dict[int, list[str]] = {}
    decoded: dict[int, int] = {}
    for line in proc.stdout.splitlines():
        head, said = line.split(" |", 1)
        _, family, made, ok = head.split()
        families.setdefault(int(family), []).append(said)
        decoded[int(family)] = decoded.get(int(family), 0) + int(ok)
        assert int(made) or int(family) in (0, 2, 3, 6), line  # (not in every seed)
    said = {f: " | ".join(v) for f, v in families.items()}
    for family, rx in (
        (0, r"the samples. times run from"),
        (1, r"by its payload, but its event id"),
        (2, r"by its payload, but its event id"),
        (3, r"mmap_len"),
        (6, r"does not decompress|ends inside"),
        (8, r"event attribute says it has"),
    ):
        assert re.search(rx, said[family]), f"family {family} never said {rx!r}: {said[family]}"
    assert all(decoded[f] for f in range(10)), decoded


# ---------------------------------------------------------------- sanitizer replay


def sanitizer_runtime() -> str:
    """The AddressSanitizer runtime of $CC (gcc's libasan, or clang's), the library the
    replay preloads (fuzz/build_asan.sh finds it so)."""
    cc = os.environ.get("CC", "gcc")
    if not shutil.which(cc):
        pytest.skip(f"no C compiler {cc!r} for the sanitizer build")
    name = "libclang_rt.asan-x86_64.so" if "clang" in cc else "libasan.so"
    rt = subprocess.run(
        [cc, f"-print-file-name={name}"], capture_output=True, text=True
    ).stdout.strip()
    if not os.path.isabs(rt) or not os.path.exists(rt):
        pytest.skip(f"the AddressSanitizer runtime {name} of {cc} is not installed")
    return os.path.realpath(rt)


@pytest.fixture(scope="module")
def asan_build():
    """build/asan: made once, then reused while its sources are unchanged (build_asan.sh
    keys each module by their hashes and lets one test worker build it at a time)."""
    sanitizer_runtime()
    replay.build(ROOT / "build" / "asan")
    return ROOT / "build" / "asan"


CANARY = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdlib.h>
static PyObject *poke(PyObject *self, PyObject *arg) {   /* heap overflow for i >= 8 */
    long i = PyLong_AsLong(arg);
    volatile char *p = malloc(8);
    p[i] = 1;
    long v = p[i];
    free((char *)p);
    return PyLong_FromLong(v);
}
static PyObject *add(PyObject *self, PyObject *arg) {    /* signed overflow for i > 0 */
    int i = (int)PyLong_AsLong(arg);
    volatile int big = INT_MAX;
    return PyLong_FromLong(big + i);
}
static PyMethodDef m[] = {{"poke", poke, METH_O, ""}, {"add", add, METH_O, ""}, {0}};
static struct PyModuleDef d = {PyModuleDef_HEAD_INIT, "canary", 0, -1, m};
PyMODINIT_FUNC PyInit_canary(void) { return PyModule_Create(&d); }
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "sanitizer,call,report",
    [
        ("address", "poke", "ERROR: AddressSanitizer: heap-buffer-overflow"),
        ("undefined", "add", "runtime error: signed integer overflow"),
    ],
)
def test_sanitizers_catch_a_canary(tmp_path, sanitizer, call, report):
    """The preload and options of the replay really catch a bad access / UB in a module
    built like the readers (else a clean replay would prove nothing). The canary needs
    the replay's runtime and environment, not the readers' sanitizer build."""
    runtime = sanitizer_runtime()
    ext = sysconfig.get_config_var("EXT_SUFFIX")
    (tmp_path / "canary.c").write_text(CANARY)
    cc = os.environ.get("CC", "gcc")
    flags = [
        "-g",
        "-O1",
        "-fPIC",
        "-shared",
        f"-fsanitize={sanitizer}",
        "-fno-sanitize-recover=all",
    ] + (["-shared-libasan"] if "clang" in cc else [])
    subprocess.run(
        [
            cc,
            *flags,
            f"-I{sysconfig.get_paths()['include']}",
            str(tmp_path / "canary.c"),
            "-o",
            str(tmp_path / f"canary{ext}"),
        ],
        check=True,
    )
    env = replay.sanitizer_env(None, runtime)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import canary; "
        f"print(canary.{call}(int(sys.argv[2])))"
    )
    good = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path), "0"], env=env, capture_output=True, text=True
    )
    assert good.returncode == 0, good.stderr[-3000:]
    bad = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path), "8"], env=env, capture_output=True, text=True
    )
    assert bad.returncode != 0 and report in bad.stderr, bad.stderr[-3000:]


def asan_replay(asan_build: Path) -> tuple[int, str]:
    """fuzz/replay.py over every corpus and regression file through the ASan + UBSan
    build: its status and output, run once per test run for the two tests below (on
    either worker)."""

    def run():
        proc = subprocess.run(
            [
                sys.executable,
                str(FUZZ / "replay.py"),
                "--no-build",
                "--build-dir",
                str(asan_build),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=900,
        )
        return proc.returncode, proc.stdout

    return computed_once(f"fuzz/replay.py --no-build --build-dir {asan_build}", run)


@pytest.mark.slow
def test_asan_replay(asan_build):
    """Every corpus and regression file through the ASan + UBSan build of the readers."""
    for so in (asan_build / "schedwake" / "ingest").glob("*.so"):
        assert b"__asan_report" in so.read_bytes(), f"{so} is not instrumented"
    returncode, out = asan_replay(asan_build)
    assert returncode == 0, out[-8000:]
    assert "sanitizer modules in use:" in out and "_textscan" in out.split("\n")[0], out[:500]
    assert f"replay: {len(REPLAY_FILES)} files, 0 failed" in out, out[-2000:]


@pytest.mark.slow
def test_asan_replay_reads_tracedat_with_tdcore(asan_build):
    """The C decoder's ASan build is part of the replay (and it builds): the replay of
    every file, the corpora's trace.dat files among them, reads trace.dat with it."""
    failed = asan_build / "failed"
    assert not failed.exists() or "_tdread" not in failed.read_text(), (
        "the ASan build of _tdread (_tdread.c + _td_*.c) does not compile"
    )
    ext = sysconfig.get_config_var("EXT_SUFFIX")
    assert (asan_build / "schedwake" / "ingest" / f"_tdread{ext}").exists()
    assert any(p.suffix == ".dat" for p in _common.corpus_files())
    returncode, out = asan_replay(asan_build)
    assert returncode == 0, out[-5000:]
    assert "trace.dat via _tdread" in out, out[:500]


# ------------------------------------------------------------------ short fuzz runs


def fuzz_tools(kind: str) -> None:
    if not shutil.which("clang"):
        pytest.skip("clang is not installed (scripts/bootstrap.sh installs it)")
    if kind.startswith("atheris"):
        try:
            import atheris  # noqa: F401
        except ImportError:
            if platform.system() == "Linux" and platform.machine() == "x86_64":
                pytest.fail("atheris is missing from .venv: run scripts/bootstrap.sh")
            pytest.skip("atheris has no wheel for this platform")


@pytest.mark.slow
@pytest.mark.fuzz
@pytest.mark.parametrize("harness", list(fuzz_run.HARNESSES))
def test_short_fuzz_run_finds_nothing(harness, tmp_path):
    """The harness runs FUZZ_SEEDS inputs of its corpora, then at least FUZZ_MUTATIONS
    mutants of them, and finds nothing. The corpora and the pinned regressions are
    replayed whole through both builds by test_replay and test_asan_replay."""
    fuzz_tools(fuzz_run.HARNESSES[harness]["kind"])
    # libFuzzer reads a corpus in up to two executions per input (INITED counts them)
    runs = 2 * FUZZ_SEEDS + FUZZ_MUTATIONS
    lock_wait = 600
    proc = subprocess.run(
        [
            sys.executable,
            str(FUZZ / "run.py"),
            harness,
            "--runs",
            str(runs),
            "--seconds",
            str(FUZZ_SECONDS),
            "--work",
            str(tmp_path),
            "--lock-wait",
            str(lock_wait),
            "--seeds",
            str(FUZZ_SEEDS),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=lock_wait + FUZZ_SECONDS + 600,
    )
    if proc.returncode == 3:
        pytest.skip(f"a fuzz campaign on this machine kept the fuzzer lock: {proc.stderr[-300:]}")
    lines = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"no result from fuzz/run.py:\n{proc.stderr[-5000:]}"
    result = lines[-1]
    assert not result["findings"] and proc.returncode == 0, (
        f"{harness} found: {result['findings']}\n{proc.stderr[-6000:]}"
    )
    # it really fuzzed: read its seeds, then executed mutants beyond them
    assert result.get("inited_units", 0) >= FUZZ_SEEDS * 0.9, result
    assert result.get("number_of_executed_units", 0) >= runs, result
    assert result["number_of_executed_units"] > result["inited_units"], result


@pytest.mark.slow
def test_tdcore_decodes_every_seed():
    """The libFuzzer binary, told to require success, accepts every trace.dat seed:
    the decoder reads v6, v7, zstd, zlib, missing CPUs and lost events (the seeds)."""
    fuzz_tools("libfuzzer")
    fuzz_run.build("tdcore_fuzz")
    seeds = sorted(str(p) for p in (FUZZ / "corpus" / "tdcore_fuzz").glob("seed-*"))
    proc = subprocess.run(
        [str(fuzz_run.TDCORE_BIN), *seeds],
        capture_output=True,
        text=True,
        env={**os.environ, "TDCORE_FUZZ_REQUIRE_OK": "1"},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-5000:]
    assert proc.stderr.count("Executed ") == len(seeds)
