"""``schedwake topology``: Capture this machine's CPU map (SMT, LLC, NUMA) as JSON."""

from __future__ import annotations

import click

from .common import write_text


@click.command(short_help="Capture this machine's CPU map (SMT, LLC, NUMA) as JSON.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the JSON here instead of printing it.",
)
@click.option("--sysfs", default="/sys", show_default=True, hidden=True)
def topology(output, sysfs):
    """Capture this machine's CPU map (SMT, LLC, NUMA) from sysfs as JSON.

    \b
    Example:
        schedwake topology -o trace.topology.json   # beside trace.dat: used by analyze
    """
    from ..topology import Topology

    text = Topology.capture(sysfs).to_json()
    if output:
        write_text(output, text + "\n")
        click.echo(f"wrote {output}")
    else:
        click.echo(text)
