"""The NumPy helpers that replaced pandas merges and group-bys in the model and the
detectors (to keep memory near the size of the tables) give what the pandas versions
gave, on random inputs full of ties, nulls of keys and edge cases."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest

from schedwake.detect._iwr import llc_gap_segments, single_cpu_pids
from schedwake.model._util import asof_index, cat_mask, pid_cpu_counts, stable_order, table_span


def _asof_index_merge(
    lts: npt.ArrayLike,
    lkey: npt.ArrayLike | None,
    rts: npt.ArrayLike,
    rkey: npt.ArrayLike | None,
    direction: str = "backward",
    allow_exact: bool = True,
) -> np.ndarray:
    """``asof_index`` through ``pandas.merge_asof``: the oracle the tests compare with."""
    lts = np.asarray(lts, dtype=np.int64)
    rts = np.asarray(rts, dtype=np.int64)
    out = np.full(len(lts), -1, dtype=np.int64)
    if len(lts) == 0 or len(rts) == 0:
        return out
    left = pd.DataFrame({"ts": lts, "li": np.arange(len(lts), dtype=np.int64)})
    right = pd.DataFrame({"ts": rts, "ri": np.arange(len(rts), dtype=np.int64)})
    by = None
    if lkey is not None:
        left["k"] = np.asarray(lkey, dtype=np.int64)
        right["k"] = np.asarray(rkey, dtype=np.int64)
        by = "k"
    left = left.sort_values("ts", kind="stable")
    right = right.sort_values("ts", kind="stable")
    m = pd.merge_asof(
        left, right, on="ts", by=by, direction=direction, allow_exact_matches=allow_exact
    )
    ri = m["ri"].to_numpy(dtype="float64", na_value=np.nan)
    ok = ~np.isnan(ri)
    out[m["li"].to_numpy()[ok]] = ri[ok].astype(np.int64)
    return out


@pytest.mark.parametrize(
    "keys", ["none", "int32", "int64", "mixed", "unsigned", "wide_keys", "mixed_wide", "wide_ts"]
)
@pytest.mark.slow
def test_asof_index_matches_merge_asof(keys):
    rng = np.random.default_rng(7)
    trials = []
    for _ in range(120):
        n, m = int(rng.integers(0, 40)), int(rng.integers(0, 40))
        if len(trials) % 5 == 0:  # a few left rows against many right ones
            n, m = int(rng.integers(1, 4)), int(rng.integers(60, 200))
        lts, rts = rng.integers(0, 25, n), rng.integers(0, 25, m)
        if len(trials) % 2:
            rts = np.sort(rts)  # the usual case: right rows in time order
        lk, rk = rng.integers(-2, 4, n), rng.integers(-2, 4, m)
        if len(trials) % 3 == 0:  # left rows in (key, time) order
            by = np.lexsort((lts, lk))
            lts, lk = lts[by], lk[by]
        if keys == "none":
            lk = rk = None
        elif keys == "int32":
            lk, rk = lk.astype(np.int32), rk.astype(np.int32)
        elif keys == "mixed":
            lk = lk.astype(np.int32)
        elif keys == "unsigned":  # (each side as the passes read it: int64)
            lk, rk = (lk + 2).astype(np.uint16), (rk + 2).astype(np.int32)
        elif keys in ("wide_keys", "mixed_wide"):
            vals = np.array([-(2**31), -1, 0, 7, 2**31 - 1], dtype=np.int32)
            lk, rk = rng.choice(vals, n), rng.choice(vals, m)
            if keys == "mixed_wide":  # an int32 side against an int64 one
                rk = rk.astype(np.int64)
        elif keys == "wide_ts":  # times 2**62 apart
            rts = rts + (2**62) * rng.integers(0, 2, m)
        trials.append((lts, lk, rts, rk))
    for direction in ("backward", "forward"):
        for exact in (True, False):
            want = merge_asof_per_trial(trials, direction, exact)
            for trial, ((lts, lk, rts, rk), w) in enumerate(zip(trials, want)):
                got = asof_index(lts, lk, rts, rk, direction, exact)
                assert got.dtype == np.int64
                assert got.tolist() == w.tolist(), (trial, direction, exact)


def merge_asof_per_trial(trials, direction, exact) -> list[np.ndarray]:
    """``_asof_index_merge(lts, lk, rts, rk, direction, exact)`` of each trial, from one
    call of it on all the trials' rows (a pandas merge_asof a trial: nine tenths of the
    test's time): each row keyed by its trial and its key (0 without keys) packed into
    an int64, and merge_asof matches a row only with the rows of its own key."""

    def keyed(at):
        parts = [np.zeros(0, np.int64)]
        for t, tr in enumerate(trials):
            key = np.zeros(len(tr[at - 1]), np.int64) if tr[at] is None else tr[at]
            parts.append((np.int64(t) << 32) | (np.asarray(key, np.int64) & 0xFFFFFFFF))
        return np.concatenate(parts)

    lts = np.concatenate([np.zeros(0, np.int64)] + [tr[0] for tr in trials])
    rts = np.concatenate([np.zeros(0, np.int64)] + [tr[2] for tr in trials])
    got = _asof_index_merge(lts, keyed(1), rts, keyed(3), direction, exact)
    lo = np.cumsum([0] + [len(tr[0]) for tr in trials])
    ro = np.cumsum([0] + [len(tr[2]) for tr in trials])
    return [
        np.where(got[lo[t] : lo[t + 1]] >= 0, got[lo[t] : lo[t + 1]] - ro[t], -1)
        for t in range(len(trials))
    ]


@pytest.mark.parametrize(
    ("ncat", "held"), [(1, 0), (1, 1), (3, 2), (12, 4), (12, 5), (200, 150), (200, 200)]
)
def test_cat_mask_is_the_predicate_per_row_and_false_where_missing(ncat, held):
    """cat_mask gives what the predicate gives row by row, False for a missing row
    (code -1), whether it compares the codes with the few categories that hold or
    takes the flags by the codes (more of them), whatever the codes' width (int8 up to
    127 categories)."""
    rng = np.random.default_rng(ncat * 1000 + held)
    names = [f"t{i}" for i in range(ncat)]
    values = [None if rng.random() < 0.2 else names[int(rng.integers(ncat))] for _ in range(500)]
    cat = pd.Categorical(values, categories=names)
    holds = set(rng.permutation(ncat)[:held].tolist())

    def pred(name: str) -> bool:
        return int(name[1:]) in holds

    expected = np.array([v is not None and pred(v) for v in values])
    got = cat_mask(cat, pred)
    assert got.dtype == bool and got.shape == expected.shape
    assert np.array_equal(got, expected)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint16])
def test_stable_order_is_a_stable_argsort(dtype):
    rng = np.random.default_rng(1)
    info = np.iinfo(dtype)
    for lo, hi in ((0, 3), (-100, 100), (0, 70_000), (info.min, info.max)):
        lo, hi = max(lo, info.min), min(hi, info.max)
        key = rng.integers(lo, hi, 2000, endpoint=True).astype(dtype)
        assert stable_order(key).tolist() == np.argsort(key, kind="stable").tolist()
    assert len(stable_order(np.zeros(0, dtype))) == 0
    wide = rng.integers(-5, 5, 4000).astype(dtype)[::3]  # a view, not contiguous
    assert stable_order(wide).tolist() == np.argsort(wide, kind="stable").tolist()


def test_counting_order_checks_what_it_is_given():
    """The compiled counting sort refuses keys outside the range it is told, outputs of
    another length and arrays of other types, before writing anything."""
    from schedwake.model import _passes

    key = np.array([3, 1, 2, 1, 3], dtype=np.int64)
    out = np.full(5, -7, dtype=np.int64)
    _passes.counting_order(key, 1, 3, out)
    assert out.tolist() == [1, 3, 2, 0, 4]
    for lo, span in ((2, 3), (1, 2), (0, 3)):  # a key below lo, at lo + span, above
        out[:] = -7
        with pytest.raises(ValueError, match="outside"):
            _passes.counting_order(key, lo, span, out)
        assert (out == -7).all()
    extreme = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max], dtype=np.int64)
    with pytest.raises(ValueError, match="outside"):
        _passes.counting_order(extreme, 0, 4, np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="one slot a key"):
        _passes.counting_order(key, 1, 3, np.zeros(4, np.int64))
    with pytest.raises(ValueError, match="span"):
        _passes.counting_order(key, 1, 0, out)
    with pytest.raises(TypeError, match="integers"):
        _passes.counting_order(key.astype(np.float64), 1, 3, out)
    with pytest.raises(TypeError, match="integers"):
        _passes.counting_order(key, 1, 3, np.zeros(5, np.int32))


def test_pid_cpu_counts_and_single_cpu_pids_match_groupby():
    rng = np.random.default_rng(3)
    for trial in range(100):
        n = int(rng.integers(0, 150))
        pid = rng.integers(-3, 20, n).astype(np.int32)
        cpu = rng.integers(-1, 4, n).astype(np.int32)
        if trial % 3 == 0:
            cpu[:] = 2
        if trial % 5 == 0:  # pids or CPUs too far apart for the compiled pass's tables
            (pid if trial % 2 else cpu)[: n // 2] += 1 << 20
        g = pd.DataFrame({"pid": pid, "cpu": cpu}).groupby("pid")["cpu"].agg(["nunique", "size"])
        pids, rows, ncpus = pid_cpu_counts(pid, cpu)
        assert pids.tolist() == g.index.tolist()
        assert rows.tolist() == g["size"].tolist() and ncpus.tolist() == g["nunique"].tolist()
        for min_runs in (1, 3, 10):
            want = g.index[(g["nunique"] == 1) & (g["size"] >= min_runs)].to_numpy()
            got = single_cpu_pids(pid, cpu, min_runs)
            assert got.dtype == want.dtype and got.tolist() == want.tolist()


def _gaps_with_pandas(icpu, istart, iend, wcpu, wstart, wend):
    """The idle-while-runnable sweep as it was written with pandas group-bys, its pieces
    that touch joined."""
    i = pd.DataFrame({"cpu": icpu, "start_ts": istart, "end_ts": iend})
    wt = pd.DataFrame({"cpu": wcpu, "start_ts": wstart, "end_ts": wend})
    ts = np.concatenate([i["start_ts"], i["end_ts"], wt["start_ts"], wt["end_ts"]])
    if len(ts) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    cpu = np.concatenate([i["cpu"], i["cpu"], wt["cpu"], wt["cpu"]]).astype(np.int64)
    d_idle = np.concatenate([np.ones(len(i)), -np.ones(len(i)), np.zeros(2 * len(wt))]).astype(
        np.int64
    )
    d_wait = np.concatenate([np.zeros(2 * len(i)), np.ones(len(wt)), -np.ones(len(wt))]).astype(
        np.int64
    )
    order = np.argsort(ts, kind="stable")
    ts, cpu, d_idle, d_wait = ts[order], cpu[order], d_idle[order], d_wait[order]
    df = pd.DataFrame({"cpu": cpu, "di": d_idle, "dw": d_wait})
    g = df.groupby("cpu")
    idle_c = g["di"].cumsum().to_numpy() > 0
    wait_c = g["dw"].cumsum().to_numpy() > 0
    df["i"], df["bw"] = idle_c.astype(np.int64), (wait_c & ~idle_c).astype(np.int64)
    n_idle = np.cumsum(df.groupby("cpu")["i"].diff().fillna(df["i"]).to_numpy())
    n_bw = np.cumsum(df.groupby("cpu")["bw"].diff().fillna(df["bw"]).to_numpy())
    seg_end = np.append(ts[1:], ts[-1])
    sel = (n_idle >= 1) & (n_bw >= 1) & (seg_end > ts)
    segments: list[list[int]] = []  # the pieces, those that touch joined: the gap's stretches
    for s, e in zip(ts[sel].tolist(), seg_end[sel].tolist()):
        if segments and segments[-1][1] == s:
            segments[-1][1] = e
        else:
            segments.append([s, e])
    joined = np.array(segments, np.int64).reshape(-1, 2)
    return joined[:, 0].copy(), joined[:, 1].copy()


@pytest.mark.parametrize("far", [False, True])
def test_llc_gap_segments_match_the_pandas_sweep(far):
    rng = np.random.default_rng(11)
    for _ in range(120):
        ncpu = int(rng.choice([1, 2, 3, 5, 17, 40]))  # (CPUs grouped, many or few)
        ni, nw = int(rng.integers(0, 40)), int(rng.integers(0, 80))
        icpu = rng.integers(0, ncpu, ni).astype(np.int32)
        wcpu = rng.integers(0, ncpu + 1, nw).astype(np.int32)  # some outside the LLC
        istart = rng.integers(0, 40, ni)
        iend = istart + rng.integers(0, 5, ni)  # zero-length ones too
        wstart = rng.integers(0, 40, nw)
        wend = wstart + rng.integers(1, 6, nw)
        if far:  # times too far apart to pack with the CPU into one int64
            istart, iend = istart + 2**61, iend + 2**61
        group = list(range(ncpu))
        inside = np.isin(wcpu, group)
        want = _gaps_with_pandas(icpu, istart, iend, wcpu[inside], wstart[inside], wend[inside])
        got = llc_gap_segments(group, icpu, istart, iend, wcpu, wstart, wend)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


def test_a_gap_that_other_events_pass_through_is_one_segment():
    """CPU 0 idle from 10 to 100, a task waiting on busy CPU 1 from 20 to 90: one gap
    segment (20, 90), though a second wait on CPU 1 starts and ends inside it, CPU 2
    goes idle and comes back and a wait on CPU 2 comes and goes; a wait on CPU 1 right
    after (90 to 95, CPU 0 still idle) extends it; and one that starts later (97 to 99)
    is a segment of its own."""
    icpu, istart, iend = (np.array(x, np.int64) for x in ([0, 2], [10, 40], [100, 60]))
    wcpu = np.array([1, 1, 2, 1, 1], np.int32)
    wstart = np.array([20, 30, 70, 90, 97], np.int64)
    wend = np.array([90, 50, 75, 95, 99], np.int64)
    s, e = llc_gap_segments([0, 1, 2], icpu.astype(np.int32), istart, iend, wcpu, wstart, wend)
    assert list(zip(s.tolist(), e.tolist())) == [(20, 95), (97, 99)]


@pytest.mark.parametrize("direction", ["backward", "forward"])
@pytest.mark.parametrize("exact", [True, False])
def test_asof_index_of_many_left_rows_most_without_a_right_key(direction, exact):
    """Every task's wake-ups against the work items of a few kworkers: most left keys
    have no right row (the search runs for the others only), checked against the
    merge_asof reference."""
    rng = np.random.default_rng(11)
    lts, lk = rng.integers(0, 5000, 6000), rng.integers(0, 300, 6000).astype(np.int32)
    rts, rk = np.sort(rng.integers(0, 5000, 400)), rng.integers(0, 8, 400).astype(np.int32)
    want = _asof_index_merge(lts, lk, rts, rk, direction, exact)
    got = asof_index(lts, lk, rts, rk, direction, exact)
    assert (got >= 0).sum() > 50  # some rows match, most do not
    assert got.tolist() == want.tolist()


def test_shared_orders_reused_only_for_the_same_rows(monkeypatch):
    """Under ``shared_orders`` a right side searched again reuses its (key, ts) order,
    and rows that merely look alike (same length and sampled rows, other contents: ties
    moved, one time changed, keys of another type) get their own order: every answer is
    the one without sharing."""
    import schedwake.model._util as util

    monkeypatch.setattr(util, "_SHARED_MIN_ROWS", 8)
    rng = np.random.default_rng(5)
    m = 4000
    rts, rk = rng.integers(0, 900, m), rng.integers(0, 40, m)
    lts, lk = rng.integers(0, 900, 3000), rng.integers(0, 45, 3000)
    other_ts = rts.copy()
    other_ts[1] += 1  # (not a sampled row)
    swapped = rk.copy()
    swapped[[1, 2]] = swapped[[2, 1]]  # (two unsampled rows' keys exchanged)
    sides = [(rts, rk), (rts.copy(), rk.astype(np.int32)), (other_ts, rk), (rts, swapped)]
    want = [
        asof_index(lts, lk, a, k, d, e)
        for a, k in sides
        for d in ("backward", "forward")
        for e in (True, False)
    ]
    with util.shared_orders():
        for _ in range(2):
            got = [
                asof_index(lts, lk, a, k, d, e)
                for a, k in sides
                for d in ("backward", "forward")
                for e in (True, False)
            ]
            assert [g.tolist() for g in got] == [w.tolist() for w in want]
        kept = util._ORDERS.get()
        # (the copy with int32 keys reuses the first order; an order that also sorts
        # other rows is theirs as well)
        assert kept is not None and 1 <= sum(len(v) for v in kept.values()) < len(sides)
    assert util._ORDERS.get() is None


def test_lex_order_is_the_stable_lexsort():
    """``lex_order`` (radix passes, a packed stable sort or the lexsort) gives the very
    permutation of ``np.lexsort((ts, key))``: ties in their given order, keys of any
    integer type, negative values, time ranges too wide to pack."""
    from schedwake.model._util import lex_order

    rng = np.random.default_rng(9)
    for trial in range(200):
        n = int(rng.integers(0, 300))
        ts = rng.integers(-20, 20, n)
        key = rng.integers(-3, 5, n).astype([np.int32, np.int64, np.uint16][trial % 3])
        if trial % 4 == 1:
            ts = np.sort(ts)
        elif trial % 4 == 2:
            ts = ts + (2**61) * rng.integers(0, 3, n)  # (too wide: the lexsort)
        elif trial % 8 == 3:
            ts = ts.astype(np.int32)  # (times of another type, packed too)
        elif trial % 8 == 7:  # packed to the last of the 62 bits: key 3 bits, ts 59
            ts = ts + (2**58) * rng.integers(0, 2, n)
        got = lex_order(ts, key)
        assert got.tolist() == np.lexsort((ts, key)).tolist(), trial


def test_pack_by_refuses_what_it_cannot_read():
    from schedwake.model import _passes

    key, ts = np.array([2, 1], np.int32), np.array([5, 7], np.int64)
    out = np.empty(2, np.int64)
    _passes.pack_by(key, ts, np.array([1, 0]), 1, 5, 3, out)
    assert out.tolist() == [2, 8 + 0]
    for by in ([0, 2], [-1, 0], [0, np.iinfo(np.int64).max]):
        with pytest.raises(ValueError, match="outside"):
            _passes.pack_by(key, ts, np.array(by), 1, 5, 3, out)
    with pytest.raises(ValueError, match="lengths"):
        _passes.pack_by(key, ts[:1], np.array([1, 0]), 1, 5, 3, out)
    with pytest.raises(ValueError, match="tbits"):
        _passes.pack_by(key, ts, np.array([1, 0]), 1, 5, 63, out)
    with pytest.raises(TypeError):
        _passes.pack_by(key, ts.astype(float), np.array([1, 0]), 1, 5, 3, out)


def test_member_is_isin():
    """_util.member (a table over small key ranges, over (life, pid) for life keys,
    else binary searches) answers as np.isin."""
    from schedwake.model._util import member

    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(0, 60))
        scale = int(rng.choice([1, 1 << 32, 1 << 40]))
        v = rng.integers(-3, 4, n) * scale + rng.integers(-5, 50, n)
        k = rng.integers(-3, 4, int(rng.integers(0, 20))) * scale + rng.integers(-5, 50, 1)
        for dtype in (np.int64, np.int32):
            if scale == 1 or dtype == np.int64:
                got = member(v.astype(dtype), k.astype(dtype))
                assert (got == np.isin(v.astype(dtype), k.astype(dtype))).all()
        if scale == 1:  # values of another type, and a view that is not contiguous
            vu = np.abs(v).astype(np.uint16)[::2]
            assert (member(vu, np.abs(k)) == np.isin(vu, np.abs(k))).all()


def test_in_table_checks_what_it_is_given():
    """The compiled table lookup answers False outside its table and refuses an output
    of another length."""
    from schedwake.model import _passes

    out = np.zeros(3, dtype=bool)
    _passes.in_table(np.array([-(2**63), 7, 8], np.int64), np.array([1, 0], bool), 7, out)
    assert out.tolist() == [False, True, False]
    with pytest.raises(ValueError, match="one slot"):
        _passes.in_table(np.array([5, 6, 5], np.int64), np.array([1], bool), 0, np.zeros(2, bool))
    # a table of slots (asof_index's keys' positions): the slot, -1 outside
    slots = np.zeros(3, dtype=np.int64)
    for values in (np.array([-(2**63), 7, 8], np.int64), np.array([-(2**31), 7, 8], np.int32)):
        _passes.in_table(values, np.array([4, -1], np.int64), 7, slots)
        assert slots.tolist() == [-1, 4, -1]
    with pytest.raises(TypeError):  # (the output of the table's kind)
        _passes.in_table(np.array([7], np.int64), np.array([4], np.int64), 7, np.zeros(1, bool))
    with pytest.raises(TypeError):
        _passes.in_table(np.array([7], np.int64), np.array([1], bool), 7, np.zeros(1, np.int64))
    with pytest.raises(ValueError, match="one slot"):
        _passes.in_table(np.array([7, 7], np.int64), np.array([4], np.int64), 7, slots)
    ro = np.zeros(1, np.int64)
    ro.setflags(write=False)
    with pytest.raises((ValueError, BufferError, TypeError)):
        _passes.in_table(np.array([7], np.int64), np.array([4], np.int64), 7, ro)


def test_life_boundaries_match_a_walk_of_each_pid():
    """``lives.boundaries`` (only the pids the compiled pass flags are sorted) finds
    what walking each pid's rows in (ts, birth < event < death) order finds, on random
    rows with ties, pid 0, dense pids and a pid range too wide for the pass's table."""
    from schedwake.model import _passes
    from schedwake.model.lives import _ACT, _BIRTH, _DEATH, boundaries

    prio = {_BIRTH: 0, _ACT: 1, _DEATH: 2}

    def walk(pid, ts, kind):
        found = []
        for p in sorted(set(pid.tolist()) - {0}):
            rows = sorted((t, prio[k], k) for q, t, k in zip(pid, ts, kind) if q == p)
            for (_, _, before), (t, _, k) in zip(rows, rows[1:]):
                if before == _DEATH or (k == _BIRTH and before == _ACT):
                    found.append((p, t))
        return found

    rng = np.random.default_rng(7)
    for trial in range(300):
        n = int(rng.integers(0, 40))
        pid = rng.integers(0, 6, n).astype(np.int64)
        if trial % 10 == 0:
            pid[pid == 5] = 1 << 40  # (a range no table covers)
        ts = rng.integers(0, 12, n).astype(np.int64)
        kind = rng.choice([_ACT, _ACT, _ACT, _DEATH, _BIRTH], n).astype(np.int8)
        bp, bt = boundaries(pid, ts, kind)
        assert list(zip(bp.tolist(), bt.tolist())) == walk(pid, ts, kind), trial
    # the pass refuses a pid outside the range it is told, or a kind it does not know
    out = np.zeros(2, dtype=bool)
    args = (np.array([3, 4], np.int64), np.array([1, 2], np.int64))
    with pytest.raises(ValueError, match="outside"):
        _passes.life_candidates(((*args, np.array([0, 1], np.int8)),), 3, 1, (out,))
    with pytest.raises(ValueError, match="kind"):
        _passes.life_candidates(((*args, np.array([0, 3], np.int8)),), 3, 2, (out,))
    with pytest.raises(ValueError, match="kind"):  # (one kind for the part)
        _passes.life_candidates(((*args, 5),), 3, 2, (out,))
    with pytest.raises(ValueError, match="lengths"):
        _passes.life_candidates(((*args, np.array([0], np.int8)),), 3, 2, (out,))
    with pytest.raises(ValueError, match="out each"):
        _passes.life_candidates(((*args, 0),), 3, 2, ())


@pytest.mark.parametrize("direction", ["backward", "forward"])
@pytest.mark.parametrize("exact", [True, False])
def test_asof_index_gallops_over_long_keys(direction, exact):
    """Long runs of one key (the compiled search gallops from where the key's previous
    left row ended): left rows in time order, reversed and shuffled, times with ties,
    equal the merge_asof reference."""
    rng = np.random.default_rng(5)
    rts = np.sort(rng.integers(0, 400_000, 60_000))
    rk = rng.integers(0, 3, len(rts)).astype(np.int32)
    lts = np.sort(rng.integers(-10, 400_010, 20_000))
    lk = rng.integers(-1, 4, len(lts)).astype(np.int32)
    for order in (slice(None), slice(None, None, -1), rng.permutation(len(lts))):
        want = _asof_index_merge(lts[order], lk[order], rts, rk, direction, exact)
        got = asof_index(lts[order], lk[order], rts, rk, direction, exact)
        assert got.tolist() == want.tolist()


def test_asof_slots_checks_what_it_is_given():
    """The compiled search refuses positions and slots outside the arrays they index,
    and arrays of unequal lengths, before searching."""
    from schedwake.model import _passes

    lts, rts = np.array([5, 9], np.int64), np.array([1, 4, 8], np.int64)
    order, starts, ends = np.array([0, 1, 2], np.int64), np.array([0]), np.array([3])
    out = np.zeros(2, np.int64)
    _passes.asof_slots(lts, np.array([0, -1]), rts, order, starts, ends, True, True, out)
    assert out.tolist() == [1, -1]
    hostile = [
        (np.array([0, 1]), order, starts, ends),  # a slot past the keys
        (np.array([0, -2]), order, starts, ends),
        (np.array([0, 0]), np.array([0, 1, 3]), starts, ends),  # a position past rts
        (np.array([0, 0]), np.array([0, -1, 2]), starts, ends),
        (np.array([0, 0]), order, starts, np.array([4])),  # a range past the order
        (np.array([0, 0]), order, np.array([2]), np.array([1])),  # a range backwards
    ]
    for slot, o, st, en in hostile:
        with pytest.raises(ValueError, match="outside"):
            _passes.asof_slots(lts, slot, rts, o, st, en, True, True, out)
    with pytest.raises(ValueError, match="lengths"):
        _passes.asof_slots(lts, np.array([0]), rts, order, starts, ends, True, True, out)


def test_key_groups_are_a_sorted_group_by():
    """``key_groups`` (a hash table in C for few groups, a sort for many, a lexsort for
    columns too wide to pack) gives a pandas group-by's groups, sizes and sums, in the
    columns' own types."""
    from schedwake.model import key_groups

    rng = np.random.default_rng(4)
    cases = []
    for trial in range(60):
        n = int(rng.integers(1, 300))
        a = rng.integers(-3, 3, n).astype(np.int32)
        b = rng.integers(0, 1 << 20, n) if trial % 2 else rng.integers(5, 9, n)
        if trial % 7 == 0:
            b = b + (rng.integers(0, 2, n) << 61)  # (too wide: the lexsort)
        cases.append((a, b, rng.integers(0, 2, n).astype(bool)))
    n = 300_000  # more groups than the hash table takes: the sort
    cases.append((rng.integers(0, 2, n), rng.permutation(n), rng.integers(0, 2, n) > 0))
    for a, b, w in cases:
        g = pd.DataFrame({"a": a, "b": b, "w": w}).groupby(["a", "b"])["w"].agg(["size", "sum"])
        (ga, gb), rows, sums = key_groups([a, b], w)
        assert ga.dtype == a.dtype and gb.dtype == b.dtype
        assert ga.tolist() == g.index.get_level_values(0).tolist()
        assert gb.tolist() == g.index.get_level_values(1).tolist()
        assert rows.tolist() == g["size"].tolist() and sums.tolist() == g["sum"].tolist()
        assert key_groups([a, b])[2] is None
    with pytest.raises(ValueError, match="negative"):
        from schedwake.model import _passes

        _passes.group_sums(np.array([3, -1], np.int64), None, 10)


@pytest.mark.parametrize("direction", ["backward", "forward"])
@pytest.mark.parametrize("exact", [True, False])
def test_asof_index_of_two_sides_in_time_order(direction, exact):
    """Both sides in time order (the compiled walk over both): ties within and across
    the sides, negative keys, life keys (pid + life << 32) and keys of two types equal
    the merge_asof reference."""
    rng = np.random.default_rng(9)
    for trial in range(200):
        n, m = int(rng.integers(0, 60)), int(rng.integers(0, 60))
        lts, rts = np.sort(rng.integers(0, 30, n)), np.sort(rng.integers(0, 30, m))
        lk, rk = rng.integers(-2, 5, n), rng.integers(-2, 5, m)
        if trial % 3 == 0:  # life keys: too wide for a table but for their compaction
            lk, rk = (
                np.abs(lk) + (rng.integers(0, 3, n) << 32),
                np.abs(rk) + (rng.integers(0, 3, m) << 32),
            )
        elif trial % 3 == 1:
            lk = lk.astype(np.int32)
        want = _asof_index_merge(lts, lk, rts, rk, direction, exact)
        got = asof_index(lts, lk, rts, rk, direction, exact)
        assert got.tolist() == want.tolist(), trial


def test_is_sorted_as_the_comparison():
    """``is_sorted`` (a compiled pass for 4- and 8-byte ints, stopping where the order
    breaks) says what comparing each row with the previous says, ties and the ends of
    the types included; other types and strided views by NumPy."""
    from schedwake.model import _passes
    from schedwake.model._util import is_sorted

    rng = np.random.default_rng(13)
    for dtype in (np.int32, np.int64, np.uint16, np.float64):
        info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else np.finfo(dtype)
        for n in (0, 1, 2, 3, 50):
            for _ in range(20):
                a = np.sort(rng.integers(0, 5, n)).astype(dtype)
                if n and rng.random() < 0.3:
                    a[0], a[-1] = info.min, info.max
                if n > 1 and rng.random() < 0.5:
                    i = int(rng.integers(1, n))
                    a[i - 1], a[i] = a[i], a[i - 1]  # (a tie stays in order)
                want = bool(n < 2 or (a[1:] >= a[:-1]).all())
                assert is_sorted(a) is want
                assert is_sorted(np.repeat(a, 2)[::2]) is want  # (a strided view)
    with pytest.raises(TypeError):
        _passes.ascending(np.array([1.0, 2.0]))
    assert _passes.ascending(np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max]))
    assert not _passes.ascending(np.array([np.iinfo(np.int32).max, np.iinfo(np.int32).min]))


def _take_plain(arr, idx, fill):
    """``take`` row by row: the array's type, widened to hold fill when one is used."""
    used = bool((idx < 0).any())
    dtype = np.result_type(arr.dtype, np.asarray(fill).dtype) if used else arr.dtype
    return np.array([fill if i < 0 else arr[i] for i in idx.tolist()], dtype=dtype)


def test_take_as_row_by_row():
    """``take`` (a compiled pass when the answer keeps the array's type) gives the
    values and the type a row-by-row take gives, whatever the indices and fill."""
    from schedwake.model._util import _takes_compiled, take

    rng = np.random.default_rng(17)
    big = np.iinfo(np.int64).max
    cases = [
        (np.int64, -1), (np.int64, big), (np.int64, np.int64(0)), (np.int32, -1),
        (np.int32, np.int32(-3)), (bool, False), (bool, -1), (np.int64, 0.5), (np.uint16, 0),
    ]  # fmt: skip
    compiled = 0
    for dtype, fill in cases:
        for n, m in ((0, 5), (7, 1), (40, 300)):
            arr = rng.integers(-50, 50, m).astype(dtype)
            for idx in (rng.integers(-3, m, n), rng.integers(0, m, n)):
                got, want = take(arr, idx, fill), _take_plain(arr, idx, fill)
                assert got.dtype == want.dtype, (dtype, fill)
                assert got.tolist() == want.tolist(), (dtype, fill)
                compiled += _takes_compiled(arr, idx, fill)
    assert compiled >= 20  # (the pass answered most)


def test_take_fill_refuses_what_it_cannot_read():
    from schedwake.model import _passes

    arr = np.array([5, 6, 7], dtype=np.int64)
    out = np.zeros(2, dtype=np.int64)
    with pytest.raises(ValueError, match="past"):
        _passes.take_fill(arr, np.array([0, 3]), -1, out)
    with pytest.raises(ValueError, match="past"):
        _passes.take_fill(arr, np.array([0, np.iinfo(np.int64).max]), -1, out)
    with pytest.raises(ValueError, match="one slot"):
        _passes.take_fill(arr, np.array([0, 1, 2]), -1, out)
    with pytest.raises(TypeError):  # (an output narrower than the array)
        _passes.take_fill(arr, np.array([0, 1]), -1, np.zeros(2, np.int32))
    with pytest.raises(TypeError):
        _passes.take_fill(arr.astype(np.int16), np.array([0, 1]), -1, out)
    with pytest.raises(TypeError):
        _passes.take_fill(arr, np.array([0, 1], np.int32), -1, out)
    _passes.take_fill(arr, np.array([np.iinfo(np.int64).min, 2]), -9, out)
    assert out.tolist() == [-9, 7]
    flags = np.zeros(2, dtype=np.int64)  # (flags widened to ints)
    _passes.take_fill(np.array([True, False]), np.array([0, -1]), 4, flags)
    assert flags.tolist() == [1, 4]


def test_table_span_is_the_keys_range_when_a_table_of_it_is_small():
    a, b = np.array([5, 9], np.int32), np.array([7, -3], np.int64)
    assert table_span([a, b]) == (-3, 13)
    assert table_span([a, np.zeros(0, np.int64)]) == (5, 5)  # (an empty array: no rows)
    assert table_span([np.zeros(0, np.int64)]) is None
    assert table_span([]) is None
    # at most twice the rows, or 2**16 slots
    assert table_span([np.array([0, (1 << 16) - 1])]) == (0, 1 << 16)
    assert table_span([np.array([0, 1 << 16])]) is None
    wide = np.arange(40_000, dtype=np.int64) * 2  # 80,000 rows' worth of range, 40,000 rows
    assert table_span([wide]) == (0, 79_999)
    assert table_span([wide * 2]) is None
