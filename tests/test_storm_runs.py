"""The context-switch storm over several real runs, and its rates in compare and gate.

``sample_traces/storm/`` (README.md there: "storm/"): fio pinned to CPU 1 of the 2-CPU host
(Linux 6.18), in the root cgroup and in a child cgroup with 10x the CPU weight, recorded
interleaved while other work kept the machine busy. Every weighted run is a storm (high),
no root run is; the storm's rates (``storm_kworker_preemptions_per_s``,
``storm_preempted_share``, ``futile_wakeups_per_s``) are starred by ``compare`` and break
gate rules on the weighted side. ``weighted/run3.dat`` holds a dio-completion kworker that
also ran vsock work: judged per kworker it was diluted below the preempted share, judged
per (kworker, work function) it is one of the storm's.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import schedwake
from schedwake.analysis.metrics import trace_metrics
from schedwake.detect import detect, thresholds
from schedwake.detect.cswitch_storm import (
    pair_table,
    unit_counts,
    unit_table,
    units,
    work_functions,
)
from schedwake.gate import parse_rules
from schedwake.model import MODEL_EVENTS
from schedwake.report import compare as compare_report

from . import reference_impl
from .conftest import sample
from .test_detect import storm_counts

ROOT = [sample(f"storm/root/run{i}.dat") for i in (8, 9, 10)]
WEIGHTED = [sample(f"storm/weighted/run{i}.dat") for i in (3, 8, 9, 10)]
STORM_METRICS = ("storm_kworker_preemptions_per_s", "storm_preempted_share", "futile_wakeups_per_s")


@pytest.fixture(scope="module")
def traces():
    return {p: schedwake.load(p, events=list(MODEL_EVENTS)) for p in ROOT + WEIGHTED}


def storm_of(trace):
    return {f.detector: f for f in detect(trace)}.get("cswitch_storm")


@pytest.mark.parametrize("path", WEIGHTED, ids=lambda p: p.name)
@pytest.mark.slow
def test_every_weighted_run_is_a_storm_of_fio_on_cpu_1(traces, path):
    st = storm_of(traces[path])
    assert st is not None and st.severity == "high"
    m = st.metrics
    assert m["task"]["comm"] == "fio" and m["cpu"] == 1
    assert m["preempted_share"] >= 0.9 and m["cpu_share"] >= 0.07
    assert m["kworker_preemptions"] >= 2000


@pytest.mark.parametrize("path", ROOT, ids=lambda p: p.name)
def test_no_root_run_is_a_storm(traces, path):
    assert storm_of(traces[path]) is None


def test_a_kworker_that_also_runs_other_work_is_judged_per_work_function(traces):
    """kworker/1:N pid 20102 of weighted/run3: fio preempted it at 463 of its 480
    switch-outs after iomap_dio_complete_work, none of its 276 after vsock work: 61% of
    all its switch-outs (under storm_min_preempted_share), 96% of the dio work's."""
    t = traces[WEIGHTED[0]]
    u = unit_table(t.model, thresholds())
    fns = work_functions(t.model)
    mine = u[(u["kw"] == 20102) & (u["cpu"] == 1)]
    dio = mine[[fns[k] == "iomap_dio_complete_work" for k in mine["fn"]]]
    dio = dio.sort_values("pre").iloc[-1]  # (the fio job, not its parent)
    assert (dio["pre"], dio["outs"], bool(dio["storm"])) == (463, 480, True)
    s = t.model.events.switch
    all_outs = int(((s["prev_pid"] == 20102) & (s["cpu"] == 1)).sum())
    by_fio = int(mine.loc[mine["pid"] == dio["pid"], "pre"].sum())
    assert all_outs == 757 and by_fio < thresholds()["storm_min_preempted_share"] * all_outs
    fio = pair_table(t.model, thresholds()).set_index(["cpu", "pid"]).loc[(1, int(dio["pid"]))]
    assert fio["storm_kworkers"] == 4 and fio["kworker_preemptions"] == 3299


@pytest.mark.parametrize("path", [ROOT[0], WEIGHTED[0]], ids=lambda p: p.name)
def test_the_unit_table_counts_every_switch_out_of_its_kworkers(traces, path):
    """unit_table groups the switch-outs of the preempted kworkers alone: each unit's
    ``outs`` is what counting every switch-out of the trace gives it."""
    m = traces[path].model
    u = unit_table(m, thresholds())
    every = units(*unit_counts(m), thresholds())
    assert len(u) == len(every) > 0
    assert (u["outs"].to_numpy() == every["outs"].to_numpy()).all()
    assert (u["storm"].to_numpy() == every["storm"].to_numpy()).all()


@pytest.mark.slow
def test_the_storm_counts_agree_with_the_reference_walk(traces):
    """The per-(CPU, task) counts, (kworker, work function) units included, recounted
    event by event (tests/reference_impl.py)."""
    t = traces[WEIGHTED[0]]
    ref = reference_impl.walk(t)["storm"]
    assert storm_counts(t) == ref


@pytest.mark.slow
def test_the_storm_metrics_of_a_trace(traces):
    """storm_kworker_preemptions_per_s is the finding's preemptions of storm kworkers
    per second; the share is weighted by preemptions, so a unit preempted a few times
    does not move it: 93-95% weighted, 38-78% in the root cgroup."""
    for p in WEIGHTED:
        t = traces[p]
        m = trace_metrics(t)
        st = storm_of(t).metrics
        fio = pair_table(t.model, thresholds())
        fio = fio[fio["pid"] == st["task"]["pid"]]
        want = int(fio["kworker_preemptions"].sum()) / (t.model.duration_ns / 1e9)
        assert m["storm_kworker_preemptions_per_s"] >= want * 0.99
        assert 0.9 <= m["storm_preempted_share"] <= 1
    root = [trace_metrics(traces[p]) for p in ROOT]
    assert [round(m["storm_kworker_preemptions_per_s"]) for m in root] == [0, 0, 184]
    assert all(0.3 < m["storm_preempted_share"] < 0.8 for m in root)


def test_the_storm_metrics_per_window_add_up(traces):
    from schedwake.analysis.metrics import window_metrics

    t = traces[WEIGHTED[1]]
    w = window_metrics(t, 0.5)
    lens = (w["end_ns"] - w["start_ns"]).to_numpy() / 1e9
    total = float((w["storm_kworker_preemptions_per_s"] * lens).sum())
    whole = trace_metrics(t)["storm_kworker_preemptions_per_s"] * t.model.duration_ns / 1e9
    assert total == pytest.approx(whole, abs=1.5)
    share = w["storm_preempted_share"].to_numpy()
    assert ((share >= 0) & (share <= 1)).all() and np.nanmax(share) > 0.9
    # each window's share is the trace formula over that window's events
    from schedwake.detect.cswitch_storm import storm_measure, weighted_preempted_share

    sm = storm_measure(t.model, thresholds())
    for k, (a, b) in enumerate(zip(w["start_ns"], w["end_ns"])):
        p = (sm["preemption_ts"] >= a) & (sm["preemption_ts"] < b)
        o = (sm["switchout_ts"] >= a) & (sm["switchout_ts"] < b)
        want = weighted_preempted_share(sm["preemption_unit"][p], sm["switchout_unit"][o])
        assert share[k] == pytest.approx(0.0 if want is None else want, abs=1e-12)


def test_compare_stars_the_storm_rates(traces):
    res = schedwake.compare({"root": [traces[p] for p in ROOT],
                             "weighted": [traces[p] for p in WEIGHTED]})  # fmt: skip
    rows = {(r["metric"], r["stat"], r["side"]): r for r in compare_report.to_dict(res)["rows"]}
    for name in STORM_METRICS:
        base, new = rows[(name, "Amean", "root")], rows[(name, "Amean", "weighted")]
        assert new["value"] > 1.2 * base["value"], name
        assert new["significant"] is True and new["pct"] < 0, name  # worse, significantly
    assert "storm_kworker_preemptions_per_s" in compare_report.text(res)


RULES = """
[rules.storm_kworker_preemptions_per_s]
allowed = "50%"

[rules.storm_preempted_share]
allowed = 10

[rules.futile_wakeups_per_s]
allowed = "50%"
"""


@pytest.mark.slow
def test_a_gate_rule_on_the_storm_fails_the_weighted_side(traces):
    rules = parse_rules(RULES)
    root, weighted = [traces[p] for p in ROOT], [traces[p] for p in WEIGHTED]
    res = schedwake.gate(root, weighted, rules=rules)
    assert res.exit_code == 1
    broken = {r.rule.metric: r for r in res.results if r.status == "broken"}
    assert set(broken) == set(STORM_METRICS)
    assert all(r.significant for r in broken.values())
    assert any("cswitch_storm (high)" in line for line in broken["futile_wakeups_per_s"].why)
    # the other way round (the storm gone) passes
    assert schedwake.gate(weighted, root, rules=rules).exit_code == 0


def test_a_trace_without_kworker_preemptions_has_no_storm_share():
    m = trace_metrics(schedwake.load(sample("idle-sleep.dat")))
    assert m["storm_kworker_preemptions_per_s"] == 0 and m["storm_preempted_share"] is None
    assert not math.isnan(m["futile_wakeups_per_s"])
