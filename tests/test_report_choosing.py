"""What the reports choose to show, apart from how they write it: the pure functions
behind report/analyze.py's text and Markdown, fed hand-made inputs (no trace)."""

from __future__ import annotations

from schedwake.detect import Finding
from schedwake.report.analyze import (
    STATE_COLS,
    MetricRow,
    finding_view,
    metric_rows,
    task_state_rows,
)


def _gap() -> dict:
    return {
        "at": 2.5,
        "us": 1500.0,
        "idle_cpus": [2, 3],
        "waiting": [
            {"pid": 9, "comm": "w", "cpu": 1, "waited_us": 1500.0, "behind_pid": 4,
             "behind_comm": "hog"},
        ],
    }  # fmt: skip


def test_a_finding_shows_its_gap_then_its_key_metrics_in_shown_order():
    f = Finding(
        "idle_while_runnable",
        "medium",
        "a CPU idle while a task waited",
        {
            "pinned_tasks_excluded": 2,  # (key metrics in another order than SHOWN's)
            "share": 0.25,
            "idle_while_runnable_s": 0.5,
            "not_a_key_metric": 7,
            "longest_gap": _gap(),
        },
        top=[{"comm": f"t{i}", "waited_s": i} for i in range(7)],
        evidence=["line 1", "line 2"],
    )
    v = finding_view(3, f)
    assert (v.number, v.severity, v.detector) == (3, "MEDIUM", "idle_while_runnable")
    assert v.facts == [
        "longest gap: at 2.500000, for 1.500 ms, CPU(s) 2, 3 idle while w (pid 9) waited on "
        "CPU 1 behind hog (pid 4)",
        "idle_while_runnable_s: 0.5",
        "share: 0.25",
        "pinned_tasks_excluded: 2",
    ]  # longest_gap_us, a key metric the finding lacks, is left out
    assert v.top == [f"comm=t{i}, waited_s={i}" for i in range(5)]  # the first five
    assert v.evidence == ["line 1", "line 2"]


def test_a_finding_of_a_detector_no_longer_registered_shows_no_facts():
    f = Finding("gone_detector", "low", "old", {"x": 1.0, "longest_gap": _gap()})
    v = finding_view(1, f)
    assert v.facts == [] and v.top == [] and v.evidence == []


def test_metric_rows_choose_the_note_of_each_metric():
    metrics = {
        "wakeups": 370,
        "bench_fio_write_iops": 19563.9,
        "busy_share": {"0": 0.5, "1": None},
        "wake_to_run_p50_us": None,
        "context_switches_per_s": 370.5,
        "migrations_per_s": 12.0,
        "bench": {"bench_fio_write_iops": {"unit": "IOPS", "direction": "higher",
                                           "source": "/x/run8.fio.json"}},
    }  # fmt: skip
    bounds = {
        "wake_to_run_p50_us": (10.94, 19.71),  # withheld: between the bounds
        "context_switches_per_s": (370.5, None),  # a lower bound only
        "migrations_per_s": (11.5, 12.5),  # shown, with its bounds
    }
    rows = metric_rows(metrics, bounds)
    assert [r.name for r in rows] == [k for k in metrics if k != "bench"]
    by = {r.name: r for r in rows}
    assert by["bench_fio_write_iops"] == MetricRow(
        "bench_fio_write_iops", 19563.9, "bench", " IOPS (higher is better; from run8.fio.json)"
    )
    assert by["busy_share"].kind == "busy"
    assert by["busy_share"].note == " (?: withheld, see the caveats)"
    assert by["wake_to_run_p50_us"].note == "  (withheld: between 10.94 and 19.71)"
    assert by["context_switches_per_s"].note == "  (at least)"
    assert by["migrations_per_s"].note == "  (11.5 to 12.5)"
    assert by["wakeups"] == MetricRow("wakeups", 370, "value", "")  # no bounds: no note


def test_busy_shares_all_known_or_none_at_all():
    rows = metric_rows({"busy_share": {"0": 0.5}}, {})
    assert rows == [MetricRow("busy_share", {"0": 0.5}, "busy", "")]
    # no CPU at all: an ordinary value, not a table
    assert metric_rows({"busy_share": {}}, {})[0].kind == "value"


def _state(**kw) -> dict:
    row = {k: 0.0 for k, _ in STATE_COLS} | {"runnable_s": 0.0}
    return row | kw


def test_task_state_rows_per_class_or_per_task():
    ts = {
        "classes": [
            _state(**{"class": "user", "tasks": 3, "running_s": 3.0, "runnable_s": 1.0}),
            _state(**{"class": "kthread", "tasks": 1}),  # neither ran nor waited
        ],
        "tasks": [_state(comm="a", pid=7, running_s=1.0, runnable_s=1.0, sleeping_s=2.5)],
    }
    by_class = task_state_rows(ts, focus=False)
    assert not by_class.focus
    assert [(label, share) for label, _, share in by_class.rows] == [
        ("user (3 tasks)", "25.0"),  # 1 / (3 + 1)
        ("kthread (1 tasks)", "-"),
    ]
    (row,) = task_state_rows(ts, focus=True).rows
    label, vals, share = row
    assert (label, share) == ("a (7)", "50.0")
    assert vals == [0.0, 1.0, 0.0, 0.0, 2.5, 0.0, 0.0]  # in STATE_COLS order
