"""perf.data that contradicts itself (issue 23, "contradictions are damage"): a record
on a CPU beyond the count of the NRCPUS feature is refused, naming both, instead of
making the machine as large as the damaged CPU field says.

The file is a committed fuzz seed (a real `perf record` of this project's machine) with
its NRCPUS feature patched in a temporary copy: the section's offset is found through
the perf.data header's feature bitmap and the feature table after the data.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "fuzz" / "corpus" / "fuzz_load_perfdata" / "seed-perf-file.data"
HEADER_NRCPUS = 7


def nrcpus_offset(data: bytes) -> int:
    """File offset of the NRCPUS feature's {u32 available, u32 online}."""
    assert data[:8] == b"PERFILE2"
    data_off, data_size = struct.unpack_from("<QQ", data, 40)
    bitmap = int.from_bytes(data[72:104], "little")
    assert bitmap >> HEADER_NRCPUS & 1, "the seed has no NRCPUS feature"
    index = bin(bitmap & ((1 << HEADER_NRCPUS) - 1)).count("1")
    off, size = struct.unpack_from("<QQ", data, data_off + data_size + 16 * index)
    assert size == 8
    return off


def schedwake_info(path: Path) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("schedwake")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "schedwake.cli"]
    return subprocess.run(cmd + ["info", str(path)], capture_output=True, text=True, timeout=60)


@pytest.mark.slow
def test_seed_says_two_cpus():
    data = SEED.read_bytes()
    assert struct.unpack_from("<II", data, nrcpus_offset(data)) == (2, 2)
    assert schedwake_info(SEED).returncode == 0


@pytest.mark.slow
def test_a_record_beyond_nrcpus_is_damage(tmp_path):
    data = bytearray(SEED.read_bytes())
    struct.pack_into("<II", data, nrcpus_offset(data), 1, 1)
    damaged = tmp_path / "nrcpus-1.data"
    damaged.write_bytes(data)
    proc = schedwake_info(damaged)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and str(damaged) in lines[0], proc.stderr
    assert "CPU 1" in lines[0] and "NRCPUS" in lines[0] and "1 CPUs" in lines[0], lines[0]


def _samples(data: bytes) -> list[int]:
    """File offsets of the seed's SAMPLE records (type 9)."""
    d_off, d_size = struct.unpack_from("<QQ", data, 40)
    pos, out = d_off, []
    while pos < d_off + d_size:
        kind, _, size = struct.unpack_from("<IHH", data, pos)
        if kind == 9:
            out.append(pos)
        pos += size
    return out


#: Where a SAMPLE's time is in the seed's records: its sample_type is IDENTIFIER | IP |
#: TID | TIME | ... (0x10587), so after the 8-byte header, the id, the ip and pid/tid.
TIME_AT = 32


@pytest.mark.slow
@pytest.mark.parametrize("when", ["zero", "an hour ahead"])
def test_a_sample_far_outside_the_others_is_left_out(tmp_path, when):
    """One sample at time 0 or an hour after the others (#37): left out of the tables and
    the duration with a warning, as the text reader does, instead of a duration of 2,039
    s or 3,600 s dividing every rate (and a traceback in the task states)."""
    data = bytearray(SEED.read_bytes())
    at = _samples(data)
    times = [struct.unpack_from("<Q", data, p + TIME_AT)[0] for p in at]
    assert len(at) == 25 and max(times) - min(times) < 10**9
    struct.pack_into(
        "<Q", data, at[5] + TIME_AT, 0 if when == "zero" else max(times) + 3600 * 10**9
    )
    damaged = tmp_path / "outlier.data"
    damaged.write_bytes(data)
    proc = schedwake_info(damaged)
    assert proc.returncode == 0, proc.stderr
    side = "before" if when == "zero" else "after"
    assert f"1 sample (1 sched_waking) far {side} all the others" in proc.stdout
    assert "duration:  0.02" in proc.stdout, proc.stdout
    exe = Path(sys.executable).with_name("schedwake")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "schedwake.cli"]
    run = subprocess.run(
        cmd + ["analyze", str(damaged)], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
