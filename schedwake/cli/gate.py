"""``schedwake gate``: CI gate: judge candidate traces against baseline ones."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import TraceError
from . import common
from .common import progress_bar, write_text
from .options import (
    TracesOption,
    from_batch_options,
    input_format_option,
    open_dataset,
    parse_thresholds,
    reader_options,
    threshold_option,
    topology_options,
)


@click.command(short_help="CI gate: judge candidate traces against baseline ones.")
@click.option(
    "--baseline",
    cls=TracesOption,
    multiple=True,
    metavar="TRACE...",
    help="Baseline trace(s): paths or quoted globs, one side (its iterations).",
)
@click.option(
    "--candidate",
    cls=TracesOption,
    multiple=True,
    metavar="TRACE...",
    help="Candidate trace(s) to judge against the baseline.",
)
@click.option(
    "--rules",
    "rules_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Rules TOML (default: the built-in rules; see --print-default-rules).",
)
@click.option(
    "--print-default-rules",
    is_flag=True,
    help="Print the default rules as a starting rules file and exit.",
)
@click.option(
    "--junit",
    "junit_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write JUnit XML here (one test case per rule).",
)
@click.option(
    "--markdown",
    "markdown_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write a Markdown report here (pull-request comment, job summary).",
)
@click.option(
    "--json",
    "json_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the verdict as JSON here.",
)
@click.option(
    "--work",
    "work_specs",
    multiple=True,
    metavar="N|bench|cpu|SIDE=...",
    help="The runs' work, for rules on counts per unit of work (context_switches_per_op): "
    "a number, bench, cpu, or baseline=... / candidate=...; repeatable.",
)
@click.option(
    "--samples",
    type=click.Choice(["auto", "per-trace", "runs", "per-window", "window"]),
    default=None,
    help="Override the rules' [gate] samples: per-window (window) judges windows of the "
    "runs as batch means (one baseline run then can be judged: this run differed, not a "
    "rerun would).",
)
@click.option(
    "--series",
    "series_dirs",
    cls=TracesOption,
    multiple=True,
    metavar="BUILD_DIR...",
    help="Judge the newest of these builds (in order) against the series before it "
    "(docs/series.md): fail when it starts a regression on a rule's metric.",
)
@from_batch_options
@topology_options
@threshold_option
@input_format_option
@reader_options
def gate(
    baseline,
    candidate,
    series_dirs,
    rules_file,
    print_default_rules,
    junit_file,
    markdown_file,
    json_file,
    work_specs,
    samples,
    from_batch,
    where,
    topology_file,
    llc,
    thresholds,
    input_format,
    reader,
    jobs,
    kallsyms,
):
    """Judge --candidate traces against --baseline traces under rules, for CI.

    Exit 0: every rule holds. Exit 1: a rule is broken (the candidate is worse than
    allowed, significantly). Exit 2: the input cannot be judged (unreadable, empty or
    too short a trace, lost events, events a rule needs missing): it fails closed.

    \b
    Example:
        schedwake gate --baseline base/*.dat --candidate new/*.dat --junit gate.xml
        schedwake gate --print-default-rules > gate.toml
        schedwake gate --series builds/v1 builds/v2 builds/v3 builds/new
    """
    from ..gate import DEFAULT_RULES_TOML
    from ..gate import gate as run_gate
    from ..model import MODEL_EVENTS
    from ..work import parse_work

    if print_default_rules:
        click.echo(DEFAULT_RULES_TOML, nl=False)
        return
    th = parse_thresholds(thresholds)
    if series_dirs:
        given = {"--baseline": baseline, "--candidate": candidate, "--from-batch": from_batch}
        given |= {"--junit": junit_file, "--markdown": markdown_file}
        return _gate_series(series_dirs, rules_file, json_file, th, topology_file, llc, given)
    dataset = open_dataset(from_batch, where, topology_file, llc)
    # missing sides are judged like unreadable ones: exit 2 with reports
    with progress_bar("measuring the traces") as bar:
        result = run_gate(
            list(baseline),
            list(candidate),
            rules_file,
            topology_file=topology_file,
            llc=llc,
            thresholds=th,
            loader=dataset.load
            if dataset
            else lambda p: common.load(p, list(MODEL_EVENTS), input_format, reader, jobs, kallsyms),
            expand=dataset.expand if dataset else None,
            progress=bar,
            kallsyms=kallsyms,
            work=parse_work(work_specs, ["baseline", "candidate"]) if work_specs else None,
            samples=samples,
        )
    from ..report import gate as gate_report

    click.echo(gate_report.text(result), nl=False)
    for path, render in (
        (junit_file, gate_report.junit),
        (markdown_file, gate_report.markdown),
        (json_file, gate_report.to_json),
    ):
        if path:  # missing parent directories are made, as pytest --junitxml does
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            write_text(path, render(result))
    if result.exit_code == 2:  # the same one-line reason as every command's bad input
        click.echo(f"schedwake gate: {gate_report.headline(result)}", err=True)
    if result.exit_code:
        sys.exit(result.exit_code)


def _gate_series(builds, rules_file, json_file, th, topology_file, llc, given: dict):
    """``gate --series``: the newest build judged against the series before it
    (``given``: the options of the two-sided gate, refused beside it)."""
    from ..report import series as series_report
    from ..series import gate_series

    mixed = [option for option, value in given.items() if value]
    if mixed:
        raise TraceError(
            mixed[0], "does not apply to gate --series (a series judges its newest build; --json)"
        )

    with progress_bar("measuring the builds") as bar:
        result = gate_series(
            list(builds),
            rules_file,
            thresholds=th,
            topology_file=topology_file,
            llc=llc,
            progress=bar,
        )
    click.echo(series_report.gate_text(result), nl=False)
    if json_file:
        Path(json_file).parent.mkdir(parents=True, exist_ok=True)
        write_text(json_file, series_report.gate_json(result))
    if result.exit_code == 2:
        click.echo(f"schedwake gate: {series_report.headline(result)}", err=True)
    if result.exit_code:
        sys.exit(result.exit_code)
