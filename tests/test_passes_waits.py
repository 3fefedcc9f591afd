"""The compiled passes of the waits model (_pass_waits.c), and the as-of walk of
completeness's and the waits' searches (_pass_asof.c), give what the NumPy versions
gave, on random inputs full of ties, and refuse what they cannot read (keys outside the
range told, arrays of other lengths or types) with an error, never a read out of
bounds."""

from __future__ import annotations

import numpy as np
import pytest

from schedwake.model import _passes

_BIG = np.iinfo(np.int64).max


def test_asof_merge_checks_what_it_is_given():
    """The as-of walk over two time-ordered sides (_pass_asof.c, asof_index's first
    path) refuses keys outside the range it is told and arrays of other lengths before
    writing, and leaves sides out of time order to the search."""
    lts = np.array([1, 2, 3], dtype=np.int64)
    key = np.array([0, 1, 2], dtype=np.int64)
    out = np.full(3, -7, dtype=np.int64)
    assert _passes.asof_merge(lts, key, lts, key, 0, 3, True, True, out)
    assert out.tolist() == [0, 1, 2]
    for lo, span in ((1, 3), (0, 2), (-5, 2)):  # a key below lo, at lo + span, above
        out[:] = -7
        with pytest.raises(ValueError, match="outside"):
            _passes.asof_merge(lts, key, lts, key, lo, span, True, True, out)
        assert (out == -7).all()
    extreme = np.array([np.iinfo(np.int64).min, 0, np.iinfo(np.int64).max], dtype=np.int64)
    with pytest.raises(ValueError, match="outside"):
        _passes.asof_merge(lts, extreme, lts, key, 0, 3, False, True, out)
    with pytest.raises(ValueError, match="outside"):
        _passes.asof_merge(lts, key, lts, extreme, 0, 3, False, True, out)
    # out of time order: not answered (False), nothing written
    out[:] = -7
    assert not _passes.asof_merge(lts[::-1].copy(), key, lts, key, 0, 3, True, True, out)
    assert not _passes.asof_merge(lts, key, lts[::-1].copy(), key, 0, 3, False, True, out)
    assert (out == -7).all()
    with pytest.raises(ValueError, match="lengths"):
        _passes.asof_merge(lts, key[:2], lts, key, 0, 3, True, True, out)
    with pytest.raises(ValueError, match="lengths"):
        _passes.asof_merge(lts, key, lts, key[:2], 0, 3, True, True, out)
    with pytest.raises(ValueError, match="read-only"):
        ro = np.zeros(3, np.int64)
        ro.setflags(write=False)
        _passes.asof_merge(lts, key, lts, key, 0, 3, True, True, ro)
    empty = np.zeros(0, np.int64)
    assert _passes.asof_merge(empty, empty, lts, key, 0, 3, True, True, empty)
    out[:] = -7
    assert _passes.asof_merge(lts, key, empty, empty, 0, 3, False, False, out)
    assert out.tolist() == [-1, -1, -1]


_OUT_R, _OUT_S, _WAKE, _IN = 0, 1, 2, 3


def _epochs_numpy(pid, kind, row, ts, ns, rewoken_unseen):
    """The state machine as waits.build did it in NumPy (main a86bab6)."""
    n = len(ts)
    pos = np.arange(n)
    first = np.ones(n, dtype=bool)
    first[1:] = pid[1:] != pid[:-1]
    out = (kind == _OUT_R) | (kind == _OUT_S)
    epoch = np.cumsum(first | out) - 1
    heads = np.flatnonzero(first | out)
    head_kind, head_first = kind[heads], first[heads]
    ne = len(heads)
    armed = np.full(ne, _BIG, dtype=np.int64)
    armed[head_kind == _OUT_R] = heads[head_kind == _OUT_R]
    first_wake = np.full(ne, _BIG, dtype=np.int64)
    w = kind == _WAKE
    np.minimum.at(first_wake, epoch[w], pos[w])
    sleeping = (head_kind == _OUT_S) | (head_first & (head_kind == _WAKE))
    armed[sleeping] = first_wake[sleeping]
    seen_in = head_first & (head_kind == _IN) & (row[heads] < 2 * ns)
    armed[seen_in] = heads[seen_in]
    ins = np.flatnonzero(kind == _IN)
    after = ins >= armed[epoch[ins]]
    end = np.full(ne, _BIG, dtype=np.int64)
    np.minimum.at(end, epoch[ins[after]], ins[after])
    later = w & (pos > first_wake[epoch])
    second_wake = np.full(ne, _BIG, dtype=np.int64)
    np.minimum.at(second_wake, epoch[later], pos[later])
    has2 = second_wake != _BIG
    unseen_end = np.zeros(ne, dtype=bool)
    if rewoken_unseen and has2.any():
        fin = end != _BIG
        w2 = np.where(has2, ts[np.minimum(second_wake, n - 1)], _BIG)
        e2 = np.where(fin, ts[np.minimum(end, n - 1)], _BIG)
        unseen_end = sleeping & has2 & (w2 < e2)
    done = np.flatnonzero((end != _BIG) & ~unseen_end)
    hk = head_kind[done]
    wkind = np.where(seen_in[done], 2, np.where(hk == _OUT_R, 1, 0))
    return armed[done].tolist(), end[done].tolist(), heads[done].tolist(), wkind.tolist()


def _epochs_c(pid, kind, row, ts, ns, rewoken_unseen, perm=None):
    """wait_epochs on the rows stored in another order (``perm``: sorted row i at
    ``perm[i]``), its answers as sorted positions."""
    n = len(ts)
    perm = np.arange(n) if perm is None else perm
    at = np.empty(n, dtype=np.int64)
    at[perm] = np.arange(n)
    store = [np.empty_like(x) for x in (pid, kind, row, ts)]
    for x, y in zip(store, (pid, kind, row, ts)):
        x[perm] = y
    a, e, h = (np.full(n, -7, dtype=np.int64) for _ in range(3))
    k = np.full(n, -7, dtype=np.int8)
    src = np.ascontiguousarray(perm, dtype=np.int64)
    m = _passes.wait_epochs(src, *store[:3], store[3], ns, rewoken_unseen, a, e, h, k)
    return at[a[:m]].tolist(), at[e[:m]].tolist(), at[h[:m]].tolist(), k[:m].tolist()


def test_wait_epochs_matches_numpy():
    rng = np.random.default_rng(11)
    for _ in range(400):
        n = int(rng.integers(1, 40))
        pid = np.sort(rng.integers(1, 4, n)).astype(np.int64)
        kind = rng.integers(0, 4, n).astype(np.int8)
        ts = np.sort(rng.integers(0, 10, n)).astype(np.int64)  # (within a task: in order)
        ns = 5
        row = rng.integers(0, 3 * ns, n).astype(np.int64)
        perm = rng.permutation(n)
        for unseen in (True, False):
            want = _epochs_numpy(pid, kind, row, ts, ns, unseen)
            assert _epochs_c(pid, kind, row, ts, ns, unseen) == want
            assert _epochs_c(pid, kind, row, ts, ns, unseen, perm) == want


def test_wait_epochs_checks_what_it_is_given():
    pid = np.array([1, 1, 1], dtype=np.int64)
    kind = np.array([_OUT_S, _WAKE, _IN], dtype=np.int8)
    row = np.array([0, -1, 4], dtype=np.int64)
    ts = np.array([1, 2, 3], dtype=np.int64)
    assert _epochs_c(pid, kind, row, ts, 2, True) == ([1], [2], [0], [0])
    # any row values (they are compared, never read through)
    huge = np.array([np.iinfo(np.int64).min, -5, np.iinfo(np.int64).max], dtype=np.int64)
    _epochs_c(pid, kind, huge, ts, 2, True)
    for bad in (-1, 4, 127):
        with pytest.raises(ValueError, match="kind"):
            _epochs_c(pid, np.array([_OUT_S, bad, _IN], dtype=np.int8), row, ts, 2, True)
    with pytest.raises(ValueError, match="ns"):
        _epochs_c(pid, kind, row, ts, -1, True)
    z, k8 = np.zeros(3, np.int64), np.zeros(3, np.int8)
    src = np.arange(3, dtype=np.int64)
    for bad_src in ([0, 1, 3], [-1, 0, 1], [0, np.iinfo(np.int64).min, 2]):
        with pytest.raises(ValueError, match="src entry outside"):
            _passes.wait_epochs(np.array(bad_src, np.int64), pid, kind, row, ts, 2, True,
                                z, z, z, k8)  # fmt: skip
    with pytest.raises(ValueError, match="one slot a row"):
        _passes.wait_epochs(src, pid[:2], kind, row, ts, 2, True, z, z, z, k8)
    with pytest.raises(ValueError, match="one slot a row"):
        _passes.wait_epochs(src, pid, kind, row, ts[:2], 2, True, z, z, z, k8)
    with pytest.raises(ValueError, match="one slot a src entry"):
        _passes.wait_epochs(src, pid, kind, row, ts, 2, True, z[:2], z, z, k8)
    with pytest.raises(ValueError, match="one slot a src entry"):
        _passes.wait_epochs(src, pid, kind, row, ts, 2, True, z, z, z, k8[:2])
    # fewer src entries than rows (the rows of the idle task left out): fine
    _passes.wait_epochs(src[:2], pid, kind, row, ts, 2, True, z[:2], z[:2], z[:2], k8[:2])
    with pytest.raises(TypeError, match="integers"):
        _passes.wait_epochs(src, pid, kind.astype(np.int64), row, ts, 2, True, z, z, z, z)
    with pytest.raises(TypeError, match="integers"):
        _passes.wait_epochs(src, pid.astype(np.int32), kind, row, ts, 2, True, z, z, z, k8)
    with pytest.raises(TypeError, match="integers"):
        _passes.wait_epochs(src.astype(np.float64), pid, kind, row, ts, 2, True, z, z, z, k8)
    e = np.zeros(0, np.int64)
    assert _passes.wait_epochs(e, e, np.zeros(0, np.int8), e, e, 0, True, e, e, e,
                               np.zeros(0, np.int8)) == 0  # fmt: skip


def test_task_order_matches_numpy():
    """The rows listed in time order, but pid 0's, stably by task."""
    rng = np.random.default_rng(13)
    for _ in range(300):
        rows = int(rng.integers(0, 50))
        task = rng.integers(-3, 6, rows).astype(np.int64)
        pid = rng.integers(0, 3, rows).astype(np.int64)
        by_time = rng.permutation(rows).astype(np.int64)[: int(rng.integers(0, rows + 1))]
        keep = by_time[pid[by_time] != 0]
        want = keep[np.argsort(task[keep], kind="stable")]
        out = np.full(len(by_time), -7, dtype=np.int64)
        m = _passes.task_order(task, by_time, pid, -3, 9, out)
        assert out[:m].tolist() == want.tolist()


def test_task_order_checks_what_it_is_given():
    task = np.array([1, 2, 3], dtype=np.int64)
    pid = np.array([1, 0, 1], dtype=np.int64)
    by = np.array([2, 1, 0], dtype=np.int64)
    out = np.full(3, -7, dtype=np.int64)
    assert _passes.task_order(task, by, pid, 1, 3, out) == 2
    assert out[:2].tolist() == [0, 2]
    # the idle task's rows are not read as keys: any value
    odd = np.array([1, np.iinfo(np.int64).min, 3], dtype=np.int64)
    assert _passes.task_order(odd, by, pid, 1, 3, out) == 2
    for lo, span in ((2, 3), (1, 2), (-9, 3)):
        out[:] = -7
        with pytest.raises(ValueError, match="task outside"):
            _passes.task_order(task, by, pid, lo, span, out)
        assert (out == -7).all()
    for bad in ([0, 1, 3], [-1, 0, 1], [0, 1, np.iinfo(np.int64).max]):
        with pytest.raises(ValueError, match="by_time entry outside"):
            _passes.task_order(task, np.array(bad, np.int64), pid, 1, 3, out)
        assert (out == -7).all()
    with pytest.raises(ValueError, match="one slot a row"):
        _passes.task_order(task, by, pid[:2], 1, 3, out)
    with pytest.raises(ValueError, match="one slot a by_time entry"):
        _passes.task_order(task, by, pid, 1, 3, out[:2].copy())
    with pytest.raises(ValueError, match="span"):
        _passes.task_order(task, by, pid, 1, 0, out)
    with pytest.raises(TypeError, match="integers"):
        _passes.task_order(task.astype(np.int32), by, pid, 1, 3, out)
    e = np.zeros(0, np.int64)
    assert _passes.task_order(e, e, e, 0, 1, e) == 0


def test_task_time_order_is_the_lexsort_without_the_idle_task():
    """The waits' (task, time, tie) order of every row but pid 0's is the stable
    lexsort, for task keys near each other (the compiled counting sort), life keys far
    apart, and times too wide to pack with the ties."""
    from schedwake.model.waits import _task_time_order

    rng = np.random.default_rng(13)
    for trial in range(300):
        rows = int(rng.integers(0, 50))
        task = rng.integers(-3, 6, rows).astype(np.int64)
        if trial % 3 == 0:
            task += rng.integers(0, 2, rows) << 40
        pid = rng.integers(0, 3, rows).astype(np.int64)
        ts = rng.integers(0, 8, rows).astype(np.int64)
        if trial % 5 == 0:
            ts += rng.integers(0, 2, rows) << 61
        tie = rng.integers(0, 4, rows).astype(np.int64)
        keep = np.flatnonzero(pid != 0)
        want = keep[np.lexsort((tie[keep], ts[keep], task[keep]))]
        assert _task_time_order(task, ts, tie, pid).tolist() == want.tolist()


def _preempted_ends_python(sts, pkey, nkey, runnable, cts, ckey, ctie):
    """The preempted waits' ends as the waits' state machine finds them, per task in
    (time, tie) order: a switch-out runnable arms a wait, any switch-out disarms it, a
    switch-in (ns + j) or a run (2 ns + c) ends an armed wait; pid 0 left out."""
    ns = len(sts)
    events = [(t, 2 * i, 0, i, k) for i, (t, k) in enumerate(zip(sts, pkey))]
    events += [(t, 2 * i + 1, 1, i, k) for i, (t, k) in enumerate(zip(sts, nkey))]
    events += [(t, tie, 2, c, k) for c, (t, tie, k) in enumerate(zip(cts, ctie, ckey))]
    out = [-1] * ns
    armed: dict[int, int] = {}
    for _, _, part, i, k in sorted(events, key=lambda e: (e[4], e[0], e[1], e[2], e[3])):
        if k & 0xFFFFFFFF == 0:
            continue
        if part == 0:
            armed[k] = i if runnable[i] else -1
        elif armed.get(k, -1) >= 0:
            out[armed[k]] = ns + i if part == 1 else 2 * ns + i
            armed[k] = -1
    return out


def test_preempted_ends_matches_the_state_machine():
    """Random switches and runs full of ties, pids used again (life keys growing in
    time), the idle task among them."""
    rng = np.random.default_rng(17)
    for trial in range(400):
        ns, nc = int(rng.integers(0, 30)), int(rng.integers(0, 6))
        sts = np.sort(rng.integers(0, 8, ns)).astype(np.int64)
        cts = rng.integers(0, 8, nc).astype(np.int64)
        ctie = rng.choice([-2, 2 * ns + 2, 3, 4], nc).astype(np.int64)
        o = np.lexsort((ctie, cts))
        cts, ctie = cts[o], ctie[o]

        def keys(pid, ts, again=trial % 2 == 0):
            # (every other trial: a later life of pid 2 from time 5 on)
            return pid + ((ts >= 5) & (pid == 2) & again).astype(np.int64) * (1 << 32)

        pk = keys(rng.integers(0, 4, ns).astype(np.int64), sts)
        nk = keys(rng.integers(0, 4, ns).astype(np.int64), sts)
        ck = keys(rng.integers(0, 4, nc).astype(np.int64), cts)
        runnable = rng.integers(0, 2, ns).astype(np.uint8)
        out = np.full(ns, -7, dtype=np.int64)
        crow = np.arange(nc, dtype=np.int64)
        assert _passes.preempted_ends(sts, pk, nk, runnable, cts, ck, ctie, crow, out)
        assert out.tolist() == _preempted_ends_python(sts, pk, nk, runnable, cts, ck, ctie)


def test_preempted_ends_checks_what_it_is_given():
    sts = np.array([1, 2, 3], dtype=np.int64)
    pk = np.array([5, 6, 0], dtype=np.int64)
    nk = np.array([6, 5, 5], dtype=np.int64)
    run = np.array([1, 1, 0], dtype=np.uint8)
    e = np.zeros(0, np.int64)
    out = np.full(3, -7, dtype=np.int64)
    assert _passes.preempted_ends(sts, pk, nk, run, e, e, e, e, out)
    assert out.tolist() == [4, -1, -1]  # (pid 5 out runnable at 1, in at 2: switch 1's)
    one = np.ones(1, np.int64)
    # (a run of pid 5 after switch 1's switch-in: the wait ended before it)
    assert _passes.preempted_ends(sts, pk, nk, run, one * 2, one * 5, one * 9, one * 4, out)
    assert out.tolist() == [4, -1, -1]
    # (a run of pid 5 at time 1 before the switch-outs of time 1: arms nothing)
    assert _passes.preempted_ends(sts, pk, nk, run, one * 1, one * 5, one * -2, one * 4, out)
    assert out.tolist() == [4, -1, -1]
    # a run ending pid 5's wait before its switch-in: 2 ns + its row
    assert _passes.preempted_ends(sts, pk, nk, run, one * 1, one * 5, one * 1, one * 4, out)
    assert out.tolist() == [10, -1, -1]
    # not answered: switches or runs out of order, pids far apart, a life going back
    assert not _passes.preempted_ends(sts[::-1].copy(), pk, nk, run, e, e, e, e, out)
    two = np.array([2, 1], dtype=np.int64)
    assert not _passes.preempted_ends(sts, pk, nk, run, two, two, two, two, out)
    far = np.array([5, 6, 1 << 30], dtype=np.int64)
    assert not _passes.preempted_ends(sts, far, nk, run, e, e, e, e, out)
    back = np.array([5 + (1 << 32), 6, 5], dtype=np.int64)
    assert not _passes.preempted_ends(sts, back, nk, run, e, e, e, e, out)
    # any key: its low 32 bits are the pid, compared, never read through
    odd = np.array([np.iinfo(np.int64).min, -1, 5], dtype=np.int64)
    _passes.preempted_ends(sts, odd, nk, run, e, e, e, e, out)
    for bad in (-1, 1 << 62):
        with pytest.raises(ValueError, match="row outside"):
            _passes.preempted_ends(sts, pk, nk, run, one, one * 5, one, one * bad, out)
    with pytest.raises(ValueError, match="one slot a switch"):
        _passes.preempted_ends(sts, pk[:2], nk, run, e, e, e, e, out)
    with pytest.raises(ValueError, match="one slot a switch"):
        _passes.preempted_ends(sts, pk, nk, run, e, e, e, e, out[:2].copy())
    with pytest.raises(ValueError, match="one slot a run"):
        _passes.preempted_ends(sts, pk, nk, run, one, e, one, one, out)
    with pytest.raises(TypeError, match="integers"):
        _passes.preempted_ends(sts.astype(np.int32), pk, nk, run, e, e, e, e, out)
    with pytest.raises(TypeError, match="integers"):
        _passes.preempted_ends(sts, pk, nk, run.astype(np.int64), e, e, e, e, out)
    with pytest.raises((TypeError, ValueError), match="read-only|writable"):
        ro = np.zeros(3, np.int64)
        ro.setflags(write=False)
        _passes.preempted_ends(sts, pk, nk, run, e, e, e, e, ro)
    assert _passes.preempted_ends(e, e, e, np.zeros(0, np.uint8), e, e, e, e, e)


def _stretch_parts_python(ts, pid, comm, prio, known, lost, r0, r1, a, b, waiter):
    """The stretches' sums as a loop over their rows: the waiter's, lost, missing and
    idle time, idle rows; the other tasks' time by (pid, comm, prio), ascending."""
    sums, tasks = [], []
    for g in range(len(r0)):
        s = [0] * 5
        by: dict[tuple, int] = {}
        for r in range(r0[g], r1[g]):
            st = max(ts[r], a[g])
            en = b[g] if r == r1[g] - 1 else min(ts[r + 1], b[g])
            d = int(en - st)
            if not known[r]:
                s[1 if lost[r] else 2] += d
            elif pid[r] == waiter[g]:
                s[0] += d
            elif pid[r] == 0:
                s[3] += d
                s[4] += 1
            elif d > 0:
                k = (int(pid[r]), int(comm[r]), int(prio[r]))
                by[k] = by.get(k, 0) + d
        sums += s
        tasks += [(g, *k, v) for k, v in sorted(by.items())]
    return sums, tasks


def _stretch_parts_c(ts, pid, comm, prio, known, lost, r0, r1, a, b, waiter, room=None):
    n = len(r0)
    total = max(int((r1 - r0).sum()), 0) if room is None else room
    sums = np.full(5 * n, -7, dtype=np.int64)
    out = [np.full(total, -7, dtype=np.int64) for _ in range(5)]
    m = _passes.stretch_parts(ts, pid, comm, prio, known, lost, r0, r1, a, b, waiter, sums, *out)
    return sums.tolist(), list(zip(*(o[:m].tolist() for o in out)))


def test_stretch_parts_matches_a_loop():
    """Random CPU rows (ties, tasks again and again, unknown rows, the waiter among
    them) and stretches over them, some empty, some overlapping."""
    rng = np.random.default_rng(19)
    for _ in range(300):
        rows = int(rng.integers(1, 40))
        ts = np.sort(rng.integers(0, 30, rows)).astype(np.int64)
        pid, comm, prio = (rng.integers(lo, 4, rows).astype(np.int64) for lo in (0, 0, -1))
        known = rng.random(rows) < 0.8
        lost = rng.random(rows) < 0.5
        n = int(rng.integers(0, 6))
        r0 = rng.integers(0, rows + 1, n).astype(np.int64)
        r1 = np.minimum(r0 + rng.integers(0, 10, n), rows).astype(np.int64)
        a = ts[np.minimum(r0, rows - 1)] + rng.integers(0, 3, n)
        b = a + rng.integers(0, 20, n)
        waiter = rng.integers(1, 4, n).astype(np.int64)
        args = (ts, pid, comm, prio, known, lost, r0, r1, a, b, waiter)
        want = _stretch_parts_python(*args)
        assert _stretch_parts_c(*args) == (want[0], [tuple(t) for t in want[1]])


def test_stretch_parts_checks_what_it_is_given():
    ts = np.array([0, 5, 9], dtype=np.int64)
    pid = np.array([3, 0, 4], dtype=np.int64)
    known, lost = np.ones(3, dtype=bool), np.zeros(3, dtype=bool)
    one = np.ones(1, dtype=np.int64)
    ok = (ts, pid, pid, pid, known, lost)
    assert _stretch_parts_c(*ok, one * 0, one * 3, one * 1, one * 12, one * 9) == (
        [0, 0, 0, 4, 1],
        [(0, 3, 3, 3, 4), (0, 4, 4, 4, 3)],
    )
    for lo, hi in ((-1, 2), (2, 1), (0, 4), (np.iinfo(np.int64).min, 0)):
        with pytest.raises(ValueError, match="outside the rows"):
            _stretch_parts_c(*ok, one * lo, one * hi, one, one * 12, one * 9)
    with pytest.raises(ValueError, match="one slot a row"):
        _stretch_parts_c(*ok, one * 0, one * 3, one, one * 12, one * 9, room=2)
    with pytest.raises(ValueError, match="one slot a row"):
        _stretch_parts_c(ts, pid[:2], pid, pid, known, lost, one * 0, one, one, one, one)
    with pytest.raises(ValueError, match="one slot a stretch"):
        _stretch_parts_c(*ok, one * 0, np.ones(2, np.int64), one, one * 12, one * 9)
    with pytest.raises(TypeError, match="integers"):
        _stretch_parts_c(ts.astype(np.int32), pid, pid, pid, known, lost, one, one, one, one, one)
    e = np.zeros(0, np.int64)
    assert _stretch_parts_c(*ok, e, e, e, e, e) == ([], [])
