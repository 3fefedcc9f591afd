"""The measures of a trace that no threshold changes (the wake-to-run percentiles'
bounds, the CPUs' busy bounds) are computed once per model: ``trace_metrics`` and
``metric_bounds`` each make their own inputs, and ``analyze`` asks for both."""

from __future__ import annotations

import pytest

import schedwake
from schedwake.analysis import metrics
from schedwake.analysis.metrics import metric_bounds, trace_metrics

from .conftest import sample


def test_metric_bounds_reuse_what_trace_metrics_measured(monkeypatch: pytest.MonkeyPatch):
    trace = schedwake.load(sample("fio-pinned-weighted.dat"))
    calls = {"latencies": 0, "busy_bounds": 0}

    def counted(name: str):
        real = getattr(metrics, name)

        def call(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)

        return call

    for name in calls:
        monkeypatch.setattr(metrics, name, counted(name))
    values = trace_metrics(trace)
    assert calls == {"latencies": 1, "busy_bounds": 1}
    assert values["wake_to_run_p99_us"] is not None and values["busy_share"]
    # other thresholds: other metrics' keys, the same latencies and busy bounds
    trace_metrics(trace, {"pingpong_min_episodes": 1})
    bounds = metric_bounds(trace, {"pingpong_min_episodes": 2})
    assert calls == {"latencies": 1, "busy_bounds": 1}
    # and what is reused is what a fresh model measures
    fresh = schedwake.load(sample("fio-pinned-weighted.dat"))
    assert metric_bounds(fresh, {"pingpong_min_episodes": 2}) == bounds
    assert trace_metrics(fresh) == values
