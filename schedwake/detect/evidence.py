"""Evidence lines: the original events of a window, formatted as ``trace-cmd report -N``
prints them, so a finding can show the episode it counted and a reader can check it
against the kernel tool's own output.
"""

from __future__ import annotations

import numpy as np

EVIDENCE_EVENTS = (
    "sched_waking",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_migrate_task",
    "sched_switch",
    "workqueue_execute_start",
    "workqueue_execute_end",
    "workqueue_queue_work",
    "workqueue_activate_work",
    "sched_process_fork",
    "sched_process_exec",
)


def _fields(name: str, r: dict) -> str:
    g = r.get
    if name in ("sched_waking", "sched_wakeup", "sched_wakeup_new"):
        return f"comm={g('comm')} pid={g('pid')} prio={g('prio')} target_cpu={g('target_cpu'):03d}"
    if name == "sched_migrate_task":
        return (
            f"comm={g('comm')} pid={g('pid')} prio={g('prio')} "
            f"orig_cpu={g('orig_cpu')} dest_cpu={g('dest_cpu')}"
        )
    if name == "sched_switch":
        st = g("prev_state_str") if g("prev_state_str") is not None else g("prev_state")
        return (
            f"prev_comm={g('prev_comm')} prev_pid={g('prev_pid')} "
            f"prev_prio={g('prev_prio')} prev_state={st} ==> next_comm={g('next_comm')} "
            f"next_pid={g('next_pid')} next_prio={g('next_prio')}"
        )
    if name in ("workqueue_execute_start", "workqueue_execute_end"):
        return f"work struct 0x{int(g('work') or 0):x}: function {g('function')}"
    if name == "workqueue_queue_work":
        return (
            f"work struct=0x{int(g('work') or 0):x} function={g('function')} "
            f"workqueue={g('workqueue')} req_cpu={g('req_cpu')} cpu={g('field_cpu')}"
        )
    if name == "workqueue_activate_work":
        return f"work struct 0x{int(g('work') or 0):x} function={g('function')} "
    if name == "sched_process_fork":
        return (
            f"comm={g('parent_comm')} pid={g('parent_pid')} child_comm={g('child_comm')} "
            f"child_pid={g('child_pid')}"
        )
    skip = {"ts", "cpu", "common_pid", "common_comm", "common_flags", "common_preempt_count"}
    return " ".join(f"{k}={v}" for k, v in r.items() if k not in skip)


def format_event(name: str, r: dict) -> str:
    """One event in the ``trace-cmd report -N`` layout:
    ``%16s-%-5d [%03d] %5d.%06d: %-20s`` + the kernel's print format of the fields."""
    ts = (int(r["ts"]) + 500) // 1000  # microseconds, rounded as trace-cmd prints them
    pid = r.get("common_pid")
    comm = "<idle>" if pid == 0 else (r.get("common_comm") or "<...>")
    return (
        f"{comm:>16}-{pid if pid is not None else 0:<5} [{int(r['cpu']):03d}] "
        f"{ts // 1_000_000:5d}.{ts % 1_000_000:06d}: "
        f"{name + ':':<21} {_fields(name, r)}"
    )


_PID_FIELDS = ("common_pid", "pid", "prev_pid", "next_pid", "child_pid")


def event_lines(trace, t0: int, t1: int, **window) -> list[str]:
    """The events :func:`evidence_rows` picks (same arguments), formatted."""
    return [format_event(name, r) for name, r in evidence_rows(trace, t0, t1, **window)]


_COMMON = ("ts", "cpu", "common_pid", "common_comm", "common_flags", "common_preempt_count")


def event_record(name: str, r: dict) -> dict:
    """One evidence event as data: ``ts`` (ns), ``time`` (as trace-cmd prints it),
    ``cpu``, ``event``, the task it fired in (``pid``, ``comm``) and its ``fields``."""
    us = (int(r["ts"]) + 500) // 1000
    return {
        "ts": int(r["ts"]),
        "time": f"{us // 1_000_000}.{us % 1_000_000:06d}",
        "cpu": int(r["cpu"]),
        "event": name,
        "pid": r.get("common_pid"),
        "comm": r.get("common_comm"),
        "fields": {k: v for k, v in r.items() if k not in _COMMON},
    }


def evidence_rows(
    trace,
    t0: int,
    t1: int,
    cpus=None,
    pids=(),
    focus_ts=None,
    only_pids: bool = False,
    limit: int = 14,
) -> list[tuple[str, dict]]:
    """The original events in ``[t0, t1]`` on ``cpus`` (all when None) as (event name,
    row) pairs in time order; at most ``limit``, preferring events of ``pids`` (only
    those with ``only_pids``) and those nearest ``focus_ts``."""
    rows = []
    pids = set(int(p) for p in pids)
    for name in EVIDENCE_EVENTS:
        if not trace.has(name):
            continue
        t = trace.table(name)
        if t.num_rows == 0:
            continue
        ts = t.column("ts").to_numpy()
        if np.all(ts[1:] >= ts[:-1]):
            lo, hi = np.searchsorted(ts, t0, "left"), np.searchsorted(ts, t1, "right")
            idx = np.arange(lo, hi)
        else:
            idx = np.flatnonzero((ts >= t0) & (ts <= t1))
        if cpus is not None and len(idx):
            cpu = t.column("cpu").to_numpy()[idx]
            idx = idx[np.isin(cpu, list(cpus))]
        if len(idx) == 0:
            continue
        for k, r in zip(idx, t.take(idx).to_pylist()):
            involved = bool(pids & {r.get(f) for f in _PID_FIELDS})
            if only_pids and not involved:
                continue
            rows.append((int(r["ts"]), int(k), name, r, involved))
    rows.sort(key=lambda x: (x[0], x[1]))
    if len(rows) > limit:
        focus = focus_ts if focus_ts is not None else (t0 + t1) // 2
        ranked = sorted(range(len(rows)), key=lambda i: (not rows[i][4], abs(rows[i][0] - focus)))
        keep = sorted(ranked[:limit])
        rows = [rows[i] for i in keep]
    return [(name, r) for _, _, name, r, _ in rows]
