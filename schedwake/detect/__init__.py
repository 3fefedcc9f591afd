"""Detectors: one module per pathology (docs/detectors.md), a registry and thresholds.

``detect(trace, thresholds={"name": value}, detectors=None)`` runs the detectors over
``trace.model`` and returns :class:`~schedwake.detect.base.Finding` objects, most
severe first, each with its evidence lines filled in. Every threshold is named in
:data:`THRESHOLDS` (default, unit, meaning; documented in docs/detectors.md) and can be
overridden by keyword (API) or ``--threshold name=value`` (CLI).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING

from ..errors import OptionError
from . import cswitch_storm, idle_while_runnable, kworker_pingpong, llc_roundrobin
from .base import (
    SEVERITIES,
    Detector,
    EvidenceAt,
    Finding,
    FindingMetrics,
    Flows,
    MetricValue,
    Shown,
    Threshold,
    Thresholds,
    severity_rank,
)
from .evidence import evidence_of, evidence_rows

if TYPE_CHECKING:
    from ..trace import Trace

#: Every detector (a module that is a :class:`~schedwake.detect.base.Detector`), in the
#: order they run.
_ALL: tuple[Detector, ...] = (kworker_pingpong, llc_roundrobin, cswitch_storm, idle_while_runnable)

#: name -> detector
DETECTORS: dict[str, Detector] = {d.NAME: d for d in _ALL}

#: Every threshold by name.
THRESHOLDS: dict[str, Threshold] = {t.name: t for m in DETECTORS.values() for t in m.THRESHOLDS}


def shown(detector: str) -> Shown:
    """How reports show the findings of ``detector`` (its ``SHOWN``); a name no longer
    registered (a finding read back from a batch dataset) is shown plainly."""
    d = DETECTORS.get(detector)
    return Shown() if d is None else d.SHOWN


def thresholds(overrides: Mapping[str, float | str] | None = None) -> dict[str, float]:
    """Default thresholds updated with ``overrides`` (an unknown name or a value that is
    not a number: OptionError naming ``thresholds``), not yet resolved for a trace
    (:func:`resolve`)."""
    th = {k: t.default for k, t in THRESHOLDS.items()}
    for k, v in (overrides or {}).items():
        if k not in THRESHOLDS:
            import difflib

            close = difflib.get_close_matches(str(k), list(THRESHOLDS), n=2, cutoff=0.6)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise OptionError(
                "thresholds",
                None,
                f"unknown threshold {k!r}{hint} (known: {', '.join(sorted(THRESHOLDS))})",
            )
        try:
            th[k] = float(v)
        except (TypeError, ValueError):
            raise OptionError("thresholds", None, f"{k}={v!r} is not a number") from None
    return th


def for_slice(
    th: Mapping[str, float], trace: Trace, explicit: Collection[str] = ()
) -> dict[str, float]:
    """``th`` as a time slice of a trace judges with it: each threshold with a
    ``slice_floor`` (an amount the trace adds up) scaled by the slice's share of the
    trace's duration (``trace.meta.slice.share``), rounded up for a count, never
    below its floor nor above its value; those named in ``explicit`` (given by the user)
    and every threshold of a whole trace as they are."""
    import math

    share = None if trace.meta.slice is None else trace.meta.slice.share
    if share is None or share >= 1:
        return dict(th)
    out = dict(th)
    for k, t in THRESHOLDS.items():
        if t.slice_floor is None or k in explicit or k not in th:
            continue
        v = th[k] * share
        v = v if t.unit == "s" else math.ceil(v)
        out[k] = min(max(v, t.slice_floor), th[k])
    return out


def resolve(
    trace: Trace, overrides: Mapping[str, float | str] | Thresholds | None = None
) -> Thresholds:
    """The thresholds ``trace`` is judged with, resolved once: the defaults updated with
    ``overrides`` (:func:`thresholds`), then scaled to a time slice (:func:`for_slice`,
    the overrides as the user gave them). ``overrides`` already resolved (a
    :class:`Thresholds`, as an analysis hands down) is returned as it is."""
    if isinstance(overrides, Thresholds):
        return overrides
    return Thresholds(for_slice(thresholds(overrides), trace, overrides or {}))


def parse_threshold_options(items: Iterable[object] | None) -> dict[str, float]:
    """``["name=value", ...]`` -> dict, with one-line errors (OptionError naming
    ``thresholds``)."""
    out = {}
    for item in items or ():
        name, sep, value = str(item).partition("=")
        if not sep or not name.strip():
            raise OptionError("thresholds", None, f"expected name=value, got {item!r}")
        out[name.strip()] = value.strip()
    th = thresholds(out)  # validates names and values
    return {k: th[k] for k in out}


def detect(
    trace: Trace,
    thresholds_: Mapping[str, float | str] | Thresholds | None = None,
    detectors: Iterable[str] | None = None,
    evidence_lines: int = 14,
    **kwargs: float | str,
) -> list[Finding]:
    """Run the detectors on ``trace`` (a :class:`schedwake.Trace`). Threshold overrides
    come as a dict or as keyword arguments (resolved here: :func:`resolve`), or resolved
    already (a :class:`Thresholds`, as :func:`schedwake.analyze` hands them down)."""
    th = resolve(trace, {**(thresholds_ or {}), **kwargs} if kwargs else thresholds_)
    names = list(DETECTORS) if detectors is None else list(detectors)
    for n in names:
        if n not in DETECTORS:
            raise OptionError(
                "detectors", None, f"unknown detector {n!r} (known: {', '.join(DETECTORS)})"
            )
    model = trace.model
    findings: list[Finding] = []
    for n in names:
        findings.extend(DETECTORS[n].detect(trace, model, th))
    caveats = model.caveats
    for f in findings:
        f.caveats = list(caveats)
        if caveats:  # lost events, assumed topology, missing events: said in the finding
            f.metrics["caveats"] = list(caveats)
        if f.evidence_at and evidence_lines > 0:
            picked = evidence_rows(trace, **f.evidence_at, limit=evidence_lines)
            f.evidence, f.evidence_events = evidence_of(trace, picked)
    findings.sort(key=lambda f: severity_rank(f.severity))
    return findings


__all__ = [
    "DETECTORS",
    "THRESHOLDS",
    "SEVERITIES",
    "Detector",
    "EvidenceAt",
    "Finding",
    "FindingMetrics",
    "Flows",
    "MetricValue",
    "Shown",
    "Thresholds",
    "detect",
    "thresholds",
    "for_slice",
    "resolve",
    "shown",
    "parse_threshold_options",
]
