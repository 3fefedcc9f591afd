"""The 32-CPU, 4-LLC proof (sample_traces/kstack-6.1-32cpu/): TCG guests with
`-smp 32,sockets=4,cores=8` on Linux 6.1 with the select_idle_sibling() stacking clause on
(the fix) and off, dbench 2 and 8 clients, two iterations each.

Without the clause: ping-pong and round-robin; with it: neither. Cross-LLC migrations
counted by the topology file; without the file, the LLCs inferred from the trace are the
machine's where the trace shows every CPU's moves, and never a wrong split elsewhere.
"""

from __future__ import annotations

import shutil

import pytest

import schedwake
from schedwake.detect import detect
from schedwake.model import MODEL_EVENTS

from .conftest import SAMPLES, shared_model_trace

DIR = SAMPLES / "kstack-6.1-32cpu"
TRACES = sorted(DIR.glob("*.dat"))
LLCS = [list(range(i, i + 8)) for i in (0, 8, 16, 24)]


def load(path):
    return schedwake.load(path, events=list(MODEL_EVENTS))


def test_the_set_is_there():
    assert len(TRACES) == 8


@pytest.mark.parametrize("path", TRACES, ids=[p.stem for p in TRACES])
def test_verdicts_follow_the_clause(path):
    t = shared_model_trace(path)  # (read only here; the gate below reads the same)
    assert t.meta.cpus == 32 and t.topology.llc == LLCS
    f = {x.detector: x for x in detect(t)}
    if "kstack-off" in path.name:
        pp = f["kworker_pingpong"]
        assert pp.severity == "high" and pp.metrics["eligible_share"] > 0.95
        assert pp.metrics["would_stack"] > 0.8 * pp.metrics["episodes"]
        assert "llc_roundrobin" in f
    else:
        assert "kworker_pingpong" not in f and "llc_roundrobin" not in f
    assert "cswitch_storm" not in f
    # moves between the 4 LLCs are counted (load balancing across the package)
    mig = t.migrations()
    assert (mig["topology_class"] == "cross_llc").sum() > 30


@pytest.mark.parametrize("path", TRACES, ids=[p.stem for p in TRACES])
def test_inferred_llcs_are_right_or_not_claimed(path, tmp_path):
    alone = tmp_path / path.name
    shutil.copy(path, alone)  # without its topology file
    t = load(alone)
    if "-c8-" in path.name:  # 8 clients: every CPU's moves are seen (or forced)
        assert t.topology.inferred and t.topology.llc == LLCS
    else:  # 2 clients: some CPUs in no move; not claimed
        assert t.topology.assumed and "no wake-up placed a task" in t.topology.note
    assert t.topology.llc in (LLCS, [list(range(32))])


@pytest.mark.slow
def test_gate_fails_the_kernel_without_the_clause():
    on = [p for p in TRACES if "-c8-kstack-on" in p.name]
    off = [p for p in TRACES if "-c8-kstack-off" in p.name]
    # the traces as the gate reads the paths (shared with the verdicts above), default rules
    result = schedwake.gate(list(map(shared_model_trace, on)), list(map(shared_model_trace, off)))
    assert result.exit_code == 1
    broken = {r.rule.metric for r in result.results if r.status == "broken"}
    assert "pingpong_episodes_per_s" in broken
