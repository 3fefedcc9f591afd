"""Side files that are not files (#37, "special files read as regular"): a topology,
benchmark results or kallsyms that is a link to /dev/zero, a FIFO or /proc/kmsg is
refused in one line naming it, quickly, and never read whole, waited on or drained (a
read of /proc/kmsg takes the kernel's messages from whoever else reads them)."""

from __future__ import annotations

import os
import shutil

import pytest

from schedwake.compressed import open_regular, read_bounded, read_whole
from schedwake.errors import TraceError
from schedwake.topology import Topology

from .conftest import run_cli, sample

IDLE = sample("idle-sleep.dat")


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


def test_open_regular_refuses_what_is_not_a_file(tmp_path, fifo):
    for path, kind in ((fifo, "a FIFO"), ("/dev/zero", "a device"), (tmp_path, "a directory")):
        with pytest.raises(TraceError, match=f"is {kind}, not a regular file"):
            open_regular(path, "topology file")
    # /proc/kmsg says it is a regular file of 0 bytes: opened, and never read
    if os.access("/proc/kmsg", os.R_OK):
        with open_regular("/proc/kmsg") as f:
            assert read_bounded(f, 1 << 20, "/proc/kmsg") == b""


def test_reads_are_bounded(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(4 << 30)  # a sparse 4 GiB topology: refused without being read
    with pytest.raises(TraceError, match="larger than 16 MiB: not a topology file"):
        Topology.from_file(big)
    with pytest.raises(TraceError, match="too large for a kallsyms file"):
        read_whole(big, 1 << 20, "kallsyms file")


@pytest.mark.parametrize("target", ["/dev/zero", "fifo", "/proc/kmsg"])
def test_a_side_file_that_is_not_a_file_is_refused_in_one_line(tmp_path, fifo, target):
    if target.startswith("/") and not os.path.exists(target):
        pytest.skip(f"{target} does not exist on this machine")
    trace = tmp_path / "run.dat"
    shutil.copyfile(IDLE, trace)
    link = tmp_path / "run.topology.json"
    link.symlink_to(fifo if target == "fifo" else target)
    proc = run_cli("analyze", trace)
    assert proc.returncode == 2, proc.stdout
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "run.topology.json" in proc.stderr
    link.unlink()
    (tmp_path / "run.bench.json").symlink_to(fifo if target == "fifo" else target)
    proc = run_cli("analyze", trace)
    assert proc.returncode == 2 and "run.bench.json" in proc.stderr, proc.stderr
    proc = run_cli("analyze", trace, "--kallsyms", fifo if target == "fifo" else target)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.parametrize("target", ["/dev/zero", "fifo"])
def test_a_perf_threads_part_that_is_not_a_file_is_refused(tmp_path, fifo, target):
    """A ``perf record --threads`` directory whose data.N is /dev/zero or a FIFO: refused
    naming the part, not copied into the temporary directory without end or waited on;
    the directory as recorded is read."""
    src = sample("perf/perf-threads.perf.data")
    copy = tmp_path / "threads.perf.data"
    shutil.copytree(src, copy)
    proc = run_cli("info", copy)
    assert proc.returncode == 0, proc.stderr
    part = sorted(p for p in copy.iterdir() if p.name.startswith("data."))[0]
    part.unlink()
    part.symlink_to(fifo if target == "fifo" else target)
    proc = run_cli("info", copy)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert part.name in proc.stderr and "not a regular file" in proc.stderr


def test_a_mapped_file_that_is_not_a_file_has_no_symbols(fifo):
    """A perf.data's MMAP2 may name /proc/kmsg, trace_pipe or a FIFO: the profile's
    symbol reader calls it "not an ELF file" at once, without reading it."""
    from schedwake.symbols import elf

    for path in (fifo, "/proc/kmsg", "/sys/kernel/tracing/trace_pipe", "/dev/zero"):
        if not os.path.exists(path):
            continue
        got = elf._parse(str(path), None)
        assert got.problem == elf.NOT_ELF, (path, got)


def test_standard_input_is_spooled_with_a_bound():
    """``yes | schedwake analyze -`` is not copied to the temporary directory without
    end: beyond SCHEDWAKE_MAX_STDIN_BYTES (64 GiB by default, and 1 GiB left free on the
    filesystem) it is refused in one line."""
    proc = run_cli(
        "analyze", "-", input=b"\0" * 3_000_000, env={"SCHEDWAKE_MAX_STDIN_BYTES": "1000000"}
    )
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "<stdin>: holds more than 1000000 bytes" in proc.stderr
    ok = run_cli(
        "info", "-", input=IDLE.read_bytes(), env={"SCHEDWAKE_MAX_STDIN_BYTES": "10000000"}
    )
    assert ok.returncode == 0 and "<stdin>" in ok.stdout, ok.stderr
