"""perf.data semantics and decompression limits (issue #37): tests/data/perf_hostile/,
written by scripts/make_perf_hostile.py from the committed perf.data fuzz seeds; its
manifest.json says what each file must give.

* ``error``: ``schedwake.load`` raises TraceError; ``info`` and ``analyze`` exit 2 with
  one stderr line naming the file and the damage (a sample whose payload is another
  event than its id says, a COMPRESSED record beyond perf's buffer, a bomb);
* ``warning``: loads with exactly one warning, ``info`` and ``analyze`` exit 0 with that
  one line on stderr, and the duration stays the recording's: what was left out (a
  tracepoint without a format, a damaged payload) stretches nothing.

Every file goes through the API and the CLI's ``info`` and ``analyze`` in one child
process (click's runner), and two through the real console script.
"""

from __future__ import annotations

import importlib.util
import json
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "perf_hostile"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
FILES = MANIFEST["files"]
SEED = ROOT / "fuzz" / "corpus" / "fuzz_load_perfdata" / "seed-perf-file.data"

DRIVER = r"""
import json, sys
from click.testing import CliRunner
import schedwake
from schedwake.cli import cli

runner = CliRunner()
for path in sys.argv[1:]:
    out = {"path": path}
    try:
        t = schedwake.load(path)
    except schedwake.TraceError as exc:
        out["load_error"] = str(exc)
    else:
        out["warnings"] = list(t.meta.warnings)
        out["duration_s"] = t.duration_ns / 1e9
        schedwake.analyze(t)
    for command in ("info", "analyze"):
        r = runner.invoke(cli, [command, path], prog_name="schedwake")
        out[command] = {"code": r.exit_code, "stderr": r.stderr.splitlines()}
    print(json.dumps(out), flush=True)
"""


def _generator():
    spec = importlib.util.spec_from_file_location(
        "make_perf_hostile", ROOT / "scripts" / "make_perf_hostile.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_corpus_is_a_fresh_generation(tmp_path):
    manifest = _generator().make_corpus(tmp_path)
    assert manifest == MANIFEST, "manifest.json differs: run scripts/make_perf_hostile.py"
    assert sorted(p.name for p in CORPUS.iterdir()) == sorted(p.name for p in tmp_path.iterdir())
    for name in FILES:
        assert (tmp_path / name).read_bytes() == (CORPUS / name).read_bytes(), name


def test_corpus_is_small():
    assert sum(p.stat().st_size for p in CORPUS.iterdir()) < 250_000


@pytest.fixture(scope="module")
def results() -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, *(str(CORPUS / n) for n in sorted(FILES))],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {Path(r["path"]).name: r for r in map(json.loads, proc.stdout.splitlines())}


def _says_all(line: str, patterns, what: str) -> None:
    for rx in patterns:
        assert re.search(rx, line), f"{what}: {line!r} does not say {rx!r}"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FILES))
def test_each_file(name, results):
    entry, got = FILES[name], results[name]
    if entry["outcome"] == "error":
        assert "load_error" in got, f"{name} loaded: {got}"
        assert str(CORPUS / name) in got["load_error"] and "\n" not in got["load_error"]
        _says_all(got["load_error"], entry["mentions"], name)
        for command in ("info", "analyze"):
            run = got[command]
            assert run["code"] == 2 and len(run["stderr"]) == 1, (command, run)
            assert run["stderr"][0] == f"schedwake: {got['load_error']}", run
        return
    assert "load_error" not in got, got["load_error"]
    assert len(got["warnings"]) == 1, got["warnings"]
    _says_all(got["warnings"][0], entry["mentions"], name)
    assert got["duration_s"] == pytest.approx(entry["duration_s"], abs=1e-6)
    for command in ("info", "analyze"):
        run = got[command]
        assert run["code"] == 0 and len(run["stderr"]) == 1, (command, run)
        assert run["stderr"][0].startswith(f"schedwake: warning: {CORPUS / name}: "), run


@pytest.mark.slow
@pytest.mark.parametrize("name", ["perf-ids-swapped.data", "perf-z-ratio-bomb.data"])
def test_real_console_script(name):
    """The installed entry point: one line, exit 2, quickly (the bomb is refused while
    it is decompressed, not after)."""
    exe = Path(sys.executable).with_name("schedwake")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "schedwake.cli"]
    proc = subprocess.run(
        cmd + ["analyze", str(CORPUS / name)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert str(CORPUS / name) in proc.stderr and "Traceback" not in proc.stderr


def _sample_times(data: bytes) -> list[tuple[int, int]]:
    """(file offset of the time, time) of the seed's SAMPLE records."""
    d_off, d_size = struct.unpack_from("<QQ", data, 40)
    pos, out = d_off, []
    while pos < d_off + d_size:
        kind, _, size = struct.unpack_from("<IHH", data, pos)
        if kind == 9:
            out.append((pos + 32, struct.unpack_from("<Q", data, pos + 32)[0]))
        pos += size
    return out


@pytest.mark.slow
def test_an_outlier_of_an_event_not_loaded(tmp_path):
    """A sched_waking sample an hour after the others, the trace loaded without
    sched_waking (as analyze loads the events its model needs): the outlier is found
    among every event's samples, left out of the duration and named, not hidden by
    the tables loaded."""
    import schedwake

    data = bytearray(SEED.read_bytes())
    times = _sample_times(data)
    struct.pack_into("<Q", data, times[5][0], max(t for _, t in times) + 3600 * 10**9)
    path = tmp_path / "outlier.data"
    path.write_bytes(data)
    t = schedwake.load(path, events=["sched_switch"])
    assert t.duration_ns / 1e9 == pytest.approx(0.022965, abs=1e-6)
    assert any("1 sample (1 sched_waking) far after" in w for w in t.meta.warnings)
    assert t.meta.event_counts["sched_waking"] == 8
