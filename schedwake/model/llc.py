"""Which CPUs share a last-level cache, inferred from the trace when nothing says it.

A wake-up places its task with ``select_idle_sibling(p, prev, target)``, which returns a
CPU of the LLC of ``target``, and ``target`` is the waker's CPU or the wakee's previous
CPU (``wake_affine()`` picks). When the waker runs on the wakee's previous CPU the two
are the same CPU, so the chosen CPU shares that CPU's LLC: every such wake-up migration
(``sched_migrate_task`` of a wake-up, on the waker's CPU, ``orig_cpu`` = waker's CPU) is
an edge between two CPUs of one LLC. The LLCs are then the connected parts of the graph
of those edges.

The rule (docs/detectors.md, "Topology"): an inference is made only when

* the tasks are fair-class (``prio`` >= 100: real-time tasks are placed across the whole
  root domain by ``find_lowest_rq()``, not within an LLC, so their moves say nothing);
* every CPU of the trace has at least one such edge (a CPU never seen cannot be placed);
* the parts have equal sizes (LLCs of one machine do), with at least two CPUs each;
* there are enough edges that one LLC could not have given them all by chance: with
  ``n`` CPUs in ``k`` parts of ``s``, if the wake-ups picked CPUs at random in one LLC,
  ``m`` edges would all fall inside the parts with probability ``((s-1)/(n-1))**m``,
  which must be below one in a million;
* the other wake-up migrations (waker and previous CPU apart) agree: each chosen CPU is
  in the part of the previous CPU or of the waker's CPU, as ``select_idle_sibling()``
  guarantees, for all but 1% of them.

One connected part holding every CPU is an inferred single LLC. Anything else keeps one
assumed LLC, and says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..topology import Topology
from .events import Events, ints

if TYPE_CHECKING:
    from collections.abc import Iterable

#: Highest probability that one LLC gives the observed separation by chance.
CHANCE = 1e-6
#: Share of the other wake-up migrations allowed to land outside both candidate LLCs.
DISAGREE = 0.01
#: Lowest prio value of a fair-class task (0-99 are real-time).
FAIR_PRIO = 100


@dataclass
class Inference:
    """What the trace says about its LLCs: ``llc`` (None when it cannot tell) and why."""

    llc: list[list[int]] | None
    #: one line: how the groups were found, or why none were
    reason: str
    #: wake-up migrations with the waker on the previous CPU (the graph's edges)
    edges: int
    #: the other wake-up migrations, and how many of them land outside both LLCs
    others: int = 0
    disagree: int = 0


def with_inference(topo: Topology, found: Inference) -> Topology:
    """The assumed topology ``topo`` replaced by the LLCs ``found``, or, when none were,
    kept with the reason as its note."""
    if found.llc is None:
        topo.note = found.reason
        return topo
    return Topology(cpus=topo.cpus, llc=found.llc, source="inferred", note=found.reason)


def infer_llc(ev: Events, mig_w: np.ndarray, cpus: int) -> Inference:
    """The LLC groups of a trace's ``cpus`` CPUs from its wake-up migrations (``mig_w``:
    :func:`schedwake.model.wakeups.match_wakeup_migrations`)."""
    m = ev.migrate
    return infer_from_moves(wakeup_moves(ev, mig_w, cpus), cpus, m is not None and len(m) > 0)


def wakeup_moves(
    ev: Events, mig_w: np.ndarray, cpus: int, rows: np.ndarray | None = None
) -> np.ndarray:
    """The wake-up migrations the inference reads (fair-class, to another CPU of the
    trace) as rows of (waker's CPU, previous CPU, chosen CPU); ``rows``: of the
    ``sched_migrate_task`` rows of this mask only (a time part's own)."""
    m = ev.migrate
    if m is None or len(m) == 0:
        return np.zeros((0, 3), np.int64)
    own = np.asarray(mig_w) >= 0
    prio = ints(m, "prio")
    fair = prio >= FAIR_PRIO
    waker, prev, dest = ints(m, "cpu"), ints(m, "orig_cpu"), ints(m, "dest_cpu")
    sel = own & fair & (prev != dest) & (prev >= 0) & (dest >= 0) & (prev < cpus) & (dest < cpus)
    if rows is not None:
        sel &= rows
    return np.stack([waker[sel], prev[sel], dest[sel]], axis=1).astype(np.int64)


def infer_from_moves(moves: np.ndarray, cpus: int, migrations: bool) -> Inference:
    """The inference from the moves of :func:`wakeup_moves` (in trace order: a time
    part's, joined, are the whole trace's); ``migrations``: the trace has
    ``sched_migrate_task`` rows at all."""
    if not migrations or cpus < 2:
        why = "the trace has no sched_migrate_task" if cpus >= 2 else "one CPU"
        return Inference(None, why, 0)
    waker, prev, dest = moves[:, 0], moves[:, 1], moves[:, 2]
    local = waker == prev
    a, b = prev[local].astype(np.int64), dest[local].astype(np.int64)
    edges = len(a)
    if edges == 0:
        return Inference(None, "no wake-up migration with the waker on the previous CPU", 0)
    seen = np.zeros(cpus, dtype=bool)
    seen[a] = seen[b] = True
    part = _components(cpus, a, b)
    groups = [np.flatnonzero(part == p).tolist() for p in np.unique(part[seen])]
    groups.sort(key=lambda g: g[0])
    filled = ""
    if not seen.all():
        missing = np.flatnonzero(~seen)
        short = _the_short_group(groups, cpus, len(missing))
        if short is None:
            return Inference(
                None,
                f"no wake-up placed a task from or onto CPU {_cpulist(missing)} "
                f"({edges} wake-up migrations)",
                edges,
            )
        # LLCs have equal sizes: CPUs seen in no move can only complete the one group
        # that lacks exactly that many (every other group already has its full size)
        groups[short] = sorted(groups[short] + missing.tolist())
        part[missing] = part[groups[short][0]]
        filled = f"; CPU {_cpulist(missing)}, in no move, completes the only group short of it"
    sizes = sorted({len(g) for g in groups})
    if len(groups) == 1:
        return Inference(groups, f"{edges} wake-up migrations connect every CPU", edges)
    if len(sizes) > 1 or sizes[0] < 2:
        return Inference(
            None,
            f"{edges} wake-up migrations split the CPUs into unequal groups "
            f"({', '.join(str(len(g)) for g in groups)} CPUs): not an LLC layout",
            edges,
        )
    s = sizes[0]
    # against one LLC, and against any two of the groups being one LLC: the edges inside
    # those two would then cross between them about half the time
    chance = ((s - 1) / (cpus - 1)) ** edges
    ga, gb = part[a], part[b]
    labels = [part[g[0]] for g in groups]
    for i, li in enumerate(labels):
        for lj in labels[i + 1 :]:
            inside = int((np.isin(ga, (li, lj)) & np.isin(gb, (li, lj))).sum())
            chance = max(chance, ((s - 1) / (2 * s - 1)) ** inside)
    if chance >= CHANCE:
        return Inference(
            None,
            f"{edges} wake-up migrations are too few to tell {len(groups)} LLCs of {s} CPUs "
            f"from fewer, larger ones (chance {chance:.1g})",
            edges,
        )
    other = ~local
    if other.any():
        pw, pp, pd_ = part[waker[other]], part[prev[other]], part[dest[other]]
        bad = int(((pd_ != pw) & (pd_ != pp)).sum())
    else:
        bad = 0
    n_other = int(other.sum())
    if bad > DISAGREE * n_other:
        return Inference(
            None,
            f"{bad} of {n_other} other wake-ups chose a CPU outside the groups of both the "
            "waker and the previous CPU",
            edges,
            n_other,
            bad,
        )
    return Inference(
        groups,
        f"{edges} wake-up migrations stay within {len(groups)} groups of {s} CPUs{filled}",
        edges,
        n_other,
        bad,
    )


def _the_short_group(groups: list[list[int]], cpus: int, unseen: int) -> int | None:
    """The index of the one group that ``unseen`` CPUs complete to the size of all the
    others (LLCs of one machine are equal), or None when that is not forced."""
    if not groups:
        return None
    size = max(len(g) for g in groups)
    if cpus % size or len(groups) != cpus // size:
        return None  # the unseen CPUs could form a group of their own, or sizes differ
    short = [i for i, g in enumerate(groups) if len(g) < size]
    if len(short) != 1 or size - len(groups[short[0]]) != unseen:
        return None
    return short[0]


def _components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The connected component of each of ``n`` nodes (the smallest node in it), for
    the edges a[i]-b[i]: label propagation over the few distinct edges."""
    label = np.arange(n, dtype=np.int64)
    pairs = np.unique(np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1), axis=0)
    u, v = pairs[:, 0], pairs[:, 1]
    while True:  # at most n rounds; each joins labels along every edge at once
        low = np.minimum(label[u], label[v])
        new = label.copy()
        np.minimum.at(new, u, low)
        np.minimum.at(new, v, low)
        new = new[new]  # follow the labels' own labels
        if np.array_equal(new, label):
            return label
        label = new


def _cpulist(cpus: Iterable[int]) -> str:
    from ..topology import format_cpulist

    return format_cpulist(cpus)


__all__ = ["Inference", "infer_llc", "CHANCE", "DISAGREE"]
