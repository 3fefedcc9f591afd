"""The one protocol compare and gate read a side's traces through
(schedwake/sidetrace.py): a loaded Trace and a batch's AnalysedTrace both satisfy it,
and a side may be given as a path, a trace, or any iterable of those."""

from __future__ import annotations

from pathlib import Path

import pytest

import schedwake
from schedwake.batch import AnalysedTrace
from schedwake.errors import OptionError
from schedwake.sidetrace import SideTrace, is_path, side_items
from schedwake.synth import make_trace
from schedwake.trace import Trace


def _members() -> set[str]:
    return {n for n in vars(SideTrace) if not n.startswith("_")}


def test_trace_and_analysed_trace_have_every_member_of_the_protocol():
    """(mypy checks the types: sidetrace.py and the end of batch.py.)"""
    assert _members() == {
        "meta",
        "path",
        "caveats",
        "topology",
        "duration_ns",
        "stored",
        "has_records",
        "use_topology",
    }
    t, _ = make_trace(background=50, seed=3, duration_s=0.5)
    assert isinstance(t, Trace) and _members() <= set(dir(t))
    assert t.stored is None  # a loaded trace: measured from its tables
    # (an AnalysedTrace sets meta, caveats and topology in __init__, from its row)
    assert _members() - {"meta", "caveats", "topology"} <= set(dir(AnalysedTrace))
    assert isinstance(AnalysedTrace.stored, property)  # itself: its analysis is stored


def test_side_items_keeps_a_path_or_a_trace_whole_and_unrolls_iterables():
    t, _ = make_trace(background=50, seed=3, duration_s=0.5)
    assert side_items("runs/*.dat") == ["runs/*.dat"]
    assert side_items(Path("a.dat")) == [Path("a.dat")]
    assert side_items(t) == [t]
    assert side_items(x for x in ["a.dat", t]) == ["a.dat", t]
    assert is_path("a.dat") and is_path(Path("a.dat")) and not is_path(t)


def test_compare_takes_a_side_as_a_generator_of_traces():
    """A side given as any iterable of traces (here a generator) is its iterations: the
    same samples as the list of them."""
    a, _ = make_trace(pingpong=3, background=200, seed=4, duration_s=1.0)
    b, _ = make_trace(background=200, seed=5, duration_s=1.0)
    c, _ = make_trace(background=200, seed=6, duration_s=1.0)
    listed = schedwake.compare({"a": [a, b], "c": [c, c]}, metrics=["context_switches_per_s"])
    generated = schedwake.compare(
        {"a": (t for t in (a, b)), "c": [c, c]}, metrics=["context_switches_per_s"]
    )
    assert listed.sample_kind == generated.sample_kind == "per-trace"
    assert listed.samples["value"].tolist() == generated.samples["value"].tolist()
    assert len(listed.samples) == 4
    assert all(s.has_tables for s in generated.sides)


def test_an_item_that_is_neither_a_path_nor_a_trace_is_refused_by_its_parameter():
    with pytest.raises(OptionError, match=r"^sides=1: an item of a side is a path"):
        schedwake.compare([[1], ["a.dat"]])
    with pytest.raises(OptionError, match=r"^baseline=3: .* not int$"):
        schedwake.gate([3], "x.dat")
