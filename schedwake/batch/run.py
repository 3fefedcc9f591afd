"""Running a batch (:func:`batch`): the options checked, the inputs expanded, the traces an
earlier run into the same directory already analysed kept, the others analysed one Dask
task a trace (on a ``distributed.LocalCluster`` or an existing scheduler, with progress)
or in this process, and the dataset written once at the end.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd

from ..errors import OptionError, TraceError
from ..paths import matches_nothing
from .inputs import Options, expand_inputs, label_columns, label_regex, read_topology_map
from .one_trace import TraceResult, analyse_in_parts, analyse_one, error_result
from .reader import plain_value
from .writer import read_previous, write_dataset

#: The most worker processes a local cluster may be given.
MAX_WORKERS = 1024


@dataclass
class BatchResult:
    """What a :func:`batch` run did."""

    out: Path
    analysed: list[str] = field(default_factory=list)
    #: Traces kept from an earlier run into the same ``out`` (same file, same options).
    skipped: list[str] = field(default_factory=list)
    #: ``(path, one-line error)`` of this run's traces that could not be analysed.
    errors: list[tuple[str, str]] = field(default_factory=list)
    #: The Dask scheduler the traces ran on ("serial" for an in-process run).
    scheduler: str = ""

    @property
    def exit_code(self) -> int:
        """0 when every trace of this run was analysed, 2 when any was not."""
        return 2 if self.errors else 0


def batch(
    inputs: Sequence[str],
    out,
    *,
    topology_file=None,
    llc: Sequence[str] = (),
    topologies: Mapping[str, str] | Sequence[str] | None = None,
    thresholds: dict | None = None,
    windows: Sequence[float] = (),
    label_from: str | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    force: bool = False,
    input_format: str | None = None,
    reader: str | None = None,
    jobs: int | None = None,
    progress: Callable[[float, int], None] | None = None,
    partitions: int | str = "auto",
) -> BatchResult:
    """Analyse every trace of ``inputs`` once (paths, globs or directories) and write the
    dataset into directory ``out`` (see the module's docstring).

    ``scheduler``: None for a ``distributed.LocalCluster`` of ``workers`` processes
    (default: one per CPU this process may use), ``"tcp://HOST:PORT"`` for an existing
    Dask cluster (its workers must reach the traces by the same absolute paths and run
    the same schedwake), or ``"serial"`` to analyse in this process without Dask.
    ``topology_file``/``llc``/``thresholds``: as ``schedwake analyze``, for every trace
    (without them each trace's own TRACE.topology.json or topology.json is used);
    ``topologies``: per-trace topology files, ``{glob: file}`` (or ``["GLOB=FILE"]`` as
    ``--topology-for`` gives them), the first glob a trace's path matches naming its
    file, before ``topology_file``; ``windows``:
    extra per-window sample lengths (s) to store; ``label_from``: a regular expression
    whose named groups become columns; ``force``: analyse again what an earlier run
    into ``out`` already did. ``progress(done, total)`` is called as traces finish (and as
    a trace in parts goes on: ``done`` then has a fraction).
    ``partitions``: ``"auto"`` analyses a trace too big for one worker's memory in time
    parts over all the workers (:func:`partitions_of`; the same row, findings and
    windows as whole); an int N > 1 cuts every trace that can be cut (trace.dat,
    perf.data, a ``convert`` directory) into N parts, 1 none.

    Raises TraceError for bad options (a rules-of-the-road error, before any work); a
    trace that cannot be analysed is an error row (``BatchResult.errors``), not a raise.
    """
    from ..analysis import check_thresholds
    from ..compare import check_window
    from ..detect import thresholds as resolve_thresholds
    from ..topology import Topology

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise TraceError(out, "is a file; -o takes a directory")
    # bad options are refused before any work: each trace checks them again against itself
    label_regex(label_from)
    check_thresholds(resolve_thresholds(thresholds))
    for w in windows:
        check_window(w, (), "windows")
    if topology_file is not None:
        Topology.from_file(topology_file)
    if llc:
        Topology.from_llc_lists(llc)
    topology_map = read_topology_map(topologies)
    if workers is not None and not (isinstance(workers, int) and 1 <= workers <= MAX_WORKERS):
        raise OptionError("workers", workers, f"must be a whole number from 1 to {MAX_WORKERS}")
    if partitions != "auto" and not (
        isinstance(partitions, int) and not isinstance(partitions, bool) and partitions >= 1
    ):
        raise OptionError("partitions", partitions, "a number of parts >= 1, or auto")
    options = Options(
        topology_file=None if topology_file is None else str(topology_file),
        topology_abspath=None if topology_file is None else os.path.abspath(topology_file),
        llc=tuple(str(x) for x in llc),
        thresholds=tuple(sorted((k, float(v)) for k, v in (thresholds or {}).items())),
        windows=tuple(float(w) for w in windows),
        input_format=input_format,
        reader=reader,
        jobs=jobs,
        topology_map=topology_map,
    )
    paths, missing = expand_inputs(inputs)
    # the labels of the paths now, before any work: a backtracking label_from is refused
    # in seconds, not after hours of analysis
    label_columns(paths, label_from)
    before = read_previous(out)
    result = BatchResult(out)
    todo = []
    for p in paths:
        ap = os.path.abspath(p)
        prev = before.done.get(p)
        if prev is not None and not force and _unchanged(prev, ap, options):
            result.skipped.append(p)
        else:
            todo.append((p, ap))
    results: list[TraceResult] = [
        error_result(m, os.path.abspath(m), f"{m}: {matches_nothing(m)}", options) for m in missing
    ]
    if todo:
        results += _run(todo, options, scheduler, workers, progress, result, partitions)
    else:
        result.scheduler = "none (nothing to analyse)"
    for r in results:
        result.analysed.append(r.row["path"])
        if r.row["status"] != "ok":
            result.errors.append((r.row["path"], r.row["error"]))
    write_dataset(out, before, results, options, label_from)
    return result


def _unchanged(prev: dict, abspath: str, options: Options) -> bool:
    """An earlier ``ok`` row still stands: same file (size, modification time) and the
    same options."""
    try:
        st = os.stat(abspath)
    except OSError:
        return False
    return (
        prev.get("status") == "ok"
        and prev.get("size") == st.st_size
        and prev.get("mtime_ns") == st.st_mtime_ns
        and prev.get("options_key") == options.key()
        and not _results_changed(prev, abspath)
    )


def _results_changed(prev: dict, abspath: str) -> bool:
    """A benchmark results file beside the trace (:func:`schedwake.bench.candidates`)
    written since the row's analysis, or one the row used that is gone."""
    from ..bench import candidates

    at = plain_value(prev.get("analysed_at"))
    if at is None:
        return True
    since = pd.Timestamp(at).timestamp()
    for _, path in candidates(abspath):
        try:  # (a new symlink to an older file counts as new)
            if max(path.lstat().st_mtime, path.stat().st_mtime) >= since:
                return True
        except OSError:
            continue
    try:
        used = json.loads(plain_value(prev.get("bench")) or "{}")
        sources = {str(v.get("source")) for v in used.values() if isinstance(v, dict)}
    except (TypeError, ValueError, AttributeError, RecursionError):
        return True
    return not all(os.path.exists(s) for s in sources)


def _run(
    todo, options, scheduler, workers, progress, result, partitions="auto"
) -> list[TraceResult]:
    """Analyse ``todo`` ((path, abspath) pairs): in this process (``"serial"``) or as one
    Dask task a trace, but a trace too big for a worker in parts over all of them
    (:func:`partitions_of`); results in the order of ``todo``."""
    done = 0
    if progress:
        progress(0, len(todo))

    def one_done() -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, len(todo))

    def share(f: float) -> None:  # (of a trace in parts, the share of it done)
        if progress:
            progress(done + f, len(todo))

    if scheduler == "serial":
        result.scheduler = "serial"
        limit, n = _machine_memory(), 1
        out = []
        for p, ap in todo:
            parts = partitions_of(ap, options, partitions, limit, n)
            if parts > 1:
                out.append(analyse_in_parts(p, ap, options, parts, None, share))
            else:
                out.append(analyse_one(p, ap, options))
            one_done()
        return out
    from distributed import as_completed

    from ..partition.driver import workers_memory

    with dask_client(scheduler, workers) as (client, name):
        result.scheduler = name
        if options.jobs is None and scheduler is None:
            # the local workers share this machine's CPUs: a trace's decoding threads
            # get their share of them
            n = len(client.scheduler_info().get("workers", {})) or 1
            options = _replace(options, jobs=max(1, _cpus() // n))
        limit, n = workers_memory(client)
        run = uuid.uuid4().hex[:12]  # keys of their own on a cluster others use too
        futures = {}

        def submit(i: int, p: str, ap: str) -> None:
            key = f"schedwake-{run}-{i}"
            futures[client.submit(analyse_one, p, ap, options, key=key)] = (p, ap)

        # the traces that surely fit a worker (by their size) go at once; the others
        # after a look inside (partitions_of)
        cuts = {
            p: 1 for p, ap in todo if partitions == 1 or (partitions == "auto" and fits(ap, limit))
        }
        for i, (p, ap) in enumerate(todo):
            if p in cuts:
                submit(i, p, ap)
        for i, (p, ap) in enumerate(todo):
            if p not in cuts:
                cuts[p] = partitions_of(ap, options, partitions, limit, n)
                if cuts[p] == 1:
                    submit(i, p, ap)
        by_path = {}
        # a trace in parts takes every worker in turn (this thread runs its passes)
        for p, ap in todo:
            if cuts[p] > 1:
                by_path[p] = analyse_in_parts(p, ap, options, cuts[p], client, share)
                one_done()
        for fut in as_completed(futures):
            p, ap = futures[fut]
            try:
                by_path[p] = fut.result()
            except Exception as exc:  # the task never finished: its worker died, ...
                by_path[p] = error_result(p, ap, f"{p}: {_task_failure(exc)}", options)
            one_done()
        return [by_path[p] for p, _ in todo]


#: The fewest bytes a file takes for an event (a compressed trace.dat takes 5 to 7):
#: what bounds the events of a file from its size, without reading it.
MIN_BYTES_PER_EVENT = 2


def partitions_of(
    abspath: str, options: Options, partitions: int | str, limit: int, workers: int
) -> int:
    """The parts the trace ``abspath`` is analysed in (1: whole, on one worker): with
    ``partitions`` ``"auto"``, as many as the workers' memory needs
    (:func:`schedwake.partition.driver.auto_parts` for one worker of ``limit`` bytes),
    and then at least one per worker (``workers``), when that is more than one; an int:
    that many. Whole, whatever is asked: a trace that cannot be cut (text formats, the
    libtracecmd reader), has the kernel's counters beside it (the referee is judged of
    a whole trace), or cannot be read (its error row comes of the whole analysis)."""
    from .. import ingest
    from ..counters import read_beside
    from ..model import MODEL_EVENTS
    from ..partition.driver import auto_parts

    if partitions == 1:
        return 1
    try:
        if partitions == "auto" and fits(abspath, limit):
            return 1
        if options.reader not in (None, ingest.DEFAULT_READER):
            return 1
        if read_beside(abspath) is not None:
            return 1
        read = ingest.ReadOptions(events=list(MODEL_EVENTS), input_format=options.input_format)
        if partitions != "auto":
            n = int(partitions)
            return n if len(ingest.cut_times(abspath, n)) else 1
        need = auto_parts(abspath, read, limit, 1)
        return max(need, workers) if need > 1 else 1
    except Exception:  # noqa: BLE001 (the whole analysis names what is wrong)
        return 1


def fits(abspath: str, limit: int) -> bool:
    """Whether the trace surely fits a worker of ``limit`` bytes, by its files' size
    alone (a ``convert`` directory: its files together): even at
    :data:`MIN_BYTES_PER_EVENT`, a part of all its events would fit
    (:func:`schedwake.partition.driver.auto_parts`' measure)."""
    from ..partition.driver import PART_BYTES_PER_EVENT, PART_MEMORY_SHARE, WORKER_BASE_BYTES

    try:
        if os.path.isdir(abspath):
            size = 0
            for root, _, files in os.walk(abspath):
                size += sum(os.path.getsize(os.path.join(root, f)) for f in files)
        else:
            size = os.path.getsize(abspath)
    except OSError:  # (analysed whole: its error row says what is wrong)
        return True
    need = WORKER_BASE_BYTES + size / MIN_BYTES_PER_EVENT * PART_BYTES_PER_EVENT
    return need <= limit * PART_MEMORY_SHARE


def _machine_memory() -> int:
    from ..partition.driver import workers_memory

    return workers_memory(None)[0]


def _task_failure(exc: BaseException) -> str:
    from distributed import KilledWorker

    if isinstance(exc, KilledWorker):
        return (
            "the Dask worker analysing it died, also when retried (out of memory, or "
            "killed); analyse it alone with `schedwake analyze`"
        )
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return f"the Dask task failed: {text}"


def _replace(options: Options, **changes) -> Options:
    return Options(**{**asdict(options), **changes})


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def local_cluster(workers: int | None = None):
    """The ``distributed.LocalCluster`` :func:`batch` starts: ``workers`` processes (default
    one per CPU) of one thread each, no dashboard, quiet logs, and two Dask defaults off
    that made every analysis slower (measured on the samples, benchmarks/bench_batch.py):
    the workers' statistical profiler (it samples the running task's stack every 10 ms,
    +25%) and ``MALLOC_TRIM_THRESHOLD_=65536`` (pandas allocates and frees large blocks
    all the time, +15%; a batch worker holds one trace at a time anyway)."""
    import logging
    import warnings

    import dask
    from distributed import LocalCluster

    fast = {
        "distributed.worker.profile.enabled": False,
        "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
    }
    # (its HTTP server takes another port when 8787 is taken, saying so in a warning that
    # is no business of the command's output)
    with dask.config.set(fast), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Port .* is already in use", category=UserWarning)
        return LocalCluster(
            n_workers=workers or _cpus(),
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )


def _check_reachable(address: str) -> None:
    """A TCP scheduler address that refuses connections, or a host that does not resolve,
    fails at once (Dask's client would retry until its timeout)."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    if parts.scheme != "tcp" or not parts.hostname or parts.port is None:
        return
    try:
        socket.create_connection((parts.hostname, parts.port), timeout=10).close()
    except OSError as exc:
        raise OptionError(
            "scheduler",
            None,
            f"cannot reach the Dask scheduler {address}: {exc.strerror or exc}",
        ) from None


class dask_client:  # noqa: N801 (a context manager used as a function)
    """A Dask client on a new LocalCluster of ``workers`` processes (closed at the end)
    or on ``scheduler`` (an address): ``with dask_client(None, 2) as (client, name)``."""

    def __init__(self, scheduler, workers):
        self.scheduler, self.workers = scheduler, workers
        self.cluster = self.client = None

    def __enter__(self):
        from distributed import Client

        if self.scheduler:
            _check_reachable(self.scheduler)
            try:
                self.client = Client(self.scheduler, timeout="20s")
            except (OSError, TimeoutError) as exc:
                raise OptionError(
                    "scheduler", None, f"cannot reach the Dask scheduler {self.scheduler}: {exc}"
                ) from None
            if not self.client.scheduler_info().get("workers"):
                self.client.wait_for_workers(1, timeout=60)
            return self.client, self.scheduler
        n = self.workers or _cpus()
        self.cluster = local_cluster(n)
        self.client = Client(self.cluster)
        return self.client, f"LocalCluster of {n} worker process(es)"

    def __exit__(self, *exc):
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        return False
