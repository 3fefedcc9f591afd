"""``-`` reads a trace from standard input: any format, the same analysis as the file,
bad input one line naming ``<stdin>``, and nothing left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from .conftest import run_cli, sample


def pipe(data: bytes, *args, tmp: Path) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("schedwake")
    env = dict(os.environ, TMPDIR=str(tmp))  # where the spool goes: checked empty after
    return subprocess.run(
        [str(exe), *map(str, args)], input=data, capture_output=True, env=env, timeout=300
    )


@pytest.mark.slow
def test_a_piped_trace_dat_gives_the_file_analysis(tmp_path):
    path = sample("kstack-6.1/k61-dbench-c2-kstack-off-i1.dat")
    topo = path.with_suffix(".topology.json")
    proc = pipe(
        path.read_bytes(), "analyze", "-", "--format", "json", "--topology", topo, tmp=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    piped = json.loads(proc.stdout)
    direct = json.loads(run_cli("analyze", path, "--format", "json", check=True).stdout)
    assert piped["trace"]["path"] == "<stdin>"
    assert piped["metrics"] == direct["metrics"]
    assert [f["title"] for f in piped["findings"]] == [f["title"] for f in direct["findings"]]
    assert list(tmp_path.iterdir()) == []


def test_piped_compressed_text_is_sniffed(tmp_path):
    data = sample("nonutf8-comm.report.txt.gz").read_bytes()
    proc = pipe(data, "info", "-", tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert b"format:    trace-cmd-report" in proc.stdout and b"<stdin>" in proc.stdout


def test_bad_input_on_stdin_is_one_line_naming_stdin(tmp_path, monkeypatch):
    """In this process (run_cli's ``input``: the same ``_load_stdin`` on the same bytes,
    the one-line error and exit code of the script; the real pipe is the tests' above),
    with the spool's directory in tmp_path, checked empty after."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for data, needle in (
        (sample("dbench-xfs-1client.dat").read_bytes()[:1000], "truncated or corrupt"),
        (b"", "empty file"),
        (b"hello, world\n" * 10, "not a trace"),
    ):
        proc = run_cli("analyze", "-", input=data)
        assert proc.returncode == 2
        assert proc.stderr.startswith("schedwake: <stdin>: ") and needle in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
        assert str(tmp_path) not in proc.stderr
    assert list(tmp_path.iterdir()) == []
