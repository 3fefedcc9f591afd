"""One metric vocabulary: the identifiers of analyze's JSON are compare's rows, gate's
rule names and batch's columns; one sign convention; the would-stack what-if is a metric."""

from __future__ import annotations

import json
import math

import pytest

import schedwake
from schedwake.analysis.metrics import (
    CATALOGUE,
    FORMER_NAMES,
    canonical_name,
    catalogue_entry,
    metric_samples,
)
from schedwake.errors import TraceError
from schedwake.gate import parse_rules
from schedwake.report import gate as gate_report

from .conftest import run_cli, sample

STACK_OFF = sample("kstack-6.1/k61-dbench-c2-kstack-off-i1.dat")
STACK_ON = sample("kstack-6.1/k61-dbench-c2-kstack-on-i1.dat")
NAMES = [n.format(cpu=0) for n in CATALOGUE]


@pytest.fixture(scope="module")
def analyzed():
    proc = run_cli("analyze", STACK_OFF, "--format", "json", check=True)
    return json.loads(proc.stdout)


def test_every_compare_row_is_an_analyze_metric_with_the_same_value(analyzed):
    metrics = analyzed["metrics"]
    trace = schedwake.load(STACK_OFF)
    samples = metric_samples(trace)
    assert set(samples["metric"]) >= set(NAMES)
    for name in NAMES:
        entry = catalogue_entry(name)
        want = metrics["busy_share"]["0"] if name == "busy_share_cpu0" else metrics[entry.key]
        got = samples.loc[samples["metric"] == name, "value"].iloc[0]
        if want is None:  # (a share of nothing: the storm share without preemptions)
            assert math.isnan(got), name
            continue
        assert got == pytest.approx(want * entry.scale, rel=1e-5, abs=1e-9), name


def test_every_analyze_metric_is_a_gate_rule():
    for name in NAMES:
        _, rules = parse_rules(f'[rules.{name}]\nallowed = "10%"\n')
        assert rules[0].metric == name and rules[0].written_as is None


@pytest.mark.slow
def test_former_names_still_work_with_a_note_and_typos_get_a_suggestion():
    rules = parse_rules('[rules."pingpong_episodes/s"]\nallowed = "25%"\n')
    assert rules[1][0].metric == "pingpong_episodes_per_s"
    result = schedwake.gate([STACK_ON], [STACK_OFF], rules=rules)
    assert any("former name of pingpong_episodes_per_s" in n for n in gate_report.notes(result))
    assert canonical_name("wakeup_migration_share[%]") == "wakeup_migration_share"
    assert all(catalogue_entry(v) for v in FORMER_NAMES.values())

    with pytest.raises(TraceError, match="did you mean wakeup_migrations_per_s"):
        parse_rules('[rules.wakeup_migration_per_s]\nallowed = "10%"\n')
    proc = run_cli("compare", STACK_ON, STACK_OFF, "--metric", "pingpong_episode_per_s")
    assert proc.returncode == 2
    assert "did you mean pingpong_episodes_per_s" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    # the name the list gives a CPU's busy share is a template: CPU 0's is suggested
    with pytest.raises(KeyError, match="did you mean busy_share_cpu0[?]"):
        catalogue_entry("busy_share_cpuN")
    with pytest.raises(TraceError, match="two rules for pingpong_episodes_per_s"):
        parse_rules(
            '[rules."pingpong_episodes/s"]\nallowed = "25%"\n'
            '[rules.pingpong_episodes_per_s]\nallowed = "25%"\n'
        )


@pytest.mark.slow
def test_compare_and_gate_sign_a_regression_alike():
    """Losing the stacking fix multiplies ping-pong episodes: a negative gain in both."""
    # (one run a side: windows, asked for; the gate on the arithmetic means, as compare)
    comp = schedwake.compare(
        {"on": [STACK_ON], "off": [STACK_OFF]},
        metrics=["pingpong_episodes_per_s"],
        samples="per-window",
    )
    row = comp.summary()
    pct = row.loc[(row["side"] == "off") & (row["stat"] == "Amean"), "pct"].iloc[0]
    rules = parse_rules(
        '[gate]\nsamples = "per-window"\nscale = "raw"\n'
        '[rules.pingpong_episodes_per_s]\nallowed = "25%"\n'
    )
    result = schedwake.gate([STACK_ON], [STACK_OFF], rules=rules)
    gain = result.results[0].gain_pct
    assert pct < -100 and gain < -100
    assert pct == pytest.approx(gain, rel=1e-9)
    text = gate_report.text(result)
    assert "% = gain over the baseline as in mmtests" in text
    assert "alpha 0.05: the gate's default, stricter than compare's 0.10" in text


def test_would_stack_is_a_metric_whether_or_not_the_finding_fires(analyzed):
    """On 6.1 without the stacking clause nearly every episode would have stacked (the
    finding fires); with the clause, no remaining episode would (no finding)."""
    off = analyzed["metrics"]
    pp = [f for f in analyzed["findings"] if f["detector"] == "kworker_pingpong"]
    assert pp and off["pingpong_would_stack"] == pp[0]["metrics"]["would_stack"]
    assert off["pingpong_would_stack_share"] > 0.9
    on = json.loads(run_cli("analyze", STACK_ON, "--format", "json", check=True).stdout)
    assert not [f for f in on["findings"] if f["detector"] == "kworker_pingpong"]
    assert on["metrics"]["pingpong_episodes"] > 0
    assert on["metrics"]["pingpong_would_stack"] == 0
    assert on["metrics"]["pingpong_would_stack_share"] == 0.0
