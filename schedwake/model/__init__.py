"""The model: tables derived from the event tables (DESIGN section 4).

``Model(trace, topology)`` builds, once and vectorized:

* ``wakeups``   one row per wake-up (:mod:`.wakeups`);
* ``migrations``every ``sched_migrate_task`` with cause and topology class (:mod:`.migrations`);
* ``occupancy`` per-CPU running/idle intervals and runnable waits (:mod:`.occupancy`);
* ``caveats``   plain-English list of what could not be computed and why.

``Trace.wakeups()``, ``Trace.migrations()``, ``Trace.occupancy()`` return these.
"""

from __future__ import annotations

from functools import cached_property

import pandas as pd

from . import migrations as _migrations
from . import occupancy as _occupancy
from . import wakeups as _wakeups
from .events import MODEL_EVENTS, Events, load_events

__all__ = ["Model", "MODEL_EVENTS", "Events"]


class Model:
    """The derived tables of one trace under one topology."""

    def __init__(self, trace, topology):
        self.trace = trace
        self.topology = topology
        self.events: Events = load_events(trace)
        self._mig_w = _wakeups.match_wakeup_migrations(self.events)
        #: Small results derived from the tables that more than one reader needs
        #: (detectors and metrics), by key; see idle_while_runnable.measure.
        self.memo: dict = {}

    @property
    def caveats(self) -> list[str]:
        out = list(self.events.caveats)
        if self.topology.assumed:
            out.insert(
                0,
                "no topology given: one LLC holding every CPU is assumed, so "
                "cross-LLC figures are zero by construction"
                + (f" (not inferred: {self.topology.note})" if self.topology.note else ""),
            )
        elif self.topology.inferred:
            out.insert(
                0,
                f"no topology given: {len(self.topology.llc)} LLC(s) inferred from the "
                f"trace ({self.topology.note}); pass --topology FILE for the machine's own map",
            )
        return out

    @property
    def duration_ns(self) -> int:
        return self.events.duration_ns

    @cached_property
    def wakeups(self) -> pd.DataFrame:
        return _wakeups.build(self.events, self.topology, self._mig_w)

    @cached_property
    def migrations(self) -> pd.DataFrame:
        return _migrations.build(self.events, self.topology, self._mig_w)

    @cached_property
    def occupancy(self) -> pd.DataFrame:
        return _occupancy.build(self.events, self.wakeups)

    @cached_property
    def first_switch_ts(self) -> dict[int, int]:
        return _occupancy.first_switch_ts(self.events)
