"""The sweep of :mod:`.idle_while_runnable` over one LLC, in NumPy.

Arrays of a few bytes per interval end, sorted once by time, then grouped by CPU:
the waits of woken tasks on a big trace number in the millions, and per-CPU pandas
group-bys over frames of them took several times the occupancy table in memory.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..model import pid_cpu_counts, stable_order


def llc_gap_segments(
    group: Sequence[int],
    icpu: np.ndarray,
    istart: np.ndarray,
    iend: np.ndarray,
    wcpu: np.ndarray,
    wstart: np.ndarray,
    wend: np.ndarray,
    unknown: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The segments (start, end) during which at least one CPU of the LLC ``group`` is
    idle and at least one other is busy with a woken task waiting on it: each the
    longest such stretch (maximal: in time order, none touches the next).

    ``icpu``/``istart``/``iend``: idle intervals; ``wcpu``/``wstart``/``wend``: waits
    (of any CPUs: those of the group are used); ``unknown``: (cpu, start, end) of the
    intervals in which a CPU's state is unknown (neither idle nor busy), or None. Each
    interval adds one at its start and removes one at its end; a CPU is idle while its
    idle count is positive, and busy-waiting while its wait count is positive and it is
    neither idle nor unknown.
    """
    i, w = _in_group(icpu, group), _in_group(wcpu, group)
    if i is not None:
        icpu, istart, iend = icpu[i], istart[i], iend[i]
    if w is not None:  # (None when the LLC holds every CPU: no copies then)
        wcpu, wstart, wend = wcpu[w], wstart[w], wend[w]
    del i, w
    ucpu, ustart, uend = (np.zeros(0, np.int64),) * 3 if unknown is None else unknown
    u = _in_group(ucpu, group)
    if u is not None:
        ucpu, ustart, uend = ucpu[u], ustart[u], uend[u]
    del u
    parts = [
        (np.asarray(t, np.int64), np.asarray(c), k)
        for k, (t, c) in enumerate(
            (
                (istart, icpu),
                (iend, icpu),
                (wstart, wcpu),
                (wend, wcpu),
                (ustart, ucpu),
                (uend, ucpu),
            )
        )
    ]
    n = sum(len(t) for t, _, _ in parts)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # the ends in time order, each with its CPU and kind (0 idle start, 1 idle end,
    # 2 wait start, 3 wait end, 4 unknown start, 5 unknown end). The order of ends at
    # equal times does not matter: only the state after the last of them starts a
    # segment (the others end zero-length ones), and that state is the same in any
    # order. So the sorts need not be stable.
    present = [c for c in (icpu, wcpu, ucpu) if len(c)]
    lo_cpu = min(int(c.min()) for c in present)
    hi_cpu = max(int(c.max()) for c in present)
    bits = (hi_cpu - lo_cpu).bit_length() + 3  # of the code (cpu - lo_cpu) * 8 + kind
    tmin = min(int(t.min()) for t, _, _ in parts if len(t))
    tmax = max(int(t.max()) for t, _, _ in parts if len(t))
    if bits <= 31 and tmax - tmin < 1 << (63 - bits):
        # one int64 an end, time above code, sorted in place: no order array
        ts = np.empty(n, dtype=np.int64)
        at = 0
        for t, c, k in parts:
            seg = ts[at : at + len(t)]
            np.subtract(t, tmin, out=seg)
            seg <<= bits
            seg |= (c - lo_cpu).astype(np.int32) * 8 + k
            at += len(t)
        ts.sort(kind="stable")  # (a merge of the runs already in order: waits come by start)
        code = ts.astype(np.int32)  # the low 32 bits
        code &= (1 << bits) - 1
        ts >>= bits
        ts += tmin
    else:
        ts = np.concatenate([t for t, _, _ in parts])
        order = np.argsort(ts)
        ts.sort()  # in place: the values of ts[order] without a copy
        code = np.concatenate([(c.astype(np.int64) - lo_cpu) * 8 + k for _, c, k in parts])[order]
        del order
    del parts
    kind = (code & 7).astype(np.int8)
    code >>= 3  # the CPU
    # per CPU, in time order: changes of its "idle" and "busy with a wait" indicators, from
    # the rows grouped by CPU (a stable counting sort keeps each CPU's in time order): one
    # pass over all rows whatever the number of CPUs, not one a CPU
    by_cpu = stable_order(code)
    k = kind[by_cpu]
    del kind
    cpu = code[by_cpu]
    del code
    first = np.ones(len(cpu), dtype=bool)  # each CPU's first row
    first[1:] = cpu[1:] != cpu[:-1]
    del cpu
    idle = _open(k, 0, 1, first) > 0
    busy_wait = _open(k, 2, 3, first) > 0
    busy_wait &= ~idle
    busy_wait &= _open(k, 4, 5, first) <= 0
    del k
    d_idle = np.empty(len(ts), dtype=np.int8)
    d_busy_wait = np.empty(len(ts), dtype=np.int8)
    for on, d in ((idle, d_idle), (busy_wait, d_busy_wait)):
        step = on.view(np.int8).copy()
        step[1:] -= on[:-1].view(np.int8)
        step[first] = on[first]  # (a CPU's first row: from nothing open)
        d[by_cpu] = step
    del idle, busy_wait, step, first, by_cpu
    # over the LLC: at least one CPU idle and one busy with a wait
    gap = np.cumsum(d_idle, dtype=np.int32) >= 1
    del d_idle
    gap &= np.cumsum(d_busy_wait, dtype=np.int32) >= 1
    del d_busy_wait
    # a piece runs from its row's time to the next row's, when that is later
    gap[:-1] &= ts[1:] > ts[:-1]
    gap[-1] = False
    starts = np.flatnonzero(gap)
    return _joined(ts[starts], ts[starts + 1])


def _in_group(cpu: np.ndarray, group: Sequence[int]) -> np.ndarray | None:
    """Which rows of ``cpu`` are CPUs of ``group`` (by a table over the CPU numbers); None
    when all are."""
    if len(cpu) == 0 or len(group) == 0:
        return None if len(cpu) == 0 else np.zeros(len(cpu), dtype=bool)
    top = max(max(group), 0) + 1
    table = np.zeros(top + 1, dtype=bool)  # (the last: any CPU outside [0, top))
    table[[c for c in group if c >= 0]] = True
    cpu = np.asarray(cpu)
    rows = table[np.where((cpu >= 0) & (cpu < top), cpu, top)]
    return None if rows.all() else rows


def _open(kind: np.ndarray, up: int, down: int, first: np.ndarray) -> np.ndarray:
    """Per row (grouped by CPU, each CPU's in time order; ``first`` marks each CPU's
    first row), its CPU's count of open intervals of one kind after it: rows of ``kind``
    ``up`` open one, ``down`` close one."""
    n = np.cumsum((kind == up).view(np.int8) - (kind == down).view(np.int8), dtype=np.int32)
    # each CPU counts from zero: less the running count before its first row
    heads = np.flatnonzero(first)
    before = np.zeros(len(heads), dtype=np.int32)
    before[1:] = n[heads[1:] - 1]
    n -= np.repeat(before, np.diff(np.append(heads, len(n))))
    return n


def _joined(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pieces (in time order) that touch joined into one: a gap that another CPU's
    event of the LLC only passes through (a wait that starts or ends beside it, a third
    CPU going idle) is one segment, so that the longest gap and the count of segments
    are the gap's, not the events'."""
    if len(start) < 2:
        return start, end
    first = np.ones(len(start), dtype=bool)
    first[1:] = start[1:] != end[:-1]
    heads = np.flatnonzero(first)
    tails = np.append(heads[1:] - 1, len(start) - 1)
    return start[heads], end[tails]


def single_cpu_pids(pid: np.ndarray, cpu: np.ndarray, min_runs: int) -> np.ndarray:
    """The pids (in order) of the rows that all have one CPU, in at least ``min_runs``
    rows (without a group-by: see ``pid_cpu_counts``)."""
    pids, runs, ncpus = pid_cpu_counts(pid, cpu)
    return pids[(ncpus == 1) & (runs >= min_runs)].astype(np.asarray(pid).dtype)
