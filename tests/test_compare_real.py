"""Validation of ``schedwake compare`` on real recordings of two configurations.

fio pinned to CPU 1 in the root cgroup vs. in a weighted child cgroup, and dbench with
1 vs. 2 clients (sample_traces/README.md). One trace per side, so the samples are
per-window values. For the main metrics -- context switches/s, migrations_per_s, futile
wake-ups/s -- the test recounts every window independently from the ``trace-cmd report
-N -t`` text of the same files (its own line parsing, its own windows, its own
wake/run/sleep tracking and its own Student t distribution) and checks that the values,
the direction of the change and the significance star agree with compare's JSON and
text.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from collections import defaultdict

import numpy as np
import pytest

from .conftest import (
    _text,
    computed_once,
    iteration_glob,
    iteration_names,
    run_cli,
    sample,
    trace_cmd_output,
)

pytestmark = pytest.mark.skipif(
    shutil.which("trace-cmd") is None, reason="trace-cmd is not installed (scripts/bootstrap.sh)"
)

PAIRS = [("fio-pinned-root", "fio-pinned-weighted"), ("dbench-xfs-1client", "dbench-xfs-2clients")]
ALPHA = 0.10

#: An event line of ``trace-cmd report -N -t`` of the three events: CPU, seconds,
#: nanoseconds, then the fields each event needs (the wakee of a waking; the prev/next
#: comm, pid and state of a switch), in one pass over the text
_LINE = re.compile(
    r"^.*?\[(\d+)\]\s+(\d+)\.(\d{9}):\s+(?:"
    r"(sched_migrate_task):.*"
    r"|(sched_waking):.* pid=(\d+) prio=\S+ target_cpu=\d+"
    r"|(sched_switch):\s+prev_comm=(.*) prev_pid=(\d+) prev_prio=\S+ prev_state=(\S+) "
    r"==> next_comm=(.*) next_pid=(\d+) next_prio=\S+"
    r")$",
    re.MULTILINE,
)
#: The events the count reads, and the only ones trace-cmd is asked to print (``-F``): the
#: workqueue and wakeup events the traces also hold would double its output and the parse
_EVENTS = ("sched_switch", "sched_waking", "sched_migrate_task")
_EDGE = re.compile(r"(First|Last) event:\s*(\d+)\.(\d{9})")


def independent_events(name: str):
    """(first_ts, last_ts, switch_ts, migrate_ts, futile_waking_ts) in ns, from the text
    (switch_ts: each switch, and once more each switch whose prev_pid is not the task the
    CPU's previous switch put on it: the switch missing before it)
    of ``trace-cmd report -N -t`` (nanosecond timestamps, kernel print formats): the
    span from its ``--first-event``/``--last-event`` (every event of the trace), the
    rest from its lines of the three events read (``-F``), one regex pass over the text.

    Made once per test run and per trace, and shared by the workers."""
    path = sample(name + ".dat")
    key = f"trace-cmd report -N -t -F {','.join(_EVENTS)} -i {path} | test_compare_real events"
    return computed_once(key, lambda: _events(path))


def _report(path, *args: str) -> str:
    return _text(trace_cmd_output(path, "-N", "-t", *args))


def _events(path):
    # the trace's span, over all its events: trace-cmd's first and last event of each CPU
    edges = [
        (kind, int(s) * 1_000_000_000 + int(ns))
        for kind, s, ns in _EDGE.findall(_report(path, "--first-event", "--last-event"))
    ]
    firsts = [ts for kind, ts in edges if kind == "First"]
    lasts = [ts for kind, ts in edges if kind == "Last"]
    assert firsts and len(firsts) == len(lasts), edges
    first, last = min(firsts), max(lasts)
    text = _report(path, "-F", ",".join(_EVENTS))
    switch, migrate, futile = [], [], []
    on_cpu: dict[int, bool] = defaultdict(bool)
    last_next: dict[int, int] = {}  # per CPU, the task its last switch put on it
    pending: dict[int, int] = {}  # pid -> ts of a waking not yet followed by a run
    # per CPU, kworker preemptions under way: [kworker, task, waking ts, left, asleep]
    cycles: dict[int, list] = defaultdict(list)
    lines = 0
    for m in _LINE.finditer(text):
        lines += 1
        cpu_s, sec, nsec, migrated, waking, pid_s, switched = m.group(1, 2, 3, 4, 5, 6, 7)
        ts = int(sec) * 1_000_000_000 + int(nsec)
        assert first <= ts <= last, ("an event outside the span", m.group(0))
        if migrated:
            migrate.append(ts)
        elif waking:
            pid = int(pid_s)
            if on_cpu[pid]:
                pending.pop(pid, None)  # woken while running: no wait to measure
            else:
                pending[pid] = ts  # a later waking supersedes an earlier one
        elif switched:
            switch.append(ts)
            pcomm, prev_s, state, ncomm, nxt_s = m.group(8, 9, 10, 11, 12)
            prev, nxt, cpu = int(prev_s), int(nxt_s), int(cpu_s)
            # a switch-out of another task than the CPU's previous switch put on it: a
            # switch the trace lacks happened before this one (counted once)
            if last_next.get(cpu, prev) != prev:
                switch.append(ts)
            last_next[cpu] = nxt
            # futile: a task that preempted a kworker sleeps again and the kworker gets
            # the CPU back before the task does
            keep = []
            for c in cycles[cpu]:
                if not c[3]:
                    if prev != c[1]:
                        continue  # the chain is broken (lost events)
                    c[3], c[4] = True, not state.startswith("R")
                if nxt == c[0]:
                    if c[4] and c[2] is not None:
                        futile.append(c[2])
                elif nxt != c[1]:
                    keep.append(c)
            cycles[cpu] = keep
            woke = pending.pop(nxt, None) if nxt != 0 else None
            kw = pcomm.startswith("kworker/")
            if kw and state == "R+" and nxt != 0 and not ncomm.startswith("kworker/"):
                cycles[cpu].append([prev, nxt, woke, False, False])
            if prev != 0:
                on_cpu[prev] = False
            if nxt != 0:
                on_cpu[nxt] = True
    # every line of an event was read (a line the pattern refused, or of another event,
    # would be missing from the matches)
    assert lines == text.count(": sched_") > 0, (lines, text.count(": sched_"))
    return (
        first,
        last,
        np.array(switch, np.int64),
        np.array(migrate, np.int64),
        np.array(sorted(futile), np.int64),
    )


def windows(first: int, last: int, window_s: float) -> np.ndarray:
    """Edges of consecutive windows from the first event; a last partial window is kept
    when it is at least half a window long (and always ends after the last event)."""
    w = int(round(window_s * 1e9))
    full, rem = divmod(last - first, w)
    if full == 0:
        return np.array([first, last + 1])
    edges = [first + k * w for k in range(full + 1)]
    if rem >= w / 2:
        edges.append(last + 1)
    return np.array(edges, np.int64)


def per_window_rate(ts: np.ndarray, edges: np.ndarray) -> np.ndarray:
    counts = np.array(
        [np.count_nonzero((ts >= a) & (ts < b)) for a, b in zip(edges[:-1], edges[1:])], dtype=float
    )
    return counts / (np.diff(edges) / 1e9)


def student_two_sided_p(t: float, df: int) -> float:
    """P(|T| >= t) by Simpson integration of the Student t density."""
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    n = 4000
    h = t / n
    f = [c * (1 + (i * h) ** 2 / df) ** (-(df + 1) / 2) for i in range(n + 1)]
    area = h / 3 * (f[0] + f[-1] + 4 * sum(f[1:-1:2]) + 2 * sum(f[2:-1:2]))
    return max(0.0, 1 - 2 * area)


def lkml_ttest(a: np.ndarray, b: np.ndarray) -> bool:
    se = math.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    if se == 0:
        return bool(a.mean() != b.mean())
    t = abs(a.mean() - b.mean()) / se
    return bool(student_two_sided_p(t, len(a) + len(b) - 2) < ALPHA)


def batch_means(x: np.ndarray) -> np.ndarray:
    k = min(30, max(2, math.isqrt(len(x))))
    return np.array([part.mean() for part in np.array_split(x, k)])


def compare_json(base: str, new: str):
    """compare's JSON for one pair: run once per test run and shared by the workers (three
    tests check the same document)."""
    args = (
        "compare",
        sample(base + ".dat"),
        sample(new + ".dat"),
        "--format",
        "json",
        "--samples",
        "window",
        "--metric",
        "context_switches_per_s",
        "--metric",
        "migrations_per_s",
        "--metric",
        "futile_wakeups_per_s",
    )
    key = "schedwake " + " ".join(map(str, args))
    return computed_once(key, lambda: json.loads(run_cli(*args, check=True).stdout))


def _row(doc, metric, stat, side):
    (r,) = [
        r for r in doc["rows"] if r["metric"] == metric and r["stat"] == stat and r["side"] == side
    ]
    return r


@pytest.mark.parametrize("base,new", PAIRS)
@pytest.mark.slow
def test_direction_and_significance_match_independent_counts(base, new):
    doc = compare_json(base, new)
    assert doc["samples"]["kind"] == "per-window"
    window = doc["samples"]["window_s"]
    assert window and f"window {window} s" in doc["rule_line"]
    labels = doc["labels"]
    assert labels == [base, new]
    checked_sig = []
    for metric, which, tol in (
        ("context_switches_per_s", 2, 0.0),
        ("migrations_per_s", 3, 0.0),
        ("futile_wakeups_per_s", 4, 0.001),
    ):
        samples = []
        for name in (base, new):
            ev = independent_events(name)
            edges = windows(ev[0], ev[1], window)
            samples.append(per_window_rate(ev[which], edges))
        b, n = samples
        mean_b = _row(doc, metric, "Amean", labels[0])
        mean_n = _row(doc, metric, "Amean", labels[1])
        # the same windows, the same values
        assert mean_b["n"] == len(b) and mean_n["n"] == len(n), metric
        assert mean_b["value"] == pytest.approx(b.mean(), rel=tol or 1e-9), metric
        assert mean_n["value"] == pytest.approx(n.mean(), rel=tol or 1e-9), metric
        # the direction: lower is better, so a higher mean is a negative percentage
        pct = 100 - 100 * n.mean() / b.mean()
        assert mean_n["pct"] == pytest.approx(pct, abs=max(0.05, 100 * tol)), metric
        assert np.sign(mean_n["pct"]) == np.sign(pct), metric
        # the significance star: the t-test of the windows' batch means (sqrt(n) batches
        # of consecutive windows, 2 to 30: windows of one run are autocorrelated)
        sig = lkml_ttest(batch_means(b), batch_means(n))
        assert mean_n["significant"] is sig, (metric, mean_n)
        assert mean_n["testable"] is True
        cell = f"{mean_n['value']:12.2f} " + (
            f"*{mean_n['pct']:7.2f}%*" if sig else f"({mean_n['pct']:7.2f}%)"
        )
        line = [ln for ln in doc["table"].splitlines() if ln.split()[:2] == ["Amean", metric]][0]
        assert line.endswith(cell), (line, cell)
        checked_sig.append(sig)
    # the comparison must not be trivially all-or-nothing across both pairs
    assert checked_sig


@pytest.mark.slow
def test_pairs_have_significant_and_insignificant_changes():
    """The validation covers both verdicts: at least one significant change and one
    that is not, among the metrics checked on the real pairs."""
    verdicts = set()
    for base, new in PAIRS:
        doc = compare_json(base, new)
        for metric in ("context_switches_per_s", "migrations_per_s", "futile_wakeups_per_s"):
            verdicts.add(_row(doc, metric, "Amean", new)["significant"])
    assert verdicts == {True, False}


def test_weighted_cgroup_switches_more_and_migrates_less():
    """What the README says of the fio pair, seen by compare: the weighted cgroup run
    has more context switches and futile wake-ups per second, fewer migrations."""
    doc = compare_json(*PAIRS[0])
    new = PAIRS[0][1]
    assert _row(doc, "context_switches_per_s", "Amean", new)["pct"] < 0
    assert _row(doc, "futile_wakeups_per_s", "Amean", new)["pct"] < 0
    mig = _row(doc, "migrations_per_s", "Amean", new)
    assert mig["pct"] > 50 and mig["significant"] is True


@pytest.mark.slow
def test_ci95_is_stricter_than_ttest():
    """The same real pair under --significance ci95: never more stars than the t-test."""
    base, new = PAIRS[1]
    proc = run_cli(
        "compare",
        sample(base + ".dat"),
        sample(new + ".dat"),
        "--format",
        "json",
        "--significance",
        "ci95",
        "--metric",
        "context_switches_per_s",
        "--metric",
        "migrations_per_s",
        "--metric",
        "futile_wakeups_per_s",
        check=True,
    )
    ci = json.loads(proc.stdout)
    tt = compare_json(base, new)
    assert "do not overlap" in ci["rule_line"]
    for metric in ("context_switches_per_s", "migrations_per_s", "futile_wakeups_per_s"):
        if _row(ci, metric, "Amean", new)["significant"]:
            assert _row(tt, metric, "Amean", new)["significant"]


# -- iterations: several traces a side, per-trace samples ----------------------------------------

#: (baseline, candidate, the metric that must be significantly worse on the candidate)
ITERATION_PAIRS = [
    ("c1", "c4", "context_switches_per_s"),  # 4 dbench clients on 2 CPUs
    ("on", "off", "migrations_per_s"),
]  # 6.1 without kthread stacking


@pytest.mark.parametrize("base,new,worse", ITERATION_PAIRS, ids=["dbench-1vs4", "kstack-6.1"])
@pytest.mark.slow
def test_iterations_per_trace_values_direction_and_significance(base, new, worse):
    """Three iterations a side: compare takes one value per trace (mmtests' own way), and
    each value, the Stddev, the direction and the star agree with the whole-trace rates
    counted independently from ``trace-cmd report``. The pairs: dbench 1 vs 4 clients on
    this host, and dbench 2 clients on an 8-CPU 6.1 guest with the select_idle_sibling()
    kthread-stacking clause on vs off (the real before/after pair)."""
    specs = []
    for side in (base, new):
        specs += ["--side", f"{side}={iteration_glob(side)}"]
    proc = run_cli(
        "compare",
        *specs,
        "--format",
        "json",
        "--metric",
        "context_switches_per_s",
        "--metric",
        "migrations_per_s",
        "--metric",
        "futile_wakeups_per_s",
        check=True,
    )
    doc = json.loads(proc.stdout)
    assert doc["samples"]["kind"] == "per-trace"
    assert "per-trace values, n=3/3" in doc["rule_line"]
    verdicts = {}
    for metric, which, tol in (
        ("context_switches_per_s", 2, 1e-9),
        ("migrations_per_s", 3, 1e-9),
        ("futile_wakeups_per_s", 4, 0.002),
    ):
        samples = []
        for side in (base, new):
            rates = []
            for name in iteration_names(side):
                ev = independent_events(name)
                rates.append(len(ev[which]) / ((ev[1] - ev[0]) / 1e9))
            samples.append(np.array(rates))
        b, n = samples
        mean_b = _row(doc, metric, "Amean", base)
        mean_n = _row(doc, metric, "Amean", new)
        assert mean_b["n"] == 3 and mean_n["n"] == 3
        # (trace metrics are rounded to 6 decimals: abs=1e-6)
        assert mean_b["value"] == pytest.approx(b.mean(), rel=tol, abs=1e-6), metric
        assert mean_n["value"] == pytest.approx(n.mean(), rel=tol, abs=1e-6), metric
        assert _row(doc, metric, "Stddev", base)["value"] == pytest.approx(
            b.std(ddof=1), rel=max(tol, 1e-6), abs=2e-6
        ), metric
        pct = 100 - 100 * n.mean() / b.mean()
        assert mean_n["pct"] == pytest.approx(pct, abs=0.05), metric
        sig = lkml_ttest(b, n)
        assert mean_n["significant"] is sig, (metric, mean_n)
        verdicts[metric] = (np.sign(pct), sig)
    # worse (a negative percentage for a lower-is-better metric) in every rerun
    assert verdicts[worse] == (-1, True)
