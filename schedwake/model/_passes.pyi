"""Types of the model's compiled passes (_passes.c, _pass_*.c): 1-d NumPy arrays in,
outputs filled in place."""

import numpy as np

def counting_order(key: np.ndarray, lo: int, span: int, out: np.ndarray, /) -> None: ...
def life_candidates(
    pid: np.ndarray, ts: np.ndarray, kind: np.ndarray, lo: int, span: int, out: np.ndarray, /
) -> None: ...
def asof_slots(
    lts: np.ndarray,
    slot: np.ndarray,
    rts: np.ndarray,
    order: np.ndarray | None,
    starts: np.ndarray,
    ends: np.ndarray,
    backward: bool,
    allow_exact: bool,
    out: np.ndarray,
    /,
) -> None: ...
def distinct_per_key(
    key: np.ndarray,
    val: np.ndarray,
    klo: int,
    kspan: int,
    vlo: int,
    vspan: int,
    rows: np.ndarray,
    values: np.ndarray,
    /,
) -> None: ...
def in_table(values: np.ndarray, table: np.ndarray, lo: int, out: np.ndarray, /) -> None: ...
def group_sums(
    key: np.ndarray, weight: np.ndarray | None, most: int, /
) -> tuple[bytes, bytes, bytes] | None: ...
