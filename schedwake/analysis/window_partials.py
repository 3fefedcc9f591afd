"""The per-window metrics of one trace from its time parts: what ``batch`` stores of a
trace too big for one worker (:func:`~schedwake.analysis.metrics.window_metrics` over the
windows of the whole trace, equal to them).

Each part gives, on the windows of the whole trace (:func:`window_partial`, run where
the part is), what its owned rows (:func:`schedwake.partition.owned_masks`) put in each
window: counts, the running and unknown time of each CPU, the gap time of each LLC, the
running and runnable time of each task, and the storm's preemptions and switch-outs
per unit; the counts add up over the parts, since every row of the whole trace's model
is owned by one part. What does not add up is joined on the client (:func:`joined`):

* the storm's units and the futile wake-ups a part leaves open are judged over the
  whole trace, as :class:`~schedwake.analysis.partials.JoinedMetrics` judges them;
* a task's class is that of its last name in the whole trace;
* the tasks' CPUs visited per window: a window wholly inside a part (every switch of it
  there) is the part's; a window a cut falls in is joined from each side's switch-ins
  per (task, CPU);
* the latency quantiles per window: a window whose wake-ups are all owned by one part
  is that part's; of a window with wake-ups owned by several (a cut falls in it, or a
  wake-up's run is past a cut), the values are asked of those parts
  (:func:`window_latencies`) and the quantiles found here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..model.masks import episodes_mask, futile_mask, would_stack_mask
from ..model.task_states import focused, joined_names, window_class_shares, window_state_times
from ..model.tasks import PERCPU_KTHREAD, name_class
from ..partition import in_span, model_table
from .metrics import (
    CPUS_VISITED_MIN_RUNS,
    CROSS_LLC,
    METRICS,
    busy_share_columns,
    covered,
    cpu_window_times,
    cpus_visited_per_window,
    latencies,
    latency_columns,
    latency_quantiles,
    share_of,
    weighted_share_windows,
    window_counts,
    window_edges,
)

if TYPE_CHECKING:
    from ..trace import Trace
    from .partials import JoinedMetrics, MetricPartial

#: The counts a part gives per window (of the rows it owns, by their time).
COUNTS = (
    "wakeups",
    "migrated",
    "pingpong",
    "would_stack",
    "futile",
    "latency_samples",
    "migrations",
    "wakeup_migrations",
    "load_balance_migrations",
    "cross_llc_migrations",
    "switches",
    "missing_switches",
)


@dataclass
class WindowPartial:
    """What one part gives the client for the windows of ``window_s`` seconds."""

    window_s: float
    #: The whole trace's window edges (ns), and its CPUs.
    edges: np.ndarray
    cpus: int
    #: Per window, the counts of :data:`COUNTS`.
    counts: dict[str, np.ndarray]
    #: The times of the part's owned wake-ups whose futility later parts settle, in the
    #: rows of :attr:`MetricPartial.futile_open <.partials.MetricPartial.futile_open>`.
    futile_open_ts: np.ndarray
    #: The storm's counts per window (``win``: :func:`storm_window`): the kworker
    #: preemptions per (cpu, task, kw, fn, win) and the switch-outs per (cpu, kw, fn, win).
    storm_preemptions: pd.DataFrame
    storm_switchouts: pd.DataFrame
    #: The latency quantiles of its owned wake-ups per window
    #: (:func:`~.metrics.latency_quantiles`): a window's where only this part has any.
    latency: dict[float, tuple[np.ndarray, np.ndarray]]
    #: Per CPU with occupancy rows: its running and its unknown ns per window.
    busy: dict[int, tuple[np.ndarray, np.ndarray]]
    #: Per LLC of two CPUs or more (in the gap's order): its gap ns per window inside
    #: the part's span.
    gap: dict[int, np.ndarray]
    #: The tasks' running and runnable ns per (window, task)
    #: (:func:`~schedwake.model.task_states.window_state_times`).
    states: pd.DataFrame
    #: Per window: whether all of it is inside the part's span, and then the tasks'
    #: mean CPUs visited there.
    inside: np.ndarray
    visited: np.ndarray
    #: Of the windows not inside: the switch-ins per (win, task, cpu) (column n), and
    #: per (win, task) the name of its last one (column name).
    edge_visits: pd.DataFrame
    edge_names: pd.DataFrame


def storm_window(edges: np.ndarray) -> Any:
    """The window of each switch time for the storm's counts: ``searchsorted`` of the
    edges (the preempted share's windows, which leave out a time at the last edge), but
    a time at the last edge is ``nwin`` (the counts' last window holds it, as
    ``np.histogram``'s does) and times out of the windows are -1."""
    nwin = len(edges) - 1

    def window(ts: np.ndarray) -> np.ndarray:
        win = np.searchsorted(edges, ts, "right") - 1
        win[(win >= nwin) & (ts != edges[-1])] = -1
        return win

    return window


def window_partial(
    part: Trace,
    t0: int | None,
    t1: int | None,
    window_s: float,
    first_ts: int,
    last_ts: int,
    segments: dict[int, tuple[np.ndarray, np.ndarray]],
) -> tuple[WindowPartial, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The :class:`WindowPartial` of the part ``[t0, t1)`` for windows of ``window_s``
    seconds of the trace ``first_ts..last_ts``, given its gap segments (those of the
    whole trace's pinned tasks, :func:`schedwake.detect.idle_while_runnable.gap_segments`);
    and, kept where the part is, its owned latencies (window, least, proven ns)."""
    from ..detect.cswitch_storm import unit_counts
    from ..model.masks import preempting_wakeups
    from ..partition import owned_masks

    model = part.model
    ev = model.events
    edges = window_edges(first_ts, last_ts, window_s)
    nwin = len(edges) - 1
    owned = owned_masks(model, t0, t1, ("wakeups", "migrations", "occupancy", "task_states"))
    counts: dict[str, np.ndarray] = {}
    # wake-ups: the owned rows, the masks over them
    w = model_table(model, "wakeups")
    mine = owned["wakeups"]
    wts = w["ts"].to_numpy(dtype=np.int64) if len(w) else np.zeros(0, np.int64)
    migrated = w["migrated"].to_numpy(dtype=bool) if len(w) else np.zeros(0, dtype=bool)
    # (a trace without switches has no futile wake-up: metric_partial's rule)
    futile = futile_mask(model) if ev.switch is not None else np.zeros(len(w), dtype=bool)
    for name, mask in (
        ("wakeups", mine),
        ("migrated", mine & migrated),
        ("pingpong", mine & episodes_mask(w)),
        ("would_stack", mine & would_stack_mask(model)),
        ("futile", mine & futile),
    ):
        counts[name] = window_counts(wts, edges, mask)
    rows, _ = preempting_wakeups(model, "open")
    futile_open_ts = wts[rows[mine[rows]]] if len(rows) else np.zeros(0, np.int64)
    # latencies: per window, of the owned wake-ups with one
    lat_win = np.zeros(0, np.int64)
    lo = hi = np.zeros(0, np.int64)
    if len(w):
        ok = w["latency_ns"].notna().to_numpy() & mine
        lo, hi = latencies(w[mine])  # (of the rows with a latency, in row order)
        lat_win = np.clip(np.searchsorted(edges, wts[ok], "right") - 1, 0, nwin - 1)
    counts["latency_samples"] = np.bincount(lat_win, minlength=nwin)[:nwin]
    latency = latency_quantiles(lat_win, lo, hi, nwin)
    # migrations
    mig = model_table(model, "migrations")
    mm = owned["migrations"]
    if len(mig):
        mts = mig["ts"].to_numpy(dtype=np.int64)
        cause, topo = mig["cause"].to_numpy(), mig["topology_class"].to_numpy()
    else:
        mts, cause, topo = np.zeros(0, np.int64), np.zeros(0, object), np.zeros(0, object)
    counts["migrations"] = window_counts(mts, edges, mm)
    counts["wakeup_migrations"] = window_counts(mts, edges, mm & (cause == "wakeup"))
    counts["load_balance_migrations"] = window_counts(mts, edges, mm & (cause == "load_balance"))
    counts["cross_llc_migrations"] = window_counts(mts, edges, mm & np.isin(topo, CROSS_LLC))
    # switches: the part's own, and the breaks of its CPUs' chains it holds
    s = ev.switch
    sts = s["ts"].to_numpy(dtype=np.int64) if s is not None else np.zeros(0, np.int64)
    span = in_span(sts, t0, t1)
    counts["switches"] = window_counts(sts, edges, span)
    comp = model.completeness
    broken = np.asarray(comp.switch_end[~comp.switch_chain_ok], dtype=np.int64)
    counts["missing_switches"] = window_counts(broken, edges, in_span(broken, t0, t1))
    pre, outs = unit_counts(model, span if s is not None else None, storm_window(edges))
    # the CPUs' running and unknown time, the LLCs' gap time
    occ = model_table(model, "occupancy")
    busy = cpu_window_times(occ[owned["occupancy"]], edges) if len(occ) else {}
    gap = {}
    for llc, (gs, ge) in segments.items():
        lo_t = np.iinfo(np.int64).min if t0 is None else t0
        hi_t = np.iinfo(np.int64).max if t1 is None else t1
        cs, ce = np.maximum(gs, lo_t), np.minimum(ge, hi_t)
        keep = ce > cs
        order = np.argsort(cs[keep])
        gap[llc] = np.diff(covered(cs[keep][order], ce[keep][order], edges))
    iv = model_table(model, "task_states")
    states = window_state_times(focused(model, iv[owned["task_states"]]), edges)
    inside, visited, edge_visits, edge_names = _visits(part, t0, t1, edges, span)
    partial = WindowPartial(
        window_s=window_s,
        edges=edges,
        cpus=int(ev.cpus),
        counts=counts,
        futile_open_ts=futile_open_ts,
        storm_preemptions=pre,
        storm_switchouts=outs,
        latency=latency,
        busy=busy,
        gap=gap,
        states=states,
        inside=inside,
        visited=visited,
        edge_visits=edge_visits,
        edge_names=edge_names,
    )
    return partial, (lat_win, lo, hi)


def _visits(
    part: Trace, t0: int | None, t1: int | None, edges: np.ndarray, span: np.ndarray
) -> tuple[np.ndarray, np.ndarray, pd.DataFrame, pd.DataFrame]:
    """:attr:`WindowPartial.inside`, ``visited``, ``edge_visits`` and ``edge_names``: a
    switch-in's window as :attr:`~.metrics.WindowInputs.cpus_visited` places it (the
    first window holds what is before it, the last what is after it)."""
    nwin = len(edges) - 1
    lo = np.concatenate([[np.iinfo(np.int64).min], edges[1:-1]])
    hi = np.concatenate([edges[1:-1], [np.iinfo(np.int64).max]])
    inside = (lo >= (np.iinfo(np.int64).min if t0 is None else t0)) & (
        hi <= (np.iinfo(np.int64).max if t1 is None else t1)
    )
    visited = np.zeros(nwin)
    empty_v = pd.DataFrame({c: np.zeros(0, np.int64) for c in ("win", "task", "cpu", "n")})
    empty_n = pd.DataFrame({"win": np.zeros(0, np.int64), "task": np.zeros(0, np.int64),
                            "name": np.zeros(0, object)})  # fmt: skip
    s = part.model.events.switch
    if s is None or not span.any():
        return inside, visited, empty_v, empty_n
    sw = s[span]
    lives = part.model.events.lives
    win = np.clip(np.searchsorted(edges, sw["ts"].to_numpy(), "right") - 1, 0, nwin - 1)
    visited = np.where(inside, cpus_visited_per_window(sw, win, nwin, lives), 0.0)
    rows = np.flatnonzero(~inside[win] & (sw["next_pid"].to_numpy() != 0))
    if not len(rows):
        return inside, visited, empty_v, empty_n
    next_pid = sw["next_pid"].to_numpy()[rows]
    task = lives.key(next_pid, sw["ts"].to_numpy()[rows]) if lives else next_pid.astype(np.int64)
    f = pd.DataFrame(
        {"win": win[rows], "task": task, "cpu": sw["cpu"].to_numpy()[rows].astype(np.int64)}
    )
    v = f.groupby(["win", "task", "cpu"]).size().rename("n").reset_index()
    comm = sw["next_comm"].array
    codes = np.asarray(comm.codes)[rows]
    last = f.assign(code=codes).groupby(["win", "task"])["code"].last().reset_index()
    last["name"] = ["nan" if k < 0 else str(comm.categories[k]) for k in last.pop("code")]
    return inside, visited, v, last


def window_latencies(
    kept: tuple[np.ndarray, np.ndarray, np.ndarray], windows: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of a part's owned latencies (:func:`window_partial`'s second result), those of the
    ``windows``: what the client asks of the windows several parts have wake-ups of."""
    win, lo, hi = kept
    sel = np.isin(win, windows)
    return win[sel], lo[sel], hi[sel]


def shared_windows(parts: Sequence[WindowPartial]) -> np.ndarray:
    """The windows that more than one part has owned latencies of."""
    n = sum((p.counts["latency_samples"] > 0).astype(np.int64) for p in parts)
    return np.flatnonzero(np.asarray(n) > 1)


def joined(
    parts: Sequence[WindowPartial],
    metrics: Sequence[MetricPartial],
    shared: tuple[np.ndarray, np.ndarray, np.ndarray],
    thresholds: Any = None,
    selections: Any = None,
) -> pd.DataFrame:
    """:func:`~schedwake.analysis.metrics.window_metrics` of the whole trace from its
    parts' window partials (in time order, for one window length), their metric
    partials and the latencies of the :func:`shared_windows` (window, least, proven ns:
    :func:`window_latencies` of the parts, concatenated); ``selections``: as
    :class:`~.partials.JoinedMetrics` takes them (partials without their latencies)."""
    from .partials import JoinedMetrics

    edges = parts[0].edges
    nwin = len(edges) - 1
    lens_s = np.diff(edges) / 1e9
    j = JoinedMetrics(metrics, thresholds, selections)

    def count(name: str) -> np.ndarray:
        return sum((p.counts[name] for p in parts), np.zeros(nwin, dtype=np.int64))

    def per_s(c: np.ndarray) -> np.ndarray:
        return c / lens_s

    wakeups, pingpong, would_stack = count("wakeups"), count("pingpong"), count("would_stack")
    migrations = count("migrations")
    storm = _storm(j, parts, nwin)
    latency = _latency(parts, shared, nwin)
    compute: dict[str, Any] = {
        "wakeups": wakeups,
        "migrations": migrations,
        "migrations_per_s": per_s(migrations),
        "wakeup_migrations_per_s": per_s(count("wakeup_migrations")),
        "load_balance_migrations_per_s": per_s(count("load_balance_migrations")),
        "cross_llc_migrations_per_s": per_s(count("cross_llc_migrations")),
        "wakeup_migration_share": share_of(count("migrated"), wakeups),
        "pingpong_episodes": pingpong,
        "pingpong_episodes_per_s": per_s(pingpong),
        "pingpong_would_stack": would_stack,
        "pingpong_would_stack_per_s": per_s(would_stack),
        "pingpong_would_stack_share": share_of(would_stack, pingpong),
        "cpus_visited_per_task": _visited(parts, nwin),
        "context_switches_per_s": per_s(count("switches") + count("missing_switches")),
        "futile_wakeups_per_s": per_s(count("futile") + _futile_open(j, parts, edges)),
        "storm_kworker_preemptions_per_s": per_s(storm["storm"]),
        "storm_preempted_share": storm["share"],
        "storm_preemptions": storm["preemptions"],
        "latency_samples": count("latency_samples"),
        "wake_to_run_p50_us": latency[0.5],
        "wake_to_run_p90_us": latency[0.9],
        "wake_to_run_p99_us": latency[0.99],
        "idle_while_runnable_share": _gap_share(parts, edges),
        "busy_share": _busy(parts, edges),
    }
    names = joined_names([m.names for m in metrics])
    times = pd.concat([p.states for p in parts], ignore_index=True)
    shares = window_class_shares(times, names, nwin)
    for c, v in shares.items():
        compute[f"runnable_share_{c}"] = v
    cols: dict[str, Any] = {"window": np.arange(nwin), "start_ns": edges[:-1], "end_ns": edges[1:]}
    for m in METRICS.values():
        if m.per_window is None:
            continue
        v = compute[m.key]
        cols.update(v if isinstance(v, dict) else {m.name: v})
    return pd.DataFrame(cols)


def _futile_open(j: JoinedMetrics, parts: Sequence[WindowPartial], edges: np.ndarray) -> np.ndarray:
    """Per window, the futile wake-ups that a part left open and later parts settled."""
    settled = j.futile_settled()
    ts = [p.futile_open_ts[f] for p, f in zip(parts, settled, strict=True)]
    return window_counts(np.concatenate(ts) if ts else np.zeros(0, np.int64), edges)


def _storm(j: JoinedMetrics, parts: Sequence[WindowPartial], nwin: int) -> dict[str, np.ndarray]:
    """Per window: the storm's preemptions, those of its storm units, and its preempted
    share (:func:`~.metrics._window_preempted_share`), its units judged over the whole
    trace (:meth:`JoinedMetrics.storm_units`)."""
    zero = np.zeros(nwin, dtype=np.int64)
    out = {"preemptions": zero, "storm": zero, "share": np.zeros(nwin)}
    frames = [p.storm_preemptions for p in parts if len(p.storm_preemptions)]
    judged = j.storm_units()
    if not frames or judged is None:
        return out
    key = ["cpu", "task", "kw", "fn"]
    pre = pd.concat(frames, ignore_index=True)
    pre = pre[pre["win"] >= 0].merge(judged[[*key, "mine", "storm"]], on=key, how="inner")
    pre = pre[pre["mine"].to_numpy()]
    at_end = pre["win"].to_numpy() == nwin  # (a time at the last edge: the counts' last)
    cwin = np.where(at_end, nwin - 1, pre["win"].to_numpy())
    n = pre["n"].to_numpy()
    out["preemptions"] = np.bincount(cwin, weights=n, minlength=nwin).astype(np.int64)
    st = pre["storm"].to_numpy()
    out["storm"] = np.bincount(cwin[st], weights=n[st], minlength=nwin).astype(np.int64)
    # the share: per (window, unit), the unit numbered in the order of its first preemption
    units = judged[judged["mine"].to_numpy()].groupby(["cpu", "kw", "fn"])["first"].min()
    units = units.sort_values(kind="stable")
    uid = pd.Series(np.arange(len(units)), index=units.index)
    inwin = pre[~at_end]
    if not len(inwin):
        return out
    ukey = ["cpu", "kw", "fn"]
    p = inwin.groupby([*ukey, "win"])["n"].sum().reset_index()
    outs = pd.concat([q.storm_switchouts for q in parts if len(q.storm_switchouts)])
    outs = outs[(outs["win"] >= 0) & (outs["win"] < nwin)].groupby([*ukey, "win"])["n"].sum()
    at = pd.MultiIndex.from_frame(p[[*ukey, "win"]])
    o = outs.reindex(at).fillna(0).to_numpy().astype(np.int64)
    u = uid.reindex(pd.MultiIndex.from_frame(p[ukey])).to_numpy()
    order = np.lexsort((u, p["win"].to_numpy()))
    out["share"] = weighted_share_windows(
        p["win"].to_numpy()[order], p["n"].to_numpy()[order], o[order], nwin
    )
    return out


def _latency(
    parts: Sequence[WindowPartial],
    shared: tuple[np.ndarray, np.ndarray, np.ndarray],
    nwin: int,
) -> dict[float, np.ndarray]:
    """Per window, the latency quantiles: of the part that alone has wake-ups there, or
    of the shared windows' values."""
    q: dict[float, tuple[np.ndarray, np.ndarray]] = {
        p: (np.zeros(nwin), np.zeros(nwin)) for p in (0.5, 0.9, 0.99)
    }
    for part in parts:
        has = part.counts["latency_samples"] > 0
        for p, (lo, hi) in part.latency.items():
            q[p][0][has], q[p][1][has] = lo[has], hi[has]
    win, lo_ns, hi_ns = shared
    if len(win):
        both = latency_quantiles(win, lo_ns, hi_ns, nwin)
        at = np.unique(win)
        for p, (lo, hi) in both.items():
            q[p][0][at], q[p][1][at] = lo[at], hi[at]
    return latency_columns(q)


def _visited(parts: Sequence[WindowPartial], nwin: int) -> np.ndarray:
    """Per window, the tasks' mean CPUs visited (0 where no task qualifies): the part's
    where the window is inside one; else from the parts' switch-ins there."""
    out = np.zeros(nwin)
    for p in parts:
        out[p.inside] = p.visited[p.inside]
    visits = [p.edge_visits for p in parts if len(p.edge_visits)]
    if not visits:
        return out
    v = pd.concat(visits, ignore_index=True)
    size = v.groupby(["win", "task"])["n"].sum()
    nunique = v.groupby(["win", "task"])["cpu"].nunique()
    # the task's name in the window: of its last switch-in, in the last part with one
    last = pd.concat([p.edge_names for p in parts], ignore_index=True)
    name = last.groupby(["win", "task"])["name"].last().reindex(size.index)
    percpu = np.array([name_class(str(n)) == PERCPU_KTHREAD for n in name.to_numpy()], dtype=bool)
    keep = (size.to_numpy() >= CPUS_VISITED_MIN_RUNS) & ~percpu
    tw = size.index.get_level_values(0).to_numpy()[keep].astype(np.int64)
    total = np.bincount(tw, weights=nunique.to_numpy()[keep].astype(np.float64), minlength=nwin)
    tasks = np.bincount(tw, minlength=nwin)
    at = np.unique(size.index.get_level_values(0).to_numpy().astype(np.int64))
    vals = np.zeros(nwin)
    np.divide(total, tasks, out=vals, where=tasks > 0)
    out[at] = vals[at]
    return out


def _gap_share(parts: Sequence[WindowPartial], edges: np.ndarray) -> np.ndarray:
    """Per window, the gap time / (window length x LLCs)."""
    gap = sum((g for p in parts for g in p.gap.values()), np.zeros(len(edges) - 1, np.int64))
    nllc = max(max((len(p.gap) for p in parts), default=0), 1)
    return gap / (np.diff(edges) * nllc)


def _busy(parts: Sequence[WindowPartial], edges: np.ndarray) -> dict[str, np.ndarray]:
    """``busy_share_cpuN`` per window (:attr:`~.metrics.WindowInputs.busy_shares`) from
    the parts' running and unknown ns per CPU, added up."""
    sums: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for p in parts:
        for c, (run, unk) in p.busy.items():
            r, u = sums.get(c, (0, 0))
            sums[c] = (r + run, u + unk)
    if not sums:  # (no occupancy: no column)
        return {}
    return busy_share_columns(sums, parts[0].cpus, edges)
