"""The model's trackers fed events by hand, as Perfetto tests its thread_state tracker:
push a switch, a waking, a migration, assert the rows. Every expected row is derived
from the events in the scene's docstring, not from the code's output.

One scene (times in us from ``t``; CPUs 2 and 3 share a core in the default topology):

====  =====  ===============================================================
0     CPU 0  idle -> a (a's first event)
100   CPU 0  a sleeps (S) -> idle
150   CPU 1  idle -> w
200   CPU 1  w: sched_waking a (target_cpu 0: a last ran there)
202   CPU 1  sched_migrate_task a 0 -> 2 (the wake-up's choice, in w's context)
205   CPU 2  sched_wakeup a (target_cpu 2)
230   CPU 2  idle -> a
260   CPU 3  idle -> b
300   CPU 2  a preempted (R+) -> idle
310   CPU 3  sched_migrate_task a 2 -> 3 (a runnable task pulled: load balance)
320   CPU 3  b sleeps (S) -> a
350   CPU 3  a sleeps (S) -> idle
360   CPU 1  w sleeps (S) -> idle
400   end of the trace
====  =====  ===============================================================
"""

from __future__ import annotations

import pandas as pd
import pytest

from schedwake.synth import US, Synth, default_topology


@pytest.fixture(scope="module")
def scene():
    s = Synth(default_topology())
    s.settle()
    a, w, b = s.task("a"), s.task("w"), s.task("b")
    t = s.t
    s.switch(t, 0, 0, "R", a)
    s.switch(t + 100 * US, 0, a, "S", 0)
    s.switch(t + 150 * US, 1, 0, "R", w)
    s.waking(t + 200 * US, 1, w, a, 0)
    s.migrate(t + 202 * US, 1, w, a, 0, 2)
    s.wakeup(t + 205 * US, 2, 0, a, 2)
    s.switch(t + 230 * US, 2, 0, "R", a)
    s.switch(t + 260 * US, 3, 0, "R", b)
    s.switch(t + 300 * US, 2, a, "R+", 0)
    s.migrate(t + 310 * US, 3, b, a, 2, 3)
    s.switch(t + 320 * US, 3, b, "S", a)
    s.switch(t + 350 * US, 3, a, "S", 0)
    s.switch(t + 360 * US, 1, w, "S", 0)
    s.t = t + 400 * US
    return s.build("by-hand"), (a, w, b, t)


def at(t, us):
    return t + us * US


def state_rows(trace, pid):
    """The task-state rows of ``pid``: (cpu, start, end, state, switch_state or None)."""
    st = trace.task_states()
    return [
        (int(r.cpu), int(r.start_ts), int(r.end_ts), str(r.state),
         None if str(r.switch_state) == "nan" else str(r.switch_state))
        for r in st[st["pid"] == pid].itertuples()
    ]  # fmt: skip


def test_task_states_of_a(scene):
    """a's time tiles into its states: running from its first switch-in; asleep from
    its S switch-out until the waking; woken_wait from the waking to the switch-in, on
    CPU 0 until the migration, then on CPU 2; running; preempted (R+) from its switch-out
    until it runs again, on CPU 2 then (pulled) CPU 3; asleep after its last switch-out
    to the end of the trace."""
    trace, (a, w, b, t) = scene
    got = [r for r in state_rows(trace, a) if r[3] != "unknown"]
    assert got == [
        (0, at(t, 0), at(t, 100), "running", None),
        (0, at(t, 100), at(t, 200), "sleeping", "S"),
        (0, at(t, 200), at(t, 202), "woken_wait", "S"),
        (2, at(t, 202), at(t, 230), "woken_wait", "S"),
        (2, at(t, 230), at(t, 300), "running", None),
        (2, at(t, 300), at(t, 310), "preempted", "R+"),
        (3, at(t, 310), at(t, 320), "preempted", "R+"),
        (3, at(t, 320), at(t, 350), "running", None),
        (3, at(t, 350), at(t, 400), "sleeping", "S"),
    ]
    # before its first event, a's state is unknown (never idle, never asleep)
    first = state_rows(trace, a)[0]
    assert first[3] == "unknown" and first[2] == at(t, 0)


def test_the_wakeup_row(scene):
    """One wake-up of a: by w on CPU 1 in task context; its previous CPU is the waking's
    target_cpu (0), the CPU chosen the wakeup's (2): a migration in the same LLC; the
    wake-to-run latency runs from the waking (200) to the switch-in (230)."""
    trace, (a, w, b, t) = scene
    wk = trace.wakeups()
    r = wk[wk["wakee_pid"] == a]
    assert len(r) == 1
    r = r.iloc[0]
    assert (int(r.ts), int(r.waker_pid), int(r.waker_cpu), str(r.waker_context)) == (
        at(t, 200), w, 1, "task",
    )  # fmt: skip
    assert (int(r.prev_cpu), int(r.chosen_cpu), bool(r.migrated)) == (0, 2, True)
    assert str(r.migration_class) == "same_llc"
    assert (int(r.wakeup_ts), int(r.run_ts), int(r.latency_ns)) == (
        at(t, 205), at(t, 230), 30 * US,
    )  # fmt: skip
    assert int(r.run_end_ts) == at(t, 300)  # its run ended at the R+ switch-out


def test_the_migrations_and_their_causes(scene):
    """The 202 migration belongs to the waking at 200 (a wake-up migration, in the
    waker's context); the 310 one moves a runnable (preempted) task no wake-up is
    pending for: load balance, in b's context on CPU 3."""
    trace, (a, w, b, t) = scene
    m = trace.migrations()
    got = [
        (int(r.ts), int(r.orig_cpu), int(r.dest_cpu), str(r.cause), int(r.context_pid),
         int(r.context_cpu))
        for r in m.itertuples()
    ]  # fmt: skip
    assert got == [
        (at(t, 202), 0, 2, "wakeup", w, 1),
        (at(t, 310), 2, 3, "load_balance", b, 3),
    ]


def test_occupancy_of_the_cpus(scene):
    """Who runs on each CPU, switch to switch, and who waits there: CPU 3 ran b
    (260-320), then a (320-350), then nothing; CPU 2 ran a from 230 to 300, and a
    waited on it from its sched_wakeup (205) to its switch-in, and from its preemption
    (300) until it was pulled away (310)."""
    trace, (a, w, b, t) = scene
    occ = trace.occupancy()

    def on(cpu):
        rows = occ[(occ["cpu"] == cpu) & (occ["start_ts"] >= at(t, 0))]
        rows = rows.sort_values(["start_ts", "state"], kind="stable")
        return [
            (int(r.start_ts), int(r.end_ts), int(r.pid), str(r.state), str(r.reason))
            for r in rows.itertuples()
        ]

    assert on(3) == [
        (at(t, 260), at(t, 320), b, "running", "switch"),
        (at(t, 320), at(t, 350), a, "running", "switch"),
        (at(t, 350), at(t, 400), 0, "idle", "switch"),
    ]
    assert on(2) == [
        (at(t, 205), at(t, 230), a, "waiting", "wakeup"),
        (at(t, 230), at(t, 300), a, "running", "switch"),
        (at(t, 300), at(t, 400), 0, "idle", "switch"),
        (at(t, 300), at(t, 310), a, "waiting", "preempted"),
    ]


def test_a_pid_used_again():
    """A pid's second life (a kernel reuses the pids of tasks that exited): pid p runs as
    a kworker, is woken and exits (X); later a fork gives the same pid to a new task.
    The first life began before the trace, so it starts unknown, like every task not
    born in the trace; the second starts at its wakeup_new; nothing lies between.
    (A 5-million-event recording of perf bench sched messaging had such a pid.)

    ====  =====  ===================================================
    0     CPU 0  idle -> w
    10    CPU 0  w: sched_waking p (a kworker, not born in the trace)
    12    CPU 0  sched_wakeup p (target 0)
    20    CPU 0  w sleeps (S) -> p
    40    CPU 0  p exits (X) -> idle
    100   CPU 1  idle -> w2
    110   CPU 1  w2 forks p (a new task with the same pid)
    112   CPU 1  sched_wakeup_new p (target 1)
    120   CPU 1  w2 sleeps (S) -> p
    150   CPU 1  p sleeps (S) -> idle
    200   end of the trace
    ====  =====  ===================================================
    """
    trace, p, t = reused_clean()
    got = state_rows(trace, p)
    first = trace.meta.first_ts_ns
    assert got == [
        (-1, first, at(t, 10), "unknown", None),
        (-1, at(t, 10), at(t, 12), "woken_wait", None),
        (0, at(t, 12), at(t, 20), "woken_wait", None),
        (0, at(t, 20), at(t, 40), "running", None),
        (1, at(t, 112), at(t, 120), "woken_wait", None),
        (1, at(t, 120), at(t, 150), "running", None),
        (1, at(t, 150), at(t, 200), "sleeping", "S"),
    ]


def _synth(*names):
    """A Synth past its settling, the tasks of ``names`` and the time the scene starts."""
    s = Synth(default_topology())
    s.settle()
    return s, [s.task(n) for n in names], s.t


def reused_clean():
    """A pid used again, as on the 5M-event recording: p is a kworker, woken, runs and
    exits (X); a fork gives p to a new task, which its sched_wakeup_new wakes.

    ====  =====  ===================================================
    0     CPU 0  idle -> w
    10    CPU 0  w: sched_waking p (kworker/0:2)
    12    CPU 0  sched_wakeup p (target 0)
    20    CPU 0  w sleeps (S) -> p
    40    CPU 0  p exits (X) -> idle
    100   CPU 1  idle -> w2
    110   CPU 1  w2 forks p ("child")
    112   CPU 1  sched_wakeup_new p (target 1)
    120   CPU 1  w2 sleeps (S) -> p
    150   CPU 1  p sleeps (S) -> idle
    200   end of the trace
    ====  =====  ===================================================
    """
    s, (w, w2, p), t = _synth("w", "w2", "kworker/0:2")
    s.switch(t, 0, 0, "R", w)
    s.waking(at(t, 10), 0, w, p, 0)
    s.wakeup(at(t, 12), 0, w, p, 0)
    s.switch(at(t, 20), 0, w, "S", p)
    s.switch(at(t, 40), 0, p, "X", 0)
    s.switch(at(t, 100), 1, 0, "R", w2)
    s.names[p] = "child"
    s.fork(at(t, 110), 1, w2, p)
    s.wakeup_new(at(t, 112), 1, w2, p, 1)
    s.switch(at(t, 120), 1, w2, "S", p)
    s.switch(at(t, 150), 1, p, "S", 0)
    s.t = at(t, 200)
    return s.build("pid-reused-clean"), p, t


def test_each_task_of_a_reused_pid_keeps_its_name_and_time():
    """The task-state summary (analyze's task states, --pid p) has a row per task of p,
    each with its own name and class: the kworker observed from the trace's start to its
    exit at 40 (unknown to its waking at 10, woken 10-20, running 20-40), the child from
    its sched_wakeup_new at 112 to the end at 200 (woken 112-120, running 120-150,
    sleeping 150-200). Nothing of one is the other's."""
    from schedwake.model import Model
    from schedwake.model.task_states import summary

    trace, p, t = reused_clean()
    model = Model(trace, trace.topology, pids=[p])
    first = trace.meta.first_ts_ns
    got = sorted(
        (r["pid"], r["comm"], r["class"], r["observed_s"], r["running_s"], r["woken_wait_s"],
         r["sleeping_s"], r["unknown_s"])
        for r in summary(model)["tasks"]
    )  # fmt: skip

    def us(n):
        return round(n / 1e6, 9)

    assert got == sorted(
        [
            (
                p,
                "kworker/0:2",
                "kworker",
                round((at(t, 40) - first) / 1e9, 9),
                us(20),
                us(10),
                0.0,
                round((at(t, 10) - first) / 1e9, 9),
            ),
            (p, "child", "user", us(88), us(30), us(8), us(50), 0.0),
        ]  # fmt: skip
    )


def test_latency_rows_of_a_reused_pid():
    """schedwake latency gives a row per task, as perf sched latency does (a FORK of a tid
    it knows makes a new thread): the kworker ran 20 us (20-40), switched in once, and
    waited once, 10 us (waking 10 to switch-in 20); the child ran 30 us (120-150),
    switched in once, and has no waking (its sched_wakeup_new is no waking), so no wait.
    perf's reading counts from sched_wakeup/sched_wakeup_new: 8 us each (12-20, 112-120).
    perf sched timehist -s: a row each, a switch-in each, and each its one run: the
    kworker's 20 us (20-40, to its exit: perf counts a run from switch-in to switch-out
    whatever the state), the child's 30 us."""
    from schedwake.analysis.latency import latency, timehist_summary

    trace, p, t = reused_clean()
    lat = latency(trace, pids=[p])
    got = sorted(
        (r.comm, r.pid, r.runtime_ns, r.switches, r.waits, r.total_delay_ns)
        for r in lat.itertuples()
    )
    assert got == [("child", p, 30 * US, 1, 0, 0), ("kworker/0:2", p, 20 * US, 1, 1, 10 * US)]
    perf = latency(trace, reading="perf", pids=[p])
    got = sorted((r.comm, r.pid, r.waits, r.total_delay_ns) for r in perf.itertuples())
    assert got == [("child", p, 1, 8 * US), ("kworker/0:2", p, 1, 8 * US)]
    th = timehist_summary(trace, pids=[p])
    got = sorted((r.comm, r.pid, r.sched_in, r.run_ns) for r in th.itertuples())
    assert got == [("child", p, 1, 30 * US), ("kworker/0:2", p, 1, 20 * US)]


def reused_unseen_death():
    """A pid used again whose first task's end the trace does not show, in a recording
    of sched_process_fork without sched_wakeup_new: p sleeps at 30, is woken again at 50
    (its run and exit are not in the trace); a fork at 110 gives p to a new task.

    ====  =====  ===================================================
    0     CPU 0  idle -> w
    10    CPU 0  w: sched_waking p (target 0)
    12    CPU 0  sched_wakeup p (target 0)
    20    CPU 0  w sleeps (S) -> p
    30    CPU 0  p sleeps (S) -> idle
    40    CPU 1  idle -> w2
    50    CPU 1  w2: sched_waking p (target 0)
    52    CPU 1  sched_wakeup p (target 0)
    60    CPU 1  w2 sleeps (S) -> idle
    100   CPU 1  idle -> w3
    110   CPU 1  w3 forks p ("child")
    120   CPU 1  w3 sleeps (S) -> p
    150   CPU 1  p sleeps (S) -> idle
    200   end of the trace
    ====  =====  ===================================================
    """
    s, (w, w2, w3, p), t = _synth("w", "w2", "w3", "old")
    s.switch(t, 0, 0, "R", w)
    s.waking(at(t, 10), 0, w, p, 0)
    s.wakeup(at(t, 12), 0, w, p, 0)
    s.switch(at(t, 20), 0, w, "S", p)
    s.switch(at(t, 30), 0, p, "S", 0)
    s.switch(at(t, 40), 1, 0, "R", w2)
    s.waking(at(t, 50), 1, w2, p, 0)
    s.wakeup(at(t, 52), 1, w2, p, 0)
    s.switch(at(t, 60), 1, w2, "S", 0)
    s.switch(at(t, 100), 1, 0, "R", w3)
    s.names[p] = "child"
    s.fork(at(t, 110), 1, w3, p)
    s.switch(at(t, 120), 1, w3, "S", p)
    s.switch(at(t, 150), 1, p, "S", 0)
    s.t = at(t, 200)
    return s.build("pid-reused-unseen"), p, t


def test_a_wakeup_never_runs_in_the_next_task_of_its_pid():
    """The waking at 10 ran at 20 (10 us). The waking at 50 has no run of its task in the
    trace: the switch-in at 120 is the child's (forked at 110), not its end, so it has no
    run and no latency (not 70 us)."""
    trace, p, t = reused_unseen_death()
    wk = trace.wakeups()
    rows = wk[wk["wakee_pid"] == p].sort_values("ts")
    got = [
        (int(r.ts), None if pd.isna(r.run_ts) else int(r.run_ts),
         None if pd.isna(r.latency_ns) else int(r.latency_ns))
        for r in rows.itertuples()
    ]  # fmt: skip
    assert got == [(at(t, 10), at(t, 20), 10 * US), (at(t, 50), None, None)]


def test_a_wait_never_spans_two_tasks_of_a_pid():
    """perf sched latency's waits (the model's waits table): the first task's woken wait
    from its sched_wakeup at 12 to its switch-in at 20; its wake-up at 52 has no end in its
    life (no 52-120 wait); the child's first event is its switch-in at 120: a wait of 0 as
    perf counts for a thread first seen switched in."""
    trace, p, t = reused_unseen_death()
    wt = trace.model.waits
    rows = wt[wt["pid"] == p].sort_values("start_ts")
    got = [(str(r.kind), int(r.start_ts), int(r.end_ts)) for r in rows.itertuples()]
    assert got == [("woken", at(t, 12), at(t, 20)), ("first_seen", at(t, 120), at(t, 120))]


def test_task_states_of_a_task_whose_end_is_not_seen():
    """The first task: unknown to its waking at 10, woken (10-20; on CPU 0 from its
    sched_wakeup at 12), running 20-30, asleep 30-50, then woken at 50 and gone by the
    fork at 110 with no more of it in the trace: unknown 50-110 (not a woken wait that
    the child's switch-in ends). The child: born at its fork (110, CPU 1), woken_wait to
    120, running 120-150, asleep to the end."""
    trace, p, t = reused_unseen_death()
    st = trace.task_states()
    rows = st[st["pid"] == p]
    got = [(int(r.cpu), int(r.start_ts), int(r.end_ts), str(r.state)) for r in rows.itertuples()]
    first = trace.meta.first_ts_ns
    assert got == [
        (-1, first, at(t, 10), "unknown"),
        (-1, at(t, 10), at(t, 12), "woken_wait"),
        (0, at(t, 12), at(t, 20), "woken_wait"),
        (0, at(t, 20), at(t, 30), "running"),
        (0, at(t, 30), at(t, 50), "sleeping"),
        (0, at(t, 50), at(t, 110), "unknown"),
        (1, at(t, 110), at(t, 120), "woken_wait"),
        (1, at(t, 120), at(t, 150), "running"),
        (1, at(t, 150), at(t, 200), "sleeping"),
    ]
    # the trace shows no contradiction: the child's switch-in follows its birth
    assert len(trace.model.completeness.breaks) == 0


def reused_storm():
    """Two tasks of one pid p, each preempting the kworker of CPU 0 (kworker/0:1) in six
    storm cycles (Synth.storm: the kworker starts its dio work item, wakes p, is
    preempted R+ by it; p runs 8 us and sleeps S, handing CPU 0 back to the kworker),
    the first task exiting (X) before a fork gives p to the second.

    ======  =====  ==================================================================
    0       CPU 0  idle -> kworker; 6 cycles of 20 us from 5 (kworker R+ -> p at
                   9, 29, ..., p S -> kworker at 17, 37, ...); 125 kworker I -> idle
    135     CPU 1  idle -> w; 136 w: sched_waking p (target 1); 137 sched_wakeup p
    138     CPU 1  w sleeps (S) -> p
    145     CPU 1  p exits (X) -> idle
    155     CPU 1  idle -> w; 156 w forks p ("dd"); 157 sched_wakeup_new p (target 0)
    160     CPU 1  w sleeps (S) -> idle
    165     CPU 0  the same 6 cycles, by the second task ("dd")
    ======  =====  ==================================================================
    """
    s, (p, w), t = _synth("fio", "w")
    s.storm(p, 0, 6)
    assert s.t == at(t, 135)
    s.switch(at(t, 135), 1, 0, "R", w)
    s.waking(at(t, 136), 1, w, p, 1)
    s.wakeup(at(t, 137), 1, w, p, 1)
    s.switch(at(t, 138), 1, w, "S", p)
    s.switch(at(t, 145), 1, p, "X", 0)
    s.switch(at(t, 155), 1, 0, "R", w)
    s.names[p] = "dd"
    s.fork(at(t, 156), 1, w, p)
    s.wakeup_new(at(t, 157), 1, w, p, 0)
    s.switch(at(t, 160), 1, w, "S", 0)
    s.t = at(t, 165)
    s.storm(p, 0, 6)
    return s.build("pid-reused-storm"), p, t


def test_two_tasks_of_a_pid_are_two_storm_pairs():
    """cswitch_storm's (CPU, task) pairs: each task of p is its own pair on CPU 0, with
    its 6 preemptions of the kworker (of its 14 switch-outs there: 12 R+, 2 I), 12
    task <-> kworker switches and 6 wake-ups there, all futile (the CPU went back to the
    kworker each time). 6 of 14 is under storm_min_preempted_share (0.75): the kworker
    is no storm kworker of either task. As one pid, the 12 preemptions (12 of 14: over
    the share) would make one storm of 12; with storm_min_preemptions 10 neither task
    is one."""
    from schedwake.detect import detect, resolve
    from schedwake.detect.cswitch_storm import pair_table

    trace, p, t = reused_storm()
    pt = pair_table(trace.model, resolve(trace))
    got = sorted(
        (int(r.cpu), int(r.pid), int(r.kworker_preemptions), int(r.all_kworker_preemptions),
         int(r.cpu_switches), int(r.switches), int(r.wakeups), int(r.futile_wakeups))
        for r in pt.itertuples()
    )  # fmt: skip
    assert got == [(0, p, 0, 6, 30, 12, 6, 6)] * 2
    # (the tasks: life keys, the pid in its first life)
    assert sorted(pt["task"]) == [p, p + (1 << 32)]
    found = detect(trace, detectors=["cswitch_storm"], storm_min_preemptions=10)
    assert found == []


def test_per_task_waits_of_a_reused_pid():
    """perf sched latency -p's figures (waits.per_task) are per task: the first task of p
    waited once, 8 us (its sched_wakeup at 12 to its switch-in at 20); the child's one
    wait is the 0 of its first-seen switch-in at 120. As one pid they would be 2 waits
    of 4 us on average."""
    from schedwake.model.lives import SHIFT, pid_of
    from schedwake.model.waits import per_task

    trace, p, t = reused_unseen_death()
    pt = per_task(trace.model.waits)
    pt = pt[pid_of(pt.index.to_numpy()) == p]
    got = sorted(
        (int(r.Index), int(r.count), int(r.avg_ns), int(r.max_ns), int(r.max_start_ts),
         int(r.max_end_ts))
        for r in pt.itertuples()
    )  # fmt: skip
    assert got == [
        (p, 1, 8 * US, 8 * US, at(t, 12), at(t, 20)),
        (p + (1 << SHIFT), 1, 0, 0, at(t, 120), at(t, 120)),
    ]
    assert list(pt["pid"]) == [p, p]


def test_the_command_referee_counts_only_its_own_tasks():
    """The referee's command checks (getrusage of the recorded command w2 and its
    descendants, against the trace) of reused_clean: w2 forks p at 110, so the child
    (120-150: 30 us) is the command's, and w2 itself (100-120: 20 us); the kworker
    that had p before (20-40) is not. The trace's running time is 50 us (not 70), and
    the switch-outs are w2's at 120 and the child's at 150 (not the kworker's at 40)."""
    from schedwake import referee
    from schedwake.counters import CommandUsage, Counters, Snapshot

    trace, p, t = reused_clean()
    w2 = int(trace.model.events.switch.set_index("ts").loc[at(t, 100), "next_pid"])

    def snap(label):
        return Snapshot(label, 0, 0, None, None, {})

    cmd = CommandUsage(w2, ("w2",), 50 * US, 2, 0)
    c = Counters("<by-hand>", 1, "test", None, None, None, False, snap("start"),
                 snap("stop"), cmd, None)  # fmt: skip
    ref = referee.Referee(trace, c, None)
    first, last = trace.meta.first_ts_ns, trace.meta.last_ts_ns
    ref.window = referee.Window((first, last), (first, last), "markers")
    got = {ch.what: ch for ch in ref._command()}
    # (up to that and w2's unknown time before its first event at 100)
    unknown = (at(t, 100) - first) / 1e9
    assert got["command_cpu"].trace == pytest.approx((50e-6, 50e-6 + unknown), abs=1e-12)
    assert got["command_switches"].trace == (2.0, 2.0)


def _with_perf_records(trace, comms=(), forks=()):
    """``trace`` with the COMM (ts, tid, comm) and FORK (ts, tid, ptid) records of a
    perf.data beside its events (its sideband)."""
    import pyarrow as pa

    trace.sideband = {
        "comms": pa.table(
            {
                "ts": pa.array([c[0] for c in comms], pa.int64()),
                "pid": pa.array([c[1] for c in comms], pa.int32()),
                "tid": pa.array([c[1] for c in comms], pa.int32()),
                "comm": pa.array([c[2] for c in comms], pa.string()),
            }
        ),
        "forks": pa.table(
            {
                "ts": pa.array([k[0] for k in forks], pa.int64()),
                "tid": pa.array([k[1] for k in forks], pa.int32()),
                "ptid": pa.array([k[2] for k in forks], pa.int32()),
            }
        ),
    }
    return trace


def test_perf_names_of_a_reused_pid():
    """perf names a thread by its COMM records, and makes a new thread at a FORK of a tid
    it knows (named by its parent until a COMM): in reused_clean with a COMM of p
    ("kworker/0:2-events") at 5 and of w2 ("sender") at 1, a FORK of p by w2 at 110,
    the kworker is kworker/0:2-events and the child "sender", its parent's name; with a
    COMM of p ("receiver") at 115 as well, the child is "receiver" and the kworker keeps
    its own name (a COMM names only the task its tid is then)."""
    from schedwake.analysis.latency import perf_names
    from schedwake.model.lives import SHIFT

    trace, p, t = reused_clean()
    w2 = int(trace.model.events.switch.set_index("ts").loc[at(t, 100), "next_pid"])
    comms = [(at(t, 1), w2, "sender"), (at(t, 5), p, "kworker/0:2-events")]
    forks = [(at(t, 110), p, w2)]
    names = perf_names(_with_perf_records(trace, comms, forks))
    assert (names[p], names[p + (1 << SHIFT)]) == ("kworker/0:2-events", "sender")
    trace, p, t = reused_clean()
    comms.append((at(t, 115), p, "receiver"))
    names = perf_names(_with_perf_records(trace, comms, forks))
    assert (names[p], names[p + (1 << SHIFT)]) == ("kworker/0:2-events", "receiver")


def test_timehist_counts_the_run_that_ends_in_an_exit():
    """perf sched timehist -s counts every run from a switch-in to a switch-out,
    whatever state the switch-out gives (timehist_sched_change_event: t - tprev for the
    task switched out): a task woken at 10, switched in at 20 and out at 30 (S), woken
    at 50, in at 60 and out at 100 exiting (X) ran twice, 10 and 40 us."""
    from schedwake.analysis.latency import timehist_summary

    s, (w, p), t = _synth("w", "exiting")
    s.switch(t, 0, 0, "R", w)
    s.waking(at(t, 10), 0, w, p, 0)
    s.switch(at(t, 20), 0, w, "S", p)
    s.switch(at(t, 30), 0, p, "S", 0)
    s.switch(at(t, 40), 1, 0, "R", w)
    s.waking(at(t, 50), 1, w, p, 0)
    s.switch(at(t, 55), 1, w, "S", 0)
    s.switch(at(t, 60), 0, 0, "R", p)
    s.switch(at(t, 100), 0, p, "X", 0)
    s.t = at(t, 200)
    th = timehist_summary(s.build("exit"), pids=[p])
    got = [(r.sched_in, r.run_ns, r.min_run_ns, r.max_run_ns) for r in th.itertuples()]
    assert got == [(2, 50 * US, 10 * US, 40 * US)]
