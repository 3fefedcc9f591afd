"""Command line: a thin click layer over the Python API.

Every command parses its arguments, calls the API and prints. Input the API
rejects (``TraceError``) becomes one line on stderr and exit code 2; so does an option
value out of range (``OptionError``, or click's own usage errors), in click's style:
``Error: --window 1e-09: a window must be at least 1 us (...)``.
"""

from __future__ import annotations

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
    cli.main(args=argv, prog_name="schedwake")


__all__ = ["OPTION_OF", "cli", "main", "option_error_line"]
