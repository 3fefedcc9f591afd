"""The recording kernel's symbols shipped with the samples, and the suite's independence
of the kernel it runs on.

* ``sample_traces/kallsyms/6.18.44-fc-v782.gz`` (tests/conftest.py, ``SAMPLE_KALLSYMS``)
  is the kallsyms of the kernel build that recorded ``sample_traces/perf/`` and
  ``sample_traces/profiles/``: byte for byte the kallsyms section of the trace.dat files
  recorded on that build (``storm/``), and it fits the perf.data files (perf's kernel
  map ends at its ``_etext``; every work function their workqueue events name starts one
  of its symbols), which another 6.18.44 build's kallsyms does not.
* Every perf.data sample whose events name kernel addresses has its kernel's kallsyms
  in ``sample_traces/kallsyms/``, named by the release.
* The suite runs as on a machine whose kernel recorded none of the samples
  (``SCHEDWAKE_IGNORE_RUNNING_KERNEL``, set by tests/conftest.py): even where the
  machine runs the samples' kernel (simulated here), nothing names their kernel
  addresses but the kallsyms a test gives.
* A ``--kallsyms`` file may be compressed (gzip, xz, bzip2, zstd); a damaged, oversized
  or wrong one is refused in one line.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import platform
import re
import shutil
import subprocess

import pytest

import schedwake
from schedwake import compressed
from schedwake.symbols import elf, kernel
from schedwake.symbols.resolve import UNKNOWN, Resolver

from .conftest import (
    SAMPLE_BUILD_ID,
    SAMPLE_KALLSYMS,
    SAMPLE_KERNEL,
    SAMPLES,
    run_cli,
    sample,
)

PERF_SAMPLES = sorted((SAMPLES / "perf").glob("*.perf.data")) + [
    SAMPLES / "perf-lost-events.perf.data"
]
PROFILES = sorted((SAMPLES / "profiles").glob("*/run*.perf.data"))
#: the samples whose events name kernel addresses: callchains, a profile's samples,
#: workqueue functions (%ps fields)
NEED_KALLSYMS = {
    "perf-sched-g.perf.data",
    "perf-profile-g.perf.data",
    "perf-dbench-z.perf.data",
} | {f"{p.parent.name}/{p.name}" for p in PROFILES}


def sample_text() -> bytes:
    return gzip.decompress(SAMPLE_KALLSYMS.read_bytes())


def symbols(text: bytes) -> dict[int, list[tuple[str, str]]]:
    """address -> [(type, name)] of a kallsyms text."""
    out: dict[int, list[tuple[str, str]]] = {}
    for line in text.decode().splitlines():
        addr, kind, name = line.split()[:3]
        out.setdefault(int(addr, 16), []).append((kind, name))
    return out


def dat_kallsyms(path) -> bytes:
    """The kallsyms section of a trace.dat, as ``trace-cmd dump --kallsyms`` prints it
    (its own header lines left out)."""
    exe = shutil.which("trace-cmd")
    if exe is None:
        pytest.skip("trace-cmd not installed")
    out = subprocess.run(
        [exe, "dump", "--kallsyms", "-i", str(path)], capture_output=True, check=True
    ).stdout
    return b"".join(ln for ln in out.splitlines(True) if re.match(rb"[0-9a-f]+ ", ln))


def work_function_addresses() -> set[int]:
    """The work functions perf-dbench-z.perf.data's workqueue events name, as addresses
    (read with no kallsyms: the suite's kernel is none, so they stay numbers)."""
    t = schedwake.load(
        sample("perf/perf-dbench-z.perf.data"),
        events=["workqueue_queue_work", "workqueue_execute_start"],
    )
    names = {f for e in t.events for f in t.table(e).column("function").to_pylist()}
    assert all(re.fullmatch(r"0x[0-9a-f]+", f) for f in names), names
    return {int(f, 16) for f in names}


# -- the shipped kallsyms is the recording kernel's -------------------------------------------


def test_the_kallsyms_is_the_one_the_storm_traces_recorded():
    """trace-cmd writes the machine's /proc/kallsyms into a trace.dat; the storm/ traces
    were recorded on 6.18.44-fc-v782 (sample_traces/README.md), the build of perf/ and
    profiles/, the same day: the shipped file is that section, byte for byte."""
    readme = (SAMPLES / "README.md").read_text()
    for run in ("root/run8", "weighted/run3"):
        section = readme.split(f"#### storm/{run}.dat", 1)[1].split("####", 1)[0]
        assert f"kernel `{SAMPLE_KERNEL} " in section
        assert dat_kallsyms(SAMPLES / "storm" / f"{run}.dat") == sample_text()
    assert SAMPLE_KALLSYMS.name == f"{SAMPLE_KERNEL}.gz"


@pytest.mark.slow
def test_the_kallsyms_fits_the_perf_data_recordings():
    """perf.data carries no kallsyms, but two facts of the kernel it ran on: the kernel
    map perf wrote ([kernel.kallsyms]_text: _text up to _etext) and the work functions
    the workqueue events point at (each the start of a function). The shipped kallsyms
    fits both; the kallsyms of 6.18.44-fc-v595 (another build of that release, in
    dbench-xfs-1client.dat) fits neither: a release's symbols do not fit another build."""
    ours = symbols(sample_text())
    other = symbols(dat_kallsyms(sample("dbench-xfs-1client.dat")))
    by_name = {n: a for a, syms in ours.items() for _, n in syms}
    other_by_name = {n: a for a, syms in other.items() for _, n in syms}
    mmaps = schedwake.load(sample("perf/perf-profile-g.perf.data")).sideband["mmaps"]
    (kmap,) = [m for m in mmaps.to_pylist() if m["filename"] == "[kernel.kallsyms]_text"]
    assert kmap["start"] == by_name["_text"] == other_by_name["_text"]
    assert kmap["start"] + kmap["len"] == by_name["_etext"] != other_by_name["_etext"]
    works = work_function_addresses()
    assert len(works) >= 15
    assert all(a in ours and ours[a][0][0] in "tT" for a in works)
    assert sum(a in other for a in works) < len(works) / 2
    named = {ours[a][0][1] for a in works}
    assert {"xfs_end_io", "loop_rootcg_workfn", "xlog_cil_push_work"} <= named


@pytest.mark.slow
def test_every_sample_naming_kernel_addresses_has_its_kallsyms():
    """A perf.data whose events name kernel addresses (callchains, a profile's samples,
    a %ps field such as the workqueue function) ships the kallsyms of its kernel as
    sample_traces/kallsyms/RELEASE.gz; the others name none."""
    need = set()
    for path in PERF_SAMPLES + PROFILES:
        t = schedwake.load(path)
        tables = [t.table(e) for e in t.events]
        if (
            t.meta.source["callchains"]
            or any("function" in x.column_names for x in tables)
            or any("ip" in x.column_names for x in tables)
        ):
            name = path.name if path in PERF_SAMPLES else f"{path.parent.name}/{path.name}"
            need.add(name)
            assert (SAMPLES / "kallsyms" / f"{t.meta.kernel}.gz").is_file(), path
            assert t.meta.kernel == SAMPLE_KERNEL
            assert kernel.kernel_build_id(t.meta.source["build_ids"]) in (None, SAMPLE_BUILD_ID)
    assert need == NEED_KALLSYMS


# -- the suite runs as on another kernel --------------------------------------------------------


def test_the_suite_runs_as_on_another_kernel():
    assert os.environ.get(kernel.IGNORE_RUNNING_KERNEL) == "1"
    assert kernel.running_kernel_ignored()
    mine = kernel.choose_kallsyms(platform.release(), kernel.running_build_id())
    assert mine.text is None and kernel.IGNORE_RUNNING_KERNEL in mine.reason
    # so a profile of the samples has no kernel function names unless given its kallsyms
    trace = schedwake.load(PROFILES[0])
    bare = schedwake.profile(trace)
    frames = bare.rows[bare.rows["dso"] == "[kernel.kallsyms]"]
    assert list(frames["symbol"]) == [UNKNOWN] and frames["self_share"].iloc[0] > 0.5
    assert any(kernel.IGNORE_RUNNING_KERNEL in c for c in bare.caveats)
    named = schedwake.profile(trace, kallsyms=SAMPLE_KALLSYMS)
    assert named.kernel_symbols == f"{SAMPLE_KALLSYMS}: given with --kallsyms"
    assert {"do_syscall_64", "entry_SYSCALL_64_after_hwframe"} <= set(named.rows["symbol"])


@pytest.mark.slow
def test_a_child_process_runs_as_on_another_kernel():
    """The CLI in a process of its own (and so the notebooks' kernels) inherits it."""
    out = run_cli("profile", PROFILES[0], "--top", "3", subprocess=True)
    assert out.returncode == 0, out.stderr
    assert f"kernel:   this machine's kernel is not used ({kernel.IGNORE_RUNNING_KERNEL}" in (
        out.stdout
    )


def test_even_the_samples_kernel_is_not_used(samples_kernel_here, monkeypatch):
    """On a machine that runs the samples' kernel a test that forgot their kallsyms
    would pass by luck; the suite's setting makes it fail there too. Without the setting
    (as outside the suite) the machine's kallsyms names them, as the given one does
    (test_evidence_stacks.py does the same for the evidence's stacks)."""
    trace = schedwake.load(PROFILES[0])
    hidden = schedwake.profile(trace)
    assert set(hidden.rows[hidden.rows["dso"] == "[kernel.kallsyms]"]["symbol"]) == {UNKNOWN}
    monkeypatch.delenv(kernel.IGNORE_RUNNING_KERNEL)
    here = schedwake.profile(trace)
    assert here.kernel_symbols == (
        f"{samples_kernel_here}: the running kernel has the recorded release ({SAMPLE_KERNEL}; "
        "no build id to compare)"
    )
    given = schedwake.profile(trace, kallsyms=SAMPLE_KALLSYMS)
    cols = ["symbol", "dso", "self_period", "children_period"]
    assert here.rows[cols].equals(given.rows[cols])
    assert (here.rows["dso"] == "[kernel.kallsyms]").sum() > 100


def test_nor_is_its_vdso():
    """The vDSO is the running kernel's too: not used for a recording's user-space
    frames while the suite's setting is on (as on another kernel: not the recorded one)."""
    got = Resolver(schedwake.load(PROFILES[0]))._open("[vdso]", None)
    assert isinstance(got, elf.ElfLoad) and got.problem == elf.BUILD_ID_MISMATCH
    assert kernel.IGNORE_RUNNING_KERNEL in got.detail


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
def test_perf_script_reader_names_nothing_from_this_machine_either():
    """The perf-script reader gives perf an empty kallsyms unless given one: the work
    functions stay addresses as in schedwake's reader (perf would name them from this
    machine's /proc/kallsyms: another build's, wrong functions)."""
    path = sample("perf/perf-dbench-z.perf.data")
    t = schedwake.load(path, reader="perf-script", events=["workqueue_queue_work"])
    got = {int(f, 16) for f in t.table("workqueue_queue_work").column("function").to_pylist()}
    assert got <= work_function_addresses() and len(got) >= 15


# -- compressed and damaged kallsyms files --------------------------------------------------------


def _zstd(data: bytes) -> bytes:
    zstandard = pytest.importorskip("zstandard")
    return zstandard.ZstdCompressor().compress(data)


PACKERS = {
    "plain": lambda d: d,
    "gzip": gzip.compress,
    "xz": lzma.compress,
    "bzip2": bz2.compress,
    "zstd": _zstd,
}


@pytest.fixture(scope="module")
def part() -> bytes:
    """The first 3000 lines of the sample's kallsyms."""
    return b"".join(sample_text().splitlines(True)[:3000])


@pytest.mark.parametrize("kind", PACKERS)
@pytest.mark.parametrize("program", [True, False], ids=["program", "module"])
def test_compressed_kallsyms_read_as_plain(kind, program, part, tmp_path, monkeypatch):
    if not program:  # the Python module where the program is missing (zstd)
        monkeypatch.setattr(compressed.shutil, "which", lambda name: None)
    path = tmp_path / f"kallsyms.{kind}"
    path.write_bytes(PACKERS[kind](part))
    assert kernel.read_kallsyms(path) == part
    choice = kernel.choose_kallsyms(SAMPLE_KERNEL, SAMPLE_BUILD_ID, given=path)
    assert choice.text == part and choice.source == str(path)


@pytest.mark.parametrize("kind", [k for k in PACKERS if k != "plain"])
@pytest.mark.parametrize("program", [True, False], ids=["program", "module"])
def test_damaged_compressed_kallsyms_is_one_line(kind, program, part, tmp_path, monkeypatch):
    if not program:
        monkeypatch.setattr(compressed.shutil, "which", lambda name: None)
    packed = PACKERS[kind](part)
    cut = tmp_path / f"cut.{kind}"
    cut.write_bytes(packed[: len(packed) // 2])
    flipped = bytearray(packed)
    flipped[len(packed) // 2] ^= 0xFF
    bad = tmp_path / f"bad.{kind}"
    bad.write_bytes(bytes(flipped))
    for path in (cut, bad):
        with pytest.raises(schedwake.TraceError) as err:
            kernel.read_kallsyms(path)
        msg = str(err.value)
        assert msg.startswith(f"{path}: ") and "\n" not in msg, msg
        assert f"truncated or corrupt {kind} data" in msg or "is not a kallsyms file" in msg


@pytest.mark.parametrize("program", [True, False], ids=["program", "module"])
def test_too_large_or_not_kallsyms_is_refused(program, part, tmp_path, monkeypatch):
    if not program:
        monkeypatch.setattr(compressed.shutil, "which", lambda name: None)
    big = tmp_path / "big.gz"
    big.write_bytes(gzip.compress(part))
    monkeypatch.setattr(kernel, "MAX_KALLSYMS_BYTES", len(part) - 1)
    with pytest.raises(
        schedwake.TraceError,
        match=r"big\.gz: holds more than \d+ bytes: too large for a kallsyms file",
    ):
        kernel.read_kallsyms(big)
    # a bomb is not decompressed past the bound: 64 MiB of zeros in a few KB of zstd
    bomb = tmp_path / "bomb.zst"
    bomb.write_bytes(_zstd(bytes(64 << 20)))
    assert bomb.stat().st_size < 1 << 20
    with pytest.raises(schedwake.TraceError, match=r"bomb\.zst: holds more than 1 MiB: too large"):
        compressed.read_whole(bomb, 1 << 20, "kallsyms file")
    text = tmp_path / "notes.gz"
    text.write_bytes(gzip.compress(b"this is not kallsyms\n"))
    with pytest.raises(schedwake.TraceError, match=r"notes\.gz: is not a kallsyms file"):
        kernel.read_kallsyms(text)
    with pytest.raises(schedwake.TraceError, match="cannot read the kallsyms file"):
        kernel.read_kallsyms(tmp_path / "missing.gz")


def test_a_bad_kallsyms_file_is_one_line_for_every_command(part, tmp_path):
    packed = gzip.compress(part)
    cut = tmp_path / "kallsyms.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    dbench = sample("perf/perf-dbench-z.perf.data")
    for args in (
        ["profile", PROFILES[0]],
        ["convert", dbench, "-o", tmp_path / "t", "--events", "workqueue_queue_work"],
        ["info", dbench, "--reader", "perf-script"],
    ):
        out = run_cli(*args, "--kallsyms", cut)
        assert out.returncode == 2 and out.stdout == "", (args, out.stdout)
        # (the recording's own warnings may come first, each a line of its own)
        lines = [ln for ln in out.stderr.strip().splitlines() if "schedwake: warning:" not in ln]
        assert len(lines) == 1 and f"{cut}: truncated or corrupt gzip data" in lines[0], lines
