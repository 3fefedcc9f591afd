"""The analyze process's memory settings (cli.common): transparent huge pages off, and
glibc keeping freed memory for the next arrays. Each checked in a fresh interpreter by
what the kernel reports, not by the calls' return values alone."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

# RSS (pages) after 200 MB of arrays is freed again, with or without the setting
_FREED = r"""
import sys
import numpy as np
from schedwake.cli.common import keep_freed_memory
took = keep_freed_memory() if sys.argv[1] == "keep" else None
def rss():
    return int(open("/proc/self/statm").read().split()[1])
before = rss()
a = np.ones(200 << 20, dtype=np.uint8)
del a
print(took, rss() - before)
"""


def _freed(mode: str) -> tuple[str, int]:
    out = subprocess.run(
        [sys.executable, "-c", _FREED, mode], check=True, capture_output=True, text=True
    ).stdout.split()
    return out[0], int(out[1])


def test_keep_freed_memory_keeps_a_freed_array_mapped() -> None:
    took, kept = _freed("keep")
    if took != "True":
        pytest.skip("not glibc: mallopt is not there")
    _, given_back = _freed("default")
    pages = (200 << 20) // 4096
    assert kept >= 0.9 * pages  # (the heap keeps them for the next array)
    assert given_back < 0.1 * pages  # (by default its own mapping, unmapped on free)


def test_no_huge_pages_turns_thp_off_for_the_process() -> None:
    code = (
        "from schedwake.cli.common import no_huge_pages\n"
        "no_huge_pages()\n"
        "print([l for l in open('/proc/self/status') if l.startswith('THP_enabled')])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    if "THP_enabled" not in out.stdout:
        pytest.skip("the kernel does not report THP_enabled")
    assert "THP_enabled:\\t0" in out.stdout
