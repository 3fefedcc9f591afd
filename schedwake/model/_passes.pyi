"""Types of the model's compiled passes (_passes.c, _pass_*.c): 1-d NumPy arrays in,
outputs filled in place."""

import numpy as np

def counting_order(key: np.ndarray, lo: int, span: int, out: np.ndarray, /) -> None: ...
def ascending(key: np.ndarray, /) -> bool: ...
def pack_by(
    key: np.ndarray,
    ts: np.ndarray,
    by: np.ndarray,
    k0: int,
    t0: int,
    tbits: int,
    out: np.ndarray,
    /,
) -> None: ...
def life_candidates(
    parts: tuple[tuple[np.ndarray, np.ndarray, np.ndarray | int], ...],
    lo: int,
    span: int,
    outs: tuple[np.ndarray, ...],
    /,
) -> None: ...
def asof_merge(
    lts: np.ndarray,
    lkey: np.ndarray,
    rts: np.ndarray,
    rkey: np.ndarray,
    lo: int,
    span: int,
    backward: bool,
    allow_exact: bool,
    out: np.ndarray,
    /,
) -> bool: ...
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
def in_table(values: np.ndarray, table: np.ndarray, lo: int, out: np.ndarray, /) -> None: ...
def take_fill(arr: np.ndarray, idx: np.ndarray, fill: int, out: np.ndarray, /) -> None: ...
def group_sums(
    key: np.ndarray, weight: np.ndarray | None, most: int, /
) -> tuple[bytes, bytes, bytes] | None: ...
def task_sort_parts(
    parts: list[tuple[np.ndarray | int, ...]],
    slots: list[np.ndarray] | None,
    lo: int,
    span: int,
    out: np.ndarray,
    counts: np.ndarray | None = None,
    /,
) -> int: ...
def keyed_last_below(
    rows: np.ndarray, qkey: np.ndarray, qts: np.ndarray, out: np.ndarray, /
) -> None: ...
def merge_rows_into(buf: np.ndarray, n: int, b: np.ndarray, /) -> None: ...
def seconds_texts(ns: np.ndarray, glue: tuple[bytes, ...], /) -> bytes: ...
def task_states_in_flight(rows: np.ndarray, at: np.ndarray, wake: np.ndarray, /) -> int: ...
def task_states_scan(
    rows: np.ndarray,
    gkey: np.ndarray,
    gflags: np.ndarray,
    gend: np.ndarray,
    unseen_given: bool,
    out_key: np.ndarray,
    out_cpu: np.ndarray,
    out_start: np.ndarray,
    out_end: np.ndarray,
    out_state: np.ndarray,
    out_since: np.ndarray,
    out_pid: np.ndarray | None = None,
    pid_mask: int = 0,
    /,
) -> int: ...
def task_states_sums(
    rows: np.ndarray,
    gkey: np.ndarray,
    gflags: np.ndarray,
    gend: np.ndarray,
    unseen_given: bool,
    cpu_hi: int,
    out_key: np.ndarray,
    out_cpu: np.ndarray,
    out_ns: np.ndarray,
    /,
) -> int: ...
def dense_codes(
    key: np.ndarray, lo: int, span: int, codes: np.ndarray, levels: np.ndarray, /
) -> int: ...
def state_sums(
    group: np.ndarray, state: np.ndarray, start: np.ndarray, end: np.ndarray, out: np.ndarray, /
) -> None: ...
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
def preempted_ends(
    sts: np.ndarray,
    prev_key: np.ndarray,
    next_key: np.ndarray,
    runnable: np.ndarray,
    cts: np.ndarray,
    ckey: np.ndarray,
    ctie: np.ndarray,
    crow: np.ndarray,
    out: np.ndarray,
    /,
) -> bool: ...
def stretch_parts(
    ts: np.ndarray,
    pid: np.ndarray,
    comm: np.ndarray,
    prio: np.ndarray,
    known: np.ndarray,
    lost: np.ndarray,
    r0: np.ndarray,
    r1: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    waiter: np.ndarray,
    sums: np.ndarray,
    out_g: np.ndarray,
    out_pid: np.ndarray,
    out_comm: np.ndarray,
    out_prio: np.ndarray,
    out_ns: np.ndarray,
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
def event_segments(
    pos: np.ndarray,
    rank: np.ndarray,
    ets: np.ndarray,
    epid: np.ndarray,
    sw_ts: np.ndarray,
    sw_next: np.ndarray,
    seg: np.ndarray,
    status: np.ndarray,
    /,
) -> None: ...
def settling_walk(
    c_ts: np.ndarray,
    c_key: np.ndarray,
    c_cpu: np.ndarray,
    c_dest: np.ndarray,
    order: np.ndarray | None,
    ts: np.ndarray,
    key: np.ndarray,
    cpu: np.ndarray,
    placed: np.ndarray,
    lo: int,
    span: int,
    out: np.ndarray,
    /,
) -> bool: ...
def group_running_max(values: np.ndarray, new_group: np.ndarray, out: np.ndarray, /) -> None: ...
def gap_sweep(
    ts: np.ndarray, code: np.ndarray, ncpu: int, out_start: np.ndarray, out_end: np.ndarray, /
) -> int: ...
def overlapping(
    start: np.ndarray, end: np.ndarray, us: np.ndarray, ue: np.ndarray, out: np.ndarray, /
) -> None: ...
def key_neighbors(
    key: np.ndarray,
    rows: np.ndarray,
    lo: int,
    span: int,
    out_prev: np.ndarray,
    out_next: np.ndarray,
    /,
) -> None: ...
def next_of_key(
    ts: np.ndarray, key: np.ndarray, lo: int, span: int, out: np.ndarray, /
) -> bool: ...
def wake_runs(
    ts: np.ndarray,
    key: np.ndarray,
    rkey: np.ndarray,
    rstart: np.ndarray,
    reach: np.ndarray,
    earliest: np.ndarray,
    rcpu: np.ndarray,
    rend: np.ndarray,
    rcode: np.ndarray,
    lo: int,
    span: int,
    outs: tuple[np.ndarray, ...],
    /,
) -> bool: ...
def key_last_rows(key: np.ndarray, lo: int, span: int, last: np.ndarray, /) -> None: ...
def timeline_rows(
    sw_ts: np.ndarray,
    sw_end: np.ndarray,
    sw_cpu: np.ndarray,
    sw_pid: np.ndarray,
    sw_code: np.ndarray,
    clean: np.ndarray,
    r_seg: np.ndarray,
    r_start: np.ndarray,
    r_end: np.ndarray,
    r_pid: np.ndarray,
    r_code: np.ndarray,
    t_end: int,
    out_cpu: np.ndarray,
    out_start: np.ndarray,
    out_end: np.ndarray,
    out_pid: np.ndarray,
    out_code: np.ndarray,
    out_state: np.ndarray,
    /,
) -> int: ...
def runs_order(
    seg: np.ndarray,
    sw_pid: np.ndarray,
    sw_ts: np.ndarray,
    g_pid: np.ndarray,
    g_start: np.ndarray,
    lo: int,
    span: int,
    out: np.ndarray,
    /,
) -> None: ...
def event_segments_walk(
    ets: np.ndarray,
    ecpu: np.ndarray,
    epid: np.ndarray,
    given_ts: np.ndarray,
    given_cpu: np.ndarray,
    first: np.ndarray,
    sw_ts: np.ndarray,
    sw_next: np.ndarray,
    lo: int,
    span: int,
    seg: np.ndarray,
    status: np.ndarray,
    /,
) -> bool: ...
def runs_columns(
    src: np.ndarray,
    segments: tuple[np.ndarray, ...],
    groups: tuple[np.ndarray, ...],
    end_switch: int,
    end_trace: int,
    out: tuple[np.ndarray, ...],
    /,
) -> None: ...
def unwoken_candidates(
    sts: np.ndarray,
    nkey: np.ndarray,
    pkey: np.ndarray,
    nxt: np.ndarray,
    asleep: np.ndarray,
    wakes: tuple[tuple[np.ndarray, np.ndarray], ...],
    lo: int,
    span: int,
    out_switch: np.ndarray,
    out_ts: np.ndarray,
    out_wake: np.ndarray,
    /,
) -> int: ...
def rewoken_walk(
    ts: np.ndarray,
    key: np.ndarray,
    run_start: np.ndarray,
    run_end: np.ndarray,
    run_key: np.ndarray,
    lo: int,
    span: int,
    out: np.ndarray,
    /,
) -> int: ...
