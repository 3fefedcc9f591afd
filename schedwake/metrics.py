"""Metrics of a trace (DESIGN section 7): one dict per trace, and per-window samples.

Every metric has a name, a unit and a direction (:data:`METRICS`). ``trace_metrics``
gives the values over the whole trace; ``window_metrics`` gives the same metrics over
consecutive windows of ``window_s`` seconds (one row per window), the samples the
comparison report uses when one trace stands on each side.

Rates are per second of trace time. Busy share is per CPU (``busy_share_cpuN``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .detect import thresholds as _thresholds
from .detect.cswitch_storm import futile_mask
from .detect.idle_while_runnable import measure as _iwr_measure
from .detect.kworker_pingpong import episodes_mask
from .model.tasks import PERCPU_KTHREAD, name_class


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    #: "lower" or "higher": which is better.
    better: str
    doc: str


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("migrations_per_s", "1/s", "lower", "every sched_migrate_task"),
    Metric("wakeup_migrations_per_s", "1/s", "lower", "migrations done by a wake-up"),
    Metric("load_balance_migrations_per_s", "1/s", "lower", "migrations by load balancing"),
    Metric("cross_llc_migrations_per_s", "1/s", "lower",
           "migrations between LLCs (or NUMA nodes)"),
    Metric("wakeup_migration_share", "fraction", "lower",
           "share of wake-ups that change the wakee's CPU"),
    Metric("pingpong_episodes", "count", "lower", "kworker wake-migrate ping-pong episodes"),
    Metric("pingpong_episodes_per_s", "1/s", "lower", "ping-pong episodes per second"),
    Metric("cpus_visited_per_task", "CPUs", "lower",
           "mean distinct CPUs a task ran on (tasks with >= 10 runs, no per-CPU kthreads)"),
    Metric("context_switches_per_s", "1/s", "lower", "sched_switch events per second"),
    Metric("futile_wakeups_per_s", "1/s", "lower",
           "wake-ups after which the wakee ran < storm_futile_run_us and slept"),
    Metric("wake_to_run_p50_ns", "ns", "lower", "median wake-to-run latency"),
    Metric("wake_to_run_p90_ns", "ns", "lower", "90th percentile wake-to-run latency"),
    Metric("wake_to_run_p99_ns", "ns", "lower", "99th percentile wake-to-run latency"),
    Metric("idle_while_runnable_share", "fraction", "lower",
           "share of LLC time with an idle CPU while a woken task waits on another"),
)}
BUSY_SHARE = Metric("busy_share_cpu", "fraction", "higher",
                    "share of the time a CPU runs a task (not idle)")

CPUS_VISITED_MIN_RUNS = 10


def _covered(starts, ends, t):
    """Total length of the (non-overlapping, sorted) intervals before each time t."""
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    t = np.asarray(t, dtype=np.int64)
    if len(starts) == 0:
        return np.zeros(len(t), dtype=np.int64)
    lens = ends - starts
    cum = np.concatenate([[0], np.cumsum(lens)])
    k = np.searchsorted(starts, t, "right") - 1
    part = np.where(k >= 0, np.clip(t - starts[np.maximum(k, 0)], 0,
                                    lens[np.maximum(k, 0)]), 0)
    return cum[np.maximum(k, 0)] * (k >= 0) + part


def _cpus_visited(switch: pd.DataFrame | None) -> float:
    if switch is None or len(switch) == 0:
        return 0.0
    d = pd.DataFrame({"pid": switch["next_pid"].to_numpy(), "cpu": switch["cpu"].to_numpy()})
    d = d[d["pid"] != 0]
    g = d.groupby("pid")["cpu"].agg(["nunique", "size"])
    names = pd.DataFrame({"pid": switch["next_pid"].to_numpy(),
                          "comm": switch["next_comm"].astype(str)}) \
        .drop_duplicates("pid", keep="last").set_index("pid")["comm"]
    g = g[g["size"] >= CPUS_VISITED_MIN_RUNS]
    if len(g) == 0:
        return 0.0
    cls = names.reindex(g.index).map(lambda c: name_class(str(c)))
    g = g[(cls != PERCPU_KTHREAD).to_numpy()]
    return float(g["nunique"].mean()) if len(g) else 0.0


def _pct(lat: np.ndarray, q: float) -> float:
    return float(np.percentile(lat, q)) if len(lat) else 0.0


def trace_metrics(trace, thresholds: dict | None = None) -> dict:
    """Every metric of the trace (JSON-ready), whether or not a detector fires."""
    th = _thresholds(thresholds)
    model = trace.model
    dur_s = max(model.duration_ns, 1) / 1e9
    w, mig = model.wakeups, model.migrations
    sw = model.events.switch
    cause = mig["cause"] if len(mig) else pd.Series([], dtype=str)
    tclass = mig["topology_class"] if len(mig) else pd.Series([], dtype=str)
    pp = int(episodes_mask(w).sum())
    lat = w["latency_ns"].dropna().to_numpy(dtype=np.int64) if len(w) else np.zeros(0)
    iwr = _iwr_measure(model, th)
    out = {
        "duration_s": round(dur_s, 6),
        "wakeups": int(len(w)),
        "migrations": int(len(mig)),
        "migrations_per_s": len(mig) / dur_s,
        "wakeup_migrations_per_s": int((cause == "wakeup").sum()) / dur_s,
        "load_balance_migrations_per_s": int((cause == "load_balance").sum()) / dur_s,
        "cross_llc_migrations_per_s": int(tclass.isin(["cross_llc", "cross_numa"]).sum()) / dur_s,
        "wakeup_migration_share": float(w["migrated"].mean()) if len(w) else 0.0,
        "pingpong_episodes": pp,
        "pingpong_episodes_per_s": pp / dur_s,
        "cpus_visited_per_task": _cpus_visited(sw),
        "context_switches_per_s": (0 if sw is None else len(sw)) / dur_s,
        "futile_wakeups_per_s": int(futile_mask(w, th["storm_futile_run_us"] * 1000).sum())
        / dur_s,
        "wake_to_run_p50_ns": _pct(lat, 50),
        "wake_to_run_p90_ns": _pct(lat, 90),
        "wake_to_run_p99_ns": _pct(lat, 99),
        "idle_while_runnable_share": float(iwr["share"]),
        "busy_share": _busy_share(model),
    }
    return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in out.items()}


def _busy_share(model) -> dict:
    occ = model.occupancy
    if len(occ) == 0:
        return {}
    run = occ[occ["state"].isin(["running", "idle"])]
    first = model.first_switch_ts
    out = {}
    for cpu, g in run.groupby("cpu"):
        span = int(g["end_ts"].max()) - first.get(int(cpu), int(g["start_ts"].min()))
        busy = g[g["state"] == "running"]
        out[str(int(cpu))] = round(float((busy["end_ts"] - busy["start_ts"]).sum())
                                   / max(span, 1), 6)
    return out


def window_metrics(trace, window_s: float = 1.0, thresholds: dict | None = None) -> pd.DataFrame:
    """The metrics over consecutive windows of ``window_s`` seconds: one row per window
    (``window``, ``start_ns``, ``end_ns`` then the metrics of :data:`METRICS` and
    ``busy_share_cpuN``). A last partial window shorter than half a window is dropped."""
    th = _thresholds(thresholds)
    model = trace.model
    ev = model.events
    wns = int(window_s * 1e9)
    if wns <= 0:
        raise ValueError("window_s must be positive")
    first, last = ev.first_ts, max(ev.last_ts, ev.first_ts)
    full, rem = divmod(last - first, wns)
    if full == 0:
        edges = np.array([first, last + 1], dtype=np.int64)
    else:
        edges = first + wns * np.arange(full + 1, dtype=np.int64)
        if rem >= wns / 2:
            edges = np.append(edges, last + 1)
    nwin = len(edges) - 1
    lens_s = np.diff(edges) / 1e9

    def count(ts, mask=None):
        ts = np.asarray(ts, dtype=np.int64)
        if mask is not None:
            ts = ts[np.asarray(mask)]
        return np.histogram(ts, bins=edges)[0] if len(ts) else np.zeros(nwin, dtype=np.int64)

    w, mig = model.wakeups, model.migrations
    sw = ev.switch
    wts = w["ts"].to_numpy(dtype=np.int64) if len(w) else np.zeros(0, np.int64)
    mts = mig["ts"].to_numpy(dtype=np.int64) if len(mig) else np.zeros(0, np.int64)
    df = pd.DataFrame({"window": np.arange(nwin), "start_ns": edges[:-1], "end_ns": edges[1:]})
    nw = count(wts)
    df["migrations_per_s"] = count(mts) / lens_s
    cause = mig["cause"].to_numpy() if len(mig) else np.zeros(0, dtype=object)
    tcls = mig["topology_class"].to_numpy() if len(mig) else np.zeros(0, dtype=object)
    df["wakeup_migrations_per_s"] = count(mts, cause == "wakeup") / lens_s
    df["load_balance_migrations_per_s"] = count(mts, cause == "load_balance") / lens_s
    df["cross_llc_migrations_per_s"] = count(
        mts, np.isin(tcls, ["cross_llc", "cross_numa"])) / lens_s
    migrated = w["migrated"].to_numpy() if len(w) else np.zeros(0, dtype=bool)
    df["wakeup_migration_share"] = np.where(nw > 0, count(wts, migrated) / np.maximum(nw, 1), 0.0)
    pp = count(wts, episodes_mask(w))
    df["pingpong_episodes"] = pp
    df["pingpong_episodes_per_s"] = pp / lens_s
    # CPUs visited per task, per window
    if sw is not None and len(sw):
        sts = sw["ts"].to_numpy(dtype=np.int64)
        win = np.clip(np.searchsorted(edges, sts, "right") - 1, 0, nwin - 1)
        vals = []
        for k in range(nwin):  # one pass per window, not per event
            vals.append(_cpus_visited(sw[win == k]))
        df["cpus_visited_per_task"] = vals
        df["context_switches_per_s"] = count(sts) / lens_s
    else:
        df["cpus_visited_per_task"] = 0.0
        df["context_switches_per_s"] = 0.0
    df["futile_wakeups_per_s"] = count(wts, futile_mask(w, th["storm_futile_run_us"] * 1000)) \
        / lens_s
    if len(w):
        lat = pd.DataFrame({"win": np.clip(np.searchsorted(edges, wts, "right") - 1, 0,
                                           nwin - 1),
                            "lat": w["latency_ns"].to_numpy(dtype="float64", na_value=np.nan)})
        lat = lat.dropna()
        q = lat.groupby("win")["lat"].quantile([0.5, 0.9, 0.99]).unstack()
        for col, name in ((0.5, "p50"), (0.9, "p90"), (0.99, "p99")):
            df[f"wake_to_run_{name}_ns"] = q[col].reindex(range(nwin)).fillna(0.0).to_numpy() \
                if len(q) else 0.0
    else:
        for name in ("p50", "p90", "p99"):
            df[f"wake_to_run_{name}_ns"] = 0.0
    iwr = _iwr_measure(model, th)
    gap = np.zeros(nwin)
    for s, e in iwr["segments"].values():
        o = np.argsort(s)
        cov = _covered(s[o], e[o], edges)
        gap += np.diff(cov)
    nllc = max(len(iwr["segments"]), 1)
    df["idle_while_runnable_share"] = gap / (np.diff(edges) * nllc)
    occ = model.occupancy
    if len(occ):
        run = occ[occ["state"] == "running"]
        for cpu in range(ev.cpus):
            r = run[run["cpu"] == cpu].sort_values("start_ts")
            cov = _covered(r["start_ts"].to_numpy(), r["end_ts"].to_numpy(), edges)
            df[f"busy_share_cpu{cpu}"] = np.diff(cov) / np.diff(edges)
    return df
