"""analyze --html on the bundled traces that show little: a CPU without events
(missing-cpu), CPUs whose busy share the trace does not show (idle-sleep,
instance-buffer: the busy share is None there), lost events. Each crashed the report
(a TypeError in the busy-share plot, an IndexError in the timeline's aggregate) while
the HTML tests used the kstack trace only."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parent.parent / "sample_traces"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["missing-cpu", "idle-sleep", "instance-buffer", "lost-events"])
def test_analyze_html_of_a_trace_that_shows_little(name, tmp_path):
    out = tmp_path / f"{name}.html"
    proc = subprocess.run(
        [sys.executable, "-m", "schedwake.cli", "analyze", str(SAMPLES / f"{name}.dat"),
         "--html", str(out)],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") or page.lstrip().lower().startswith("<!doctype")
    assert "busy share" in page
