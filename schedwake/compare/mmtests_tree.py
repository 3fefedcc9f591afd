"""An mmtests results tree compared: its one job is to read the runs of a tree that
mmtests' ``run-mmtests.sh`` wrote and turn each subtest into a comparison.

The layout (mmtests' ``run-mmtests.sh`` and ``bin/run-single-test.sh``)::

    RESULTS_DIR/                      work/log of an mmtests checkout
      RUN/                            the run name given to run-mmtests.sh
        iter-0/, iter-1/, ...         MMTEST_ITERATIONS: replicates of the run
          BENCHMARK/logs/             LOGDIR_RESULTS of one benchmark
            perf-SUBTEST.data.zst     perf sched record -a around the subtest (the
                                      fragment-profile-hook-sched-record hook; .xz,
                                      .bz2 or plain when zstd is missing)
            hackbench-SUBTEST         the benchmark's own output

Per benchmark and subtest, each side (``NAME=RUN``: one or more runs) gets one sample
of every scheduler metric per ``iter-N`` (the recording of that iteration), and
mmtests' own figures of the subtest as mmtests' extraction reads them: every value its
``parse-results`` gives, over every ``iter-N`` (:data:`FIGURES`; a benchmark without an
entry there is compared on the scheduler's metrics only, and a note says so). The
result (:class:`TreeComparison`) holds one :class:`schedwake.compare.CompareResult` a
subtest; :mod:`schedwake.report.mmtests_tree` prints it.

**Coverage.** mmtests starts ``perf sched record -a`` in the background right before
the benchmark and stops it right after, so perf's start-up (about a second on a small
machine, longer under load) misses the start of the subtest, and all of a short one.
Each recording's span (the perf.data header's recorded time, else its first to last
event) is held against the benchmark's own time of the subtest in that iteration
(hackbench: its ``Total time`` summed over its iterations) as :class:`Coverage`; a
recording that covers less than :data:`MIN_COVERAGE` of it, or has fewer than
:data:`MIN_SWITCHES` ``sched_switch`` events (the gate's ``min_switches``), describes
too little of the subtest: its scheduler metrics are withheld, and a subtest a side of
which has no recording left shows mmtests' figures only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..errors import TraceError
from ..sidetrace import SideTrace
from ..sidevalues import parsed_number
from . import CompareResult, Side, from_samples, load_model_trace, measure, sample_plan

__all__ = [
    "FIGURES",
    "MIN_COVERAGE",
    "MIN_SWITCHES",
    "Coverage",
    "Figures",
    "Run",
    "Subtest",
    "TreeComparison",
    "compare_tree",
    "find_runs",
    "parse_run_sides",
    "read_run",
    "results_dir",
]

#: A recording covering less than this share of the benchmark's time of its subtest
#: describes too little of it: its scheduler metrics are withheld.
MIN_COVERAGE = 0.5
#: ... as is one with fewer ``sched_switch`` events (the gate's ``min_switches``: a
#: rate from fewer is noise).
MIN_SWITCHES = 200

#: A subtest's ``perf sched record`` file: ``perf-SUBTEST.data``, compressed or not.
RECORDING = re.compile(r"perf-(?P<subtest>.+)\.data(?:\.(?:zst|xz|bz2|gz))?")


@dataclass(frozen=True)
class Figures:
    """How mmtests' ``parse-results`` of a benchmark reads its own figures: the files
    (one a subtest, ``file`` with the subtest in its group), the value of each line that
    ``line`` matches (one a benchmark iteration), their name (shellpack.yaml's metric),
    unit and direction (``preferhigher``, else lower). ``scale`` multiplies mmtests'
    value into ``unit`` (hackbench's seconds as ms: the table prints 2 decimals).
    ``seconds``: for a figure that is the time each benchmark iteration took, what
    turns a value in ``unit`` into seconds (their sum is the benchmark's time of the
    subtest, which a recording's coverage is held against); None for another figure."""

    metric: str
    unit: str
    direction: str
    file: re.Pattern
    line: re.Pattern
    scale: float = 1.0
    seconds: float | None = None

    def read(self, path: Path) -> list[float]:
        """The figures of one file; TraceError naming it when it has none or a bad one."""
        try:
            text = path.read_text(errors="replace")
        except OSError as exc:
            raise TraceError(path, f"cannot read: {exc.strerror or exc}") from None
        values = [
            parsed_number(path, self.metric, m.group(1)) * self.scale
            for m in map(self.line.search, text.splitlines())
            if m
        ]
        if not values:
            raise TraceError(path, f"no {self.line.pattern!r} line: not the benchmark's output")
        return values


#: mmtests' figures by benchmark (the name a benchmark's directory starts with, as
#: mmtests' ExtractFactory looks a shellpack up: hackbench-process-pipes is hackbench).
FIGURES: dict[str, Figures] = {
    # shellpack_src/src/hackbench/parse-results: grep "Total time:" hackbench-$NR_JOBS
    "hackbench": Figures(
        "time",
        "ms",
        "lower",
        re.compile(r"hackbench-(?P<subtest>\d+)"),
        re.compile(r"^\s*Total time:\s*(\S+)"),
        scale=1000.0,
        seconds=0.001,
    ),
}


def figures_of(benchmark: str) -> Figures | None:
    """The :data:`FIGURES` entry of a benchmark: its name, else its name cut at its last
    ``-`` again and again (mmtests' lookupShellpackRoot)."""
    name = benchmark
    while True:
        if name in FIGURES:
            return FIGURES[name]
        cut = name.rsplit("-", 1)[0]
        if cut == name:
            return None
        name = cut


def _natural(text: str) -> tuple:
    """Sort key: numbers in a name by value (subtest 2 before 10, iter-2 before iter-10)."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text))


@dataclass(frozen=True)
class Run:
    """One run of the tree: its name and its ``iter-N`` directories, in order."""

    name: str
    path: Path
    iterations: tuple[Path, ...]

    def benchmarks(self) -> list[str]:
        """The benchmarks with a ``logs`` directory in every iteration."""
        each = [{p.parent.name for p in it.glob("*/logs") if p.is_dir()} for it in self.iterations]
        return sorted(set.intersection(*each)) if each else []


#: The sides of a tree's comparison: (label, its runs), the baseline first
Sides = list[tuple[str, list[Run]]]


def results_dir(path: str | Path) -> Path:
    """The directory holding the runs: ``path``, or ``path/work/log`` (an mmtests
    checkout); TraceError naming it when it holds no run."""
    p = Path(path)
    if not p.is_dir():
        raise TraceError(p, "no such directory" if not p.exists() else "is not a directory")
    if not find_runs(p) and (p / "work" / "log").is_dir():
        p = p / "work" / "log"
    if not find_runs(p):
        raise TraceError(p, "holds no mmtests run (no RUN/iter-N directory)")
    return p


def find_runs(path: Path) -> list[str]:
    """The names of the runs under ``path`` (directories with an ``iter-N``), sorted."""
    return sorted(
        (d.name for d in path.iterdir() if d.is_dir() and any(d.glob("iter-[0-9]*"))),
        key=_natural,
    )


def read_run(root: Path, name: str) -> Run:
    """The run ``name`` under ``root``; TraceError naming it when there is none."""
    path = root / name
    if "/" in name or name in (".", "..") or not path.is_dir():
        known = ", ".join(find_runs(root)) or "none"
        raise TraceError(path, f"no such mmtests run (the runs of {root}: {known})")
    its = sorted(
        (d for d in path.glob("iter-*") if d.is_dir() and re.fullmatch(r"iter-\d+", d.name)),
        key=lambda d: int(d.name[5:]),
    )
    if not its:
        raise TraceError(path, "has no iter-N directory: not an mmtests run")
    return Run(name, path, tuple(its))


def parse_run_sides(
    root: Path, side_specs: Sequence[str], labels: Sequence[str] = ()
) -> list[tuple[str, list[Run]]]:
    """The sides of ``--side NAME=RUN`` (``RUN`` alone: named RUN; a NAME given twice
    adds the run to that side), or every run of the tree, in name order, without any;
    ``labels`` rename them in order. TraceError for a malformed spec, an unknown run,
    a label count that does not match or fewer than two sides."""
    named: dict[str, list[Run]] = {}
    for spec in side_specs:
        name, sep, run = str(spec).partition("=")
        if not sep:  # (RUN alone: the side is named after it)
            run = name
        name, run = name.strip(), run.strip()
        if not run or (sep and not name):
            raise TraceError("--side", f"expected NAME=RUN, got {spec!r}")
        named.setdefault(name, []).append(read_run(root, run))
    if not side_specs:
        named = {r: [read_run(root, r)] for r in find_runs(root)}
    sides = list(named.items())
    if labels:
        if len(labels) != len(sides):
            raise TraceError(
                "--label", f"{len(labels)} label(s) for {len(sides)} side(s); one per side"
            )
        sides = [(str(lab), runs) for lab, (_, runs) in zip(labels, sides)]
    if len(sides) < 2:
        raise TraceError(
            str(root), f"compare needs two sides (got {len(sides)}): give --side NAME=RUN twice"
        )
    return sides


@dataclass(frozen=True)
class Coverage:
    """How much of its subtest one recording covers: its span against the benchmark's
    own time of the subtest in that iteration, and whether its scheduler metrics are
    withheld (:data:`MIN_COVERAGE`, :data:`MIN_SWITCHES`)."""

    side: str
    #: The index of the recording among its side's (an ``iter-N`` of its runs).
    iteration: int
    path: Path
    #: The recording's span in seconds, and where it is from (``"perf.data header"``:
    #: its SAMPLE_TIME feature; ``"first to last event"``).
    span_s: float
    span_source: str
    #: The benchmark's time of the subtest in that iteration (s), None where mmtests'
    #: figures of the benchmark are no time.
    bench_s: float | None
    switches: int
    #: Why its scheduler metrics are withheld, None when they are kept.
    withheld: str | None

    @property
    def share(self) -> float | None:
        """``span_s / bench_s``, at most 1 (the span also holds the pauses between the
        benchmark's iterations, so it is an upper bound); None without ``bench_s``."""
        if not self.bench_s:
            return None
        return min(1.0, self.span_s / self.bench_s)


def coverage_of(
    side: str, iteration: int, path: Path, trace: SideTrace, bench_s: float | None
) -> Coverage:
    """A recording's :class:`Coverage`: its span from its perf.data header's SAMPLE_TIME
    (first to last event without one) against ``bench_s``, and the rule's verdict."""
    meta = trace.meta
    header = meta.source.get("sample_time") if meta.source else None
    if header and header[1] >= header[0]:
        span_ns, how = header[1] - header[0], "perf.data header"
    else:
        first, last = meta.first_ts_ns, meta.last_ts_ns
        span_ns = last - first if first is not None and last is not None else 0
        how = "first to last event"
    span = span_ns / 1e9
    switches = int(meta.event_counts.get("sched_switch", 0))
    why = []
    if bench_s and span / bench_s < MIN_COVERAGE:
        share = span / bench_s
        pct = f"{share:.0%}" if share >= 0.01 else f"{share:.2%}"
        why.append(f"covers {pct} (< {MIN_COVERAGE:.0%}) of the benchmark's time")
    if switches < MIN_SWITCHES:
        why.append(f"{switches} sched_switch events (< {MIN_SWITCHES})")
    return Coverage(side, iteration, path, span, how, bench_s, switches, "; ".join(why) or None)


@dataclass
class Subtest:
    """One subtest of a benchmark compared: its recordings and figure files per side,
    and the comparison (scheduler metrics and mmtests' figures as ``bench_*`` rows)."""

    benchmark: str
    subtest: str
    #: ``{side label: [recording path, ...]}`` (one an iteration of its runs).
    recordings: dict[str, list[Path]]
    #: ``{side label: [figures file, ...]}`` (empty without :data:`FIGURES` of it).
    figure_files: dict[str, list[Path]]
    result: CompareResult
    #: Each recording's :class:`Coverage`, side by side in order.
    coverage: list[Coverage] = field(default_factory=list)

    @property
    def withheld(self) -> list[Coverage]:
        """The recordings whose scheduler metrics are withheld."""
        return [c for c in self.coverage if c.withheld]

    @property
    def scheduler_shown(self) -> bool:
        """Whether the table has scheduler metrics: every side kept a recording."""
        return all(
            any(not c.withheld for c in self.coverage if c.side == label)
            for label in self.recordings
        )

    @property
    def bench_metric(self) -> str | None:
        """The name of mmtests' figure in the table (``bench_time``), or None."""
        f = figures_of(self.benchmark)
        return None if f is None or not any(self.figure_files.values()) else f"bench_{f.metric}"


@dataclass
class TreeComparison:
    """An mmtests tree compared: the sides' runs and one :class:`Subtest` per
    benchmark and subtest, in order."""

    root: Path
    sides: list[tuple[str, list[Run]]]
    subtests: list[Subtest] = field(default_factory=list)
    #: Sentences about the tree (a benchmark whose figures are not read, ...).
    notes: list[str] = field(default_factory=list)


def _recordings(it: Path, benchmark: str) -> dict[str, Path]:
    logs = it / benchmark / "logs"
    out = {}
    for p in logs.iterdir() if logs.is_dir() else ():
        m = RECORDING.fullmatch(p.name)
        if m:
            if m["subtest"] in out:
                raise TraceError(p, f"a second recording of subtest {m['subtest']}")
            out[m["subtest"]] = p
    return out


def _figure_files(it: Path, benchmark: str, fig: Figures) -> dict[str, Path]:
    logs = it / benchmark / "logs"
    found = (fig.file.fullmatch(p.name) for p in logs.iterdir()) if logs.is_dir() else ()
    return {m["subtest"]: logs / m.group(0) for m in found if m}


def _plan(sides: Sides, benchmark: str) -> list[str]:
    """The subtests of ``benchmark`` every iteration of every run recorded, in order;
    TraceError naming the logs directory of an iteration without one the others have."""
    seen: dict[str, Path] = {}
    have: list[tuple[Path, set[str]]] = []
    for _, runs in sides:
        for run in runs:
            for it in run.iterations:
                got = _recordings(it, benchmark)
                have.append((it / benchmark / "logs", set(got)))
                for s, p in got.items():
                    seen.setdefault(s, p)
    if not seen:
        where = ", ".join(str(p) for p, _ in have[:2]) + (", ..." if len(have) > 2 else "")
        raise TraceError(
            where,
            f"no perf-SUBTEST.data recording of {benchmark} (mmtests' "
            "fragment-profile-hook-sched-record writes them)",
        )
    for logs, names in have:
        missing = sorted(set(seen) - names, key=_natural)
        if missing:
            s = missing[0]
            raise TraceError(
                logs,
                f"no perf-{s}.data recording of subtest {s} ({seen[s].parent} has {seen[s].name})",
            )
    return sorted(seen, key=_natural)


def compare_tree(
    path: str | Path,
    side_specs: Sequence[str] = (),
    labels: Sequence[str] = (),
    *,
    samples: str = "auto",
    window_s: float | None = None,
    significance: str = "ttest",
    alpha: float = 0.10,
    title: str | None = None,
    metrics: Sequence[str] | None = None,
    topology_file: str | Path | None = None,
    llc: Iterable[str] | None = None,
    thresholds: dict | None = None,
    load: Callable[[Path], SideTrace] | None = None,
    progress: Callable[[float], None] | None = None,
) -> TreeComparison:
    """Compare the runs of the mmtests results tree at ``path`` (``work/log``, or the
    checkout holding it), subtest by subtest.

    ``side_specs``: ``NAME=RUN`` (or ``RUN``) in order, the first the baseline; none:
    every run, in name order. Each benchmark the runs share is compared; each subtest
    gets the scheduler's metrics of its ``perf-SUBTEST.data`` recordings (a sample per
    ``iter-N``) and mmtests' own figures of it (``bench_<metric>``, every benchmark
    iteration of every ``iter-N``). ``load`` reads a recording (default:
    :func:`schedwake.compare.load_model_trace`); the other parameters are
    :func:`schedwake.compare.compare`'s. TraceError (one line naming the file, run or
    directory) for anything in the tree it cannot use.
    """
    from ..analysis import check_thresholds
    from ..analysis.metrics import checked_names
    from ..detect import thresholds as _check_thresholds

    if metrics is not None:
        metrics = checked_names(metrics)
    th = check_thresholds(_check_thresholds(thresholds))
    root = results_dir(path)
    sides = parse_run_sides(root, side_specs, labels)
    shared = [set(r.benchmarks()) for _, runs in sides for r in runs]
    benchmarks = sorted(set.intersection(*shared))
    out = TreeComparison(root, sides)
    if not benchmarks:
        names = ", ".join(
            f"{r.name}: {', '.join(r.benchmarks()) or 'none'}" for _, rs in sides for r in rs
        )
        raise TraceError(root, f"the runs share no benchmark ({names})")
    plans = [(b, s) for b in benchmarks for s in _plan(sides, b)]
    total = sum(len(r.iterations) for _, runs in sides for r in runs) * len(plans)
    done = 0

    def read(p: Path) -> SideTrace:
        nonlocal done
        t = load(p) if load is not None else load_model_trace(str(p))
        if topology_file is not None or llc:
            t.use_topology(topology_file, llc)
        done += 1
        if progress is not None:
            progress(done / max(total, 1))
        return t

    for b in benchmarks:
        if figures_of(b) is None:
            out.notes.append(
                f"{b}: mmtests' own figures are not read for it (schedwake reads those of "
                f"{', '.join(sorted(FIGURES))}); its rows are the scheduler's metrics only"
            )
    for benchmark, subtest in plans:
        out.subtests.append(
            _subtest(sides, benchmark, subtest, read, samples, window_s, th, metrics,
                     significance, alpha, title)
        )  # fmt: skip
    return out


def _subtest(
    sides: Sides,
    benchmark: str,
    subtest: str,
    read: Callable[[Path], SideTrace],
    samples: str,
    window_s: float | None,
    th: dict[str, float],
    metrics: Sequence[str] | None,
    significance: str,
    alpha: float,
    title: str | None,
) -> Subtest:
    fig = figures_of(benchmark)
    traces: dict[str, list[SideTrace]] = {}
    recs: dict[str, list[Path]] = {}
    files: dict[str, list[Path]] = {}
    for label, runs in sides:
        its = [it for r in runs for it in r.iterations]
        recs[label] = [_recordings(it, benchmark)[subtest] for it in its]
        traces[label] = [read(p) for p in recs[label]]
        files[label] = []
        if fig is not None:
            for it in its:
                f = _figure_files(it, benchmark, fig).get(subtest)
                if f is None:
                    raise TraceError(
                        it / benchmark / "logs",
                        f"no {fig.file.pattern.replace('(?P<subtest>', '(')} file of subtest "
                        f"{subtest}: mmtests' figures of it are missing",
                    )
                files[label].append(f)
    cover = []
    for label, ts in traces.items():
        for i, t in enumerate(ts):
            bench_s = None
            if fig is not None and fig.seconds is not None:
                bench_s = sum(fig.read(files[label][i])) * fig.seconds
            cover.append(coverage_of(label, i, recs[label][i], t, bench_s))
    # a recording that covers too little of its subtest gives no scheduler sample; a
    # side left without any leaves the subtest without scheduler metrics
    kept = {
        label: [t for t, c in zip(ts, (c for c in cover if c.side == label)) if not c.withheld]
        for label, ts in traces.items()
    }
    shown = all(kept.values())
    if not shown:
        kept = {label: [] for label in traces}
    win = None
    if shown:
        _, win = sample_plan(samples, list(kept.values()), window_s, param="--window")
    parts = []
    for label, ts in traces.items():
        for i, (t, c) in enumerate(zip(ts, (c for c in cover if c.side == label))):
            if c.withheld or not shown:
                continue
            d = measure(t, win, th, metrics)
            d.insert(0, "iteration", i)
            d.insert(0, "side", label)
            parts.append(d)
        if fig is not None:
            values = [(i, v) for i, f in enumerate(files[label]) for v in fig.read(f)]
            parts.append(
                pd.DataFrame(
                    {
                        "side": label,
                        "iteration": [i for i, _ in values],
                        "trace": [str(files[label][i]) for i, _ in values],
                        "sample_kind": "per-trace",
                        "metric": f"bench_{fig.metric}",
                        "unit": fig.unit,
                        "direction": fig.direction,
                        "value": [v for _, v in values],
                    }
                )
            )
    if not parts:  # every recording withheld, and no figures of the benchmark
        parts.append(pd.DataFrame(columns=["side", "iteration", "trace", "metric", "value"]))
    df = pd.concat(parts, ignore_index=True)
    head = f"{title}: " if title else ""
    result = from_samples(
        df,
        list(traces),
        significance=significance,
        alpha=alpha,
        title=f"{head}{benchmark} {subtest}",
        window_s=win,
        sides=[
            Side(label, ts) if ts else Side(label, paths=[str(p) for p in recs[label]])
            for label, ts in kept.items()
        ],
        thresholds=th,
    )
    return Subtest(benchmark, subtest, recs, files, result, cover)
