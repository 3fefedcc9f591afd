"""Command line: a thin click layer over the Python API.

Every command parses its arguments, calls the API and prints. Input the API
rejects (``TraceError``) becomes one line on stderr and exit code 2.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path

import click

from . import TraceError, load
from .ingest import FORMATS
from .report import info as info_report


@contextmanager
def _progress(label: str):
    """A progress bar on a terminal for work that takes more than a moment."""
    if not sys.stderr.isatty():
        yield None
        return
    with click.progressbar(length=1000, label=label, file=sys.stderr,
                           show_eta=False, show_percent=True) as bar:
        state = {"done": 0}

        def update(fraction: float) -> None:
            step = int(max(0.0, min(1.0, fraction)) * 1000)
            if step > state["done"]:
                bar.update(step - state["done"])
                state["done"] = step

        yield update
        update(1.0)


def _load(path: str, events=None, input_format: str | None = None):
    with _progress(f"reading {Path(path).name}") as progress:
        return load(path, events=events, input_format=input_format, progress=progress)


input_format_option = click.option(
    "--input-format", type=click.Choice(FORMATS), default=None,
    help="Skip format sniffing and read the file as this format.")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="schedwake")
def cli():
    """Find scheduler wake-up pathologies in kernel traces."""


@cli.command()
@click.argument("trace", type=click.Path(dir_okay=True))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Output format.")
@input_format_option
def info(trace, fmt, input_format):
    """Per-event counts, CPUs, duration, clock and lost events of TRACE."""
    t = _load(trace, events=[], input_format=input_format)
    summary = info_report.summary(t)
    if fmt == "json":
        click.echo(json.dumps(summary, indent=2))
    else:
        click.echo(info_report.text(summary), nl=False)


@cli.command()
@click.argument("trace", type=click.Path(dir_okay=True))
@click.option("-o", "--output", "outdir", required=True, type=click.Path(file_okay=False),
              help="Directory for one Parquet file per event plus metadata.json.")
@click.option("--events", default=None,
              help="Comma-separated event names to convert (default: all).")
@input_format_option
def convert(trace, outdir, events, input_format):
    """Write TRACE's event tables as Parquet files (one per event) in a directory."""
    from .report.parquet import convert as convert_to_parquet

    names = [e.strip() for e in events.split(",") if e.strip()] if events else None
    with _progress(f"converting {Path(trace).name}") as progress:
        written = convert_to_parquet(trace, outdir, events=names, input_format=input_format,
                                     progress=progress)
    click.echo(f"wrote {len(written)} tables to {outdir}")


def topology_options(f):
    """--topology FILE / --llc CPULIST (repeatable) of every analysing command."""
    f = click.option("--llc", "llc", multiple=True, metavar="CPULIST",
                     help="CPUs of one LLC in kernel cpulist syntax (0-3,8-11); "
                          "repeat once per LLC.")(f)
    f = click.option("--topology", "topology_file", type=click.Path(dir_okay=False),
                     default=None, help="Topology JSON (from `schedwake topology`). "
                     "Default: TRACE.topology.json beside the trace, else one LLC.")(f)
    return f


@cli.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the JSON here instead of printing it.")
@click.option("--sysfs", default="/sys", show_default=True, hidden=True)
def topology(output, sysfs):
    """Capture this machine's CPU map (SMT, LLC, NUMA) from sysfs as JSON."""
    from .topology import Topology

    text = Topology.capture(sysfs).to_json()
    if output:
        Path(output).write_text(text + "\n")
        click.echo(f"wrote {output}")
    else:
        click.echo(text)


@cli.command()
@click.argument("trace", type=click.Path(dir_okay=True))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]),
              default="text", show_default=True, help="Output format.")
@topology_options
@click.option("--threshold", "thresholds", multiple=True, metavar="NAME=VALUE",
              help="Override a detector threshold (see docs/detectors.md); repeatable.")
@input_format_option
def analyze(trace, fmt, topology_file, llc, thresholds, input_format):
    """Find wake-up pathologies in TRACE: findings with evidence, and metrics."""
    from .detect import parse_threshold_options
    from .model import MODEL_EVENTS
    from .report import analyze as report

    th = parse_threshold_options(thresholds)
    t = _load(trace, events=list(MODEL_EVENTS), input_format=input_format)
    t.use_topology(topology_file, llc)
    findings, metrics = report.run(t, th)
    if fmt == "json":
        click.echo(report.to_json(t, findings, metrics))
    elif fmt == "markdown":
        click.echo(report.markdown(t, findings, metrics), nl=False)
    else:
        click.echo(report.text(t, findings, metrics), nl=False)


def main(argv=None):
    """Entry point of the ``schedwake`` console script."""
    try:
        cli.main(args=argv, prog_name="schedwake", standalone_mode=False)
    except TraceError as exc:
        click.echo(f"schedwake: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("schedwake: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("schedwake: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except OSError as exc:
        click.echo(f"schedwake: {exc.filename or ''}: {exc.strerror or exc}", err=True)
        sys.exit(2)
    except MemoryError:
        click.echo("schedwake: out of memory", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
