"""What every detector provides (:class:`Detector`), what it returns
(:class:`Finding`), and the named thresholds it judges by."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..model import Model
    from ..trace import Trace

SEVERITIES = ("high", "medium", "low")

#: Threshold values by name (every name of ``detect.THRESHOLDS``; ``detect.thresholds``
#: makes one from the defaults and the user's overrides).
Thresholds = dict[str, float]


@dataclass(frozen=True)
class Threshold:
    name: str
    default: float
    unit: str
    doc: str
    #: For an amount the trace adds up (episodes, wake-ups, seconds of a gap): a time
    #: slice (``Trace.sliced``, ``analyze --time``) judges with it scaled by the slice's
    #: share of the trace's duration, never below this floor (the least evidence a
    #: finding shows). None: a share, which a slice keeps as it is.
    slice_floor: float | None = None


@dataclass
class Finding:
    """One pathology found in a trace."""

    detector: str
    severity: str
    #: One line saying what was found, for the text and Markdown reports.
    title: str
    metrics: dict
    top: list[dict] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    #: The same events as data (:func:`schedwake.detect.evidence.event_record`).
    evidence_events: list[dict] = field(default_factory=list)
    #: Where to take the evidence from: {"t0", "t1", "cpus", "pids", "note"}.
    evidence_at: dict | None = None
    #: Plain-English limits of this finding (lost events, assumed topology, ...).
    caveats: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "detector": self.detector,
            "severity": self.severity,
            "title": self.title,
            "metrics": self.metrics,
            "top": self.top,
            "evidence": self.evidence,
            "evidence_events": self.evidence_events,
        }


class Detector(Protocol):
    """What every detector provides: a module of ``detect/`` with these names (registered
    in ``detect.DETECTORS``, docs/architecture.md "Recipe: add a detector")."""

    @property
    def NAME(self) -> str:
        """Its name: ``Finding.detector``, the key of ``detect.DETECTORS``."""
        ...

    @property
    def THRESHOLDS(self) -> tuple[Threshold, ...]:
        """The thresholds it judges by (their names are unique across detectors)."""
        ...

    @property
    def EVENTS(self) -> tuple[tuple[str, ...], ...]:
        """The events it cannot judge without: a record of one event of each group
        (``(("sched_waking", "sched_wakeup"), ("sched_switch",))``); without them it
        finds nothing."""
        ...

    def detect(self, trace: Trace, model: Model, th: Thresholds) -> list[Finding]:
        """Its findings in ``trace`` (whose model is ``model``), judged by ``th``; the
        caller (``detect.detect``) adds the caveats and fills the evidence lines from
        ``Finding.evidence_at``."""
        ...


def severity_rank(sev: str) -> int:
    return SEVERITIES.index(sev)


def counts(series, n=5, key="name") -> list[dict]:
    """Top ``n`` values of a categorical/str series with their counts."""
    vc = series.astype(str).value_counts()
    vc = vc[vc.index != "nan"]
    return [{key: k, "count": int(v)} for k, v in vc.head(n).items()]
