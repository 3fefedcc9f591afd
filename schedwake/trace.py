"""Trace: the tables, metadata and lost-event rows of one loaded trace.

This is what :func:`schedwake.load` returns and what every later stage (model,
detectors, reports) takes. It holds Arrow tables; ``df()`` gives pandas views.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from numbers import Integral
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pandas as pd
import pyarrow as pa

from . import ingest
from .errors import OptionError, TraceError
from .ingest import MAX_PID
from .ingest.meta import SliceFacts, TraceMeta

if TYPE_CHECKING:
    from .counters import Beside
    from .model import Model
    from .model.whole import WholeFacts
    from .topology import Topology


class Trace:
    """One loaded trace: event tables by name, metadata and lost events."""

    #: No stored analysis: a comparison measures the tables of a loaded trace
    #: (:class:`schedwake.sidetrace.SideTrace`, which a Trace satisfies).
    stored: None = None

    def __init__(self, raw: ingest.RawTrace) -> None:
        self._tables = raw.tables
        #: What the reader learnt about the file (:class:`TraceMeta`).
        self.meta: TraceMeta = raw.meta
        #: Where the ring buffer lost events (``schema.LOST_EVENTS_SCHEMA``).
        self.lost: pa.Table = raw.lost
        #: perf.data's COMM, FORK, EXIT and MMAP records as tables (``comms``, ``forks``,
        #: ``exits``, ``mmaps``); empty for other formats.
        self.sideband: dict[str, pa.Table] = raw.sideband
        self._topology: Topology | None = None
        self._model: Model | None = None
        self._pids: frozenset[int] | None = None
        #: For any slice (:meth:`sliced`): the whole trace, the window's bounds and the
        #: CPUs kept (None: all), which the model reads to tell what left the slice.
        self.slice_of: tuple[Trace, int | None, int | None, tuple[int, ...] | None] | None = None
        #: For a time part of a trace (:mod:`schedwake.partition`): the whole trace's
        #: facts its model uses (:class:`schedwake.model.whole.WholeFacts`).
        self.whole_facts: WholeFacts | None = None
        self._bench: list | None = None
        self._counters: tuple[Beside | None] | None = None

    @property
    def counters(self) -> Beside | None:
        """The kernel's counters and ``perf stat`` output beside the trace
        (:func:`schedwake.counters.read_beside`: ``<trace>.counters.json``,
        ``<trace>.perf-stat.txt``), read once; None when neither is there. TraceError
        names a file that is there but unusable."""
        if self._counters is None:
            from .counters import read_beside

            self._counters = (read_beside(self.meta.path),)
        return self._counters[0]

    @property
    def bench(self) -> list:
        """The benchmark's results in the files beside the trace
        (:func:`schedwake.bench.read_beside`: ``<trace>.bench.json``, fio's JSON,
        dbench's output), read once; TraceError names a file that is there but unusable."""
        if self._bench is None:
            from .bench import read_beside

            self._bench = read_beside(self.meta.path)
        return self._bench

    # -- topology and model ---------------------------------------------------------------
    @property
    def topology(self) -> Topology:
        """The CPU map (:class:`schedwake.topology.Topology`): set explicitly, else the
        ``<trace>.topology.json`` beside the trace, else the one the file's header
        records (perf.data), else the LLCs the trace's wake-ups show (``source ==
        "inferred"``, :mod:`schedwake.model.llc`), else one assumed LLC (``note`` says
        why none was inferred)."""
        if self._topology is None:
            from .topology import resolve

            self._use(
                resolve(
                    self.meta.path,
                    self.meta.ncpus,
                    header=self.meta.topology,
                )
            )
        assert self._topology is not None
        return self._topology

    @topology.setter
    def topology(self, topo: Topology | None) -> None:
        if topo is not None:
            topo.check_covers(self.meta.ncpus)
        self._topology = topo
        self._model = None

    def use_topology(
        self, topology_file: str | Path | None = None, llc: Iterable[str] | None = None
    ) -> Topology:
        """Pick the topology from a file or ``--llc`` cpulists (the CLI options);
        with neither, the default lookup (and inference). Returns the topology."""
        from .topology import resolve

        self._use(
            resolve(
                self.meta.path,
                self.meta.ncpus,
                topology_file,
                llc,
                header=self.meta.topology,
            )
        )
        assert self._topology is not None
        return self._topology

    def _use(self, topo: Topology) -> None:
        """Use ``topo``; one merely assumed is replaced by the LLCs the trace's wake-up
        migrations show, when they show them (the model built for that is kept: its
        events do not depend on the topology)."""
        from .model import Model
        from .model.llc import infer_llc, with_inference

        topo.check_covers(self.meta.ncpus)
        self._topology, self._model = topo, None
        if not topo.assumed:
            return
        try:
            model = Model(self, topo)
        except TraceError as exc:  # no model (raw-tick timestamps): nothing to infer from
            topo.note = exc.problem
            return
        topo = with_inference(topo, infer_llc(model.events, model.wakeup_migrations, topo.cpus))
        model.topology = topo
        self._topology, self._model = topo, model

    @property
    def model(self) -> Model:
        """The derived tables (:class:`schedwake.model.Model`), built once."""
        if self._model is None:
            from .model import Model

            self._model = Model(self, self.topology, self._pids)
        return self._model

    def wakeups(self) -> pd.DataFrame:
        """One row per wake-up (see :mod:`schedwake.model.wakeups`)."""
        return self.model.wakeups

    def migrations(self) -> pd.DataFrame:
        """Every ``sched_migrate_task`` with cause and topology class."""
        return self.model.migrations

    def occupancy(self) -> pd.DataFrame:
        """Per-CPU running, idle and runnable-waiting intervals."""
        return self.model.occupancy

    def task_states(self) -> pd.DataFrame:
        """Per-task running, runnable, sleeping and blocked intervals (every task; sum
        them per task, CPU or slice with ``schedwake.model.task_states.totals``)."""
        return self.model.task_states

    @property
    def caveats(self) -> list[str]:
        """What the model could not compute from this trace, in plain English; first the
        reader's :attr:`warnings`, which every report shows among the caveats."""
        return self.warnings + self.model.caveats

    @property
    def warnings(self) -> list[str]:
        """Bounded damage the reader found in the file and read around (one line each;
        ``meta.warnings``): the tables hold what was readable."""
        return list(self.meta.warnings)

    @property
    def path(self) -> str:
        return self.meta.path

    @property
    def events(self) -> list[str]:
        """Names of the event tables that were read, sorted."""
        return sorted(self._tables)

    @property
    def duration_ns(self) -> int:
        first, last = self.meta.first_ts_ns, self.meta.last_ts_ns
        return 0 if first is None or last is None else last - first

    def has(self, name: str) -> bool:
        """True if the trace has a table for event ``name`` (possibly empty)."""
        return name in self._tables

    def has_records(self, name: str) -> bool:
        """True if the trace has a non-empty table for event ``name``: what the model and
        the metrics count as present (an event not enabled and one that never fired look
        the same in a file)."""
        return name in self._tables and self._tables[name].num_rows > 0

    def table(self, name: str) -> pa.Table:
        """The Arrow table of event ``name`` (e.g. ``"sched_waking"``)."""
        name = name.split(":")[-1]
        try:
            return self._tables[name]
        except KeyError:
            raise KeyError(
                f"{self.path} has no {name!r} events (tables: {', '.join(self.events) or 'none'})"
            ) from None

    def df(self, name: str) -> pd.DataFrame:
        """Event ``name`` as a pandas DataFrame (string columns as categoricals)."""
        return self.table(name).to_pandas()

    def focus(self, pids: Iterable[int] | None) -> Trace:
        """Make the analysis about these tasks (``analyze --pid``): the model's wake-ups,
        migrations and waits are those of ``pids`` (None: every task), judged in the
        context of the whole trace. Returns the trace. Raises OptionError naming ``pids``
        for an empty list, a pid that is not a whole number from 0 to :data:`MAX_PID`, or
        one that no event of the trace shows running or woken."""
        self._pids = None if pids is None else frozenset(self._check_pids(pids))
        self._model = None
        return self

    def _check_pids(self, pids: Any) -> list[int]:
        """``pids`` as sorted ints, each a task the trace shows running or woken (a
        sched_switch's next or prev, a sched_waking's wakee)."""
        import numpy as np

        if isinstance(pids, (str, bytes)) or not isinstance(pids, Iterable):
            raise OptionError("pids", repr(pids), "must be a list of pids")
        given = list(pids)
        for p in given:
            if isinstance(p, bool) or not isinstance(p, Integral) or not 0 <= int(p) <= MAX_PID:
                raise OptionError("pids", repr(p), f"a pid is a whole number from 0 to {MAX_PID}")
        if not given:
            raise OptionError("pids", "[]", "give at least one pid (None: every task)")
        wanted = np.unique(np.asarray(given, dtype=np.int64))
        seen = np.zeros(len(wanted), dtype=bool)
        for name, cols in (("sched_switch", ("next_pid", "prev_pid")), ("sched_waking", ("pid",))):
            if self.has_records(name):
                table = self.table(name)
                for c in cols:
                    seen |= np.isin(wanted, table.column(c).to_numpy())
        if not seen.all():
            missing = int(wanted[~seen][0])
            raise OptionError(
                "pids", missing, f"no task with pid {missing} runs or is woken in the trace"
            )
        return wanted.tolist()

    def sliced(
        self,
        start_ns: int | None = None,
        end_ns: int | None = None,
        cpus: Iterable[int] | None = None,
    ) -> Trace:
        """This trace as if it had been recorded only from ``start_ns`` to ``end_ns``
        (trace timestamps, inclusive; None: open) and only on ``cpus`` (None: all), as
        ``trace-cmd record -M CPUMASK`` would have: every event table and the lost-event
        rows keep the events inside. The topology (and CPU numbering) stays the trace's;
        the slice is said among the caveats. The model of the slice reads the whole
        trace (:attr:`slice_of`) for what the slice does not hold: a CPU's state at the
        window's start, a task's state before it, where a waiting task went or ran
        outside the slice (a wait that leaves it is cut there). Raises TraceError if
        nothing is left, an OptionError (a ValueError) for a bound that is not an
        integer, bounds in the wrong order or a CPU the trace does not have."""
        import numpy as np
        import pyarrow.compute as pc

        cpus = self._check_slice(start_ns, end_ns, cpus)

        def keep(table: pa.Table) -> pa.Table:
            mask = np.ones(table.num_rows, dtype=bool)
            ts = table.column("ts").to_numpy()
            if start_ns is not None:
                mask &= ts >= start_ns
            if end_ns is not None:
                mask &= ts <= end_ns
            if cpus is not None:
                mask &= np.isin(table.column("cpu").to_numpy(), list(cpus))
            return table if mask.all() else table.filter(pa.array(mask))

        tables = {name: keep(t) for name, t in self._tables.items()}
        lost = keep(self.lost)
        stamps = [pc.min_max(t.column("ts")) for t in tables.values() if t.num_rows]
        what = []
        if start_ns is not None or end_ns is not None:
            lo = "start" if start_ns is None else f"{start_ns / 1e9:.6f}"
            hi = "end" if end_ns is None else f"{end_ns / 1e9:.6f}"
            what.append(f"from {lo} to {hi} s")
        if cpus is not None:
            from .topology import format_cpulist

            what.append(f"on CPUs {format_cpulist(cpus)}")
        if not stamps:
            raise TraceError(self.path, f"no events {' and '.join(what)}")
        counts = lost.column("count").to_numpy()
        lost_cpu = lost.column("cpu").to_numpy()
        lost_events = {
            int(c): int(counts[(lost_cpu == c) & (counts > 0)].sum())
            for c in np.unique(lost_cpu[counts > 0])
        }
        # losses the file counts but does not place in time (the ring buffer's statistics)
        # may fall in the slice: kept, so that a slice never looks cleaner than it is
        all_counts = self.lost.column("count").to_numpy()
        all_cpu = self.lost.column("cpu").to_numpy()
        for c, n in self.meta.lost_events.items():
            placed = int(all_counts[(all_cpu == int(c)) & (all_counts > 0)].sum())
            if n > placed and (cpus is None or int(c) in set(cpus)):
                lost_events[int(c)] = lost_events.get(int(c), 0) + n - placed
        facts = self._slice_facts(start_ns, end_ns)
        scaled = (
            f"; the detectors' least counts are scaled to its {100 * facts.share:.2g}% of "
            "the trace's duration (docs/detectors.md)"
            if facts.share < 1
            else ""
        )
        meta = dataclasses.replace(
            self.meta,
            first_ts_ns=min(int(m["min"].as_py()) for m in stamps),
            last_ts_ns=max(int(m["max"].as_py()) for m in stamps),
            event_counts={n: t.num_rows for n, t in tables.items() if t.num_rows},
            lost_events=dict(sorted(lost_events.items())),
            lost_unknown=tuple(sorted({int(c) for c in lost_cpu[counts < 0]})),
            recorded_cpus=tuple(
                sorted(
                    set(cpus if cpus is not None else range(self.meta.ncpus))
                    & set(self.meta.recorded_cpus or range(self.meta.ncpus))
                )
            ),
            warnings=self.meta.warnings
            + (f"analysed only the events {' and '.join(what)}{scaled}",),
            slice=facts,
        )
        out = Trace(ingest.RawTrace(tables, meta, lost))
        out._topology = self._topology if self._topology is not None else None
        # the whole trace, the window and the CPUs: what happened outside the slice (a
        # waiting task run or moved on another CPU, a wait that ends after it) is the
        # whole trace's to tell (model: a wait that leaves the slice is cut there)
        base = self.slice_of or (self, None, None, None)
        kept = cpus if base[3] is None else sorted(set(base[3]) & set(cpus or base[3]))
        out.slice_of = (
            base[0],
            meta.slice.t0_ns if meta.slice else start_ns,
            meta.slice.t1_ns if meta.slice else end_ns,
            None if kept is None else tuple(kept),
        )
        return out

    def _slice_facts(self, start_ns: int | None, end_ns: int | None) -> SliceFacts:
        """What a slice remembers of the whole trace: ``share``, its part of the trace's
        duration (the detectors scale the amounts they count by it:
        ``detect.for_slice``), ``events``, the events the whole trace has records of
        (one the slice lacks did not happen in it, rather than was not recorded), and
        the bounds of the window and of the whole trace (a slice of a slice keeps
        them)."""
        whole = self.meta.slice
        if whole is not None:
            first, last = whole.whole_first_ns, whole.whole_last_ns
            lo, hi = whole.t0_ns, whole.t1_ns
        else:
            first = int(self.meta.first_ts_ns or 0)
            last = int(self.meta.last_ts_ns or 0)
            lo, hi = first, last
        if start_ns is not None:
            lo = max(lo, int(start_ns))
        if end_ns is not None:
            hi = min(hi, int(end_ns))
        share = max(hi - lo, 0) / (last - first) if last > first else 1.0
        events = (whole.events if whole is not None else ()) or sorted(
            n for n in self._tables if self.has_records(n)
        )
        return SliceFacts(
            share=share,
            events=tuple(events),
            t0_ns=lo,
            t1_ns=hi,
            whole_first_ns=first,
            whole_last_ns=last,
        )

    def _check_slice(
        self, start_ns: int | None, end_ns: int | None, cpus: Iterable[int] | None
    ) -> list[int] | None:
        """The arguments of :meth:`sliced`, checked; ``cpus`` as a sorted list."""
        for name, bound in (("start_ns", start_ns), ("end_ns", end_ns)):
            if bound is not None and (isinstance(bound, bool) or not isinstance(bound, Integral)):
                raise OptionError(name, repr(bound), "must be an integer timestamp (ns) or None")
        if start_ns is not None and end_ns is not None and start_ns >= end_ns:
            raise OptionError("start_ns", start_ns, f"must come before end_ns ({end_ns})")
        if cpus is None:
            return None
        ncpus = self.meta.ncpus
        picked = sorted({int(c) for c in cpus})
        if not picked or picked[0] < 0 or picked[-1] >= ncpus:
            shown = "none" if not picked else (picked[0] if picked[0] < 0 else picked[-1])
            raise OptionError("cpus", shown, f"the trace has CPUs 0-{ncpus - 1}")
        return picked

    def __repr__(self) -> str:
        n = sum(t.num_rows for t in self._tables.values())
        return (
            f"<Trace {self.path!r} {self.meta.format}: {n} events in "
            f"{len(self._tables)} tables, {self.meta.cpus} CPUs, "
            f"{self.duration_ns / 1e9:.3f} s>"
        )


def load(
    path: str | Path,
    events: Iterable[str] | None = None,
    input_format: str | None = None,
    progress: ingest.Progress | None = None,
    reader: str | None = None,
    jobs: int | None = None,
    kallsyms: str | Path | None = None,
    time_range: tuple[int, int | None] | None = None,
) -> Trace:
    """Load a trace file of any supported format.

    ``events``: names of the events to read (all when None); reading fewer is faster.
    ``input_format``: one of ``schedwake.ingest.FORMATS`` to skip format sniffing.
    ``progress``: a callable that gets the fraction done, now and then.
    ``reader``: ``"schedwake"`` (None: the default, schedwake's own decoder of trace.dat
    and perf.data), ``"libtracecmd"`` (trace-cmd's library, run in a child process; for
    trace.dat files only) or ``"perf-script"`` (``perf script`` text; for perf.data files
    only). ``jobs``: decoding threads of schedwake's reader (an int >= 1; None: one per
    CPU); other readers ignore it. ``kallsyms``: a kallsyms file of the kernel a
    perf.data recorded, plain or compressed (None: this machine's ``/proc/kallsyms``
    when it runs that kernel), for fields that name kernel functions (the
    ``perf-script`` reader gives it to ``perf script --kallsyms``).
    ``time_range``: ``(t0, t1)`` nanoseconds (``t1`` None: to the end): only the events
    with ``t0 <= ts < t1``, reading only the blocks of the file that can hold them (a
    time partition of a trace: :func:`schedwake.ingest.cut_times`); trace.dat and
    perf.data only.
    Raises :class:`schedwake.TraceError` with a one-line reason on unusable input,
    :class:`schedwake.errors.OptionError` (a ValueError) naming the parameter for an
    unknown ``reader`` or ``input_format``, a bad ``jobs`` or an ``events`` that is not a
    list of names (the arguments are checked as a :class:`schedwake.ingest.ReadOptions`).
    """
    # (``events``, whatever it is, is ReadOptions' to check and to make a list)
    names = cast("list[str] | None", events)
    options = ingest.ReadOptions(
        names, input_format, progress, reader, jobs, kallsyms, time_range=time_range
    )
    return Trace(ingest.read_with(Path(path), options))


__all__ = ["Trace", "TraceMeta", "load", "TraceError"]
