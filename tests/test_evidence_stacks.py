"""Stacks in the evidence: a perf.data recorded with callchains (``perf sched record -g``)
shows the kernel stack of the wake-ups and preempted switch-outs it cites, named through
kallsyms when the running kernel is the recorded one (else ``[unknown]``), as data too."""

from __future__ import annotations

import numpy as np
import pytest

import schedwake
from schedwake.detect import evidence as ev
from schedwake.symbols import kernel

from .conftest import sample

G = "perf/perf-sched-g.perf.data"


def window(trace):
    ts = trace.table("sched_switch").column("ts").to_numpy()
    return int(ts[len(ts) // 3]), int(ts[len(ts) // 3 + 400])


def test_stacks_under_the_cited_events():
    trace = schedwake.load(sample(G))
    picked = ev.evidence_rows(trace, *window(trace), limit=400)
    lines, records = ev.evidence_of(trace, picked)
    with_stack = [r for r in records if r.get("stack")]
    assert 0 < len(with_stack) <= ev.STACK_EVENTS
    for r in with_stack:
        assert r["event"] in ("sched_waking", "sched_wakeup", "sched_switch")
        assert "callchain" not in r["fields"]
        if r["event"] == "sched_switch":
            assert r["fields"]["prev_state_str"].startswith("R") and r["fields"]["prev_pid"]
    # the frames are the callchain's kernel addresses, innermost first, under the line
    first = with_stack[0]
    row = next(r for n, r in picked if int(r["ts"]) == first["ts"] and r.get("callchain"))
    assert [f["addr"] for f in first["stack"]] == [
        a for a, c in zip(row["callchain"], row["callchain_context"]) if c == 1
    ]
    at = next(i for i, ln in enumerate(lines) if f"{first['stack'][0]['addr']:016x}" in ln)
    assert f" {first['event']}: " in lines[at - 1]
    shown = [ln for ln in lines if ln.startswith(" " * 20)]
    assert len(shown) <= ev.STACK_EVENTS * (ev.STACK_FRAMES + 1)


def test_frames_named_only_by_the_recorded_kernel(samples_kernel_here, monkeypatch):
    """The evidence's frames are named from the running kernel's kallsyms when it is the
    recorded one: on a machine made to look as if it ran the sample's kernel (its
    kallsyms a copy of the recorded one), never while the suite runs as on another
    kernel (tests/conftest.py), nor on any other kernel."""

    def names() -> list[str]:
        trace = schedwake.load(sample(G))  # (a new trace: its symbols are looked up again)
        _, records = ev.evidence_of(trace, picked)
        return [f["symbol"] for r in records for f in r.get("stack", [])]

    trace = schedwake.load(sample(G))
    picked = ev.evidence_rows(trace, *window(trace), limit=400)
    assert names() and set(names()) == {"[unknown]"}  # the suite: as on another kernel
    monkeypatch.delenv(kernel.IGNORE_RUNNING_KERNEL)  # as outside the suite
    named = names()
    assert named and all("+0x" in n for n in named)
    assert any(n.startswith(("__schedule+", "try_to_wake_up+")) for n in named)
    # a kernel that is not the recorded one names nothing
    monkeypatch.setattr(kernel, "running_build_id", lambda notes=None: "0" * 40)
    assert set(names()) == {"[unknown]"}


def test_no_stacks_without_callchains():
    trace = schedwake.load(sample("perf-lost-events.perf.data"))
    ts = trace.table("sched_switch").column("ts").to_numpy()
    picked = ev.evidence_rows(trace, int(ts[0]), int(ts[100]), limit=50)
    lines, records = ev.evidence_of(trace, picked)
    assert len(lines) == len(records) == len(picked)
    assert not any("stack" in r for r in records)


@pytest.mark.parametrize("reader", ["perf-script", None])
@pytest.mark.slow
def test_unjudged_context_is_said(reader):
    """The kworker ping-pong needs the waker's context: perf script text has none, so the
    per-CPU-kthread wake-ups it cannot judge are counted in a caveat, never a silent
    zero; schedwake's own reader has the context and needs no such caveat."""
    trace = schedwake.load(sample("perf/perf-dbench-z.perf.data"), reader=reader)
    said = [c for c in trace.caveats if c.startswith("kworker_pingpong could not judge")]
    w = trace.wakeups()
    candidates = (
        (w["waker_class"] == "percpu_kthread")
        & (w["waker_cpu"] == w["prev_cpu"])
        & w["migrated"].to_numpy()
    )
    if reader == "perf-script":
        assert (w["waker_context"] == "unknown").all()
        assert said == [
            f"kworker_pingpong could not judge {int(candidates.sum())} wake-ups by per-CPU "
            "kthreads that moved their wakee off the waker's CPU: their context (task or "
            "interrupt) is unknown"
        ]
        assert candidates.sum() > 0
    else:
        assert not said and (w["waker_context"] != "unknown").all()
        assert np.isin(w["waker_context"].astype(str), ["task", "softirq", "hardirq"]).all()
