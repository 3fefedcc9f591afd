"""One trace file read in time parts, without ever holding it whole
(docs/design-partitioned-analysis.md, 'Passes over the file').

:mod:`.parts` makes a part from a trace already loaded; this module makes it from the
file, with the readers' time ranges (``ReadOptions.time_range``), so that the memory a
part needs is its own. What a part's model needs of the rest of the trace comes from
passes over the parts, each small in what it returns:

1. **The fold** (:func:`fold_step`, left to right, one part after the other): a part's
   events after the rows carried to its start give the rows carried to its end
   (:func:`.prelude.carried_rows` composes from the left: carried again with the events
   up to a later cut, carried rows are those of the whole trace), the boundaries of the
   pids' lives it holds (found from its events and the rows before it), its lost-event
   rows and its share of the file's facts (:class:`Carry`). The client keeps the
   preludes (a few rows a task and CPU), the boundaries and the lost rows.
2. **Contradictions** (:func:`part_facts`, the parts at once): with the whole trace's
   lives, a part's model gives the tasks it shows running unseen (the ``rewoken``
   contradictions it owns) and whether it shows every switch; their union is the whole
   trace's (:class:`schedwake.model.whole.WholeFacts`). Its switch-ins per task and CPU
   give the whole trace's pinned tasks (:meth:`.driver.Plan.pinned`). A trace whose topology nothing
   says has its LLCs inferred from the wake-up migrations of all parts
   (:func:`whole_topology`).
3. **The parts' models** (:func:`read_part`, the parts at once): each part read with its
   prelude and the events up to its horizon (:func:`.parts.horizon`), given the whole
   trace's facts, lost rows and metadata; its model owns its rows of the whole model's
   (:func:`.parts.owned_rows`).

A part's horizon is found by reading on past its end in growing steps until every CPU
that could make it longer has switched again (or the file ends): :func:`.parts.horizon`
needs, per CPU, the segment the cut falls in whole.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from .. import ingest
from ..model.events import load_events
from ..model.lives import Lives
from ..model.llc import infer_from_moves, wakeup_moves, with_inference
from ..model.visits import SwitchIns, switch_ins
from ..model.whole import WholeFacts
from ..trace import Trace
from .parts import first_proofs, horizon, owned_rows, wait_limit, waiting_at
from .prelude import carried_rows

if TYPE_CHECKING:
    from ..ingest.meta import TraceMeta
    from ..topology import Topology

_MIN = int(np.iinfo(np.int64).min)

#: The first step a part reads past its end for its horizon, as a share of its length
#: (at least :data:`_FIRST_STEP_NS`); each further step is 4 times longer.
_FIRST_STEP_SHARE = 1 / 64
_FIRST_STEP_NS = 1_000_000


@dataclass(frozen=True)
class Carry:
    """What the fold carries across the cut ``t`` (the parts before it, folded)."""

    #: The cut: the parts before it are folded in.
    t: int
    #: Per event table, the rows before ``t`` a part starting there carries.
    prelude: dict[str, pa.Table]
    #: Every lost-event row before ``t``.
    lost: pa.Table
    #: The boundaries of the pids' lives before ``t`` (pid, ts).
    lives_pid: np.ndarray
    lives_ts: np.ndarray
    #: The metadata of the first part (the file's own facts), and the parts' sums.
    meta: TraceMeta
    first_ts: int | None
    last_ts: int | None
    event_counts: dict[str, int] = field(default_factory=dict)
    lost_events: dict[int, int] = field(default_factory=dict)
    lost_unknown: frozenset[int] = frozenset()
    warnings: tuple[str, ...] = ()


def read_range(
    path: str | Path, options: ingest.ReadOptions, t0: int | None, t1: int | None
) -> ingest.RawTrace:
    """The events of ``[t0, t1)`` of the file (None: its start, its end)."""
    rng = (_MIN if t0 is None else t0, t1)
    return ingest.read_with(Path(path), dataclasses.replace(options, time_range=rng))


def _joined(before: Mapping[str, pa.Table], after: Mapping[str, pa.Table]) -> dict[str, pa.Table]:
    """Per event table, the rows of ``before`` then those of ``after`` (both in time
    order, every row of ``before`` earlier)."""
    out = {}
    for name in dict.fromkeys([*after, *before]):
        parts = [t[name] for t in (before, after) if name in t and t[name].num_rows]
        if not parts:
            out[name] = after[name] if name in after else before[name]
        elif len(parts) == 1:
            out[name] = parts[0]
        else:
            out[name] = pa.concat_tables(parts, promote_options="default")
    return out


def _lost_joined(a: pa.Table, b: pa.Table) -> pa.Table:
    if not a.num_rows:
        return b
    if not b.num_rows:
        return a
    return pa.concat_tables([a, b], promote_options="default")


def fold_step(
    path: str | Path, options: ingest.ReadOptions, carry: Carry | None, t1: int | None
) -> Carry:
    """Read the part from ``carry``'s cut (None: the file's start) to ``t1`` (None: its
    end) and fold it into ``carry``: the rows carried to ``t1``, the lives' boundaries
    and lost rows before it, the facts of the file summed."""
    t0 = None if carry is None else carry.t
    raw = read_range(path, options, t0, t1)
    tables = _joined({} if carry is None else carry.prelude, raw.tables)
    lost = raw.lost if carry is None else _lost_joined(carry.lost, raw.lost)
    meta = raw.meta if carry is None else carry.meta
    first = raw.meta.first_ts_ns if carry is None or carry.first_ts is None else carry.first_ts
    last = raw.meta.last_ts_ns
    if last is None and carry is not None:
        last = carry.last_ts
    # the boundaries this part holds, found from its events after the carried rows
    seen = Trace(
        ingest.RawTrace(tables, dataclasses.replace(meta, first_ts_ns=first, last_ts_ns=last), lost)
    )
    lives = Lives.of(load_events(seen))
    mine = lives.ts >= (_MIN if t0 is None else t0)
    if t1 is not None:
        mine &= lives.ts < t1
    counts = dict({} if carry is None else carry.event_counts)
    for name, n in raw.meta.event_counts.items():
        counts[name] = counts.get(name, 0) + int(n)
    lost_events = dict({} if carry is None else carry.lost_events)
    for cpu, n in raw.meta.lost_events.items():
        lost_events[cpu] = lost_events.get(cpu, 0) + int(n)
    warnings = tuple(
        dict.fromkeys([*(() if carry is None else carry.warnings), *raw.meta.warnings])
    )
    prelude = _carried(tables, t1)
    return Carry(
        t=_MAX if t1 is None else t1,
        prelude=prelude,
        lost=lost,
        lives_pid=np.concatenate([_empty(carry, "lives_pid"), lives.pid[mine]]),
        lives_ts=np.concatenate([_empty(carry, "lives_ts"), lives.ts[mine]]),
        meta=meta,
        first_ts=first,
        last_ts=last,
        event_counts=counts,
        lost_events=lost_events,
        lost_unknown=frozenset(() if carry is None else carry.lost_unknown)
        | frozenset(raw.meta.lost_unknown),
        warnings=warnings,
    )


_MAX = int(np.iinfo(np.int64).max)


def _carried(tables: Mapping[str, pa.Table], t: int | None) -> dict[str, pa.Table]:
    """The rows of ``tables`` (a trace's, up to ``t``) carried to ``t`` (None: the end,
    where nothing is carried)."""
    if t is None:
        return {name: table.slice(0, 0) for name, table in tables.items()}
    keep = carried_rows(tables, t)
    return {name: table.take(pa.array(keep[name], pa.int64())) for name, table in tables.items()}


def _empty(carry: Carry | None, name: str) -> np.ndarray:
    return np.zeros(0, np.int64) if carry is None else getattr(carry, name)


def whole_meta(carry: Carry) -> TraceMeta:
    """The whole file's metadata from the fold over all its parts: the first part's,
    with the times, counts, losses and warnings of them all."""
    source = {k: v for k, v in carry.meta.source.items() if k not in _RANGE_SOURCE_KEYS}
    return dataclasses.replace(
        carry.meta,
        first_ts_ns=carry.first_ts,
        last_ts_ns=carry.last_ts,
        event_counts=dict(sorted(carry.event_counts.items())),  # (as every reader gives them)
        lost_events=carry.lost_events,
        lost_unknown=tuple(sorted(carry.lost_unknown)),
        warnings=carry.warnings,
        source=source,
    )


#: What a reader's ``source`` says of one range read, not of the file.
_RANGE_SOURCE_KEYS = ("time_range", "blocks_decoded")


@dataclass(frozen=True)
class PartSpec:
    """Everything a worker needs to read and model one part, besides the file."""

    path: str
    options: ingest.ReadOptions
    t0: int | None
    t1: int | None
    #: The rows carried to ``t0`` (:func:`fold_step`).
    prelude: dict[str, pa.Table]
    #: Every lost-event row of the file (few).
    lost: pa.Table
    #: The whole file's metadata (:func:`whole_meta`).
    meta: TraceMeta
    topology: Topology
    facts: WholeFacts


def window_spec(spec: PartSpec, t0: int | None, t1: int | None) -> PartSpec:
    """The spec of the part ``[t0, t1)`` (a window around something a part owns, that
    may reach past its ends) from the spec of a part that starts at or before ``t0``:
    the rows carried to ``t0`` are those carried to the part's start, carried on over
    the events between (:func:`.prelude.carried_rows` composes from the left)."""
    if spec.t0 is not None and (t0 is None or t0 < spec.t0):
        raise ValueError(f"a window from {t0} is not after the part's start {spec.t0}")
    prelude = spec.prelude
    if t0 is not None and t0 != spec.t0:
        raw = read_range(spec.path, spec.options, spec.t0, t0)
        prelude = _carried(_joined(spec.prelude, raw.tables), t0)
    return dataclasses.replace(spec, t0=t0, t1=t1, prelude=prelude)


def read_part(spec: PartSpec) -> Trace:
    """The part ``[spec.t0, spec.t1)`` of the file as a trace: its prelude, its events and
    those past its end up to its horizon (:func:`.parts.horizon`); the same trace
    :func:`.parts.part_of` makes from the whole trace loaded."""
    raw = read_range(spec.path, spec.options, spec.t0, spec.t1)
    tables = _joined(spec.prelude, raw.tables)
    last = spec.meta.last_ts_ns
    if spec.t1 is not None:
        tables = _joined(tables, _past_the_end(spec, tables))
        last = horizon(
            tables, spec.lost, spec.t1, wait_limit(spec.t0, spec.t1, spec.meta.first_ts_ns)
        )
        tables = {name: _until(t, last) for name, t in tables.items()}
    lost = _until(spec.lost, last)
    meta = dataclasses.replace(spec.meta, last_ts_ns=last)
    sideband = raw.sideband
    part = Trace(ingest.RawTrace(tables, meta, lost, sideband))
    part.topology = spec.topology
    part.whole_facts = spec.facts
    return part


def _until(table: pa.Table, last: int | None) -> pa.Table:
    """The rows of ``table`` (in time order) at or before ``last``."""
    if last is None or not table.num_rows:
        return table
    ts = table.column("ts").to_numpy()
    return table.slice(0, int(np.searchsorted(ts, last, side="right")))


def _past_the_end(spec: PartSpec, tables: Mapping[str, pa.Table]) -> dict[str, pa.Table]:
    """The events after the part's end that its horizon may need: read on in growing
    steps until each CPU whose segment at the cut could settle rows before it (a CPU
    with a switch before the cut, or with a lost-event row) has switched again, and
    each task woken before the cut and not yet run has been seen running, or the file
    ends."""
    assert spec.t1 is not None
    end = spec.meta.last_ts_ns
    if end is None or end < spec.t1:
        return {}
    switch = tables.get("sched_switch")
    waiting: set[int] = set()
    if switch is not None and switch.num_rows:
        waiting |= set(np.unique(switch.column("cpu").to_numpy()).tolist())
    if spec.lost.num_rows:
        waiting |= set(np.unique(spec.lost.column("cpu").to_numpy()).tolist())
    # (and each task woken and not yet run: until it is seen running, or one more part)
    tasks = waiting_at(tables, spec.t1)
    limit = wait_limit(spec.t0, spec.t1, spec.meta.first_ts_ns)
    start = spec.t0 if spec.t0 is not None else (spec.meta.first_ts_ns or spec.t1)
    step = max(_FIRST_STEP_NS, int((spec.t1 - start) * _FIRST_STEP_SHARE))
    read: dict[str, pa.Table] = {}
    at = spec.t1
    while (waiting or len(tasks)) and at <= end:
        to = min(at + step, end + 1)
        more = read_range(spec.path, spec.options, at, to).tables
        read = _joined(read, more)
        sw = more.get("sched_switch")
        if sw is not None and sw.num_rows:
            waiting -= set(np.unique(sw.column("cpu").to_numpy()).tolist())
        if len(tasks):
            tasks = tasks[first_proofs(more, tasks, at) < 0]
            if to > limit:  # (no further for them: :func:`.parts.wait_limit`)
                tasks = tasks[:0]
        at, step = to, step * 4
    return read


@dataclass(frozen=True)
class PartFacts:
    """What the second pass learns of one part (:func:`part_facts`)."""

    #: It owns no contradiction and no unknown time (its share of the whole trace's
    #: ``complete``, :class:`schedwake.model.completeness.Completeness`).
    complete: bool
    #: The life keys of the tasks its ``rewoken`` contradictions show running unseen.
    unseen: np.ndarray
    #: Its ``sched_migrate_task`` rows, and of them the wake-up migrations an LLC
    #: inference reads (:func:`schedwake.model.llc.wakeup_moves`), for a trace whose
    #: topology is assumed.
    migrations: int
    moves: np.ndarray
    #: Its switches (:class:`schedwake.model.visits.SwitchIns`): the pinned tasks of
    #: the whole trace are judged from all parts' (:meth:`.driver.Plan.pinned`).
    switch_ins: SwitchIns


def part_facts(spec: PartSpec) -> PartFacts:
    """Of the part, modelled with the whole trace's lives: :class:`PartFacts`."""
    part = read_part(spec)
    model = part.model
    owned = owned_rows(model, spec.t0, spec.t1, ("breaks", "timeline"))
    breaks, timeline = owned["breaks"], owned["timeline"]
    complete = len(breaks) == 0 and not (timeline["state"] == "unknown").any()
    rewoken = breaks[(breaks["kind"] == "rewoken").to_numpy()]
    keys = model.events.key(rewoken["pid"].to_numpy(), rewoken["ts"].to_numpy())
    mig = model.events.migrate
    mine = np.zeros(0, dtype=bool)
    if mig is not None and len(mig):
        ts = mig["ts"].to_numpy()
        mine = ts >= (_MIN if spec.t0 is None else spec.t0)
        if spec.t1 is not None:
            mine &= ts < spec.t1
    moves = np.zeros((0, 3), np.int64)
    if mine.any() and spec.topology.assumed:
        moves = wakeup_moves(model.events, model.wakeup_migrations, spec.topology.cpus, mine)
    return PartFacts(
        complete,
        np.unique(np.asarray(keys, np.int64)),
        int(mine.sum()),
        moves,
        switch_ins(model, spec.t0, spec.t1),
    )


def whole_facts(lives: Lives, parts: Sequence[PartFacts]) -> WholeFacts:
    """The whole trace's facts from the fold's lives and the parts' (:func:`part_facts`):
    no unseen tasks (None) when every part is complete."""
    if all(p.complete for p in parts):
        return WholeFacts(lives=lives, unseen_tasks=None)
    return WholeFacts(
        lives=lives, unseen_tasks=np.unique(np.concatenate([p.unseen for p in parts]))
    )


def whole_topology(assumed: Topology, parts: Sequence[PartFacts]) -> Topology:
    """The topology a whole trace resolves to when ``assumed`` is all that was found
    (:meth:`schedwake.Trace.topology`): the LLCs its wake-up migrations show, from the
    parts' moves."""
    moves = np.concatenate([p.moves for p in parts]) if parts else np.zeros((0, 3), np.int64)
    found = infer_from_moves(moves, assumed.cpus, any(p.migrations for p in parts))
    return with_inference(assumed, found)
