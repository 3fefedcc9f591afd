"""What every detector provides (:class:`Detector`), what it returns
(:class:`Finding`), and the named thresholds it judges by."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NotRequired, Protocol, TypeAlias, TypedDict

if TYPE_CHECKING:
    import pandas as pd

    from ..model import Model
    from ..trace import Trace

SEVERITIES = ("high", "medium", "low")


class Thresholds(dict[str, float]):
    """Threshold values by name, resolved for one trace: every name of
    ``detect.THRESHOLDS``, the defaults updated with the user's overrides and, on a time
    slice, the amounts it adds up scaled to the slice (``detect.resolve``). An analysis
    resolves them once and hands the same object to the detectors and the metrics, so
    that a metric counts with exactly the thresholds its detector judged with; an entry
    point given one (``detect.detect``, ``metrics.trace_metrics``, ...) uses it as it is,
    given plain overrides (a dict) it resolves them itself."""

    __slots__ = ()


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


class WaitingTask(TypedDict):
    """A task waiting after a wake-up at the start of the longest idle-while-runnable
    gap, and the task it waits behind (None: not shown)."""

    pid: int
    comm: str
    cpu: int
    waited_us: float
    behind_pid: int | None
    behind_comm: str | None


class LongestGap(TypedDict):
    """The two sides of the longest idle-while-runnable gap at its start (the metric
    ``longest_gap``): when (s), how long (us), the LLC's idle CPUs and the waiting tasks."""

    at: float
    us: float
    idle_cpus: list[int]
    waiting: list[WaitingTask]


#: What a finding's metrics hold (JSON-ready): numbers, names, None (unknown), lists
#: and tables of them (``top_tasks``, ``by_migration_class``) and the records above.
MetricValue: TypeAlias = (
    int
    | float
    | str
    | bool
    | None
    | LongestGap
    | WaitingTask
    | Sequence["MetricValue"]
    | Mapping[str, "MetricValue"]
)

#: A finding's metrics by name (``Finding.metrics``; ``detect.detect`` adds ``caveats``).
FindingMetrics: TypeAlias = dict[str, MetricValue]


class EvidenceAt(TypedDict):
    """Where a finding's evidence lines are taken from (``Finding.evidence_at``): the
    arguments of :func:`schedwake.detect.evidence.evidence_rows` but ``trace`` and
    ``limit``."""

    #: The window, trace timestamps (ns), inclusive.
    t0: int
    t1: int
    #: The CPUs to take events from (absent: all).
    cpus: NotRequired[list[int]]
    #: The tasks whose events are preferred (or kept alone, with ``only_pids``).
    pids: NotRequired[list[int]]
    #: The instant the events nearest to are preferred (absent: the window's middle).
    focus_ts: NotRequired[int]
    #: Keep only the events of ``pids``.
    only_pids: NotRequired[bool]


@dataclass
class Finding:
    """One pathology found in a trace."""

    detector: str
    severity: str
    #: One line saying what was found, for the text and Markdown reports.
    title: str
    metrics: FindingMetrics
    top: list[dict] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    #: The same events as data (:func:`schedwake.detect.evidence.event_record`).
    evidence_events: list[dict] = field(default_factory=list)
    #: Where to take the evidence from (window, CPUs, tasks: :class:`EvidenceAt`).
    evidence_at: EvidenceAt | None = None
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


@dataclass(frozen=True)
class Flows:
    """Wake-ups that a trace export draws as flows (``convert --to perfetto``): an
    instant at the waking on the waker's CPU's track, one at the wakee's run on the CPU
    it ran on, an arrow between; each named ``NAME: waker (pid) wakes wakee (pid)``."""

    #: The rows of ``model.wakeups`` to draw (those with a run).
    rows: Callable[[Model], pd.DataFrame]
    #: The name of their per-CPU tracks: ``schedwake: CPU N {track}``.
    track: str


@dataclass(frozen=True)
class Shown:
    """How the reports show a detector's findings (``Detector.SHOWN``): report and gate
    code reads this, never a detector's name or its metrics' names."""

    #: The finding metrics listed under each finding (text, Markdown, HTML), in order,
    #: those the finding has.
    key_metrics: tuple[str, ...] = ()
    #: The field of its ``top`` entries that weighs an entry when the gate says who is
    #: involved (summed over the findings); None, or absent from an entry: the entry's
    #: ``count`` (:func:`counts`), else 1.
    top_weight: str | None = None
    #: The finding metric holding a :class:`LongestGap`, said in one sentence before
    #: the key metrics (the idle CPUs beside the tasks waiting); None: none.
    gap: str | None = None
    #: The wake-ups a trace export draws as flows; None: none.
    flows: Flows | None = None


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

    @property
    def SHOWN(self) -> Shown:
        """How reports show its findings: the key metrics, the weight of a top entry,
        the gap sentence, the flows of a trace export."""
        ...

    def detect(self, trace: Trace, model: Model, th: Thresholds) -> list[Finding]:
        """Its findings in ``trace`` (whose model is ``model``), judged by ``th``; the
        caller (``detect.detect``) adds the caveats and fills the evidence lines from
        ``Finding.evidence_at``."""
        ...


def severity_rank(sev: str) -> int:
    return SEVERITIES.index(sev)


def counts(series: pd.Series, n: int = 5, key: str = "name") -> list[dict[str, str | int]]:
    """Top ``n`` values of a categorical/str series with their counts."""
    vc = series.astype(str).value_counts()
    vc = vc[vc.index != "nan"]
    return [{key: k, "count": int(v)} for k, v in vc.head(n).items()]
