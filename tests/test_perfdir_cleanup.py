"""A ``perf record --threads`` directory is joined into a ``schedwake-perfdir-<pid>-*``
temporary directory (ingest/perfdata.py); a schedwake killed while it reads one (#37:
SIGTERM, SIGKILL) cannot remove it, so the next run does: a directory of this user
whose process is gone is swept away before a new one is made. Interrupted (SIGINT), the
directory goes at once. Real processes, killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import SAMPLES

ROOT = Path(__file__).resolve().parent.parent
THREADS = SAMPLES / "perf" / "perf-threads.perf.data"

#: Joins the directory, says where, and waits to be killed inside the join.
HOLD = r"""
import sys, time
from pathlib import Path
from schedwake.ingest import perfdata
with perfdata.joined(Path(sys.argv[1])) as one:
    print(one.parent, flush=True)
    time.sleep(120)
"""


def held(tmp_path) -> tuple[subprocess.Popen, Path]:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(THREADS)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert proc.stdout is not None
    spool = Path(proc.stdout.readline().strip())
    assert spool.parent == tmp_path and spool.name.startswith(f"schedwake-perfdir-{proc.pid}-")
    assert (spool / "perf.data").exists()
    return proc, spool


@pytest.mark.slow
@pytest.mark.skipif(not THREADS.is_dir(), reason="no perf record --threads sample")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_killed_run_leaves_nothing_for_long(tmp_path, sig):
    proc, spool = held(tmp_path)
    proc.send_signal(sig)
    proc.wait(timeout=30)
    assert spool.exists()  # what a killed process cannot help
    unrelated = tmp_path / "schedwake-perfdir-notapid-x"
    unrelated.mkdir()
    run = subprocess.run(
        [sys.executable, "-m", "schedwake.cli", "info", str(THREADS)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert run.returncode == 0, run.stderr
    assert not spool.exists(), "the next run did not sweep the killed run's directory"
    assert sorted(p.name for p in tmp_path.iterdir()) == [unrelated.name]


@pytest.mark.slow
@pytest.mark.skipif(not THREADS.is_dir(), reason="no perf record --threads sample")
def test_an_interrupted_run_removes_its_directory(tmp_path):
    proc, spool = held(tmp_path)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    assert not spool.exists()


@pytest.mark.slow
@pytest.mark.skipif(not THREADS.is_dir(), reason="no perf record --threads sample")
def test_a_live_runs_directory_is_kept(tmp_path):
    from schedwake.ingest.perfdata import sweep_stale_dirs

    proc, spool = held(tmp_path)
    try:
        assert sweep_stale_dirs(str(tmp_path)) == []
        assert spool.exists()
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert sweep_stale_dirs(str(tmp_path)) == [spool] and not spool.exists()
