"""Metrics of a trace (docs/compare.md, 'The metrics'): one dict per trace, and per-window
samples.

Every metric has a name, a unit and a direction (:data:`METRICS`). ``trace_metrics``
gives the values over the whole trace; ``window_metrics`` gives the same metrics over
consecutive windows of ``window_s`` seconds (one row per window), the samples the
comparison report uses when one trace stands on each side.

Rates are per second of trace time. Busy share is per CPU (``busy_share_cpuN``).

The *catalogue* (:data:`CATALOGUE`, :func:`catalogue`) is what the comparison report
prints: each metric's identifier (one name in every command), display unit (rates /s,
shares %, latencies us), direction and the definition of one per-window sample.
:func:`metric_samples` gives a trace's per-trace or per-window values of every catalogue
metric as a tidy pandas table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .detect import thresholds as _thresholds
from .detect.cswitch_storm import futile_mask, storm_measure, weighted_preempted_share
from .detect.idle_while_runnable import measure as _iwr_measure
from .detect.kworker_pingpong import episodes_mask, would_stack_mask
from .model._util import pid_cpu_counts
from .model.task_states import CLASSES as _TASK_CLASSES
from .model.task_states import class_share_windows, class_shares
from .model.task_states import comms as _task_names
from .model.tasks import PERCPU_KTHREAD, name_class


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    #: "lower" or "higher": which is better.
    better: str
    doc: str


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("migrations_per_s", "1/s", "lower", "every sched_migrate_task"),
        Metric("wakeup_migrations_per_s", "1/s", "lower", "migrations done by a wake-up"),
        Metric("load_balance_migrations_per_s", "1/s", "lower", "migrations by load balancing"),
        Metric(
            "cross_llc_migrations_per_s", "1/s", "lower", "migrations between LLCs (or NUMA nodes)"
        ),
        Metric(
            "wakeup_migration_share",
            "fraction",
            "lower",
            "share of wake-ups that change the wakee's CPU",
        ),
        Metric("pingpong_episodes", "count", "lower", "kworker wake-migrate ping-pong episodes"),
        Metric("pingpong_episodes_per_s", "1/s", "lower", "ping-pong episodes per second"),
        Metric(
            "pingpong_would_stack",
            "count",
            "lower",
            "ping-pong episodes the stack-on-waker-CPU clause would have kept in place",
        ),
        Metric("pingpong_would_stack_per_s", "1/s", "lower", "would-stack episodes per second"),
        Metric(
            "pingpong_would_stack_share",
            "fraction",
            "lower",
            "share of the ping-pong episodes that would have stacked",
        ),
        Metric(
            "cpus_visited_per_task",
            "CPUs",
            "lower",
            "mean distinct CPUs a task ran on (tasks with >= 10 runs, no per-CPU kthreads)",
        ),
        Metric("context_switches_per_s", "1/s", "lower", "sched_switch events per second"),
        Metric(
            "futile_wakeups_per_s",
            "1/s",
            "lower",
            "wake-ups whose wakee preempted a kworker, slept again and gave the CPU back "
            "to that kworker before it ran again",
        ),
        Metric(
            "storm_kworker_preemptions_per_s",
            "1/s",
            "lower",
            "preemptions (R+) of storm kworkers by user tasks: the (kworker, work function) "
            "pairs a task preempts at storm_min_preempted_share of their switch-outs, for "
            "tasks with storm_min_preemptions of them",
        ),
        Metric(
            "storm_preempted_share",
            "fraction",
            "lower",
            "over every (kworker, work function) pair user tasks preempt, the share of its "
            "switch-outs that are the preemptions, weighted by its preemptions",
        ),
        Metric("wake_to_run_p50_us", "us", "lower", "median wake-to-run latency"),
        Metric("wake_to_run_p90_us", "us", "lower", "90th percentile wake-to-run latency"),
        Metric("wake_to_run_p99_us", "us", "lower", "99th percentile wake-to-run latency"),
        Metric(
            "idle_while_runnable_share",
            "fraction",
            "lower",
            "share of LLC time with an idle CPU while a woken task waits on another",
        ),
        *(
            Metric(
                f"runnable_share_{c}",
                "fraction",
                "lower",
                f"runnable time / (running + runnable time) of the {c} tasks",
            )
            for c in _TASK_CLASSES
        ),
    )
}

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
    part = np.where(k >= 0, np.clip(t - starts[np.maximum(k, 0)], 0, lens[np.maximum(k, 0)]), 0)
    return cum[np.maximum(k, 0)] * (k >= 0) + part


def _cpus_visited(switch: pd.DataFrame | None) -> float | None:
    """Mean distinct CPUs per task with enough runs; None when no task qualifies."""
    if switch is None or len(switch) == 0:
        return None
    # NumPy on the two columns (no frames, no strings per event): per pid, its runs and
    # distinct CPUs, in pid order; its name is the last next_comm it had
    next_pid = switch["next_pid"].to_numpy()
    sel = next_pid != 0
    pids, size, nunique = pid_cpu_counts(next_pid[sel], switch["cpu"].to_numpy()[sel])
    del sel
    keep = size >= CPUS_VISITED_MIN_RUNS
    if not keep.any():
        return None
    pids, nunique = pids[keep], nunique[keep]
    rev_pid, last = np.unique(next_pid[::-1], return_index=True)
    last = len(next_pid) - 1 - last[np.searchsorted(rev_pid, pids)]
    comm = switch["next_comm"].array
    codes = np.asarray(comm.codes)[last]
    names = ["nan" if k < 0 else str(comm.categories[k]) for k in codes]  # per task
    cls = np.array([name_class(c) for c in names], dtype=object)
    g = pd.Series(nunique[cls != PERCPU_KTHREAD])
    return float(g.mean()) if len(g) else None


def _pct_us(lat_ns: np.ndarray, q: float) -> float | None:
    return float(np.percentile(lat_ns, q)) / 1e3 if len(lat_ns) else None


def trace_metrics(trace, thresholds: dict | None = None) -> dict:
    """Every metric of the trace (JSON-ready), whether or not a detector fires. A metric
    the trace cannot give (no wake-ups for a latency, events it lacks: :data:`NEEDS`) is
    None."""
    th = _thresholds(thresholds)
    model = trace.model
    dur_s = max(model.duration_ns, 1) / 1e9
    w, mig = model.wakeups, model.migrations
    sw = model.events.switch
    if model.pids is not None and sw is not None and len(sw):  # (analyze --pid)
        mine = list(model.pids)
        sw = sw[np.isin(sw["next_pid"].to_numpy(), mine) | np.isin(sw["prev_pid"].to_numpy(), mine)]
    cause = mig["cause"] if len(mig) else pd.Series([], dtype=str)
    tclass = mig["topology_class"] if len(mig) else pd.Series([], dtype=str)
    pp = int(episodes_mask(w).sum())
    stack = int(would_stack_mask(model).sum())
    # (the measured latencies in row order; dropna() would also copy the index)
    lat = (
        w["latency_ns"].to_numpy(dtype=np.int64, na_value=0)[w["latency_ns"].notna().to_numpy()]
        if len(w)
        else np.zeros(0)
    )
    iwr = _iwr_measure(model, th)
    storm = storm_measure(model, th)
    out = {
        "duration_s": round(dur_s, 6),
        "wakeups": int(len(w)),
        "migrations": int(len(mig)),
        "migrations_per_s": len(mig) / dur_s,
        "wakeup_migrations_per_s": int((cause == "wakeup").sum()) / dur_s,
        "load_balance_migrations_per_s": int((cause == "load_balance").sum()) / dur_s,
        "cross_llc_migrations_per_s": int(tclass.isin(["cross_llc", "cross_numa"]).sum()) / dur_s,
        "wakeup_migration_share": float(w["migrated"].mean()) if len(w) else None,
        "pingpong_episodes": pp,
        "pingpong_episodes_per_s": pp / dur_s,
        "pingpong_would_stack": stack,
        "pingpong_would_stack_per_s": stack / dur_s,
        "pingpong_would_stack_share": stack / pp if pp else None,
        "cpus_visited_per_task": _cpus_visited(sw),
        "context_switches_per_s": (0 if sw is None else len(sw)) / dur_s,
        "futile_wakeups_per_s": int(futile_mask(model).sum()) / dur_s,
        "storm_kworker_preemptions_per_s": int(storm["preemption_storm"].sum()) / dur_s,
        "storm_preempted_share": weighted_preempted_share(
            storm["preemption_unit"], storm["switchout_unit"]
        ),
        "wake_to_run_p50_us": _pct_us(lat, 50),
        "wake_to_run_p90_us": _pct_us(lat, 90),
        "wake_to_run_p99_us": _pct_us(lat, 99),
        "idle_while_runnable_share": float(iwr["share"]),
        **_runnable_shares(model),
        "busy_share": _busy_share(model),
    }
    # a metric whose events the trace lacks is unknown (None), not zero
    for m in CATALOGUE.values():
        if m.key in out and missing_events(trace, m.name.format(cpu=0)):
            out[m.key] = None
    if out["pingpong_episodes_per_s"] is None:
        out["pingpong_episodes"] = None
        out["pingpong_would_stack"] = None
    if out["migrations_per_s"] is None:
        out["migrations"] = None
    out = {k: (round(v, 6) if isinstance(v, float) else v) for k, v in out.items()}
    out.update(_bench_metrics(trace))
    return out


def _bench_metrics(trace) -> dict:
    """The benchmark's results beside the trace as ``bench_*`` metrics, with their unit,
    direction and file under ``bench`` (:func:`schedwake.bench.metric_values`); nothing
    without results (or for a stand-in of a trace without ``bench``)."""
    from .bench import metric_values

    return metric_values(getattr(trace, "bench", None) or [])


def _task_states_of(model):
    """The task-state intervals of the model's tasks (those of ``--pid``, else all)."""
    iv = model.task_states
    if model.pids is not None and len(iv):
        iv = iv[np.isin(iv["pid"].to_numpy(), list(model.pids))]
    return iv


def _runnable_shares(model) -> dict:
    """``runnable_share_<class>`` of the whole trace (docs/task-states.md)."""
    shares = class_shares(_task_states_of(model), _task_names(model.events))
    return {f"runnable_share_{c}": v for c, v in shares.items()}


def _busy_share(model) -> dict:
    occ = model.occupancy
    if len(occ) == 0:
        return {}
    state = occ["state"]
    sel = state.isin(["running", "idle"]).to_numpy()
    n = int(sel.sum())
    first = model.first_switch_ts
    out = {}
    if n == 0:
        return out
    running = (state == "running").to_numpy()
    del state
    cpu, start, end = occ["cpu"].to_numpy(), occ["start_ts"].to_numpy(), occ["end_ts"].to_numpy()
    if sel[:n].all():  # the running/idle rows come first (as the model builds them): views
        cpu, start, end, running = cpu[:n], start[:n], end[:n], running[:n]
    else:
        cpu, start, end, running = cpu[sel], start[sel], end[sel], running[sel]
    del sel
    if not (cpu[1:] >= cpu[:-1]).all():  # grouped by CPU (the model's are)
        order = np.argsort(cpu, kind="stable")
        cpu, start, end, running = cpu[order], start[order], end[order], running[order]
        del order
    at = np.flatnonzero(np.concatenate([[True], cpu[1:] != cpu[:-1]])).tolist()
    for a, b in zip(at, at[1:] + [len(cpu)]):  # per CPU, in CPU order
        s0, e = start[a:b], end[a:b]
        busy = int((e - s0)[running[a:b]].sum())
        span = int(e.max()) - first.get(int(cpu[a]), int(s0.min()))
        out[str(int(cpu[a]))] = round(float(busy) / max(span, 1), 6)
    return out


def window_edges(first_ts: int, last_ts: int, window_s: float) -> np.ndarray:
    """The edges (ns) of the windows of ``window_s`` seconds that cover first..last: whole
    windows from the first event, plus a last partial one if it is at least half a
    window long (always at least one window)."""
    wns = int(window_s * 1e9)
    if wns <= 0:
        raise ValueError("window_s must be positive")
    last_ts = max(last_ts, first_ts)
    full, rem = divmod(last_ts - first_ts, wns)
    if full == 0:
        return np.array([first_ts, last_ts + 1], dtype=np.int64)
    edges = first_ts + wns * np.arange(full + 1, dtype=np.int64)
    return np.append(edges, last_ts + 1) if rem >= wns / 2 else edges


def window_metrics(trace, window_s: float = 1.0, thresholds: dict | None = None) -> pd.DataFrame:
    """The metrics over consecutive windows of ``window_s`` seconds: one row per window
    (``window``, ``start_ns``, ``end_ns`` then the metrics of :data:`METRICS` and
    ``busy_share_cpuN``, plus the counts ``wakeups``, ``latency_samples`` -- wake-ups
    with a measured wake-to-run latency -- and ``storm_preemptions`` of the window). A
    last partial window shorter than half a window is dropped."""
    th = _thresholds(thresholds)
    model = trace.model
    ev = model.events
    edges = window_edges(ev.first_ts, ev.last_ts, window_s)
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
    df["cross_llc_migrations_per_s"] = (
        count(mts, np.isin(tcls, ["cross_llc", "cross_numa"])) / lens_s
    )
    migrated = w["migrated"].to_numpy() if len(w) else np.zeros(0, dtype=bool)
    df["wakeups"] = nw
    df["wakeup_migration_share"] = np.where(nw > 0, count(wts, migrated) / np.maximum(nw, 1), 0.0)
    pp = count(wts, episodes_mask(w))
    df["pingpong_episodes"] = pp
    df["pingpong_episodes_per_s"] = pp / lens_s
    stack = count(wts, would_stack_mask(model))
    df["pingpong_would_stack"] = stack
    df["pingpong_would_stack_per_s"] = stack / lens_s
    df["pingpong_would_stack_share"] = np.where(pp > 0, stack / np.maximum(pp, 1), 0.0)
    # CPUs visited per task, per window
    if sw is not None and len(sw):
        sts = sw["ts"].to_numpy(dtype=np.int64)
        win = np.clip(np.searchsorted(edges, sts, "right") - 1, 0, nwin - 1)
        vals = []
        for k in range(nwin):  # one pass per window, not per event
            v = _cpus_visited(sw[win == k])
            vals.append(0.0 if v is None else v)  # (empty windows are 0, as elsewhere)
        df["cpus_visited_per_task"] = vals
        df["context_switches_per_s"] = count(sts) / lens_s
    else:
        df["cpus_visited_per_task"] = 0.0
        df["context_switches_per_s"] = 0.0
    df["futile_wakeups_per_s"] = count(wts, futile_mask(model)) / lens_s
    storm = storm_measure(model, th)
    df["storm_kworker_preemptions_per_s"] = (
        count(storm["preemption_ts"], storm["preemption_storm"]) / lens_s
    )
    df["storm_preempted_share"] = _window_preempted_share(storm, edges)
    df["storm_preemptions"] = count(storm["preemption_ts"])
    if len(w):
        lat = pd.DataFrame(
            {
                "win": np.clip(np.searchsorted(edges, wts, "right") - 1, 0, nwin - 1),
                "lat": w["latency_ns"].to_numpy(dtype="float64", na_value=np.nan),
            }
        )
        lat = lat.dropna()
        df["latency_samples"] = np.bincount(lat["win"].to_numpy(), minlength=nwin)[:nwin]
        q = lat.groupby("win")["lat"].quantile([0.5, 0.9, 0.99]).unstack()
        for col, name in ((0.5, "p50"), (0.9, "p90"), (0.99, "p99")):
            df[f"wake_to_run_{name}_us"] = (
                q[col].reindex(range(nwin)).fillna(0.0).to_numpy() / 1e3 if len(q) else 0.0
            )
    else:
        df["latency_samples"] = 0
        for name in ("p50", "p90", "p99"):
            df[f"wake_to_run_{name}_us"] = 0.0
    iwr = _iwr_measure(model, th)
    gap = np.zeros(nwin)
    for s, e in iwr["segments"].values():
        o = np.argsort(s)
        cov = _covered(s[o], e[o], edges)
        gap += np.diff(cov)
    nllc = max(len(iwr["segments"]), 1)
    df["idle_while_runnable_share"] = gap / (np.diff(edges) * nllc)
    shares = class_share_windows(_task_states_of(model), _task_names(ev), edges)
    for c, v in shares.items():  # (NaN: the class neither ran nor waited in the window)
        df[f"runnable_share_{c}"] = v
    occ = model.occupancy
    if len(occ):
        run = occ[occ["state"] == "running"]
        for cpu in range(ev.cpus):
            r = run[run["cpu"] == cpu].sort_values("start_ts")
            cov = _covered(r["start_ts"].to_numpy(), r["end_ts"].to_numpy(), edges)
            df[f"busy_share_cpu{cpu}"] = np.diff(cov) / np.diff(edges)
    return df


def _window_preempted_share(storm: dict, edges: np.ndarray) -> np.ndarray:
    """``weighted_preempted_share`` of each window (0 without preemptions there): per
    (window, unit) the preemptions and switch-outs, without a pass per window."""
    nwin = len(edges) - 1
    pwin = np.searchsorted(edges, storm["preemption_ts"], "right") - 1
    owin = np.searchsorted(edges, storm["switchout_ts"], "right") - 1
    if len(pwin) == 0:
        return np.zeros(nwin)
    nunit = int(max(storm["preemption_unit"].max(), storm["switchout_unit"].max())) + 1
    pin, oin = (pwin >= 0) & (pwin < nwin), (owin >= 0) & (owin < nwin)
    pkey = pwin[pin] * nunit + storm["preemption_unit"][pin]
    okey = np.sort(owin[oin] * nunit + storm["switchout_unit"][oin])
    keys, pre = np.unique(pkey, return_counts=True)
    outs = np.searchsorted(okey, keys, "right") - np.searchsorted(okey, keys, "left")
    win = keys // nunit
    pre = pre.astype(np.float64)
    num = np.bincount(win, weights=pre**2 / np.maximum(outs, pre), minlength=nwin)
    den = np.bincount(win, weights=pre, minlength=nwin)
    return np.where(den > 0, num / np.maximum(den, 1), 0.0)


# -- the catalogue: what the comparison report prints ------------------------------------------


@dataclass(frozen=True)
class CatalogueMetric:
    """One metric of the comparison report.

    ``name`` is the metric's one identifier, the same in analyze's JSON, compare's rows,
    gate's rules and batch's columns (``wakeup_migrations_per_s``); values are multiplied
    by ``scale`` into the display ``unit`` (fractions into %). ``definition`` says what the
    value is over a whole trace, ``window_sample`` what one per-window sample is.
    """

    name: str
    unit: str
    direction: str
    scale: float
    definition: str
    window_sample: str

    @property
    def key(self) -> str:
        """The column of :func:`trace_metrics` / :func:`window_metrics` the metric comes
        from: its name, but ``busy_share`` (a dict by CPU) for the per-CPU busy share."""
        return "busy_share" if "{cpu}" in self.name else self.name


_PER_S = "count in the window / window length (s)"

#: Catalogue metrics in report order. ``busy_share_cpu{cpu}`` expands to one row per CPU.
CATALOGUE: dict[str, CatalogueMetric] = {
    m.name: m
    for m in (
        CatalogueMetric(
            "migrations_per_s",
            "/s",
            "lower",
            1.0,
            "sched_migrate_task events per second, every cause",
            f"sched_migrate_task {_PER_S}",
        ),
        CatalogueMetric(
            "wakeup_migrations_per_s",
            "/s",
            "lower",
            1.0,
            "migrations done by a wake-up (select_task_rq chose another CPU) per second",
            f"wake-up migrations {_PER_S}",
        ),
        CatalogueMetric(
            "load_balance_migrations_per_s",
            "/s",
            "lower",
            1.0,
            "migrations by load balancing (newly idle, periodic, active) per second",
            f"load-balance migrations {_PER_S}",
        ),
        CatalogueMetric(
            "cross_llc_migrations_per_s",
            "/s",
            "lower",
            1.0,
            "migrations between LLCs or NUMA nodes per second (0 with one LLC)",
            f"cross-LLC migrations {_PER_S}",
        ),
        CatalogueMetric(
            "wakeup_migration_share",
            "%",
            "lower",
            100.0,
            "share of wake-ups whose chosen CPU is not the wakee's previous CPU",
            "migrated wake-ups / wake-ups in the window (missing if none)",
        ),
        CatalogueMetric(
            "pingpong_episodes_per_s",
            "/s",
            "lower",
            1.0,
            "kworker wake-migrate ping-pong episodes per second: a per-CPU kthread "
            "on CPU X wakes a task whose previous CPU is X and the task moves away",
            f"episodes (by wake-up time) {_PER_S}",
        ),
        CatalogueMetric(
            "pingpong_would_stack_per_s",
            "/s",
            "lower",
            1.0,
            "ping-pong episodes per second that the stack-on-waker-CPU clause of "
            "select_idle_sibling() would have kept on the waker's CPU (nothing else "
            "runnable there): near 0 on a kernel with the clause",
            f"would-stack episodes (by wake-up time) {_PER_S}",
        ),
        CatalogueMetric(
            "pingpong_would_stack_share",
            "%",
            "lower",
            100.0,
            "share of the ping-pong episodes that would have stacked (missing without episodes)",
            "would-stack episodes / episodes in the window (missing if none)",
        ),
        CatalogueMetric(
            "cpus_visited_per_task",
            "CPUs",
            "lower",
            1.0,
            f"mean number of distinct CPUs a task ran on (tasks with >= "
            f"{CPUS_VISITED_MIN_RUNS} switch-ins, per-CPU kthreads excluded)",
            f"the same over the switch-ins inside the window (0 if no task has "
            f"{CPUS_VISITED_MIN_RUNS} there)",
        ),
        CatalogueMetric(
            "context_switches_per_s",
            "/s",
            "lower",
            1.0,
            "sched_switch events per second, all CPUs",
            f"sched_switch {_PER_S}",
        ),
        CatalogueMetric(
            "futile_wakeups_per_s",
            "/s",
            "lower",
            1.0,
            "wake-ups whose wakee preempted a kworker (R+), slept again and gave the CPU "
            "back to that kworker before it ran again, per second",
            f"futile wake-ups (by wake-up time) {_PER_S}",
        ),
        CatalogueMetric(
            "storm_kworker_preemptions_per_s",
            "/s",
            "lower",
            1.0,
            "preemptions (R+) per second of storm kworkers by user tasks: the (kworker, "
            "work function) pairs on a CPU that a task preempts at "
            "storm_min_preempted_share of their switch-outs or more, for tasks with "
            "storm_min_preemptions of them (cswitch_storm)",
            f"those preemptions {_PER_S}",
        ),
        CatalogueMetric(
            "storm_preempted_share",
            "%",
            "lower",
            100.0,
            "over every (kworker, work function) pair that those user tasks preempt, the "
            "share of its switch-outs that are the preemptions, weighted by its preemptions "
            "(missing without kworker preemptions)",
            "the same over the preemptions and switch-outs in the window (missing if none)",
        ),
        CatalogueMetric(
            "wake_to_run_p50_us",
            "us",
            "lower",
            1.0,
            "median time from sched_waking to the wakee's switch-in",
            "median over the wake-ups of the window (missing if none)",
        ),
        CatalogueMetric(
            "wake_to_run_p90_us",
            "us",
            "lower",
            1.0,
            "90th percentile of the wake-to-run latency",
            "90th percentile over the wake-ups of the window (missing if none)",
        ),
        CatalogueMetric(
            "wake_to_run_p99_us",
            "us",
            "lower",
            1.0,
            "99th percentile of the wake-to-run latency",
            "99th percentile over the wake-ups of the window (missing if none)",
        ),
        CatalogueMetric(
            "idle_while_runnable_share",
            "%",
            "lower",
            100.0,
            "share of LLC time during which a CPU of the LLC is idle while a "
            "woken task waits on another CPU of it (work-conservation gap)",
            "gap time inside the window / (window length x LLCs)",
        ),
        *(
            CatalogueMetric(
                f"runnable_share_{c}",
                "%",
                "lower",
                100.0,
                f"share of the {c} tasks' running + runnable time they spent runnable, "
                "waiting for a CPU after a wake-up or a preemption (docs/task-states.md)",
                f"runnable / (running + runnable) time of the {c} tasks inside the window "
                "(missing if they neither ran nor waited)",
            )
            for c in _TASK_CLASSES
        ),
        CatalogueMetric(
            "busy_share_cpu{cpu}",
            "%",
            "higher",
            100.0,
            "share of the time CPU N runs a task (not idle), from its first sched_switch on",
            "running time of CPU N inside the window / window length",
        ),
    )
}

_LATENCY = ("wake_to_run_p50_us", "wake_to_run_p90_us", "wake_to_run_p99_us")

_WAKE = ("sched_waking", "sched_wakeup")
_SWITCH = ("sched_switch",)
_MIGRATE = ("sched_migrate_task",)

#: The events each catalogue metric is computed from. Every group must have an event with
#: records in the trace; a group lists alternatives. Without them a metric is not zero but
#: unknown, which is what the gate refuses to judge (:func:`missing_events`).
NEEDS: dict[str, tuple[tuple[str, ...], ...]] = {
    "migrations_per_s": (_MIGRATE,),
    "wakeup_migrations_per_s": (_MIGRATE, _WAKE),
    "load_balance_migrations_per_s": (_MIGRATE, _WAKE),
    "cross_llc_migrations_per_s": (_MIGRATE,),
    "wakeup_migration_share": (_WAKE,),
    "pingpong_episodes_per_s": (_WAKE, _SWITCH),
    "pingpong_would_stack_per_s": (_WAKE, _SWITCH),
    "pingpong_would_stack_share": (_WAKE, _SWITCH),
    "cpus_visited_per_task": (_SWITCH,),
    "context_switches_per_s": (_SWITCH,),
    "futile_wakeups_per_s": (_WAKE, _SWITCH),
    "storm_kworker_preemptions_per_s": (_SWITCH,),
    "storm_preempted_share": (_SWITCH,),
    "wake_to_run_p50_us": (_WAKE, _SWITCH),
    "wake_to_run_p90_us": (_WAKE, _SWITCH),
    "wake_to_run_p99_us": (_WAKE, _SWITCH),
    "idle_while_runnable_share": (_WAKE, _SWITCH),
    **{f"runnable_share_{c}": (_SWITCH, _WAKE) for c in _TASK_CLASSES},
    "busy_share_cpu{cpu}": (_SWITCH,),
}

_MIGRATION_DETECTORS = ("kworker_pingpong", "llc_roundrobin")

#: The detectors whose findings explain a worse value of each catalogue metric: a broken
#: gate rule names the candidate's findings of these (their top wakers, work functions,
#: wakees or tasks).
EXPLAINED_BY: dict[str, tuple[str, ...]] = {
    "migrations_per_s": _MIGRATION_DETECTORS,
    "wakeup_migrations_per_s": _MIGRATION_DETECTORS,
    "load_balance_migrations_per_s": ("llc_roundrobin",),
    "cross_llc_migrations_per_s": ("llc_roundrobin",),
    "wakeup_migration_share": _MIGRATION_DETECTORS,
    "pingpong_episodes_per_s": ("kworker_pingpong",),
    "pingpong_would_stack_per_s": ("kworker_pingpong",),
    "pingpong_would_stack_share": ("kworker_pingpong",),
    "cpus_visited_per_task": ("llc_roundrobin", "kworker_pingpong"),
    "context_switches_per_s": ("cswitch_storm",),
    "futile_wakeups_per_s": ("cswitch_storm",),
    "storm_kworker_preemptions_per_s": ("cswitch_storm",),
    "storm_preempted_share": ("cswitch_storm",),
    "wake_to_run_p50_us": ("idle_while_runnable", "cswitch_storm"),
    "wake_to_run_p90_us": ("idle_while_runnable", "cswitch_storm"),
    "wake_to_run_p99_us": ("idle_while_runnable", "cswitch_storm"),
    "idle_while_runnable_share": ("idle_while_runnable",),
    "runnable_share_user": ("idle_while_runnable", "cswitch_storm"),
    "runnable_share_kworker": ("cswitch_storm", "kworker_pingpong", "idle_while_runnable"),
    "runnable_share_kthread": ("idle_while_runnable", "cswitch_storm"),
    "busy_share_cpu{cpu}": ("idle_while_runnable",),
}

#: Columns of :func:`metric_samples`.
SAMPLE_COLUMNS = (
    "trace",
    "sample_kind",
    "window",
    "start_s",
    "end_s",
    "metric",
    "unit",
    "direction",
    "value",
)


def catalogue(cpus: int | None = None) -> pd.DataFrame:
    """The catalogue as a table: name, unit, direction, definition, window_sample, key.

    With ``cpus``, the per-CPU busy share is expanded into ``busy_share_cpu0`` ...
    ``busy_share_cpu<cpus-1>``; without, it stays one row ``busy_share_cpu{cpu}``."""
    rows = []
    for m in CATALOGUE.values():
        names = [m.name]
        if "{cpu}" in m.name and cpus is not None:
            names = [m.name.format(cpu=c) for c in range(cpus)]
        for n in names:
            rows.append(
                {
                    "name": n,
                    "unit": m.unit,
                    "direction": m.direction,
                    "definition": m.definition,
                    "window_sample": m.window_sample,
                    "key": m.key,
                }
            )
    return pd.DataFrame(
        rows, columns=["name", "unit", "direction", "definition", "window_sample", "key"]
    )


#: Names that compare and gate used before the one vocabulary, and the identifier each is
#: now; a rules file that still says them works, with a note (:func:`canonical_name`).
FORMER_NAMES: dict[str, str] = {
    "migrations/s": "migrations_per_s",
    "wakeup_migrations/s": "wakeup_migrations_per_s",
    "lb_migrations/s": "load_balance_migrations_per_s",
    "cross_llc_migrations/s": "cross_llc_migrations_per_s",
    "pingpong_episodes/s": "pingpong_episodes_per_s",
    "context_switches/s": "context_switches_per_s",
    "futile_wakeups/s": "futile_wakeups_per_s",
    "wake_to_run_p50": "wake_to_run_p50_us",
    "wake_to_run_p90": "wake_to_run_p90_us",
    "wake_to_run_p99": "wake_to_run_p99_us",
    "wake_to_run_p50_ns": "wake_to_run_p50_us",
    "wake_to_run_p90_ns": "wake_to_run_p90_us",
    "wake_to_run_p99_ns": "wake_to_run_p99_us",
}


def canonical_name(name: str) -> str:
    """The identifier of a metric as the user may write it: itself, a former name
    (:data:`FORMER_NAMES`), or the text of a report row (``wakeup_migration_share[%]``).
    Unknown names are returned unchanged (:func:`catalogue_entry` then says why)."""
    name = name.strip()
    if name.endswith("]") and "[" in name:  # a report row label: NAME[unit]
        name = name[: name.index("[")]
    return FORMER_NAMES.get(name, name)


def unknown_metric(name: str) -> str:
    """The one-line complaint about an unknown metric name, with the closest known ones."""
    import difflib

    known = [n for n in CATALOGUE if "{cpu}" not in n] + ["busy_share_cpuN", "bench_NAME"]
    close = difflib.get_close_matches(name, known + list(FORMER_NAMES), n=3, cutoff=0.6)
    close = list(dict.fromkeys(FORMER_NAMES.get(c, c) for c in close))
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return f"unknown metric {name!r}{hint} (known: {', '.join(known)})"


#: The family of the benchmark's results (:mod:`schedwake.bench`): any ``bench_NAME``
#: is a metric, whose unit and direction each trace's results give (the sample rows
#: carry them); ``direction`` here only stands for "per result".
BENCH = CatalogueMetric(
    "bench_{name}",
    "",
    "per result",
    1.0,
    "a result of the benchmark that ran while the trace was recorded, from the files "
    "beside the trace (TRACE.bench.json, fio's JSON, dbench's output)",
    "the trace's one value (a benchmark result is per run, never per window)",
)


def bench_samples(tm: dict, path: str, duration_s: float, metrics=None) -> pd.DataFrame:
    """The per-trace samples of the benchmark results of :func:`trace_metrics` ``tm``
    (one row each, ``sample_kind`` per-trace also beside per-window samples: a
    benchmark result is one value per run), with their own unit and direction."""
    info = tm.get("bench") or {}
    names = [n for n in info if metrics is None or n in metrics]
    v = [np.nan if tm.get(n) is None else float(tm[n]) for n in names]
    return pd.DataFrame(
        {
            "trace": [path] * len(names),
            "sample_kind": ["per-trace"] * len(names),
            "window": np.zeros(len(names), dtype=np.int64),
            "start_s": np.zeros(len(names)),
            "end_s": np.full(len(names), float(duration_s or 0.0)),
            "metric": names,
            "unit": [str(info[n].get("unit", "")) for n in names],
            "direction": [str(info[n]["direction"]) for n in names],
            "value": np.asarray(v, dtype=np.float64),
        },
        columns=list(SAMPLE_COLUMNS),
    )


def _with_bench(samples: pd.DataFrame, bench: pd.DataFrame) -> pd.DataFrame:
    if len(bench) == 0:
        return samples
    if len(samples) == 0:
        return bench.reset_index(drop=True)
    return pd.concat([samples, bench], ignore_index=True)


def catalogue_entry(name: str) -> CatalogueMetric:
    """The catalogue entry of a metric identifier (``busy_share_cpu3`` -> the busy share
    entry, ``bench_fio_write_iops`` -> :data:`BENCH`). Raises KeyError (its text:
    :func:`unknown_metric`) for unknown names."""
    if name in CATALOGUE:
        return CATALOGUE[name]
    if name.startswith("bench_") and len(name) > len("bench_"):
        return BENCH
    if name.startswith("busy_share_cpu") and name[len("busy_share_cpu") :].isdigit():
        return CATALOGUE["busy_share_cpu{cpu}"]
    raise KeyError(unknown_metric(name))


def _select(names) -> list[str] | None:
    if names is None:
        return None
    out = []
    for n in names:
        catalogue_entry(n)  # validates
        out.append(n)
    return out


def metric_samples(
    trace, window_s: float | None = None, thresholds: dict | None = None, metrics=None
) -> pd.DataFrame:
    """Tidy table of the catalogue metrics of one trace: one row per (sample, metric).

    ``window_s=None``: one *per-trace* sample per metric (the whole-trace value,
    ``window`` 0). Otherwise *per-window* samples over consecutive windows of
    ``window_s`` seconds (:func:`window_metrics`); a window without wake-ups gives a
    missing (NaN) wake-up share and latency. Columns :data:`SAMPLE_COLUMNS`: ``trace``
    (path), ``sample_kind``, ``window``, ``start_s``/``end_s`` (seconds from the first
    event), ``metric`` (catalogue name), ``unit``, ``direction``, ``value`` (in ``unit``).
    ``metrics``: catalogue names to keep (default all).
    """
    path = str(trace.meta.path)
    cpus = trace.meta.ncpus
    if window_s is None:
        return trace_samples(trace_metrics(trace, thresholds), path, cpus, metrics)
    bench = bench_samples(_bench_metrics(trace), path, trace.duration_ns / 1e9, metrics)
    keep = _select(metrics)
    first = trace.model.events.first_ts
    wm = window_metrics(trace, window_s, thresholds)
    cols: dict[str, np.ndarray] = {}
    for m in CATALOGUE.values():
        if m.key == "busy_share":
            for c in range(cpus):
                col = f"busy_share_cpu{c}"
                v = (
                    wm[col].to_numpy(dtype=np.float64)
                    if col in wm.columns
                    else np.full(len(wm), np.nan)
                )
                cols[m.name.format(cpu=c)] = v * m.scale
            continue
        v = wm[m.key].to_numpy(dtype=np.float64) * m.scale
        if m.name in _LATENCY:
            v = np.where(wm["latency_samples"].to_numpy() > 0, v, np.nan)
        elif m.name == "wakeup_migration_share":
            v = np.where(wm["wakeups"].to_numpy() > 0, v, np.nan)
        elif m.name == "pingpong_would_stack_share":
            v = np.where(wm["pingpong_episodes"].to_numpy() > 0, v, np.nan)
        elif m.name == "storm_preempted_share":
            v = np.where(wm["storm_preemptions"].to_numpy() > 0, v, np.nan)
        cols[m.name] = v
    start = (wm["start_ns"].to_numpy(dtype=np.int64) - first) / 1e9
    end = (wm["end_ns"].to_numpy(dtype=np.int64) - first) / 1e9
    window = wm["window"].to_numpy(dtype=np.int64)
    return _with_bench(_tidy(path, "per-window", window, start, end, cols, keep), bench)


def trace_samples(tm: dict, path: str, cpus: int, metrics=None) -> pd.DataFrame:
    """The per-trace samples (:func:`metric_samples` with no window) of a trace whose
    :func:`trace_metrics` are ``tm``: how ``batch`` turns a stored row of metrics back
    into the samples of a comparison."""
    keep = _select(metrics)
    cols: dict[str, np.ndarray] = {}
    for m in CATALOGUE.values():
        if m.key == "busy_share":
            for c in range(cpus):
                v = (tm["busy_share"] or {}).get(str(c), np.nan)
                cols[m.name.format(cpu=c)] = np.array([v * m.scale])
        else:
            v = np.nan if tm[m.key] is None else float(tm[m.key])
            cols[m.name] = np.array([v * m.scale])
    one = np.zeros(1, dtype=np.int64)
    tidy = _tidy(path, "per-trace", one, np.zeros(1), np.array([tm["duration_s"]]), cols, keep)
    return _with_bench(tidy, bench_samples(tm, path, tm["duration_s"], keep))


def _tidy(path, kind, window, start, end, cols: dict, keep) -> pd.DataFrame:
    """The long table of :data:`SAMPLE_COLUMNS`: one row per (sample, kept metric),
    metric after metric (built at once: per-metric frames cost more than the metrics)."""
    names = [n for n in cols if keep is None or n in keep]
    if not names:
        return pd.DataFrame({c: [] for c in SAMPLE_COLUMNS})
    n = len(window)
    entries = [catalogue_entry(name) for name in names]
    return pd.DataFrame(
        {
            "trace": [path] * (n * len(names)),
            "sample_kind": [kind] * (n * len(names)),
            "window": np.tile(np.asarray(window, dtype=np.int64), len(names)),
            "start_s": np.tile(np.asarray(start, dtype=np.float64), len(names)),
            "end_s": np.tile(np.asarray(end, dtype=np.float64), len(names)),
            "metric": np.repeat(np.array(names, dtype=object), n).tolist(),
            "unit": np.repeat(np.array([e.unit for e in entries], dtype=object), n).tolist(),
            "direction": np.repeat(
                np.array([e.direction for e in entries], dtype=object), n
            ).tolist(),
            "value": np.concatenate([np.asarray(cols[name], dtype=np.float64) for name in names]),
        }
    )


def missing_events(trace, name: str) -> list[str]:
    """What the trace lacks to measure catalogue metric ``name``: one text per unmet
    group of :data:`NEEDS` (``"sched_waking or sched_wakeup"``); empty when measurable.
    An event counts as present when the trace has records of it: a file cannot tell an
    event that was not enabled from one that never fired (nor one left out by
    ``load(events=...)``)."""
    key = catalogue_entry(name).name
    if key == BENCH.name:  # (a result of the benchmark, not of the trace's events)
        return []
    return [
        " or ".join(group) for group in NEEDS[key] if not any(trace.has_records(e) for e in group)
    ]
