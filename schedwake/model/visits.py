"""Where each task was switched in: per (task, CPU) the switch-ins of a span of a
trace, and from them the tasks *pinned* to a CPU (docs/detectors.md,
'idle_while_runnable': a task seen on one CPU only over enough runs, or named as a
per-CPU kthread, cannot take an idle CPU of its LLC, so its waits are no gap).

Switch-ins add up over time spans, so a trace cut in time parts
(:mod:`schedwake.partition`) gives each span's :class:`SwitchIns` and the whole
trace's pinned tasks from all of them (:func:`pinned_of`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ._util import in_span
from .tasks import kthread_cpu

if TYPE_CHECKING:
    from . import Model


@dataclass(frozen=True)
class SwitchIns:
    """The ``sched_switch`` rows of a span ``[t0, t1)`` of a trace (:func:`switch_ins`)."""

    #: How many there are.
    count: int
    #: Per (task, CPU), the task being a life key (:mod:`.lives`; not the idle task):
    #: its switch-ins ``n`` and the first one's time ``first``.
    visits: pd.DataFrame
    #: Per task: the name of its last switch-in.
    names: dict[int, str]
    #: The tasks switched in under a per-CPU kthread's name (the idle task included).
    kthreads: np.ndarray
    #: Per CPU: the time of its first switch in the span.
    first_switch: dict[int, int]


def switch_ins(model: Model, t0: int | None, t1: int | None) -> SwitchIns:
    """The :class:`SwitchIns` of ``model``'s switches in ``[t0, t1)`` (None: open)."""
    ev = model.events
    s = ev.switch
    empty = pd.DataFrame({"task": [], "cpu": [], "n": [], "first": []}, dtype=np.int64)
    if s is None or not len(s):
        return SwitchIns(0, empty, {}, np.zeros(0, np.int64), {})
    ts = s["ts"].to_numpy(dtype=np.int64)
    at = np.flatnonzero(in_span(ts, t0, t1))
    if not len(at):
        return SwitchIns(0, empty, {}, np.zeros(0, np.int64), {})
    cpu = s["cpu"].to_numpy().astype(np.int64)[at]
    c, first = np.unique(cpu, return_index=True)
    first_switch = dict(zip(c.tolist(), ts[at][first].tolist()))
    task = np.asarray(ev.key(s["next_pid"].to_numpy()[at], ts[at])).astype(np.int64)
    comm = s["next_comm"].array
    kcat = np.array([kthread_cpu(str(c)) >= 0 for c in comm.categories] + [False])
    codes = np.asarray(comm.codes)[at]
    kthreads = np.unique(task[kcat[np.where(codes < 0, len(kcat) - 1, codes)]])
    count = len(at)
    sel = task != 0
    at, task, cpu = at[sel], task[sel], cpu[sel]
    g = pd.DataFrame({"task": task, "cpu": cpu, "ts": ts[at]}).groupby(["task", "cpu"])
    visits = pd.DataFrame({"n": g.size(), "first": g["ts"].min()}).reset_index()
    rev, last = np.unique(task[::-1], return_index=True)
    rows = at[len(task) - 1 - last]
    codes = np.asarray(comm.codes)[rows]
    names = {
        int(k): ("nan" if c < 0 else str(comm.categories[c]))
        for k, c in zip(rev.tolist(), codes.tolist())
    }
    return SwitchIns(count, visits, names, kthreads, first_switch)


def task_visits(spans: Sequence[pd.DataFrame]) -> tuple[pd.Series, pd.Series] | None:
    """Per task (index: its life key, sorted), its switch-ins and the CPUs it was
    switched in on, from the :attr:`SwitchIns.visits` of spans that do not overlap;
    None without switch-ins."""
    frames = [v for v in spans if len(v)]
    if not frames:
        return None
    v = pd.concat(frames).groupby(["task", "cpu"])["n"].sum().reset_index()
    g = v.groupby("task")
    return g["n"].sum(), g["cpu"].size()


def pinned_of(spans: Sequence[SwitchIns], min_runs: int) -> np.ndarray:
    """The pinned tasks (life keys, sorted; the idle task when switched in) of the
    switch-ins of spans that do not overlap: seen on one CPU only over ``min_runs``
    switch-ins or more, or named as a per-CPU kthread."""
    kthreads = np.unique(np.concatenate([s.kthreads for s in spans] or [np.zeros(0, np.int64)]))
    visited = task_visits([s.visits for s in spans])
    if visited is None:
        return kthreads.astype(np.int64)
    runs, ncpus = visited
    single = runs.index.to_numpy()[((ncpus == 1) & (runs >= min_runs)).to_numpy()]
    return np.union1d(single, kthreads).astype(np.int64)
