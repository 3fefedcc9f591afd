"""What a comparison or a gate reads from one trace of a side: :class:`SideTrace`.

Two kinds of object satisfy it: a loaded :class:`schedwake.Trace`, whose tables the
comparison measures (metrics, findings), and a batch dataset's
``schedwake.batch.AnalysedTrace``, which has no tables but carries the samples and the
findings its analysis stored (:class:`StoredAnalysis`). ``compare`` and ``gate`` read
either through this protocol alone: a trace's :attr:`SideTrace.stored` says which kind
it is, so that no caller tests an object's class or attributes.

This module sits beside ``trace`` (below ``detect`` and ``metrics``): it names no type
of theirs (a finding list is a ``list`` of :class:`schedwake.detect.Finding`).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from .errors import OptionError

if TYPE_CHECKING:
    import pandas as pd
    from typing_extensions import TypeIs

    from .topology import Topology
    from .trace import Trace

__all__ = ["SideItem", "SideSpec", "SideTrace", "StoredAnalysis", "side_items", "is_path"]


class StoredAnalysis(Protocol):
    """The samples and findings of a trace analysed before, read back instead of
    measured (a batch dataset's row)."""

    def samples(
        self,
        window_s: float | None = None,
        thresholds: Mapping[str, float | str] | None = None,
        metrics: Collection[str] | None = None,
    ) -> pd.DataFrame:
        """What :func:`schedwake.analysis.metrics.metric_samples` gave for the trace (per-trace
        with ``window_s`` None, else per-window); OptionError if ``thresholds`` are not
        those it was analysed with, TraceError if no windows of ``window_s`` are stored."""
        ...

    def findings(self, thresholds: Mapping[str, float | str] | None = None) -> list:
        """What :func:`schedwake.detect.detect` gave for the trace."""
        ...


class SideTrace(Protocol):
    """One trace of a side of a comparison or a gate: its facts and caveats, and where
    its samples and findings come from."""

    @property
    def meta(self) -> Any:
        """The trace's metadata (path, format, cpus, kernel, clock, first/last
        timestamps, event counts, lost events, warnings, timestamp source)."""
        ...

    @property
    def path(self) -> str:
        """The file the trace was read from, as given."""
        ...

    @property
    def caveats(self) -> list[str]:
        """What the trace could not tell, one plain-English line each."""
        ...

    @property
    def topology(self) -> Topology:
        """The CPU map its findings were (or are) judged on."""
        ...

    @property
    def duration_ns(self) -> int: ...

    @property
    def stored(self) -> StoredAnalysis | None:
        """The samples and findings stored for this trace (an analysed trace: itself),
        or None when its tables are loaded and a comparison measures them."""
        ...

    def has_records(self, name: str) -> bool:
        """True when the trace holds events ``name`` (a non-empty table)."""
        ...

    def use_topology(
        self, topology_file: str | Path | None = None, llc: Iterable[str] | None = None
    ) -> Any:
        """Judge the trace on another CPU map (``--topology``/``--llc``); an analysed
        trace refuses (OptionError): its findings were judged on its own."""
        ...


#: One item of a side: a path (possibly a glob) or a trace
SideItem: TypeAlias = "str | os.PathLike[str] | SideTrace"
#: A side as given: one item, or the items of its iterations
SideSpec: TypeAlias = "SideItem | Iterable[SideItem]"


def side_items(spec: SideSpec, param: str = "sides") -> list[SideItem]:
    """The items of a side as given to ``compare`` or ``gate``: a path (``str`` or
    ``os.PathLike``, possibly a glob) or a trace (:class:`SideTrace`) alone is one item,
    any other iterable (the iterations of the side) gives its items. A trace is not
    iterable, so that nothing is asked of it here. Anything else is refused
    (:class:`~schedwake.errors.OptionError` naming ``param``)."""
    items = (
        [spec]
        if isinstance(spec, (str, os.PathLike)) or not isinstance(spec, Iterable)
        else list(spec)
    )
    for item in items:
        # what a side cannot hold is said here, by the parameter, not later as a missing
        # attribute; the class is asked (a trace's properties may be lazy and costly)
        if not is_path(item) and not all(hasattr(type(item), m) for m in _MEMBERS):
            raise OptionError(
                param,
                item,
                f"an item of a side is a path, a glob or a loaded trace "
                f"(schedwake.load), not {type(item).__name__}",
            )
    return items


# the methods every side's trace has (a Trace, a batch dataset's AnalysedTrace)
_MEMBERS = ("has_records", "use_topology")


def is_path(item: object) -> TypeIs[str | os.PathLike[str]]:
    """True for an item of :func:`side_items` that names files (``str`` or
    ``os.PathLike``), False for a trace."""
    return isinstance(item, (str, os.PathLike))


if TYPE_CHECKING:  # (checked by mypy: a loaded trace is a side's trace)

    def _loaded(t: Trace) -> SideTrace:
        return t
