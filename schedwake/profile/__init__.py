"""Where the CPU time of a ``perf record -g`` profile went, per function: what
``perf report --no-children`` (self) and ``perf report --children`` print::

    trace = schedwake.load("perf.data")
    p = schedwake.profile(trace)              # Profile
    p.rows.head()                             # symbol, dso, samples, self_share, children_share

Per function (a (DSO, symbol) pair, never an address):

* ``self_share``: the period of the samples whose own address (the first frame) is in
  the function, over the period of all samples;
* ``children_share``: the period of the samples with the function anywhere in the
  callchain (the first frame included), each sample counted once however often the
  function appears in it (recursion), over the same total;
* ``samples``: how many samples have their own address in it (``perf report -n``).

Samples are weighted by their period, as perf weights them (for ``cpu-clock`` the
nanoseconds since the previous sample, for a fixed-period event the period); a sample
without a callchain counts for its own address only, so its function's self and
children shares are equal. Addresses that cannot be named are grouped per DSO as
``[unknown]`` (perf prints each such address on its own row; the named functions'
shares are the same), and what could not be named and why is in :attr:`Profile.caveats`
and :attr:`Profile.unresolved`.

Filters (``comm``, ``pid``, ``cpu``, ``time``) keep only the matching samples; the shares
are then of the kept samples' period (``perf report --percentage relative``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from numbers import Integral

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import OptionError, TraceError
from ..symbols.kernel import KallsymsChoice
from ..symbols.resolve import UNKNOWN, Resolved, Resolver
from ..trace import Trace

#: The columns of :attr:`Profile.rows`.
COLUMNS = (
    "symbol",
    "dso",
    "samples",
    "self_share",
    "children_share",
    "self_period",
    "children_period",
    "level",
)

#: The columns of :attr:`Profile.stacks`.
STACK_COLUMNS = ("frames", "period", "samples")
#: The largest period a sample may have, per ns of the recording (or of 1 s, for a
#: shorter one): 100 events a ns is beyond any counter (a 6 GHz CPU retiring 8
#: instructions a cycle counts 48 a ns); a sample beyond is left out with a caveat.
MAX_PERIOD_PER_NS = 100

#: perf's privilege-level marks (its ``[k]``/``[.]`` column) by cpumode.
LEVELS = {1: "k", 2: ".", 3: "H", 4: "g", 5: "u"}


@dataclass
class Profile:
    """What ``schedwake profile`` reports about one recording."""

    #: one row per function: symbol, dso, samples, self_share, children_share (0..1),
    #: self_period, children_period, level (perf's mark: "k" kernel, "." user, "g"/"u"
    #: guest kernel/user, "H" hypervisor); by self share, then children share, descending
    rows: pd.DataFrame
    path: str  #: the file
    event: str  #: the event as perf names it (``cpu-clock:ppp``)
    samples: int  #: samples profiled (after the filters)
    total_period: int  #: their summed period (perf's "Event count")
    callchains: bool  #: whether the samples have callchains (else children == self)
    kernel_symbols: str  #: where kernel names came from, or why there are none
    #: reason -> {"addresses": distinct unnamed addresses, "self_share": share of the
    #: period whose own address is unnamed for this reason}
    unresolved: dict = field(default_factory=dict)
    filters: dict = field(default_factory=dict)  #: the filters applied (None: not given)
    caveats: list[str] = field(default_factory=list)  #: one plain-English line each
    #: one row per distinct call stack: ``frames`` (a tuple of row numbers of
    #: :attr:`rows`, the sample's own function first, then its callers outwards),
    #: ``period`` and ``samples``; what flame graphs and callers' trees are made of
    stacks: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=STACK_COLUMNS))

    def top(self, n: int | None = None, by: str = "self_share") -> pd.DataFrame:
        """The ``n`` first rows by ``by`` (``self_share`` or ``children_share``)."""
        other = "children_share" if by == "self_share" else "self_share"
        rows = self.rows.sort_values(
            [by, other, "symbol", "dso"], ascending=[False, False, True, True], kind="stable"
        )
        return rows if n is None else rows.head(n)

    def to_dict(self, top: int | None = None) -> dict:
        """JSON-ready: totals, filters, caveats and one entry per function."""
        rows = self.rows if top is None else self.rows.head(top)
        return {
            "path": self.path,
            "event": self.event,
            "samples": self.samples,
            "total_period": self.total_period,
            "callchains": self.callchains,
            "kernel_symbols": self.kernel_symbols,
            "filters": self.filters,
            "functions": [
                {
                    "symbol": r.symbol,
                    "dso": r.dso,
                    "self_share": float(r.self_share),
                    "children_share": float(r.children_share),
                    "samples": int(r.samples),
                    "level": r.level,
                }
                for r in rows.itertuples(index=False)
            ],
            "functions_total": len(self.rows),
            "unresolved": self.unresolved,
            "caveats": list(self.caveats),
        }


def sample_tables(trace: Trace) -> list[str]:
    """Names of the trace's tables a profile can be made of: sampling events (with
    ``ip`` and ``period``) first, then tracepoints recorded with callchains."""
    sampled, chained = [], []
    for name in trace.events:
        cols = trace.table(name).column_names
        if trace.table(name).num_rows == 0:
            continue
        if "ip" in cols and "period" in cols:
            sampled.append(name)
        elif "callchain" in cols:
            chained.append(name)
    return sampled + chained


def _event_names(trace: Trace) -> dict[str, str]:
    """table name -> the event's name as perf prints it."""
    events = trace.meta.source.get("events") or []
    return {e["table"]: e["name"] for e in events if e.get("table") and e.get("name")}


def _pick_table(trace: Trace, event: str | None) -> str:
    names = _event_names(trace)
    usable = sample_tables(trace)
    if event is not None:
        by_name = {v: k for k, v in names.items()}
        table = event if trace.has(event) else by_name.get(event)
        if table is None and ":" in event:
            table = event.split(":")[0] if trace.has(event.split(":")[0]) else None
            table = table or (event.split(":")[-1] if trace.has(event.split(":")[-1]) else None)
        if table is None or not trace.has(table):
            raise TraceError(
                trace.path,
                f"has no event {event!r} (profilable: {', '.join(usable) or 'none'})",
            )
        if table not in usable:
            raise TraceError(
                trace.path,
                f"event {event!r} has no samples with callchains or periods to profile",
            )
        return table
    if not usable:
        raise TraceError(
            trace.path,
            "has no profile samples (samples with a period or a callchain): record one "
            "with perf record -g",
        )
    first = [t for t in usable if "period" in trace.table(t).column_names] or usable
    if len(first) > 1:
        raise TraceError(
            trace.path,
            f"has samples of several events ({', '.join(first)}): choose one with --event",
        )
    return first[0]


def _thread_pids(trace: Trace) -> dict[int, int]:
    """thread id -> process id, from the side-band COMM and FORK records."""
    out: dict[int, int] = {}
    for name in ("comms", "forks"):
        t = (getattr(trace, "sideband", None) or {}).get(name)
        if t is not None and t.num_rows and "tid" in t.column_names:
            for tid, pid in zip(t.column("tid").to_pylist(), t.column("pid").to_pylist()):
                out.setdefault(tid, pid)
    return out


def _as_set(values, what: str) -> set:
    if isinstance(values, str | int):
        values = [values]
    out = set(values)
    if not out:
        raise ValueError(f"{what}: give at least one")
    return out


#: One more than the largest pid there is (the kernel's PID_MAX_LIMIT).
_PID_LIMIT = 4194305


def _ids(values, what: str, limit: int) -> list[int]:
    """``pid``/``cpu`` filter values, sorted: whole numbers from 0 to ``limit`` - 1,
    else an OptionError naming ``what`` (a pid of 2^64 does not fit the sample columns)."""
    ids = _as_set(values, what)
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, Integral) or not 0 <= int(i) < limit:
            raise OptionError(what, i, f"must be a whole number from 0 to {limit - 1}")
    return sorted(int(i) for i in ids)


def _span(time) -> tuple[int | None, int | None]:
    """The ``time`` filter: integer timestamps (or None), the first before the second."""
    lo, hi = time
    for name, bound in (("time", lo), ("time", hi)):
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, Integral)):
            raise OptionError(name, bound, "must be integer timestamps (ns) or None")
    if lo is not None and hi is not None and lo > hi:
        raise OptionError("time", f"{lo},{hi}", "the start comes after the end")
    return lo, hi


def profile(
    trace: Trace,
    event: str | None = None,
    kallsyms=None,
    comm: str | Iterable[str] | None = None,
    pid: int | Iterable[int] | None = None,
    cpu: int | Iterable[int] | None = None,
    time: tuple[int | None, int | None] | None = None,
    *,
    progress=None,
) -> Profile:
    """The self and children shares of every function in ``trace``'s samples.

    ``event``: the event to profile (its table name, ``cpu-clock``, or perf's name,
    ``cpu-clock:ppp``); None: the trace's only sampled event. ``kallsyms``: a kallsyms
    file of the recorded kernel (None: this machine's when it runs that kernel).
    ``comm``: thread name(s); ``pid``: process or thread id(s); ``cpu``: CPU(s);
    ``time``: (start_ns, end_ns) trace timestamps, inclusive, either may be None.
    ``progress``: a callable that gets the fraction done, now and then.
    Raises :class:`TraceError` when the trace has no samples to profile, none match
    the filters, or ``kallsyms`` cannot be read; an OptionError (a ValueError) for a
    pid, CPU or time that cannot be one.
    """
    table_name = _pick_table(trace, event)
    t = trace.table(table_name)
    named = _named_by_perf_script(t)
    if named:  # perf script text: perf has named every frame already
        resolver = None
        choice = KallsymsChoice(None, "", "named by perf script (the text input)")
    else:
        resolver = Resolver(trace, kallsyms)
        choice = resolver.kallsyms  # an unreadable --kallsyms fails here, before any work
    n_all = t.num_rows
    mask, filters = sample_mask(t, trace.meta.ncpus, comm, pid, cpu, time)
    if not mask.all():
        t = t.filter(pa.array(mask))
    if t.num_rows == 0:
        given = [k for k, v in filters.items() if v is not None]
        raise TraceError(
            trace.path,
            f"no {table_name} samples match the filters ({', '.join('--' + g for g in given)})",
        )
    n_matched = t.num_rows  # (the samples the filters kept, before any left out for their period)
    t, period, period_note = _periods(trace, t, table_name)
    n = t.num_rows
    if progress is not None:
        progress(0.1)
    frames = _sample_frames(trace, t, resolver)
    if progress is not None:
        progress(0.9)
    res, sample_of, is_self = frames.res, frames.sample_of, frames.is_self
    total = float(period.sum())
    rows, function = _functions(res, frames.ctx, sample_of, is_self, period)
    stacks = _stacks(sample_of, frames.addr, is_self, function, period)
    unresolved = unresolved_shares(res, period[sample_of[is_self]], is_self, total)
    caveats = _caveats(trace, choice, res, unresolved, table_name, n_all, n_matched, filters)
    caveats += _unwinding_caveats(trace, table_name)
    if period_note:
        caveats.insert(0, period_note)
    if frames.dropped_chains:
        caveats.append(
            f"{frames.dropped_chains} samples have a corrupt callchain (a context marker perf "
            "does not take): counted for their own address only, as perf counts them"
        )
    events = _event_names(trace)
    return Profile(
        rows=rows,
        path=trace.path,
        event=events.get(table_name, table_name),
        samples=n,
        total_period=int(round(total)),
        callchains=frames.callchains,
        kernel_symbols=f"{choice.source}: {choice.reason}" if choice.text else choice.reason,
        unresolved=unresolved,
        filters=filters,
        caveats=caveats,
        stacks=stacks,
    )


def sample_mask(
    t: pa.Table,
    ncpus: int,
    comm: str | Iterable[str] | None = None,
    pid: int | Iterable[int] | None = None,
    cpu: int | Iterable[int] | None = None,
    time: tuple[int | None, int | None] | None = None,
) -> tuple[np.ndarray, dict]:
    """Which samples of ``t`` (a table of samples: ``common_comm``, ``common_pid``,
    ``pid`` when the file has it, ``cpu``, ``ts``) the filters keep (see
    :func:`profile`; ``ncpus``: the CPUs a ``cpu`` filter may name), and the filters
    as :attr:`Profile.filters` says them (None: not given)."""
    mask = np.ones(t.num_rows, dtype=bool)
    filters: dict = {"comm": None, "pid": None, "cpu": None, "time": None}
    if comm is not None:
        names = _as_set(comm, "comm")
        mask &= np.asarray(
            pc.is_in(
                pc.cast(t.column("common_comm"), pa.string()), pa.array(sorted(names))
            ).fill_null(False)
        )
        filters["comm"] = sorted(names)
    if pid is not None:
        ids = np.array(_ids(pid, "pid", _PID_LIMIT), dtype=np.int64)
        hit = np.isin(t.column("common_pid").to_numpy().astype(np.int64), ids)
        if "pid" in t.column_names:
            hit |= np.isin(t.column("pid").to_numpy().astype(np.int64), ids)
        mask &= hit
        filters["pid"] = ids.tolist()
    if cpu is not None:
        cpus = np.array(_ids(cpu, "cpu", ncpus), dtype=np.int64)
        mask &= np.isin(t.column("cpu").to_numpy().astype(np.int64), cpus)
        filters["cpu"] = cpus.tolist()
    if time is not None and time != (None, None):
        ts = t.column("ts").to_numpy()
        lo, hi = _span(time)
        if lo is not None:
            mask &= ts >= lo
        if hi is not None:
            mask &= ts <= hi
        filters["time"] = [lo, hi]
    return mask, filters


def _periods(trace: Trace, t: pa.Table, table_name: str) -> tuple[pa.Table, np.ndarray, str | None]:
    """The samples' periods (the event's sample period where the samples carry none),
    the samples with a period beyond what the recording allows left out: (the samples
    kept, their periods, the caveat that says so or None); a TraceError when none is
    left or the periods add up beyond what perf writes."""
    n = t.num_rows
    if "period" in t.column_names:
        period = t.column("period").to_numpy(zero_copy_only=False).astype(np.float64)
    else:
        ev = [e for e in trace.meta.source.get("events") or [] if e.get("table") == table_name]
        p0 = (ev[0].get("sample_period") if ev else None) or 1
        period = np.full(n, float(p0))
    # a sample's period cannot be beyond what the recording's length allows (2**63-1 ns
    # in a 0.1 s recording made one sample 100.00% and the totals int64 garbage)
    limit = max(trace.duration_ns, 1_000_000_000) * MAX_PERIOD_PER_NS
    beyond = ~(np.isfinite(period) & (period >= 0) & (period <= limit))
    period_note = None
    if beyond.any():
        k = int(beyond.sum())
        span = (
            f"{MAX_PERIOD_PER_NS} a ns of a recording of {trace.duration_ns / 1e9:.3g} s, "
            "or of 1 s at least"
        )
        if k == n:
            raise TraceError(
                trace.path,
                f"every {table_name} sample has a period beyond {limit:.3g} ({span}): "
                "nothing to profile",
            )
        period_note = (
            f"{k} {table_name} sample(s) with a period beyond {limit:.3g} ({span}) "
            "left out: the shares are of the others"
        )
        t = t.filter(pa.array(~beyond))
        period = period[~beyond]
    if float(period.sum()) >= 2.0**63:
        raise TraceError(
            trace.path,
            f"the {table_name} samples' periods add up beyond 2**63: not counts perf writes",
        )
    return t, period, period_note


@dataclass
class _Frames:
    """Every frame of the samples: its sample (``sample_of``), address, cpumode
    (``ctx``), whether it is the sample's own (``is_self``) and its name (``res``)."""

    sample_of: np.ndarray
    addr: np.ndarray
    ctx: np.ndarray
    is_self: np.ndarray
    res: Resolved
    callchains: bool  # whether the samples have callchains
    dropped_chains: int  # callchains dropped whole (a context marker perf does not take)


def _sample_frames(trace: Trace, t: pa.Table, resolver: Resolver | None) -> _Frames:
    """The frames of the samples of ``t``, named by ``resolver`` (None: perf script
    text, named already)."""
    if resolver is None:
        sample_of, addr, ctx, is_self, res = _text_frames(t)
        return _Frames(sample_of, addr, ctx, is_self, res, "callchain" in t.column_names, 0)
    ts = t.column("ts").to_numpy().astype(np.int64)
    tids = t.column("common_pid").to_numpy().astype(np.int64)
    if "pid" in t.column_names:
        pids_col = t.column("pid").to_numpy().astype(np.int64)
    else:
        owner = _thread_pids(trace)
        pids_col = np.array([owner.get(int(x), int(x)) for x in tids], dtype=np.int64)
    # the frames: the sample's own address first, then its callchain
    ip, ip_ctx, has_ip, flat, parent, chain_ctx, dropped_chains = _frames(t)
    sample_of = np.concatenate([np.flatnonzero(has_ip), parent])
    addr = np.concatenate([ip[has_ip], flat])
    ctx = np.concatenate([ip_ctx[has_ip], chain_ctx])
    is_self = np.zeros(len(addr), dtype=bool)
    is_self[: int(has_ip.sum())] = True
    res = resolver.resolve(pids_col[sample_of], ts[sample_of], addr, ctx)
    callchains = bool(len(flat)) or dropped_chains > 0
    return _Frames(sample_of, addr, ctx, is_self, res, callchains, dropped_chains)


def _functions(
    res: Resolved, ctx: np.ndarray, sample_of: np.ndarray, is_self: np.ndarray, period: np.ndarray
) -> tuple[pd.DataFrame, np.ndarray]:
    """:attr:`Profile.rows` of the frames (functions: (dso, symbol) pairs), and each
    frame's row number."""
    d_codes, d_names = pd.factorize(np.asarray(res.dso, dtype=object))
    s_codes, s_names = pd.factorize(np.asarray(res.symbol, dtype=object))
    codes, pair_keys = pd.factorize(d_codes.astype(np.int64) * len(s_names) + s_codes)
    nf = len(pair_keys)
    total = float(period.sum())
    w_self = np.bincount(codes[is_self], weights=period[sample_of[is_self]], minlength=nf)
    n_self = np.bincount(codes[is_self], minlength=nf)
    pairs = np.unique(sample_of.astype(np.int64) * nf + codes.astype(np.int64))
    s_idx, f_idx = pairs // nf, pairs % nf
    w_children = np.bincount(f_idx, weights=period[s_idx], minlength=nf)
    pair_keys = np.asarray(pair_keys, dtype=np.int64)
    rows = pd.DataFrame(
        {
            "symbol": np.asarray(s_names, dtype=object)[pair_keys % len(s_names)],
            "dso": np.asarray(d_names, dtype=object)[pair_keys // len(s_names)],
            "samples": n_self.astype(np.int64),
            "self_share": w_self / total if total else np.zeros(nf),
            "children_share": w_children / total if total else np.zeros(nf),
            "self_period": np.rint(w_self).astype(np.int64),
            "children_period": np.rint(w_children).astype(np.int64),
            "level": _levels(codes, ctx, nf),
        }
    )
    rows = rows.sort_values(
        ["self_share", "children_share", "symbol", "dso"],
        ascending=[False, False, True, True],
        kind="stable",
    )
    row_of_code = np.empty(nf, dtype=np.int32)
    row_of_code[rows.index.to_numpy()] = np.arange(nf, dtype=np.int32)
    return rows.reset_index(drop=True), row_of_code[codes]


def unresolved_shares(
    res: Resolved, own_period: np.ndarray, is_self: np.ndarray, total: float
) -> dict:
    """:attr:`Profile.unresolved`: per reason an address has no name, the distinct
    addresses, the share of the period whose own address it is (``own_period``: the
    period of each own frame, in the order of ``is_self``'s True frames) and the DSOs,
    most addresses first; the reasons by that share, then by addresses."""
    unresolved: dict = {}
    own_reason = res.reason[is_self]
    for why, count in res.unresolved.items():
        w = float(own_period[own_reason == why].sum())
        dsos = sorted(res.unresolved_dsos.get(why, {}).items(), key=lambda kv: (-kv[1], kv[0]))
        unresolved[why] = {
            "addresses": int(count),
            "self_share": w / total if total else 0.0,
            "dsos": [d for d, _ in dsos],
        }
    return dict(
        sorted(unresolved.items(), key=lambda kv: (-kv[1]["self_share"], -kv[1]["addresses"]))
    )


def _stacks(
    sample_of: np.ndarray,
    addr: np.ndarray,
    is_self: np.ndarray,
    function: np.ndarray,
    period: np.ndarray,
) -> pd.DataFrame:
    """The distinct call stacks of the samples, as function sequences (own function
    first), with their summed period and sample count.

    ``sample_of``/``addr``/``is_self``/``function`` describe every frame (the sample's
    own address, flagged ``is_self``, then its callchain in order, leaf outwards).  A
    callchain repeats the sample's own address as its first entry (perf records it
    there): that copy is dropped, so a function appears once per frame it really has.
    The grouping is vectorized: each stack's function numbers, as int32 bytes, are one
    binary key for Arrow's group-by."""
    order = np.argsort(sample_of, kind="stable")  # own frame first: it precedes the chain
    s, a, own, fn = sample_of[order], addr[order], is_self[order], function[order]
    repeat = np.zeros(len(s), dtype=bool)
    repeat[1:] = (s[1:] == s[:-1]) & own[:-1] & ~own[1:] & (a[1:] == a[:-1])
    s, fn = s[~repeat], fn[~repeat].astype(np.int32)
    n = len(period)
    lengths = np.bincount(s, minlength=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths * 4, out=offsets[1:])
    keys = pa.BinaryArray.from_buffers(
        pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(fn.tobytes())]
    )
    grouped = (
        pa.table({"key": keys, "period": pa.array(period), "one": pa.array(np.ones(n, np.int64))})
        .group_by("key")
        .aggregate([("period", "sum"), ("one", "sum")])
    )
    frames = [
        tuple(np.frombuffer(k, dtype=np.int32).tolist()) for k in grouped.column("key").to_pylist()
    ]
    out = pd.DataFrame(
        {
            "frames": frames,
            "period": grouped.column("period_sum").to_numpy().astype(np.float64),
            "samples": grouped.column("one_sum").to_numpy().astype(np.int64),
        }
    )
    return out.sort_values(["period", "samples"], ascending=False, kind="stable").reset_index(
        drop=True
    )


#: A frame as perf script prints it: ``ffffffff81234567 func+0x12 ([kernel.kallsyms])``.
_FRAME_TEXT = r"^\s*(?P<addr>[0-9a-fA-F]+) (?P<symbol>.*?)(?:\+0x[0-9a-fA-F]+)? \((?P<dso>.*)\)$"
#: Why a perf script frame has no name.
NOT_NAMED_BY_PERF = "not named by perf script"


def _named_by_perf_script(t: pa.Table) -> bool:
    """Whether the samples come from perf script text: frames as text, not addresses."""
    if "callchain" in t.column_names:
        return pa.types.is_string(t.schema.field("callchain").type.value_type)
    return "ip" not in t.column_names and "args" in t.column_names


def _text_frames(t: pa.Table):
    """The frames of perf script samples (their callchain, or without -g the one frame
    printed after the event name), already named: per frame its sample, a stand-in
    address (distinct per frame: a text callchain does not repeat the sample's own
    frame, so no frame may look like a repeat), cpumode (1 in the kernel, else 2),
    whether it is the sample's own, and a :class:`Resolved` with perf's names (DSOs by
    file name, as perf report shows them)."""
    if "callchain" in t.column_names:
        chain = t.column("callchain").combine_chunks()
        text = pc.list_flatten(chain)
        sample_of = pc.list_parent_indices(chain).to_numpy(zero_copy_only=False).astype(np.int64)
    else:
        text = t.column("args").combine_chunks()
        sample_of = np.arange(t.num_rows, dtype=np.int64)
    parts = pc.extract_regex(text, _FRAME_TEXT)
    symbol = pc.fill_null(parts.field("symbol"), UNKNOWN)
    symbol = pc.if_else(pc.equal(symbol, ""), UNKNOWN, symbol)
    dso = pc.replace_substring_regex(pc.fill_null(parts.field("dso"), UNKNOWN), r"^.*/", "")
    dso = pc.if_else(pc.equal(dso, ""), UNKNOWN, dso)
    symbol_np = np.asarray(symbol.to_numpy(zero_copy_only=False), dtype=object)
    dso_np = np.asarray(dso.to_numpy(zero_copy_only=False), dtype=object)
    kernel = np.asarray(pc.starts_with(dso, "[kernel").to_numpy(zero_copy_only=False), bool)
    is_self = np.ones(len(sample_of), dtype=bool)
    is_self[1:] = sample_of[1:] != sample_of[:-1]
    unnamed = symbol_np == UNKNOWN
    reason = np.where(unnamed, NOT_NAMED_BY_PERF, "").astype(object)
    # distinct unnamed frames (perf prints each address's own text), per DSO
    frames = pd.DataFrame({"dso": dso_np[unnamed], "text": text.filter(pa.array(unnamed))})
    by_dso = frames.drop_duplicates().groupby("dso").size().astype(int).to_dict()
    res = Resolved(
        symbol_np,
        dso_np,
        reason,
        unresolved={NOT_NAMED_BY_PERF: int(sum(by_dso.values()))} if by_dso else {},
        unresolved_dsos={NOT_NAMED_BY_PERF: by_dso} if by_dso else {},
    )
    ctx = np.where(kernel, 1, 2).astype(np.int64)
    return sample_of, np.arange(len(sample_of), dtype=np.uint64), ctx, is_self, res


def _kernel_half(addr: np.ndarray) -> np.ndarray:
    """cpumode by address where the file does not say: the upper half is the kernel's."""
    return np.where(addr >= np.uint64(1 << 63), 1, 2).astype(np.int64)


def _frames(t: pa.Table):
    """Per sample its own address and cpumode (and whether it has one), and the
    callchain addresses flattened with their sample index and cpumode. A callchain with
    a context marker perf does not take (a corrupt stack, a guest's) is dropped whole,
    as perf drops it: its sample keeps its own address only."""
    n, cols = t.num_rows, t.column_names
    if "callchain" in cols:
        chain = t.column("callchain").combine_chunks()
        flat = pc.list_flatten(chain).to_numpy(zero_copy_only=False).astype(np.uint64)
        parent = pc.list_parent_indices(chain).to_numpy(zero_copy_only=False).astype(np.int64)
        chain_ctx = _kernel_half(flat)
        if "callchain_context" in cols:
            got = pc.list_flatten(t.column("callchain_context").combine_chunks())
            if len(got) == len(flat):
                chain_ctx = got.to_numpy(zero_copy_only=False).astype(np.int64)
    else:
        flat, parent, chain_ctx = np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, int)
    if "ip" in cols:
        ip = t.column("ip").to_numpy(zero_copy_only=False).astype(np.uint64)
        ip_ctx = (
            t.column("cpumode").to_numpy(zero_copy_only=False).astype(np.int64)
            if "cpumode" in cols
            else _kernel_half(ip)
        )
        has_ip = np.ones(n, dtype=bool)
    else:  # a tracepoint: its own address is its callchain's first
        lengths = np.bincount(parent, minlength=n)
        has_ip = lengths > 0
        first = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        ip, ip_ctx = np.zeros(n, np.uint64), np.zeros(n, np.int64)
        ip[has_ip] = flat[first[has_ip]]
        ip_ctx[has_ip] = chain_ctx[first[has_ip]]
    bad = np.unique(parent[(chain_ctx < 1) | (chain_ctx > 3)])
    if len(bad):
        keep = ~np.isin(parent, bad)
        flat, parent, chain_ctx = flat[keep], parent[keep], chain_ctx[keep]
    return ip, ip_ctx, has_ip, flat, parent, chain_ctx, len(bad)


def _levels(codes: np.ndarray, ctx: np.ndarray, nf: int) -> np.ndarray:
    """Per function, perf's mark of the privilege level its addresses were seen at."""
    first = np.full(nf, -1, dtype=np.int64)
    order = np.argsort(codes, kind="stable")
    start = np.flatnonzero(np.r_[True, np.diff(codes[order]) != 0])
    first[codes[order][start]] = ctx[order][start]
    return np.array([LEVELS.get(int(c), "?") for c in first], dtype=object)


_SAMPLE_BRANCH_STACK, _SAMPLE_STACK_USER = 1 << 11, 1 << 13


def _unwinding_caveats(trace: Trace, table: str) -> list[str]:
    """What perf report would add from data this profile does not use: user stacks
    copied for DWARF unwinding, LBR call stacks."""
    out = []
    for e in trace.meta.source.get("events") or []:
        if e.get("table") != table or not isinstance(e.get("sample_type"), int):
            continue
        if e["sample_type"] & _SAMPLE_STACK_USER:
            out.append(
                "recorded with --call-graph dwarf: the copied user stacks are not unwound "
                "here (perf report unwinds them), so user-space callers are missing; record "
                "with -g (frame pointers)"
            )
        if e["sample_type"] & _SAMPLE_BRANCH_STACK:
            out.append(
                "the samples carry branch stacks (--call-graph lbr, -b): not used here, "
                "only the kernel's callchains"
            )
    return out


def _caveats(trace, choice, res, unresolved, table, n_all, n, filters) -> list[str]:
    out: list[str] = list(trace.warnings) + list(choice.warnings)
    if n != n_all:
        out.append(
            f"profiled {n} of the {n_all} {table} samples (the filters); shares are of their period"
        )
    if not (trace.table(table).column_names and "callchain" in trace.table(table).column_names):
        out.append("the samples have no callchains (record with -g): children = self")
    for why, u in unresolved.items():
        named = [d for d in u["dsos"] if d != UNKNOWN]
        where = (": " + ", ".join(named[:4]) + (", ..." if len(named) > 4 else "")) if named else ""
        own = (
            f"samples at them: {u['self_share']:.2%} of the period"
            if u["self_share"]
            else "only in callchains"
        )
        out.append(f"{u['addresses']} addresses unnamed ({UNKNOWN}) {why}{where} ({own})")
    notes = list(dict.fromkeys(res.notes))
    out.extend(notes[:8])
    if len(notes) > 8:
        out.append(f"... and {len(notes) - 8} more files without symbols")
    lost = trace.meta.source.get("lost_samples")
    if lost:
        out.append(f"perf lost {lost} samples while recording: the shares are of those kept")
    return list(dict.fromkeys(out))


__all__ = [
    "Profile",
    "profile",
    "sample_tables",
    "sample_mask",
    "unresolved_shares",
    "COLUMNS",
]
