"""Plots: Figure objects with titles, units and labelled axes, showing the right data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

import schedwake
from schedwake.report import plots
from schedwake.synth import make_trace

from .conftest import sample

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def synth():
    trace, planted = make_trace(
        pingpong=40, roundrobin=60, storm=100, idle_gaps=30, background=300, seed=7, duration_s=1.5
    )
    return trace, planted


@pytest.fixture(scope="module")
def healthy():
    trace, _ = make_trace(background=300, seed=8, duration_s=1.5)
    return trace


def labelled(fig: Figure):
    ax = fig.axes[0]
    assert ax.get_title(), "no title"
    assert ax.get_xlabel() and ax.get_ylabel(), "unlabelled axis"
    assert plots.png_bytes(fig).startswith(PNG)
    assert fig._repr_png_().startswith(PNG)  # shows in Jupyter without pyplot
    return ax


def test_task_cpu_marks_wakeups_by_waker_class(synth):
    trace, _ = synth
    pid = plots.default_task(trace)
    w = trace.wakeups()
    comm = str(w[w["wakee_pid"] == pid]["wakee_comm"].iloc[0])
    assert comm.startswith(("worker", "rr-", "fio", "gap", "hog"))  # a user task
    fig = plots.task_cpu(trace, pid=pid, label="sick", max_wakeups=None)
    ax = labelled(fig)
    assert "CPU" in ax.get_ylabel() and "(s)" in ax.get_xlabel()
    assert f"pid {pid}" in ax.get_title() and ax.get_title().startswith("sick: ")
    n = len(w[w["wakee_pid"] == pid])
    assert f"{n} wake-ups" in ax.get_title()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("running (") for t in legend)
    by_class = w[w["wakee_pid"] == pid]["waker_class"].astype(str).value_counts()
    for cls, count in by_class.items():
        desc = plots.WAKER_STYLE[cls][2]
        assert f"woken by {desc}: {count}" in legend
    # LLC bands: one shaded span and one label per LLC
    assert sum(1 for t in ax.texts if t.get_text().startswith("LLC ")) == 2


def test_task_cpu_zooms_to_the_busiest_span_and_accepts_a_range(synth):
    trace, _ = synth
    pid = plots.default_task(trace)
    fig = plots.task_cpu(trace, pid=pid, max_wakeups=20)
    assert "zoomed to" in fig.axes[0].get_title()
    fig = plots.task_cpu(trace, pid=pid, t0=0.1, t1=0.5)
    lo, hi = fig.axes[0].get_xlim()
    assert (lo, hi) == pytest.approx((0.1, 0.5))


@pytest.mark.slow
def test_migration_matrix_counts(synth):
    trace, _ = synth
    fig = plots.migration_matrix(trace, label="sick")
    ax = labelled(fig)
    assert "to CPU" in ax.get_xlabel() and "from CPU" in ax.get_ylabel()
    m = trace.migrations()
    img = ax.images[0].get_array()
    assert np.nansum(np.asarray(img, dtype=float)) == len(m)
    assert f"{len(m)} in" in ax.get_title()
    cross = int(m["topology_class"].astype(str).isin(["cross_llc", "cross_numa"]).sum())
    assert f"{cross} cross-LLC" in ax.get_title()
    # the colour bar says what the colours count
    assert any("migrations" in a.get_ylabel() for a in fig.axes[1:])
    # one cause only
    fig = plots.migration_matrix(trace, cause="wakeup")
    img = fig.axes[0].images[0].get_array()
    assert np.nansum(np.asarray(img, dtype=float)) == int((m["cause"] == "wakeup").sum())


def test_latency_cdf_overlays_sides_on_log_x(synth, healthy):
    trace, _ = synth
    fig = plots.latency_cdf({"sick": trace, "healthy": [healthy]})
    ax = labelled(fig)
    assert ax.get_xscale() == "log" and "µs" in ax.get_xlabel()
    steps = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 2]
    assert len(steps) == 2
    y = steps[0].get_ydata()
    assert y[-1] == pytest.approx(1.0) and np.all(np.diff(y) >= 0)
    lat = trace.wakeups()["latency_ns"].dropna().to_numpy(dtype=float)
    assert len(steps[0].get_xdata()) == int((lat > 0).sum())
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[0].startswith("sick: n=") and "p99" in legend[0]


def test_busy_share_grouped_bars():
    rows = []
    for side, base in (("a", 40.0), ("b", 70.0)):
        for cpu in range(3):
            for k in range(4):
                rows.append(
                    {
                        "side": side,
                        "metric": f"busy_share_cpu{cpu}",
                        "value": base + cpu + k,
                        "sample_kind": "per-window",
                    }
                )
    fig = plots.busy_share(pd.DataFrame(rows))
    ax = labelled(fig)
    assert "%" in ax.get_ylabel() and ax.get_xlabel() == "CPU"
    bars = ax.patches
    assert len(bars) == 6
    heights = sorted(round(b.get_height(), 6) for b in bars)
    assert heights == sorted([41.5, 42.5, 43.5, 71.5, 72.5, 73.5])
    assert "per-window" in ax.get_title()


@pytest.mark.slow
def test_real_trace_figures_render():
    t = schedwake.load(sample("guest8-dbench-xfs-2clients.dat"))
    for fig in (plots.task_cpu(t), plots.migration_matrix(t)):
        ax = labelled(fig)
        assert ax.get_title()
    ax = plots.task_cpu(t).axes[0]
    assert len(ax.get_yticks()) == 8
