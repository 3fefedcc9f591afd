"""The sweep of :mod:`.idle_while_runnable` over one LLC.

The waits of woken tasks on a big trace number in the millions, the idle stretches
far fewer: only the waits that overlap the LLC's idle time can be part of a gap, so
only their ends are sorted with the idle and unknown intervals' (one int64 an end),
and one compiled walk over them in time order (``model.gap_sweep``) keeps each CPU's
state and writes the gap's segments.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..model import gap_sweep, overlaps_union, pid_cpu_counts


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
    i = _in_group(icpu, group)
    if i is not None:
        icpu, istart, iend = icpu[i], istart[i], iend[i]
    # a gap needs an idle CPU: only the waits that overlap the LLC's idle time can be
    # part of one (the states at every other time do not count), and only those are
    # sorted with the other ends
    w = overlaps_union(wstart, wend, istart, iend)
    g = _in_group(wcpu, group)
    if g is not None:
        w &= g
    wcpu, wstart, wend = wcpu[w], wstart[w], wend[w]
    del i, w, g
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
        if hi_cpu - lo_cpu >= 1 << 20:  # (not CPU numbers as we know them: their ranks)
            cpus, rank = np.unique(code >> 3, return_inverse=True)
            code = rank.reshape(-1).astype(np.int64) * 8 + (code & 7)
            lo_cpu, hi_cpu = 0, len(cpus) - 1
    del parts
    # per CPU its open intervals of each kind, over the LLC how many CPUs are idle and
    # how many busy with a wait (neither idle nor unknown), the pieces where both are
    # some joined: one compiled walk over the ends in time order
    return gap_sweep(ts, code, hi_cpu - lo_cpu + 1)


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


def single_cpu_pids(pid: np.ndarray, cpu: np.ndarray, min_runs: int) -> np.ndarray:
    """The pids (in order) of the rows that all have one CPU, in at least ``min_runs``
    rows (without a group-by: see ``pid_cpu_counts``)."""
    pids, runs, ncpus = pid_cpu_counts(pid, cpu)
    return pids[(ncpus == 1) & (runs >= min_runs)].astype(np.asarray(pid).dtype)
