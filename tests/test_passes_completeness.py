"""The compiled pass of completeness's proofs (_pass_completeness.c) gives what the
NumPy gathers gave, on random inputs full of ties, and refuses positions outside the
switches and arrays of other lengths with an error, never a read out of bounds."""

from __future__ import annotations

import numpy as np
import pytest

from schedwake.model import _passes
from schedwake.model.completeness import _rewoken_searched, _unwoken_searched


def _segments_numpy(pos, rank, ets, epid, sw_ts, sw_next):
    """completeness._Proofs._segment's gathers before the pass (main ea2aed5)."""
    seg = np.where(pos >= 0, rank[np.maximum(pos, 0)], -1) if len(rank) else pos.copy()
    status = np.zeros(len(pos), dtype=np.int8)
    at = np.flatnonzero(seg >= 0)
    own = epid[at] == sw_next[seg[at]]
    tie = ets[at] == sw_ts[seg[at]]
    status[at] = np.where(own, 1, np.where(tie, 3, 2))
    return seg, status


@pytest.mark.parametrize("pid_type", [np.int32, np.int64])
def test_event_segments_as_the_gathers(pid_type):
    rng = np.random.default_rng(7)
    for m, n in ((0, 50), (1, 40), (30, 500), (400, 3000)):
        rank = rng.permutation(m).astype(np.int64)
        sw_ts = np.sort(rng.integers(0, 60, m)).astype(np.int64)
        sw_next = rng.integers(0, 5, m).astype(pid_type)
        pos = rng.integers(-1, max(m, 1), n).astype(np.int64) if m else np.full(n, -1)
        ets = rng.integers(0, 60, n).astype(np.int64)
        epid = rng.integers(0, 5, n).astype(np.int32)
        seg = np.full(n, -7, dtype=np.int64)
        status = np.full(n, 9, dtype=np.int8)
        _passes.event_segments(pos, rank, ets, epid, sw_ts, sw_next, seg, status)
        want_seg, want_status = _segments_numpy(pos, rank, ets, epid, sw_ts, sw_next)
        assert seg.tolist() == want_seg.tolist()
        assert status.tolist() == want_status.tolist()
        assert {0, 1, 2, 3} >= set(status.tolist())
        if m >= 30:
            assert {0, 1, 2, 3} == set(status.tolist())  # (every kind met)


def test_event_segments_refuses_what_it_cannot_read():
    rank = np.array([2, 0, 1], dtype=np.int64)
    ts = np.array([1, 2, 3], dtype=np.int64)
    nxt = np.array([5, 6, 7], dtype=np.int32)
    ets = np.array([1, 2], dtype=np.int64)
    epid = np.array([5, 6], dtype=np.int32)
    seg, status = np.empty(2, np.int64), np.empty(2, np.int8)
    for bad in ([0, 3], [5, 0], [0, np.iinfo(np.int64).max]):  # positions past the switches
        with pytest.raises(ValueError, match="outside"):
            _passes.event_segments(np.array(bad), rank, ets, epid, ts, nxt, seg, status)
    for bad_rank in ([0, 1, 3], [0, -1, 1]):  # ranks outside the switches
        with pytest.raises(ValueError, match="outside"):
            _passes.event_segments(np.array([2, 1]), np.array(bad_rank), ets, epid, ts, nxt,
                                   seg, status)  # fmt: skip
    with pytest.raises(ValueError, match="lengths"):
        _passes.event_segments(np.array([0, 1]), rank, ets, epid, ts[:2], nxt, seg, status)
    with pytest.raises(ValueError, match="lengths"):
        _passes.event_segments(np.array([0, 1]), rank, ets, epid[:1], ts, nxt, seg, status)
    with pytest.raises(ValueError, match="lengths"):
        _passes.event_segments(np.array([0, 1]), rank, ets, epid, ts, nxt, seg[:1], status)
    with pytest.raises(TypeError):
        _passes.event_segments(np.array([0.0, 1.0]), rank, ets, epid, ts, nxt, seg, status)
    with pytest.raises(TypeError):
        _passes.event_segments(np.array([0, 1]), rank, ets, epid, ts, nxt, seg,
                               status.astype(np.int64))  # fmt: skip
    ro = np.empty(2, np.int64)
    ro.setflags(write=False)
    with pytest.raises((ValueError, BufferError, TypeError)):
        _passes.event_segments(np.array([0, 1]), rank, ets, epid, ts, nxt, ro, status)
    _passes.event_segments(np.array([-1, 1]), rank, ets, epid, ts, nxt, seg, status)
    assert seg.tolist() == [-1, 0] and status.tolist() == [0, 2]


def test_group_running_max_as_a_loop_per_group():
    """The runs' reach (completeness.reach): a running maximum restarted at each
    group, as one accumulate per group gives it, at the ends of int64 too."""
    rng = np.random.default_rng(5)
    extremes = [np.iinfo(np.int64).min, np.iinfo(np.int64).max]
    for n in (0, 1, 2, 50, 3000):
        values = rng.integers(-1000, 1000, n).astype(np.int64)
        if n >= 50:
            values[rng.integers(0, n, 6)] = rng.choice(extremes, 6)
        new = rng.random(n) < 0.1
        out = np.full(n, -7, dtype=np.int64)
        _passes.group_running_max(values, new, out)
        want = values.copy()
        bounds = np.append(np.flatnonzero(np.concatenate([[True], new[1:]])), n) if n else []
        for a, b in zip(bounds[:-1], bounds[1:]):
            np.maximum.accumulate(want[a:b], out=want[a:b])
        assert out.tolist() == want.tolist()


def test_group_running_max_refuses_what_it_cannot_read():
    v = np.array([3, 1, 2], dtype=np.int64)
    new = np.array([True, False, True])
    out = np.empty(3, dtype=np.int64)
    with pytest.raises(ValueError, match="lengths"):
        _passes.group_running_max(v, new[:2], out)
    with pytest.raises(ValueError, match="lengths"):
        _passes.group_running_max(v, new, out[:2])
    with pytest.raises(TypeError):
        _passes.group_running_max(v.astype(np.int32), new, out)
    with pytest.raises(TypeError):
        _passes.group_running_max(v, new, out.astype(np.int32))
    _passes.group_running_max(v, new, out)
    assert out.tolist() == [3, 3, 2]


def _timeline_numpy(sw_ts, sw_end, sw_cpu, sw_pid, clean, r_seg, r_start, r_end, r_pid, t_end):
    """completeness._fill_unknown's rows before the pass (main 3574b72): the known rows
    sorted stably by (CPU, start), a hole after each that the next does not meet, one
    from each CPU's first switch to its first row; all sorted again. As tuples (cpu,
    start, end, pid, state)."""
    k = np.flatnonzero(clean)
    cpu = np.concatenate([sw_cpu[k], sw_cpu[r_seg]])
    start = np.concatenate([sw_ts[k], r_start])
    end = np.concatenate([sw_end[k], r_end])
    pid = np.concatenate([sw_pid[k], r_pid]).astype(np.int32)
    o = np.lexsort((start, cpu))
    cpu, start, end, pid = cpu[o], start[o], end[o], pid[o]
    rows = [(c, s, e, p, 1 if p == 0 else 0) for c, s, e, p in zip(cpu, start, end, pid)]
    for i in range(len(cpu)):
        nxt = start[i + 1] if i + 1 < len(cpu) and cpu[i + 1] == cpu[i] else t_end
        if nxt > end[i]:
            rows.append((cpu[i], end[i], nxt, -1, 2))
    for c in np.unique(sw_cpu):
        f_ts = sw_ts[np.flatnonzero(sw_cpu == c)[0]]
        mine = start[cpu == c]
        f_end = mine[0] if len(mine) else t_end
        if f_end > f_ts:
            rows.append((c, f_ts, f_end, -1, 2))
    order = sorted(range(len(rows)), key=lambda i: (rows[i][0], rows[i][1], i))
    return [tuple(int(x) for x in rows[i]) for i in order]


def _timeline_case(rng, n_cpus, per_cpu):
    """Segments of n_cpus CPUs in (CPU, time) order (some of no length), some suspect
    with runs in them (in time order, gaps between), as _timeline_and_runs gives."""
    sw_cpu, sw_ts = [], []
    for c in range(n_cpus):
        m = int(rng.integers(0, per_cpu + 1))
        sw_cpu += [c] * m
        sw_ts += sorted(rng.integers(0, 1000, m).tolist())
    n = len(sw_ts)
    sw_cpu, sw_ts = np.array(sw_cpu, np.int64), np.array(sw_ts, np.int64)
    t_end = 1000 + int(rng.integers(0, 2))
    last = np.ones(n, bool)
    last[:-1] = sw_cpu[1:] != sw_cpu[:-1]
    sw_end = np.empty(n, np.int64)
    sw_end[:-1] = sw_ts[1:]
    sw_end[last] = t_end
    clean = rng.random(n) < 0.6
    r_seg, r_start, r_end = [], [], []
    for k in np.flatnonzero(~clean).tolist():
        cuts = sorted(rng.integers(sw_ts[k], sw_end[k] + 1, 2 * int(rng.integers(0, 4))).tolist())
        for a, b in zip(cuts[::2], cuts[1::2]):
            if b > a:
                r_seg.append(k), r_start.append(a), r_end.append(b)
    r_seg, r_start, r_end = (np.array(x, np.int64) for x in (r_seg, r_start, r_end))
    sw_pid = rng.integers(0, 4, n).astype(np.int32)
    r_pid = rng.integers(0, 4, len(r_seg)).astype(np.int64)
    return sw_ts, sw_end, sw_cpu, sw_pid, clean, r_seg, r_start, r_end, r_pid, t_end


def _timeline_rows(sw_ts, sw_end, sw_cpu, sw_pid, clean, r_seg, r_start, r_end, r_pid, t_end,
                   cap=None):  # fmt: skip
    if cap is None:  # (completeness._timeline's bound: runs lie in suspect segments)
        cap = len(sw_ts) + 2 * len(r_seg) + len(np.unique(sw_cpu))
    out = [np.full(cap, -9, t) for t in (np.int32, np.int64, np.int64, np.int32, np.int32)]
    state = np.full(cap, 9, np.int8)
    sw_code = np.arange(len(sw_ts), dtype=np.int32)
    r_code = np.arange(len(r_seg), dtype=np.int32) + 10_000
    m = _passes.timeline_rows(sw_ts, sw_end, sw_cpu, sw_pid, sw_code, clean.view(np.uint8),
                              r_seg, r_start, r_end, r_pid, r_code, t_end, *out, state)  # fmt: skip
    cpu, start, end, pid, code = (a[:m] for a in out)
    # a row's code: its segment's (clean) or run's, -1 for a hole
    want_code = np.where(state[:m] == 2, -1, code)
    assert (code == want_code).all()
    return [tuple(int(x) for x in r) for r in zip(cpu, start, end, pid, state[:m])]


@pytest.mark.parametrize("seed", range(6))
def test_timeline_rows_as_the_sorts(seed):
    rng = np.random.default_rng(seed)
    for n_cpus, per_cpu in ((1, 0), (1, 3), (3, 8), (4, 60)):
        case = _timeline_case(rng, n_cpus, per_cpu)
        assert _timeline_rows(*case) == _timeline_numpy(*case)


def test_timeline_rows_refuses_what_it_cannot_read():
    ts = np.array([0, 5, 2], dtype=np.int64)
    end = np.array([5, 10, 10], dtype=np.int64)
    cpu = np.array([0, 0, 1], dtype=np.int32)
    pid = np.array([1, 2, 3], dtype=np.int32)
    clean = np.array([True, False, True])
    one = np.array([1], dtype=np.int64)
    ok = (ts, end, cpu, pid, clean, np.array([1]), np.array([6]), np.array([7]), one, 10)
    assert _timeline_rows(*ok) == [(0, 0, 5, 1, 0), (0, 5, 6, -1, 2), (0, 6, 7, 1, 0),
                                   (0, 7, 10, -1, 2), (1, 2, 10, 3, 0)]  # fmt: skip
    for bad_seg in ([3], [-1], [np.iinfo(np.int64).max]):  # runs outside the segments
        with pytest.raises(ValueError, match="segments"):
            _timeline_rows(*ok[:5], np.array(bad_seg), *ok[6:])
    with pytest.raises(ValueError, match="segments"):  # runs' segments not ascending
        _timeline_rows(*ok[:5], np.array([2, 1]), np.array([6, 6]), np.array([7, 7]),
                       np.array([1, 1]), 10)  # fmt: skip
    with pytest.raises(ValueError, match="hold"):  # more rows than the outputs hold
        _timeline_rows(*ok, cap=4)
    with pytest.raises(ValueError, match="lengths"):
        _timeline_rows(ts[:2], *ok[1:])


def _runs_order(seg, sw_pid, sw_ts, g_pid, g_start, lo=None, span=None):
    pids = np.concatenate([sw_pid, g_pid]).astype(np.int64)
    lo = int(pids.min()) if lo is None and len(pids) else (0 if lo is None else lo)
    span = int(pids.max()) - lo + 1 if span is None and len(pids) else (1 if span is None else span)
    out = np.full(len(seg) + len(g_pid), -99, dtype=np.int64)
    _passes.runs_order(seg, sw_pid, sw_ts, g_pid, g_start, lo, span, out)
    return out


@pytest.mark.parametrize("pid_type", [np.int32, np.int64])
def test_runs_order_as_the_lexsort(pid_type):
    """The order is np.lexsort's of (pid, start) over the segments' runs, then the
    groups': ties (one task's runs starting at once, on two CPUs) in that order."""
    rng = np.random.default_rng(11)
    for n, ns, ng, tasks in ((0, 0, 0, 3), (5, 3, 0, 2), (1, 0, 4, 2), (300, 200, 40, 6),
                             (5000, 4000, 300, 40)):  # fmt: skip
        cpus = 3
        sw_cpu = np.sort(rng.integers(0, cpus, n))
        sw_ts = np.concatenate(
            [np.sort(rng.integers(0, 400, int((sw_cpu == c).sum()))) for c in range(cpus)]
        ).astype(np.int64)
        sw_pid = rng.integers(1, tasks + 1, n).astype(pid_type)
        seg = (
            np.sort(rng.choice(n, ns, replace=False)).astype(np.int64)
            if n
            else np.zeros(0, np.int64)
        )
        g_pid = rng.integers(1, tasks + 1, ng).astype(pid_type)
        g_start = rng.integers(0, 400, ng).astype(np.int64)
        out = _runs_order(seg, sw_pid, sw_ts, g_pid, g_start)
        pid = np.concatenate([sw_pid[seg], g_pid])
        start = np.concatenate([sw_ts[seg], g_start])
        want = np.lexsort((start, pid))
        src = np.concatenate([seg, ~np.arange(ng, dtype=np.int64)])
        assert out.tolist() == src[want].tolist()
        if ns > 1000:
            assert (np.diff(start[want])[np.diff(pid[want]) == 0] == 0).any()  # (ties met)


def test_runs_order_refuses_what_it_cannot_read():
    sw_pid = np.array([1, 2, 3], dtype=np.int32)
    sw_ts = np.array([1, 2, 3], dtype=np.int64)
    g_pid, g_start = np.array([2], dtype=np.int64), np.array([0], dtype=np.int64)
    assert _runs_order(np.array([2, 0, 1]), sw_pid, sw_ts, g_pid, g_start).tolist() == [
        0, -1, 1, 2]  # fmt: skip
    for bad in ([0, 3], [-1], [np.iinfo(np.int64).max]):  # segments past the switches
        with pytest.raises(ValueError, match="outside"):
            _runs_order(np.array(bad), sw_pid, sw_ts, g_pid, g_start)
    for lo, span in ((2, 5), (0, 2)):  # pids outside the range
        with pytest.raises(ValueError, match="outside"):
            _runs_order(np.array([0, 2]), sw_pid, sw_ts, g_pid, g_start, lo, span)
    with pytest.raises(ValueError, match="span"):
        _runs_order(np.array([0]), sw_pid, sw_ts, g_pid, g_start, 0, 1 << 40)
    with pytest.raises(ValueError, match="lengths"):
        _runs_order(np.array([0]), sw_pid[:2], sw_ts, g_pid, g_start)


def _cpu_first(g_cpu, lo, span):
    """Per CPU of [lo, lo + span), the index of its first switch in (CPU, time) order."""
    return np.searchsorted(np.sort(g_cpu), np.arange(lo, lo + span)).astype(np.int64)


def _walk_case(rng, m, n, cpus):
    """Switches in time order on cpus CPUs (ties in time), their (CPU, time) rank, and
    events in time order (some on a CPU without switches)."""
    g_ts = np.sort(rng.integers(0, 60, m)).astype(np.int64)
    g_cpu = rng.integers(0, cpus, m).astype(np.int32)
    order = np.lexsort((g_ts, g_cpu))
    rank = np.empty(m, dtype=np.int64)
    rank[order] = np.arange(m)
    sw_ts = g_ts[order]
    sw_next = rng.integers(0, 5, m).astype(np.int32)[order]
    ets = np.sort(rng.integers(0, 60, n)).astype(np.int64)
    ecpu = rng.integers(0, cpus + 1, n).astype(np.int64)
    epid = rng.integers(0, 5, n).astype(np.int32)
    return ets, ecpu, epid, g_ts, g_cpu, rank, sw_ts, sw_next


@pytest.mark.parametrize("seed", range(4))
def test_event_segments_walk_as_the_search(seed):
    """The walk gives what the as-of search and event_segments give."""
    from schedwake.model._util import asof_index

    rng = np.random.default_rng(seed)
    for m, n, cpus in ((0, 20, 1), (1, 30, 1), (40, 300, 3), (500, 4000, 4)):
        ets, ecpu, epid, g_ts, g_cpu, rank, sw_ts, sw_next = _walk_case(rng, m, n, cpus)
        seg, status = np.full(n, -7, np.int64), np.full(n, 9, np.int8)
        lo, span = (int(g_cpu.min()), int(np.ptp(g_cpu)) + 1) if m else (0, 1)
        first = _cpu_first(g_cpu, lo, span)
        assert _passes.event_segments_walk(ets, ecpu, epid, g_ts, g_cpu, first, sw_ts, sw_next,
                                           lo, span, seg, status)  # fmt: skip
        pos = asof_index(ets, ecpu, g_ts, g_cpu, "backward", True)
        want_seg, want_status = np.empty(n, np.int64), np.empty(n, np.int8)
        _passes.event_segments(pos, rank, ets, epid, sw_ts, sw_next, want_seg, want_status)
        assert seg.tolist() == want_seg.tolist()
        assert status.tolist() == want_status.tolist()
        if m >= 40:
            assert {0, 1, 2, 3} == set(status.tolist())  # (every kind met)


def test_event_segments_walk_refuses_what_it_cannot_read():
    rng = np.random.default_rng(5)
    ets, ecpu, epid, g_ts, g_cpu, rank, sw_ts, sw_next = _walk_case(rng, 30, 100, 3)
    seg, status = np.empty(100, np.int64), np.empty(100, np.int8)

    def walk(ets=ets, g_cpu=g_cpu, first=None, lo=0, span=3, seg=seg):
        first = _cpu_first(g_cpu, lo, span) if first is None else first
        return _passes.event_segments_walk(ets, ecpu, epid, g_ts, g_cpu, first, sw_ts, sw_next,
                                           lo, span, seg, status)  # fmt: skip

    assert walk()
    assert not walk(ets=ets[::-1].copy())  # events not in time order: no answer
    with pytest.raises(ValueError, match="CPU outside"):  # a switch's CPU past the range
        walk(span=2)
    with pytest.raises(ValueError, match="CPU outside"):
        walk(lo=1)
    good = _cpu_first(g_cpu, 0, 3)
    for bad in (good + 30, good - 30, np.full(3, np.iinfo(np.int64).max)):
        # segments past the switches, before them, wrapping round
        with pytest.raises(ValueError, match="outside the switches"):
            walk(first=bad)
    with pytest.raises(ValueError, match="lengths"):  # a first of each CPU of the range
        walk(first=good[:2])
    with pytest.raises(ValueError, match="span"):
        walk(first=good, span=1 << 40)
    with pytest.raises(ValueError, match="lengths"):
        walk(seg=seg[:5])


def _runs_columns_case(rng, m, ng):
    sw = (
        np.sort(rng.integers(0, 100, m)).astype(np.int64),  # start
        rng.integers(100, 200, m).astype(np.int64),  # end
        rng.integers(0, 4, m).astype(np.int32),  # cpu
        rng.integers(1, 9, m).astype(np.int64),  # pid
        rng.integers(-1, 5, m).astype(np.int32),  # code
        rng.random(m) < 0.3,  # last
    )
    g = (
        rng.integers(0, 100, ng).astype(np.int64),  # start
        rng.integers(100, 200, ng).astype(np.int64),  # end
        rng.integers(0, 100, ng).astype(np.int64),  # earliest
        rng.integers(0, 4, ng).astype(np.int64),  # cpu
        rng.integers(1, 9, ng).astype(np.int32),  # pid
        rng.integers(-1, 5, ng).astype(np.int32),  # code
        rng.random(ng) < 0.5,  # exact
        rng.integers(0, 3, ng).astype(np.int8),  # endkind
    )
    return sw, g


def _runs_columns(src, sw, g, n=None):
    n = len(src) if n is None else n
    out = tuple(np.full(n, 9, t) for t in (np.int32, np.int32, np.int32, np.int64, np.int64,
                                             np.bool_, np.int64, np.int8))  # fmt: skip
    _passes.runs_columns(src, sw, g, 0, 2, out)
    return out


def test_runs_columns_as_the_gathers():
    rng = np.random.default_rng(9)
    for m, ng in ((0, 0), (0, 5), (6, 0), (300, 40)):
        sw, g = _runs_columns_case(rng, m, ng)
        src = rng.permutation(np.concatenate([np.arange(m), ~np.arange(ng)])).astype(np.int64)
        got = _runs_columns(src, sw, g)
        seg = src >= 0
        k, j = src[seg], ~src[~seg]
        s_start, s_end, s_cpu, s_pid, s_code, s_last = sw
        g_start, g_end, g_earliest, g_cpu, g_pid, g_code, g_exact, g_endkind = g
        want = (
            (s_pid[k], g_pid[j]),
            (s_code[k], g_code[j]),
            (s_cpu[k], g_cpu[j]),
            (s_start[k], g_start[j]),
            (s_end[k], g_end[j]),
            (np.ones(len(k), bool), g_exact[j]),
            (s_start[k], g_earliest[j]),
            (np.where(s_last[k], 2, 0), g_endkind[j]),
        )
        for col, (of_seg, of_group) in zip(got, want):
            assert col[seg].tolist() == of_seg.tolist()
            assert col[~seg].tolist() == of_group.tolist()


def test_runs_columns_refuses_what_it_cannot_read():
    sw, g = _runs_columns_case(np.random.default_rng(1), 4, 3)
    for bad in ([4], [~3], [np.iinfo(np.int64).max], [np.iinfo(np.int64).min]):
        with pytest.raises(ValueError, match="outside"):
            _runs_columns(np.array(bad, dtype=np.int64), sw, g)
    with pytest.raises(ValueError, match="lengths"):
        _runs_columns(np.array([0, 1], dtype=np.int64), sw, g, n=1)
    with pytest.raises(ValueError, match="lengths"):
        _runs_columns(np.array([0], dtype=np.int64), (*sw[:5], sw[5][:2]), g)


def _unwoken(sts, nkey, pkey, nxt, asleep, wakes, lo=None, span=None):
    if lo is None or span is None:
        keys = [k for k in (nkey, pkey, *(k for _, k in wakes)) if len(k)]
        lo = min(int(k.min()) for k in keys)
        span = max(int(k.max()) for k in keys) - lo + 1
    outs = [np.full(len(sts), -99, np.int64) for _ in range(3)]
    m = _passes.unwoken_candidates(sts, nkey, pkey, nxt, asleep.view(np.uint8), tuple(wakes),
                                   lo, span, *outs)  # fmt: skip
    return None if m < 0 else tuple(o[:m] for o in outs)


@pytest.mark.parametrize("key_type", [np.int32, np.int64])
def test_unwoken_candidates_as_the_searches(key_type):
    """The walk finds what the as-of searches find (completeness's way for tables out of
    time order, as it was for all before the walk, main edddf36): switch-outs strictly before the
    switch-in (ties of one time in their order), wake-ups at it too, in 0 to 3
    tables; pid 0 (idle) never a candidate."""
    rng = np.random.default_rng(5)
    for n, nw, tasks, span_t in ((0, 1, 3, 10), (1, 0, 2, 5), (50, 1, 4, 30),
                                 (3000, 3, 12, 2000), (4000, 2, 30, 800)):  # fmt: skip
        sts = np.sort(rng.integers(0, span_t, n)).astype(np.int64)
        nxt = rng.integers(0, tasks, n).astype(key_type)
        pkey = rng.integers(0, tasks, n).astype(key_type)
        asleep = rng.random(n) < 0.6
        wakes = []
        for _ in range(nw):
            m = int(rng.integers(0, n // 3 + 2))
            wakes.append((np.sort(rng.integers(0, span_t, m)).astype(np.int64),
                          rng.integers(0, tasks, m).astype(key_type)))  # fmt: skip
        if n == 0:
            continue
        got = _unwoken(sts, nxt, pkey, nxt, asleep, wakes)
        want = _unwoken_searched(sts, nxt, pkey, nxt, asleep, wakes)
        assert got is not None
        for g, w in zip(got, want):
            assert g.tolist() == w.tolist()
        if n > 1000:
            assert len(want[0]) and (want[2] > np.iinfo(np.int64).min).any()  # (both met)


def test_unwoken_candidates_refuses_what_it_cannot_read():
    sts = np.array([1, 2, 3], dtype=np.int64)
    key = np.array([1, 2, 1], dtype=np.int32)
    asleep = np.ones(3, dtype=bool)
    wake = (np.array([2], dtype=np.int64), np.array([2], dtype=np.int32))
    assert _unwoken(sts, key, key, key, asleep, [wake]) is not None
    # not in time order: nothing written, the caller searches
    assert _unwoken(sts[::-1].copy(), key, key, key, asleep, [wake]) is None
    late = (np.array([3, 2], dtype=np.int64), np.array([1, 1], dtype=np.int32))
    assert _unwoken(sts, key, key, key, asleep, [late]) is None
    for lo, span in ((2, 5), (0, 2)):  # keys outside the range
        with pytest.raises(ValueError, match="outside"):
            _unwoken(sts, key, key, key, asleep, [wake], lo, span)
    with pytest.raises(ValueError, match="outside"):  # a wake-up's key outside
        _unwoken(sts, key, key, key, asleep, [(wake[0], np.array([9], np.int32))], 0, 3)
    with pytest.raises(ValueError, match="span"):
        _unwoken(sts, key, key, key, asleep, [wake], 0, 1 << 40)
    with pytest.raises(ValueError, match="lengths"):
        _unwoken(sts, key[:2], key, key, asleep, [wake])
    with pytest.raises(ValueError, match="lengths"):
        _unwoken(sts, key, key, key, asleep, [(wake[0], key)])
    with pytest.raises(ValueError, match="at most"):
        _unwoken(sts, key, key, key, asleep, [wake] * 5)
    with pytest.raises(TypeError):
        _unwoken(sts, key, key, key, asleep, [(wake[0],)], 0, 3)


def _rewoken(ts, key, r_start, r_end, r_key, lo=None, span=None):
    if lo is None:
        keys = np.concatenate([key, r_key]).astype(np.int64)
        lo, span = int(keys.min()), int(np.ptp(keys)) + 1
    out = np.full(len(ts), -99, np.int64)
    m = _passes.rewoken_walk(ts, key, r_start, r_end, r_key, lo, span, out)
    return None if m < 0 else out[:m]


def _runs_case(rng, m, tasks, span_t, key_type):
    """Runs by (pid, start), ties in start, some ending before -1 (no reach of -1)."""
    r_key = np.sort(rng.integers(1, tasks + 1, m)).astype(key_type)
    r_start = rng.integers(-5, span_t, m).astype(np.int64)
    o = np.lexsort((r_start, r_key))
    r_key, r_start = r_key[o], r_start[o]
    r_end = r_start + rng.integers(0, span_t // 4 + 1, m)
    return r_start, r_end, r_key


@pytest.mark.parametrize("key_type", [np.int32, np.int64])
def test_rewoken_walk_as_the_searches(key_type):
    """The walk finds the wake-ups the as-of searches find: the previous wake-up
    strictly earlier (ties of one time), the runs begun by the wake-up (at it too), a
    task without runs, times below zero (no run reaches the fill, -1)."""
    rng = np.random.default_rng(9)
    for n, m, tasks, span_t in ((2, 0, 2, 5), (40, 10, 3, 30), (3000, 900, 15, 1500),
                                (5000, 3000, 40, 800)):  # fmt: skip
        ts = np.sort(rng.integers(-10, span_t, n)).astype(np.int64)
        key = rng.integers(1, tasks + 1, n).astype(key_type)
        r_start, r_end, r_key = _runs_case(rng, m, tasks - 1, span_t, key_type)
        new = np.ones(m, dtype=bool)
        new[1:] = r_key[1:] != r_key[:-1]
        reach = np.empty(m, dtype=np.int64)
        _passes.group_running_max(r_end, new, reach)
        got = _rewoken(ts, key, r_start, r_end, r_key, 0, tasks + 1)
        want = _rewoken_searched(ts, key, r_start, r_key, reach)
        assert got is not None and got.tolist() == want.tolist()
        if n > 1000:
            assert 0 < len(want) < n // 2


def test_rewoken_walk_refuses_what_it_cannot_read():
    ts = np.array([1, 2, 3], dtype=np.int64)
    key = np.array([1, 2, 1], dtype=np.int32)
    r_start, r_end = np.array([0, 2, 1], np.int64), np.array([5, 3, 4], np.int64)
    r_key = np.array([1, 1, 2], np.int32)
    assert _rewoken(ts, key, r_start, r_end, r_key) is not None
    assert _rewoken(ts[::-1].copy(), key, r_start, r_end, r_key) is None  # not in time order
    assert _rewoken(ts, key, np.array([2, 0, 1], np.int64), r_end, r_key) is None  # not by start
    two = np.array([1, 2, 1], np.int32)  # a task's runs in two ranges
    assert _rewoken(ts, key, np.array([0, 1, 2], np.int64), r_end, two) is None
    for lo, span in ((2, 5), (0, 2)):  # keys outside the range
        with pytest.raises(ValueError, match="outside"):
            _rewoken(ts, key, r_start, r_end, r_key, lo, span)
    with pytest.raises(ValueError, match="span"):
        _rewoken(ts, key, r_start, r_end, r_key, 0, 1 << 40)
    with pytest.raises(ValueError, match="lengths"):
        _rewoken(ts, key[:2], r_start, r_end, r_key)
    with pytest.raises(ValueError, match="lengths"):
        _rewoken(ts, key, r_start, r_end[:2], r_key)
