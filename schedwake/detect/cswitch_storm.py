"""Context-switch storm (docs/detectors.md, 'cswitch_storm').

A task and the kworker that completes its IO take turns on one CPU: the kworker wakes
the task and is preempted by it at once (``prev_state`` ``R+``), the task finds its IO
not done and sleeps again, the kworker resumes, wakes it again, and so on. Judged per
(CPU, user task) from what the trace shows about itself, never from a time or a rate
fixed on one machine (a slower machine runs the same storm at a tenth of the rate, each
run ten times longer; docs/detectors.md):

``kworker_preemptions``
    switches from a kworker to the task with the kworker preempted (``R+``);
``kworker_switchouts``
    every switch-out, on that CPU, of the task's *storm kworkers*: the (kworker, work
    function) pairs it preempts at ``storm_min_preempted_share`` of their switch-outs or
    more (they could rarely run to the end of their work before the task took the CPU);
    ``kworker_preemptions`` counts the preemptions of those only. A kworker's switch-out
    belongs to the work function it started last (``workqueue_execute_start`` of its
    pid, ended or not: the dio-completion kworker is preempted at the ``cond_resched()``
    right after its work item), so a kworker that also runs other work (a high-priority
    kworker dispatching blk-mq requests 40,000 times) does not dilute the share of the
    work the task preempts; without workqueue events the unit is the kworker;
``cpu_switches``
    every ``sched_switch`` on the CPU: ``kworker_preemptions / cpu_switches`` is the
    storm's share of the CPU's own switch rate;
``futile_wakeups``
    wake-ups of the task that preempted a kworker and then slept again with the CPU
    going back to that kworker before the task ran again (:func:`futile_mask`): it
    woke too early, for nothing;
``switches``
    task <-> kworker switches on the CPU (both directions), for the report.

In stages, which a whole trace and its time parts both run through
(:mod:`schedwake.analysis.part_findings`): a :class:`Measure` of some switches and
wake-ups (the whole trace's, a part's own) that adds up (:meth:`Measure.add`: a futile
wake-up a part cannot settle is settled by the later parts' first switch-ins,
:func:`settle`); the units and pairs judged once over the sums (:func:`units`,
:func:`pairs`, :func:`judge`); the worst pair's cycle shown (:func:`cycles` of
:func:`preemption_rows`, :func:`middle_cycle`) and the kworkers it names
(:func:`kworker_switchins`, :func:`top_kworkers`) found where the trace is.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..model import asof_index, key_groups, last_rows, member
from ..model.lives import pid_of
from ..model.masks import (
    futile_mask,
    kworker_preemptions,
    preempting_wakeups,
    switch_kworkers,
)
from .base import EvidenceAt, Finding, FindingMetrics, Shown, Threshold, Thresholds

if TYPE_CHECKING:
    from ..model import Model
    from ..trace import Trace

NAME = "cswitch_storm"
#: The events it cannot judge without, one of each group (base.Detector.EVENTS).
EVENTS: tuple[tuple[str, ...], ...] = (("sched_switch",),)

THRESHOLDS: tuple[Threshold, ...] = (
    Threshold(
        "storm_min_preempted_share",
        0.75,
        "fraction",
        "lowest share of the switch-outs of the kworkers the task preempts on the CPU "
        "that are those preemptions (R+)",
    ),
    Threshold(
        "storm_min_cpu_share",
        0.05,
        "fraction",
        "lowest share of the CPU's context switches that are kworkers preempted by the task",
    ),
    Threshold(
        "storm_min_preemptions",
        100,
        "preemptions",
        "fewest kworker preemptions by the task in the trace for a finding",
        slice_floor=10,
    ),
    Threshold(
        "storm_high_preempted_share",
        0.8,
        "fraction",
        "preempted share from which the finding is high",
    ),
)

#: How reports show its findings (base.Detector.SHOWN).
SHOWN = Shown(
    key_metrics=(
        "cpu",
        "task",
        "switches_per_s",
        "kworker_preemptions",
        "futile_wakeups",
        "futile_share",
        "kworkers",
    ),
    top_weight="kworker_preemptions",
)


def _switch_work(model: Model) -> np.ndarray:
    """For each ``sched_switch`` row (memoized): the code of the work function its prev
    task started last (``workqueue_execute_start`` of that task at or before the switch,
    ended or not; categories :func:`work_functions`), -1 without one (not a kworker, or
    no workqueue events in the trace). The task is its life key (:mod:`.model.lives`):
    a work item of an earlier task of the pid is not its."""
    if model.memo.storm_switch_work is not None:
        return model.memo.storm_switch_work
    s, wq = model.events.switch, model.events.wq_start
    out = np.full(0 if s is None else len(s), -1, dtype=np.int64)
    if s is not None and len(s) and wq is not None and len(wq) and "function" in wq.columns:
        rows = np.flatnonzero(switch_kworkers(model)[0])
        fn = pd.Categorical(wq["function"].array)
        ev = model.events
        sts = s["ts"].to_numpy()[rows].astype(np.int64)
        wts = wq["ts"].to_numpy().astype(np.int64)
        idx = asof_index(
            sts,
            ev.key(s["prev_pid"].to_numpy()[rows].astype(np.int64), sts),
            wts,
            ev.key(wq["common_pid"].to_numpy().astype(np.int64), wts),
            "backward",
            True,
        )
        codes = np.asarray(fn.codes).astype(np.int64)
        out[rows] = np.where(idx >= 0, codes[np.maximum(idx, 0)], -1)
    model.memo.storm_switch_work = out
    return out


def work_functions(model: Model) -> list[str]:
    """The names of the work function codes of :func:`_switch_work`."""
    wq = model.events.wq_start
    if wq is None or len(wq) == 0 or "function" not in wq.columns:
        return []
    return [str(c) for c in pd.Categorical(wq["function"].array).categories]


def switch_work_names(model: Model, rows: np.ndarray) -> np.ndarray:
    """For the ``sched_switch`` rows ``rows``, the name of the work function
    :func:`_switch_work` gives each ("" without one): names, which a time part of the
    trace shares with the whole (the codes are each model's own); a string for the rows
    asked, not for every switch."""
    names = np.array([*work_functions(model), ""], dtype=object)
    return names[_switch_work(model)[rows]]  # (-1: the last, "")


def unit_table(model: Model, th: Thresholds) -> pd.DataFrame:
    """One row per (cpu, task, kworker, work function) whose kworker the task preempted
    while (or right after) running that function: ``pre`` preemptions, ``outs``
    switch-outs of the kworker on the CPU attributed to the function, and ``storm``
    (``pre >= storm_min_preempted_share * outs``: :func:`units`). ``fn`` is a code of
    :func:`work_functions` (-1: none known). ``task`` and ``kw`` are tasks, life keys
    (:mod:`schedwake.model.lives`: the pid, but for a later task of a pid used again);
    ``pid`` is the task's pid."""
    cols = ["cpu", "pid", "task", "kw", "fn", "pre", "outs", "storm"]
    tri = units(*unit_counts(model, preempted_only=True), th)
    codes = {name: k for k, name in enumerate(work_functions(model))}
    tri["fn"] = np.array([codes.get(f, -1) for f in tri["fn"]], dtype=np.int64)  # per unit
    tri["pid"] = pid_of(tri["task"].to_numpy()).astype(np.int64)
    return tri[cols]


def unit_counts(
    model: Model,
    switches: np.ndarray | None = None,
    window: Callable | None = None,
    preempted_only: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What the storm's units are judged by (:func:`units`), of the switches
    ``switches`` (a mask over ``sched_switch``: a time part's own; None: all): the
    kworker preemptions per (cpu, task, kw, fn) (``fn``: the work function's name,
    :func:`switch_work_names`, "" without one): ``n`` and the first one's time; every
    switch-out per (cpu, kw, fn) (``kw``: the task switched out): ``n``. Counts of
    parts of the switches add up. ``window``: a function of the switches' times giving
    each one's window, by which both are counted too (column ``win``).
    ``preempted_only``: the switch-outs of the kworkers these switches preempt only
    (all that :func:`units` looks up of these preemptions alone; not for a part of a
    trace, whose switch-outs add up with the other parts' preemptions; of every switch
    memoized: the detector's measure and its unit table both read them)."""
    whole = switches is None and window is None and preempted_only
    if whole and model.memo.storm_unit_counts is not None:
        return model.memo.storm_unit_counts
    pre, outs = _unit_counts(model, switches, window, preempted_only)
    if whole:
        model.memo.storm_unit_counts = (pre, outs)
    return pre, outs


def _unit_counts(
    model: Model,
    switches: np.ndarray | None,
    window: Callable | None,
    preempted_only: bool,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`unit_counts`, computed."""
    s = model.events.switch
    by = ["win"] if window is not None else []
    pre_cols = ["cpu", "task", "kw", "fn", *by, "n", "first"]
    out_cols = ["cpu", "kw", "fn", *by, "n"]
    c = kworker_preemptions(model)
    if s is None or not len(s) or not len(c["rows"]):
        return _empty(pre_cols), _empty(out_cols)
    mine = np.ones(len(s), dtype=bool) if switches is None else switches
    at = mine[c["rows"]]
    pre_ts = c["ts"][at].astype(np.int64)
    g = pd.DataFrame(
        {
            "cpu": c["cpu"][at].astype(np.int64),
            "task": c["task"][at].astype(np.int64),
            "kw": c["kworker"][at].astype(np.int64),
            "fn": switch_work_names(model, c["rows"][at]),
            **({"win": window(pre_ts)} if window is not None else {}),
            "ts": pre_ts,
        }
    ).groupby(["cpu", "task", "kw", "fn", *by])["ts"]
    pre = pd.DataFrame({"n": g.size(), "first": g.min()}).reset_index()
    # (all the switches: no copy of each column through a mask)
    rows = slice(None) if switches is None else np.flatnonzero(mine)
    if preempted_only:  # (one table lookup, then the few switch-outs grouped)
        rows = np.flatnonzero(member(_prev_tasks(model), c["kworker"][at]) & mine)
    # every switch-out per (cpu, kw, fn[, win]), as a group-by of the names would give it
    # (in the order of cpu, kw, then name), counted over the names' ranks
    names = sorted(set(work_functions(model)) | {""})
    rank = {name: k for k, name in enumerate(names)}
    fn_rank = np.array([rank[f] for f in [*work_functions(model), ""]], dtype=np.int64)
    keys = [
        s["cpu"].to_numpy()[rows],
        _prev_tasks(model)[rows],
        fn_rank[_switch_work(model)[rows]],  # (-1, no work function: the last, "")
    ]
    if window is not None:
        keys.append(window(s["ts"].to_numpy()[rows].astype(np.int64)))
    first, n, _ = key_groups(keys)
    outs = pd.DataFrame(
        {
            "cpu": first[0].astype(np.int64),
            "kw": first[1].astype(np.int64),
            "fn": np.array(names, dtype=object)[first[2]],
            **({"win": first[3]} if window is not None else {}),
            "n": n,
        }
    )
    return pre, outs


def units(pre: pd.DataFrame, outs: pd.DataFrame, th: Thresholds) -> pd.DataFrame:
    """The units of :func:`unit_counts`' counts (of the whole trace, or added up over
    its parts), judged: per (cpu, task, kw, fn) ``pre`` preemptions, ``outs`` the
    (cpu, kw, fn)'s switch-outs, and ``storm`` (``pre >= storm_min_preempted_share *
    outs``: a unit the task preempts at that share of its switch-outs or more)."""
    tri = pre.rename(columns={"n": "pre"})[["cpu", "task", "kw", "fn", "pre"]].copy()
    n = outs.set_index(["cpu", "kw", "fn"])["n"]
    key = pd.MultiIndex.from_frame(tri[["cpu", "kw", "fn"]])
    tri["outs"] = n.reindex(key).fillna(0).to_numpy().astype(np.int64)
    tri["storm"] = tri["pre"] >= th["storm_min_preempted_share"] * tri["outs"]
    return tri


def _empty(cols: list[str]) -> pd.DataFrame:
    return pd.DataFrame({k: np.zeros(0, dtype=object if k == "fn" else np.int64) for k in cols})


def storm_mask(model: Model, th: Thresholds) -> np.ndarray:
    """The kworker preemptions of :func:`~schedwake.model.masks.kworker_preemptions` that
    are of a storm unit of their task (a (kworker, work function) it preempts at
    ``storm_min_preempted_share`` of its switch-outs or more)."""
    c = kworker_preemptions(model)
    if len(c["rows"]) == 0:
        return np.zeros(0, dtype=bool)
    u = unit_table(model, th)
    hot = u[u["storm"]]
    if len(hot) == 0:
        return np.zeros(len(c["rows"]), dtype=bool)
    work = _switch_work(model)[c["rows"]]
    key = pd.MultiIndex.from_arrays([c["cpu"], c["task"], c["kworker"], work])
    return key.isin(pd.MultiIndex.from_frame(hot[["cpu", "task", "kw", "fn"]]))


def storm_measure(model: Model, th: Thresholds) -> dict[str, np.ndarray]:
    """The storm's events of the whole trace, finding or not (the metrics ``storm_*``),
    over the kworker preemptions by user tasks (the tasks of ``model.pids`` when set) of
    the (CPU, task) pairs with ``storm_min_preemptions`` of them or more (a task that
    preempted a kworker twice is no storm):

    ``preemption_ts``, ``preemption_unit``, ``preemption_storm``
        each preemption's time, the id of its (CPU, kworker, work function) unit and
        whether the unit is a storm unit of its task (:func:`storm_mask`; counted only
        for pairs with ``storm_min_preemptions`` such preemptions or more);
    ``switchout_ts``, ``switchout_unit``
        every switch-out of those units (the preemptions are switch-outs too).
    """
    c = kworker_preemptions(model)
    e = np.zeros(0, np.int64)
    none = {"preemption_ts": e, "preemption_unit": e, "preemption_storm": e.astype(bool),
            "switchout_ts": e, "switchout_unit": e}  # fmt: skip
    if len(c["rows"]) == 0:
        return none
    from ..model.tasks import USER, name_class

    tasks = np.unique(c["task"])
    names = _names(model, member(_next_tasks(model), tasks))  # (only theirs are asked)
    user = tasks[[name_class(names.get(int(p), "?"), _pid(p)) == USER for p in tasks]]  # per task
    if model.pids is not None:
        user = user[np.isin(pid_of(user), list(model.pids))]
    least = max(th["storm_min_preemptions"], 1)
    # a (CPU, task) pair: the task's rank among the tasks fits in 32 bits, a life key may not
    pair = c["cpu"].astype(np.int64) * (1 << 32) + np.searchsorted(tasks, c["task"])
    mine = np.isin(c["task"], user)
    keys, n = np.unique(pair[mine], return_counts=True)
    mine &= np.isin(pair, keys[n >= least])
    if not mine.any():
        return none
    storm = storm_mask(model, th) & mine
    keys, n = np.unique(pair[storm], return_counts=True)
    storm &= np.isin(pair, keys[n >= least])
    s = model.events.switch
    assert s is not None  # (a kworker preemption is a switch)
    work = _switch_work(model)
    unit_of = pd.MultiIndex.from_arrays([c["cpu"][mine], c["kworker"][mine], work[c["rows"][mine]]])
    units = unit_of.unique()
    prev_pid = _prev_tasks(model)
    outs = np.flatnonzero(member(prev_pid, units.get_level_values(1).to_numpy()))
    out_unit = units.get_indexer(
        pd.MultiIndex.from_arrays(
            [s["cpu"].to_numpy()[outs].astype(np.int64), prev_pid[outs], work[outs]]
        )  # fmt: skip
    )
    ts = s["ts"].to_numpy().astype(np.int64)
    return {
        "preemption_ts": c["ts"][mine].astype(np.int64),
        "preemption_unit": units.get_indexer(unit_of).astype(np.int64),
        "preemption_storm": storm[mine],
        "switchout_ts": ts[outs[out_unit >= 0]],
        "switchout_unit": out_unit[out_unit >= 0].astype(np.int64),
    }


def weighted_preempted_share(pre_unit: np.ndarray, out_unit: np.ndarray) -> float | None:
    """The preempted share of the units, weighted by their preemptions: the mean over
    the preemptions of the share of their unit's switch-outs that are preemptions
    (``sum(pre_u ** 2 / outs_u) / sum(pre_u)``); None without preemptions. A unit
    preempted once (a busy kworker that does other work) weighs one preemption, so it
    cannot dilute the share of the units the task preempts all the time."""
    if len(pre_unit) == 0:
        return None
    n = int(max(pre_unit.max(), out_unit.max() if len(out_unit) else 0)) + 1
    pre = np.bincount(pre_unit, minlength=n).astype(np.float64)
    outs = np.bincount(out_unit, minlength=n).astype(np.float64)
    hit = pre > 0
    return float((pre[hit] ** 2 / np.maximum(outs[hit], pre[hit])).sum() / pre[hit].sum())


def _count(cpus: np.ndarray, pids: np.ndarray) -> pd.Series:
    """How many times each (cpu, pid) occurs, indexed by (cpu, pid)."""
    return pd.Series(1, index=pd.MultiIndex.from_arrays([cpus, pids])).groupby(level=[0, 1]).sum()


#: A switch-in never seen (:func:`settle`).
NEVER = np.iinfo(np.int64).max


@dataclass
class Measure:
    """What the detector counts of a trace's switches and wake-ups: of the whole trace
    (:func:`measure`), or of a time part's own (its switches in its span, the wake-ups
    it owns), added up over the parts in time order (:meth:`add`)."""

    #: :func:`unit_counts`: the kworker preemptions per (cpu, task, kw, fn) and the
    #: switch-outs per (cpu, kw, fn).
    pre: pd.DataFrame
    outs: pd.DataFrame
    #: Per CPU its switches; per (cpu, task) the task <-> kworker switches.
    cpu_switches: pd.Series
    switches: pd.Series
    #: Per (cpu, task) (the wake-up's chosen CPU and its wakee): ``wakeups`` and
    #: ``futile_wakeups``.
    wakeups: pd.DataFrame
    #: The wake-ups whose futility the switches after the part settle (:func:`settle`):
    #: their (cpu, task) and the preemption's ``run_cpu`` and ``kworker``.
    open: pd.DataFrame
    #: Per (task, cpu): its first switch-in (what settles the parts before).
    firsts: pd.Series
    #: Each task's last name as a switch-in gives it.
    names: dict[int, str]

    @classmethod
    def add(cls, parts: Sequence[Measure]) -> Measure:
        """The measure of all ``parts`` (in time order), their open wake-ups settled."""
        wakeups = pd.concat([p.wakeups for p in parts])
        settled = []
        for i, p in enumerate(parts):
            if len(p.open):
                futile, _ = settle(p.open, "kworker", "task", [q.firsts for q in parts[i + 1 :]])
                o = p.open[futile]
                settled.append(_count(o["cpu"].to_numpy(), o["task"].to_numpy()))
        wakeups = wakeups.groupby(level=[0, 1]).sum()
        if settled:
            more = pd.concat(settled).groupby(level=[0, 1]).sum()
            wakeups["futile_wakeups"] += more.reindex(wakeups.index).fillna(0).astype(np.int64)
        pre = pd.concat([p.pre for p in parts]).groupby(["cpu", "task", "kw", "fn"])
        outs = pd.concat([p.outs for p in parts]).groupby(["cpu", "kw", "fn"])["n"].sum()
        firsts = pd.concat([p.firsts for p in parts])
        names: dict[int, str] = {}
        for p in parts:
            names.update(p.names)
        return cls(
            pd.DataFrame({"n": pre["n"].sum(), "first": pre["first"].min()}).reset_index(),
            outs.reset_index(),
            pd.concat([p.cpu_switches for p in parts]).groupby(level=0).sum(),
            pd.concat([p.switches for p in parts]).groupby(level=[0, 1]).sum(),
            wakeups,
            parts[-1].open.iloc[:0],
            firsts.groupby(level=[0, 1]).min(),
            names,
        )


def settle(
    cand: pd.DataFrame, kworker: str, task: str, later: Sequence[pd.Series]
) -> tuple[np.ndarray, np.ndarray]:
    """Of kworker preemptions a part leaves open (the task slept; neither it nor the
    kworker switched in again on the CPU ``run_cpu`` of ``cand`` by the part's horizon),
    given the later parts' :attr:`Measure.firsts` in time order: whether each was
    futile (the kworker, column ``kworker``, switched in there before the task, column
    ``task``), and the kworker's return (:data:`NEVER`: never seen)."""
    cpu = cand["run_cpu"].to_numpy()
    first = {}
    for who in (kworker, task):
        at = pd.MultiIndex.from_arrays([cand[who].to_numpy(), cpu])
        out = np.full(len(cand), NEVER, dtype=np.int64)
        for f in later:  # (the first later part where it switches in there)
            seen = f.reindex(at).to_numpy(dtype=np.float64)
            hit = (out == NEVER) & ~np.isnan(seen)
            out[hit] = seen[hit].astype(np.int64)
        first[who] = out
    return first[kworker] < first[task], first[kworker]


def measure(
    model: Model,
    switches: np.ndarray | None = None,
    wakeups: np.ndarray | None = None,
    settled: bool = True,
    preempted_only: bool = False,
) -> Measure:
    """The :class:`Measure` of ``model``'s switches ``switches`` and wake-ups
    ``wakeups`` (masks: a time part's own; None: all). ``settled``: the switches after
    them are the model's (the whole trace, the last part); else the wake-ups whose
    futility the model cannot settle are left :attr:`Measure.open`.
    ``preempted_only``: the switch-outs counted of the kworkers the switches preempt
    only (:func:`unit_counts`: a measure judged alone, never added to others)."""
    s = model.events.switch
    none = np.zeros(0, np.int64)
    pre, outs = unit_counts(model, switches, preempted_only=preempted_only)
    opened = pd.DataFrame({k: none for k in ("cpu", "task", "run_cpu", "kworker")})
    if s is None or not len(s):
        empty = pd.Series(none, index=pd.MultiIndex.from_arrays([none, none]))
        return Measure(
            pre, outs, pd.Series(none), empty,
            pd.DataFrame({"wakeups": empty, "futile_wakeups": empty}), opened, empty, {},
        )  # fmt: skip
    mine = np.ones(len(s), dtype=bool) if switches is None else switches
    ts = s["ts"].to_numpy()
    cpu = s["cpu"].to_numpy().astype(np.int64)
    prev_pid = _prev_tasks(model)
    next_pid = model.events.key(s["next_pid"].to_numpy().astype(np.int64), ts)
    pk, nk = switch_kworkers(model)
    to_task, to_kw = pk & ~nk & (next_pid != 0), ~pk & nk & (prev_pid != 0)
    alt = np.flatnonzero((to_task | to_kw) & mine)
    task = np.where(to_task[alt], next_pid[alt], prev_pid[alt])  # (at those only)
    if switches is None:  # (the whole trace's: no part before it to settle)
        firsts = pd.Series(none, index=pd.MultiIndex.from_arrays([none, none]))
    else:
        g = pd.DataFrame(
            {"task": next_pid[mine], "cpu": cpu[mine], "ts": ts[mine].astype(np.int64)}
        )
        firsts = g.groupby(["task", "cpu"])["ts"].min()
    w = model.wakeups
    wmine = np.ones(len(w), dtype=bool) if wakeups is None else wakeups
    fut = futile_mask(model)
    wpid = model.events.key(w["wakee_pid"].to_numpy(), w["ts"].to_numpy())
    wcpu = w["chosen_cpu"].to_numpy()
    own = slice(None) if wakeups is None else wakeups  # (all: views, not copies)
    wf = _wakeup_counts(wcpu[own], wpid[own], fut[own])
    if not settled:
        rows, j = preempting_wakeups(model, "open")
        theirs = wmine[rows]
        rows, j = rows[theirs], j[theirs]
        kp = kworker_preemptions(model)
        at = np.flatnonzero(kp["open"])[j]
        opened = pd.DataFrame(
            {
                "cpu": wcpu[rows].astype(np.int64),
                "task": wpid[rows].astype(np.int64),
                "run_cpu": kp["cpu"][at].astype(np.int64),
                "kworker": kp["kworker"][at].astype(np.int64),
            }
        )
    return Measure(
        pre,
        outs,
        pd.Series(cpu if switches is None else cpu[switches]).value_counts(),
        _count(cpu[alt], task),
        wf,
        opened,
        firsts,
        _names(model, switches),
    )


def _wakeup_counts(cpu: np.ndarray, task: np.ndarray, futile: np.ndarray) -> pd.DataFrame:
    """Per (cpu, task) of the wake-ups (their chosen CPU, their wakee), as a group-by
    gives them: ``wakeups`` and ``futile_wakeups`` (of ``futile``)."""
    if len(cpu) == 0:
        return (
            pd.DataFrame({"cpu": cpu, "task": task, "f": futile})
            .groupby(["cpu", "task"])
            .agg(wakeups=("f", "size"), futile_wakeups=("f", "sum"))
            .astype(np.int64)
        )
    (gcpu, gtask), n, nfutile = key_groups([cpu, task], futile)
    return pd.DataFrame(
        {"wakeups": n, "futile_wakeups": nfutile},
        index=pd.MultiIndex.from_arrays([gcpu, gtask], names=["cpu", "task"]),
    )


def pairs(m: Measure, th: Thresholds) -> pd.DataFrame:
    """One row per (cpu, task) that preempted a kworker (``task``: its life key,
    :mod:`schedwake.model.lives`, so two tasks that shared a pid are two rows; ``pid``:
    its pid), of the measure ``m``: kworker_preemptions and kworker_switchouts over its
    storm kworkers (the (kworker, work function) pairs it preempts at
    ``storm_min_preempted_share`` of their switch-outs or more: :func:`units`;
    ``storm_kworkers`` distinct kworkers), all_kworker_preemptions, cpu_switches,
    switches, wakeups, futile_wakeups."""
    cols = [
        "cpu",
        "pid",
        "task",
        "kworker_preemptions",
        "kworker_switchouts",
        "storm_kworkers",
        "all_kworker_preemptions",
        "cpu_switches",
        "switches",
        "wakeups",
        "futile_wakeups",
    ]
    if len(m.pre) == 0:
        return pd.DataFrame(columns=cols)
    # per (cpu, task, kworker, work function): the preemptions, and that kworker's
    # switch-outs on the CPU after that function. The task's storm units are those it
    # preempts at the threshold's share of their switch-outs (a task also preempts, now
    # and then, kworkers that do other work: they would dilute the share); the task's
    # figures are over those.
    tri = units(m.pre, m.outs, th)
    storm = tri["storm"].to_numpy()
    per = tri.groupby(["cpu", "task"]).agg(all_kworker_preemptions=("pre", "sum"))
    hot = tri[storm].groupby(["cpu", "task"])
    per["kworker_preemptions"] = hot["pre"].sum().reindex(per.index).fillna(0).astype(np.int64)
    per["kworker_switchouts"] = hot["outs"].sum().reindex(per.index).fillna(0).astype(np.int64)
    per["storm_kworkers"] = hot["kw"].nunique().reindex(per.index).fillna(0).astype(np.int64)
    per["cpu_switches"] = m.cpu_switches.reindex(per.index.get_level_values("cpu")).to_numpy()
    per["switches"] = m.switches.reindex(per.index).fillna(0).astype(np.int64)
    per = per.join(m.wakeups, how="left").fillna({"wakeups": 0, "futile_wakeups": 0})
    per = per.astype({"wakeups": np.int64, "futile_wakeups": np.int64}).reset_index()
    per["pid"] = pid_of(per["task"].to_numpy()).astype(np.int64)
    return per[cols]


def pair_table(model: Model, th: Thresholds) -> pd.DataFrame:
    """:func:`pairs` of the whole trace."""
    return pairs(measure(model, preempted_only=True), th)


#: The kworkers a finding names (those the task took the CPU from most often).
KWORKERS = 5


def detect(trace: Trace, model: Model, th: Thresholds) -> list[Finding]:
    def evidence(cpu: int, task: int, storm: pd.DataFrame) -> EvidenceAt:
        cyc = cycles(preemption_rows(model), cpu, task, storm)
        return cycle_evidence(cyc.iloc[middle_cycle(cyc["futile"].to_numpy())], cpu, task)

    def kworkers(cpu: int, task: int) -> list[dict[str, str | int]]:
        # (the switch-ins of that task on that CPU only: all that top_kworkers reads)
        s = model.events.switch
        assert s is not None  # (a kworker preemption is a switch)
        theirs = (s["cpu"].to_numpy() == cpu) & (_next_tasks(model) == task)
        return top_kworkers(kworker_switchins(model, theirs), cpu, task)

    # (judged alone: the switch-outs of the preempted kworkers are all it looks up)
    m = measure(model, preempted_only=True)
    return judge(m, model.duration_ns, th, model.pids, evidence, kworkers)


def judge(
    m: Measure,
    duration_ns: int,
    th: Thresholds,
    pids: Collection[int] | None,
    evidence: Callable[[int, int, pd.DataFrame], EvidenceAt],
    kworkers: Callable[[int, int], list[dict[str, str | int]]],
) -> list[Finding]:
    """The finding of the measure ``m`` (of the whole trace, or added up over its parts),
    judged once: the (CPU, user task) pairs with ``storm_min_preemptions`` storm
    preemptions and ``storm_min_cpu_share`` of the CPU's switches (of the tasks of
    ``pids`` only, when set: ``analyze --pid``); ``evidence(cpu, task, storm)`` where
    the worst pair's evidence is (``storm``: its storm units, columns kw and fn) and
    ``kworkers(cpu, task)`` the kworkers it took the CPU from are found where the
    trace is."""
    per = pairs(m, th)
    if pids is not None and len(per):  # (analyze --pid): these tasks' storms only
        per = per[per["pid"].isin(list(pids))].copy()
    # (a task is its life key, ``task``: the pid, but for a later task of a pid used again)
    if len(per) == 0:
        return []
    dur_s = max(duration_ns, 1) / 1e9
    per["preempted_share"] = per["kworker_preemptions"] / per["kworker_switchouts"].clip(lower=1)
    per["cpu_share"] = per["kworker_preemptions"] / per["cpu_switches"].clip(lower=1)
    per["futile_share"] = per["futile_wakeups"] / per["wakeups"].clip(lower=1)
    per["switches_per_s"] = per["switches"] / dur_s
    names = m.names
    from ..model.tasks import USER, name_class

    user = np.array(
        [name_class(names.get(int(p), "?"), _pid(p)) == USER for p in per["task"].to_numpy()],
        dtype=bool,
    )  # per task, not per event
    hit = per[
        user
        & (per["kworker_preemptions"] >= max(th["storm_min_preemptions"], 1))
        & (per["cpu_share"] >= th["storm_min_cpu_share"])
    ]
    if len(hit) == 0:
        return []
    hit = hit.sort_values("kworker_preemptions", ascending=False)
    top = [
        {
            "cpu": int(r.cpu),
            "pid": int(r.pid),
            "comm": names.get(int(r.task), "?"),
            "kworker_preemptions": int(r.kworker_preemptions),
            "preempted_share": round(float(r.preempted_share), 4),
            "cpu_share": round(float(r.cpu_share), 4),
            "switches": int(r.switches),
            "switches_per_s": round(float(r.switches_per_s), 1),
            "wakeups": int(r.wakeups),
            "futile_wakeups": int(r.futile_wakeups),
            "futile_share": round(float(r.futile_share), 4),
        }
        for r in hit.head(10).itertuples(index=False)
    ]
    worst = hit.iloc[0]
    cpu, task = int(worst["cpu"]), int(worst["task"])
    metrics: FindingMetrics = {
        "switches": int(hit["switches"].sum()),
        "switches_per_s": round(float(worst["switches_per_s"]), 1),
        "kworker_preemptions": int(hit["kworker_preemptions"].sum()),
        "kworker_preemptions_per_s": round(float(worst["kworker_preemptions"]) / dur_s, 1),
        "preempted_share": round(float(worst["preempted_share"]), 4),
        "cpu_share": round(float(worst["cpu_share"]), 4),
        "futile_wakeups": int(hit["futile_wakeups"].sum()),
        "futile_share": round(float(worst["futile_share"]), 4),
        "cpu": cpu,
        "task": {"pid": int(worst["pid"]), "comm": names.get(task, "?")},
        "kworkers": kworkers(cpu, task),
    }
    sev = "high" if worst["preempted_share"] >= th["storm_high_preempted_share"] else "medium"
    title = (
        f"{names.get(task, '?')} (pid {int(worst['pid'])}) preempted the "
        f"kworkers on CPU {cpu} {int(worst['kworker_preemptions'])} times, "
        f"{100 * worst['preempted_share']:.0f}% of their switch-outs and "
        f"{100 * worst['cpu_share']:.0f}% of the CPU's switches; "
        f"{100 * worst['futile_share']:.0f}% of its wake-ups there were futile"
    )
    tri = units(m.pre, m.outs, th)
    storm = tri[tri["storm"].to_numpy() & (tri["cpu"] == cpu).to_numpy()]
    storm = storm[(storm["task"] == task).to_numpy()][["kw", "fn"]]
    return [Finding(NAME, sev, title, metrics, top, evidence_at=evidence(cpu, task, storm))]


def preemption_rows(model: Model, switches: np.ndarray | None = None) -> pd.DataFrame:
    """The kworker preemptions (:func:`~schedwake.model.masks.kworker_preemptions`) of the
    switches ``switches`` (a mask: a part's own; None: all), in order: ``cpu``, ``task``,
    ``kworker``, ``fn`` (:func:`switch_work_names`), ``ts``, whether each was
    ``futile`` or is ``open``, whether the model shows the CPU's next switch
    (``next_seen``: a time part may end before it, and settles neither), and the cycle
    as evidence, from the kworker's switch-in (``start_ts``) to its return
    (``back_ts``; -1 where the model does not show it)."""
    c = kworker_preemptions(model)
    if len(c["rows"]) == 0:
        return pd.DataFrame(
            {k: np.zeros(0, dtype=object if k == "fn" else np.int64) for k in _CYCLE}
        )
    mine = np.ones(len(c["rows"]), dtype=bool) if switches is None else switches[c["rows"]]
    back = np.where(c["back"], c["back_ts"], -1)
    return pd.DataFrame(
        {
            "cpu": c["cpu"][mine].astype(np.int64),
            "task": c["task"][mine].astype(np.int64),
            "kworker": c["kworker"][mine].astype(np.int64),
            "fn": switch_work_names(model, c["rows"][mine]),
            "ts": c["ts"][mine].astype(np.int64),
            "futile": c["futile"][mine],
            "open": c["open"][mine],
            "next_seen": c["next_seen"][mine],
            "start_ts": c["start_ts"][mine].astype(np.int64),
            "back_ts": back[mine].astype(np.int64),
        }
    )


_CYCLE = (
    "cpu", "task", "kworker", "fn", "ts", "futile", "open", "next_seen", "start_ts", "back_ts",
)  # fmt: skip


def cycles(rows: pd.DataFrame, cpu: int, task: int, storm: pd.DataFrame) -> pd.DataFrame:
    """Of :func:`preemption_rows` ``rows``, those of ``task`` on ``cpu`` of its storm
    units ``storm`` (columns kw and fn), in order."""
    mine = (rows["cpu"].to_numpy() == cpu) & (rows["task"].to_numpy() == task)
    key = pd.MultiIndex.from_arrays([rows["kworker"].to_numpy(), rows["fn"].to_numpy()])
    mine &= key.isin(pd.MultiIndex.from_frame(storm[["kw", "fn"]]))
    return rows[mine].reset_index(drop=True)


def middle_cycle(futile: np.ndarray) -> int:
    """The cycle a finding shows, of the worst pair's (in time order) whose futility is
    ``futile``: the middle futile one, else the middle one."""
    sel = np.flatnonzero(futile) if futile.any() else np.arange(len(futile))
    return int(sel[len(sel) // 2])


def cycle_evidence(row: pd.Series, cpu: int, task: int) -> EvidenceAt:
    """Where the evidence of the cycle ``row`` (of :func:`cycles`) is: from the
    kworker's switch-in to its return (the cycle's own length, on any machine)."""
    back = int(row["back_ts"])
    return {
        "t0": int(row["start_ts"]),
        "t1": int(row["ts"]) if back < 0 else back,
        "cpus": [cpu],
        "pids": [_pid(task), _pid(row["kworker"])],
        "focus_ts": int(row["ts"]),
    }


def kworker_switchins(model: Model, switches: np.ndarray | None = None) -> pd.DataFrame:
    """The switches from a kworker to another task, of ``switches`` (a mask: a part's
    own; None: all), per (``cpu``, ``task`` switched in, ``comm`` of the kworker):
    ``n`` and the first one's time (they add up: :func:`top_kworkers`)."""
    s = model.events.switch
    assert s is not None  # (a kworker preemption is a switch)
    m = switch_kworkers(model)[0]
    if switches is not None:
        m = m & switches
    ts = s["ts"].to_numpy()[m]
    g = pd.DataFrame(
        {
            "cpu": s["cpu"].to_numpy()[m].astype(np.int64),
            "task": model.events.key(s["next_pid"].to_numpy()[m], ts).astype(np.int64),
            "comm": s["prev_comm"][m].astype(str).to_numpy(),
            "ts": ts.astype(np.int64),
        }
    ).groupby(["cpu", "task", "comm"])["ts"]
    return pd.DataFrame({"n": g.size(), "first": g.min()}).reset_index()


def top_kworkers(switchins: pd.DataFrame, cpu: int, task: int) -> list[dict[str, str | int]]:
    """The kworkers of :func:`kworker_switchins` (of the whole trace, or of its parts
    together) that ``task`` (a life key) took ``cpu`` from most often (of as many, the
    first seen first)."""
    mine = switchins[(switchins["cpu"].to_numpy() == cpu) & (switchins["task"].to_numpy() == task)]
    g = mine.groupby("comm").agg(n=("n", "sum"), first=("first", "min"))
    g = g.sort_values("first", kind="stable")
    vc = pd.Series(g["n"].to_numpy(), index=g.index.to_numpy()).sort_values(ascending=False)
    return [{"comm": str(k), "switches_to_task": int(v)} for k, v in vc.head(KWORKERS).items()]


def _pid(task: int | np.integer) -> int:
    """The pid of a task's life key (:mod:`schedwake.model.lives`)."""
    return int(pid_of(int(task)))


def _prev_tasks(model: Model) -> np.ndarray:
    """The task (life key, :mod:`schedwake.model.lives`) each ``sched_switch`` switches
    out."""
    s = model.events.switch
    assert s is not None  # (a kworker preemption is a switch)
    return model.events.key(s["prev_pid"].to_numpy().astype(np.int64), s["ts"].to_numpy())


def _next_tasks(model: Model) -> np.ndarray:
    """The task (life key) each ``sched_switch`` switches in."""
    s = model.events.switch
    assert s is not None  # (a kworker preemption is a switch)
    return model.events.key(s["next_pid"].to_numpy(), s["ts"].to_numpy())


def _names(model: Model, switches: np.ndarray | None = None) -> dict[int, str]:
    """Each task's (life key's) last name as a switch-in of ``switches`` (a mask; None:
    all) gives it."""
    s = model.events.switch
    assert s is not None  # (a kworker preemption is a switch)
    task, comm = _next_tasks(model), s["next_comm"].array
    if switches is not None:  # (the rows taken before any frame is made)
        task, comm = task[switches], comm[switches]
    last = np.sort(last_rows(task)[1])  # (each task's last switch-in, in their order)
    return {int(p): str(c) for p, c in zip(task[last], comm[last])}
