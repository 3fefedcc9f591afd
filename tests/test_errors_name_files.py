"""Every error line names a file (issue #37, "errors that name nothing"): a full disk
or a file size limit while an output is written (``--folded /dev/full``: it was
``schedwake: : No space left on device``), the standard output on a full disk, and
running out of memory (``schedwake: out of memory``), each through the real command
line in a child process: one line ``schedwake: FILE: ...`` and exit 2. (A CPU topology
in a perf.data header that names CPU 999999999, which ``info`` passed with exit 0, is
a file of tests/data/perf_hostile.)"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROFILE = ROOT / "fuzz" / "corpus" / "fuzz_load_perfdata" / "seed-perf-profile.data"
CMD = [sys.executable, "-m", "schedwake.cli"]


def run(args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        CMD + [str(a) for a in args], capture_output=True, text=True, timeout=120, cwd=ROOT, **kw
    )


def one_line(proc: subprocess.CompletedProcess, named: str, says: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"schedwake: {named}: ") and says in lines[0], lines[0]


TWO_SIDES = [PROFILE, "--side", f"a={PROFILE}", "--side", f"b={PROFILE}"]


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_an_output_on_a_full_disk():
    one_line(run(["profile", *TWO_SIDES, "--folded", "/dev/full"]), "/dev/full", "No space left")


@pytest.mark.slow
def test_an_output_beyond_the_file_size_limit(tmp_path):
    out = tmp_path / "big.folded"

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))

    proc = run(["profile", *TWO_SIDES, "--folded", out], preexec_fn=limit)
    one_line(proc, str(out), "File too large")


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_the_standard_output_on_a_full_disk():
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            CMD + ["info", str(PROFILE)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
    one_line(proc, "<stdout>", "No space left")


@pytest.mark.slow
def test_out_of_memory_names_the_trace():
    """A MemoryError while reading, and while analysing a trace read: both name it."""
    for where in ("schedwake.trace.load", "schedwake.analysis.analyze"):
        module, name = where.rsplit(".", 1)
        code = (
            f"import {module}, sys\n"
            "def oom(*a, **k): raise MemoryError\n"
            f"{module}.{name} = oom\n"
            "from schedwake.cli import main\n"
            f"sys.argv = ['schedwake', 'analyze', {str(PROFILE)!r}]\n"
            "main()\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
        )
        one_line(proc, str(PROFILE), "out of memory")


@pytest.mark.slow
def test_convert_beyond_the_file_size_limit(tmp_path):
    """convert's Parquet files (written by pyarrow, whose error names no file)."""
    out = tmp_path / "tables"

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))

    seed = ROOT / "fuzz" / "corpus" / "fuzz_load_perfdata" / "seed-perf-file.data"
    proc = run(["convert", seed, "-o", out], preexec_fn=limit)
    one_line(proc, str(out), "File too large")
