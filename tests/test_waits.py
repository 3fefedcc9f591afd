"""Waits to run and their causes (schedwake.model.waits, schedwake.analysis.wait_causes):
per-task numbers against ``perf sched latency`` on real perf.data recordings, a wait's
parts against an independent reading of ``trace-cmd report -N -t`` text, the parts
adding up on real traces, and a synthetic trace where a known task blocks a known wait.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

import schedwake
from schedwake.analysis import wait_causes
from schedwake.model import waits as W
from schedwake.synth import US, Synth, default_topology

from .conftest import perf_kallsyms, run_cli, sample, trace_cmd_report

PERF_FILES = ["perf/perf-sched-g.perf.data", "perf/perf-dbench-z.perf.data"]

_LAT = re.compile(
    r"^\s*(.*?):(\d+)\s*\|\s*[\d.]+ ms \|\s*(\d+) \| avg:\s*([\d.]+) ms \| max:\s*([\d.]+) ms"
)


def _perf_latency(path) -> dict[int, tuple[int, float, float]]:
    """``perf sched latency -p``: pid -> (switches, avg ms, max ms)."""
    out = subprocess.run(
        ["perf", "sched", "latency", "-p", "-i", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    rows = {}
    for line in out.splitlines():
        if m := _LAT.match(line):
            rows[int(m[2])] = (int(m[3]), float(m[4]), float(m[5]))
    return rows


def _perf_version() -> tuple[int, int]:
    out = subprocess.run(["perf", "--version"], capture_output=True, text=True).stdout
    m = re.search(r"(\d+)\.(\d+)", out)
    return (int(m[1]), int(m[2])) if m else (0, 0)


def _disagreements(ours, perf) -> list:
    bad = []
    for pid, (count, avg, mx) in perf.items():
        if pid not in ours.index:
            bad.append((pid, "missing"))
            continue
        r = ours.loc[pid]
        # perf prints milliseconds with 3 decimals: truncated nanoseconds / 1e6, rounded
        if (
            int(r["count"]) != count
            or abs(r["avg_ns"] / 1e6 - avg) > 0.0006
            or abs(r["max_ns"] / 1e6 - mx) > 0.0006
        ):
            bad.append((pid, (count, avg, mx), (int(r["count"]), r["avg_ns"], r["max_ns"])))
    return bad


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
@pytest.mark.parametrize("name", PERF_FILES)
def test_per_task_delays_agree_with_perf_sched_latency(name):
    """Every task's Switches, avg and max delay as ``perf sched latency -p`` prints
    them. perf up to 6.1 reads a switch-out's state letter as TASK_STATE_TO_CHAR_STR
    [prev_state]: a preempted task's R+ (a high bit) is not 'R' there, so only plain R
    switch-outs start a preempted wait (docs/waits.md); a perf that decodes the state
    counts R+ as well."""
    path = sample(name)
    perf = _perf_latency(path)
    assert len(perf) > 50  # the recordings have ~100 and ~290 tasks
    ev = schedwake.load(path).model.events

    # perf's rules: a wait ends at a switch-in (these recordings lack switch-ins: the
    # model's own waits end at the first proof of a run, docs/semantics.md)
    def as_perf(states):
        return W.build(ev, None, runnable_states=states, rewoken_unseen=False)

    r_only = _disagreements(W.per_task(as_perf(("R",))), perf)
    r_and_plus = _disagreements(W.per_task(as_perf(("R", "R+"))), perf)
    if _perf_version() <= (6, 1):
        assert r_only == []
    else:
        assert r_only == [] or r_and_plus == []
    # the waits with R and R+ hold every wait perf counts, and more
    assert len(as_perf(("R", "R+"))) > len(as_perf(("R",)))


def test_perf_sched_g_longest_waits_pinned():
    """perf-sched-g.perf.data (perf sched record -g): its longest waits, as perf sched
    latency gives the first (106.232 ms, 2144.548185 -> 2144.654417)."""
    t = schedwake.load(sample("perf/perf-sched-g.perf.data"))
    w = t.model.waits
    # (the counts of each kind are perf's: test_per_task_delays_agree_with_perf_sched_latency;
    # the longest is perf's maximum, independently)
    top = w.loc[w["delay_ns"].idxmax()]
    assert (int(top["pid"]), str(top["kind"]), int(top["delay_ns"])) == (
        23906,
        "preempted",
        106_232_006,
    )
    p = wait_causes.longest_preempted(t)
    assert (p["pid"], p["from"], p["to"], p["from_cpu"], p["cpu"]) == (
        23906, 2144.548185, 2144.654417, 1, 0,
    )  # fmt: skip
    assert p["queued_on"] == [1, 0]  # moved from CPU 1 to CPU 0 at 2144.640815
    assert sum(x["us"] for x in p["breakdown"]) == pytest.approx(106_232.006, abs=0.05)


def _breakdowns(t):
    out = [
        wait_causes.explain_wait(t, r) for _, r in t.model.waits.nlargest(20, "delay_ns").iterrows()
    ]
    w = t.model.wakeups
    w = w[w["latency_ns"].notna().to_numpy()]
    lat = w["latency_ns"].to_numpy(dtype="int64")
    for i in lat.argsort()[-20:]:
        out.append(wait_causes.explain_wakeup(t, w.iloc[i]))
    return out


@pytest.mark.parametrize(
    "name", ["fio-pinned-weighted.dat", "dbench-xfs-2clients.dat", "perf/perf-dbench-z.perf.data"]
)
def test_parts_add_up_to_the_nanosecond(name):
    t = schedwake.load(sample(name))
    bs = _breakdowns(t)
    assert len(bs) == 40
    for b in bs:
        assert b["parts"], b
        assert all(p["ns"] > 0 for p in b["parts"])
        assert sum(p["ns"] for p in b["parts"]) == b["total_ns"]
        assert 0 <= b["llc_idle_us"] * 1e3 <= b["total_ns"] + 1
        for p in b["parts"]:
            assert p["part"] in ("wake_path", "task", "idle", "unknown")
            if p["part"] == "task":
                assert p["pid"] > 0 and p["class"] in (
                    "stopper", "ksoftirqd", "rt_dl", "percpu_kthread", "fair",
                    "fair_same_nice", "fair_heavier", "fair_lighter",
                )  # fmt: skip


_SWITCH = re.compile(
    r"\[(\d+)\]\s+(\d+)\.(\d{9}): sched_switch:\s+prev_comm=.* prev_pid=(\d+) prev_prio=-?\d+ "
    r"prev_state=(\S+) ==> next_comm=.* next_pid=(\d+) next_prio=-?\d+"
)
_MIGRATE = re.compile(
    r"\[(\d+)\]\s+(\d+)\.(\d{9}): sched_migrate_task:\s+comm=.* pid=(\d+) prio=-?\d+ "
    r"orig_cpu=(\d+) dest_cpu=(\d+)"
)


@pytest.mark.skipif(shutil.which("trace-cmd") is None, reason="trace-cmd is not installed")
@pytest.mark.slow
def test_longest_preempted_wait_against_trace_cmd_text():
    """fio-pinned-weighted.dat: the longest preempted wait (pyenv-version-f, pid 8671,
    preempted on CPU 0, moved to CPU 1) recomputed from ``trace-cmd report -N -t``
    text alone: who ran on the CPU it was queued on, to the nanosecond."""
    path = sample("fio-pinned-weighted.dat")
    t = schedwake.load(path)
    p = wait_causes.longest_preempted(t)
    assert (p["pid"], p["comm"], p["from_cpu"], p["cpu"]) == (8671, "pyenv-version-f", 0, 1)
    text = trace_cmd_report(path, "-N", "-t")  # (written to a file: faster than a pipe)
    switches, migrations = [], []
    for line in text.splitlines():
        if " sched_switch:" in line and (m := _SWITCH.search(line)):
            ts = int(m[2]) * 10**9 + int(m[3])
            switches.append((ts, int(m[1]), int(m[4]), m[5], int(m[6])))
        elif " sched_migrate_task:" in line and (m := _MIGRATE.search(line)):
            ts = int(m[2]) * 10**9 + int(m[3])
            migrations.append((ts, int(m[4]), int(m[5]), int(m[6])))
    pid = 8671
    # the wait: its longest stretch from a switch-out in R/R+ to its next switch-in
    best = (0, 0, 0, 0)
    out_at = None
    for ts, cpu, prev, state, nxt in switches:
        if prev == pid:
            out_at = (ts, cpu) if state.startswith("R") else None
        if nxt == pid and out_at is not None:
            if ts - out_at[0] > best[1] - best[0]:
                best = (out_at[0], ts, out_at[1], cpu)
            out_at = None
    start, end, from_cpu, to_cpu = best
    assert round((end - start) / 1e3, 3) == p["wait_us"]
    # the CPU it was queued on, stretch by stretch (its migrations in the wait)
    cuts = [(ts, d) for ts, q, _, d in migrations if q == pid and start < ts < end]
    stretches, at, cpu = [], start, from_cpu
    for ts, d in cuts:
        stretches.append((cpu, at, ts))
        at, cpu = ts, d
    stretches.append((cpu, at, end))
    assert [c for c, _, _ in stretches] == p["queued_on"]
    ran: dict[int, int] = {}
    for cpu, a, b in stretches:
        on = [(ts, nxt) for ts, c, _, _, nxt in switches if c == cpu]
        for (ts, nxt), (ts2, _) in zip(on, on[1:]):
            lo, hi = max(ts, a), min(ts2, b)
            if hi > lo:
                ran[nxt] = ran.get(nxt, 0) + hi - lo
    ours: dict[int, int] = {}
    waits = t.model.waits
    longest = waits["delay_ns"].where(waits["kind"] == "preempted").idxmax()
    b = wait_causes.explain_wait(t, waits.loc[longest])
    for part in b["parts"]:
        key = part.get("pid", 0)
        ours[key] = ours.get(key, 0) + part["ns"]
    assert ours == ran
    assert ran[8644] == 11_028_301  # fio, 11.028 ms of the 11.034 ms wait


def _blocked_trace():
    """A known task blocks a known wait: ``hog`` runs on CPU 0; ``sleeper`` is woken
    onto CPU 0 and waits 300 us behind it, is pulled to CPU 1 (load balance) where
    ``other`` runs for 100 us more, then runs. CPUs 2 and 3 (its LLC) stay idle."""
    s = Synth(default_topology())
    s.settle()
    hog, sleeper, other, waker = (s.task(n) for n in ("hog", "sleeper", "other", "waker"))
    t = s.t
    s.switch(t, 0, 0, "R", hog)
    s.switch(t, 1, 0, "R", other)
    s.switch(t + 1 * US, 2, 0, "R", waker)
    s.waking(t + 10 * US, 2, waker, sleeper, 0)
    s.wakeup(t + 13 * US, 0, hog, sleeper, 0)
    s.switch(t + 15 * US, 2, waker, "S", 0)
    s.migrate(t + 313 * US, 1, other, sleeper, 0, 1)
    s.switch(t + 413 * US, 1, other, "R+", sleeper)
    s.switch(t + 450 * US, 1, sleeper, "S", other)
    s.switch(t + 500 * US, 0, hog, "S", 0)
    s.switch(t + 520 * US, 1, other, "S", 0)
    s.t = t + 600 * US
    return s.build("blocked"), (hog, sleeper, other, waker, t)


def test_synthetic_known_blocker():
    trace, (hog, sleeper, other, waker, t0) = _blocked_trace()
    w = trace.model.wakeups
    r = w[w["wakee_pid"] == sleeper].iloc[0]
    b = wait_causes.explain_wakeup(trace, r)
    assert b["total_ns"] == 403 * US
    assert [(p["part"], p.get("pid"), p.get("cpu"), p["ns"]) for p in b["parts"]] == [
        ("wake_path", None, None, 3 * US),
        ("task", hog, 0, 300 * US),
        ("task", other, 1, 100 * US),
    ]
    assert [p.get("class") for p in b["parts"]] == [None, "fair_same_nice", "fair_same_nice"]
    assert b["cpus"] == [0, 1]
    # CPU 3 (and CPU 2 from t0+15us) of its LLC idle all the time it was queued; CPU 1
    # ran other, then CPU 0 ran hog
    assert (b["llc_idle_us"], b["llc_idle_cpus"]) == (400.0, [2, 3])
    # perf sched latency's waits: the woken wait from sched_wakeup, the preempted one
    waits = trace.model.waits
    mine = waits[waits["pid"] == sleeper].iloc[0]
    assert (str(mine["kind"]), int(mine["delay_ns"])) == ("woken", 400 * US)
    theirs = waits[(waits["pid"] == other) & (waits["kind"] == "preempted")].iloc[0]
    assert int(theirs["delay_ns"]) == 37 * US
    bp = wait_causes.explain_wait(trace, theirs)
    assert [(p["part"], p.get("pid"), p["ns"]) for p in bp["parts"]] == [("task", sleeper, 37 * US)]


def test_unknown_where_the_trace_cannot_tell():
    """fio-pinned-weighted.dat (CPU 1's idle -> task switches are missing on this VM's
    kernel): fio is woken in idle on CPU 1 at 344.819930 and next fires an event of its
    own at 344.822596, with no switch-in between. Its wait ends there (it ran by then),
    not at its next recorded switch-in 56.6 ms later after it had run and slept, and
    the stretch between is ``unknown``, never idle. The longest wake-to-run is then a
    wait the trace shows whole."""
    t = schedwake.load(sample("fio-pinned-weighted.dat"))
    from schedwake.analysis import Analysis

    w = t.model.wakeups
    r = w[w["ts"] == 344_819_930_476].iloc[0]
    assert int(r["wakee_pid"]) == 8644
    assert (int(r["run_ts"]), int(r["run_from_ts"])) == (344_822_596_145, 344_819_934_356)
    b = wait_causes.parts(wait_causes.explain_wakeup(t, r))
    assert [(p["part"], p.get("why")) for p in b] == [
        ("wake_path", None),
        ("unknown", W.UNKNOWN_MISSING),
    ]
    assert b[1]["us"] == pytest.approx(2661.789, abs=0.001)
    a = Analysis(t, [], {}, {})
    longest = a.longest_wake_to_run
    assert (longest["pid"], longest["latency_us"]) == (37, 8406.4)
    assert "latency_min_us" not in longest  # its switch-in is in the trace
    assert "unknown" not in {p["part"] for p in longest["breakdown"]}


@pytest.mark.slow
def test_cli_waits_of_a_pid(tmp_path):
    path = sample("perf/perf-sched-g.perf.data")
    p = run_cli("analyze", path, "--pid", "23906", "--waits", "--format", "json", check=True)
    d = json.loads(p.stdout)
    ws = d["trace"]["waits"]
    # the wake-up at 2144.546478: the wakee's switch-in on CPU 1 is missing (this VM's
    # kernel does not trace CPU 1's idle task), but sched_stat_runtime, charged to it from
    # CPU 0 at 2144.546895 with 400983 ns, shows it running from 2144.546494 at the
    # latest: a wait of 0.002 to 0.016 ms, not the 107.9 ms to its next recorded
    # switch-in, after it had run and been preempted (docs/semantics.md)
    assert [(w["kind"], w["wait_us"]) for w in ws] == [
        ("wake_to_run", 15.979),
        ("preempted", 106232.006),
        ("preempted", 25037.598),
        ("preempted", 26.841),
    ]
    for w in ws:
        assert sum(x["us"] for x in w["breakdown"]) == pytest.approx(w["wait_us"], abs=0.05)
    assert d["trace"]["tail_waits"]["causes"][0]["cause"] == "fair_same_nice"
    txt = run_cli("analyze", path, "--pid", "23906", "--waits", check=True).stdout
    assert "-- Waits of the --pid tasks (4)" in txt
    assert "preempted: 106.232 ms, sched-messaging (pid 23906) preempted on CPU 1" in txt
    bad = run_cli("analyze", path, "--waits")
    assert bad.returncode == 2 and "--waits" in bad.stderr and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_html_has_a_bar_per_wait_and_the_window_timelines():
    from schedwake.analysis import analyze
    from schedwake.report import analysis_html

    t = schedwake.load(sample("perf/perf-sched-g.perf.data"))
    t.focus([23906])
    html = analysis_html.render(analyze(t, waits=True))
    assert "<h2>Why the longest waits were late</h2>" in html
    for ident in ("waits", "wait0-timeline", "wait1-timeline"):
        assert f"<figure id='{ident}'><img alt=" in html
    assert "longest preempted: sched-messaging (23906): 106.232 ms" in html


def _perf_script_stack(path, at_s: float, pid: int) -> list[str]:
    """The kernel callchain ``perf script`` prints for the sched_switch of ``pid``
    (prev_pid) at ``at_s`` seconds, with the recording kernel's kallsyms."""
    out = subprocess.run(
        ["perf", "script", "--kallsyms", str(perf_kallsyms()), "-i", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout.splitlines()
    at = next(
        i for i, line in enumerate(out)
        if f"{at_s:.6f}: " in line and "sched:sched_switch" in line
        and f"prev_pid={pid} " in line
    )  # fmt: skip
    frames = []
    for line in out[at + 1 :]:
        if "[kernel.kallsyms]" not in line:
            break
        frames.append(line.split()[1])
    return frames


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
def test_blocking_task_stack_is_the_one_perf_script_prints(samples_kernel_here, monkeypatch):
    """perf-sched-g.perf.data (perf sched record -g): the task that ran longest during
    the longest preempted wait (python3, pid 21264) with the kernel stack of its last
    switch-out in the wait, as ``perf script`` prints that switch's callchain, both
    naming it with the recording kernel's kallsyms (schedwake's from a machine made to
    look as if it ran that kernel: the stacks take the running kernel's)."""
    from schedwake.analysis import Analysis
    from schedwake.symbols.kernel import IGNORE_RUNNING_KERNEL

    monkeypatch.delenv(IGNORE_RUNNING_KERNEL)
    path = sample("perf/perf-sched-g.perf.data")
    p = Analysis(schedwake.load(path), [], {}, {}).longest_preempted_wait
    top = p["breakdown"][0]
    assert (top["pid"], top["comm"], top["class"], top["us"]) == (
        21264, "python3", "fair_lighter", 14734.598,
    )  # fmt: skip
    frames = _perf_script_stack(path, top["stack_at"], 21264)
    assert frames and top["stack"] == frames, (top["stack"], frames)
    assert all("+0x" in f for f in frames) and any(f.startswith("__schedule+") for f in frames)


def test_a_wait_over_lost_events_is_unknown_there():
    """lost-events.dat (the ring buffer overflowed): a stretch of a wait on a CPU where
    events were lost is ``unknown`` (why: lost events), never a task or idle time; the
    lost-event rows of the file (Trace.lost) confirm a loss on that CPU inside it."""
    t = schedwake.load(sample("lost-events.dat"))
    lts = t.lost.column("ts").to_numpy()
    lcpu = t.lost.column("cpu").to_numpy()
    seen = 0
    for _, r in t.model.waits.nlargest(60, "delay_ns").iterrows():
        b = wait_causes.explain_wait(t, r)
        assert sum(p["ns"] for p in b["parts"]) == b["total_ns"]
        lost = [p for p in b["parts"] if p["part"] == "unknown" and p["why"] == W.UNKNOWN_LOST]
        if lost:
            seen += 1
            inside = (lts >= r["start_ts"]) & (lts <= r["end_ts"]) & np.isin(lcpu, b["cpus"])
            assert inside.any()
    assert seen >= 1


def test_task_classes():
    assert W.task_class("migration/3", 0, 120) == "stopper"
    assert W.task_class("ksoftirqd/3", 120, 120) == "ksoftirqd"
    assert W.task_class("irq/45-nvme0q1", 49, 120) == "rt_dl"
    assert W.task_class("dl_server", -1, 120) == "rt_dl"  # SCHED_DEADLINE: prio -1
    assert W.task_class("kworker/3:1", 120, 120) == "percpu_kthread"
    assert W.task_class("fio", 120, 120) == "fair_same_nice"
    assert W.task_class("fio", 110, 120) == "fair_heavier"  # nice -10: a larger weight
    assert W.task_class("python3", 130, 120) == "fair_lighter"
    assert W.task_class("fio", None, 120) == "fair"  # no priorities in the trace


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
def test_waits_name_the_waker_by_pid_and_show_the_waiters_own_stack(
    samples_kernel_here, monkeypatch
):
    """``analyze --pid P --waits``: a wake-to-run wait names its waker by name and pid
    (the waking's common_pid), and with callchains each wait shows the waiting task's own
    kernel stack at the switch-out that began it, as ``perf script`` prints that
    switch's callchain (``perf sched timehist -g``'s view)."""
    from schedwake.report.analyze import waits_text
    from schedwake.symbols.kernel import IGNORE_RUNNING_KERNEL

    monkeypatch.delenv(IGNORE_RUNNING_KERNEL)
    path = sample("perf/perf-sched-g.perf.data")
    t = schedwake.load(path)
    t.focus([23906])
    recs = wait_causes.waits_of_pids(t)
    woken = [r for r in recs if r["kind"] == "wake_to_run"]
    assert woken and all("waker_pid" in r for r in woken)
    wk = t.df("sched_waking")
    for r in woken:
        at = wk[(wk["pid"] == 23906) & ((wk["ts"] / 1e9 - r["from"]).abs() < 1e-6)]
        assert at["common_pid"].tolist() == [r["waker_pid"]]
        assert at["common_comm"].astype(str).tolist() == [r["waker"]]
    lines = "\n".join(waits_text(recs))
    assert f"woken by {woken[0]['waker']} (pid {woken[0]['waker_pid']})" in lines
    pre = next(r for r in recs if r["kind"] == "preempted" and r["wait_us"] > 100_000)
    frames = _perf_script_stack(path, pre["stack_at"], 23906)
    assert frames and pre["stack"] == frames, (pre["stack"], frames)
    assert pre["stack_at"] == pre["from"]  # preempted: the switch-out begins the wait
    assert "its own stack at its switch-out" in lines


@pytest.mark.parametrize(
    "name", ["fio-pinned-weighted.dat", "lost-events.dat", "perf/perf-sched-g.perf.data"]
)
def test_preempted_waits_are_the_tables_preempted_rows(name, monkeypatch):
    """``waits.preempted`` (from the switches and runs alone, in C) gives the rows of
    ``waits.build`` of kind preempted, in its order; with the runs and without, and when
    the pass cannot answer (build's own rows then); the model's are those."""
    model = schedwake.load(sample(name)).model
    ev, runs = model.events, model.completeness.runs

    def same(got, want):
        pd.testing.assert_frame_equal(
            got.astype({"comm": str}), want.astype({"comm": str}), check_categorical=False
        )

    for given in (None, runs):
        full = W.build(ev, given)
        want = full[(full["kind"] == "preempted").to_numpy()].reset_index(drop=True)
        assert len(want)
        same(W.preempted(ev, given), want)
    same(model.preempted_waits, want)
    monkeypatch.setattr(W._passes, "preempted_ends", lambda *args: False)
    same(W.preempted(ev, runs), want)


def test_longest_preempted_row_is_the_lexsorts_last():
    """The longest proven preempted wait, of equal ones the longest possible, of equal
    ones the last: the last row of the lexsort by (least, delay), found without it."""
    rng = np.random.default_rng(5)
    for _ in range(300):
        n = int(rng.integers(1, 30))
        start = rng.integers(0, 4, n)
        w = pd.DataFrame(
            {
                "start_ts": start,
                "min_end_ts": start + rng.integers(0, 3, n),
                "delay_ns": rng.integers(0, 3, n),
            }
        )
        least = (w["min_end_ts"] - w["start_ts"]).to_numpy()
        want = int(np.lexsort((w["delay_ns"].to_numpy(), least))[-1])
        assert wait_causes.longest_preempted_row(w) == want
    assert wait_causes.longest_preempted_row(w.iloc[:0]) is None


def test_cpu_index_of_a_timeline_in_any_order():
    """The CPU index of the model's timeline (in (cpu, ts) order: used as it is) is the
    one of the same intervals in another order (sorted first), priorities included."""
    model = schedwake.load(sample("fio-pinned-weighted.dat")).model
    tl = model.completeness.timeline
    mixed = tl.iloc[np.random.default_rng(3).permutation(len(tl))].reset_index(drop=True)
    mixed = mixed.sort_values("start_ts", kind="stable").reset_index(drop=True)
    a, b = (W.CpuIndex(model.events, t) for t in (tl, mixed))
    assert a.prio_known and sorted(a.by_cpu) == sorted(b.by_cpu)
    assert (np.concatenate([v[3] for v in a.by_cpu.values()]) >= 0).any()
    s = model.events.switch
    sts, snext, sprio = (s[c].to_numpy().astype(np.int64) for c in ("ts", "next_pid", "next_prio"))
    for cpu, cols in a.by_cpu.items():
        # an interval's priority: its task's last switch-in at or before its start (a
        # sample of them)
        some = np.unique(np.linspace(0, len(cols[0]) - 1, 200).astype(int))
        at = [np.flatnonzero((snext == cols[1][i]) & (sts <= cols[0][i]))[-1:] for i in some]
        assert cols[3][some].tolist() == [int(sprio[j[0]]) if len(j) else -1 for j in at]
        other = b.by_cpu[cpu]
        for k in (0, 1, 3, 4, 5):
            assert cols[k].tolist() == other[k].tolist()
        assert a.comm_names[cols[2]].tolist() == b.comm_names[other[2]].tolist()


@pytest.mark.parametrize("name", ["fio-pinned-weighted.dat", "perf/perf-dbench-z.perf.data"])
def test_parts_of_many_waits_are_each_ones(name):
    """The parts of many waits found together (a tail's) are those of each found alone,
    whatever waits come with it: waits of one stretch and of several, with a wake path
    and without."""
    t = schedwake.load(sample(name))
    f = wait_causes.all_waits(t)
    index = t.model.cpu_index
    cols = (f[k].to_numpy() for k in ("pid", "start", "end", "cpu", "wake_end"))
    every = [
        (int(p), int(s), int(e), int(c), None if w < 0 else int(w)) for p, s, e, c, w in zip(*cols)
    ]
    several = [r for r in every if len(index.segments(r[0], r[3], r[4] or r[1], r[2])) > 1]
    assert several and any(r[4] is not None for r in every[::7])
    rows = several[:100] + every[::7][:200]
    np.random.default_rng(2).shuffle(rows)
    together = W.parts_many(index, t.topology, rows)
    for r, p in zip(rows, together):
        alone = W.parts_of(index, t.topology, *r)
        assert all(np.array_equal(x, y) for x, y in zip(p[:7], alone[:7])) and p[7:] == alone[7:]
        assert int(p.ns.sum()) == p.total_ns
