"""LLCs inferred from a trace's own wake-up migrations (schedwake/model/llc.py), when no
topology file or --llc says them: right on real one- and two-LLC recordings (never a
real LLC split), and every rule of the confidence test on exact, hand-made migrations."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

import schedwake
from schedwake.model import MODEL_EVENTS
from schedwake.model.events import Events
from schedwake.model.llc import infer_llc
from schedwake.topology import Topology

from .conftest import sample, shared_model_trace


def _alone(name: str, tmp_path):
    """The sample trace copied without its topology file."""
    dst = tmp_path / name.replace("/", "_")
    shutil.copy(sample(name), dst)
    return schedwake.load(dst, events=list(MODEL_EVENTS))


@pytest.mark.parametrize(
    "name",
    [
        "kstack-6.1/k61-2llc-dbench-c2-kstack-on.dat",  # 8 CPUs, 2 LLCs of 4
        "kstack-6.1/k61-2llc-dbench-c2-kstack-off.dat",
        "kstack-6.1/k61-dbench-c2-kstack-on-i1.dat",  # 8 CPUs, one LLC
        "kstack-6.1/k61-dbench-c2-kstack-off-i2.dat",
        "guest8-dbench-xfs-2clients.dat",  # 8 CPUs, one LLC, Debian 6.1
        "dbench-xfs-4clients.dat",  # 2 CPUs, one LLC, 6.18
        "fio-pinned-weighted.dat",
        "speed/g612-smp4-dbench-c4.dat",  # 4 CPUs, one LLC, 6.12
        "guest16-1llc/g61-smp16-dbench-c4.dat",  # 16 CPUs, one LLC
        "guest16-1llc/g61-smp16-dbench-c8.dat",
        "guest16-2llc-tcrecord-dbench.dat",  # 16 CPUs, 2 LLCs of 8
    ],
)
@pytest.mark.slow
def test_inferred_llcs_are_the_machines(name, tmp_path):
    truth = schedwake.load(sample(name), events=[]).topology  # the topology file
    assert truth.source.endswith(".topology.json")
    t = _alone(name, tmp_path)
    assert t.topology.inferred, t.topology.note
    assert t.topology.llc == truth.llc
    # the analysis then counts cross-LLC migrations as with the file
    with_file = shared_model_trace(sample(name))  # (read only: shared in the worker)
    a = (t.migrations()["topology_class"] == "cross_llc").sum()
    b = (with_file.migrations()["topology_class"] == "cross_llc").sum()
    assert a == b


def test_a_cpu_in_no_move_completes_the_only_short_group(tmp_path):
    """16 CPUs in 2 LLCs (a trace-cmd record'ed guest): no wake-up moved a task from or
    onto CPU 15; the moves make groups of 8 and 7 CPUs, and LLCs are equal, so CPU 15
    can only be the second LLC's."""
    t = _alone("guest16-2llc-tcrecord-dbench.dat", tmp_path)
    assert t.topology.inferred and t.topology.llc == [list(range(8)), list(range(8, 16))]
    assert t.topology.note.endswith("CPU 15, in no move, completes the only group short of it")


# -- the rules, on exact migrations ----------------------------------------------------------


def _events(rows) -> Events:
    """Events holding only sched_migrate_task rows (cpu, prio, orig_cpu, dest_cpu): all
    of them wake-up migrations."""
    df = pd.DataFrame(rows, columns=["cpu", "prio", "orig_cpu", "dest_cpu"])
    df["ts"] = np.arange(len(df), dtype=np.int64)
    df = df.astype({c: "int32" for c in ("cpu", "prio", "orig_cpu", "dest_cpu")})
    return Events(None, None, None, df, None, None, None, None, None, 0, len(df), 8)


def _infer(rows, cpus=8):
    ev = _events(rows)
    return infer_llc(ev, np.arange(len(rows)), cpus)


def _within(groups, times):
    """Waker-local wake-up migrations around each group, ``times`` rounds."""
    rows = []
    for _ in range(times):
        for g in groups:
            for a, b in zip(g, g[1:] + g[:1]):
                rows.append((a, 120, a, b))
    return rows


def test_two_groups_are_inferred():
    inf = _infer(_within([[0, 1, 2, 3], [4, 5, 6, 7]], 3))
    assert inf.llc == [[0, 1, 2, 3], [4, 5, 6, 7]] and inf.edges == 24
    assert inf.reason == "24 wake-up migrations stay within 2 groups of 4 CPUs"
    # the numbering is the machine's: groups need not be contiguous
    inf = _infer(_within([[0, 2, 4, 6], [1, 3, 5, 7]], 3))
    assert inf.llc == [[0, 2, 4, 6], [1, 3, 5, 7]]


def test_too_few_migrations_are_no_evidence():
    # two groups of 4: with m edges, one LLC of 8 would keep them all inside the groups
    # with probability (3/7)**m, and the two groups' union (the same here) likewise
    rows = _within([[0, 1, 2, 3], [4, 5, 6, 7]], 2)  # 16 edges: 1.3e-6
    assert _infer(rows).llc is None and "too few" in _infer(rows).reason
    assert _infer(rows + rows[:2]).llc is not None  # 18 edges: 2.4e-7
    # four groups of 2 from 8 edges each: one LLC is unlikely ((1/7)**32), but any two
    # of the groups could be one LLC of 4 ((1/3)**16 = 2.3e-8 is enough, (1/3)**8 not)
    four = [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert _infer(_within(four, 4)).llc == four
    assert "from fewer, larger ones" in _infer(_within(four, 2)).reason


def test_unequal_groups_and_unseen_cpus_are_no_layout():
    inf = _infer(_within([[0, 1, 2], [3, 4, 5, 6, 7]], 5))
    assert inf.llc is None and "unequal groups (3, 5 CPUs)" in inf.reason
    # CPUs seen in no move: placed only where forced (one group short of exactly them)
    assert _infer(_within([[0, 1, 2, 3], [4, 5, 6]], 5)).llc == [[0, 1, 2, 3], [4, 5, 6, 7]]
    inf = _infer(_within([[0, 1, 2], [4, 5, 6]], 5))
    assert inf.llc is None and inf.reason.startswith(
        "no wake-up placed a task from or onto CPU 3,7"
    )
    # (two groups seen, of 4 and 2: 6-7 can only complete the second to 4)
    assert _infer(_within([[0, 1, 2, 3], [4, 5]], 5)).llc == [[0, 1, 2, 3], [4, 5, 6, 7]]
    inf = _infer(_within([[0, 1], [2, 3], [4, 5]], 8))  # 6-7 unseen: not placed
    assert inf.llc is None and inf.reason.startswith(
        "no wake-up placed a task from or onto CPU 6-7"
    )


def test_real_time_tasks_say_nothing():
    """prio < 100: placed across the root domain (find_lowest_rq), not in an LLC."""
    rows = _within([[0, 1, 2, 3], [4, 5, 6, 7]], 3) + [(0, 98, 0, 4)] * 5
    assert _infer(rows).llc == [[0, 1, 2, 3], [4, 5, 6, 7]]
    # the same moves by a fair task join the groups: one LLC
    rows = rows[:-5] + [(0, 120, 0, 4)]
    assert _infer(rows).llc == [list(range(8))]


def test_other_wake_ups_must_agree():
    """A wake-up whose waker is not on the previous CPU lands in the LLC of one of the
    two (select_idle_sibling of prev or of the waker): else the groups are wrong."""
    base = _within([[0, 1, 2, 3], [4, 5, 6, 7]], 3)
    agree = [(0, 120, 5, 1)] * 50 + [(0, 120, 5, 6)] * 50  # waker 0, prev 5
    assert _infer(base + agree).llc is not None
    assert _infer(base + agree + [(0, 120, 1, 5)]).llc is not None  # 1 of 101: tolerated
    disagree = [(0, 120, 1, 5)] * 5  # waker and prev in group 0, chosen in group 1
    inf = _infer(base + agree + disagree)
    assert inf.llc is None and "5 of 105 other wake-ups" in inf.reason


def test_topology_sources_in_order(tmp_path):
    """A file or --llc beats inference; inference beats the assumption."""
    t = _alone("kstack-6.1/k61-2llc-dbench-c2-kstack-on.dat", tmp_path)
    assert t.topology.inferred
    t.use_topology(llc=["0-7"])
    assert t.topology.source == "--llc" and t.topology.llc == [list(range(8))]
    t.use_topology()
    assert t.topology.inferred
    t.topology = Topology.single_llc(8)  # set explicitly: kept as given
    assert t.topology.assumed
