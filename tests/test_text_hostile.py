"""Damaged text traces (tests/data/text_hostile/, made by scripts/make_text_hostile.py
from the real conformance samples): each one is refused in one line naming the file
(TraceError, exit 2), or read with exactly one warning naming the file and what was
skipped, the events that remain counted exactly; never a traceback, a wrong answer
without a word, or memory that grows with a line."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
import time

import pytest

import schedwake
from schedwake import TraceError

from .conftest import ROOT
from .sandbox import Sandbox

HOSTILE = ROOT / "tests" / "data" / "text_hostile"
MANIFEST = json.loads((HOSTILE / "manifest.json").read_text())
SCRIPT = ROOT / "scripts" / "make_text_hostile.py"


def generator():
    spec = importlib.util.spec_from_file_location("make_text_hostile", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load(name: str) -> schedwake.Trace:
    return schedwake.load(HOSTILE / name, input_format=MANIFEST[name]["format"])


def test_corpus_is_what_the_script_makes(tmp_path):
    generator().write(tmp_path)
    made = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    committed = {p.name: p.read_bytes() for p in HOSTILE.iterdir()}
    assert sorted(made) == sorted(committed)
    for name in made:
        assert made[name] == committed[name], f"{name} differs: run {SCRIPT.name} again"


def test_every_kind_of_outcome_is_there():
    outcomes = [e["outcome"] for e in MANIFEST.values()]
    assert {o: outcomes.count(o) for o in ("error", "warning", "ok")} == {
        "error": 21,
        "warning": 13,
        "ok": 9,
    }


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_load(name):
    entry = MANIFEST[name]
    path = HOSTILE / name
    if entry["outcome"] == "error":
        with pytest.raises(TraceError) as err:
            load(name)
        message = str(err.value)
        assert "\n" not in message and message.startswith(f"{path}: ")
        for word in entry["keywords"]:
            assert word in message, message
        return
    trace = load(name)
    assert trace.meta.event_counts == entry["event_counts"]
    assert sum(trace.table(e).num_rows for e in trace.events) == sum(entry["event_counts"].values())
    if entry["outcome"] == "ok":
        assert trace.warnings == []
    else:
        assert len(trace.warnings) == 1, trace.warnings
        for word in entry["keywords"]:
            assert word in trace.warnings[0], trace.warnings[0]
        assert trace.warnings[0] in trace.caveats
    if "cpus" in entry:
        assert trace.meta.cpus == entry["cpus"]
    ts = [t for e in trace.events for t in trace.table(e).column("ts").to_pylist()]
    assert (trace.meta.first_ts_ns, trace.meta.last_ts_ns) == (min(ts), max(ts))
    if "duration_ns" in entry:
        assert max(ts) - min(ts) == entry["duration_ns"]


#: `schedwake analyze` runs on every file read with a warning (its report must show
#: it as a caveat), the header values that used to exhaust memory in the model, and a
#: clean file; `schedwake info` on every file (in one child interpreter, not 60
#: console-script start-ups)
ANALYZED = sorted(
    [n for n, e in MANIFEST.items() if e["outcome"] == "warning"]
    + ["header-cpus-1e11.txt", "report-cpus-1e11.txt", "perf-nrcpus-huge.txt", "clean-perf.txt"]
)
CLI_JOBS = [("info", n) for n in sorted(MANIFEST)] + [("analyze", n) for n in ANALYZED]


@pytest.fixture(scope="module")
def sandbox():
    """The child interpreter the commands run in (tests/sandbox.py: a crash or a hang
    fails the test, not the test process; one child per test process)."""
    box = Sandbox(timeout=60)
    yield box
    box.close()


@pytest.mark.parametrize(("command", "name"), CLI_JOBS)
@pytest.mark.slow
def test_cli(command, name, sandbox):
    entry = MANIFEST[name]
    fmt = entry["format"]
    proc = sandbox.cli(command, HOSTILE / name, *(["--input-format", fmt] if fmt else []))
    stderr = proc.stderr.splitlines()
    assert "Traceback" not in proc.stderr
    if entry["outcome"] == "error":
        assert proc.returncode == 2, proc.stderr
        assert len(stderr) == 1 and stderr[0].startswith(f"schedwake: {HOSTILE / name}: ")
        return
    assert proc.returncode == 0, proc.stderr
    if entry["outcome"] == "ok":
        assert stderr == []
        return
    assert len(stderr) == 1 and stderr[0].startswith(f"schedwake: warning: {HOSTILE / name}: ")
    assert all(word in stderr[0] for word in entry["keywords"])
    warning = stderr[0].split(f"{HOSTILE / name}: ", 1)[1]
    assert warning in proc.stdout  # a caveat of the report too


# ------------------------------------------------------------------- time and memory


def test_repeated_literals_do_not_make_matching_quadratic(tmp_path):
    """Lines that repeat the literals ending a layout's string captures cost about what
    as many garbage lines cost (each capture tries a bounded number of ends; matched
    naively, 100 lines of 32 KB took seconds, a 64 KB line 130 ms)."""
    hostile = tmp_path / "hostile.txt"
    hostile.write_bytes(generator().capture_backtracking(100, 32_000))
    garbage = tmp_path / "garbage.txt"
    garbage.write_bytes(b"# tracer: nop\n" + (b"x" * 32_000 + b"\n") * 100)

    def seconds(path):
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            with pytest.raises(TraceError):
                schedwake.load(path, input_format="ftrace-text")
            best = min(best, time.perf_counter() - start)
        return best

    assert seconds(hostile) < 10 * seconds(garbage) + 0.05


BOMB_CHILD = textwrap.dedent(
    """
    import resource, sys
    sys.path.insert(0, sys.argv[2])
    import make_text_hostile
    make_text_hostile.gzip_bomb(sys.argv[1] + "/warm.txt.gz", 16 << 20)
    make_text_hostile.gzip_bomb(sys.argv[1] + "/bomb.txt.gz", 128 << 20)
    import schedwake
    # a first read of a 16 MiB line, so that what load() imports (some 90 MB) and its
    # first chunk buffers are not counted as the long line's (8 MB, not 90, is left)
    schedwake.load(sys.argv[1] + "/warm.txt.gz")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    trace = schedwake.load(sys.argv[1] + "/bomb.txt.gz")
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(trace.warnings[0])
    print(after - before)
    """
)


@pytest.mark.slow
def test_a_long_line_in_a_small_gzip_is_never_held_whole(tmp_path):
    """A 128 MiB line (about 128 KB of gzip): skipped as it streams by, in chunks;
    the reader used to hold it whole, several times over (4 GB for a 1 GiB line).
    The memory it adds is measured after the imports (a warm-up read), which were
    most of what was measured before: held once, the line alone would exceed the
    limit."""
    proc = subprocess.run(
        [sys.executable, "-c", BOMB_CHILD, str(tmp_path), str(SCRIPT.parent)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "bomb.txt.gz").stat().st_size < 1 << 20
    warning, grown_kb = proc.stdout.splitlines()
    assert "1 of 2 lines" in warning and "longer than 64 KiB" in warning
    assert int(grown_kb) < 80 << 10  # KB: a few 8 MiB chunks, never the line
