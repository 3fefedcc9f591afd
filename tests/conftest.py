"""Shared fixtures: paths of the real sample traces and a runner for the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_traces"
SHARED = ROOT.parent / "shared"

#: Real trace.dat recordings the binding is checked on (see sample_traces/README.md).
SAMPLE_DATS = sorted(SAMPLES.glob("*.dat"))


def sample(name: str) -> Path:
    path = SAMPLES / name
    assert path.exists(), f"sample trace {path} is missing"
    return path


@pytest.fixture(scope="session")
def dbench1() -> Path:
    return sample("dbench-xfs-1client.dat")


@pytest.fixture(scope="session")
def dbench2() -> Path:
    return sample("dbench-xfs-2clients.dat")


def run_cli(*args, check: bool = False, cwd=None) -> subprocess.CompletedProcess:
    """Run ``schedwake ARGS`` as a real subprocess (the installed console script)."""
    exe = Path(sys.executable).with_name("schedwake")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "schedwake.cli"]
    env = dict(os.environ, COLUMNS="120")
    # a hang (the reader must refuse, never stall) fails the test instead of the CI job
    proc = subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True,
                          env=env, cwd=cwd, stdin=subprocess.DEVNULL, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"schedwake {' '.join(map(str, args))} failed "
                             f"({proc.returncode}): {proc.stderr}")
    return proc
