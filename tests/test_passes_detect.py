"""The detectors' compiled passes (_pass_detect.c) refuse what they cannot read (a
CPU or a kind outside the range told, arrays of other lengths or types) with an error,
never a read out of bounds; the sweep's answers against a plain loop are
tests/c/passes_units.c's, and llc_gap_segments' tests/test_vectorized_helpers.py's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from schedwake.model import _passes, last_rows, overlaps_union
from schedwake.model._util import take_cat


def _out(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.empty(n, np.int64), np.empty(n, np.int64)


def test_gap_sweep_refuses_codes_outside_its_range():
    ts = np.array([0, 5, 9], np.int64)
    for code in ([0, 2 << 3, 1], [0, 6, 1], [-1, 0, 1]):  # CPU 2 of 2, kind 6, negative
        with pytest.raises(ValueError):
            _passes.gap_sweep(ts, np.array(code, np.int64), 2, *_out(3))
    with pytest.raises(ValueError):  # (no CPU at all)
        _passes.gap_sweep(ts, np.zeros(3, np.int64), 0, *_out(3))
    with pytest.raises(ValueError):  # outputs shorter than the ends
        _passes.gap_sweep(ts, np.zeros(3, np.int64), 1, *_out(2))
    with pytest.raises(TypeError):  # times as floats
        _passes.gap_sweep(ts.astype(float), np.zeros(3, np.int64), 1, *_out(3))


def test_gap_sweep_one_segment_of_two_cpus():
    """CPU 0 idle over [0, 10), a wait on CPU 1 over [2, 6): the gap is [2, 6)."""
    ts = np.array([0, 2, 6, 10], np.int64)
    code = np.array([0 << 3 | 0, 1 << 3 | 2, 1 << 3 | 3, 0 << 3 | 1], np.int32)
    s, e = _out(4)
    m = _passes.gap_sweep(ts, code, 2, s, e)
    assert (m, s[:m].tolist(), e[:m].tolist()) == (1, [2], [6])


def test_overlapping_against_a_plain_loop():
    rng = np.random.default_rng(5)
    for _ in range(200):
        istart = rng.integers(0, 100, int(rng.integers(0, 8)))
        iend = istart + rng.integers(-3, 15, len(istart))  # (backward ones: not idle time)
        start = rng.integers(-10, 120, 60)
        end = start + rng.integers(-8, 12, 60)
        got = overlaps_union(start, end, istart, iend)
        lo, hi = np.minimum(start, end), np.maximum(start, end)
        want = [
            any(s < e and s < h and e > low for s, e in zip(istart, iend)) for low, h in zip(lo, hi)
        ]
        assert got.tolist() == want


def test_overlapping_refuses_arrays_of_other_lengths():
    a = np.zeros(3, np.int64)
    with pytest.raises(ValueError):
        _passes.overlapping(a, a, a, a[:2], np.zeros(3, bool))
    with pytest.raises(ValueError):
        _passes.overlapping(a, a[:2], a, a, np.zeros(3, bool))
    with pytest.raises(TypeError):  # out must be flags, writable
        _passes.overlapping(a, a, a, a, np.zeros(3, np.int64))


def test_key_neighbors_against_a_scan():
    rng = np.random.default_rng(8)
    key = rng.integers(0, 4, 500).astype(np.int32)
    rows = np.flatnonzero(rng.random(500) < 0.2).astype(np.int64)
    prev, nxt = np.empty(len(rows), np.int64), np.empty(len(rows), np.int64)
    _passes.key_neighbors(key, rows, 0, 4, prev, nxt)
    for r, p, q in zip(rows, prev, nxt):
        same = np.flatnonzero(key == key[r])
        assert p == (same[same < r][-1] if (same < r).any() else -1)
        assert q == (same[same > r][0] if (same > r).any() else -1)


def test_key_neighbors_refuses_what_it_cannot_read():
    key = np.array([0, 1, 2], np.int64)
    out = np.empty(2, np.int64), np.empty(2, np.int64)
    for rows, span in (([2, 1], 3), ([0, 3], 3), ([-1, 0], 3), ([0, 1], 2)):
        with pytest.raises(ValueError):  # (not ascending, outside the keys, key 2 of 2)
            _passes.key_neighbors(key, np.array(rows, np.int64), 0, span, *out)
    with pytest.raises(ValueError):  # one output slot a row
        _passes.key_neighbors(key, np.array([0], np.int64), 0, 3, *out)


def test_last_rows_are_those_drop_duplicates_keeps():
    rng = np.random.default_rng(3)
    for key in (
        rng.integers(0, 30, 2000).astype(np.int32),
        rng.integers(0, 30, 2000) + (rng.integers(0, 3, 2000) << 32),  # (life keys)
        rng.integers(0, 1 << 60, 50),  # (a range no table covers)
        np.zeros(0, np.int64),
    ):
        want = pd.DataFrame({"k": key}).drop_duplicates("k", keep="last").index.to_numpy()
        keys, rows = last_rows(key)
        assert np.sort(rows).tolist() == want.tolist()
        assert keys.tolist() == sorted(set(key.tolist()))  # (ascending, each once)
        assert key[rows].tolist() == keys.tolist()


def test_take_cat_as_the_codes_give_it():
    cat = pd.Categorical(["b", "a", None, "c", "a"])
    for c in (cat, pd.Categorical(cat, categories=[f"x{i}" for i in range(300)] + ["a", "b", "c"])):
        got = take_cat(c, np.array([4, -1, 2, 0, 3], np.int64))
        assert list(got.astype(object)) == ["a", np.nan, np.nan, "b", "c"]
        assert list(got.categories) == list(c.categories)
    with pytest.raises((IndexError, ValueError)):  # (a row that is not there)
        take_cat(cat, np.array([5], np.int64))
