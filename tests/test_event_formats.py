"""Event formats the model can rely on (tests/data/hostile_formats/, written by
scripts/make_hostile_formats.py; its manifest.json says what each file must give).

* ``error``: a format no kernel writes, or records that contradict their format:
  ``schedwake.load`` raises TraceError; ``info`` (unless ``info_ok``: it reads no
  field) and ``analyze`` exit 2 with one stderr line naming the file and the damage;
* ``unusable``: a legal format the model cannot use: it loads without a warning and
  ``info`` exits 0, but ``analyze`` (and compare, gate, batch: whatever builds the
  model) exits 2 with one line naming the file, the event and the field;
* ``warning``: loads, one warning line; ``model_error``: analyze then refuses it;
* ``ok``: loads, no warning, every command exits 0 with nothing on stderr.

The commands run in child processes (a crash must fail the test, not kill pytest):
every file through ``info`` and ``analyze`` in one child (click's runner, so 33 files
take seconds, not minutes), with ``compare A A`` and ``gate`` of a few files; and
those files through the real ``schedwake`` console script for ``analyze`` and
``batch`` (the exit code and the one line of the installed script itself).
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from .conftest import computed_once, run_dir

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "hostile_formats"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
FILES = MANIFEST["files"]
TIMEOUT = 300
SCHEDWAKE = Path(sys.executable).with_name("schedwake")

#: Each file through the API and the CLI's info and analyze, one JSON line per file;
#: then each extra command (``{label: argv}``, the JSON first argument) through the CLI,
#: one JSON line of them all.
DRIVER = r"""
import json, sys
from click.testing import CliRunner
import schedwake
from schedwake.cli import cli

runner = CliRunner()
for path in sys.argv[2:]:
    out = {"path": path}
    try:
        t = schedwake.load(path)
    except schedwake.TraceError as exc:
        out["load_error"] = str(exc)
    else:
        out["warnings"] = list(t.meta.warnings)
        try:
            schedwake.analyze(t)
        except schedwake.TraceError as exc:
            out["analyze_error"] = str(exc)
    for command in ("info", "analyze"):
        r = runner.invoke(cli, [command, path], prog_name="schedwake")
        out[command] = {"code": r.exit_code, "stderr": r.stderr.splitlines()}
    print(json.dumps(out), flush=True)
extra = {}
for label, argv in json.loads(sys.argv[1]).items():
    r = runner.invoke(cli, argv, prog_name="schedwake")
    extra[label] = {"code": r.exit_code, "stderr": r.stderr.splitlines(), "stdout": r.stdout}
print(json.dumps({"commands": extra}), flush=True)
"""


def _generator():
    spec = importlib.util.spec_from_file_location(
        "make_hostile_formats", ROOT / "scripts" / "make_hostile_formats.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_corpus_is_a_fresh_generation(tmp_path):
    manifest = _generator().make_corpus(tmp_path)
    assert manifest == MANIFEST, "manifest.json differs: run scripts/make_hostile_formats.py"
    committed = sorted(p.name for p in CORPUS.iterdir())
    assert committed == sorted(p.name for p in tmp_path.iterdir())
    for name in FILES:
        assert (tmp_path / name).read_bytes() == (CORPUS / name).read_bytes(), name


def test_corpus_is_small():
    total = sum(p.stat().st_size for p in CORPUS.iterdir())
    assert total < 500_000, total


@pytest.fixture(scope="module")
def results() -> dict:
    """The driver's answers by file name, and its extra commands' under "commands"
    (:func:`extra_commands`): run once per test run, for both xdist workers."""
    return computed_once("tests/test_event_formats.py: the driver on the corpus", run_driver)


def run_driver() -> dict:
    commands = extra_commands(Path(tempfile.mkdtemp(prefix="event-formats-", dir=run_dir())))
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            DRIVER,
            json.dumps(commands),
            *(str(CORPUS / n) for n in sorted(FILES)),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=TIMEOUT,
    )
    lines = [json.loads(ln) for ln in proc.stdout.splitlines()]
    done = [Path(r["path"]).name for r in lines if "path" in r]
    assert proc.returncode == 0, (
        f"the driver died (code {proc.returncode}) after {done[-1:] or 'no file'}:\n"
        f"{proc.stderr[-3000:]}"
    )
    assert "commands" in lines[-1], lines[-1:]
    return {**{Path(r["path"]).name: r for r in lines[:-1]}, "commands": lines[-1]["commands"]}


def _says_all(line: str, patterns, what: str) -> None:
    for rx in patterns:
        assert re.search(rx, line), f"{what}: {line!r} does not say {rx!r}"


def _one_error_line(got: dict, name: str, patterns) -> None:
    assert got["code"] == 2, got
    assert len(got["stderr"]) == 1, got["stderr"]
    line = got["stderr"][0]
    assert str(CORPUS / name) in line, f"the line does not name the file: {line!r}"
    assert "Traceback" not in line and "internal error" not in line, line
    _says_all(line, patterns, name)


@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.slow
def test_api(name, results):
    entry, got = FILES[name], results[name]
    outcome, mentions = entry["outcome"], entry["mentions"]
    if outcome == "error":
        assert "load_error" in got, f"{name} loaded: {got}"
        assert "\n" not in got["load_error"] and str(CORPUS / name) in got["load_error"]
        _says_all(got["load_error"], mentions, name)
        return
    assert "load_error" not in got, got["load_error"]
    if outcome == "warning":
        assert len(got["warnings"]) == 1, got["warnings"]
        _says_all(got["warnings"][0], mentions, name)
    else:
        assert got["warnings"] == [], got["warnings"]
    model_error = mentions if outcome == "unusable" else entry.get("model_error")
    if model_error:
        assert "analyze_error" in got, f"{name}: analyze() accepted it"
        _says_all(got["analyze_error"], model_error, name)
    else:
        assert "analyze_error" not in got, got["analyze_error"]


@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.slow
def test_cli_info(name, results):
    entry, got = FILES[name], results[name]["info"]
    if entry["outcome"] == "error" and not entry.get("info_ok"):
        _one_error_line(got, name, entry["mentions"])
    elif entry["outcome"] == "warning":
        assert got["code"] == 0 and len(got["stderr"]) == 1, got
        assert "warning" in got["stderr"][0]
        _says_all(got["stderr"][0], entry["mentions"], name)
    else:
        assert got == {"code": 0, "stderr": []}, got


@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.slow
def test_cli_analyze(name, results):
    entry, got = FILES[name], results[name]["analyze"]
    outcome = entry["outcome"]
    if outcome in ("error", "unusable"):
        _one_error_line(got, name, entry["mentions"])
    elif outcome == "warning":
        # the load's warning, then (the model refuses it) the error
        assert got["code"] == 2 and len(got["stderr"]) == 2, got
        _says_all(got["stderr"][0], entry["mentions"], name)
        _one_error_line({"code": 2, "stderr": got["stderr"][1:]}, name, entry["model_error"])
    else:
        assert got == {"code": 0, "stderr": []}, got


# ------------------------------------------------ the real console script, a few files

#: One file per kind of refusal: the model's check (trace.dat v6 and v7, perf.data),
#: the decoder's (a format, a record).
REAL = [
    "v6-sched_switch-next_pid-array-2.dat",
    "v7-sched_waking-no-target_cpu.dat",
    "perf-sched_switch-next_pid-size-3.data",
    "v6-sched_switch-two-fields-next_pid.dat",
    "v6-sched_process_fork-data_loc-outside.dat",
]


def schedwake(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    cmd = [str(SCHEDWAKE)] if SCHEDWAKE.exists() else [sys.executable, "-m", "schedwake.cli"]
    return subprocess.run(
        cmd + [str(a) for a in args],
        capture_output=True,
        text=True,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        timeout=TIMEOUT,
    )


def _refused(proc: subprocess.CompletedProcess, name: str) -> None:
    _one_error_line(
        {"code": proc.returncode, "stderr": proc.stderr.splitlines()}, name, FILES[name]["mentions"]
    )


#: Gate rules a 0.15-s trace of one run a side can be judged by (the default wants 200
#: sched_switch events and two baseline runs, and would refuse the file before reading
#: it whole).
SHORT_RULES = """
[gate]
min_switches = 0
samples = "per-window"
min_windows = 1

[rules.context_switches_per_s]
allowed = "25%"
"""


#: The files whose refusals are seen through the real console script (``analyze``) and
#: through ``compare A A`` and ``gate`` (in the driver's child: the same ``cli`` as the
#: script's, without two more interpreter starts per file)
REFUSED_EVERYWHERE = REAL[::2]


def extra_commands(tmp: Path) -> dict[str, list[str]]:
    """The driver's extra commands, by label: compare and gate of each REFUSED_EVERYWHERE
    file, and the gate of the undamaged base (with a copy of it: one file on both sides
    is refused)."""
    rules = tmp / "rules.toml"
    rules.write_text(SHORT_RULES)
    base = CORPUS / "base-v6.dat"
    copy = tmp / "base-v6-copy.dat"
    shutil.copyfile(base, copy)
    commands = {"gate base": ["gate", "--rules", rules, "--baseline", base, "--candidate", copy]}
    for name in REFUSED_EVERYWHERE:
        path = CORPUS / name
        commands[f"compare {name}"] = ["compare", path, path, "--label", "a", "--label", "b"]
        commands[f"gate {name}"] = [
            "gate",
            "--rules",
            rules,
            "--baseline",
            path,
            "--candidate",
            path,
        ]
    return {label: [str(a) for a in argv] for label, argv in commands.items()}


@pytest.mark.parametrize("name", REFUSED_EVERYWHERE)
@pytest.mark.slow
def test_real_commands_refuse(name, results):
    _refused(schedwake("analyze", CORPUS / name), name)
    for command in ("compare", "gate"):
        _one_error_line(results["commands"][f"{command} {name}"], name, FILES[name]["mentions"])


@pytest.mark.slow
def test_real_gate_judges_the_base(results):
    """The rules above judge the undamaged base: the refusals are the files' own."""
    got = results["commands"]["gate base"]
    assert got["code"] == 0, got


@pytest.mark.slow
def test_real_batch_names_each_refused_trace(tmp_path):
    import pyarrow.parquet as pq

    good = CORPUS / "base-v6.dat"
    proc = schedwake("batch", "--serial", "-o", tmp_path / "out", good, *(CORPUS / n for n in REAL))
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    rows = pq.read_table(tmp_path / "out" / "traces.parquet").to_pylist()
    by_name = {Path(r["path"]).name: r for r in rows}
    assert by_name["base-v6.dat"]["status"] == "ok", by_name["base-v6.dat"]
    for name in REAL:
        row = by_name[name]
        assert row["status"] == "error", row
        _says_all(row["error"], FILES[name]["mentions"], name)
