"""The compiled pass of completeness's proofs (_pass_completeness.c) gives what the
NumPy gathers gave, on random inputs full of ties, and refuses positions outside the
switches and arrays of other lengths with an error, never a read out of bounds."""

from __future__ import annotations

import numpy as np
import pytest

from schedwake.model import _passes


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
