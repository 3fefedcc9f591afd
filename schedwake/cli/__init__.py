"""Command line: a thin click layer over the Python API.

Every command parses its arguments, calls the API and prints. Input the API
rejects (``TraceError``) becomes one line on stderr and exit code 2; so does an option
value out of range (``OptionError``, or click's own usage errors), in click's style:
``Error: --window 1e-09: a window must be at least 1 us (...)``.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading

import click

from . import (
    analyze,
    batch,
    compare,
    convert,
    gate,
    info,
    latency,
    profile,
    record,
    series,
    topology,
)
from .common import OPTION_OF, Commands, option_error_line


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="schedwake")
def cli():
    """Find scheduler wake-up pathologies in kernel traces."""


for _command in (
    info.info,
    convert.convert,
    topology.topology,
    analyze.analyze,
    latency.latency,
    profile.profile,
    compare.compare,
    gate.gate,
    series.series,
    batch.batch,
    record.record,
):
    cli.add_command(_command)


def main(argv=None):
    """Entry point of the ``schedwake`` console script."""
    try:
        cli.main(args=argv, prog_name="schedwake")
    except SystemExit as exc:
        if argv is None and exc.code in (0, None):  # the console script, done
            _end_process()
        raise


def _end_process() -> None:
    """End the console script's process once its command is done and its output
    written: the ``atexit`` handlers run, then the process exits with code 0 without the
    interpreter's teardown, which would free what the command built one object at a time
    (0.1-0.3 s after ``analyze`` of a million events: docs/performance.md). Left to the
    interpreter while another thread runs, under a profiler or a tracer (their results
    are written at the end), or when the output cannot be flushed (the interpreter says
    so)."""
    if threading.active_count() > 1 or sys.getprofile() is not None or sys.gettrace():
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    atexit._run_exitfuncs()
    try:  # (what the handlers wrote)
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(0)


__all__ = ["OPTION_OF", "cli", "main", "option_error_line"]
