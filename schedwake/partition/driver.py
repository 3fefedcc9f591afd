"""The passes over one file's time parts (:mod:`.passes`), run in this process or on a
Dask cluster, and what they give: a :class:`Plan` of parts ready to model, each with its
prelude and the whole trace's facts, metadata and topology.

::

    plan = schedwake.partition.plan("trace.dat", parts=8, client=client)
    rows = plan.map(lambda trace, spec: owned_rows(trace.model, spec.t0, spec.t1))

``client`` is a ``distributed.Client`` (its workers must reach the file by the same
path and run the same schedwake), or None to run every pass here. The fold (pass 1) is
a chain, one part after the other, each task given the carry of the one before (on a
cluster the carries move between workers, not through the client); the other passes
run the parts at once. The client holds the preludes, the lives' boundaries, the lost
rows and the parts' facts: a few rows a task and CPU, not the events.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np
import pandas as pd

from .. import ingest
from ..errors import TraceError
from ..model.lives import Lives
from ..model.visits import SwitchIns, pinned_of
from ..model.whole import WholeFacts
from ..trace import Trace
from .passes import (
    Carry,
    PartSpec,
    fold_step,
    part_facts,
    read_part,
    read_range,
    whole_facts,
    whole_meta,
    whole_topology,
    window_spec,
)

if TYPE_CHECKING:
    from ..ingest.meta import TraceMeta
    from ..topology import Topology

_R = TypeVar("_R")
_A = TypeVar("_A")
_Q = TypeVar("_Q")

#: A progress callback: the share of the passes done, 0 to 1.
Progress = Callable[[float], None]


@dataclass
class Plan:
    """One file cut into parts, after the passes that give each part what it needs."""

    path: str
    #: The parts in time order, each with the whole trace's facts.
    specs: list[PartSpec]
    #: The whole file's metadata (folded from the parts').
    meta: TraceMeta
    #: The topology every part's model uses.
    topology: Topology
    facts: WholeFacts
    client: Any = None
    #: Each part's switches (:func:`schedwake.model.visits.switch_ins`).
    switch_ins: list[SwitchIns] = field(default_factory=list)

    def pinned(self, min_runs: int) -> np.ndarray:
        """The whole trace's pinned tasks (:func:`schedwake.model.visits.pinned_of`)."""
        return pinned_of(self.switch_ins, min_runs)

    def map(
        self, fn: Callable[[Trace, PartSpec], _R], progress: Progress | None = None
    ) -> list[_R]:
        """``fn(part, spec)`` of every part (:func:`.passes.read_part`), in order: on the
        plan's cluster, or here."""
        return _map(self.client, _WithPart(fn), self.specs, progress)

    def keep(
        self, fn: Callable[[Trace, PartSpec], _R], progress: Progress | None = None
    ) -> Kept[_R]:
        """``fn(part, spec)`` of every part, kept where it was made (on the workers of
        the plan's cluster; here without one): asked for what the client needs of it
        with :meth:`Kept.ask`, so that a part's bulky result (a sorted column of its
        waits, say) never moves."""
        if self.client is None:
            return Kept(None, _map(None, _WithPart(fn), self.specs, progress))
        futures = [self.client.submit(_Guarded(_WithPart(fn)), s, pure=False) for s in self.specs]
        _gathered(self.client, futures, progress, fetch=False)
        return Kept(self.client, futures)

    def window(self, t0: int | None, t1: int | None) -> PartSpec:
        """The spec of a window ``[t0, t1)`` of the trace (None: its start, its end),
        whose model owns the whole model's rows there, as a part does
        (:func:`.passes.window_spec`); read with :func:`.passes.read_part`. It reads
        from the start of the part that holds ``t0``."""
        return window_spec(self._holding(t0), t0, t1)

    def _holding(self, t: int | None) -> PartSpec:
        """The spec of the part that holds the time ``t`` (None: the first)."""
        at = 0
        for i, s in enumerate(self.specs):
            if s.t0 is None or (t is not None and s.t0 <= t):
                at = i
        return self.specs[at]

    def map_windows(
        self,
        fn: Callable[[Trace, PartSpec], _R],
        windows: Sequence[tuple[int | None, int | None]],
    ) -> list[_R]:
        """``fn(window, spec)`` of every window ``(t0, t1)`` (:meth:`window`), in order: on
        the plan's cluster, or here (each window's prelude is carried where it runs)."""
        jobs = [(self._holding(t0), t0, t1) for t0, t1 in windows]
        return _map(self.client, _InWindow(fn), jobs, None)


class Kept(Generic[_R]):
    """The results of a function of every part, in part order, kept where they were
    made (:meth:`Plan.keep`)."""

    def __init__(self, client: Any, items: list[Any]) -> None:
        self._client = client
        #: The results (here), or the futures of them (on a cluster).
        self._items = items

    def ask(self, fn: Callable[..., _Q], *args: Any) -> list[_Q]:
        """``fn(result, *args)`` of every part's result, in part order: run where each
        result is."""
        if self._client is None:
            return [fn(item, *args) for item in self._items]
        futures = [self._client.submit(_Guarded(fn), f, *args, pure=False) for f in self._items]
        return _gathered(self._client, futures, None)

    def select(self, fn: Callable[[_R], _Q]) -> Kept[_Q]:
        """The kept results' ``fn`` (a part of each), kept where they are."""
        if self._client is None:
            return Kept(None, [fn(item) for item in self._items])
        return Kept(
            self._client, [self._client.submit(_Guarded(fn), f, pure=False) for f in self._items]
        )

    def redone(
        self, fn: Callable[[Trace, PartSpec], _R], specs: Mapping[int, PartSpec]
    ) -> Kept[_R]:
        """These results, but those of the parts ``specs`` names (by position) made again:
        ``fn(part, spec)`` of each part read from its new spec, kept where it is made."""
        if self._client is None:
            items = list(self._items)
            for i, spec in specs.items():
                items[i] = _WithPart(fn)(spec)
            return Kept(None, items)
        futures = dict(
            zip(
                specs,
                [
                    self._client.submit(_Guarded(_WithPart(fn)), s, pure=False)
                    for s in specs.values()
                ],
            )
        )
        _gathered(self._client, list(futures.values()), None, fetch=False)
        self._client.cancel([self._items[i] for i in specs])
        return Kept(self._client, [futures.get(i, f) for i, f in enumerate(self._items)])

    def release(self) -> None:
        """Let the cluster forget the results."""
        if self._client is not None:
            self._client.cancel(self._items)
        self._items = []


@dataclass(frozen=True)
class _InWindow:
    """``fn`` called with a window's trace, from the spec of the part holding its start
    and its bounds (a picklable callable)."""

    fn: Callable[[Trace, PartSpec], Any]

    def __call__(self, job: tuple[PartSpec, int | None, int | None]) -> Any:
        spec = window_spec(*job)
        return self.fn(read_part(spec), spec)


@dataclass(frozen=True)
class _WithPart:
    """``fn`` called with the part read from its spec (a picklable callable)."""

    fn: Callable[[Trace, PartSpec], Any]

    def __call__(self, spec: PartSpec) -> Any:
        return self.fn(read_part(spec), spec)


def plan(
    path: str | Path,
    parts: int,
    options: ingest.ReadOptions | None = None,
    *,
    topology: Topology | None = None,
    topology_file: str | Path | None = None,
    llc: Sequence[str] | None = None,
    client: Any = None,
    progress: Progress | None = None,
) -> Plan:
    """Cut ``path`` into ``parts`` of about equal event counts
    (:func:`schedwake.ingest.cut_times`) and run the fold and the facts' pass over them
    (:mod:`.passes`). ``topology``: the CPU map every part uses (None: the file's own,
    as :attr:`schedwake.Trace.topology` finds it: the file beside it, the header, else
    inferred from all parts' wake-up migrations); ``topology_file``, ``llc``: the CLI's
    options (:meth:`schedwake.Trace.use_topology`) instead. ``progress`` gets the share
    of these two passes done. Raises what reading the file raises (TraceError,
    OptionError)."""
    opts = options or ingest.ReadOptions()
    p = str(path)
    cuts = ingest.cut_times(p, parts)
    bounds: list[int | None] = [None, *cuts, None]
    spans = list(zip(bounds[:-1], bounds[1:]))
    total = 2 * len(spans)
    carries = _fold(client, p, opts, [t1 for _, t1 in spans], _scaled(progress, 0, total))
    last = carries[-1]
    meta = whole_meta(last)
    lives = Lives(last.lives_pid, last.lives_ts)
    topo = topology
    if topo is None:
        from ..topology import resolve

        topo = resolve(meta.path, meta.ncpus, topology_file, llc, header=meta.topology)
    topo.check_covers(meta.ncpus)
    specs = [
        PartSpec(
            p,
            opts,
            t0,
            t1,
            {} if before is None else before.prelude,
            last.lost,
            meta,
            topo,
            WholeFacts(lives, None),
        )
        for (t0, t1), before in zip(spans, [None, *carries[:-1]])
    ]
    found = _map(client, part_facts, specs, _scaled(progress, len(spans), total))
    facts = whole_facts(lives, found)
    if topo.assumed and topology is None:  # (as the whole trace's: Trace.use_topology)
        topo = whole_topology(topo, found)
    specs = [dataclasses.replace(s, facts=facts, topology=topo) for s in specs]
    return Plan(p, specs, meta, topo, facts, client, [f.switch_ins for f in found])


#: What a worker's memory holds for a part: the process with its libraries, and per
#: event of the part (nominal: a part reads on past its end up to one more part's
#: length for the tasks waiting at its end, about twice its own events on a busy
#: trace; its model; what it keeps), measured on the 9.9 M-event recording of
#: docs/performance.md (a part of 0.9 to 1.2 M events read with its horizon: 300 to 430
#: MiB above the process; 1 GiB workers with 520 k-event parts were killed).
WORKER_BASE_BYTES = 300 << 20
PART_BYTES_PER_EVENT = 1400
#: The share of a worker's memory limit a part may take (Dask pauses a worker at 80%).
PART_MEMORY_SHARE = 0.75


def auto_parts(
    path: str | Path, options: ingest.ReadOptions | None, memory_limit: int, workers: int
) -> int:
    """How many parts ``path`` is cut into for workers of ``memory_limit`` bytes each
    (``workers`` of them): enough that a part fits a worker (:data:`PART_BYTES_PER_EVENT`)
    and at least one per worker. The events are estimated from a 64th of the file read
    in its middle (:func:`schedwake.ingest.cut_times` cuts by equal blocks)."""
    cuts = ingest.cut_times(path, 64)
    if len(cuts) < 2:  # (a small file: a few blocks)
        return max(workers, 1)
    mid = len(cuts) // 2
    raw = read_range(path, options or ingest.ReadOptions(), cuts[mid - 1], cuts[mid])
    events = sum(raw.meta.event_counts.values()) * (len(cuts) + 1)
    per_part = max(
        (memory_limit * PART_MEMORY_SHARE - WORKER_BASE_BYTES) / PART_BYTES_PER_EVENT, 10_000
    )
    return max(workers, -(-events // int(per_part)), 1)


def workers_memory(client: Any) -> tuple[int, int]:
    """The smallest memory limit of the ``client``'s workers (bytes; a worker without
    one: this machine's memory shared among them) and how many there are; here (no
    client): one worker of this machine's memory."""
    import os

    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if client is None:
        return total, 1
    workers = client.scheduler_info().get("workers", {})
    if not workers:
        return total, 1
    limits = [int(w.get("memory_limit") or 0) for w in workers.values()]
    shared = total // len(workers)
    return min(x if x > 0 else shared for x in limits), len(workers)


def _fold(
    client: Any,
    path: str,
    options: ingest.ReadOptions,
    ends: Sequence[int | None],
    progress: Progress | None,
) -> list[Carry]:
    """Pass 1: the carries after each part, folded left to right."""
    if client is None:
        carries: list[Carry] = []
        for i, t1 in enumerate(ends):
            carries.append(fold_step(path, options, carries[-1] if carries else None, t1))
            if progress:
                progress((i + 1) / len(ends))
        return carries
    futures: list[Any] = []
    for t1 in ends:
        futures.append(
            client.submit(
                _Guarded(fold_step), path, options, futures[-1] if futures else None, t1, pure=False
            )
        )
    return _gathered(client, futures, progress)


def _map(
    client: Any, fn: Callable[[_A], _R], specs: Sequence[_A], progress: Progress | None
) -> list[_R]:
    """``fn`` of every spec, in order."""
    if client is None:
        out = []
        for i, s in enumerate(specs):
            out.append(fn(s))
            if progress:
                progress((i + 1) / len(specs))
        return out
    futures = [client.submit(_Guarded(fn), s, pure=False) for s in specs]
    return _gathered(client, futures, progress)


def _gathered(
    client: Any, futures: list[Any], progress: Progress | None, fetch: bool = True
) -> list[Any]:
    """The futures' results in order (``fetch``; else none: they stay on the cluster),
    reporting progress as they finish; the first error of the file raised again here
    (a TraceError a worker returned: :class:`_Raised`), as raising it in this process
    would."""
    from distributed import as_completed

    done = 0
    for f in as_completed(futures):
        if f.status == "error":
            f.result()  # (raises the task's exception)
        done += 1
        if progress:
            progress(done / len(futures))
    if not fetch:  # (only whether each failed comes back)
        failed = client.gather([client.submit(_raised, f, pure=False) for f in futures])
        for r in failed:
            if r is not None:
                raise r.error
        return []
    out = list(client.gather(futures))
    for r in out:
        if isinstance(r, _Raised):
            raise r.error
    return out


@dataclass(frozen=True)
class _Raised:
    """What a task returns instead of raising the file's error (a TraceError): a worker
    logs a task that raises, with a traceback, on the command's terminal; the client
    raises it again (:func:`_gathered`), so the command says it in one line."""

    error: Exception


@dataclass(frozen=True)
class _Guarded:
    """``fn``, returning the file's error (:class:`_Raised`) instead of raising it, and
    passing one it is given on (a fold step after a failed one, a question to a failed
    part's result)."""

    fn: Callable[..., Any]

    def __call__(self, *args: Any) -> Any:
        for a in args:
            if isinstance(a, _Raised):
                return a
        try:
            return self.fn(*args)
        except TraceError as exc:
            return _Raised(exc)


def kept_nbytes(obj: Any) -> int:
    """About how many bytes a kept result holds (a dataclass of arrays, frames, lists,
    dicts and more dataclasses): what Dask's ``sizeof`` is told of the results kept on
    a worker (:meth:`Plan.keep`, :func:`_sizes_told`), so that it spills them to disk
    under its memory limit instead of taking them for a few bytes each (its default
    for an object it does not know) and letting the worker be killed. Quick (it is
    asked each time a result moves between memory and disk): arrays by their sizes, a
    frame's column at 8 bytes a row, a Python object in a column, list or dict at a
    flat 100 bytes."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return 64 + sum(kept_nbytes(getattr(obj, f.name)) for f in dataclasses.fields(obj))
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes) + (100 * obj.size if obj.dtype == object else 0)
    if isinstance(obj, (pd.DataFrame, pd.Series)):
        dtypes = obj.dtypes if isinstance(obj, pd.DataFrame) else [obj.dtype]
        return 64 + len(obj) * (8 + sum(100 if d.kind == "O" else 8 for d in dtypes))
    if isinstance(obj, (list, tuple, dict, set, frozenset)):
        return 64 + 100 * len(obj)
    return 64


def _sizes_told() -> None:
    """Dask's ``sizeof`` of a dataclass is :func:`kept_nbytes` where this module is
    imported: on the workers, which unpickle the tasks it submits (:class:`_Guarded`)."""
    try:
        from dask.sizeof import sizeof
    except ImportError:  # (no Dask: the parts run here)
        return
    default = sizeof.dispatch(object)

    @sizeof.register(object)
    def _dataclasses_too(obj: Any) -> int:
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return kept_nbytes(obj)
        return int(default(obj))


_sizes_told()


def _raised(result: Any) -> _Raised | None:
    """The error a kept result is (:class:`_Raised`), else None."""
    return result if isinstance(result, _Raised) else None


def _scaled(progress: Progress | None, start: int, total: int) -> Progress | None:
    """``progress`` of a pass that covers ``[start, start + 1 pass)`` of ``total``
    parts' steps."""
    if progress is None:
        return None

    def report(share: float, _p: Progress = progress) -> None:
        _p(min(1.0, (start + share * (total // 2)) / total))

    return report
