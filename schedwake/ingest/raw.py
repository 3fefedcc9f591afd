"""What every reader returns (:class:`RawTrace`) and the progress callback they take,
in a module of their own so that the readers need not import the package that
dispatches to them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa

from ..schema import LOST_EVENTS_SCHEMA
from .meta import TraceMeta

#: Progress callback: called with the fraction of the file done (0.0 to 1.0).
Progress = Callable[[float], None]


@dataclass
class RawTrace:
    """What a reader returns: event tables by name, lost-event rows, metadata, and (for
    perf.data) side-band tables: ``comms``, ``forks``, ``exits``, ``mmaps``."""

    tables: dict[str, pa.Table]
    meta: TraceMeta
    lost: pa.Table = field(default_factory=LOST_EVENTS_SCHEMA.empty_table)
    sideband: dict[str, pa.Table] = field(default_factory=dict)
