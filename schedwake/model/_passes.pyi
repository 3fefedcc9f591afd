"""Types of the model's compiled passes (_passes.c, _pass_*.c): 1-d NumPy arrays in,
outputs filled in place."""

import numpy as np

def counting_order(key: np.ndarray, lo: int, span: int, out: np.ndarray, /) -> None: ...
def asof_last(
    lts: np.ndarray,
    lkey: np.ndarray,
    rts: np.ndarray,
    rkey: np.ndarray,
    lo: int,
    span: int,
    strict: bool,
    out: np.ndarray,
    /,
) -> bool: ...
def asof_grouped(
    lts: np.ndarray,
    lkey: np.ndarray,
    rts: np.ndarray,
    rkey: np.ndarray,
    lo: int,
    span: int,
    forward: bool,
    strict: bool,
    out: np.ndarray,
    /,
) -> bool: ...
def wait_epochs(
    src: np.ndarray,
    task: np.ndarray,
    kind: np.ndarray,
    row: np.ndarray,
    ts: np.ndarray,
    ns: int,
    rewoken_unseen: bool,
    out_a: np.ndarray,
    out_e: np.ndarray,
    out_head: np.ndarray,
    out_kind: np.ndarray,
    /,
) -> int: ...
def task_order(
    task: np.ndarray,
    by_time: np.ndarray,
    pid: np.ndarray,
    lo: int,
    span: int,
    out: np.ndarray,
    /,
) -> int: ...
