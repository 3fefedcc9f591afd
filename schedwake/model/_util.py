"""Vectorized helpers of the model: as-of joins, categorical picking, table access."""

from __future__ import annotations

import numpy as np
import pandas as pd


def asof_index(lts, lkey, rts, rkey, direction: str = "backward",
               allow_exact: bool = True) -> np.ndarray:
    """For each left row, the position of the right row with the same key and the
    nearest ``ts`` in ``direction`` (``backward``: last rts <= lts; ``forward``: first
    rts >= lts; strict when ``allow_exact`` is False), or -1.

    ``lkey``/``rkey`` may be None (no key). Positions refer to the right arrays as given.
    Rows with equal ``ts`` keep their given order (stable sorts), so the right row
    chosen among ties is the last (backward) or first (forward) in that order.
    """
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
    m = pd.merge_asof(left, right, on="ts", by=by, direction=direction,
                      allow_exact_matches=allow_exact)
    ri = m["ri"].to_numpy(dtype="float64", na_value=np.nan)
    ok = ~np.isnan(ri)
    out[m["li"].to_numpy()[ok]] = ri[ok].astype(np.int64)
    return out


def take(arr, idx, fill):
    """``arr[idx]`` with ``fill`` where ``idx`` is -1 (a NumPy array)."""
    arr = np.asarray(arr)
    idx = np.asarray(idx)
    if len(arr) == 0:
        return np.full(len(idx), fill, dtype=np.result_type(arr.dtype, np.asarray(fill).dtype))
    out = arr[np.where(idx < 0, 0, idx)]
    if (idx < 0).any():
        out = out.astype(np.result_type(out.dtype, np.asarray(fill).dtype))
        out[idx < 0] = fill
    return out


def take_cat(cat: pd.Categorical, idx) -> pd.Categorical:
    """Categorical rows ``idx`` (-1 -> missing), without materialising strings."""
    cat = pd.Categorical(cat)
    codes = np.asarray(cat.codes)
    idx = np.asarray(idx)
    if len(codes) == 0:
        return pd.Categorical.from_codes(np.full(len(idx), -1, dtype=np.int32),
                                         categories=cat.categories)
    c = codes[np.where(idx < 0, 0, idx)].astype(np.int32)
    c[idx < 0] = -1
    return pd.Categorical.from_codes(c, categories=cat.categories)


def pick_cat(mask, a, b) -> pd.Categorical:
    """Element-wise ``a if mask else b`` for two categoricals."""
    a, b = pd.Categorical(a), pd.Categorical(b)
    cats = a.categories.union(b.categories)
    ca = np.asarray(a.set_categories(cats).codes)
    cb = np.asarray(b.set_categories(cats).codes)
    return pd.Categorical.from_codes(np.where(np.asarray(mask), ca, cb), categories=cats)


def as_cat(values) -> pd.Categorical:
    return values if isinstance(values, pd.Categorical) else pd.Categorical(values)


def col(df: pd.DataFrame, name: str, default=None):
    """Column ``name`` of ``df`` as a NumPy array (``default`` filled when absent)."""
    if name in df.columns:
        s = df[name]
        if isinstance(s.dtype, pd.CategoricalDtype):
            return s.array
        return s.to_numpy()
    return np.full(len(df), default)


def frame(trace, name: str, columns) -> pd.DataFrame | None:
    """Event table ``name`` as a DataFrame of the ``columns`` it has, sorted stably by
    ``ts``; None when the trace has no such table."""
    if not trace.has(name):
        return None
    t = trace.table(name)
    cols = [c for c in columns if c in t.column_names]
    df = t.select(cols).to_pandas()
    if len(df) and not df["ts"].is_monotonic_increasing:
        df = df.sort_values("ts", kind="stable").reset_index(drop=True)
    return df
