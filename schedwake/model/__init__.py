"""The model: tables derived from the event tables (docs/architecture.md,
'The model's tables').

``Model(trace, topology)`` builds, once and vectorized:

* ``wakeups``   one row per wake-up (:mod:`.wakeups`);
* ``migrations``every ``sched_migrate_task`` with cause and topology class (:mod:`.migrations`);
* ``occupancy`` per-CPU running/idle intervals and runnable waits (:mod:`.occupancy`);
* ``waits``     waits to run as ``perf sched latency`` counts them (:mod:`.waits`);
* ``task_states`` per-task running/runnable/sleeping/blocked intervals (:mod:`.task_states`);
* ``caveats``   plain-English list of what could not be computed and why.

``Trace.wakeups()``, ``Trace.migrations()``, ``Trace.occupancy()`` return these.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pandas as pd

from . import completeness as _completeness
from . import migrations as _migrations
from . import occupancy as _occupancy
from . import task_states as _task_states
from . import waits as _waits
from . import wakeups as _wakeups
from ._util import (
    asof_index,
    cat_mask,
    gap_sweep,
    in_span,
    key_groups,
    last_rows,
    member,
    overlaps_union,
    pid_cpu_counts,
    shared_orders,
    stable_order,
)  # (the model's helpers other layers use)
from .events import MODEL_EVENTS, NO_CONTEXT_CAVEAT, Events, load_events
from .memo import Memo, TraceTables
from .whole import WholeFacts

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..topology import Topology
    from .completeness import Told

__all__ = [
    "Model",
    "MODEL_EVENTS",
    "Events",
    "Memo",
    "ModelSource",
    "asof_index",
    "cat_mask",
    "gap_sweep",
    "in_span",
    "key_groups",
    "last_rows",
    "member",
    "overlaps_union",
    "pid_cpu_counts",
    "shared_orders",
    "stable_order",
]


class ModelSource(TraceTables, Protocol):
    """What a model is built from (:class:`schedwake.Trace`): the tables, and for a
    slice the whole trace, whose model tells what happened outside it."""

    @property
    def slice_of(
        self,
    ) -> tuple[ModelSource, int | None, int | None, tuple[int, ...] | None] | None: ...

    @property
    def model(self) -> Model: ...

    @property
    def whole_facts(self) -> WholeFacts | None: ...


class Model:
    """The derived tables of one trace under one topology."""

    def __init__(
        self, trace: ModelSource, topology: Topology, pids: Iterable[int] | None = None
    ) -> None:
        self.trace = trace
        self.topology = topology
        #: When set (``analyze --pid``), the tasks the tables are about: wake-ups whose
        #: wakee, migrations whose task and waits whose task is one of them. The tables
        #: are built from every event (who ran where is the context of each row) and
        #: then narrowed; the CPUs' running and idle intervals stay whole.
        self.pids: frozenset[int] | None = None if pids is None else frozenset(map(int, pids))
        self.events: Events = load_events(trace)
        if trace.slice_of is not None:  # (a slice's pids live as the whole trace's do)
            self.events.lives = trace.slice_of[0].model.events.lives
        #: For a time part of a trace (:mod:`schedwake.partition`): the whole trace's
        #: facts its model uses instead of its own (:mod:`.whole`).
        self.whole_facts = trace.whole_facts
        if self.whole_facts is not None:
            self.events.lives = self.whole_facts.lives
        self._mig_w = _wakeups.match_wakeup_migrations(self.events)
        #: Small results derived from the tables that more than one reader needs
        #: (detectors and metrics), each in its field (:class:`.memo.Memo`).
        self.memo = Memo()

    @property
    def caveats(self) -> list[str]:
        """What this model cannot tell, one plain-English line each (:func:`caveats`)."""
        has_switch = self.events.switch is not None and len(self.events.switch) > 0
        unjudged = 0
        if NO_CONTEXT_CAVEAT in self.events.caveats:
            unjudged = int(unjudged_pingpong(self.wakeups).sum())
        return caveats(
            self.events.caveats,
            self.completeness.told() if has_switch else None,
            unjudged,
            self.pids,
            self.topology,
        )

    @cached_property
    def whole(self) -> tuple[Model, int, int, tuple[int, ...] | None] | None:
        """For a slice of a trace (``Trace.sliced``, ``analyze --time/--cpu``): the whole
        trace's model, the window's bounds and the CPUs kept (None: all); None for a
        whole trace. What happened outside the slice is the whole trace's to tell: a
        wait that leaves the slice (its task moved to or ran on another CPU, or it ends
        after the window) is cut there, never idle or waiting time."""
        sl = self.trace.slice_of
        if sl is None:
            return None
        trace, t0, t1, cpus = sl
        m = trace.model
        c = m.completeness
        lo = c.t_start if t0 is None else max(int(t0), c.t_start)
        hi = c.t_end if t1 is None else min(int(t1), c.t_end)
        return m, lo, hi, cpus

    @cached_property
    def completeness(self) -> _completeness.Completeness:
        """What the trace proves of who ran on each CPU, and what it does not show
        (:mod:`.completeness`): the per-CPU timeline with its unknown stretches, the
        runs of every task, the contradictions. A slice's is the whole trace's cut to
        it."""
        if self.whole is not None:
            m, lo, hi, cpus = self.whole
            return _completeness.clip(m.completeness, lo, hi, cpus)
        return _completeness.build(self.trace, self.events)

    @cached_property
    def _wait_migrations(self) -> pd.DataFrame | None:
        """The migrations that can end a wait: the whole trace's for a slice (a task is
        moved off the slice's CPUs by a CPU outside it)."""
        return self.events.migrate if self.whole is None else self.whole[0].events.migrate

    def cpu_time(
        self, t0: int | None = None, t1: int | None = None, cpus: Iterable[int] | None = None
    ) -> pd.DataFrame:
        """Per CPU: busy, idle and unknown time, recorded and missing switches over
        ``[t0, t1)`` (:meth:`.completeness.Completeness.cpu_time`)."""
        return self.completeness.cpu_time(t0, t1, cpus)

    @property
    def duration_ns(self) -> int:
        return self.events.duration_ns

    @cached_property
    def all_wakeups(self) -> pd.DataFrame:
        """Every wake-up of the trace, whatever :attr:`pids` says."""
        window = None if self.whole is None else self.whole[2:]
        return _wakeups.build(
            self.events, self.topology, self._mig_w, self.completeness.runs, window
        )

    @cached_property
    def wakeups(self) -> pd.DataFrame:
        w = self.all_wakeups
        return w if self.pids is None else self._of_pids(w, "wakee_pid")

    @cached_property
    def migrations(self) -> pd.DataFrame:
        m = _migrations.build(self.events, self.topology, self._mig_w)
        return m if self.pids is None else self._of_pids(m, "pid")

    @cached_property
    def occupancy(self) -> pd.DataFrame:
        occ = _occupancy.build(
            self.events,
            self.all_wakeups,
            self.completeness,
            self._wait_migrations,
            None if self.whole is None else self.whole[1:],
        )
        beyond = None if self.whole_facts is None else self.whole_facts.waits_beyond
        if beyond is not None and len(beyond):  # (after its own rows: never a part's own)
            occ = _occupancy.with_waits(occ, beyond)
        if self.pids is None:
            return occ
        keep = (occ["state"] != "waiting").to_numpy() | np.isin(
            occ["pid"].to_numpy(), list(self.pids)
        )
        return occ[keep].reset_index(drop=True)

    def _of_pids(self, table: pd.DataFrame, column: str) -> pd.DataFrame:
        if len(table) == 0:
            return table
        keep = np.isin(table[column].to_numpy(), list(self.pids or ()))
        return table[keep].reset_index(drop=True)

    @cached_property
    def all_waits(self) -> pd.DataFrame:
        """Every wait to run of the trace (woken and preempted, :mod:`.waits`),
        whatever :attr:`pids` says."""
        if self.whole is None:
            return _waits.build(self.events, self.completeness.runs)
        _, lo, hi, cpus = self.whole
        runs = self.completeness.runs
        # (the runs from the window on: a wait of the slice begins in it)
        w = _waits.build(self.events, runs[(runs["start_ts"].to_numpy() >= lo)])
        return _waits.cut_to_slice(w, self._wait_migrations, hi, cpus)

    @cached_property
    def waits(self) -> pd.DataFrame:
        w = self.all_waits
        return w if self.pids is None else self._of_pids(w, "pid")

    @cached_property
    def preempted_waits(self) -> pd.DataFrame:
        """The rows of :attr:`waits` of kind ``preempted``, in its order: taken from it
        when built, else found from the switches alone (:func:`.waits.preempted`: what
        ``analyze`` reads of the waits, without the woken waits' wake-ups)."""
        if "waits" in self.__dict__:
            w = self.waits
            return w[(w["kind"] == "preempted").to_numpy()]
        if self.whole is None:
            w = _waits.preempted(self.events, self.completeness.runs)
        else:
            _, lo, hi, cpus = self.whole
            runs = self.completeness.runs
            w = _waits.preempted(self.events, runs[(runs["start_ts"].to_numpy() >= lo)])
            w = _waits.cut_to_slice(w, self._wait_migrations, hi, cpus)
        return w if self.pids is None else self._of_pids(w, "pid")

    @cached_property
    def cpu_index(self) -> _waits.CpuIndex:
        """Per CPU, its switches in time order: what :func:`.waits.breakdown` reads."""
        return _waits.CpuIndex(
            self.events,
            self.completeness.timeline,
            self.trace.lost,
            self._wait_migrations,
            None if self.whole is None else self.whole[3],
        )

    @cached_property
    def first_switch_ts(self) -> dict[int, int]:
        """Per CPU, where its timeline begins: its first sched_switch (a slice's: its
        window's start, when the whole trace knows the CPU from before it)."""
        return dict(self.completeness.first_switch)

    @cached_property
    def task_states(self) -> pd.DataFrame:
        """Every task's time in each state, one row per interval (whatever :attr:`pids`
        says: :func:`.task_states.totals` sums them, the readers pick the tasks). For a
        time slice of a trace, the whole trace's intervals cut to the slice: a task's
        state at the slice's start is the one the events before it gave."""
        if self.whole is not None:
            m, lo, hi, cpus = self.whole
            iv = _task_states.clipped(m.task_states, lo, hi)
            if cpus is not None:  # (time off the slice's CPUs is outside it)
                iv = iv[np.isin(iv["cpu"].to_numpy(), list(cpus))].reset_index(drop=True)
            return iv
        return _task_states.build(self.events, self.completeness.runs, self._unseen_for_states)

    @cached_property
    def task_state_sums(self) -> _task_states.StateSums:
        """``StateSums.of(self.task_states)``: every task's ns in each state per task, CPU
        and both; summed by the scan that cuts the intervals, without making them, while
        nothing has asked for them (``analyze`` reads only their sums)."""
        if self.whole is not None or "task_states" in self.__dict__:
            return _task_states.StateSums.of(self.task_states)
        return _task_states.build_sums(self.events, self.completeness.runs, self._unseen_for_states)

    @property
    def _unseen_for_states(self) -> np.ndarray | None:
        """The tasks the trace shows running unseen, as the task states read them: the
        whole trace's in a time part of it."""
        return self.unseen_tasks if self.whole_facts is None else self.whole_facts.unseen_tasks

    @property
    def wakeup_migrations(self) -> np.ndarray:
        """Per ``sched_migrate_task`` row, the row of the wake-up it belongs to (-1: none;
        :func:`.wakeups.match_wakeup_migrations`)."""
        return self._mig_w

    def facts_for_parts(self) -> WholeFacts:
        """This trace's facts that the model of one of its time parts uses instead of its
        own (:mod:`.whole`, :mod:`schedwake.partition`)."""
        return WholeFacts(lives=self.events.lives, unseen_tasks=self.unseen_tasks)

    @cached_property
    def unseen_tasks(self) -> np.ndarray | None:
        """The tasks (life keys, sorted) the trace shows running unseen (``rewoken``
        contradictions, :mod:`.completeness`); None for a complete trace."""
        comp = self.completeness
        if comp.complete:
            return None
        b = comp.breaks[(comp.breaks["kind"] == "rewoken").to_numpy()]
        return np.unique(self.events.key(b["pid"].to_numpy(), b["ts"].to_numpy()))


def unjudged_pingpong(w: pd.DataFrame) -> np.ndarray:
    """The wake-ups (rows of a wakeups table) kworker_pingpong cannot judge without the
    waker's context: a per-CPU kthread moved its wakee off its own CPU, in a context
    the trace does not tell (task or interrupt)."""
    return (
        (w["waker_class"] == "percpu_kthread")
        & (w["waker_context"] == "unknown")
        & (w["waker_cpu"] == w["prev_cpu"])
        & w["migrated"]
    ).to_numpy()


def caveats(
    events_caveats: list[str],
    told: Told | None,
    unjudged: int,
    pids: frozenset[int] | None,
    topology: Topology,
) -> list[str]:
    """A model's caveats: those of its events (:func:`.events.events_caveats`), what
    its completeness tells (``told``; None without switches), the ping-pong wake-ups
    it cannot judge (``unjudged``: :func:`unjudged_pingpong`), the tasks it is about
    and where its topology came from."""
    out = list(events_caveats)
    if told is not None and not told.complete:
        out.append(
            "the trace does not show everything ("
            + "; ".join(told.describe())
            + "): occupancy, waits, latencies and task states count only what it "
            "proves, the rest is unknown (docs/semantics.md, 'Incomplete traces')"
        )
    if NO_CONTEXT_CAVEAT in out and unjudged:
        # the kworker ping-pong needs the waker's context: say how many wake-ups it
        # could not judge, rather than a silent zero
        out.append(
            f"kworker_pingpong could not judge {unjudged} wake-ups by per-CPU "
            "kthreads that moved their wakee off the waker's CPU: their context "
            "(task or interrupt) is unknown"
        )
    if pids is not None:
        out.insert(
            0,
            "analysed only the wake-ups, migrations, waits and context switches of pid(s) "
            + ", ".join(map(str, sorted(pids)))
            + "; CPU busy time is every task's",
        )
    if topology.assumed:
        out.insert(
            0,
            "no topology given: one LLC holding every CPU is assumed, so "
            "cross-LLC figures are zero by construction"
            + (f" (not inferred: {topology.note})" if topology.note else ""),
        )
    elif topology.inferred:
        out.insert(
            0,
            f"no topology given: {len(topology.llc)} LLC(s) inferred from the "
            f"trace ({topology.note}); a topology file gives the machine's own map",
        )
    elif topology.note:  # a file's map that does not fit the trace
        out.insert(0, f"topology {topology.source}: {topology.note}")
    return out
