"""Vectorized helpers of the model: as-of joins, categorical picking, table access."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from . import _passes

if TYPE_CHECKING:
    from .memo import TraceTables


def in_span(ts: np.ndarray, t0: int | None, t1: int | None) -> np.ndarray:
    """Which of the times ``ts`` fall in ``[t0, t1)`` (None: open): a time part of a
    trace (:mod:`schedwake.partition`)."""
    keep = np.ones(len(ts), dtype=bool)
    if t0 is not None:
        keep &= ts >= t0
    if t1 is not None:
        keep &= ts < t1
    return keep


def asof_index(
    lts: npt.ArrayLike,
    lkey: npt.ArrayLike | None,
    rts: npt.ArrayLike,
    rkey: npt.ArrayLike | None,
    direction: str = "backward",
    allow_exact: bool = True,
) -> np.ndarray:
    """For each left row, the position of the right row with the same key and the
    nearest ``ts`` in ``direction`` (``backward``: last rts <= lts; ``forward``: first
    rts >= lts; strict when ``allow_exact`` is False), or -1.

    ``lkey``/``rkey`` may be None (no key). Positions refer to the right arrays as given.
    Rows with equal ``ts`` keep their given order (stable sorts), so the right row
    chosen among ties is the last (backward) or first (forward) in that order.

    Keyed, in compiled code: when both sides are in time order and the keys in a small
    range, one walk over both (``_passes.asof_merge``); else galloping searches
    (``_passes.asof_slots``), each left row within its key's range of the right rows
    ordered by (key, ts). No frames, no merge_asof.
    """
    lts = np.ascontiguousarray(lts, dtype=np.int64)
    rts = np.ascontiguousarray(rts, dtype=np.int64)
    if len(lts) == 0 or len(rts) == 0:
        return np.full(len(lts), -1, dtype=np.int64)
    backward = direction == "backward"
    side: Literal["left", "right"] = "right" if backward == allow_exact else "left"
    if lkey is None:
        out = np.full(len(lts), -1, dtype=np.int64)
        order = None if is_sorted(rts) else np.argsort(rts, kind="stable")
        pos = np.searchsorted(rts if order is None else rts[order], lts, side)
        if backward:
            pos -= 1
            ok = pos >= 0
        else:
            ok = pos < len(rts)
        pos = pos[ok]
        out[ok] = pos if order is None else order[pos]
        return out
    # keys in their own integer type, each side as it is (pids and CPUs are int32, life
    # keys and some tables' pids int64: the passes read either, no int64 copies)
    lkey, rkey = key_ints(np.asarray(lkey)), key_ints(np.asarray(rkey))
    small = small_keys(lkey, rkey)
    if small is not None:
        # both sides in time order (event tables are): one walk over both
        lk, rk, lo, span = small
        out = np.empty(len(lts), dtype=np.int64)
        if _passes.asof_merge(lts, lk, rts, rk, lo, span, backward, allow_exact, out):
            return out
    if len(lts) * 16 < len(rts):
        # a few left rows against many right ones (a task's waits against every
        # switch): only the right rows of the left's keys can match; sorting the rest
        # would cost the most
        mine = np.flatnonzero(member(rkey, lkey))
        if len(mine) * 2 < len(rts):
            pos = asof_index(lts, lkey, rts[mine], rkey[mine], direction, allow_exact)
            hit = pos >= 0
            pos[hit] = mine[pos[hit]]
            return pos
    if in_key_time_order(rts, rkey):
        order = None  # (already by key, then time)
        rk = rkey
    else:
        order = key_time_order(rts, rkey)
        rk = rkey[order]
    starts = np.flatnonzero(rk[1:] != rk[:-1])
    starts += 1
    starts = np.concatenate([np.zeros(1, np.int64), starts])
    ends = np.append(starts[1:], len(rk))
    ukeys = rk[starts]
    del rk
    slot = _key_slot(ukeys, lkey)
    out = np.empty(len(lts), dtype=np.int64)
    _passes.asof_slots(
        lts,
        slot,
        rts,
        None if order is None else order.astype(np.int64, copy=False),
        starts,
        ends,
        backward,
        allow_exact,
        out,
    )
    return out


def table_span(keys: Sequence[np.ndarray]) -> tuple[int, int] | None:
    """(lo, span) of the integer keys' range when a table of it (a slot a key value, as
    the compiled passes keep them) is not much bigger than the keys: at most twice their
    rows, or 2**16 slots; else None (None too when there are no keys)."""
    full = [k for k in keys if len(k)]
    if not full:
        return None
    lo, hi = min(int(k.min()) for k in full), max(int(k.max()) for k in full)
    if hi - lo < max(2 * sum(len(k) for k in full), _TABLE_MIN_SLOTS):
        return lo, hi - lo + 1
    return None


_TABLE_MIN_SLOTS = 1 << 16


def small_keys(
    lkey: np.ndarray, rkey: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int, int] | None:
    """Two key arrays as keys in a range not much wider than their rows, for a table of
    them: (left, right, lo, span), contiguous, 4 or 8 bytes a key; equal keys stay equal,
    others apart. Life keys (pid + life << 32, :mod:`.lives`) as life * pids + pid; None
    when the range stays too wide."""
    if lkey.dtype.kind != "i" or rkey.dtype.kind != "i":
        return None
    if lkey.dtype.itemsize not in (4, 8) or rkey.dtype.itemsize not in (4, 8):
        lkey, rkey = lkey.astype(np.int64), rkey.astype(np.int64)
    if (table := table_span([lkey, rkey])) is not None:
        return np.ascontiguousarray(lkey), np.ascontiguousarray(rkey), *table
    if min(int(lkey.min()), int(rkey.min())) < 0:
        return None
    lk, rk = lkey.astype(np.int64), rkey.astype(np.int64)
    low = (1 << 32) - 1
    pids = max(int((lk & low).max()), int((rk & low).max())) + 1
    span = (max(int(lk.max()), int(rk.max())) >> 32) * pids + pids
    if span >= max(2 * (len(lkey) + len(rkey)), _TABLE_MIN_SLOTS):
        return None
    return (lk >> 32) * pids + (lk & low), (rk >> 32) * pids + (rk & low), 0, span


def key_ints(a: np.ndarray) -> np.ndarray:
    """``a`` as the compiled passes read keys: contiguous 4- or 8-byte signed integers
    (the array itself when it is one, else an int64 copy)."""
    if a.dtype.kind == "i" and a.dtype.itemsize in (4, 8):
        return np.ascontiguousarray(a)
    return a.astype(np.int64)


def member(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """``np.isin(values, keys)`` for integers: a table lookup over a small key range (or
    over life keys' compact form, :func:`small_keys`), else binary searches in the
    sorted distinct keys (no sort of ``values``)."""
    values = np.asarray(values)
    u = np.unique(np.asarray(keys))
    if len(u) == 0 or len(values) == 0:
        return np.zeros(len(values), dtype=bool)
    if values.dtype.kind not in "iu" or u.dtype.kind not in "iu":
        return np.isin(values, u)
    limit = min(max(4 * len(values), 1 << 16), 1 << 26)
    lo, hi = int(u[0]), int(u[-1])
    span = hi - lo + 1
    if span > limit and len(u) < 8:
        return np.isin(values, u)  # (a few keys far apart: compared one by one)
    if span <= limit:
        return _in_table(key_ints(values), u, lo, span)
    # life keys (pid + life << 32, .lives): a table over their compact form when the
    # lives and pids are few (:func:`small_keys`, as the as-of walk takes them)
    small = small_keys(key_ints(values), key_ints(u)) if values.dtype.kind == "i" else None
    if small is not None:
        return _in_table(*small)
    if u.dtype != values.dtype:
        u = u.astype(np.int64)
        values = values.astype(np.int64)
    at = np.searchsorted(u, values)
    at[at == len(u)] = 0
    return u[at] == values


def _in_table(values: np.ndarray, keys: np.ndarray, lo: int, span: int) -> np.ndarray:
    """Which ``values`` are ``keys``, by one compiled lookup in a table of the keys over
    ``[lo, lo + span)`` (values outside it: False)."""
    table = np.zeros(span, dtype=bool)
    table[keys - lo] = True
    out = np.empty(len(values), dtype=bool)
    _passes.in_table(values, table, lo, out)
    return out


#: The (key, time) orders of :func:`key_time_order` kept while :func:`shared_orders` is
#: on: by (rows, a sample of the rows), the orders found so far (None: off).
_ORDERS: ContextVar[dict[tuple, list[np.ndarray]] | None] = ContextVar(
    "schedwake_key_time_orders", default=None
)
#: Right sides shorter than this are sorted again each time (cheap).
_SHARED_MIN_ROWS = 1 << 16


@contextmanager
def shared_orders() -> Iterator[None]:
    """While on, :func:`key_time_order` (each keyed :func:`asof_index`'s right side)
    reuses an order it found before for the same rows (the model's components search
    the same switches, wake-ups and runs again and again: one sort each, not one per
    search). An order is reused only once checked to be the stable (key, ts) order of
    the rows given, so answers never change; the orders go when the block ends."""
    token = _ORDERS.set({}) if _ORDERS.get() is None else None
    try:
        yield
    finally:
        if token is not None:
            _ORDERS.reset(token)


def key_time_order(ts: np.ndarray, key: np.ndarray) -> np.ndarray:
    """The positions of the rows ordered by (key, ts), ties in their given order (the
    stable ``np.lexsort((ts, key))``); found once per rows while :func:`shared_orders`
    is on."""
    kept = _ORDERS.get()
    if kept is None or len(ts) < _SHARED_MIN_ROWS:
        return lex_order(ts, key)
    step = max(1, len(ts) // 61)
    sample = (
        len(ts),
        ts[::step].astype(np.int64).tobytes(),
        key[::step].astype(np.int64).tobytes(),
    )
    orders = kept.setdefault(sample, [])
    for order in orders:
        if _is_key_time_order(order, ts, key):
            return order
    order = lex_order(ts, key)
    order.setflags(write=False)
    orders.append(order)
    return order


def lex_order(ts: np.ndarray, key: np.ndarray) -> np.ndarray:
    """``np.lexsort((ts, key))`` (stable): by radix passes over the key when ``ts`` is
    already in order; else grouped by the key first (a counting sort, stable), then one
    stable sort of (key, ts) packed into an int64 when both ranges fit (a merge of the
    runs in time order each key's rows then are), else the lexsort."""
    if len(ts) == 0:
        return np.zeros(0, dtype=np.intp)
    if is_sorted(ts):
        return stable_order(key)
    k0, t0 = int(key.min()), int(ts.min())
    kbits = (int(key.max()) - k0).bit_length()
    tbits = (int(ts.max()) - t0).bit_length()
    if kbits + tbits > 62:
        return np.lexsort((ts, key))
    by_key = stable_order(key)
    packed = np.empty(len(ts), dtype=np.int64)  # (gathered and packed in one pass)
    _passes.pack_by(key_ints(key), key_ints(ts), by_key, k0, t0, tbits, packed)
    return by_key[np.argsort(packed, kind="stable")]


def _is_key_time_order(order: np.ndarray, ts: np.ndarray, key: np.ndarray) -> bool:
    """Whether ``order`` (a permutation of the rows) is the stable (key, ts) order: keys
    ascending, times ascending within a key, equal (key, ts) rows in their given order
    (that order is unique)."""
    if len(order) != len(ts):
        return False
    k, t = key[order], ts[order]
    same_k = k[1:] == k[:-1]
    if not (same_k | (k[1:] > k[:-1])).all():
        return False
    same_t = t[1:] == t[:-1]
    ok = ~same_k | (t[1:] > t[:-1]) | (same_t & (order[1:] > order[:-1]))
    return bool(ok.all())


def in_key_time_order(ts: np.ndarray, key: np.ndarray) -> bool:
    """Whether rows are in (key, ts) order: keys ascending, and ``ts`` never decreasing
    within a run of equal keys (the switches by CPU, the runs by task)."""
    if not is_sorted(key):
        return False
    return bool(len(ts) < 2 or ((ts[1:] >= ts[:-1]) | (key[1:] != key[:-1])).all())


def is_sorted(a: np.ndarray) -> bool:
    """Whether ``a`` is in ascending order (ties allowed): for 4- or 8-byte signed ints
    (times, pids, CPUs) one compiled pass that stops where the order breaks, with no
    array of comparisons (``_passes.ascending``)."""
    if len(a) < 2:
        return True
    if a.dtype.kind == "i" and a.dtype.itemsize in (4, 8) and a.flags.c_contiguous:
        return _passes.ascending(a)
    return bool((a[1:] >= a[:-1]).all())


def _key_slot(ukeys: np.ndarray, key: np.ndarray) -> np.ndarray:
    """For each key, its position in the sorted unique ``ukeys`` (int64), -1 when not
    there: one lookup in a table of slots over small key ranges (compiled,
    ``_passes.in_table``), else a binary search."""
    lo, hi = int(ukeys[0]), int(ukeys[-1])
    span = hi - lo + 1
    if span <= max(4 * len(ukeys), 1 << 16) and span <= 1 << 24:
        table = np.full(span, -1, dtype=np.int64)
        table[ukeys - lo] = np.arange(len(ukeys), dtype=np.int64)
        slot = np.empty(len(key), dtype=np.int64)
        _passes.in_table(key_ints(key), table, lo, slot)
        return slot
    k = np.searchsorted(ukeys, key).astype(np.int64, copy=False)
    k[k == len(ukeys)] = 0
    k[ukeys[k] != key] = -1  # (no right row of that key)
    return k


def stable_order(key: np.ndarray) -> np.ndarray:
    """``np.argsort(key, kind="stable")``: one counting sort in C where the key range is
    not much wider than the rows (pids, CPUs, task keys), else 16-bit radix passes
    where the range allows."""
    if len(key) == 0:
        return np.zeros(0, dtype=np.intp)
    small = key.dtype.kind == "i" or (key.dtype.kind == "u" and key.dtype.itemsize < 8)
    if small and (table := table_span([key])) is not None:
        # (the count table, 8 bytes a key value, stays within twice the order's size)
        order = np.empty(len(key), dtype=np.intp)
        _passes.counting_order(key_ints(key), *table, order)
        return order
    lo, hi = int(key.min()), int(key.max())
    if hi - lo >= 2**32:
        return np.argsort(key, kind="stable")
    # key - lo in the key's own type when the range fits it (no int64 copy of int32 keys)
    own = key.dtype.kind == "i" and key.dtype.itemsize >= 4 and hi - lo <= np.iinfo(key.dtype).max
    k = key - lo if own else key.astype(np.int64) - lo
    order = np.argsort((k & 0xFFFF).astype(np.uint16), kind="stable")
    if hi - lo >= 2**16:
        order = order[np.argsort((k[order] >> 16).astype(np.uint16), kind="stable")]
    return order


def key_groups(
    keys: list[np.ndarray], weights: np.ndarray | None = None
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray | None]:
    """The distinct rows of the integer columns ``keys`` in ascending order (by the first
    column, then the next...), as a group-by sorts its groups: each column's values of
    them (in the column's type), each group's rows, and each group's sum of ``weights``
    (None without). One pass of a hash table in C (``_passes.group_sums``) when the
    columns pack into an int64 and the groups are few, else a sort."""
    n = len(keys[0])
    none = np.zeros(0, dtype=np.int64)
    if n == 0:
        return [k[:0] for k in keys], none, None if weights is None else none
    w = None if weights is None else np.ascontiguousarray(weights, dtype=np.int64)
    lows = [int(k.min()) for k in keys]
    bits = [(int(k.max()) - lo).bit_length() for k, lo in zip(keys, lows)]
    if sum(bits) <= 62:
        packed = np.zeros(n, dtype=np.int64)
        for k, lo, b in zip(keys, lows, bits):
            packed <<= b
            packed += k
            packed -= lo
        got = _passes.group_sums(packed, w, max(n // 4, 1 << 16))
        if got is not None:
            u, counts, totals = (np.frombuffer(b, dtype=np.int64).copy() for b in got)
            firsts = []
            for k, lo, b in zip(keys[::-1], lows[::-1], bits[::-1]):
                col = u & ((1 << b) - 1)
                col += lo
                firsts.append(col.astype(k.dtype, copy=False))
                u >>= b
            return firsts[::-1], counts, None if w is None else totals
        order = np.argsort(packed)  # (any order within a group)
    else:
        order = np.lexsort(keys[::-1])
    new = np.zeros(len(order), dtype=bool)
    new[0] = True
    for k in keys:
        ks = k[order]
        new[1:] |= ks[1:] != ks[:-1]
    starts = np.flatnonzero(new)
    rows = np.diff(np.append(starts, n)).astype(np.int64)
    sums = None if w is None else np.add.reduceat(w[order], starts)
    return [k[order[starts]] for k in keys], rows, sums


def pid_cpu_counts(
    pid: npt.ArrayLike, cpu: npt.ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per distinct pid (in order): its rows and its distinct CPUs, from the distinct
    (pid, cpu) pairs (:func:`key_groups`): no group-by, no frame."""
    pid, cpu = np.asarray(pid), np.asarray(cpu)
    if len(pid) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    (pids, _), pair_rows, _ = key_groups([pid, cpu])
    first = np.ones(len(pids), dtype=bool)
    first[1:] = pids[1:] != pids[:-1]
    starts = np.flatnonzero(first)
    rows = np.add.reduceat(pair_rows, starts)
    return pids[starts].astype(np.int64), rows, np.diff(np.append(starts, len(pids)))


def take(arr: npt.ArrayLike, idx: npt.ArrayLike, fill: Any) -> np.ndarray:
    """``arr[idx]`` with ``fill`` where ``idx`` is -1 (a NumPy array)."""
    arr = np.asarray(arr)
    idx = np.asarray(idx)
    if len(arr) == 0:
        return np.full(len(idx), fill, dtype=np.result_type(arr.dtype, np.asarray(fill).dtype))
    if _takes_compiled(arr, idx, fill):
        # (one pass, no mask of the negative indices; the answer in arr's type, which
        # holds fill: as the NumPy steps below give it)
        out = np.empty(len(idx), dtype=arr.dtype)
        _passes.take_fill(np.ascontiguousarray(arr), np.ascontiguousarray(idx), int(fill), out)
        return out
    neg = idx < 0
    if not neg.any():
        return arr.take(idx)
    out = arr.take(np.where(neg, 0, idx))
    out = out.astype(np.result_type(out.dtype, np.asarray(fill).dtype), copy=False)
    out[neg] = fill
    return out


def _takes_compiled(arr: np.ndarray, idx: np.ndarray, fill: Any) -> bool:
    """Whether :func:`take` is ``_passes.take_fill``'s: 1-d int64 indices into a 1-d
    array of flags or 4- or 8-byte ints whose type is the answer's whatever the
    indices (fill's type no wider)."""
    if arr.ndim != 1 or idx.ndim != 1 or idx.dtype != np.int64:
        return False
    kind, size = arr.dtype.kind, arr.dtype.itemsize
    if not ((kind == "b" and size == 1) or (kind == "i" and size in (4, 8))):
        return False
    return np.result_type(arr.dtype, np.asarray(fill).dtype) == arr.dtype


def take_cat(cat: pd.Categorical, idx: npt.ArrayLike) -> pd.Categorical:
    """Categorical rows ``idx`` (-1 -> missing), without materialising strings."""
    cat = pd.Categorical(cat)
    codes = np.asarray(cat.codes)
    idx = np.asarray(idx)
    if len(codes) == 0:
        return pd.Categorical.from_codes(
            np.full(len(idx), -1, dtype=np.int32), categories=cat.categories
        )
    # (one compiled gather with its fill, of codes at least 4 bytes wide; the codes are
    # the categories' own, -1 or in range: not checked again)
    c = take(codes if codes.dtype.itemsize >= 4 else codes.astype(np.int32), idx, -1)
    return pd.Categorical.from_codes(
        c.astype(np.int32, copy=False), categories=cat.categories, validate=False
    )


def cat_mask(cat: pd.Categorical, predicate: Callable[[str], object]) -> np.ndarray:
    """Per row of ``cat``, ``predicate(name)`` of its category (False where missing):
    the predicate runs once per category, not per row. A few categories that hold: one
    comparison of the codes each (a missing row's code, -1, is none of them); more: one
    ``take`` by the codes, where -1 takes the False after the categories' flags (either
    is several times faster than a ``where`` then fancy indexing by the small codes, or
    pandas' ``isin``)."""
    flags = np.array([bool(predicate(str(c))) for c in cat.categories] + [False])
    codes = np.asarray(cat.codes)
    held = np.flatnonzero(flags).tolist()
    if len(held) > _CAT_MASK_COMPARISONS:
        return flags.take(codes)
    out = np.zeros(len(codes), dtype=bool)
    for code in held:
        out |= codes == code
    return out


#: The most categories :func:`cat_mask` compares the codes with one by one (a
#: comparison costs about a tenth of a ``take`` by int8 codes).
_CAT_MASK_COMPARISONS = 4


def object_categories(cat: Any) -> pd.Categorical:
    """``cat`` (a categorical) with its categories as Python strings: one dtype for
    ``union_categoricals`` whatever each part's (Arrow strings, object, none at all)."""
    cat = pd.Categorical(cat)
    if cat.categories.dtype == object:
        return cat
    return pd.Categorical.from_codes(
        np.asarray(cat.codes), categories=pd.Index(cat.categories.astype(str), dtype=object)
    )


def pick_cat(mask: npt.ArrayLike, a: Any, b: Any) -> pd.Categorical:
    """Element-wise ``a if mask else b`` for two categoricals."""
    a, b = pd.Categorical(a), pd.Categorical(b)
    cats = a.categories.union(b.categories)
    ca = np.asarray(a.set_categories(cats).codes)
    cb = np.asarray(b.set_categories(cats).codes)
    return pd.Categorical.from_codes(np.where(np.asarray(mask), ca, cb), categories=cats)


def col(df: pd.DataFrame, name: str, default: Any = None) -> Any:
    """Column ``name`` of ``df`` as a NumPy array (``default`` filled when absent)."""
    if name in df.columns:
        s = df[name]
        if isinstance(s.dtype, pd.CategoricalDtype):
            return s.array
        return s.to_numpy()
    return np.full(len(df), default)


def frame(trace: TraceTables, name: str, columns: Iterable[str]) -> pd.DataFrame | None:
    """Event table ``name`` as a DataFrame of the ``columns`` it has, sorted stably by
    ``ts``; None when the trace has no record of the event. An empty table (the event's
    format is in the file, or the reader was asked for it, but it was not recorded) is
    absent too, as in metrics.NEEDS: a kernel without sched_waking, or a recording of
    sched_wakeup alone, must take the sched_wakeup path, not yield zero wake-ups."""
    if not trace.has_records(name):
        return None
    t = trace.table(name)
    cols = [c for c in columns if c in t.column_names]
    # one block per column: numeric columns without nulls stay views of the Arrow
    # buffers instead of copies consolidated into 2-D blocks
    df = t.select(cols).to_pandas(split_blocks=True)
    if len(df) and not df["ts"].is_monotonic_increasing:
        df = df.sort_values("ts", kind="stable").reset_index(drop=True)
    return df


def i64(df: pd.DataFrame | None, name: str, default: int = -1) -> np.ndarray:
    if df is None:
        return np.zeros(0, dtype=np.int64)
    if name not in df.columns:
        return np.full(len(df), default, dtype=np.int64)
    return df[name].fillna(default).to_numpy(dtype=np.int64)


def ints(df: pd.DataFrame | None, name: str, default: int = -1) -> np.ndarray:
    """Column ``name`` as a NumPy array of signed integers: the column itself (no copy)
    when it is one without nulls, else as :func:`i64`."""
    if df is not None and name in df.columns:
        dt = df[name].dtype
        if isinstance(dt, np.dtype) and dt.kind == "i":
            return df[name].to_numpy()
    return i64(df, name, default)


def overlaps_union(
    start: np.ndarray, end: np.ndarray, istart: np.ndarray, iend: np.ndarray
) -> np.ndarray:
    """Which intervals [start, end) (one given backward counts down over [end, start))
    overlap the union of the intervals [istart, iend) (few: a CPU group's idle stretches):
    the union's pieces found here, each interval's first piece that ends after it
    begins searched in C (``_passes.overlapping``)."""
    keep = iend > istart
    s, e = np.asarray(istart, np.int64)[keep], np.asarray(iend, np.int64)[keep]
    out = np.zeros(len(start), dtype=bool)
    if len(s) == 0:
        return out
    o = np.argsort(s, kind="stable")
    s, e = s[o], e[o]
    reach = np.maximum.accumulate(e)  # (the union's pieces: where a start passes the reach)
    heads = np.flatnonzero(np.concatenate([[True], s[1:] > reach[:-1]]))
    us, ue = s[heads], np.maximum.reduceat(e, heads)
    _passes.overlapping(
        np.ascontiguousarray(start, np.int64), np.ascontiguousarray(end, np.int64), us, ue, out
    )
    return out


def gap_sweep(ts: np.ndarray, code: np.ndarray, ncpu: int) -> tuple[np.ndarray, np.ndarray]:
    """The (start, end) of idle while runnable's gap segments over one LLC's interval
    ends in time order (``ts``; ``code``: the CPU, in [0, ncpu), << 3 | the kind: 0/1
    idle start/end, 2/3 wait, 4/5 unknown): where some CPU is idle and another busy with
    a wait, touching pieces joined; one compiled walk (``_passes.gap_sweep``)."""
    start, end = np.empty(len(ts), dtype=np.int64), np.empty(len(ts), dtype=np.int64)
    m = _passes.gap_sweep(ts, code, ncpu, start, end)
    return start[:m].copy(), end[:m].copy()


def last_rows(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``key`` (ascending) and the row of the last of each:
    ``np.unique(key[::-1], return_index=True)`` read back (``np.sort`` of the rows: those
    a frame's ``drop_duplicates(keep="last")`` keeps). By a table over the keys' range
    (life keys in their compact form, :func:`small_keys`; one compiled pass,
    ``_passes.key_last_rows``), else by the keys' stable order: no sort, no frame."""
    key = np.asarray(key)
    if len(key) == 0:
        return key, np.zeros(0, dtype=np.intp)
    small = small_keys(key, key[:1]) if key.dtype.kind == "i" else None
    if small is not None:
        k, _, lo, span = small
        last = np.empty(span, dtype=np.intp)
        _passes.key_last_rows(k, lo, span, last)
        rows = last[last >= 0]  # (the compact form keeps the keys' order)
        return key[rows], rows
    order = stable_order(key)
    k = key[order]
    last = np.ones(len(k), dtype=bool)
    last[:-1] = k[1:] != k[:-1]
    return k[last], order[last]
