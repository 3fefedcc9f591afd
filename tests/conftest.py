"""Shared fixtures: paths of the real sample traces and a runner for the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_traces"
#: Trace excerpts quoted in public kernel mailing-list threads (README.md there)
KERNEL_LIST = ROOT / "tests" / "data" / "kernel-list"

#: Real trace.dat recordings the binding is checked on (see sample_traces/README.md).
SAMPLE_DATS = sorted(SAMPLES.glob("*.dat"))


def sample(name: str) -> Path:
    path = SAMPLES / name
    assert path.exists(), f"sample trace {path} is missing"
    return path


#: Same-configuration iterations i1..i3 (sample_traces/README.md), by key: the sample
#: path of each run without its final digit and ".dat".
ITERATION_SETS = {
    "c1": "iterations/dbench-xfs-1c-i",  # host, dbench 1 client, 1 s
    "c4": "iterations/dbench-xfs-4c-i",  # host, dbench 4 clients, 1 s
    # the real before/after pair: 6.1, 8-CPU guest, dbench 2 clients, with the
    # select_idle_sibling() kthread-stacking clause on (the fix) and off (before it)
    "on": "kstack-6.1/k61-dbench-c2-kstack-on-i",
    "off": "kstack-6.1/k61-dbench-c2-kstack-off-i",
}


def iteration_names(key: str) -> list[str]:
    return [f"{ITERATION_SETS[key]}{i}" for i in (1, 2, 3)]


def iteration_paths(key: str) -> list[Path]:
    return [sample(f"{n}.dat") for n in iteration_names(key)]


def iteration_glob(key: str) -> str:
    return f"{SAMPLES / ITERATION_SETS[key]}*.dat"


def plain(col) -> pa.Array:
    """An Arrow column as one plain array (chunks combined, dictionaries decoded)."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    return col


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
    proc = subprocess.run(
        cmd + [str(a) for a in args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        timeout=600,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"schedwake {' '.join(map(str, args))} failed ({proc.returncode}): {proc.stderr}"
        )
    return proc


def mmtests_part(text: str) -> str:
    """The mmtests table (and what follows it) of ``schedwake compare`` text: what comes
    after the summary block that opens the output."""
    return text.split("\n\n", 1)[1] if text.startswith("summary:") else text
