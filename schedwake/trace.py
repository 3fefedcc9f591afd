"""Trace: the tables, metadata and lost-event rows of one loaded trace.

This is what :func:`schedwake.load` returns and what every later stage (model,
detectors, reports) takes. It holds Arrow tables; ``df()`` gives pandas views.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa

from . import ingest
from .errors import TraceError
from .schema import COMMON_FIELDS


class Trace:
    """One loaded trace: event tables by name, metadata and lost events."""

    def __init__(self, raw: ingest.RawTrace):
        self._tables = raw.tables
        self.meta: dict = raw.meta
        #: Where the ring buffer lost events (``schema.LOST_EVENTS_SCHEMA``).
        self.lost: pa.Table = raw.lost

    @property
    def path(self) -> str:
        return self.meta["path"]

    @property
    def events(self) -> list[str]:
        """Names of the event tables that were read, sorted."""
        return sorted(self._tables)

    @property
    def duration_ns(self) -> int:
        first, last = self.meta["first_ts_ns"], self.meta["last_ts_ns"]
        return 0 if first is None else last - first

    def has(self, name: str) -> bool:
        """True if the trace has a table for event ``name`` (possibly empty)."""
        return name in self._tables

    def table(self, name: str) -> pa.Table:
        """The Arrow table of event ``name`` (e.g. ``"sched_waking"``)."""
        name = name.split(":")[-1]
        try:
            return self._tables[name]
        except KeyError:
            raise KeyError(f"{self.path} has no {name!r} events "
                           f"(tables: {', '.join(self.events) or 'none'})") from None

    def df(self, name: str) -> pd.DataFrame:
        """Event ``name`` as a pandas DataFrame (string columns as categoricals)."""
        return self.table(name).to_pandas()

    def __repr__(self) -> str:
        n = sum(t.num_rows for t in self._tables.values())
        return (f"<Trace {self.path!r} {self.meta['format']}: {n} events in "
                f"{len(self._tables)} tables, {self.meta['cpus']} CPUs, "
                f"{self.duration_ns / 1e9:.3f} s>")


def load(path, events=None, input_format: str | None = None,
         progress: ingest.Progress | None = None) -> Trace:
    """Load a trace file of any supported format.

    ``events``: names of the events to read (all when None); reading fewer is faster.
    ``input_format``: one of ``schedwake.ingest.FORMATS`` to skip format sniffing.
    ``progress``: a callable that gets the fraction done, now and then.
    Raises :class:`schedwake.TraceError` with a one-line reason on unusable input.
    """
    return Trace(ingest.read(Path(path), events, input_format, progress))


__all__ = ["Trace", "load", "TraceError", "COMMON_FIELDS"]
