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


def test_task_states_of_a(scene):
    """a's time tiles into its states: running from its first switch-in; asleep from
    its S switch-out until the waking; woken_wait from the waking to the switch-in, on
    CPU 0 until the migration, then on CPU 2; running; preempted (R+) from its switch-out
    until it runs again, on CPU 2 then (pulled) CPU 3; asleep after its last switch-out
    to the end of the trace."""
    trace, (a, w, b, t) = scene
    st = trace.task_states()
    rows = st[st["pid"] == a]
    got = [
        (int(r.cpu), int(r.start_ts), int(r.end_ts), str(r.state),
         None if str(r.switch_state) == "nan" else str(r.switch_state))
        for r in rows.itertuples()
        if r.state != "unknown"
    ]  # fmt: skip
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
    first = rows.iloc[0]
    assert str(first["state"]) == "unknown" and int(first["end_ts"]) == at(t, 0)


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
    s = Synth(default_topology())
    s.settle()
    w, w2, p = s.task("w"), s.task("w2"), s.task("kworker/0:2")
    t = s.t
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
    trace = s.build("pid-reused")
    st = trace.task_states()
    rows = st[st["pid"] == p]
    got = [
        (int(r.cpu), int(r.start_ts), int(r.end_ts), str(r.state),
         None if str(r.switch_state) == "nan" else str(r.switch_state))
        for r in rows.itertuples()
    ]  # fmt: skip
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
