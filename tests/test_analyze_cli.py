"""`schedwake analyze` end to end: JSON shape, text/Markdown, topology options, errors."""

from __future__ import annotations

import json
import shutil

import pytest

from schedwake import load as schedwake_load
from schedwake.report import analyze as analyze_report
from schedwake.summary import summary

from .conftest import computed_once, run_cli, sample

TOP_METRICS = {
    "migrations_per_s",
    "wakeup_migrations_per_s",
    "pingpong_episodes",
    "pingpong_episodes_per_s",
    "pingpong_would_stack",
    "pingpong_would_stack_per_s",
    "pingpong_would_stack_share",
    "context_switches_per_s",
    "load_balance_migrations_per_s",
    "cross_llc_migrations_per_s",
    "wakeup_migration_share",
    "cpus_visited_per_task",
    "futile_wakeups_per_s",
    "wake_to_run_p50_us",
    "wake_to_run_p90_us",
    "wake_to_run_p99_us",
    "idle_while_runnable_share",
    "busy_share",
}


@pytest.fixture(scope="module")
def fio_json():
    """``schedwake analyze fio-pinned-weighted.dat --format json``, run once per test run
    for the two tests that read it, on either worker (tests/conftest.py, computed_once)."""
    args = ("analyze", sample("fio-pinned-weighted.dat"), "--format", "json")
    return computed_once(
        "schedwake " + " ".join(map(str, args)),
        lambda: json.loads(run_cli(*args, check=True).stdout),
    )


@pytest.mark.slow
def test_json_shape(fio_json):
    import schedwake

    d = fio_json
    assert set(d) == {"trace", "caveats", "findings", "metrics", "metric_bounds", "task_states"}
    assert set(d["task_states"]) == {"tasks", "classes", "cpus"}
    facts = set(summary(schedwake.load(sample("idle-sleep.dat"), events=[])))
    assert set(d["trace"]) == facts | {
        "topology",
        "longest_wake_to_run",
        "longest_preempted_wait",
        "tail_waits",
    }
    longest = d["trace"]["longest_wake_to_run"]
    assert set(longest) - {"latency_min_us"} == {
        "latency_us", "pid", "comm", "cpu", "waker", "waker_pid", "woken_at", "ran_at", "breakdown",
        "llc_idle_us",
    }  # fmt: skip
    # the trace's completeness (fio-pinned-weighted is a recording of a 6.18 VM whose
    # CPU 1 loses idle -> task switches: docs/semantics.md, 'Incomplete traces')
    comp = d["trace"]["completeness"]
    assert comp["complete"] is False and comp["breaks"]["switch_chain"] > 100
    assert comp["cpus"]["1"]["switch_chain"] > comp["cpus"]["0"]["switch_chain"]
    assert sum(p["us"] for p in longest["breakdown"]) == pytest.approx(
        longest["latency_us"], abs=0.01
    )
    assert longest["latency_us"] == pytest.approx(
        (longest["ran_at"] - longest["woken_at"]) * 1e6, abs=2
    )
    assert d["trace"]["topology"]["source"] == "file"
    assert d["trace"]["topology"]["from"].endswith("fio-pinned-weighted.topology.json")
    assert TOP_METRICS <= set(d["metrics"])
    for f in d["findings"]:
        assert set(f) == {
            "detector",
            "severity",
            "title",
            "metrics",
            "top",
            "evidence",
            "evidence_events",
        }
        # the evidence as data: one record per line, the same event, CPU and time
        assert len(f["evidence_events"]) == len(f["evidence"])
        for line, ev in zip(f["evidence"], f["evidence_events"]):
            assert f"[{ev['cpu']:03d}] " in line and f" {ev['time']}: {ev['event']}:" in line
            assert f"{ev['comm'] if ev['pid'] else '<idle>'}-{ev['pid']}" in line
        assert all(ev["ts"] > 0 and isinstance(ev["fields"], dict) for ev in f["evidence_events"])
        assert f["severity"] in ("high", "medium", "low")
    st = next(f for f in d["findings"] if f["detector"] == "cswitch_storm")
    assert {"switches_per_s", "kworker_preemptions", "futile_wakeups"} <= set(st["metrics"])
    assert st["evidence"] and all(isinstance(x, str) for x in st["evidence"])


@pytest.mark.slow
def test_api_analysis_is_what_the_cli_prints(fio_json):
    """``schedwake.analyze(trace)`` is the call the CLI, notebooks and batch make: its
    ``to_dict()`` is the JSON document, its attributes the parts of it."""
    import schedwake
    from schedwake.analysis import Analysis
    from schedwake.jsonout import jsonable
    from schedwake.model import MODEL_EVENTS

    # the events the CLI reads (the evidence lines show every event loaded)
    trace = schedwake.load(sample("fio-pinned-weighted.dat"), events=list(MODEL_EVENTS))
    result = schedwake.analyze(trace)
    assert isinstance(result, Analysis)
    assert json.loads(analyze_report.to_json(result)) == fio_json
    # to_dict() is plain lists and dicts: the standard library's encoder takes it, and it
    # reads back as the document the CLI writes (NaN there is null)
    assert json.loads(json.dumps(jsonable(result.to_dict()))) == fio_json
    assert isinstance(json.dumps(result.to_dict()), str)
    assert isinstance(result.to_dict()["task_states"]["tasks"], list)
    assert result.topology["source"] == "file" and result.topology["llc"] == [[0, 1]]
    # the trace's caveats, then one per metric it gives only within bounds
    assert result.caveats == fio_json["caveats"]
    assert result.caveats[: len(trace.caveats)] == trace.caveats
    assert len(result.caveats) == len(trace.caveats) + len(result.bounds) > len(trace.caveats)
    assert fio_json["metric_bounds"] == result.bounds
    assert [f.detector for f in result.findings] == [f["detector"] for f in fio_json["findings"]]
    assert result.metrics["context_switches_per_s"] == pytest.approx(
        fio_json["metrics"]["context_switches_per_s"]
    )
    fewer = schedwake.analyze(trace, thresholds={"storm_min_preemptions": 1e9})
    assert "cswitch_storm" not in [f.detector for f in fewer.findings]
    assert fewer.thresholds["storm_min_preemptions"] == 1e9


def test_idle_sleep_text_no_findings():
    p = run_cli("analyze", sample("idle-sleep.dat"), check=True)
    assert "Findings (0)" in p.stdout and "none" in p.stdout
    assert "idle-sleep.topology.json" in p.stdout


@pytest.mark.slow
def test_dbench_markdown_and_finding_metrics():
    p = run_cli("analyze", sample("dbench-xfs-1client.dat"), "--format", "markdown", check=True)
    assert p.stdout.startswith("# schedwake analyze")
    assert "kworker_pingpong" in p.stdout and "```" in p.stdout
    d = json.loads(
        run_cli("analyze", sample("dbench-xfs-1client.dat"), "--format", "json", check=True).stdout
    )
    pp = next(f for f in d["findings"] if f["detector"] == "kworker_pingpong")
    assert {"episodes", "episodes_per_s", "share_of_wakeups", "would_stack"} <= set(pp["metrics"])
    assert pp["metrics"]["episodes"] == d["metrics"]["pingpong_episodes"] > 0


@pytest.mark.slow
def test_topology_options_inferred_and_assumed(tmp_path):
    import shutil

    lone = tmp_path / "lone.dat"
    shutil.copy(sample("idle-sleep.dat"), lone)
    p = run_cli("analyze", lone, check=True)
    # no topology file: the wake-up migrations show one LLC of both CPUs
    assert "topology:  1 LLC(s) [0-1] INFERRED from the trace: 14 wake-up migrations" in p.stdout
    doc = json.loads(run_cli("analyze", lone, "--format", "json", check=True).stdout)
    topo = doc["trace"]["topology"]
    assert (topo["source"], topo["llc"]) == ("inferred", [[0, 1]])
    assert topo["note"] == "14 wake-up migrations connect every CPU"
    # too little to infer from: one LLC assumed, and why
    cpu = tmp_path / "missing-cpu.dat"
    shutil.copy(sample("missing-cpu.dat"), cpu)
    p = run_cli("analyze", cpu, check=True)
    assert "ASSUMED one LLC" in p.stdout and "WARNING" in p.stdout
    assert "not inferred: no wake-up migration with the waker on the previous CPU" in p.stdout
    p = run_cli("analyze", lone, "--llc", "0", "--llc", "1", "--format", "json", check=True)
    assert json.loads(p.stdout)["metrics"]["cross_llc_migrations_per_s"] > 0
    topo = tmp_path / "t.json"
    topo.write_text('{"cpus": 2, "llc": [[0, 1]], "smt": [[0], [1]], "numa": [[0, 1]]}')
    p = run_cli("analyze", lone, "--topology", topo, check=True)
    assert "ASSUMED" not in p.stdout and str(topo) in p.stdout


@pytest.mark.parametrize(
    "args,msg",
    [
        (["--llc", "0-x"], "bad cpulist"),
        (["--llc", "0"], "the LLCs given leave CPU 1 of the trace's 2 CPUs out"),
        (["--threshold", "nope=1"], "unknown threshold"),
        (["--threshold", "pingpong_min_episodes"], "expected name=value"),
        (["--topology", "/nonexistent.json"], "no such topology file"),
    ],
)
def test_bad_options_one_line_exit_2(args, msg):
    p = run_cli("analyze", sample("idle-sleep.dat"), *args)
    assert p.returncode == 2 and msg in p.stderr and p.stderr.count("\n") == 1


@pytest.mark.slow
def test_threshold_option_changes_findings():
    p = run_cli(
        "analyze",
        sample("dbench-xfs-1client.dat"),
        "--format",
        "json",
        "--threshold",
        "pingpong_min_episodes=100000",
        check=True,
    )
    assert "kworker_pingpong" not in {f["detector"] for f in json.loads(p.stdout)["findings"]}


def test_missing_trace_exit_2(tmp_path):
    p = run_cli("analyze", tmp_path / "nope.dat")
    assert p.returncode == 2 and "no such file" in p.stderr


def test_raw_clock_ticks_are_refused_not_read_as_nanoseconds(tmp_path):
    """A real trace recorded with the `counter` clock: its timestamps are sequence
    numbers, so every rate and latency would be wrong; info still describes it."""
    trace = sample("counter-clock.txt.gz")
    # (the gate refuses one file on both sides before reading it: give it a copy)
    copy = tmp_path / "counter-clock-copy.txt.gz"
    shutil.copyfile(trace, copy)
    for args in (
        ["analyze", trace],
        ["compare", trace, trace, "--label", "a", "--label", "b"],
        ["gate", "--baseline", trace, "--candidate", copy],
    ):
        p = run_cli(*args)
        assert p.returncode == 2, (args, p.stdout)
        assert p.stderr.count("\n") == 1 and "raw ticks" in p.stderr, (args, p.stderr)
        assert "Traceback" not in p.stderr
    info = json.loads(run_cli("info", trace, "--format", "json", check=True).stdout)
    assert info["timestamps"] == "raw" and info["duration_s"] is None
    assert info["duration_ticks"] == info["last_ts_ns"] - info["first_ts_ns"] > 0


def test_trace_dat_timestamp_unit_follows_the_clock():
    from schedwake.ingest.tracedat import _timestamp_unit
    from schedwake.ingest.tracedat_layout import OPT_TSC2NSEC

    assert _timestamp_unit("local", set()) == _timestamp_unit("mono", set()) == "ns"
    assert _timestamp_unit("counter", set()) == _timestamp_unit("uptime", set()) == "raw"
    assert _timestamp_unit("x86-tsc", set()) == "raw"
    assert _timestamp_unit("x86-tsc", {OPT_TSC2NSEC}) == "ns"  # libtracecmd converts
    assert summary(schedwake_load(sample("idle-sleep.dat")))["timestamps"] == "ns"


def test_lost_events_caveat():
    p = run_cli("analyze", sample("lost-events.dat"), check=True)
    assert "lower bounds" in p.stdout


def test_traces_missing_switches_or_wakeups_say_so_and_do_not_crash(tmp_path):
    """A trace without sched_switch (or without wake-ups) is analysed as far as it can be."""
    from .conftest import run_cli

    head = "# tracer: nop\n#\n"
    no_switch = tmp_path / "no-switch.txt"
    no_switch.write_text(
        head
        + "".join(
            f"            bash-5       [000] d..2.   100.{i:06d}: sched_waking: "
            f"comm=foo pid=7 prio=120 target_cpu=000\n"
            for i in (1, 101)
        )
    )
    no_wakeup = tmp_path / "no-wakeup.txt"
    no_wakeup.write_text(
        head
        + (
            "          <idle>-0       [000] d..2.   100.000001: sched_switch: prev_comm=swapper/0 "
            "prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=bash next_pid=5 next_prio=120\n"
            "            bash-5       [000] d..2.   100.000101: sched_switch: prev_comm=bash "
            "prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 "
            "next_prio=120\n"
        )
    )
    proc = run_cli("analyze", no_switch)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "no sched_switch events" in proc.stdout
    for path in (no_switch, no_wakeup):
        out = run_cli("analyze", path, "--format", "json", check=True).stdout
        assert json.loads(out)["findings"] == []


def test_analyze_reports_its_phases():
    import schedwake

    """The phases after reading (model tables, detectors, metrics) report their progress:
    what `schedwake analyze` shows on a terminal."""
    seen = []
    schedwake.analyze(schedwake.load(sample("idle-sleep.dat")), progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) == 5
