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
