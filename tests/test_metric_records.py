"""The metric records of schedwake/analysis/metrics.py are whole and agree with the rest of the
package: each names real detectors and events, a window sample that can be missing
names a count that windows have, and every catalogue metric has its row in
docs/compare.md (the recipe in docs/architecture.md says to add it). No trace needed:
the values are pinned by the tests of each metric on real traces."""

from __future__ import annotations

import re

from schedwake.analysis import metrics
from schedwake.detect import DETECTORS
from schedwake.model.events import MODEL_EVENTS

from .conftest import ROOT


def test_every_metric_record_is_whole():
    units = {"/s", "%", "us", "CPUs"}
    for name, m in metrics.CATALOGUE.items():
        assert m.unit in units and m.direction in ("lower", "higher"), name
        assert m.definition and m.window_sample, name
        assert m.explained_by and set(m.explained_by) <= set(DETECTORS), name
        assert m.needs, name
        for group in m.needs:
            assert group and set(group) <= set(MODEL_EVENTS), (name, group)
        if m.missing_without is not None:
            count = metrics.METRICS[m.missing_without]
            assert isinstance(count, metrics.Count) and count.per_window, name


def test_the_tables_are_read_off_the_records():
    """CATALOGUE holds the metrics (not the counts) in record order; NEEDS and
    EXPLAINED_BY are their fields."""
    names = [n for n, m in metrics.METRICS.items() if isinstance(m, metrics.Metric)]
    assert list(metrics.CATALOGUE) == names
    assert list(metrics.catalogue()["name"]) == names
    assert metrics.NEEDS == {n: metrics.CATALOGUE[n].needs for n in names}
    assert metrics.EXPLAINED_BY == {n: metrics.CATALOGUE[n].explained_by for n in names}
    counts = {n for n, m in metrics.METRICS.items() if isinstance(m, metrics.Count)}
    assert {"wakeups", "pingpong_episodes", "latency_samples"} <= counts
    assert not counts & set(metrics.CATALOGUE)


def test_every_catalogue_metric_has_its_row_in_docs_compare():
    doc = (ROOT / "docs" / "compare.md").read_text()
    rows = {
        m.group(1): m.group(2) for m in re.finditer(r"^\| `([a-z0-9_N]+)` \| (\S+) \|", doc, re.M)
    }
    for name, m in metrics.CATALOGUE.items():
        row = name.replace("{cpu}", "N")
        assert rows.get(row) == m.unit, f"docs/compare.md, 'The metrics': no row {row} [{m.unit}]"
