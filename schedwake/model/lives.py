"""The lives of a pid: a kernel gives the pid of a task that exited to a new task, so one
pid may name several tasks in one trace (docs/semantics.md, 'A pid used again').

A pid's events belong to one task until a **boundary**, from which they are the next
task's (its next *life*):

* a **death**: a ``sched_switch`` that switches the task out ``X``, ``Z`` or ``x``
  (EXIT_DEAD, EXIT_ZOMBIE, TASK_DEAD: ``do_task_dead()``'s last switch; the task never
  runs again). Any later event of the pid is a new task's; the boundary is that event;
* a **birth** that follows events of the pid (a switch, a wake-up) with no death
  between: a ``sched_process_fork`` with it as ``child_pid``, or a
  ``sched_wakeup_new`` (the fork's own ``sched_wakeup_new`` that follows it is the same
  birth). The trace lacks the first task's death; the boundary is the birth.

A pid's first birth in the trace, with nothing of the pid before it, is no boundary:
the task it starts is the pid's first life (the migrations of fork balancing come before
``sched_wakeup_new`` and are the same task's). So a trace whose pids are each used once
has no boundary, and every reader sees what it saw before.

:meth:`Lives.key` turns (pid, time) into a **life key**: the pid itself in its first
life, ``pid + (n << 32)`` in the life after its n-th boundary. The model's per-task
searches and groupings key on it, so that a wait, a wake-to-run latency, a run, a name
or a per-task count never joins two tasks that shared a pid; :func:`pid_of` gives the
pid back. perf does the same: a FORK record of a tid it knows makes a new thread
(``machine__process_fork_event``), and ``perf sched latency`` keeps a row per thread.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt
import pandas as pd

from . import _passes
from ._util import asof_index, i64, ints, key_ints, lex_order, member, take


class EventTables(Protocol):
    """What :meth:`Lives.of` reads of the model's events (:class:`.events.Events`)."""

    switch: pd.DataFrame | None
    waking: pd.DataFrame | None
    wakeup: pd.DataFrame | None
    fork: pd.DataFrame | None
    wakeup_new: pd.DataFrame | None


#: Where a life's number sits in a life key (pids are below 2**22 on Linux).
SHIFT = 32
_ACT, _DEATH, _BIRTH = 0, 1, 2


def dies(letters: str) -> bool:
    """Whether a switch-out with ``prev_state`` ``letters`` ends its task's life (X, Z or
    x among the flags; a preempted task, ``R``/``R+``, does not die)."""
    s = str(letters).strip()
    flags = set(s.replace("|", "").replace("+", ""))
    return not s.startswith("R") and bool(flags & {"X", "Z", "x"})


def pid_of(key: npt.ArrayLike) -> np.ndarray:
    """The pids of life keys (:meth:`Lives.key`)."""
    return (np.asarray(key, dtype=np.int64) & ((1 << SHIFT) - 1)).astype(np.int32)


def life_of(key: npt.ArrayLike) -> np.ndarray:
    """The life numbers of life keys: 0 for a pid's first life in the trace."""
    return (np.asarray(key, dtype=np.int64) >> SHIFT).astype(np.int32)


class Lives:
    """The boundaries between the lives of the pids of one trace (see the module's
    docstring): ``pid`` and ``ts`` sorted by (pid, ts); an event of the pid at or after
    ``ts`` belongs to the life after it."""

    def __init__(self, pid: np.ndarray, ts: np.ndarray) -> None:
        order = lex_order(np.asarray(ts), np.asarray(pid))
        self.pid = np.asarray(pid, dtype=np.int64)[order]
        self.ts = np.asarray(ts, dtype=np.int64)[order]
        first = np.ones(len(self.pid), dtype=bool)
        first[1:] = self.pid[1:] != self.pid[:-1]
        # each boundary's number within its pid (1 for the first)
        self.rank = np.arange(1, len(self.pid) + 1) - np.maximum.accumulate(
            np.where(first, np.arange(len(self.pid)), 0)
        )

    @classmethod
    def of(cls, ev: EventTables) -> Lives:
        """The boundaries that the events of ``ev`` (:class:`.events.Events`) show."""
        none = np.zeros(0, np.int64)
        # (ts, pid, kind: an array or one for all) of each table, its columns as they are
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray | int]] = []
        s = ev.switch
        if s is not None and len(s):
            sts = i64(s, "ts")
            out = np.full(len(s), _ACT, np.int8)
            if "prev_state_str" in s.columns:
                st = s["prev_state_str"].astype("category").array
                dead = np.array([dies(str(c)) for c in st.categories] + [False], dtype=bool)
                codes = np.asarray(st.codes)
                out[dead[np.where(codes < 0, len(dead) - 1, codes)]] = _DEATH
            parts.append((sts, ints(s, "prev_pid"), out))
            parts.append((sts, ints(s, "next_pid"), _ACT))
        for f, col, k in (
            (ev.waking, "pid", _ACT),
            (ev.wakeup, "pid", _ACT),
            (ev.fork, "child_pid", _BIRTH),
            (ev.wakeup_new, "pid", _BIRTH),
        ):
            if f is not None and len(f):
                parts.append((i64(f, "ts"), ints(f, col), k))
        if not parts:
            return cls(none, none)
        # only the rows of the pids that may have two lives (most traces: none) are
        # gathered, from each table's columns: no copy of every event
        sel = _may_have_lives_parts(parts)
        pid = np.concatenate([p[m].astype(np.int64) for (_, p, _), m in zip(parts, sel)])
        ts = np.concatenate([t[m] for (t, _, _), m in zip(parts, sel)])
        kind = np.concatenate(
            [
                k[m] if isinstance(k, np.ndarray) else np.full(int(m.sum()), k, np.int8)
                for (_, _, k), m in zip(parts, sel)
            ]
        )
        return cls(*boundaries(pid, ts, kind))

    def __bool__(self) -> bool:
        return len(self.pid) > 0

    @property
    def reused(self) -> np.ndarray:
        """The pids with more than one life."""
        return np.unique(self.pid)

    def number(self, pid: npt.ArrayLike, ts: npt.ArrayLike) -> np.ndarray:
        """The life of each (pid, ts): how many of the pid's boundaries lie at or before
        ``ts`` (0: its first life)."""
        pid = np.asarray(pid)
        out = np.zeros(len(pid), dtype=np.int64)
        if not self or not len(pid):
            return out
        # only the rows of a pid used again can be in a later life: found by a table
        # lookup over the pids' range (a few pids of millions of events), the search for
        # those alone
        lo, hi = int(self.pid[0]), int(self.pid[-1])
        reused = np.zeros(hi - lo + 2, dtype=bool)
        reused[self.pid - lo] = True
        at = np.clip(pid, lo - 1, hi + 1).astype(np.int64) - lo
        at[(at < 0) | (at > hi - lo)] = hi - lo + 1  # (outside the range: False)
        sel = np.flatnonzero(reused[at])
        if len(sel):
            ts = np.broadcast_to(np.asarray(ts, dtype=np.int64), pid.shape)
            found = asof_index(
                ts[sel], pid[sel].astype(np.int64), self.ts, self.pid, "backward", True
            )
            out[sel] = take(self.rank, found, 0)
        return out

    def _boundary(self, pid: np.ndarray, n: np.ndarray, fill: int) -> np.ndarray:
        """The time of boundary ``n`` (1: the first) of each pid; ``fill`` where there
        is none."""
        out = np.full(len(pid), fill, dtype=np.int64)
        if not self or not len(pid):
            return out
        have = (self.pid << SHIFT) + self.rank  # (sorted: by pid, then rank)
        want = (pid.astype(np.int64) << SHIFT) + n
        at = np.minimum(np.searchsorted(have, want), len(have) - 1)
        hit = have[at] == want
        out[hit] = self.ts[at[hit]]
        return out

    def start_of(self, key: npt.ArrayLike, first: int) -> np.ndarray:
        """Where the life of each life key begins: ``first`` for a first life, else its
        boundary."""
        key = np.asarray(key, dtype=np.int64)
        return self._boundary(pid_of(key), life_of(key), first)

    def end_of(self, key: npt.ArrayLike) -> np.ndarray:
        """Where the life of each life key ends: the pid's next boundary, else int64 max."""
        key = np.asarray(key, dtype=np.int64)
        return self._boundary(pid_of(key), life_of(key) + 1, np.iinfo(np.int64).max)

    def key(self, pid: npt.ArrayLike, ts: npt.ArrayLike) -> np.ndarray:
        """The life key of each (pid, ts): the pid in its first life (``pid`` itself,
        not a copy, when no pid has two lives), else ``pid + (life << 32)``."""
        pid = np.asarray(pid)
        if not self:
            return pid
        n = self.number(pid, ts)
        return pid.astype(np.int64) + (n.astype(np.int64) << SHIFT)


def boundaries(pid: np.ndarray, ts: np.ndarray, kind: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (pid, ts) of the boundaries that rows of (pid, ts, kind: ``_ACT``, ``_DEATH``,
    ``_BIRTH``) show, in (pid, ts) order (see the module's docstring)."""
    # only the rows of pids that may have two lives (most traces: none)
    sel = _may_have_lives(pid, ts, kind)
    pid, ts, kind = pid[sel], ts[sel], kind[sel]
    # at one time: a birth, then the task's events, then its death
    prio = np.choose(kind, [1, 2, 0]).astype(np.int8)
    pid, ts, kind = _by_pid_ts_prio(pid, ts, prio)
    same = np.zeros(len(pid), dtype=bool)
    same[1:] = pid[1:] == pid[:-1]
    before = np.concatenate([[_ACT], kind[:-1]]).astype(np.int8)
    boundary = same & ((before == _DEATH) | ((kind == _BIRTH) & (before == _ACT)))
    return pid[boundary], ts[boundary]


def _may_have_lives(pid: np.ndarray, ts: np.ndarray, kind: np.ndarray) -> np.ndarray:
    """Whether each row's pid may have a boundary (:func:`_may_have_lives_parts` of the
    rows as one part)."""
    return _may_have_lives_parts([(ts, pid, kind)])[0]


def _may_have_lives_parts(
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray | int]],
) -> list[np.ndarray]:
    """Of rows in parts (ts, pid, kind: an array, or one for the part's every row),
    whether each row's pid may have a boundary: it dies twice, has an event at or after
    its first death, or a birth after its first other event (one compiled pass over
    the parts as they are, ``_passes.life_candidates``); over a pid range too wide for
    its table, every pid with a death or a birth."""
    full = [p for _, p, _ in parts if len(p)]
    if not full:
        return [np.zeros(len(p), dtype=bool) for _, p, _ in parts]
    lo, hi = min(int(p.min()) for p in full), max(int(p.max()) for p in full)
    if hi - lo >= max(4 * sum(len(p) for _, p, _ in parts), 1 << 23):
        born_or_dead = [
            p[(k != _ACT) & (p != 0)] if isinstance(k, np.ndarray) else p[p != 0]
            for _, p, k in parts
            if not isinstance(k, int) or k != _ACT
        ]
        keys = np.unique(np.concatenate(born_or_dead)) if born_or_dead else np.zeros(0, np.int64)
        return [member(p, keys) for _, p, _ in parts]
    outs = [np.empty(len(p), dtype=bool) for _, p, _ in parts]
    _passes.life_candidates(
        tuple(
            (
                key_ints(p),
                np.ascontiguousarray(t, dtype=np.int64),
                np.ascontiguousarray(k, dtype=np.int8) if isinstance(k, np.ndarray) else k,
            )
            for t, p, k in parts
        ),
        lo,
        hi - lo + 1,
        tuple(outs),
    )
    return outs


#: A boundary's priority at one time (:meth:`Lives.of`) back to its kind.
_KIND_OF_PRIO = np.array([_BIRTH, _ACT, _DEATH], dtype=np.int8)


def _by_pid_ts_prio(
    pid: np.ndarray, ts: np.ndarray, prio: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (pid, ts, kind) rows sorted by (pid, ts, prio): one in-place sort of the
    three packed into an int64 when their ranges fit (rows equal in all three are
    equal: no order among them to keep), else a lexsort."""
    if len(pid) == 0:
        return pid, ts, _KIND_OF_PRIO[prio]
    p0, t0 = int(pid.min()), int(ts.min())
    pbits = max(1, (int(pid.max()) - p0).bit_length())
    tbits = max(1, (int(ts.max()) - t0).bit_length())
    if pbits + tbits + 2 > 63:
        o = np.lexsort((prio, ts, pid))
        return pid[o], ts[o], _KIND_OF_PRIO[prio[o]]
    packed = pid - p0
    packed <<= tbits
    packed += ts
    packed -= t0
    packed <<= 2
    packed += prio
    packed.sort()
    prio = (packed & 3).astype(np.int8)
    packed >>= 2
    ts = packed & ((1 << tbits) - 1)
    ts += t0
    packed >>= tbits
    packed += p0
    return packed, ts, _KIND_OF_PRIO[prio]
