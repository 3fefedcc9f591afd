"""Why a rule broke: per detector that explains its metric, in how many candidate
traces it fired, at what severity, and who is involved most (weighed by each
detector's ``SHOWN.top_weight``); then the ``schedwake analyze`` command to see it."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ..sidetrace import SideTrace
from .result import GateResult
from .rules import fmt_num

if TYPE_CHECKING:
    from ..trace import Trace

#: The fields of a finding's ``top`` entries that name who is involved, as reports say them
#: (an entry is weighed by its detector's ``SHOWN.top_weight``, else its ``count``).
_WHO = (
    ("waker", "wakers"),
    ("work_function", "work functions"),
    ("wakee", "wakees"),
    ("comm", "tasks"),
    ("cpu", "CPUs"),
)


def _findings_of(trace: SideTrace, thresholds: dict | None) -> list:
    """The findings of one candidate trace: stored ones for a batch dataset's trace, else
    the detectors run now (without evidence lines: only the top lists are needed)."""
    from ..detect import detect

    stored = trace.stored
    if stored is not None:
        return list(stored.findings(thresholds))
    # (a SideTrace without a stored analysis is a loaded Trace)
    return detect(cast("Trace", trace), thresholds, evidence_lines=0)


def explain_broken(
    result: GateResult, candidates: list[SideTrace], thresholds: dict | None
) -> None:
    """Give each broken rule its ``why``: per detector that measures its metric
    (:data:`schedwake.analysis.metrics.EXPLAINED_BY`), in how many candidate traces it fired and
    at what severity, and who is involved most (summed over the traces' top lists); then
    the ``schedwake analyze`` command of the candidate trace with the worst finding."""
    from ..analysis.metrics import EXPLAINED_BY, catalogue_entry
    from ..detect.base import severity_rank

    broken = [r for r in result.results if r.status == "broken"]
    if not broken:
        return
    found = [(t, _findings_of(t, thresholds)) for t in candidates]
    for r in broken:
        detectors = EXPLAINED_BY.get(_rate_of(catalogue_entry(r.rule.metric).name), ())
        worst = None
        for det in detectors:
            hits = [(t, f) for t, fs in found for f in fs if f.detector == det]
            if not hits:
                r.why.append(f"{det}: no finding in the {len(candidates)} candidate trace(s)")
                continue
            sevs = sorted({f.severity for _, f in hits}, key=severity_rank)
            traces = len({id(t) for t, _ in hits})
            line = f"{det} ({'/'.join(sevs)}) in {traces} of {len(candidates)} candidate trace(s)"
            who = top_names([f for _, f in hits])
            r.why.append(line + (f": {who}" if who else ""))
            best = min(hits, key=lambda h: severity_rank(h[1].severity))
            if worst is None or severity_rank(best[1].severity) < severity_rank(worst[1].severity):
                worst = best
        shown = worst[0] if worst is not None else (candidates[0] if candidates else None)
        if shown is not None:
            r.why.append(f"see: schedwake analyze {shown.meta.path}")


def _rate_of(name: str) -> str:
    """The rate a count per unit of work is made from (its detectors explain it too)."""
    from ..work import is_per_op, per_s_name

    return per_s_name(name) if is_per_op(name) else name


def top_names(findings: list) -> str:
    """``wakers (by episodes) kworker/2:1H 505, kworker/3:1H 218; wakees (by episodes)
    dbench 723``: the three heaviest names of each field of the findings' top lists,
    weights summed over the findings."""
    from ..detect import shown

    parts = []
    for key, label in _WHO:
        weights: dict[str, float] = {}
        by = None
        for f in findings:
            weighed_by = (shown(f.detector).top_weight, "count")
            for entry in f.top:
                if key not in entry:
                    continue
                k = next((k for k in weighed_by if isinstance(entry.get(k), (int, float))), None)
                by = by or k
                name = str(entry[key])
                weights[name] = weights.get(name, 0) + float(entry[k] if k else 1)
        if weights:
            top = sorted(weights.items(), key=lambda kv: -kv[1])[:3]
            what = f" (by {by.replace('_', ' ')})" if by else ""
            parts.append(f"{label}{what} " + ", ".join(f"{n} {fmt_num(w)}" for n, w in top))
    return "; ".join(parts)
