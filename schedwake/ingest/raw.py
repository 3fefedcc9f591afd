"""What every reader returns (:class:`RawTrace`) and the progress callback they take,
in a module of their own so that the readers need not import the package that
dispatches to them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .meta import TraceMeta

if TYPE_CHECKING:  # (not imported with the module: the command line's options use ingest)
    import pyarrow as pa

#: Progress callback: called with the fraction of the file done (0.0 to 1.0).
Progress = Callable[[float], None]


def _no_lost_events() -> pa.Table:
    from ..schema import LOST_EVENTS_SCHEMA

    return LOST_EVENTS_SCHEMA.empty_table()


@dataclass
class RawTrace:
    """What a reader returns: event tables by name, lost-event rows, metadata, and (for
    perf.data) side-band tables: ``comms``, ``forks``, ``exits``, ``mmaps``."""

    tables: dict[str, pa.Table]
    meta: TraceMeta
    lost: pa.Table = field(default_factory=_no_lost_events)
    sideband: dict[str, pa.Table] = field(default_factory=dict)
