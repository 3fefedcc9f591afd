"""Evidence lines: the original events of a window, formatted as ``trace-cmd report -N``
prints them, so a finding can show the episode it counted and a reader can check it
against the kernel tool's own output. Where the trace has callchains (``perf sched record
-g``), the wake-ups and the preempted switch-outs of the window show their kernel stack
below them, as ``perf script`` prints a callchain.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..symbols.kernel import KernelSymbols
    from ..trace import Trace

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


#: Frames of a stack shown under an evidence line, and how many events show one.
STACK_FRAMES = 8
STACK_EVENTS = 3


def cites_stack(name: str, r: dict) -> bool:
    """Whether an evidence event is one whose stack tells why: a wake-up, or a task
    switched out while still runnable (``R``/``R+``: preempted, e.g. in
    ``__cond_resched``)."""
    if not r.get("callchain"):
        return False
    if name in ("sched_waking", "sched_wakeup"):
        return True
    return (
        name == "sched_switch"
        and r.get("prev_pid") != 0  # the idle task is always runnable
        and str(r.get("prev_state_str") or "").startswith("R")
    )


def kernel_symbols(trace: Trace) -> KernelSymbols | None:
    """The recorded kernel's symbols (:class:`schedwake.symbols.kernel.KernelSymbols`),
    or None when no kallsyms fits the recording; looked up once per trace."""
    memo = trace.model.memo
    if memo.kernel_symbols is None:
        from ..symbols.kernel import KernelSymbols, choose_kallsyms, kernel_build_id

        meta = trace.meta
        choice = choose_kallsyms(meta.kernel, kernel_build_id(meta.source.get("build_ids")))
        memo.kernel_symbols = (KernelSymbols(choice.text) if choice.text else None,)
    return memo.kernel_symbols[0]


def stack_frames(trace: Trace, r: dict) -> list[dict]:
    """The kernel frames of an event's callchain, innermost first: ``addr``, ``symbol``
    (``name+0xoff``, or ``[unknown]``)."""
    chain = [int(a) for a in r.get("callchain") or []]
    ctx = list(r.get("callchain_context") or [1] * len(chain))
    kernel = [a for a, c in zip(chain, ctx) if c == 1]
    syms = kernel_symbols(trace)
    if not kernel:
        return []
    if syms is None or not len(syms):
        return [{"addr": a, "symbol": "[unknown]"} for a in kernel]
    found, names, _ = syms.lookup(np.array(kernel, dtype=np.uint64))
    starts = syms.addrs[np.searchsorted(syms.addrs, np.array(kernel, dtype=np.uint64), "right") - 1]
    return [
        {"addr": a, "symbol": f"{n}+0x{a - int(s):x}" if ok else "[unknown]"}
        for a, ok, n, s in zip(kernel, found, names, starts)
    ]


def stack_lines(frames: list[dict], limit: int = STACK_FRAMES) -> list[str]:
    """Frames as ``perf script`` prints a callchain (``\t addr symbol``)."""
    lines = [f"{'':>20}{f['addr']:016x} {f['symbol']}" for f in frames[:limit]]
    if len(frames) > limit:
        lines.append(f"{'':>20}... {len(frames) - limit} more frames")
    return lines


_PID_FIELDS = ("common_pid", "pid", "prev_pid", "next_pid", "child_pid")


def event_lines(trace: Trace, t0: int, t1: int, **window: Any) -> list[str]:
    """The events :func:`evidence_rows` picks (same arguments), formatted."""
    return [format_event(name, r) for name, r in evidence_rows(trace, t0, t1, **window)]


_COMMON = ("ts", "cpu", "common_pid", "common_comm", "common_flags", "common_preempt_count")


_STACK_COLUMNS = ("callchain", "callchain_context")


def event_record(name: str, r: dict, stack: list[dict] | None = None) -> dict:
    """One evidence event as data: ``ts`` (ns), ``time`` (as trace-cmd prints it),
    ``cpu``, ``event``, the task it fired in (``pid``, ``comm``) and its ``fields``;
    ``stack`` (:func:`stack_frames`) where the evidence shows one."""
    us = (int(r["ts"]) + 500) // 1000
    out = {
        "ts": int(r["ts"]),
        "time": f"{us // 1_000_000}.{us % 1_000_000:06d}",
        "cpu": int(r["cpu"]),
        "event": name,
        "pid": r.get("common_pid"),
        "comm": r.get("common_comm"),
        "fields": {k: v for k, v in r.items() if k not in _COMMON and k not in _STACK_COLUMNS},
    }
    if stack:
        out["stack"] = stack
    return out


def evidence_of(trace: Trace, picked: list[tuple[str, dict]]) -> tuple[list[str], list[dict]]:
    """(lines, records) of picked evidence events: each event's line, and under the
    first :data:`STACK_EVENTS` events that cite a stack (:func:`cites_stack`), its
    kernel frames."""
    lines, records, stacks = [], [], 0
    for name, r in picked:
        frames = []
        if stacks < STACK_EVENTS and cites_stack(name, r):
            frames = stack_frames(trace, r)
            stacks += bool(frames)
        lines.append(format_event(name, r))
        lines.extend(stack_lines(frames))
        records.append(event_record(name, r, frames))
    return lines, records


def evidence_rows(
    trace: Trace,
    t0: int,
    t1: int,
    cpus: Iterable[int] | None = None,
    pids: Iterable[int] = (),
    focus_ts: int | None = None,
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
