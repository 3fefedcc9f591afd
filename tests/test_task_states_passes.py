"""The task states' compiled passes (schedwake/model/_pass_task_states.c) fed arrays by
hand: each against a plain NumPy or Python answer, and each refusing what it must not
read (rows or indices out of range, arrays of other lengths or kinds) with an error,
not a crash."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from schedwake.model import _passes
from schedwake.model import task_states as T

I64 = np.int64


def rows_of(*cols: list) -> np.ndarray:
    """Rows (:data:`T._ROW`) from columns ts, key (the task's slot), cpu, code, prio,
    letters, mark."""
    ts, key, cpu, code, prio, letters, mark = (np.asarray(c) for c in cols)
    r = np.zeros(len(ts), dtype=T._ROW)
    for name, v in zip(("ts", "key", "cpu", "code", "prio", "letters", "mark"),
                       (ts, key, cpu, code, prio, letters, mark)):  # fmt: skip
        r[name] = v
    return r


def parts_of(rng, sizes, kinds=(np.int64, np.int32, np.int8)):
    """Parts of ``sizes`` rows (ts, key, cpu, code, prio, letters, mark), each in (ts,
    prio) order, their columns of several kinds or one value for all; keys from -3 to
    3 (0: not a task, left out)."""
    parts = []
    for j, n in enumerate(sizes):
        ts, prio = rng.integers(0, 12, n), rng.integers(0, 3, n).astype(np.int8)
        o = np.lexsort((prio, ts))
        kind = kinds[j % len(kinds)]
        key = rng.integers(-3, 4, n).astype(I64 if j % 2 else np.int32)
        cpu = np.arange(n).astype(kind) if j % 3 else -1
        code = rng.integers(0, 9, n).astype(np.int8)
        parts.append((ts[o].astype(I64), key, cpu, code, prio[o] if j % 2 else 1,
                      np.arange(n).astype(kind), (j % 3) - 1))  # fmt: skip
    return parts


def rows_of_parts(parts, lo=-3):
    """The rows of the parts one after another (key 0's left out), in the plain way;
    each row's task its slot, its key - ``lo``."""
    rows, kept = [], []
    for p in parts:
        key = np.broadcast_to(p[1], (len(p[0]),))
        rows.append(rows_of(p[0], key - lo, *(np.broadcast_to(c, (len(p[0]),)) for c in p[2:])))
        kept.append(key != 0)
    if not rows:
        return np.zeros(0, T._ROW)
    return np.concatenate(rows)[np.concatenate(kept)]


def sort_parts(parts, slots=None, lo=-3, span=7, room=0):
    n = sum(len(p[0]) for p in parts)
    out = np.zeros(n + room, T._ROW)
    m = _passes.task_sort_parts(parts, slots, lo, span, out.view(np.uint8))
    return out, m


def test_task_sort_parts_is_the_stable_order_by_task_time_priority():
    rng = np.random.default_rng(7)
    for sizes in ([0], [5], [3, 0, 4], [50, 20, 1, 30], [0, 0], [200, 300, 100, 7, 90, 40, 3]):
        parts = parts_of(rng, sizes)
        rows = rows_of_parts(parts)
        want = rows[np.lexsort((rows["prio"], rows["ts"], rows["key"]))].tolist()
        out, m = sort_parts(parts)
        assert m == len(rows) and out[:m].tolist() == want
        out, m = sort_parts(parts, room=3)
        assert out[:m].tolist() == want
        # by a slot of each row (a task's rank) instead of key - lo
        slots = [(np.broadcast_to(p[1], (len(p[0]),)) + 3).astype(I64) for p in parts]
        out, m = sort_parts(parts, slots, 0, 7)
        assert out[:m].tolist() == want
    # what build gives: the rows of its parts, in order
    parts = parts_of(rng, [40, 0, 25])
    buf, m, tasks, slots = T._task_rows(parts, 5)
    lo = min(int(np.min(p[1])) for p in parts if len(p[0]))
    rows = rows_of_parts(parts, lo)
    rows = rows[np.lexsort((rows["prio"], rows["ts"], rows["key"]))]
    assert len(buf) == 70 and buf[:m].tolist() == rows.tolist()
    assert tasks.tolist() == (np.unique(rows["key"]) + lo).tolist()
    assert slots.keys(buf[:m]["key"]).tolist() == (rows["key"] + lo).tolist()
    # the rows of each slot counted, when asked
    counts = np.full(7, -1, I64)
    _passes.task_sort_parts(parts, None, -3, 7, np.zeros(70, T._ROW).view(np.uint8), counts)
    assert counts.tolist() == np.bincount(rows["key"] + lo + 3, minlength=7).tolist()
    with pytest.raises(ValueError, match="counts one a slot"):
        _passes.task_sort_parts(parts, None, -3, 7, buf.view(np.uint8), counts[:6])
    with pytest.raises(TypeError):
        _passes.task_sort_parts(parts, None, -3, 7, buf.view(np.uint8), counts.astype(np.int32))
    # by ranks (keys far apart): the tasks the same, each row's slot its task's rank
    wide = [(p[0], np.where(p[1] > 0, p[1].astype(I64) << 40, p[1]), *p[2:]) for p in parts]
    key, ts, prio = (np.concatenate([np.broadcast_to(p[i], (len(p[0]),)) for p in wide])
                     for i in (1, 0, 4))  # fmt: skip
    o = np.lexsort((prio, ts, key))
    want_keys = key[o][key[o] != 0]
    buf, m, tasks, slots = T._task_rows(wide)
    assert tasks.tolist() == np.unique(want_keys).tolist() and slots.levels is not None
    assert slots.keys(buf[:m]["key"]).tolist() == want_keys.tolist()
    # the rows of other parts placed by the same slots (build's rows added later)
    more = [(np.arange(3, dtype=I64), tasks[[2, 0, 2]], -1, 5, 0, -1, 0)]
    theirs, k, _, same = T._task_rows(more, slots=slots)
    assert same is slots and slots.keys(theirs[:k]["key"]).tolist() == tasks[[0, 2, 2]].tolist()


def test_task_sort_parts_says_which_part_is_out_of_order():
    rng = np.random.default_rng(9)
    parts = parts_of(rng, [6, 8, 5])
    ts = parts[1][0].copy()
    ts[0] = 100  # the second part out of order (its key is never 0 there: a task's)
    keys = parts[1][1].copy()
    keys[0] = 2
    parts[1] = (ts, keys, *parts[1][2:])
    out, m = sort_parts(parts)
    assert m == -2 and not out.view(np.uint8).any()  # (nothing written)
    # a row of key 0 out of order is left out, not a part out of order
    keys[0] = 0
    parts[1] = (ts, keys, *parts[1][2:])
    assert sort_parts(parts)[1] >= 0
    # build's helper puts such a part in order first
    keys[0] = 2
    parts[1] = (ts, keys, *parts[1][2:])
    buf, m, _, _ = T._task_rows(parts)
    rows = rows_of_parts(parts, min(int(np.min(p[1])) for p in parts))
    assert buf[:m].tolist() == rows[np.lexsort((rows["prio"], rows["ts"], rows["key"]))].tolist()


def test_task_sort_parts_refuses_what_it_cannot_sort():
    rng = np.random.default_rng(8)
    parts = parts_of(rng, [6, 6])
    k0 = parts[0][1].copy()
    k0[:2] = -3, 3  # keys from -3 to 3
    parts[0] = (parts[0][0], k0, *parts[0][2:])
    for lo, span in ((-2, 7), (-3, 6)):  # keys below, above
        with pytest.raises(ValueError, match="outside"):
            sort_parts(parts, lo=lo, span=span)
    for lo, span in ((-3, 0), (0, 1 << 40), ((1 << 62) + 1, 7)):
        with pytest.raises(ValueError, match="span"):
            sort_parts(parts, lo=lo, span=span)
    ok = [np.zeros(6, I64), np.zeros(6, I64)]
    for bad in ([7] + [0] * 5, [-1] + [0] * 5):
        with pytest.raises(ValueError, match="outside"):
            sort_parts(parts, [np.array(bad, I64), ok[1]], 0, 7)
    with pytest.raises(ValueError, match="a slot a row"):
        sort_parts(parts, [np.zeros(5, I64), ok[1]], 0, 7)
    with pytest.raises(TypeError):
        sort_parts(parts, [ok[0]], 0, 7)  # (a slots' array a part)
    with pytest.raises(TypeError):
        sort_parts(parts, [ok[0], np.zeros(6, np.int32)], 0, 7)
    with pytest.raises(ValueError, match="room"):
        _passes.task_sort_parts(parts, None, -3, 7, np.zeros(11, T._ROW).view(np.uint8))
    with pytest.raises(ValueError, match="whole"):
        _passes.task_sort_parts(parts, None, -3, 7, np.zeros(12, T._ROW).view(np.uint8)[:-4])
    with pytest.raises(ValueError, match="one value a row"):
        sort_parts([(parts[0][0], k0[:5], *parts[0][2:])])
    for i, bad in ((0, parts[0][0].astype(np.int32)), (1, k0.astype(np.int8)),
                   (2, np.zeros(6, np.int16)), (3, parts[0][3].astype(np.float64)),
                   (5, "x")):  # fmt: skip
        cols = list(parts[0])
        cols[i] = bad
        with pytest.raises(TypeError):
            sort_parts([tuple(cols)])
    with pytest.raises(TypeError):
        sort_parts([parts[0][:6]])  # (a part of 6 columns)
    with pytest.raises(TypeError):
        sort_parts(tuple(parts))  # (parts: a list)


def test_keyed_last_below_finds_the_last_row_of_the_key_before():
    rng = np.random.default_rng(3)
    key = rng.integers(0, 6, 200)
    ts = rng.integers(0, 50, 200)
    o = np.lexsort((ts, key))
    rows = rows_of(ts[o], key[o], *([np.zeros(200)] * 5))
    key, ts = key[o], ts[o]
    qk, qt = rng.integers(-1, 8, 300).astype(I64), rng.integers(-5, 60, 300).astype(I64)
    out = np.zeros(300, I64)
    _passes.keyed_last_below(rows.view(np.uint8), qk, qt, out)
    for j in range(300):
        hit = np.flatnonzero((key == qk[j]) & (ts < qt[j]))
        assert out[j] == (hit[-1] if len(hit) else -1)
    _passes.keyed_last_below(rows[:0].view(np.uint8), qk, qt, out)
    assert (out == -1).all()
    with pytest.raises(ValueError, match="unequal"):
        _passes.keyed_last_below(rows.view(np.uint8), qk, qt[:-1], out)
    with pytest.raises(ValueError, match="unequal"):
        _passes.keyed_last_below(rows.view(np.uint8), qk, qt, out[:-1])
    with pytest.raises(ValueError, match="whole"):
        _passes.keyed_last_below(rows.view(np.uint8)[:-4], qk, qt, out)


def test_merge_rows_into_merges_by_key_time_priority_theirs_after_ties():
    rng = np.random.default_rng(5)
    for n, m in ((300, 40), (0, 5), (5, 0), (0, 0)):
        rows = rows_of(rng.integers(0, 20, n + m), rng.integers(0, 4, n + m),
                       np.arange(n + m), np.zeros(n + m), rng.integers(0, 3, n + m),
                       np.zeros(n + m), np.zeros(n + m))  # fmt: skip
        a, b = rows[:n], rows[n:]
        a = a[np.lexsort((a["prio"], a["ts"], a["key"]))]
        b = b[np.lexsort((b["prio"], b["ts"], b["key"]))]
        buf = np.zeros(n + m + 2, T._ROW)
        buf[:n] = a
        _passes.merge_rows_into(buf.view(np.uint8), n, b.view(np.uint8))
        both = rows[:0].copy() if not n + m else np.concatenate([a, b])
        want = both[np.lexsort((both["prio"], both["ts"], both["key"]))]
        assert buf[: n + m].tolist() == want.tolist()
    b = rows_of(*([np.zeros(40)] * 7))
    for n in (-1, 301, 300 - 39 + 2 + 40):  # rows it has not, no room for b's
        buf = np.zeros(302, T._ROW)
        with pytest.raises(ValueError, match="room"):
            _passes.merge_rows_into(buf.view(np.uint8), n, b.view(np.uint8))
    # bytes that are not whole rows, or not aligned ones
    buf = np.zeros(340, T._ROW)
    with pytest.raises(ValueError, match="whole"):
        _passes.merge_rows_into(buf.view(np.uint8)[:-1], 300, b.view(np.uint8))
    raw = np.zeros(340 * 32 + 8, np.uint8)
    with pytest.raises(ValueError, match="aligned"):
        _passes.merge_rows_into(raw[1 : 1 + 340 * 32], 300, b.view(np.uint8))
    with pytest.raises(TypeError):
        _passes.merge_rows_into(np.zeros(340 * 4, I64), 300, b.view(np.uint8))


# one task (key 7): running from 10, asleep (S) at 20, woken at 30 by a waking, and
# running at 40; a second task (key 9): unknown from 0, preempted at 15, running at 25
_R, _P, _W, _S, _U, _WAKE, _KEEP = T._RUN, T._PRE, T._WOKEN, T._SLEEP, T._UNK, T._WAKE, T._KEEP
HAND = rows_of(
    [10, 20, 30, 40, 0, 15, 25],
    [7, 7, 7, 7, 9, 9, 9],
    [1, 1, -1, 2, -1, 0, 0],
    [_R, _S, _WAKE, _R, _U, _P, _R],
    [4, 1, 2, 4, 0, 1, 4],
    [-1, 0, -1, -1, -1, 1, -1],
    [0, 0, 0, 0, 0, 0, 0],
)


def gkeys(rows, gflags):
    """Each task's key, as many as ``gflags``: its slot (the rows' tasks in order)."""
    return np.resize(np.unique(rows["key"]).astype(I64), len(gflags))


def scan(rows, gflags, gend, unseen=False):
    n = len(rows)
    out = (np.empty(n, I64), np.empty(n, np.int32), np.empty(n, I64), np.empty(n, I64),
           np.empty(n, np.int8), np.empty(n, np.int32))  # fmt: skip
    k = _passes.task_states_scan(rows.view(np.uint8), gkeys(rows, gflags),
                                 np.asarray(gflags, np.int8), np.asarray(gend, I64), unseen,
                                 *out)  # fmt: skip
    return list(zip(*(a[:k].tolist() for a in out)))


def test_task_states_scan_of_rows_by_hand():
    assert scan(HAND, [0, 0], [50, 50]) == [
        # key, cpu, start, end, state, switch_state
        (7, 1, 10, 20, _R, -1),
        (7, 1, 20, 30, _S, 0),
        (7, 1, 30, 40, _W, 0),
        (7, 2, 40, 50, _R, -1),
        (9, -1, 0, 15, _U, -1),
        (9, 0, 15, 25, _P, 1),
        (9, 0, 25, 50, _R, -1),
    ]
    # a task whose death is missing: unknown from its last event; born in the trace:
    # nothing before its first state
    born = HAND.copy()
    born["code"][4] = _KEEP
    got = scan(born, [T._G_GONE, T._G_BORN], [45, 50])
    assert got[3] == (7, 2, 40, 45, _U, -1)
    assert got[4] == (9, 0, 15, 25, _P, 1)  # (nothing from 0: not alive yet)
    # an unknown mark: from 20 to 30, unknown
    marked = HAND.copy()
    marked["mark"][1], marked["mark"][2] = 1, -1
    assert scan(marked, [0, 0], [50, 50])[1] == (7, 1, 20, 30, _U, 0)


def test_task_states_in_flight_finds_a_task_woken_while_going_to_sleep():
    # task 7 runs at 10, is woken at 15 (still on the CPU), switched out asleep at 20
    rows = rows_of([10, 15, 20], [7, 7, 7], [1, -1, 1], [_R, _WAKE, _S], [4, 2, 1],
                   [-1, -1, 0], [0, 0, 0])  # fmt: skip
    at, wake = np.empty(3, I64), np.empty(3, I64)
    m = _passes.task_states_in_flight(rows.view(np.uint8), at, wake)
    assert (m, at[:m].tolist(), wake[:m].tolist()) == (1, [2], [1])
    assert _passes.task_states_in_flight(HAND.view(np.uint8), np.empty(7, I64),
                                         np.empty(7, I64)) == 0  # fmt: skip
    with pytest.raises(ValueError, match="one slot a row"):
        _passes.task_states_in_flight(rows.view(np.uint8), at[:2], wake)


def test_task_states_scan_refuses_codes_and_flags_out_of_range():
    bad = HAND.copy()
    bad["code"][3] = 9
    with pytest.raises(ValueError, match="code"):
        scan(bad, [0, 0], [50, 50])
    bad["code"][3] = -1
    with pytest.raises(ValueError, match="code"):
        scan(bad, [0, 0], [50, 50])
    for flags in ([0], [0, 0, 0], []):  # fewer tasks' flags than tasks, or more
        with pytest.raises(ValueError, match="one entry per task"):
            scan(HAND, flags, [50] * len(flags))
    with pytest.raises(ValueError, match="as long"):
        scan(HAND, [0, 0], [50])
    n = len(HAND)
    with pytest.raises(ValueError, match="one slot a row"):
        _passes.task_states_scan(HAND.view(np.uint8), np.array([7, 9]), np.zeros(2, np.int8),
                                 np.zeros(2, I64),
                                 False, np.empty(n - 1, I64), np.empty(n, np.int32),
                                 np.empty(n, I64), np.empty(n, I64), np.empty(n, np.int8),
                                 np.empty(n, np.int32))  # fmt: skip
    with pytest.raises(TypeError):
        _passes.task_states_scan(HAND.view(np.uint8), np.array([7, 9]), np.zeros(2, np.int8),
                                 np.zeros(2, I64),
                                 False, np.empty(n, I64), np.empty(n, I64),
                                 np.empty(n, I64), np.empty(n, I64), np.empty(n, np.int8),
                                 np.empty(n, np.int32))  # fmt: skip
    assert scan(HAND[:0], [], []) == []


def sums(rows, gflags, gend, unseen=False, cpu_hi=2, cap=None):
    n = len(rows) if cap is None else cap
    key, cpu, ns = np.empty(n, I64), np.empty(n, np.int32), np.empty(6 * n, I64)
    m = _passes.task_states_sums(rows.view(np.uint8), gkeys(rows, gflags),
                                 np.asarray(gflags, np.int8), np.asarray(gend, I64), unseen,
                                 cpu_hi, key, cpu, ns)  # fmt: skip
    return list(zip(key[:m].tolist(), cpu[:m].tolist(), ns[: 6 * m].reshape(m, 6).tolist()))


def sums_of_intervals(intervals):
    """Per (task, CPU), in that order, the ns of the intervals in each state."""
    out: dict = {}
    for key, cpu, start, end, state, _ in intervals:
        out.setdefault((key, cpu), [0] * 6)[state] += end - start
    return [(k, c, v) for (k, c), v in sorted(out.items())]


def test_task_states_sums_are_those_of_the_scans_intervals():
    """``task_states_sums``: the ns of ``task_states_scan``'s intervals per (task, CPU)
    and state, in (task, CPU) order, for rows by hand (a task's CPUs met out of order,
    marks, a missing death, a task born in the trace, the waits unknown)."""
    marked = HAND.copy()
    marked["mark"][1], marked["mark"][2] = 1, -1
    moved = HAND.copy()
    moved["cpu"][:4] = [2, 0, -1, 1]  # (task 7: CPUs 2, 0, 1: out of order)
    for rows, flags, gend, unseen in (
        (HAND, [0, 0], [50, 50], False),
        (HAND, [0, 0], [50, 50], True),
        (marked, [0, 0], [50, 50], False),
        (moved, [T._G_GONE, T._G_BORN], [45, 60], False),
    ):
        want = sums_of_intervals(scan(rows, flags, gend, unseen))
        assert sums(rows, flags, gend, unseen) == want
    assert sums(moved, [0, 0], [50, 50])[:3] == [
        (7, 0, [0, 0, 10, 10, 0, 0]), (7, 1, [10, 0, 0, 0, 0, 0]), (7, 2, [10, 0, 0, 0, 0, 0])
    ]  # fmt: skip
    assert sums(HAND[:0], [], []) == []


def test_task_states_sums_refuses_cpus_rooms_and_flags_out_of_range():
    with pytest.raises(ValueError, match="CPU out of range"):
        sums(HAND, [0, 0], [50, 50], cpu_hi=1)  # (a row on CPU 2)
    wide = HAND.copy()
    wide["cpu"][3] = (1 << 31) - 1
    with pytest.raises(ValueError, match="CPU out of range"):
        sums(wide, [0, 0], [50, 50])
    for hi in (-2, 1 << 30):
        with pytest.raises(ValueError, match="cpu_hi"):
            sums(HAND, [0, 0], [50, 50], cpu_hi=hi)
    with pytest.raises(ValueError, match="room"):
        sums(HAND, [0, 0], [50, 50], cap=3)  # (4 groups)
    assert len(sums(HAND, [0, 0], [50, 50], cap=4)) == 4
    with pytest.raises(ValueError, match="one entry per task"):
        sums(HAND, [0], [50])
    with pytest.raises(ValueError, match="code"):
        bad = HAND.copy()
        bad["code"][3] = 9
        sums(bad, [0, 0], [50, 50])
    n = len(HAND)
    with pytest.raises(ValueError, match="6 ns a group"):
        _passes.task_states_sums(HAND.view(np.uint8), np.array([7, 9]), np.zeros(2, np.int8),
                                 np.full(2, 50, I64),
                                 False, 2, np.empty(n, I64), np.empty(n, np.int32),
                                 np.empty(6 * n - 1, I64))  # fmt: skip
    with pytest.raises(TypeError):
        _passes.task_states_sums(HAND.view(np.uint8), np.array([7, 9]), np.zeros(2, np.int8),
                                 np.full(2, 50, I64),
                                 False, 2, np.empty(n, I64), np.empty(n, I64),
                                 np.empty(6 * n, I64))  # fmt: skip


def test_key_last_rows_is_each_keys_last_row_and_checks_its_range():
    rng = np.random.default_rng(12)
    for kind in (np.int32, I64):
        key = rng.integers(-50, 51, 2000).astype(kind)
        last = np.empty(101, I64)
        _passes.key_last_rows(key, -50, 101, last)
        want = np.full(101, -1, I64)
        for i, k in enumerate(key.tolist()):
            want[k + 50] = i
        assert last.tolist() == want.tolist()
        for lo, span in ((-49, 101), (-50, 100)):  # a key below, above
            with pytest.raises(ValueError, match="outside"):
                _passes.key_last_rows(key, lo, span, np.empty(span, I64))
        with pytest.raises(ValueError, match="one a key value"):
            _passes.key_last_rows(key, -50, 101, last[:100])
        with pytest.raises(ValueError, match="span"):
            _passes.key_last_rows(key, -50, 0, last[:0])
        with pytest.raises(TypeError):
            _passes.key_last_rows(key, -50, 101, last.astype(np.int32))
    last = np.full(3, 7, I64)
    _passes.key_last_rows(np.zeros(0, I64), 0, 3, last)
    assert last.tolist() == [-1, -1, -1]


def test_dense_codes_is_factorize_and_checks_its_range():
    rng = np.random.default_rng(11)
    for dtype in (np.int32, np.int64):
        key = rng.integers(-50, 50, 500, endpoint=True).astype(dtype)
        key[:2] = -50, 50
        codes, levels = np.empty(500, I64), np.empty(101, dtype)
        m = _passes.dense_codes(key, -50, 101, codes, levels)
        c, u = pd.factorize(key, sort=True)
        assert codes.tolist() == c.tolist() and levels[:m].tolist() == u.tolist()
        got_c, got_u = T._dense(key)
        assert got_c.tolist() == c.tolist() and got_u.dtype == u.dtype
        for lo, span in ((-49, 101), (-50, 100)):
            with pytest.raises(ValueError, match="outside"):
                _passes.dense_codes(key, lo, span, codes, levels)
        with pytest.raises(ValueError, match="levels"):
            _passes.dense_codes(key, -50, 101, codes, levels[:50])
        with pytest.raises(ValueError, match="span"):
            _passes.dense_codes(key, -50, 0, codes, levels)
        with pytest.raises(TypeError):
            _passes.dense_codes(key, -50, 101, codes, levels.astype(np.int16))


def test_state_sums_adds_each_groups_time_in_each_state():
    rng = np.random.default_rng(13)
    n, groups = 1000, 7
    group = rng.integers(0, groups, n).astype(I64)
    state = rng.integers(0, 6, n).astype(np.int8)
    start = rng.integers(0, 1 << 40, n).astype(I64)
    end = start + rng.integers(-100, 1 << 40, n)
    out = np.full(groups * 6, -1, I64)
    _passes.state_sums(group, state, start, end, out)
    want = np.zeros(groups * 6, I64)
    np.add.at(want, group * 6 + state, np.maximum(end - start, 0))
    assert out.tolist() == want.tolist()
    for g, s in ((groups, 0), (-1, 0), (0, 6), (0, -1)):
        bad_g, bad_s = group.copy(), state.copy()
        bad_g[500], bad_s[500] = g, s
        with pytest.raises(ValueError, match="out of range"):
            _passes.state_sums(bad_g, bad_s, start, end, out)
    with pytest.raises(ValueError, match="row per"):
        _passes.state_sums(group, state, start, end, out[:-1])
    with pytest.raises(ValueError, match="row per"):
        _passes.state_sums(group, state[:-1], start, end, out)


def _ffill(values, new_group):
    """The forward fill of the task states' former NumPy build (a86bab6)."""
    idx = np.arange(len(values), dtype=I64)
    idx[(values < 0) & ~new_group] = -1
    np.maximum.accumulate(idx, out=idx)
    return values[idx]


def numpy_scan(ts, pid, cpu, code, prio, letters, mark, born, unseen, t_end):
    """The intervals of rows in (task, ts, prio) order as the former NumPy build gave
    them (a86bab6's task_states.build from its sort on, no life keys, every in-flight
    wake-up kept): what the compiled passes must give."""
    R, P, W, S, B, U, D, WK, K = range(9)
    n = len(ts)
    new_pid = np.ones(n, dtype=bool)
    new_pid[1:] = pid[1:] != pid[:-1]
    idx = np.arange(n)
    last_in = _ffill(np.where(code == R, idx, -1), new_pid)
    last_wake = _ffill(np.where(code == WK, idx, -1), new_pid)
    code = code.copy()
    in_flight = (prio == 1) & (last_wake > last_in) & (last_in >= 0)
    in_flight &= (code == S) | (code == B)
    code[in_flight] = W
    definite = code <= D
    last_def = _ffill(np.where(definite, code, -1), new_pid)
    wake = code == WK
    def_at = _ffill(np.where(definite, idx, -1), new_pid)
    wake_at = _ffill(np.where(wake, idx, -1), new_pid)
    prev_wake = np.concatenate([[-1], wake_at[:-1]])
    prev_wake[new_pid] = -1
    woken_by_wake = prev_wake > def_at
    again = np.flatnonzero(wake & ~np.isin(last_def, [R, P]) & (woken_by_wake | (last_def == W)))
    mark = mark.astype(I64)
    if len(again):
        since = np.where(woken_by_wake, prev_wake, def_at)[again]
        bump = np.zeros(n + 1, dtype=I64)
        np.add.at(bump, since, 1)
        np.add.at(bump, again, -1)
        mark = mark + bump[:n]
    code[wake] = np.where(np.isin(last_def[wake], [R, P]), K, W)
    state = _ffill(np.where(code == K, -1, code), new_pid)
    state[state < 0] = np.where(np.isin(pid[state < 0], born), D, U)
    state[(np.cumsum(mark) > 0) & (state != D)] = U
    if unseen is not None and len(unseen):
        state[(state == W) & np.isin(pid, unseen)] = U
    where = _ffill(np.where(cpu >= 0, cpu, -1), new_pid)
    carry = np.where(prio == 1, letters + 1, np.where(definite, 0, -1))
    since = np.maximum(_ffill(carry, new_pid) - 1, -1)
    since[state == R] = -1
    goes_on = np.zeros(n, dtype=bool)
    goes_on[1:] = (
        ~new_pid[1:]
        & (state[1:] == state[:-1])
        & (where[1:] == where[:-1])
        & (since[1:] == since[:-1])
    )
    ts, pid, where, state, since, new_pid = (
        a[~goes_on] for a in (ts, pid, where, state, since, new_pid)
    )
    n = len(ts)
    end = np.empty(n, dtype=I64)
    end[:-1] = ts[1:]
    last = np.ones(n, dtype=bool)
    last[:-1] = new_pid[1:]
    end[last] = t_end
    if unseen is not None:
        state[last & (state == W)] = U
    keep = (state != D) & (end > ts)
    cols = (pid[keep], where[keep], ts[keep], end[keep], state[keep], since[keep])
    return list(zip(*(c.tolist() for c in cols)))


@pytest.mark.parametrize("seed", range(40))
def test_the_passes_give_what_the_numpy_build_gave(seed):
    """Random rows (codes, priorities, marks, CPUs and letters of every kind, tasks born
    or unseen or neither): the in-flight pass and the scan give the intervals the former
    NumPy build gave, row for row."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    pid = np.sort(rng.integers(1, 1 + int(rng.integers(1, 12)), n)).astype(I64)
    ts = rng.integers(0, 60, n).astype(I64)
    prio = rng.integers(0, 6, n).astype(np.int8)
    o = np.lexsort((prio, ts, pid))
    pid, ts, prio = pid[o], ts[o], prio[o]
    code = rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 7, 8, 0, 3], n).astype(np.int8)
    cpu = rng.integers(-1, 4, n).astype(I64)
    letters = rng.integers(-1, 5, n).astype(I64)
    mark = rng.choice([0, 0, 0, 0, 1, -1], n).astype(np.int8)
    tasks = np.unique(pid)
    born = tasks[rng.random(len(tasks)) < 0.3]
    unseen = [None, tasks[rng.random(len(tasks)) < 0.3], tasks[:0]][seed % 3]
    t_end = 70
    want = numpy_scan(ts, pid, cpu, code, prio, letters, mark, born, unseen, t_end)
    rows = rows_of(ts, pid, cpu, code, prio, letters, mark)
    at, woke = np.empty(n, I64), np.empty(n, I64)
    m = _passes.task_states_in_flight(rows.view(np.uint8), at, woke)
    rows["code"][at[:m]] = T._WOKEN
    gflags = np.where(np.isin(tasks, born), T._G_BORN, 0).astype(np.int8)
    if unseen is not None:
        gflags |= np.where(np.isin(tasks, unseen), T._G_UNSEEN, 0).astype(np.int8)
    got = scan(rows, gflags, np.full(len(tasks), t_end, I64), unseen is not None)
    assert got == want


def test_seconds_texts_are_the_floats_repr():
    """Whole numbers of ns below 10**15 as repr() writes ns / 1e9 (fixed from 1e-4 s,
    exponents below), rows glued; what it must not read refused."""
    import math

    rng = np.random.default_rng(11)
    edges = [0, 1, 9, 10, 99_999, 100_000, 100_001, 10**9, 10**9 + 1, 999_999_999, 10**15 - 1]
    ns = np.concatenate([edges, rng.integers(0, 10**15, 3000), rng.integers(0, 10**6, 3000),
                         rng.integers(0, 200_000, 3000)]).astype(I64)  # fmt: skip
    got = _passes.seconds_texts(ns, ()).decode().split("\0")
    assert got == [float.__repr__(k / 1e9) for k in ns.tolist()]
    rows = ns[: 3 * 1000].reshape(1000, 3)
    got = _passes.seconds_texts(rows.ravel(), (b", ", b"|")).decode().split("\0")
    assert got == [f"{a / 1e9!r}, {b / 1e9!r}|{c / 1e9!r}" for a, b, c in rows.tolist()]
    assert _passes.seconds_texts(np.zeros(0, I64), ()) == b""
    for bad in ([-1], [10**15], [0, -(2**63)]):
        with pytest.raises(ValueError, match="10\\*\\*15"):
            _passes.seconds_texts(np.array(bad, I64), ())
    with pytest.raises(ValueError, match="whole rows"):
        _passes.seconds_texts(np.zeros(5, I64), (b",",))
    with pytest.raises(TypeError):
        _passes.seconds_texts(np.zeros(4, I64), (",",))
    with pytest.raises(TypeError):
        _passes.seconds_texts(np.zeros(4, np.int32), ())
    # through the summary's writer: any float, a whole number of ns or not, finite or not
    v = np.concatenate([ns[:2000] / 1e9, rng.random(200) * 3, [-0.0, -1.5, math.nan, math.inf,
                        1e300, 5e-324, 2.0**20, 1e15 / 1e9 * 2]])  # fmt: skip
    v = np.resize(v, (len(v) + 7) // 8 * 8).reshape(-1, 8)
    texts = T._seconds_texts(v, "  ")
    keys = [f',\n  "{k}": ' for k in T.TOTAL_COLUMNS[1:]]
    for row, text in zip(v.tolist(), texts):
        items = [float.__repr__(x) if math.isfinite(x) else "null" for x in row]
        assert text == items[0] + "".join(k + i for k, i in zip(keys, items[1:]))


def test_task_states_scan_writes_the_pids_of_the_keys_when_asked():
    """With ``out_pid``, each interval's key & ``pid_mask`` (the pid of a life key, as
    :func:`schedwake.model.lives.pid_of` gives it); the intervals the same as
    without; an ``out_pid`` of another length or kind refused."""
    rows = HAND.copy()
    n = len(rows)
    out = (np.empty(n, I64), np.empty(n, np.int32), np.empty(n, I64), np.empty(n, I64),
           np.empty(n, np.int8), np.empty(n, np.int32), np.empty(n, np.int32))  # fmt: skip
    gkey = np.array([7, 9], I64) + (np.int64(3) << 32)  # (a later life of pids 7 and 9)
    args = (rows.view(np.uint8), gkey, np.zeros(2, np.int8), np.full(2, 50, I64), False)
    k = _passes.task_states_scan(*args, *out, T._PID_MASK)
    assert out[6][:k].tolist() == T.pid_of(out[0][:k]).tolist() == [7] * 4 + [9] * 3
    assert list(zip(*(a[:k].tolist() for a in out[:6]))) == [
        (r[0] + (3 << 32), *r[1:]) for r in scan(HAND, [0, 0], [50, 50])
    ]
    with pytest.raises(ValueError, match="one slot a row"):
        _passes.task_states_scan(*args, *out[:6], np.empty(n - 1, np.int32), T._PID_MASK)
    with pytest.raises(TypeError):
        _passes.task_states_scan(*args, *out[:6], np.empty(n, I64), T._PID_MASK)
