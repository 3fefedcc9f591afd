"""The findings of one trace from its time parts (docs/design-partitioned-analysis.md,
'Metrics and findings'): each part measures what a detector counts of the rows it owns
(:func:`part_findings`, kept where the part is), the client adds the measures up and
judges once, with the detector's own judgement; the evidence is read in a window of
the trace around the episode it shows (:meth:`schedwake.partition.Plan.map_windows`).
The whole trace's detectors run through the same stages (a measure of all rows, judged).

Every detector is joined (:data:`JOINED`):

``kworker_pingpong``
    its :class:`~schedwake.detect.kworker_pingpong.Measure` adds up; its typical
    episode is found over the parts: each part flags its episodes whose kworker leaves
    for idle soon, those it cannot see to the end in a window;
``llc_roundrobin``
    its per-task figures add up; each task's CPU walk is summed per span of time and
    joined where the spans meet;
``cswitch_storm``
    its :class:`~schedwake.detect.cswitch_storm.Measure` of the switches in a part's
    span and the wake-ups it owns adds up (the units judged once over the sums); a
    futile wake-up a part cannot settle (its task slept, and neither the kworker nor
    the task switched in again on the CPU by the part's horizon) is settled by the
    later parts' first switch-ins; the worst pair's cycles are gathered from the parts
    (a cycle whose CPU's next switch a part does not see is taken from the next part,
    whose prelude carries that switch) for the one shown;
``idle_while_runnable``
    the pinned tasks are judged over all parts' switch-ins
    (:meth:`schedwake.partition.Plan.pinned`), then, in a second round
    given them (:func:`gap_of_part`), each part counts the gap inside its span from
    its intervals that reach it (:class:`~schedwake.detect.idle_while_runnable.GapInputs`)
    and keeps the segments its ends cut, which the client joins again
    (:func:`~schedwake.detect.idle_while_runnable.joined_gaps`: the count of segments
    and the longest are the whole trace's); the waits at the longest gap's start are
    the parts' own, the CPUs idle and running there are read in a window. A wait
    longer than a part that a cut falls in may be missing from the part before
    (docs/design-partitioned-analysis.md, 'the gap left'): such a cut counts too little
    gap; :func:`~schedwake.detect.idle_while_runnable.segments_of` takes the waits a
    part does not own that cross its span (``more``), for when the parts are given them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..detect import (
    DETECTORS,
    Finding,
    Thresholds,
    cswitch_storm,
    idle_while_runnable,
    kworker_pingpong,
    llc_roundrobin,
    thresholds,
)
from ..detect.base import severity_rank
from ..detect.evidence import evidence_of, evidence_rows
from ..model.masks import episodes_mask
from ..partition import in_span, owned_mask
from . import check_thresholds
from .partials import NotJoinedError

if TYPE_CHECKING:
    from ..detect.base import EvidenceAt, LongestGap
    from ..partition import PartSpec, Plan
    from ..partition.driver import Kept
    from ..trace import Trace

#: The detectors whose findings the parts give.
JOINED = ("kworker_pingpong", "llc_roundrobin", "cswitch_storm", "idle_while_runnable")

#: How far around an episode its evidence window reaches (its work item's start, its
#: kworker's switch-out and its run, each within 1 ms: :mod:`..detect.kworker_pingpong`).
_AROUND_NS = 1_001_000

_EPISODE_COLUMNS = ("ts", "waker_pid", "wakee_pid", "waker_cpu", "chosen_cpu", "run_ts")


@dataclass
class PartFindings:
    """What a part measures for the detectors, kept where it was modelled."""

    t0: int | None
    t1: int | None
    #: The kworker ping-pong's measure of the wake-ups the part owns.
    pingpong: kworker_pingpong.Measure
    #: Its episodes (a few columns), their group (waker, work function, wakee) and
    #: whether their kworker leaves for idle soon (None: the part does not see it).
    episodes: pd.DataFrame
    #: The wakeups table's columns (no rows), for their dtypes.
    like: pd.DataFrame
    #: llc_roundrobin's per-task parts of the wake-ups it owns (they add up): counts,
    #: visited (task, CPU), last names, migrations, and its CPU changes (with whether
    #: each is a ping-pong episode), of which those before its start (``early``: few,
    #: the wake-ups whose runs it settles) go to the parts that hold their times.
    rr_counts: pd.DataFrame
    rr_visited: pd.DataFrame
    rr_names: pd.DataFrame
    rr_migrations: pd.Series
    rr_changes: pd.DataFrame
    #: cswitch_storm's measure of the switches in the part's span and the wake-ups it
    #: owns (its open futile wake-ups settled on the client by the later parts), its
    #: kworker preemptions (the worst pair's cycles are picked from them) and its
    #: switches from a kworker to a task (the kworkers the worst pair names).
    storm: cswitch_storm.Measure
    storm_rows: pd.DataFrame
    storm_kworkers: pd.DataFrame
    #: Its kworker preemptions before its start (its prelude's: the last switch of a
    #: CPU, whose next switch a part before may not see).
    storm_before: pd.DataFrame
    #: idle_while_runnable's: what its gap is counted from, given the pinned tasks (its
    #: intervals that reach its span, the waits it owns).
    gap: idle_while_runnable.GapInputs


def part_findings(part: Trace, spec: PartSpec) -> PartFindings:
    """The detectors' measures of the part ``part`` read from ``spec``."""
    model = part.model
    w = model.wakeups
    rows = owned_mask(model, spec.t0, spec.t1, "wakeups")
    ts = w["ts"].to_numpy(dtype=np.int64)
    measure = kworker_pingpong.measure(model, rows, first=ts)
    ep = w[episodes_mask(w) & rows] if len(w) else w
    seen_from = -np.inf if spec.t0 is None else spec.t0
    seen_to = part.meta.last_ts_ns if spec.t1 is not None else np.iinfo(np.int64).max
    ets = ep["ts"].to_numpy(dtype=np.int64)
    # (the kworker's next switch-out is seen when the part shows the 200 us after)
    seen = (ets >= seen_from) & (ets + kworker_pingpong.IDLE_SOON_NS <= seen_to)
    ok = kworker_pingpong.idle_soon(model.events, ep)
    episodes = pd.DataFrame({c: ep[c].to_numpy() for c in _EPISODE_COLUMNS})
    episodes["run_ts"] = ep["run_ts"].to_numpy(dtype=np.float64, na_value=np.nan)
    episodes["wk"] = ep["waker_comm"].astype(str).to_numpy()
    episodes["wf"] = ep["work_function"].astype("string").fillna("(unknown)").to_numpy()
    episodes["wc"] = ep["wakee_comm"].astype(str).to_numpy()
    episodes["ok"] = pd.array(np.where(seen, ok, False), dtype="boolean")
    episodes.loc[~seen, "ok"] = pd.NA
    g = llc_roundrobin.wake_rows(model, rows)
    episode = (
        episodes_mask(w)[rows & llc_roundrobin.judged_mask(w)]
        if len(w)
        else np.zeros(0, dtype=bool)
    )
    changes = g.assign(episode=episode)[g["change"].to_numpy()]
    mig = model.migrations
    mig_rows = owned_mask(model, spec.t0, spec.t1, "migrations")
    mig_task = model.events.key(mig["pid"].to_numpy()[mig_rows], mig["ts"].to_numpy()[mig_rows])
    s = model.events.switch
    switches = None if s is None else in_span(s["ts"].to_numpy(dtype=np.int64), spec.t0, spec.t1)
    return PartFindings(
        spec.t0,
        spec.t1,
        measure,
        episodes,
        w.iloc[:0],
        rr_counts=llc_roundrobin.counted(g),
        rr_visited=llc_roundrobin.visited_pairs(g),
        rr_names=llc_roundrobin.last_comms(model, rows),
        rr_migrations=pd.Series(mig_task).value_counts(),
        rr_changes=changes,
        storm=cswitch_storm.measure(model, switches, rows, settled=spec.t1 is None),
        storm_rows=cswitch_storm.preemption_rows(model, switches),
        storm_before=cswitch_storm.preemption_rows(
            model, None if s is None else s["ts"].to_numpy(dtype=np.int64) < (spec.t0 or 0)
        ),
        gap=idle_while_runnable.gap_inputs(
            model, spec.t0, spec.t1, owned_mask(model, spec.t0, spec.t1, "occupancy")
        ),
        storm_kworkers=(
            cswitch_storm.kworker_switchins(model, switches) if s is not None else pd.DataFrame()
        ),
    )


def _measure(pf: PartFindings) -> tuple[kworker_pingpong.Measure, pd.DataFrame]:
    return pf.pingpong, pf.like


def _group_episodes(pf: PartFindings, group: tuple[str, str, str]) -> pd.DataFrame:
    e = pf.episodes
    return e[(e["wk"] == group[0]) & (e["wf"] == group[1]) & (e["wc"] == group[2])]


@dataclass(frozen=True)
class _IdleSoon:
    """In a window from an episode: whether its kworker leaves for idle soon."""

    episode: pd.DataFrame

    def __call__(self, trace: Trace, spec: PartSpec) -> bool:
        return bool(kworker_pingpong.idle_soon(trace.model.events, self.episode)[0])


@dataclass(frozen=True)
class _Evidence:
    """In a window around an episode: where its evidence is taken from, and the lines."""

    episode: pd.Series
    lines: int

    def __call__(self, trace: Trace, spec: PartSpec) -> tuple[EvidenceAt, list, list]:
        at, _ = kworker_pingpong.evidence_of_episode(trace.model.events, self.episode)
        picked = evidence_rows(trace, **at, limit=self.lines)
        lines, records = evidence_of(trace, picked)
        return at, lines, records


def findings(
    plan: Plan,
    kept: Kept[PartFindings],
    caveats: list[str],
    overrides: Mapping[str, float | str] | Thresholds | None = None,
    detectors: Sequence[str] | None = None,
    evidence_lines: int = 14,
) -> list[Finding]:
    """The findings of the whole trace from its parts' measures (:func:`part_findings`),
    as :func:`schedwake.detect.detect` gives them: judged once, with ``caveats`` (the
    model's, :meth:`.partitioned.Joined.model_caveats`) and their evidence."""
    names = list(DETECTORS) if detectors is None else list(detectors)
    for n in names:
        if n not in JOINED:
            raise NotJoinedError(f"{n}: its findings are not joined from time parts yet")
    th = (
        overrides
        if isinstance(overrides, Thresholds)
        else Thresholds(check_thresholds(thresholds(overrides)))
    )
    meta = plan.meta
    duration = (meta.last_ts_ns or 0) - (meta.first_ts_ns or 0)
    out: list[Finding] = []
    if "kworker_pingpong" in names:
        measured = kept.ask(_measure)
        total = kworker_pingpong.Measure.add([m for m, _ in measured])
        like = pd.concat([lk for _, lk in measured])
        where: dict[str, Any] = {}

        def evidence(group: tuple[str, str, str]) -> tuple[EvidenceAt, int]:
            e = _typical_episode(plan, kept, group)
            at, lines, records = plan.map_windows(
                _Evidence(e, evidence_lines),
                [(int(e["ts"]) - _AROUND_NS, int(e["ts"]) + _AROUND_NS)],
            )[0]
            where.update(lines=lines, records=records)
            return at, int(e["ts"])

        for f in kworker_pingpong.judge(total, duration, th, like, False, evidence):
            f.evidence_at = None  # (read already, in the window)
            f.evidence, f.evidence_events = where["lines"], where["records"]
            out.append(f)
    if "llc_roundrobin" in names:
        out.extend(_roundrobin(plan, kept, th, duration, evidence_lines))
    if "cswitch_storm" in names:
        out.extend(_storm(plan, kept, th, duration, evidence_lines))
    if "idle_while_runnable" in names:
        out.extend(_idle_while_runnable(plan, kept, th, duration, evidence_lines))
    for f in out:
        f.caveats = list(caveats)
        if caveats:
            f.metrics["caveats"] = list(caveats)
    out.sort(key=lambda f: severity_rank(f.severity))
    return out


def _typical_episode(
    plan: Plan, kept: Kept[PartFindings], group: tuple[str, str, str]
) -> pd.Series:
    """The episode of ``group`` :func:`..detect.kworker_pingpong.typical_of` picks, its
    flags found by the parts, or in a window from the episode where a part does not
    see its kworker's next switch-out."""
    found = kept.ask(_group_episodes, group)
    e = pd.concat(
        [f.assign(part=i, row=np.arange(len(f))) for i, f in enumerate(found)], ignore_index=True
    )
    e = e.iloc[np.lexsort((e["row"].to_numpy(), e["part"].to_numpy(), e["ts"].to_numpy()))]
    e = e.reset_index(drop=True)
    mid = len(e) // 2
    ok = np.array(e["ok"].astype(object).to_numpy(), dtype=object)  # (a copy: filled in)
    # nearest the middle first (of two as near, the earlier): the first that is ok
    at = np.arange(len(e))
    for i in np.lexsort((at, np.abs(at - mid))).tolist():
        if ok[i] is pd.NA:
            row = e.iloc[[i]]
            ts = int(row["ts"].iloc[0])
            ok[i] = plan.map_windows(
                _IdleSoon(row), [(ts, ts + kworker_pingpong.IDLE_SOON_NS + 1)]
            )[0]
        if ok[i]:
            return e.iloc[i]
    return e.iloc[mid]


# -- llc_roundrobin ---------------------------------------------------------------------


def _early(pf: PartFindings) -> pd.DataFrame:
    """A part's CPU changes before its start (their walk is the part's holding them)."""
    c = pf.rr_changes
    return c.iloc[:0] if pf.t0 is None else c[c["ts"].to_numpy() < pf.t0]


def _span_changes(pf: PartFindings, early: pd.DataFrame) -> pd.DataFrame:
    """The CPU changes in a part's span (its own from its start, and ``early``, the later
    parts' in it), by task and time."""
    c = pf.rr_changes
    if pf.t0 is not None:
        c = c[c["ts"].to_numpy() >= pf.t0]
    lo = -np.inf if pf.t0 is None else pf.t0
    hi = np.inf if pf.t1 is None else pf.t1
    e = early[(early["ts"].to_numpy() >= lo) & (early["ts"].to_numpy() < hi)]
    both = pd.concat([c, e], ignore_index=True) if len(e) else c
    return both.sort_values(["task", "ts"], kind="stable")


def _span_walk(pf: PartFindings, early: pd.DataFrame) -> pd.DataFrame:
    """Per task, the walk of its CPU changes in the part's span: sums, and its first and
    last change (to join the spans)."""
    return walk_ends(llc_roundrobin.walked(_span_changes(pf, early)))


def walk_ends(ch: pd.DataFrame) -> pd.DataFrame:
    """Per task of walked CPU changes ``ch`` (of one span of time): the walk's sums
    (:func:`..detect.llc_roundrobin.walk_sums`), its first and last change, and how
    many of them are ping-pong episodes (what :func:`joined_walks` joins)."""
    sums = llc_roundrobin.walk_sums(ch)
    ends = ch.groupby("task").agg(
        first_ts=("ts", "first"),
        first_prev=("prev", "first"),
        first_chosen=("chosen", "first"),
        last_ts=("ts", "last"),
        last_prev=("prev", "last"),
        last_chosen=("chosen", "last"),
        episodes=("episode", "sum"),
    )
    return sums.join(ends)


def _top_changes(pf: PartFindings, early: pd.DataFrame, tasks: np.ndarray) -> pd.DataFrame:
    c = _span_changes(pf, early)
    return c[np.isin(c["task"].to_numpy(), tasks)]


def _rr_parts(pf: PartFindings) -> tuple:
    return pf.rr_counts, pf.rr_visited, pf.rr_names, pf.rr_migrations


def joined_walks(spans: list[pd.DataFrame]) -> pd.DataFrame:
    """Per task, :func:`..detect.llc_roundrobin.walk_sums` of its changes over every
    span (in time order): each span's sums, and where one span's last change meets the
    next one's first, what the whole walk counts there."""
    f = pd.concat([s.assign(span=i) for i, s in enumerate(spans)]).reset_index()
    f = f.sort_values(["task", "span"], kind="stable").reset_index(drop=True)
    task = f["task"].to_numpy()
    joins = np.zeros(len(f), dtype=bool)
    joins[1:] = task[1:] == task[:-1]
    prev = f.shift(1)
    at = np.flatnonzero(joins)
    a_prev, a_chosen = prev["last_prev"].to_numpy()[at], prev["last_chosen"].to_numpy()[at]
    b_prev, b_chosen = f["first_prev"].to_numpy()[at], f["first_chosen"].to_numpy()[at]
    back = np.zeros(len(f), dtype=np.int64)
    back[at] = (b_chosen == a_prev) & (b_prev == a_chosen)
    same_pair = np.zeros(len(f), dtype=np.int64)
    same_pair[at] = (np.minimum(b_prev, b_chosen) == np.minimum(a_prev, a_chosen)) & (
        np.maximum(b_prev, b_chosen) == np.maximum(a_prev, a_chosen)
    )
    dwell = np.zeros(len(f), dtype=np.float64)
    dwell[at] = f["first_ts"].to_numpy()[at] - prev["last_ts"].to_numpy()[at]
    f = f.assign(
        back=f["back"] + back,
        pair_runs=f["pair_runs"] - same_pair,
        dwell_sum=f["dwell_sum"] + dwell,
        dwell_n=f["dwell_n"] + joins.astype(np.int64),
    )
    return f.groupby("task").agg(
        back=("back", "sum"),
        pair_runs=("pair_runs", "sum"),
        dwell_sum=("dwell_sum", "sum"),
        dwell_n=("dwell_n", "sum"),
        episodes=("episodes", "sum"),
    )


def _roundrobin(
    plan: Plan, kept: Kept[PartFindings], th: Thresholds, duration: int, lines: int
) -> list[Finding]:
    """llc_roundrobin's finding from the parts: the per-task figures added up, the walks
    joined across the spans, the top tasks' changes gathered for their pair walks and
    the worst one's evidence."""
    parts = kept.ask(_rr_parts)
    early = pd.concat(kept.ask(_early), ignore_index=True)
    counts = pd.concat([p[0] for p in parts]).groupby(level=0).sum()
    if not len(counts):
        return []
    visited = pd.concat([p[1] for p in parts], ignore_index=True).drop_duplicates()
    names = pd.concat([p[2].assign(part=i) for i, p in enumerate(parts)]).reset_index()
    names = names.sort_values(["ts", "part"], kind="stable").drop_duplicates("task", keep="last")
    migrations = pd.concat([p[3] for p in parts]).groupby(level=0).sum()
    walks = joined_walks(kept.ask(_span_walk, early))
    per = llc_roundrobin.per_task(counts, visited, walks, names.set_index("task"), duration, th)
    flagged = llc_roundrobin.flagged_tasks(per)
    if not len(flagged):
        return []
    tasks = flagged["task"].to_numpy()
    by_task = walks.reindex(tasks)
    changes = int(per.set_index("task").loc[tasks, "changes"].sum())
    pingpong = float(by_task["episodes"].sum()) / changes if changes else 0.0
    top = flagged.head(llc_roundrobin.TOP)["task"].to_numpy()
    found = kept.ask(_top_changes, early, top)
    ch = pd.concat(found, ignore_index=True).sort_values("task", kind="stable")
    out = llc_roundrobin.judge(per, llc_roundrobin.walked(ch), migrations, pingpong, th)
    return _with_evidence(plan, out, lines)


def _with_evidence(plan: Plan, out: list[Finding], lines: int) -> list[Finding]:
    """The findings ``out`` with the evidence lines of their ``evidence_at`` (if any),
    read in a window of the trace there."""
    for f in out:
        at = f.evidence_at
        if at is None:  # (nothing to show: none in the whole trace's either)
            continue
        f.evidence, f.evidence_events = plan.map_windows(
            _Lines(at, lines), [(at["t0"], at["t1"] + 1)]
        )[0]
        f.evidence_at = None
    return out


@dataclass(frozen=True)
class _Lines:
    """In a window: the evidence lines of ``at``."""

    at: EvidenceAt
    lines: int

    def __call__(self, trace: Trace, spec: PartSpec) -> tuple[list, list]:
        return evidence_of(trace, evidence_rows(trace, **self.at, limit=self.lines))


# -- cswitch_storm ----------------------------------------------------------------------


def _storm_measure(pf: PartFindings) -> cswitch_storm.Measure:
    return pf.storm


def _storm_kworkers(pf: PartFindings, cpu: int, task: int) -> pd.DataFrame:
    k = pf.storm_kworkers
    return k[(k["cpu"].to_numpy() == cpu) & (k["task"].to_numpy() == task)] if len(k) else k


def _storm_cycles(
    pf: PartFindings, cpu: int, task: int, storm: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame]:
    return (
        cswitch_storm.cycles(pf.storm_rows, cpu, task, storm),
        cswitch_storm.cycles(pf.storm_before, cpu, task, storm),
    )


def _settled_cycles(
    found: list[tuple[pd.DataFrame, pd.DataFrame]], firsts: list[pd.Series]
) -> pd.DataFrame:
    """The worst pair's cycles of every part (each part's own, and those before its
    start), settled: a cycle whose CPU's next switch a part does not see is taken from
    the next part that does (it carries the CPU's last switch); one it leaves open, or
    whose kworker's return it does not see, is settled by the later parts' first
    switch-ins (``firsts``)."""
    out = []
    last = len(found) - 1
    for i, (own, _) in enumerate(found):
        c = own.assign(part=i)
        for k in np.flatnonzero(~c["next_seen"].to_numpy(dtype=bool)) if i < last else []:
            ts = int(c["ts"].iat[k])
            for j in range(i + 1, len(found)):
                before = found[j][1]
                at = np.flatnonzero(before["ts"].to_numpy() == ts)
                if not len(at):
                    break
                for col in ("futile", "open", "next_seen", "back_ts"):
                    c.loc[k, col] = before[col].iat[at[0]]
                c.loc[k, "part"] = j
                if before["next_seen"].iat[at[0]]:
                    break
        out.append(c)
    cyc = pd.concat(out, ignore_index=True)
    part = cyc["part"].to_numpy()
    for j in np.unique(part[part < last]).tolist():
        mine = part == j
        unsettled = mine & (cyc["open"].to_numpy(dtype=bool) | (cyc["back_ts"].to_numpy() < 0))
        if not unsettled.any():
            continue
        cand = cyc[unsettled].assign(run_cpu=cyc["cpu"][unsettled])
        futile, back = cswitch_storm.settle(cand, "kworker", "task", firsts[j + 1 :])
        opened = cand["open"].to_numpy(dtype=bool)
        at = np.flatnonzero(unsettled)
        cyc.loc[at[opened], "futile"] = futile[opened]
        seen = (cand["back_ts"].to_numpy() < 0) & (back != cswitch_storm.NEVER)
        cyc.loc[at[seen], "back_ts"] = back[seen]
    return cyc


def _storm(
    plan: Plan, kept: Kept[PartFindings], th: Thresholds, duration: int, lines: int
) -> list[Finding]:
    """cswitch_storm's finding from the parts: their measures added up (the futile
    wake-ups a part leaves open settled by the later parts' first switch-ins) and judged
    once; the worst pair's cycles gathered (those a part leaves open, or whose kworker's
    return it does not see, settled the same way) for the one shown, whose evidence is
    read in a window."""
    measures = kept.ask(_storm_measure)
    total = cswitch_storm.Measure.add(measures)

    def evidence(cpu: int, task: int, storm: pd.DataFrame) -> EvidenceAt:
        found = kept.ask(_storm_cycles, cpu, task, storm)
        cyc = _settled_cycles(found, [m.firsts for m in measures])
        return cswitch_storm.cycle_evidence(
            cyc.iloc[cswitch_storm.middle_cycle(cyc["futile"].to_numpy(dtype=bool))], cpu, task
        )

    def kworkers(cpu: int, task: int) -> list[dict[str, str | int]]:
        found = [k for k in kept.ask(_storm_kworkers, cpu, task) if len(k)]
        return cswitch_storm.top_kworkers(pd.concat(found, ignore_index=True), cpu, task)

    out = cswitch_storm.judge(total, duration, th, None, evidence, kworkers)
    return _with_evidence(plan, out, lines)


# -- idle_while_runnable ----------------------------------------------------------------


def gap_of_part(pf: PartFindings, pinned: np.ndarray) -> dict[int, idle_while_runnable.LlcGap]:
    """The gap inside a part's span given the ``pinned`` tasks (judged over the whole
    trace): its segments (:func:`..detect.idle_while_runnable.segments_of`) summed per
    LLC, those its span's ends cut kept to be joined (the second round)."""
    g = pf.gap
    return idle_while_runnable.summarize(idle_while_runnable.segments_of(g, pinned), g.t0, g.t1)


def _top_waits(pf: PartFindings, pinned: np.ndarray) -> pd.Series:
    return idle_while_runnable.top_waits(pf.gap, pinned)


def _waits_at(pf: PartFindings, pinned: np.ndarray, t: int, cpus: list[int]) -> pd.DataFrame:
    return idle_while_runnable.waits_at(pf.gap, pinned, t, cpus)


@dataclass(frozen=True)
class _CpusAt:
    """In a window from ``t``: the idle CPUs of ``cpus`` and those running at ``t``."""

    t: int
    cpus: list[int]

    def __call__(self, trace: Trace, spec: PartSpec) -> tuple[list[int], pd.DataFrame]:
        return idle_while_runnable.cpus_at(trace.model.occupancy, self.t, self.cpus)


def _idle_while_runnable(
    plan: Plan, kept: Kept[PartFindings], th: Thresholds, duration: int, lines: int
) -> list[Finding]:
    """idle_while_runnable's finding from the parts: the pinned tasks judged over all
    parts' switch-ins (:meth:`schedwake.partition.Plan.pinned`), then (a second round,
    given them) each part's gap inside its span,
    joined where a cut splits a segment, and judged once; the waits at the longest
    gap's start are the parts' own, the CPUs idle and running there are read in a
    window, as is the evidence."""
    pinned = plan.pinned(int(th["iwr_pinned_min_runs"]))
    per, longest = idle_while_runnable.joined_gaps(kept.ask(gap_of_part, pinned))

    def top() -> pd.Series:
        return pd.concat(kept.ask(_top_waits, pinned)).groupby(level=0).sum()

    def side(li: int, t: int, dt: int) -> LongestGap | None:
        cpus = list(plan.topology.llc[li])
        idle, running = plan.map_windows(_CpusAt(t, cpus), [(t, t + 1)])[0]
        waits = pd.concat(kept.ask(_waits_at, pinned, t, cpus), ignore_index=True)
        return idle_while_runnable.side_by_side(
            t, dt, idle, running, idle_while_runnable.ordered(waits)
        )

    out = idle_while_runnable.judge(
        per, longest, plan.topology.llc, duration, len(pinned), th, top, side
    )
    return _with_evidence(plan, out, lines)
