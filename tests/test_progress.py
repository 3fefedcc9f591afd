"""Long phases show progress on a terminal (stderr a tty), and nothing in a CI log."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import run_cli, sample
from .test_analysis_html import analyze_html
from .test_html_report import compare_html

# Small real traces: every phase shows its bar on a terminal whatever the trace's size
# (a bar appears at a phase's first update and ends at 100%), so a 2-second trace
# shows what a long one does.
IDLE = sample("idle-sleep.dat")  # 2 CPUs, 2 s
A = sample("iterations/dbench-xfs-1c-i1.dat")  # 2 CPUs, 1 s
B = sample("iterations/dbench-xfs-1c-i2.dat")


def on_a_terminal(*args) -> str:
    """stderr of ``schedwake ARGS`` written to a pseudo-terminal."""
    exe = Path(sys.executable).with_name("schedwake")
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [str(exe), *map(str, args)],
        stdout=subprocess.DEVNULL,
        stderr=slave,
        stdin=subprocess.DEVNULL,
        env=dict(os.environ, COLUMNS="100"),
    )
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=120)
    os.close(master)
    assert proc.returncode in (0, 1), out[-2000:]
    return out.decode(errors="replace")


def piped_analyze(tmp):
    """``analyze --html`` with stderr not a terminal: the suite's own in-process run of it
    (tests/test_analysis_html.py, once per test run, stderr captured at the file
    descriptor), rather than a second run of the analysis and its figures here."""
    path, proc = analyze_html()
    return proc, ["reading ", "analysing ", f"writing {path.name}"]


def piped_compare(tmp):
    """``compare --html``, stderr not a terminal: tests/test_html_report.py's run."""
    path, proc = compare_html()
    return proc, ["reading ", "measuring the traces", f"writing {path.name}"]


def piped(args):
    """``schedwake ARGS(tmp)`` in this process, stderr captured at the file descriptor
    (not a terminal), so that a bar written to fd 2 or to sys.stderr would be seen."""
    return lambda tmp: (run_cli(*args(tmp)), None)


# (complete traces, two baseline runs: a gate judges one candidate run against them)
KA = sample("kstack-6.1/k61-dbench-c2-kstack-on-i1.dat")
KB = sample("kstack-6.1/k61-dbench-c2-kstack-on-i2.dat")
KC = sample("kstack-6.1/k61-dbench-c2-kstack-on-i3.dat")
GATE = lambda tmp: ("gate", "--baseline", KA, KB, "--candidate", KC)  # noqa: E731


@pytest.mark.parametrize(
    "args, labels, not_a_terminal",
    [
        (
            lambda tmp: ("analyze", IDLE, "--html", tmp / "r.html"),
            ["reading ", "analysing ", "writing r.html"],
            piped_analyze,
        ),
        (lambda tmp: ("compare", A, B), ["reading ", "measuring the traces"], piped_compare),
        (GATE, ["reading ", "measuring the traces"], piped(GATE)),
    ],
    ids=["analyze", "compare", "gate"],
)
@pytest.mark.slow
def test_phases_show_on_a_terminal_only(args, labels, not_a_terminal, tmp_path):
    shown = on_a_terminal(*args(tmp_path))
    for label in labels:
        assert label in shown, (label, shown[-1500:])
    assert "100%" in shown
    # the same subcommand, stderr not a terminal (as in a CI log): no bar, no label
    proc, labels_there = not_a_terminal(tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    assert not any(label in proc.stderr for label in labels_there or labels)
