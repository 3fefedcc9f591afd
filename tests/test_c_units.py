"""The C decoder's own unit tests (tests/c/tdcore_units.c): literal bytes of one event
format, one ring-buffer page and perf.data records, through the decoder's C interface,
and the integer arithmetic on a file's numbers (time offsets, parse_int at the edges of
int64), built with AddressSanitizer and UndefinedBehaviorSanitizer (clang, or gcc when
it has their runtimes; signed overflow included, and with clang the implicit
conversions that change a value) so that an out-of-bounds read or an overflow fails
the test."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "schedwake" / "ingest"
SANITIZE = [
    "-fsanitize=address,undefined,signed-integer-overflow,float-divide-by-zero",
    "-fno-sanitize-recover=all",
]
CLANG_ONLY = ["-fsanitize=implicit-conversion"]


def build(tmp_path: Path) -> Path:
    exe = tmp_path / "tdcore_units"
    sources = [str(ROOT / "tests" / "c" / "tdcore_units.c"), *map(str, sorted(SRC.glob("_td_*.c")))]
    for cc in ("clang", "gcc", "cc"):
        if shutil.which(cc) is None:
            continue
        for flags in ([*SANITIZE, *CLANG_ONLY] if cc == "clang" else SANITIZE, []):
            cmd = [cc, "-g", "-O1", "-std=gnu11", *flags, f"-I{SRC}", *sources]
            cmd += ["-lzstd", "-lz", "-lpthread", "-o", str(exe)]
            if subprocess.run(cmd, capture_output=True).returncode == 0:
                return exe
    pytest.fail("tests/c/tdcore_units.c does not build with clang, gcc or cc")


@pytest.mark.slow
def test_c_units(tmp_path):
    exe = build(tmp_path)
    proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    checks, failed = proc.stdout.split()[0], proc.stdout.split()[2]
    assert int(checks) >= 80 and failed == "0", proc.stdout
