"""Hostile trace.dat files (tests/data/hostile/, written by scripts/make_hostile.py): each
one is a real sample with one kind of damage, and tests/data/hostile/manifest.json says
what the reader must do with it.

The promise (README): bad input gets one line on stderr naming the file and what is
wrong, exit code 2, never a traceback, a crash or a silently wrong answer; bounded
damage in a still usable file loads, exit 0, with ONE warning line naming the file and
what was skipped (``trace.meta.warnings``). So, per file:

* ``error``: ``schedwake.load`` raises TraceError, one line naming the file and matching
  the manifest's ``error_mentions`` (what is wrong, where); ``schedwake info`` and
  ``schedwake analyze`` exit 2 with exactly one stderr line naming the file (and saying
  the same);
* ``warning``: loads with exactly the original's events minus the manifest's
  ``skipped`` (none when the warning names a damaged part the result does not use), one
  warning matching the manifest's ``warning_mentions``; the commands exit 0 with exactly
  that one stderr line;
* ``ok``: loads with exactly the original's events (and, where the manifest has a
  ``check``, that value in that row), no warning, nothing on stderr.

Everything runs in a child interpreter (tests/sandbox.py: a crash must fail the test,
not kill pytest; one child serves the requests of a test process, a new one after a
crash) with a 60 s timeout (a reader must refuse, never hang), a 4 GiB address-space limit (a
100 KB file needs far less; this keeps a reader that believes a hostile size from
taking the shared machine's memory: it has to fail cleanly instead) and no core dumps.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .sandbox import Sandbox

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "tests" / "data" / "hostile"
MANIFEST = json.loads((HOSTILE / "manifest.json").read_text())
FILES = MANIFEST["files"]
TIMEOUT = 60
MEMORY_LIMIT = 4 << 30
CRASH_CODES = {134, 136, 139}  # SIGABRT, SIGFPE, SIGSEGV as a shell reports them

API = r"""
import json, sys
import schedwake

path, check = sys.argv[1], json.loads(sys.argv[2])
try:
    t = schedwake.load(path)
except schedwake.TraceError as exc:
    print(json.dumps({"error": str(exc)}))
    sys.exit(0)
out = {"counts": t.meta.event_counts, "warnings": t.meta.warnings,
       "rows": {name: t.table(name).num_rows for name in t.events}}
if check:
    tab = t.table(check["table"])
    rows = zip(tab.column("ts").to_pylist(), tab.column("cpu").to_pylist(),
               tab.column(check["column"]).to_pylist())
    values = []
    with_fffd = 0
    for ts, cpu, v in rows:
        if ts == check["ts"] and cpu == check["cpu"]:
            values.append(v)
        with_fffd += "\ufffd" in (v or "")
    out["check"] = {"values": values, "rows_with_fffd": with_fffd}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def sandbox():
    """The child interpreter the readers run in (tests/sandbox.py): one per test
    process, a new one after a crash."""
    box = Sandbox(timeout=TIMEOUT, memory_limit=MEMORY_LIMIT)
    yield box
    box.close()


def assert_no_crash(proc, what):
    rc = proc.returncode
    assert rc >= 0 and rc not in CRASH_CODES, (
        f"{what} crashed (return code {rc}); stderr: {proc.stderr[-2000:]}"
    )
    assert "Traceback (most recent call last)" not in proc.stderr, (
        f"{what} printed a traceback:\n{proc.stderr[-4000:]}"
    )


def expected_counts(name: str) -> dict:
    entry = FILES[name]
    counts = dict(MANIFEST["originals"][entry["base"]]["events"])
    for event, n in entry.get("skipped", {}).items():
        counts[event] -= n
    return {k: v for k, v in counts.items() if v}


def describe(name: str) -> str:
    e = FILES[name]
    return f"{name} ({e['outcome']}): {e['damage']} -- {e['why']}"


# ----------------------------------------------------------------- the corpus itself


def test_manifest_lists_every_file_and_only_those():
    on_disk = {p.name for p in HOSTILE.glob("*.dat")}
    assert on_disk == set(FILES)
    assert set(MANIFEST["originals"]) <= set(FILES)
    assert {e["outcome"] for e in FILES.values()} <= {"error", "warning", "ok"}
    for name, e in FILES.items():
        if e["outcome"] == "warning":
            assert isinstance(e["skipped"], dict) and e["warning_mentions"], name


def test_every_damaged_file_differs_from_its_base():
    for name, e in FILES.items():
        if name != e["base"]:
            assert (HOSTILE / name).read_bytes() != (HOSTILE / e["base"]).read_bytes(), name


def test_corpus_is_small():
    total = sum(p.stat().st_size for p in HOSTILE.iterdir())
    assert total < 3 << 20, f"tests/data/hostile holds {total} bytes (keep < 3 MB)"


def test_generator_writes_the_committed_corpus(tmp_path):
    """scripts/make_hostile.py (from the committed bases) gives the committed files."""
    spec = importlib.util.spec_from_file_location(
        "make_hostile", ROOT / "scripts" / "make_hostile.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # (its dataclasses look their module up there)
    try:
        spec.loader.exec_module(mod)
        mod.main(["--out", str(tmp_path), "--from", str(HOSTILE)])
    finally:
        del sys.modules[spec.name]
    fresh = {p.name for p in tmp_path.iterdir()}
    assert fresh == {p.name for p in HOSTILE.iterdir()}
    for name in sorted(fresh):
        assert (tmp_path / name).read_bytes() == (HOSTILE / name).read_bytes(), (
            f"{name} differs from a fresh scripts/make_hostile.py run"
        )


# ---------------------------------------------------------------- what readers do


@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.slow
def test_load(name, sandbox):
    entry = FILES[name]
    path = HOSTILE / name
    proc = sandbox.python(API, path, json.dumps(entry.get("check")))
    assert_no_crash(proc, f"schedwake.load({name})")
    assert proc.returncode == 0, f"{describe(name)}\n{proc.stderr[-3000:]}"
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    if entry["outcome"] == "error":
        assert "error" in got, f"{describe(name)}\nloaded instead: {got}"
        msg = got["error"]
        assert "\n" not in msg.strip(), f"not one line: {msg!r}"
        assert str(path) in msg, f"the error does not name the file: {msg!r}"
        for rx in entry.get("error_mentions", []):
            assert re.search(rx, msg), f"{describe(name)}\nthe error {msg!r} does not say {rx!r}"
        return
    assert "error" not in got, f"{describe(name)}\nrefused: {got.get('error')}"
    want = expected_counts(name)
    assert got["counts"] == want, f"{describe(name)}\nevent counts differ"
    assert {k: v for k, v in got["rows"].items() if v} == want
    warnings = got["warnings"]
    assert isinstance(warnings, list) and all(isinstance(w, str) for w in warnings), warnings
    if entry["outcome"] == "ok":
        assert warnings == [], f"{describe(name)}\nunexpected warnings: {warnings}"
    else:
        assert len(warnings) == 1, f"{describe(name)}\nwant one warning, got {warnings}"
        assert "\n" not in warnings[0].strip()
        for rx in entry["warning_mentions"]:
            assert re.search(rx, warnings[0]), (
                f"{describe(name)}\nthe warning {warnings[0]!r} does not say {rx!r}"
            )
    check = entry.get("check")
    if check:
        assert got["check"]["values"] == [check["value"]], (
            f"{describe(name)}\n{check['table']}.{check['column']} at ts {check['ts']} "
            f"CPU {check['cpu']}: {got['check']['values']!r}, want [{check['value']!r}]"
        )
        if check.get("only_row_with_fffd"):
            assert got["check"]["rows_with_fffd"] == 1, got["check"]


def check_cli(name: str, proc: subprocess.CompletedProcess, command: str) -> None:
    entry = FILES[name]
    path = str(HOSTILE / name)
    assert_no_crash(proc, f"schedwake {command} {name}")
    lines = proc.stderr.splitlines()
    if entry["outcome"] == "error":
        assert proc.returncode == 2, (
            f"{describe(name)}\nschedwake {command}: exit {proc.returncode}, want 2; "
            f"stderr: {proc.stderr[-2000:]}"
        )
        assert len(lines) == 1, f"want one stderr line, got {len(lines)}: {proc.stderr[-2000:]}"
        assert path in lines[0], f"the error line does not name the file: {lines[0]!r}"
        for rx in entry.get("error_mentions", []):
            assert re.search(rx, lines[0]), f"the error {lines[0]!r} does not say {rx!r}"
        return
    assert proc.returncode == 0, (
        f"{describe(name)}\nschedwake {command}: exit {proc.returncode}, want 0; "
        f"stderr: {proc.stderr[-2000:]}"
    )
    if entry["outcome"] == "ok":
        assert lines == [], f"{describe(name)}\nunexpected stderr: {proc.stderr[-2000:]}"
        return
    assert len(lines) == 1, f"{describe(name)}\nwant one warning line: {proc.stderr[-2000:]}"
    assert "warning" in lines[0].lower() and path in lines[0], lines[0]
    for rx in entry["warning_mentions"]:
        assert re.search(rx, lines[0]), f"the warning {lines[0]!r} does not say {rx!r}"


@pytest.mark.parametrize("name", sorted(FILES))
def test_cli_info(name, sandbox):
    check_cli(name, sandbox.cli("info", HOSTILE / name), "info")


@pytest.mark.parametrize("name", sorted(FILES))
def test_cli_analyze(name, sandbox):
    check_cli(name, sandbox.cli("analyze", HOSTILE / name), "analyze")
