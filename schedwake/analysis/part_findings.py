"""The findings of one trace from its time parts (docs/design-partitioned-analysis.md,
'Metrics and findings'): each part measures what a detector counts of the rows it owns
(:func:`part_findings`, kept where the part is), the client adds the measures up and
judges once, with the detector's own judgement; the evidence is read in a window of
the trace around the episode it shows (:meth:`schedwake.partition.Plan.map_windows`).

Built so far: ``kworker_pingpong`` (its :class:`~schedwake.detect.kworker_pingpong.Measure`
adds up; its typical episode is found over the parts: each part flags its episodes
whose kworker leaves for idle soon, those it cannot see to the end in a window).
The other detectors are not joined yet (:data:`JOINED`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..detect import Finding, Thresholds, kworker_pingpong, thresholds
from ..detect.base import severity_rank
from ..detect.evidence import evidence_of, evidence_rows
from ..model.masks import episodes_mask
from ..partition import owned_mask
from . import check_thresholds

if TYPE_CHECKING:
    from ..detect.base import EvidenceAt
    from ..partition import PartSpec, Plan
    from ..partition.driver import Kept
    from ..trace import Trace

#: The detectors whose findings the parts give.
JOINED = ("kworker_pingpong",)

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
    return PartFindings(spec.t0, spec.t1, measure, episodes, w.iloc[:0])


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
    trace's, :meth:`.partitioned.Joined.caveats`) and their evidence."""
    names = list(JOINED) if detectors is None else list(detectors)
    for n in names:
        if n not in JOINED:
            raise NotImplementedError(f"{n}: its findings are not joined from time parts yet")
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
    ok = e["ok"].astype(object).to_numpy()
    # nearest the middle first (of two as near, the earlier): the first that is ok
    for i in sorted(range(len(e)), key=lambda i: (abs(i - mid), i)):
        if ok[i] is pd.NA:
            row = e.iloc[[i]]
            ts = int(row["ts"].iloc[0])
            ok[i] = plan.map_windows(
                _IdleSoon(row), [(ts, ts + kworker_pingpong.IDLE_SOON_NS + 1)]
            )[0]
        if ok[i]:
            return e.iloc[i]
    return e.iloc[mid]
