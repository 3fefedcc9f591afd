"""Completeness: what a trace proves about who ran on each CPU, and what it does not show
(docs/semantics.md, 'Incomplete traces').

A CPU's ``sched_switch`` events form a chain: each switch-out's ``prev_pid`` is the task
the CPU's previous switch put on it. Every other event is a proof too: an event fires
in the context of the task that is *current* on its CPU (its ``common_pid``; the idle
task, pid 0, for an interrupt in idle). A trace may lack events (the ring buffer lost
some, a filter or a recorder left some out, a kernel does not emit some: on some 6.18
builds every event in the context of one CPU's idle task is missing, so that CPU's
idle -> task switches are). The model below never fills such a stretch with a guess:

* per CPU, the **points** of proof in time order: each switch (its ``prev_pid`` up to
  it, its ``next_pid`` from it) and each other event (its ``common_pid`` at its time);
* between two points of the same task, that task ran (or the CPU was idle, pid 0): a
  **known** interval; between two points of different tasks that no recorded switch
  joins, some switch is missing: an **unknown** interval, from the last proof of the
  one to the first proof of the other; a lost-events marker makes the stretch around
  it unknown;
* before a CPU's first ``sched_switch`` nothing is in the timeline (as before: unknown
  and not covered), but the events there still prove runs of tasks.

:func:`build` gives :class:`Completeness`:

``timeline``
    per CPU from its first switch to the end of the trace, one row per interval:
    ``cpu``, ``start_ts``, ``end_ts`` (exclusive), ``pid`` (-1 when unknown), ``comm``,
    ``state`` (``running``, ``idle``, ``unknown``) and ``why`` (of an unknown row:
    ``missing_switch``, ``lost_events``).
``runs``
    every stretch a task (not pid 0) is proven on a CPU: ``pid``, ``comm``, ``cpu``,
    ``start_ts``, ``end_ts``, ``exact_start`` (it began at a recorded switch-in; else
    at its first proof, and it may have begun as early as ``earliest_ts``, the end of
    the previous proof on that CPU) and ``end`` (``switch``: a recorded switch-out;
    ``event``: its last proof, after which the trace does not show the CPU; ``trace``:
    it still ran when the trace ended). Runs of length 0 (one proof alone) are kept.
``breaks``
    one row per contradiction the trace shows: ``cpu``, ``ts``, ``kind``
    (:data:`KINDS`), ``pid`` (the task the trace had there), ``other_pid`` (the one it
    shows instead), ``count`` (events lost, for ``lost_events``; 1 otherwise).

All of it vectorized: one as-of search per event table for the segment each event
falls in, and a sort of the points of the segments that are not clean only.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa

from . import _passes
from ._util import (
    asof_index,
    cat_mask,
    is_sorted,
    key_ints,
    lex_order,
    object_categories,
    table_span,
    take,
)
from .events import MODEL_EVENTS, Events, ints

if TYPE_CHECKING:
    from .memo import TraceTables

#: Names of rows, read only when needed.
_Names = Callable[[], pd.Categorical]

#: The events read as proofs of the task current on their CPU: the model's (so that a
#: trace loaded with only them, as the commands do, is judged as one loaded whole).
PROOF_EVENTS = MODEL_EVENTS

#: The kinds of contradictions (``breaks.kind``), in report order.
KINDS = ("switch_chain", "context", "two_cpus", "unwoken_switch_in", "rewoken", "lost_events")

#: What each kind means, for reports.
KIND_TEXT = {
    "switch_chain": "switch-outs of a task the CPU's previous switch did not put on it "
    "(a sched_switch is missing)",
    "context": "events in the context of a task while the switches had another task (or "
    "idle) on that CPU",
    "two_cpus": "tasks proven running on two CPUs at once",
    "unwoken_switch_in": "switch-ins of a task that slept and has no wake-up in the trace",
    "rewoken": "wake-ups of a task woken before and not seen running since (it must have "
    "run, unseen, to sleep again: only a task that is not running is woken)",
    "lost_events": "lost-event markers of the ring buffer",
}

#: How a count of each kind reads in a sentence ("3 switch-chain breaks").
KIND_LABEL = {
    "switch_chain": "switch-chain breaks",
    "context": "context contradictions",
    "two_cpus": "runs on two CPUs at once",
    "unwoken_switch_in": "switch-ins without a wake-up",
    "rewoken": "wake-ups of tasks not seen running since their last",
    "lost_events": "events lost",
}

#: Why a timeline interval is unknown.
WHY = ("missing_switch", "lost_events")

#: Two proofs of one task on two CPUs closer than this are taken as one moment: the
#: per-CPU ``local`` trace clock may run a little apart between CPUs (docs/semantics.md).
TWO_CPUS_TOLERANCE_NS = 20_000

_UNKNOWN, _LOST = -1, -2
_IN, _EV, _OUT = 0, 1, 2  # the order of points at one time within a segment
_END_SWITCH, _END_EVENT, _END_TRACE = 0, 1, 2
_STATE_UNKNOWN = 2  # (the code of STATES' "unknown")
#: an event's segment (_passes.event_segments): none, its task's, another task's, another
#: task's at the very time of the segment's switch (``_Proofs._segment`` settles those)
_SEG_NONE, _SEG_OWN, _SEG_OTHER, _SEG_TIE = 0, 1, 2, 3
END_KINDS = ("switch", "event", "trace")
STATES = ("running", "idle", "unknown")


@dataclass
class Completeness:
    """What the trace proves (see the module's docstring)."""

    timeline: pd.DataFrame
    runs: pd.DataFrame
    breaks: pd.DataFrame
    #: per CPU, its first sched_switch (the timeline starts there)
    first_switch: dict[int, int]
    #: the trace's first event and the end of the timeline
    t_start: int
    t_end: int
    #: the switches by (CPU, time): their CPU and time, and whether the task each put
    #: on its CPU is the one the CPU's next switch switched out (cpu_time counts them)
    switch_cpu: np.ndarray
    switch_ts: np.ndarray
    switch_end: np.ndarray
    switch_chain_ok: np.ndarray

    @cached_property
    def counts(self) -> pd.DataFrame:
        """Contradictions per CPU (index) and kind (columns :data:`KINDS`); events lost
        for ``lost_events``. Every CPU with a switch or a contradiction has a row."""
        return break_counts(self.breaks, self.first_switch)

    @property
    def complete(self) -> bool:
        """No contradiction, and nothing unknown after each CPU's first switch."""
        return len(self.breaks) == 0 and not (self.timeline["state"] == "unknown").any()

    def unknown_ns(self) -> dict[int, int]:
        """Per CPU, the unknown time of its timeline (after its first switch)."""
        t = self.timeline
        u = t[(t["state"] == "unknown").to_numpy()]
        g = (u["end_ts"] - u["start_ts"]).groupby(u["cpu"]).sum()
        return {int(c): int(g.get(c, 0)) for c in self.first_switch}

    def cpu_time(
        self, t0: int | None = None, t1: int | None = None, cpus: Iterable[int] | None = None
    ) -> pd.DataFrame:
        """Per CPU (the index; ``cpus``, else every CPU with a switch), over ``[t0, t1)``
        (None: from the trace's first event, to its end): ``span_ns``, ``busy_ns``
        (proven running a task), ``idle_ns`` (proven idle), ``unknown_ns`` (not shown:
        a missing switch, lost events, before the CPU's first switch), ``switches``
        (recorded in the stretch), ``missing_switches`` (at least this many more: the
        chain breaks in it). Busy time lies in [busy_ns, busy_ns + unknown_ns]."""
        lo = self.t_start if t0 is None else int(t0)
        hi = self.t_end if t1 is None else int(t1)
        span = max(hi - lo, 0)
        tl = self.timeline
        d = np.maximum(
            np.minimum(tl["end_ts"].to_numpy(), hi) - np.maximum(tl["start_ts"].to_numpy(), lo),
            0,
        )
        state = np.asarray(tl["state"].cat.codes)
        cpu = tl["cpu"].to_numpy()
        wanted = sorted(self.first_switch) if cpus is None else sorted(int(c) for c in cpus)
        cols = ["span_ns", "busy_ns", "idle_ns", "unknown_ns", "switches", "missing_switches"]
        rows = []
        for c in wanted:
            m = cpu == c
            busy, idle = int(d[m & (state == 0)].sum()), int(d[m & (state == 1)].sum())
            on = self.switch_cpu == c
            rows.append(
                [
                    span,
                    busy,
                    idle,
                    span - busy - idle,
                    int((on & (self.switch_ts >= lo) & (self.switch_ts < hi)).sum()),
                    int(
                        (
                            on
                            & ~self.switch_chain_ok
                            & (self.switch_end >= lo)
                            & (self.switch_end < hi)
                        ).sum()
                    ),
                ]
            )
        return pd.DataFrame(rows, index=pd.Index(wanted, name="cpu"), columns=cols, dtype=np.int64)

    def describe(self) -> list[str]:
        """One plain-English line per CPU with contradictions (none when complete)."""
        return self.told().describe()

    def told(self) -> Told:
        """What the reports tell of it (:class:`Told`)."""
        return Told(
            self.counts, self.unknown_ns(), dict(self.first_switch), self.t_end, self.complete
        )


def break_counts(breaks: pd.DataFrame, first_switch: Mapping[int, int]) -> pd.DataFrame:
    """Contradictions per CPU (index: every CPU of ``first_switch`` or of a break) and
    kind (columns :data:`KINDS`), from rows of a ``breaks`` table."""
    cpus = sorted(set(first_switch) | set(breaks["cpu"].tolist()))
    out = pd.DataFrame(0, index=pd.Index(cpus, name="cpu"), columns=list(KINDS), dtype=np.int64)
    if len(breaks):
        g = breaks.groupby(["cpu", "kind"], observed=True)["count"].sum()
        for (c, k), n in g.items():
            out.loc[int(c), str(k)] = int(n)
    return out


@dataclass(frozen=True)
class Told:
    """What the reports tell of a trace's completeness (``schedwake.summary``): per CPU
    its contradictions by kind and its unknown ns, each CPU's first switch, the end of
    the timeline, whether it is complete. The time parts of a trace add theirs up
    (:meth:`add`: each part gives the contradictions and unknown intervals it owns)."""

    counts: pd.DataFrame
    unknown_ns: dict[int, int]
    first_switch: dict[int, int]
    t_end: int
    complete: bool

    @classmethod
    def add(cls, parts: Sequence[Told]) -> Told:
        """The whole trace's from its parts' (in time order; each counts the
        contradictions and unknown time it owns)."""
        first: dict[int, int] = {}
        for p in parts:
            for c, t in p.first_switch.items():
                first[c] = min(first.get(c, t), t)
        unknown = {c: sum(p.unknown_ns.get(c, 0) for p in parts) for c in sorted(first)}
        # (every CPU of a part's counts is one of the whole's: a first switch or a break)
        cpus = sorted(set().union(*(p.counts.index.tolist() for p in parts)))
        counts = pd.DataFrame(
            0, index=pd.Index(cpus, name="cpu"), columns=list(KINDS), dtype=np.int64
        )
        for p in parts:
            counts = counts.add(p.counts.reindex(index=cpus, columns=list(KINDS), fill_value=0))
        return cls(
            counts.astype(np.int64),
            unknown,
            first,
            max(p.t_end for p in parts),
            all(p.complete for p in parts),
        )

    def describe(self) -> list[str]:
        """One plain-English line per CPU with contradictions (none when complete)."""
        out = []
        for cpu, row in self.counts.iterrows():
            parts = [f"{int(row[k])} {KIND_LABEL[k]}" for k in KINDS if row[k]]
            if not parts:
                continue
            c = int(cpu)
            line = f"CPU {c}: " + ", ".join(parts)
            if c in self.first_switch:
                u = self.unknown_ns.get(c, 0)
                span = max(self.t_end - self.first_switch[c], 1)
                line += f"; {u / 1e9:.3f} s unknown ({100 * u / span:.1f}% of its time)"
            out.append(line)
        return out


def clip(
    whole: Completeness, t0: int | None, t1: int | None, cpus: Collection[int] | None = None
) -> Completeness:
    """The completeness of a slice of a trace (``Trace.sliced``): the whole trace's,
    seen through the window ``[t0, t1]`` (None: open) and the CPUs ``cpus`` (None:
    all). The timeline and the contradictions are cut to them; the runs stay whole (a
    wait in the slice ends where the whole trace shows the task ran, inside the slice
    or not)."""
    lo = whole.t_start if t0 is None else max(int(t0), whole.t_start)
    hi = whole.t_end if t1 is None else min(int(t1), whole.t_end)
    keep_cpu = None if cpus is None else np.asarray(sorted(cpus), dtype=np.int64)

    def on(cpu: np.ndarray) -> np.ndarray:
        return np.ones(len(cpu), bool) if keep_cpu is None else np.isin(cpu, keep_cpu)

    tl = whole.timeline
    s = np.maximum(tl["start_ts"].to_numpy(), lo)
    e = np.minimum(tl["end_ts"].to_numpy(), hi)
    keep = (e > s) & on(tl["cpu"].to_numpy())
    timeline = tl[keep].copy()
    timeline["start_ts"], timeline["end_ts"] = s[keep], e[keep]
    b = whole.breaks
    bts = b["ts"].to_numpy()
    breaks = b[(bts >= lo) & (bts <= hi) & on(b["cpu"].to_numpy())].reset_index(drop=True)
    first = {c: max(f, lo) for c, f in whole.first_switch.items() if cpus is None or c in cpus}
    first = {c: f for c, f in first.items() if f < hi}
    sw = on(whole.switch_cpu) & (whole.switch_ts >= lo) & (whole.switch_ts <= hi)
    return Completeness(
        timeline.reset_index(drop=True),
        whole.runs,
        breaks,
        first,
        lo,
        hi,
        whole.switch_cpu[sw],
        whole.switch_ts[sw],
        np.minimum(whole.switch_end[sw], hi),
        whole.switch_chain_ok[sw] | (whole.switch_end[sw] > hi),
    )


def build(trace: TraceTables, ev: Events) -> Completeness:
    """The completeness model of a trace: ``trace``'s event tables (every one a proof of
    the task current on its CPU) and lost-event rows, ``ev`` the model's frames."""
    sw = _Switches.of(ev.switch, int(ev.last_ts))
    proofs = _Proofs(trace, sw)
    first_ts = int(ev.first_ts) if ev.first_ts else sw.t_end
    if proofs.first_ts is not None:
        first_ts = min(first_ts, proofs.first_ts)
    if sw.n:
        first_ts = min(first_ts, int(sw.ts[0]) if is_sorted(sw.ts) else int(sw.ts.min()))
    timeline, runs = _timeline_and_runs(sw, proofs, first_ts)
    run_reach = reach(runs)  # (what _two_cpus and _rewoken both read: found once)
    parts = [
        proofs.breaks(),
        _two_cpus(runs, run_reach),
        _unwoken_switch_ins(ev, runs),
        _rewoken(ev, runs, run_reach),
    ]
    parts = [p for p in parts if len(p)]
    breaks = pd.concat(parts, ignore_index=True) if parts else _empty_breaks()
    breaks = breaks.sort_values(["ts", "cpu"], kind="stable").reset_index(drop=True)
    breaks["kind"] = pd.Categorical(breaks["kind"].astype(str), categories=list(KINDS))
    return Completeness(
        timeline,
        runs,
        breaks,
        sw.first_switch(),
        first_ts,
        sw.t_end,
        sw.cpu,
        sw.ts,
        sw.end,
        sw.chain_ok,
    )


class _Switches:
    """The switches sorted by (CPU, time): segment k runs from switch k to the CPU's
    next switch (to the trace's end for its last). ``B[k]``: the task that next switch
    switches out; the chain holds where it is the task switch k switched in."""

    n: int
    ts: np.ndarray
    cpu: np.ndarray
    prev: np.ndarray
    next: np.ndarray
    end: np.ndarray
    B: np.ndarray
    last: np.ndarray
    chain_ok: np.ndarray
    next_comm: pd.Categorical
    prev_comm: pd.Categorical
    t_end: int
    #: the switches' times and CPUs in their given (time) order
    given_ts: np.ndarray
    given_cpu: np.ndarray
    _order: np.ndarray  # (the (CPU, time) order of the given rows)
    #: the CPUs' range (lo, span) when the switches are given in time order (their
    #: segments then found by a walk, ``_Proofs._segment``), else None; and then per CPU
    #: of the range the index of its first switch (the walk's segments count from there)
    cpu_range: tuple[int, int] | None
    cpu_first: np.ndarray

    @classmethod
    def of(cls, s: pd.DataFrame | None, t_end: int) -> _Switches:
        self = cls()
        self.t_end = t_end
        if s is None or len(s) == 0:
            self.n = 0
            z = np.zeros(0, np.int64)
            self.ts, self.cpu, self.prev, self.next, self.end, self.B = z, z, z, z, z, z
            self.last = self.chain_ok = np.zeros(0, bool)
            self.next_comm = self.prev_comm = pd.Categorical([])
            self.given_ts, self.given_cpu, self._order = z, z, z
            self.cpu_range, self.cpu_first = None, z
            return self
        ts, cpu = ints(s, "ts"), ints(s, "cpu")
        order = lex_order(ts, cpu)
        self.given_ts, self.given_cpu = ts, cpu
        lo, hi = int(cpu.min()), int(cpu.max())
        self.cpu_range = (lo, hi - lo + 1) if is_sorted(ts) else None
        self._order = order
        self.n = len(ts)
        self.ts, self.cpu = ts[order], cpu[order]
        self.cpu_first = np.zeros(0, np.int64)
        if self.cpu_range is not None:
            self.cpu_first = np.searchsorted(self.cpu, np.arange(lo, hi + 1)).astype(np.int64)
        self.prev, self.next = ints(s, "prev_pid")[order], ints(s, "next_pid")[order]
        self.next_comm = s["next_comm"].array.take(order)
        self.prev_comm = s["prev_comm"].array.take(order)
        self.t_end = max(t_end, int(ts.max()))
        self.last = np.ones(self.n, dtype=bool)
        self.last[:-1] = self.cpu[1:] != self.cpu[:-1]
        self.end = np.empty(self.n, dtype=np.int64)
        self.end[:-1] = self.ts[1:]
        self.end[self.last] = self.t_end
        # a CPU's last segment has no switch at its end: its task runs on, as shown
        self.B = np.empty(self.n, dtype=self.prev.dtype)
        self.B[:-1] = self.prev[1:]
        self.B[self.last] = self.next[self.last]
        self.chain_ok = self.B == self.next
        return self

    @cached_property
    def rank(self) -> np.ndarray:
        """The position of each given row in the (CPU, time) order: for the as-of search
        of the events' switches only (switches out of time order; the walk counts)."""
        rank = np.empty(self.n, dtype=np.int64)
        rank[self._order] = np.arange(self.n)
        return rank

    def first_index(self) -> dict[int, int]:
        """Per CPU, the index of its first switch."""
        if self.n == 0:
            return {}
        f = np.ones(self.n, dtype=bool)
        f[1:] = self.cpu[1:] != self.cpu[:-1]
        return dict(zip(self.cpu[f].tolist(), np.flatnonzero(f).tolist()))

    def first_switch(self) -> dict[int, int]:
        return {c: int(self.ts[k]) for c, k in self.first_index().items()}


class _Proofs:
    """Every event but sched_switch as a proof of the task current on its CPU: the
    segment each falls in, the segments some contradict, the lost-event markers."""

    def __init__(self, trace: TraceTables, sw: _Switches) -> None:
        self.sw = sw
        #: per segment: holds an event of another task than the one switched in
        self.mismatch = np.zeros(sw.n, dtype=bool)
        self.first_ts: int | None = None
        self._first_bad: dict[int, tuple[int, int]] = {}  # segment -> (ts, pid)
        #: per table: (table, rows kept (None: all), ts, cpu, pid, segment)
        self.rows: list[tuple] = []
        for name in sorted(set(trace.events) & set(PROOF_EVENTS)):
            if name == "sched_switch":
                continue
            t = trace.table(name)
            if t.num_rows == 0 or "common_pid" not in t.column_names:
                continue
            keep = None
            if t.column("common_pid").null_count:
                keep = np.flatnonzero(~np.asarray(t.column("common_pid").is_null()))
            ets = _np(t, "ts", keep, np.int64)
            ecpu = _np(t, "cpu", keep, None)
            epid = _np(t, "common_pid", keep, None)
            if len(ets):
                lo = int(ets.min())
                self.first_ts = lo if self.first_ts is None else min(self.first_ts, lo)
            seg, status = self._segment(ets, ecpu, epid)
            bad = np.flatnonzero(status == _SEG_OTHER)
            if len(bad):
                self.mismatch[seg[bad]] = True
                o = np.lexsort((ets[bad], seg[bad]))
                bs = seg[bad][o]
                first = np.concatenate([[True], bs[1:] != bs[:-1]])
                for k, t_, p in zip(bs[first].tolist(), ets[bad][o][first].tolist(),
                                    epid[bad][o][first].tolist()):  # fmt: skip
                    if k not in self._first_bad or t_ < self._first_bad[k][0]:
                        self._first_bad[k] = (t_, p)
            self.rows.append((t, keep, ets, ecpu, epid, seg))
        self.runtime = _runtime_windows(trace, sw)
        lost = trace.lost
        if lost is not None and lost.num_rows:
            self.lost_ts = lost.column("ts").to_numpy().astype(np.int64)
            self.lost_cpu = lost.column("cpu").to_numpy().astype(np.int64)
            self.lost_count = lost.column("count").to_numpy().astype(np.int64)
        else:
            self.lost_ts = self.lost_cpu = self.lost_count = np.zeros(0, np.int64)
        self.lost_seg = asof_index(self.lost_ts, self.lost_cpu, sw.ts, sw.cpu, "backward", True)
        lost_in = np.zeros(sw.n, dtype=bool)
        lost_in[self.lost_seg[self.lost_seg >= 0]] = True
        #: the segments whose points are sorted: a broken chain, a mismatch, a loss
        self.suspect = ~sw.chain_ok | self.mismatch | lost_in

    def _segment(
        self, ets: np.ndarray, ecpu: np.ndarray, epid: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per event, the segment it falls in (-1: before its CPU's first switch) and
        whether it is that segment's task's (``_SEG_*``: one compiled pass,
        ``_passes.event_segments``, then the ties below).

        An event stamped with the very time of one or more switches of its CPU (a
        coarse clock, text with microseconds) may have fired before, between or after
        them: it goes to the first of those segments, latest first, whose task is the
        event's own (the task a switch put on, or the task the next switch switches out:
        an event of it fired before that switch); to the last of them when none is."""
        sw = self.sw
        seg = np.empty(len(ets), dtype=np.int64)
        status = np.empty(len(ets), dtype=np.int8)
        ets, epid = np.ascontiguousarray(ets), key_ints(epid)
        # the events and the switches in time order (as tables are): one walk over both
        # finds each event's switch; else the as-of search, then the pass
        if sw.cpu_range is None or not _passes.event_segments_walk(
            ets, key_ints(ecpu), epid, sw.given_ts, key_ints(sw.given_cpu), sw.cpu_first, sw.ts,
            sw.next, *sw.cpu_range, seg, status,
        ):  # fmt: skip
            pos = asof_index(ets, ecpu, sw.given_ts, sw.given_cpu, "backward", True)
            _passes.event_segments(pos, sw.rank, ets, epid, sw.ts, sw.next, seg, status)
            del pos
        tie = np.flatnonzero(status == _SEG_TIE)
        if not len(tie):
            return seg, status
        t, pid = ets[tie], epid[tie]
        cur = seg[tie].copy()
        best = cur.copy()
        active = np.ones(len(tie), dtype=bool)
        while active.any():
            # the segment before switch `cur` (which is stamped t) holds the instant t too
            can = active & (cur > 0)
            can[can] &= sw.cpu[cur[can] - 1] == sw.cpu[cur[can]]
            # an event of the task switch `cur` switches out fired before that switch: it
            # belongs to the segment that ends there (before the CPU's first switch: -1)
            out = active & (sw.prev[cur] == pid)
            best[out] = np.where(can[out], cur[out] - 1, -1)
            can &= ~out
            cur[can] -= 1
            hit = can & (sw.next[cur] == pid)
            best[hit] = cur[hit]
            # go on while the switch reached is itself stamped t
            active = can & ~hit & (sw.ts[cur] == t)
        seg[tie] = best
        own = take(sw.next, best, 0) == pid
        status[tie] = np.where(best < 0, _SEG_NONE, np.where(own, _SEG_OWN, _SEG_OTHER))
        return seg, status

    def breaks(self) -> pd.DataFrame:
        """The chain breaks, the context contradictions of intact chains, the losses."""
        sw = self.sw
        parts = []
        chain = np.flatnonzero(~sw.chain_ok)
        ctx = np.array([k for k in sorted(self._first_bad) if sw.chain_ok[k]], dtype=np.int64)
        for kind, k, ts, other in (
            ("switch_chain", chain, sw.end[chain], sw.B[chain]),
            (
                "context",
                ctx,
                np.array([self._first_bad[k][0] for k in ctx.tolist()], dtype=np.int64),
                np.array([self._first_bad[k][1] for k in ctx.tolist()], dtype=np.int64),
            ),
        ):
            if len(k):
                parts.append(_breaks(kind, sw.cpu[k], ts, sw.next[k], other, 1))
        if len(self.lost_ts):
            none = np.full(len(self.lost_ts), -1)
            # count -1: the buffer said that events were lost, not how many (at least 1)
            parts.append(
                _breaks(
                    "lost_events",
                    self.lost_cpu,
                    self.lost_ts,
                    none,
                    none,
                    np.maximum(self.lost_count, 1),
                )  # fmt: skip
            )
        return pd.concat(parts, ignore_index=True) if parts else _empty_breaks()

    def points(
        self,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, _Names]:
        """The points to sort: the events of the suspect segments and those before a
        CPU's first switch, the lost markers, the bounds of the suspect segments. As
        arrays (group, ts, order, pid, cpu) and a function giving their names.

        Groups: segment k is 2k+1; a CPU's stretch before its first switch (index k0)
        is 2*k0 (-1 - cpu for a CPU without switches)."""
        sw = self.sw
        first_k = sw.first_index()

        def pre_group(cpus: np.ndarray) -> np.ndarray:
            if not first_k:
                return -1 - cpus
            keys = np.array(sorted(first_k), dtype=np.int64)
            vals = np.array([first_k[c] for c in keys.tolist()], dtype=np.int64)
            at = np.searchsorted(keys, cpus)
            found = (at < len(keys)) & (take(keys, np.minimum(at, len(keys) - 1), -1) == cpus)
            return np.where(found, 2 * take(vals, np.minimum(at, len(keys) - 1), 0), -1 - cpus)

        parts: list[tuple] = []  # (group, ts, order, pid, cpu, names())
        for t, keep, ets, ecpu, epid, seg in self.rows:
            # (before a CPU's first switch, seg -1: a point too; one compiled take)
            at = np.flatnonzero(take(self.suspect, seg, True))
            if not len(at):
                continue
            g = 2 * seg[at] + 1
            pre = seg[at] < 0
            if pre.any():
                g[pre] = pre_group(ecpu[at][pre])
            rows = at if keep is None else keep[at]
            parts.append((g, ets[at], _EV, epid[at], ecpu[at], _names_of(t, rows)))
        if len(self.lost_ts):
            g = 2 * self.lost_seg + 1
            pre = self.lost_seg < 0
            if pre.any():
                g[pre] = pre_group(self.lost_cpu[pre])
            parts.append((g, self.lost_ts, _EV, _LOST, self.lost_cpu, None))
        k = np.flatnonzero(self.suspect)
        parts.append((2 * k + 1, sw.ts[k], _IN, sw.next[k], sw.cpu[k], _cat(sw.next_comm, k)))
        k2 = k[~sw.last[k]]
        parts.append(
            (2 * k2 + 1, sw.end[k2], _OUT, sw.B[k2], sw.cpu[k2], _cat(sw.prev_comm, k2 + 1))
        )
        k0 = np.array(sorted(first_k.values()), dtype=np.int64)
        parts.append((2 * k0, sw.ts[k0], _OUT, sw.prev[k0], sw.cpu[k0], _cat(sw.prev_comm, k0)))
        sizes = [len(p[1]) for p in parts]

        def cat(i: int, dtype: npt.DTypeLike) -> np.ndarray:
            return np.concatenate(
                [np.broadcast_to(np.asarray(p[i], dtype=dtype), (n,)) for p, n in zip(parts, sizes)]
            )

        def names() -> pd.Categorical:
            from pandas.api.types import union_categoricals

            cats = [
                object_categories(p[5]() if p[5] is not None else _no_names(n))
                for p, n in zip(parts, sizes)
            ]
            return union_categoricals(cats)

        return cat(0, np.int64), cat(1, np.int64), cat(2, np.int8), cat(3, np.int64), \
            cat(4, np.int64), names  # fmt: skip


#: (pid, cpu) pairs as one int64 key: pid * _CPU_SPAN + cpu
_CPU_SPAN = 1 << 20


def _runtime_windows(
    trace: TraceTables, sw: _Switches
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Where ``sched_stat_runtime`` proves a task running, as (key, start, end) arrays
    sorted by (key, end), key = pid * _CPU_SPAN + cpu; None without the event.

    update_curr() charges the run queue's current task (``pid``) with ``runtime`` ns of
    its task clock since its last charge, and a task is charged when it leaves the CPU:
    so it was current throughout ``[ts - runtime, ts]`` (the task clock leaves out
    interrupt time, so its run began no later than ``ts - runtime``). The event fires on
    the CPU doing the update, which may be another than the task's (an enqueue on a
    remote run queue): then the task's CPU is where it was last placed (its last
    switch, sched_wakeup, sched_wakeup_new or migration before the event)."""
    if not trace.has_records("sched_stat_runtime"):
        return None
    t = trace.table("sched_stat_runtime")
    if not {"pid", "runtime", "common_pid"} <= set(t.column_names):
        return None
    cols = [t.column(c) for c in ("ts", "cpu", "common_pid", "pid", "runtime")]
    if not all(pa.types.is_integer(c.type) for c in cols):  # (text read as text: unused)
        return None
    ok = np.ones(t.num_rows, dtype=bool)
    for c in cols:
        if c.null_count:
            ok &= ~np.asarray(c.is_null())
    ts, cpu, cur, pid, rt = (np.asarray(c.to_numpy(zero_copy_only=False))[ok].astype(np.int64)
                             for c in cols)  # fmt: skip
    keep = (pid > 0) & (rt >= 0)
    ts, cpu, cur, pid, rt = ts[keep], cpu[keep], cur[keep], pid[keep], rt[keep]
    remote = np.flatnonzero(cur != pid)
    if len(remote):
        cpu = cpu.copy()
        cpu[remote] = _placed_cpu(trace, sw, ts[remote], pid[remote])
    good = (cpu >= 0) & (cpu < _CPU_SPAN)
    ts, cpu, pid, rt = ts[good], cpu[good], pid[good], rt[good]
    key = pid * _CPU_SPAN + cpu
    o = lex_order(ts, key)
    return key[o], (ts - np.minimum(rt, ts))[o], ts[o]


def _placed_cpu(trace: TraceTables, sw: _Switches, ts: np.ndarray, pid: np.ndarray) -> np.ndarray:
    """Per (ts, pid): the CPU the task was last put on before ``ts`` (-1: none): its
    last switch (in or out), sched_wakeup / sched_wakeup_new (target_cpu) or
    sched_migrate_task (dest_cpu)."""
    best_ts = np.full(len(ts), np.iinfo(np.int64).min, dtype=np.int64)
    best_cpu = np.full(len(ts), -1, dtype=np.int64)
    sources = [(sw.ts, sw.prev, sw.cpu), (sw.ts, sw.next, sw.cpu)]
    for name, pcol, ccol in (
        ("sched_wakeup", "pid", "target_cpu"),
        ("sched_wakeup_new", "pid", "target_cpu"),
        ("sched_migrate_task", "pid", "dest_cpu"),
    ):
        if trace.has_records(name):
            t = trace.table(name)
            if {pcol, ccol} <= set(t.column_names) and not t.column(pcol).null_count:
                c = t.column(ccol)
                if c.null_count:
                    continue
                sources.append((t.column("ts").to_numpy(), t.column(pcol).to_numpy(), c.to_numpy()))
    for fts, fpid, fcpu in sources:
        fts = np.asarray(fts, dtype=np.int64)
        i = asof_index(ts, pid, fts, np.asarray(fpid, dtype=np.int64), "backward", True)
        at = take(fts, i, np.iinfo(np.int64).min)
        later = at > best_ts
        best_ts[later] = at[later]
        best_cpu[later] = take(np.asarray(fcpu, dtype=np.int64), i, -1)[later]
    return best_cpu


def _no_names(n: int) -> pd.Categorical:
    return pd.Categorical.from_codes(np.full(n, -1, np.int8), categories=pd.Index([], dtype=object))


def _np(
    table: pa.Table, column: str, rows: np.ndarray | None, dtype: npt.DTypeLike | None
) -> np.ndarray:
    """A column of an Arrow table as NumPy (the ``rows`` given; None: all), of ``dtype``
    (None: int64, but a column of 4- or 8-byte ints as it is, not copied)."""
    a = table.column(column)
    if rows is not None:
        a = a.take(rows)
    out = np.asarray(a.to_numpy())
    if dtype is None:
        if out.dtype.kind == "i" and out.dtype.itemsize in (4, 8):
            return out
        dtype = np.int64
    return out.astype(dtype, copy=False)


def _names_of(table: pa.Table, rows: np.ndarray) -> _Names:
    """A function giving the ``common_comm`` of those rows (read only when needed)."""

    def names() -> pd.Categorical:
        if "common_comm" not in table.column_names:
            return _no_names(len(rows))
        return pd.Categorical(table.column("common_comm").take(rows).to_pandas())

    return names


def _cat(cat: pd.Categorical, rows: np.ndarray) -> _Names:
    return lambda: pd.Categorical(cat.take(rows))


def _timeline_and_runs(
    sw: _Switches, proofs: _Proofs, first_ts: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The timeline (a clean segment as it is; the others from their points, what they
    do not show unknown) and the runs of every task."""
    clean = np.flatnonzero(~proofs.suspect)
    g, ts, order, pid, cpu, names = proofs.points()
    o = np.lexsort((order, ts, g))
    g, ts, order, pid, cpu = g[o], ts[o], order[o], pid[o], cpu[o]
    n = len(ts)
    # a run: points of one task in a row within a group (a lost marker is a run of its own)
    change = np.ones(n, dtype=bool)
    change[1:] = (g[1:] != g[:-1]) | (pid[1:] != pid[:-1])
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], n) - 1 if n else starts
    r_g, r_pid, r_cpu = g[starts], pid[starts], cpu[starts].astype(np.int32)
    r_start, r_end = ts[starts], ts[ends].copy()
    r_exact = order[starts] == _IN
    r_endkind = np.where(order[ends] == _OUT, _END_SWITCH, _END_EVENT).astype(np.int8)
    # a run's name: its switch-out's prev_comm, else its first point's
    all_names = names()
    codes = np.asarray(all_names.codes)[o]
    r_code = np.where(order[ends] == _OUT, codes[ends], codes[starts])
    del codes, o
    in_seg = (r_g > 0) & (r_g % 2 == 1)  # (pre-switch groups are even or negative)
    seg = np.where(in_seg, (r_g - 1) // 2, -1)
    # the last run of a CPU's last segment goes on to the end of the trace
    last_of_g = np.ones(len(starts), dtype=bool)
    last_of_g[:-1] = r_g[1:] != r_g[:-1]
    to_end = in_seg & last_of_g & (r_pid != _LOST)
    to_end[to_end] = sw.last[seg[to_end]]
    r_end[to_end] = sw.t_end
    r_endkind[to_end] = _END_TRACE
    # where a run may have begun: the end of its group's previous real run (the stretch
    # between is unknown); the trace's first event for a group's first run
    real = r_pid != _LOST
    idx = np.where(real, np.arange(len(starts)), -1)
    prev_real = np.maximum.accumulate(np.concatenate([[-1], idx[:-1]])) if len(idx) else idx
    new_g = np.ones(len(starts), dtype=bool)
    new_g[1:] = r_g[1:] != r_g[:-1]
    g_first = np.maximum.accumulate(np.where(new_g, np.arange(len(starts)), 0))
    has_prev = prev_real >= g_first
    r_earliest = np.full(len(starts), first_ts, dtype=np.int64)
    r_earliest[has_prev] = r_end[prev_real[has_prev]]
    r_earliest = np.where(r_exact, r_start, np.minimum(r_earliest, r_start))
    # a run whose switch-in is missing may be shown earlier by the kernel's own run-time
    # accounting: sched_stat_runtime of the task on that CPU in the stretch or the run
    sr = proofs.runtime
    cens = np.flatnonzero(real & ~r_exact & (r_pid > 0))
    if sr is not None and len(cens):
        w_key, w_start, w_end = sr
        key = r_pid[cens] * _CPU_SPAN + r_cpu[cens]
        wi = asof_index(r_earliest[cens], key, w_end, w_key, "forward", allow_exact=True)
        ok = (wi >= 0) & (take(w_end, wi, np.iinfo(np.int64).max) <= r_end[cens])
        at = np.maximum(take(w_start, wi, 0), r_earliest[cens])
        moved = ok & (at < r_start[cens])
        r_start[cens[moved]] = at[moved]
    # -- the timeline: the clean segments as they are, the runs of the others, and
    # what neither shows (one compiled pass, in (CPU, time) order as it goes)
    comm, (sw_map, run_map) = _names_dtype(sw.next_comm, all_names)
    sw_code = sw_map[np.asarray(sw.next_comm.codes)]
    run_code = run_map[r_code]
    keep = np.flatnonzero(real & in_seg & (r_end > r_start))
    timeline = _timeline(sw, proofs, comm, sw_code, seg[keep], r_start[keep], r_end[keep],
                         r_pid[keep], run_code[keep])  # fmt: skip
    # -- the runs of tasks (not the idle task): the clean segments', the groups'
    ck = clean[sw.next[clean] > 0]
    rk = np.flatnonzero(real & (r_pid > 0))
    runs = _runs_frame(
        sw, ck, sw_code, r_pid[rk], run_code[rk], r_cpu[rk], r_start[rk], r_end[rk],
        r_exact[rk], r_earliest[rk], r_endkind[rk], comm,
    )  # fmt: skip
    return timeline, runs


def _runs_frame(
    sw: _Switches,
    ck: np.ndarray,
    sw_code: np.ndarray,
    pid: np.ndarray,
    code: np.ndarray,
    cpu: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    exact: np.ndarray,
    earliest: np.ndarray,
    endkind: np.ndarray,
    comm: pd.CategoricalDtype,
) -> pd.DataFrame:
    """The runs: the clean segments ``ck`` (each its switch-in's task from the switch
    to the next) and the groups' runs (the other arrays), by (pid, start), ties in
    that order. The order in one compiled pass (``_passes.runs_order``: by pid, then a
    merge of each task's runs, in time order per CPU), the columns in another
    (``_passes.runs_columns``): no concatenation of the two, no lexsort, no gathers."""
    n_runs = len(ck) + len(pid)
    src = np.empty(n_runs, dtype=np.int64)  # a segment, or ~j for group run j
    if n_runs:
        # (the pids' range: every switch-in's and the groups', no gather of ck's)
        ends = [int(f(a)) for a in (sw.next, pid) if len(a) for f in (np.min, np.max)]
        lo = min(ends)
        _passes.runs_order(ck, key_ints(sw.next), sw.ts, key_ints(pid), start, lo,
                           max(ends) - lo + 1, src)  # fmt: skip
    col = {name: np.empty(n_runs, dtype) for name, dtype in _RUN_COLUMNS}
    _passes.runs_columns(
        src,
        (sw.ts, sw.end, key_ints(sw.cpu), key_ints(sw.next), sw_code, sw.last),
        (start, end, earliest, key_ints(cpu), key_ints(pid), code, exact, endkind),
        _END_SWITCH, _END_TRACE, tuple(col.values()),
    )  # fmt: skip
    col["comm"] = pd.Categorical.from_codes(col["comm"], dtype=comm)
    col["end"] = pd.Categorical.from_codes(col["end"], categories=list(END_KINDS))
    # (fresh arrays: kept as they are, not copied into 2-D blocks)
    return pd.DataFrame(col, copy=False)


#: The runs' columns as ``_passes.runs_columns`` writes them (names and codes, in order).
_RUN_COLUMNS = (
    ("pid", np.int32),
    ("comm", np.int32),
    ("cpu", np.int32),
    ("start_ts", np.int64),
    ("end_ts", np.int64),
    ("exact_start", np.bool_),
    ("earliest_ts", np.int64),
    ("end", np.int8),
)


def _names_dtype(
    *parts: pd.Categorical,
) -> tuple[pd.CategoricalDtype, list[np.ndarray]]:
    """One dtype for the names of several categoricals, its categories as
    ``union_categoricals`` joins theirs (in order, each new one after), and per part the
    int32 map of its codes to the dtype's: the rows keep their codes as ints until a
    frame is made, instead of each piece's being joined. A map's last entry is -1, so
    that ``map[codes]`` reads a missing name (-1) as one."""
    from pandas.api.types import union_categoricals

    cats = [object_categories(pd.Categorical(p)).categories for p in parts]
    dtype = union_categoricals(
        [pd.Categorical.from_codes(np.zeros(0, np.int8), categories=c) for c in cats]
    ).dtype
    maps = [np.append(dtype.categories.get_indexer(c), -1).astype(np.int32) for c in cats]
    return dtype, maps


def _timeline(
    sw: _Switches,
    proofs: _Proofs,
    comm: pd.CategoricalDtype,
    sw_code: np.ndarray,
    r_seg: np.ndarray,
    r_start: np.ndarray,
    r_end: np.ndarray,
    r_pid: np.ndarray,
    r_code: np.ndarray,
) -> pd.DataFrame:
    """The timeline: per CPU from its first switch to the trace's end, its clean
    segments and the runs of the others (``r_*``, by segment: known intervals of the
    suspect segments), in (CPU, time) order, and an unknown row for every stretch
    between them (``lost_events`` when a lost-event marker of that CPU lies in it, else
    ``missing_switch``). The segments are in (CPU, time) order and a suspect segment's
    runs lie in it, in time order: one compiled pass (``_passes.timeline_rows``) merges
    them and fills the holes as it goes, no sort."""
    # (rows: the clean segments, the runs, a hole at most before each run, after each
    # CPU's last row and before a clean segment after a suspect one, which shows no
    # hole after another clean one: they meet)
    cap = sw.n + 2 * len(r_seg) + len(sw.first_index())
    cpu, pid, code = (np.empty(cap, np.int32) for _ in range(3))
    start, end = np.empty(cap, np.int64), np.empty(cap, np.int64)
    state = np.empty(cap, np.int8)
    m = _passes.timeline_rows(
        sw.ts, sw.end, key_ints(sw.cpu), key_ints(sw.next), sw_code,
        (~proofs.suspect).view(np.uint8), r_seg, r_start, r_end, key_ints(r_pid), r_code,
        sw.t_end, cpu, start, end, pid, code, state,
    )  # fmt: skip
    cpu, start, end, pid, code, state = cpu[:m], start[:m], end[:m], pid[:m], code[:m], state[:m]
    why = np.where(state == _STATE_UNKNOWN, 0, -1).astype(np.int8)
    h = np.flatnonzero(state == _STATE_UNKNOWN)
    if len(proofs.lost_ts) and len(h):
        lo = np.lexsort((proofs.lost_ts, proofs.lost_cpu))
        lt, lc = proofs.lost_ts[lo], proofs.lost_cpu[lo]
        li = asof_index(end[h], cpu[h].astype(np.int64), lt, lc, "backward", True)
        why[h[(li >= 0) & (take(lt, li, -1) >= start[h])]] = 1
    return pd.DataFrame(
        {
            "cpu": cpu,
            "start_ts": start,
            "end_ts": end,
            "pid": pid,
            "comm": pd.Categorical.from_codes(code, dtype=comm),
            "state": pd.Categorical.from_codes(state, categories=list(STATES)),
            "why": pd.Categorical.from_codes(why, categories=list(WHY)),
        },
        copy=False,  # (fresh arrays: kept as they are, not copied into 2-D blocks)
    )


def _two_cpus(runs: pd.DataFrame, run_reach: np.ndarray) -> pd.DataFrame:
    """Runs of one task on two CPUs that overlap by more than the clocks' tolerance
    (``run_reach``: :func:`reach` of the runs)."""
    if len(runs) < 2:
        return _empty_breaks()
    pid = runs["pid"].to_numpy()
    start = runs["start_ts"].to_numpy()
    cpu = runs["cpu"].to_numpy()
    same = np.zeros(len(pid), dtype=bool)
    same[1:] = pid[1:] == pid[:-1]
    # how far the pid's earlier runs reach (they are sorted by pid, then start)
    prev_reach = np.concatenate([[np.iinfo(np.int64).min], run_reach[:-1]])
    bad = np.flatnonzero(same & (start < prev_reach - TWO_CPUS_TOLERANCE_NS))
    if not len(bad):
        return _empty_breaks()
    return _breaks("two_cpus", cpu[bad], start[bad], pid[bad], pid[bad], 1)


def _unwoken_switch_ins(ev: Events, runs: pd.DataFrame) -> pd.DataFrame:
    """Switch-ins of a task whose last switch-out put it to sleep, with no wake-up of it
    (waking, wakeup or wakeup_new) since the run that switch-out ended began.

    That run ended by the switch-out and began where it may have (``earliest_ts``), so
    a wake-up since the switch-out answers a switch-in without the run: the run is
    searched for the others only (:func:`_unwoken_candidates`), a few rows."""
    s = ev.switch
    if s is None or len(s) == 0 or "prev_state_str" not in s.columns:
        return _empty_breaks()
    sts, scpu, nxt = ints(s, "ts"), ints(s, "cpu"), ints(s, "next_pid")
    nkey = ev.key(nxt, sts)
    cand, out_ts, woke = _unwoken_candidates(ev, s, sts, nkey, nxt)
    if not len(cand):
        return _empty_breaks()
    never = np.iinfo(np.int64).min
    ri = asof_index(out_ts, nkey[cand], runs["end_ts"].to_numpy(), ev.run_keys(runs),
                    "backward", allow_exact=True)  # fmt: skip
    began = take(runs["earliest_ts"].to_numpy(), ri, never)
    # a break: no wake-up of any kind since that run began (without a run: none)
    b = cand[(began > never) & (woke < began)]
    return _breaks("unwoken_switch_in", scpu[b], sts[b], nxt[b], nxt[b], 1)


def _unwoken_candidates(
    ev: Events, s: pd.DataFrame, sts: np.ndarray, nkey: np.ndarray, nxt: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The switch-ins (rows of ``s``) of a task (not the idle task) whose last earlier
    switch-out (keyed by life: a pid used again is another task, ``.lives``) put it to
    sleep and that no wake-up of any kind (at or before the switch-in) came after: the
    rows, the time of that switch-out, the time of the task's last wake-up (int64 min:
    none). One compiled walk over the switches and the wake-up tables in time order
    (``_passes.unwoken_candidates``), when the keys lie in a small range; else as-of
    searches of every switch, then of each wake-up table."""
    from .task_states import sleeps  # the letters of a sleep: one rule

    asleep = cat_mask(pd.Categorical(s["prev_state_str"]), sleeps)
    pkey = ev.key(ints(s, "prev_pid"), sts)
    wakes = []
    for f in (ev.waking, ev.wakeup, ev.wakeup_new):
        if f is not None and len(f):
            fts = ints(f, "ts")
            wakes.append((fts, key_ints(ev.key(ints(f, "pid"), fts))))
    if (table := table_span([nkey, pkey, *(k for _, k in wakes)])) is not None:
        sw, out_ts, woke = (np.empty(len(sts), np.int64) for _ in range(3))
        m = _passes.unwoken_candidates(sts, key_ints(nkey), key_ints(pkey), key_ints(nxt),
                                       asleep.view(np.uint8), tuple(wakes), *table,
                                       sw, out_ts, woke)  # fmt: skip
        if m >= 0:
            return sw[:m], out_ts[:m], woke[:m]
    return _unwoken_searched(sts, nkey, pkey, nxt, asleep, wakes)


def _unwoken_searched(
    sts: np.ndarray,
    nkey: np.ndarray,
    pkey: np.ndarray,
    nxt: np.ndarray,
    asleep: np.ndarray,
    wakes: Sequence[tuple[np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_unwoken_candidates` by as-of searches (the switches or the wake-ups not
    in time order, keys in a wide range): each switch's task's last switch-out before
    it (every switch searched, not the switch-ins of tasks alone: no gathers of them;
    the idle task's are left out after, and a task's switch-out is never the idle
    task's), then each wake-up table's last of the task."""
    never = np.iinfo(np.int64).min
    oi = asof_index(sts, nkey, sts, pkey, "backward", False)
    cand = np.flatnonzero(take(asleep, oi, False) & (nxt > 0))
    out_ts = sts[oi[cand]]
    woke = np.full(len(cand), never, dtype=np.int64)
    for fts, fkey in wakes:
        wi = asof_index(sts[cand], nkey[cand], fts, fkey, "backward", True)
        woke = np.maximum(woke, take(fts, wi, never))
    keep = woke < out_ts
    return cand[keep], out_ts[keep], woke[keep]


def _rewoken(ev: Events, runs: pd.DataFrame, run_reach: np.ndarray) -> pd.DataFrame:
    """Wake-ups (sched_waking; sched_wakeup without it) of a task whose previous wake-up
    was not followed by a run of it: a wake-up needs a task that is not TASK_RUNNING
    (try_to_wake_up() checks its state before it traces anything), and only the task
    itself leaves TASK_RUNNING, so it ran in between where the trace does not show it.
    A run that was on when the previous wake-up came counts (woken while running).
    ``run_reach``: :func:`reach` of the runs."""
    f = ev.waking if ev.waking is not None and len(ev.waking) else ev.wakeup
    if f is None or len(f) < 2:
        return _empty_breaks()
    ts, pid, cpu = ints(f, "ts"), ints(f, "pid"), ints(f, "cpu")
    b = _rewoken_walked(ev, ts, pid, runs)
    if b is None:
        # (the previous wake-up of the same task, not of its pid)
        b = _rewoken_searched(ts, ev.key(pid, ts), runs["start_ts"].to_numpy(),
                              ev.run_keys(runs), run_reach)  # fmt: skip
    if not len(b):
        return _empty_breaks()
    return _breaks("rewoken", cpu[b], ts[b], pid[b], pid[b], 1)


def _rewoken_searched(
    ts: np.ndarray, key: np.ndarray, r_start: np.ndarray, r_key: np.ndarray, run_reach: np.ndarray
) -> np.ndarray:
    """:func:`_rewoken`'s wake-ups (rows of ``ts``, ``key``) by as-of searches of each
    one's previous wake-up, then of the runs (``r_start``, ``r_key``; ``run_reach``
    their :func:`reach`) begun by it."""
    prev = asof_index(ts, key, ts, key, "backward", False)
    has = np.flatnonzero(prev >= 0)
    if not len(has):
        return has
    p_ts = ts[prev[has]]
    # a run that began after the previous wake-up, by this one, or one that was on at
    # the previous wake-up (and is proven on until it; runs on two CPUs at once may
    # overlap): both are whether, of the runs begun by this wake-up, the furthest
    # reaching reaches the previous one (a run begun in between reaches its own start;
    # without one, the runs begun by this wake-up are those begun by the previous), so
    # one search answers both
    li = asof_index(ts[has], key[has], r_start, r_key, "backward", allow_exact=True)
    ran = take(run_reach, li, -1) >= p_ts
    return has[~ran]


def _rewoken_walked(
    ev: Events, ts: np.ndarray, pid: np.ndarray, runs: pd.DataFrame
) -> np.ndarray | None:
    """:func:`_rewoken`'s wake-ups in one compiled walk over them in time order, each
    task's runs (a range of the runs, by start) passed as its wake-ups come, with the
    furthest end of those (``_passes.rewoken_walk``): no search of the previous wake-up
    nor of the runs. For a trace whose pids are its tasks (no pid used again: the runs'
    reach restarts per pid) and the pids in a small range; else None."""
    if ev.lives or not len(runs):
        return None
    r_pid = runs["pid"].to_numpy()
    if (table := table_span([pid, r_pid])) is None:
        return None
    out = np.empty(len(ts), dtype=np.int64)
    m = _passes.rewoken_walk(ts, key_ints(pid), runs["start_ts"].to_numpy(),
                             runs["end_ts"].to_numpy(), key_ints(r_pid), *table,
                             out)  # fmt: skip
    return None if m < 0 else out[:m]


def reach(runs: pd.DataFrame) -> np.ndarray:
    """Per run (``runs`` sorted by pid, then start), the furthest end of its task's runs
    begun by its start: whether some run of the task is on at a time is whether the
    last run begun by then reaches it. A running maximum restarted at each task's first
    run, in one compiled pass (``_passes.group_running_max``)."""
    pid = runs["pid"].to_numpy()
    new = np.ones(len(pid), dtype=bool)
    new[1:] = pid[1:] != pid[:-1]
    out = np.empty(len(pid), dtype=np.int64)
    end = np.ascontiguousarray(runs["end_ts"].to_numpy(), dtype=np.int64)
    _passes.group_running_max(end, new, out)
    return out


def _breaks(
    kind: str,
    cpu: np.ndarray | Sequence[int],
    ts: np.ndarray | Sequence[int],
    pid: np.ndarray | Sequence[int],
    other: np.ndarray | Sequence[int],
    count: npt.ArrayLike,
) -> pd.DataFrame:
    n = len(ts)
    return pd.DataFrame(
        {
            "cpu": np.asarray(cpu).astype(np.int32),
            "ts": np.asarray(ts).astype(np.int64),
            "kind": [kind] * n,
            "pid": np.asarray(pid).astype(np.int32),
            "other_pid": np.asarray(other).astype(np.int32),
            "count": np.broadcast_to(np.asarray(count, dtype=np.int64), (n,)).copy(),
        }
    )


def _empty_breaks() -> pd.DataFrame:
    return _breaks("switch_chain", [], [], [], [], 1).astype({"kind": "object"})
