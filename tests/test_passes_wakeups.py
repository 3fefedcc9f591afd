"""The compiled walk of the wake-ups' settling search (_pass_wakeups.c) gives what the
two as-of searches gave, on random inputs full of ties, and refuses what it cannot read
(keys outside the range told, orders outside the candidates, arrays of other lengths)
with an error, never a read out of bounds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from schedwake.model import _passes, wakeups
from schedwake.model._util import asof_index, take

_NEVER = np.iinfo(np.int64).max


def _settling_asof(c_ts, c_pid, c_cpu, c_dest, ts, pid, cpu, placed):
    """wakeups._settling_ts as two as-of searches (main ea2aed5)."""
    j = asof_index(c_ts, c_pid, ts, pid, "forward", True)
    own = (j >= 0) & (take(placed, j, -1) == c_dest) & (take(cpu, j, -1) != c_cpu)
    if own.any():
        j[own] = asof_index(take(ts, j[own], 0), c_pid[own], ts, pid, "forward", False)
    return take(ts, j, _NEVER)


@pytest.mark.parametrize("sorted_candidates", [True, False])
def test_settling_walk_as_the_searches(sorted_candidates):
    rng = np.random.default_rng(11)
    for n, m, pids, cpus in ((0, 20, 3, 2), (30, 0, 3, 2), (200, 300, 4, 3), (2000, 5000, 40, 4)):
        ts = np.sort(rng.integers(0, 400, m)).astype(np.int64)
        pid = rng.integers(0, pids, m).astype(np.int32)
        cpu = rng.integers(0, cpus, m).astype(np.int32)
        placed = np.where(rng.random(m) < 0.5, cpu, rng.integers(0, cpus, m)).astype(np.int32)
        c_ts = rng.integers(0, 420, n).astype(np.int64)
        if sorted_candidates:
            c_ts.sort()
        c_pid = rng.integers(0, pids, n).astype(np.int64)
        c_cpu = rng.integers(0, cpus, n).astype(np.int64)
        c_dest = rng.integers(0, cpus, n).astype(np.int64)
        order = None if sorted_candidates else np.argsort(c_ts, kind="stable")
        out = np.full(n, -7, dtype=np.int64)
        assert _passes.settling_walk(c_ts, c_pid, c_cpu, c_dest, order, ts, pid, cpu, placed,
                                     0, pids, out)  # fmt: skip
        want = _settling_asof(c_ts, c_pid, c_cpu, c_dest, ts, pid, cpu, placed)
        assert out.tolist() == want.tolist()
        if n >= 2000:  # (the second search was needed, and some found nothing)
            first = take(ts, asof_index(c_ts, c_pid, ts, pid, "forward", True), _NEVER)
            assert (out != first).any() and (out == _NEVER).any()


def test_settling_walk_checks_what_it_is_given():
    ts = np.array([1, 2, 3], dtype=np.int64)
    key = np.array([0, 1, 2], dtype=np.int32)
    c = np.array([0, 2], dtype=np.int64)
    out = np.full(2, -7, dtype=np.int64)
    args = (c, c, c, c, None, ts, key, key, key)
    assert _passes.settling_walk(*args, 0, 3, out)
    for lo, span in ((1, 3), (0, 2), (-5, 2)):  # a key below lo, at lo + span, above
        with pytest.raises(ValueError, match="outside"):
            _passes.settling_walk(*args, lo, span, out)
    for order in ([0, 2], [-1, 0], [0, np.iinfo(np.int64).max]):
        with pytest.raises(ValueError, match="outside"):
            _passes.settling_walk(c, c, c, c, np.array(order), ts, key, key, key, 0, 3, out)
    out[:] = -7  # out of time order: not answered (False), nothing written
    assert not _passes.settling_walk(c, c, c, c, None, ts[::-1].copy(), key, key, key, 0, 3, out)
    assert not _passes.settling_walk(c[::-1].copy(), c, c, c, None, ts, key, key, key, 0, 3, out)
    assert not _passes.settling_walk(c, c, c, c, np.array([1, 0]), ts, key, key, key, 0, 3, out)
    assert (out == -7).all()
    with pytest.raises(ValueError, match="lengths"):
        _passes.settling_walk(c, c[:1], c, c, None, ts, key, key, key, 0, 3, out)
    with pytest.raises(ValueError, match="lengths"):
        _passes.settling_walk(c, c, c, c, None, ts, key, key[:2], key, 0, 3, out)
    with pytest.raises(ValueError, match="lengths"):
        _passes.settling_walk(c, c, c, c, np.array([0]), ts, key, key, key, 0, 3, out)
    with pytest.raises(ValueError, match="span"):
        _passes.settling_walk(*args, 0, 0, out)
    with pytest.raises(TypeError):
        _passes.settling_walk(c, c, c, c, None, ts.astype(float), key, key, key, 0, 3, out)


def _next_by_order(ts, key):
    """Each row's next of the same key in the stable (key, ts) order (main 3574b72)."""
    from schedwake.model._util import lex_order

    order = lex_order(ts, key)
    want = np.full(len(ts), _NEVER, dtype=np.int64)
    same = key[order[1:]] == key[order[:-1]]
    want[order[:-1][same]] = ts[order[1:][same]]
    return want


def test_next_of_key_as_the_order_gives_it():
    """Each wake-up's next of the same key (``_next_waking_of_same_pid``'s walk) is the
    next in the stable (key, ts) order, ties in time included; life keys too, and
    wake-ups not in time order (the order's way)."""
    from schedwake.model.wakeups import _next_waking_of_same_pid

    rng = np.random.default_rng(4)
    for n, keys in ((1, 1), (50, 3), (3000, 40)):
        ts = np.sort(rng.integers(0, n // 2 + 1, n)).astype(np.int64)
        lives = rng.integers(0, 2, n) << 32
        for key in (rng.integers(0, keys, n), rng.integers(0, keys, n) + lives):
            want = _next_by_order(ts, key)
            assert np.array_equal(_next_waking_of_same_pid(ts, key), want)
            shuffled = rng.permutation(n)
            got = _next_waking_of_same_pid(ts[shuffled], key[shuffled])
            assert np.array_equal(got, _next_by_order(ts[shuffled], key[shuffled]))


def test_next_of_key_refuses_what_it_cannot_read():
    ts, out = np.arange(3, dtype=np.int64), np.empty(3, np.int64)
    with pytest.raises(ValueError):  # a key outside the range
        _passes.next_of_key(ts, np.array([0, 5, 1], np.int64), 0, 5, out)
    with pytest.raises(ValueError):  # arrays of different lengths
        _passes.next_of_key(ts, np.zeros(2, np.int64), 0, 5, out)
    assert not _passes.next_of_key(ts[::-1].copy(), np.zeros(3, np.int64), 0, 1, out)


def test_run_before_as_the_backward_search():
    """A wake-up's last run begun before it, from its first run at or after it, is the
    strict backward as-of search's answer: runs in (key, start) order or not, ties in
    time, wake-ups with no run after them or none at all."""
    from schedwake.model.wakeups import _run_before

    rng = np.random.default_rng(6)
    for n, m, keys in ((0, 5, 2), (40, 0, 2), (300, 200, 5), (3000, 2000, 60)):
        ts = rng.integers(0, 500, n).astype(np.int64)
        pid = rng.integers(0, keys, n).astype(np.int32)
        rpid = rng.integers(0, keys + 2, m).astype(np.int32)
        rstart = rng.integers(0, 500, m).astype(np.int64)
        for by_key in (False, True):  # (as drawn, then in (key, start) order)
            if by_key:
                o = np.lexsort((rstart, rpid))
                rpid, rstart = rpid[o], rstart[o]
            ni = asof_index(ts, pid, rstart, rpid, "forward", True)
            want = asof_index(ts, pid, rstart, rpid, "backward", False)
            assert np.array_equal(_run_before(ni, ts, pid, rstart, rpid), want)


def _runs(rng, m, pids):
    """Runs by (pid, start) with ties, as completeness gives them."""
    from schedwake.model.completeness import END_KINDS

    pid = np.sort(rng.integers(0, pids, m)).astype(np.int32)
    start = rng.integers(0, 300, m).astype(np.int64)
    start = start[np.lexsort((start, pid))]
    end = start + rng.integers(0, 60, m)
    return pd.DataFrame(
        {
            "pid": pid,
            "cpu": rng.integers(0, 4, m).astype(np.int32),
            "start_ts": start,
            "end_ts": end,
            "earliest_ts": start - rng.integers(0, 5, m),
            "end": pd.Categorical.from_codes(
                rng.integers(0, len(END_KINDS), m).astype(np.int8), categories=list(END_KINDS)
            ),
        }
    )


_RUN_FIELDS = ("index", "was_running", "next_ts", "next_from", "cpu", "end_ts", "ended")


def test_wake_runs_as_the_searches():
    """The walk gives what the as-of searches and gathers gave (the runs around each
    wake-up), with ties of times, keys without runs and wake-ups after every run."""
    rng = np.random.default_rng(5)
    for n, m, pids in ((0, 10, 3), (10, 0, 3), (50, 40, 5), (3000, 2000, 30)):
        runs = _runs(rng, m, pids)
        ts = np.sort(rng.integers(0, 400, n)).astype(np.int64)
        pid = rng.integers(0, pids + 2, n).astype(np.int32)
        rpid = runs["pid"].to_numpy()
        walked = wakeups._Runs.__new__(wakeups._Runs)
        searched = wakeups._Runs.__new__(wakeups._Runs)
        assert walked._walked(runs, ts, pid, rpid) == bool(n and m)
        searched._searched(runs, ts, pid, rpid)
        if not (n and m):
            continue
        for f in _RUN_FIELDS:
            assert getattr(walked, f).tolist() == getattr(searched, f).tolist(), f
        if n >= 3000:  # (each case came up)
            assert walked.was_running.any() and (walked.index < 0).any()


def test_wake_runs_refuses_what_it_cannot_read():
    """Orders it does not read answer False (the searches then run); keys outside the
    range told and arrays of other lengths are errors, never a read out of bounds."""
    rng = np.random.default_rng(6)
    runs = _runs(rng, 20, 3)
    ts = np.sort(rng.integers(0, 300, 10)).astype(np.int64)
    pid = rng.integers(0, 3, 10).astype(np.int32)
    rpid = runs["pid"].to_numpy()
    r = wakeups._Runs.__new__(wakeups._Runs)
    assert not r._walked(runs, ts[::-1].copy(), pid, rpid)  # wake-ups not in time order
    apart = pd.concat([runs.iloc[10:], runs.iloc[:10]], ignore_index=True)
    assert not r._walked(apart, ts, pid, apart["pid"].to_numpy())
    late = runs.copy()
    late.loc[0, "start_ts"], late.loc[0, "pid"] = 10**6, rpid[1]  # a key's runs out of time
    assert not r._walked(late, ts, pid, late["pid"].to_numpy())
    i64 = np.zeros(20, np.int64)
    outs = tuple(np.empty(10, t) for t in (np.int64, bool, np.int64, np.int64, np.int32,
                                           np.int64, bool))  # fmt: skip
    args = (ts, pid, rpid, i64, i64, i64, np.zeros(20, np.int32), i64, np.zeros(20, np.int8))
    assert _passes.wake_runs(*args, 0, 3, outs)
    for lo, span in ((1, 3), (0, 2)):  # a key below lo, at lo + span
        with pytest.raises(ValueError, match="outside"):
            _passes.wake_runs(*args, lo, span, outs)
    with pytest.raises(ValueError, match="lengths"):
        _passes.wake_runs(*args, 0, 3, outs[:6] + (np.empty(9, bool),))
    with pytest.raises(ValueError, match="lengths"):
        _passes.wake_runs(*args[:3], i64[:19], *args[4:], 0, 3, outs)
    with pytest.raises(ValueError, match="7 outputs"):
        _passes.wake_runs(*args, 0, 3, outs[:6])
