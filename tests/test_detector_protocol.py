"""Every detector of ``detect.DETECTORS`` is a ``detect.base.Detector`` (mypy checks the
types; this checks the facts): its name is its key, its thresholds' names are unique,
and the events it says it cannot judge without are those it needs. On the sample trace of
its worked example (docs/examples/) it finds something; without one group of its
``EVENTS`` it finds nothing, and says no error."""

from __future__ import annotations

import pytest

import schedwake
from schedwake.detect import DETECTORS, THRESHOLDS, thresholds
from schedwake.detect.base import Shown, Threshold
from schedwake.ingest import RawTrace
from schedwake.model import MODEL_EVENTS
from schedwake.trace import Trace

from .conftest import ROOT

#: The trace of each detector's worked example (docs/examples/NAME.md).
FLAGGED = {
    "cswitch_storm": "fio-pinned-weighted.dat",
    "idle_while_runnable": "dbench-xfs-4clients.dat",
    "kworker_pingpong": "kstack-6.1/k61-dbench-c2-kstack-off-i1.dat",
    "llc_roundrobin": "kstack-6.1/k61-dbench-c2-kstack-off-i1.dat",
}


def test_registry_of_detectors():
    assert set(FLAGGED) == set(DETECTORS)
    names = [t.name for d in DETECTORS.values() for t in d.THRESHOLDS]
    assert len(names) == len(set(names)) == len(THRESHOLDS)
    for key, d in DETECTORS.items():
        assert d.NAME == key and callable(d.detect)
        assert d.THRESHOLDS and all(isinstance(t, Threshold) for t in d.THRESHOLDS)
        assert d.EVENTS and all(group for group in d.EVENTS)
        assert isinstance(d.SHOWN, Shown) and d.SHOWN.key_metrics, key
        assert {e for group in d.EVENTS for e in group} <= set(MODEL_EVENTS), key


def without(trace: Trace, names) -> Trace:
    """``trace`` with the tables of ``names`` left out, under its topology."""
    kept = {k: v for k, v in trace._tables.items() if k not in names}
    t = Trace(RawTrace(tables=kept, meta=trace.meta, lost=trace.lost))
    t.topology = trace.topology
    return t


@pytest.mark.parametrize("name", sorted(DETECTORS))
def test_a_detector_needs_its_events(name):
    d = DETECTORS[name]
    trace = schedwake.load(ROOT / "sample_traces" / FLAGGED[name], events=list(MODEL_EVENTS))
    th = thresholds()
    found = d.detect(trace, trace.model, th)
    assert [f.detector for f in found] == [name]
    for group in d.EVENTS:
        assert any(trace.has_records(e) for e in group)
        lacking = without(trace, group)
        assert d.detect(lacking, lacking.model, th) == [], (name, group)
