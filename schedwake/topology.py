"""CPU topology: which CPUs share an SMT core, a last-level cache (LLC), a NUMA node.

Sources, best first (docs/api.md, 'Topology'):

1. a JSON file captured from the traced machine's sysfs (``schedwake topology -o``,
   or ``<trace>.topology.json`` beside the trace, else ``topology.json`` in the trace's
   directory, picked up automatically)::

       {"cpus": 2, "llc": [[0, 1]], "smt": [[0], [1]], "numa": [[0, 1]]}

2. one ``--llc CPULIST`` per LLC in the kernel's cpulist syntax (``0-3,8-11``);
3. the map the trace file's own header records (perf.data: its CACHE, CPU_TOPOLOGY
   and NUMA_TOPOLOGY sections; ``source == "file header"``);
4. otherwise the LLCs the trace's own wake-ups show, when they show them clearly
   (``inferred``, :mod:`schedwake.model.llc`; :class:`schedwake.Trace` does this);
5. otherwise one LLC holding every CPU, which every report states (``assumed``), with
   the reason no LLCs were inferred.

Bad topology input raises :class:`~schedwake.errors.TraceError` with one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import sidevalues
from .compressed import open_regular, read_bounded
from .errors import OptionError, TraceError

#: The most CPUs a topology may describe (the C decoder's bound, ``MAX_CPUS`` of
#: ``ingest/_td_internal.h``): a map is three arrays of this length at most.
MAX_CPUS = 65536
#: The largest topology file read (a 65536-CPU machine's lists stay far below).
MAX_TOPOLOGY_BYTES = 16 << 20

#: The keys of a topology JSON file.
_KEYS = ("cpus", "llc", "smt", "numa")

#: ``Topology.source`` of a map read from the trace file's own header.
FILE_HEADER = "file header"

#: Migration / placement classes, from closest to farthest.
MIGRATION_CLASSES = ("none", "same_core", "same_llc", "cross_llc", "cross_numa")

# (at most 9 digits a number: beyond any CPU, and never a 5,000-digit int() to convert)
_RANGE = re.compile(r"^(\d{1,9})(?:-(\d{1,9})(?::(\d{1,9}))?)?$", re.ASCII)


def _refused(source, text: str, problem: str) -> TraceError:
    """The error of a bad cpulist: an option's (``source`` ``--llc``, ``--cpu``) names the
    option and the value given; a file's names the file."""
    if str(source).startswith("--"):
        return OptionError(str(source), text.strip(), problem)
    return TraceError(source, problem)


def _beyond(cpu: int, cpus: int | None) -> str:
    """Why CPU ``cpu`` is refused when a map may hold ``cpus`` CPUs (None: MAX_CPUS)."""
    if cpus is None:
        return f"CPU {cpu} is beyond the {MAX_CPUS} CPUs a topology may have"
    return f"the trace has CPUs 0-{cpus - 1}, not {cpu}"


def parse_cpulist(text: str, source="cpulist", cpus: int | None = None) -> list[int]:
    """CPUs of a kernel cpulist (``0-3,8-11``, ``0-7:2``, ``5``; blanks ignored).

    ``cpus``: the CPU count of the trace the list is for (None: :data:`MAX_CPUS`); a CPU
    at or beyond it is refused before the list is expanded, so that ``0-99999999``
    costs nothing. Raises TraceError naming ``source`` for anything else (empty list,
    ``3-1``, ``a``); an :class:`~schedwake.errors.OptionError` when ``source`` is an
    option (``--llc``).
    """
    if not isinstance(text, str):
        raise TraceError(source, f"cpulist must be a string, not {type(text).__name__}")
    limit = MAX_CPUS if cpus is None else cpus
    out: set[int] = set()
    s = "".join(text.split())
    if not s:
        raise _refused(source, text, "empty cpulist")
    for part in s.split(","):
        m = _RANGE.match(part)
        if not m:
            raise _refused(
                source,
                text,
                f"bad cpulist {sidevalues.shown(text.strip(), 60)!r} "
                f"(part {sidevalues.shown(part, 30)!r}; expected e.g. 0-3,8-11)",
            )
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        step = int(m.group(3)) if m.group(3) is not None else 1
        if hi < lo or step < 1:
            raise _refused(
                source,
                text,
                f"bad cpulist {sidevalues.shown(text.strip(), 60)!r} "
                f"(range {sidevalues.shown(part, 30)!r})",
            )
        if hi >= limit:
            raise _refused(source, text, _beyond(hi, cpus))
        out.update(range(lo, hi + 1, step))
    return sorted(out)


def format_cpulist(cpus) -> str:
    """The kernel cpulist of ``cpus`` (``[0, 1, 2, 5]`` -> ``0-2,5``)."""
    cpus = sorted(set(int(c) for c in cpus))
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


def _groups(value, key: str, source, cpus: int | None = None) -> list[list[int]]:
    """The CPU groups of one key of a topology (lists of CPU numbers or cpulists), each
    CPU below ``cpus`` (None: MAX_CPUS) and in one group at most."""
    if not isinstance(value, list) or not value:
        raise TraceError(source, f"topology {key!r} must be a non-empty list of CPU lists")
    limit = MAX_CPUS if cpus is None else cpus
    groups = []
    for g in value:
        if isinstance(g, str):
            groups.append(parse_cpulist(g, source, cpus))
        elif (
            isinstance(g, list)
            and g
            and all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in g)
        ):
            if max(g) >= limit:
                raise TraceError(source, f"topology {key!r}: {_beyond(max(g), cpus)}")
            groups.append(sorted(set(g)))
        else:
            raise TraceError(source, f"topology {key!r} entry {_short(g)} is not a CPU list")
    seen: set[int] = set()
    for g in groups:
        if seen & set(g):
            raise TraceError(
                source,
                f"topology {key!r}: CPU(s) {format_cpulist(seen & set(g))} in more than one group",
            )
        seen |= set(g)
    return groups


def _short(value, width: int = 60) -> str:
    """``repr(value)`` cut to ``width`` characters: a message names a bad entry, not a
    megabyte of it."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _split_cores(smt: list[list[int]], llc: list[list[int]]) -> list[int] | None:
    """The first SMT core whose CPUs sit in different LLCs (a core shares its caches),
    or None."""
    llc_of = {c: i for i, g in enumerate(llc) for c in g}
    for core in smt:
        if len({llc_of.get(c, -1 - c) for c in core}) > 1:
            return core
    return None


@dataclass
class Topology:
    """A CPU map. ``llc``, ``smt``, ``numa``: lists of CPU groups."""

    cpus: int
    llc: list[list[int]]
    smt: list[list[int]] = field(default_factory=list)
    numa: list[list[int]] = field(default_factory=list)
    #: Where it came from: a file path, ``"--llc"``, ``"file header"``, ``"inferred"``
    #: or ``"assumed"``.
    source: str = "assumed"
    #: For an inferred or assumed map: the evidence, or why none was inferred; for a
    #: file's map: what does not fit the trace (one line, a caveat of every report).
    note: str = ""

    def __post_init__(self):
        n = max([self.cpus] + [c + 1 for g in self.llc + self.smt + self.numa for c in g])
        if n > MAX_CPUS:  # the maps below are arrays of n entries
            raise OptionError("cpus", n, f"a topology has at most {MAX_CPUS} CPUs")
        self.cpus = n
        if not self.smt:
            self.smt = [[c] for c in range(n)]
        if not self.numa:
            self.numa = [list(range(n))]
        self._llc_of = self._index(self.llc)
        self._core_of = self._index(self.smt)
        self._node_of = self._index(self.numa)

    def _index(self, groups) -> np.ndarray:
        """cpu -> group number; CPUs in no group get a group of their own."""
        idx = np.full(self.cpus, -1, dtype=np.int64)
        for i, g in enumerate(groups):
            idx[g] = i
        missing = np.flatnonzero(idx < 0)
        idx[missing] = len(groups) + np.arange(len(missing))
        return idx

    @property
    def assumed(self) -> bool:
        return self.source == "assumed"

    @property
    def inferred(self) -> bool:
        return self.source == "inferred"

    # -- construction -------------------------------------------------------------------
    @classmethod
    def single_llc(cls, cpus: int) -> Topology:
        """The fallback: every CPU in one LLC and one node, no SMT."""
        cpus = max(int(cpus), 1)
        if cpus > MAX_CPUS:
            raise OptionError("cpus", cpus, f"a topology has at most {MAX_CPUS} CPUs")
        return cls(cpus=cpus, llc=[list(range(cpus))], source="assumed")

    @classmethod
    def from_llc_lists(cls, llcs, cpus: int = 0) -> Topology:
        """From ``--llc`` cpulists (one string per LLC); ``cpus``: the trace's CPU count
        (0: unknown), which every CPU named must be below."""
        limit = int(cpus) or None
        lists = []
        for s in llcs:  # an error names the parameter (the CLI maps it to --llc)
            try:
                lists.append(parse_cpulist(s, "llc", limit))
            except TraceError as exc:
                raise OptionError("llc", str(s).strip(), exc.problem) from None
        try:
            groups = _groups(lists, "llc", "llc", limit)
        except TraceError as exc:
            raise OptionError("llc", None, exc.problem) from None
        return cls(cpus=int(cpus), llc=groups, source="--llc")

    @classmethod
    def from_dict(cls, d, source="topology", trace_cpus: int | None = None) -> Topology:
        """From a topology dict (``{"cpus", "llc", "smt", "numa"}``, as a file holds it).
        ``trace_cpus``: the CPU count of the trace the map is for; a CPU the trace does
        not have is refused, as is a map that contradicts itself (a CPU in two groups, a
        core split across LLCs, ``cpus`` below a CPU it names), before anything sized by
        it is allocated."""
        if not isinstance(d, dict):
            raise TraceError(source, "topology JSON must be an object with cpus/llc/smt/numa")
        unknown = sorted(set(d) - set(_KEYS))
        if unknown:
            raise TraceError(
                source,
                f"unknown topology key(s) {', '.join(map(_short, unknown))} "
                f"(known: {', '.join(_KEYS)})",
            )
        if "llc" not in d:
            raise TraceError(source, "topology JSON has no 'llc' key")
        cpus = d.get("cpus", 0)
        if not isinstance(cpus, int) or isinstance(cpus, bool) or not 0 <= cpus <= MAX_CPUS:
            raise TraceError(
                source, f"topology 'cpus' must be a CPU count (0-{MAX_CPUS}), not {_short(cpus)}"
            )
        note = ""
        if trace_cpus and cpus > trace_cpus:
            named = max(
                (c for k in ("llc", "smt", "numa") if d.get(k) for g in _groups(d[k], k, source)
                 for c in g),
                default=-1,
            )  # fmt: skip
            if named >= trace_cpus:
                raise TraceError(
                    source,
                    f"the topology is of a machine with {cpus} CPUs (it names CPU {named}) but "
                    f"the trace has CPUs {format_cpulist(range(trace_cpus))}: the map of "
                    "another machine?",
                )
            note = (
                f"the topology is of a machine with {cpus} CPUs, the trace has CPUs "
                f"{format_cpulist(range(trace_cpus))}: the map of another machine?"
            )
        llc = _groups(d["llc"], "llc", source, trace_cpus)
        smt = _groups(d["smt"], "smt", source, trace_cpus) if d.get("smt") else []
        numa = _groups(d["numa"], "numa", source, trace_cpus) if d.get("numa") else []
        named = max(c for g in llc + smt + numa for c in g)
        if cpus and named >= cpus:
            raise TraceError(source, f"topology 'cpus' is {cpus} but it names CPU {named}")
        core = _split_cores(smt, llc)
        if core is not None:
            raise TraceError(
                source, f"topology 'smt': core {format_cpulist(core)} spans more than one LLC"
            )
        return cls(cpus=cpus, llc=llc, smt=smt, numa=numa, source=str(source), note=note)

    @classmethod
    def from_file(cls, path, trace_cpus: int | None = None) -> Topology:
        """From a topology JSON file (:meth:`from_dict`; a key given twice is refused)."""
        p = Path(path)
        try:
            # a regular file, read non-blocking and bounded (a sparse 4 GiB file or a
            # link to /proc/kmsg is refused, not read whole or waited on)
            with open_regular(p, "topology file") as f:
                data = read_bounded(f, MAX_TOPOLOGY_BYTES + 1, p)
            if len(data) > MAX_TOPOLOGY_BYTES:
                raise TraceError(
                    p, f"is larger than {MAX_TOPOLOGY_BYTES >> 20} MiB: not a topology file"
                )
            text = data.decode("utf-8")
        except FileNotFoundError:
            raise TraceError(p, "no such topology file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise TraceError(p, f"cannot read topology file: {exc}") from None
        return cls.from_text(text, p, trace_cpus)

    @classmethod
    def from_text(cls, text: str, source, trace_cpus: int | None = None) -> Topology:
        """From a topology file's text (``source``: its path, for the errors): a key
        given twice, a 5,000-digit integer, NaN, nesting too deep refused in one line
        (:func:`schedwake.sidevalues.load_json`), then :meth:`from_dict`."""
        d = sidevalues.load_json(text, source, "a topology file (JSON)")
        return cls.from_dict(d, str(source), trace_cpus)

    @classmethod
    def capture(cls, sysfs="/sys") -> Topology:
        """This machine's topology from sysfs (``sysfs`` is a root, for tests)."""
        root = Path(sysfs) / "devices/system/cpu"
        cpudirs = sorted(
            (p for p in root.glob("cpu[0-9]*") if p.name[3:].isdigit()),
            key=lambda p: int(p.name[3:]),
        )
        if not cpudirs:
            raise TraceError(root, "no CPUs found in sysfs")
        llc: dict[tuple, list[int]] = {}
        smt: dict[tuple, list[int]] = {}
        for d in cpudirs:
            cpu = int(d.name[3:])
            if not (d / "topology").exists():  # offline CPU
                continue
            best, best_level = None, -1
            for idx in (d / "cache").glob("index*"):
                try:
                    level = int((idx / "level").read_text())
                    if (idx / "type").exists() and (
                        idx / "type"
                    ).read_text().strip() == "Instruction":
                        continue
                    shared = (idx / "shared_cpu_list").read_text()
                except (OSError, ValueError):
                    continue
                if level > best_level:
                    best, best_level = shared, level
            group = tuple(parse_cpulist(best, idx)) if best else (cpu,)
            llc.setdefault(group, list(group))
            sib = d / "topology/thread_siblings_list"
            sgroup = tuple(parse_cpulist(sib.read_text(), sib)) if sib.exists() else (cpu,)
            smt.setdefault(sgroup, list(sgroup))
        numa = []
        nodes = sorted(
            (Path(sysfs) / "devices/system/node").glob("node[0-9]*"), key=lambda p: int(p.name[4:])
        )
        for nd in nodes:
            text = (nd / "cpulist").read_text() if (nd / "cpulist").exists() else ""
            if text.strip():
                numa.append(parse_cpulist(text, nd / "cpulist"))
        cpus = max(int(d.name[3:]) for d in cpudirs) + 1
        return cls(
            cpus=cpus,
            llc=sorted(llc.values()),
            smt=sorted(smt.values()),
            numa=numa,
            source=f"sysfs {sysfs}",
        )

    # -- use ------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"cpus": self.cpus, "llc": self.llc, "smt": self.smt, "numa": self.numa}

    def to_json(self) -> str:
        """The topology file (``schedwake topology``), read back by :meth:`from_file`."""
        from .jsonout import dumps  # (here: reading a trace checks its header's map)

        return dumps(self.to_dict(), indent=None)

    def describe(self) -> str:
        """One line: the LLC groups and where they come from."""
        llcs = " ".join(f"[{format_cpulist(g)}]" for g in self.llc)
        if self.assumed:
            why = f"; not inferred: {self.note}" if self.note else ""
            return (
                f"ASSUMED one LLC for all {self.cpus} CPUs (no topology file; "
                f"pass --topology FILE or --llc CPULIST{why})"
            )
        if self.inferred:
            return f"{len(self.llc)} LLC(s) {llcs} INFERRED from the trace: {self.note}"
        return f"{len(self.llc)} LLC(s) {llcs}, {len(self.numa)} NUMA node(s), from {self.source}"

    def _lookup(self, table: np.ndarray, cpus) -> np.ndarray:
        c = np.asarray(cpus, dtype=np.int64)
        out = np.full(c.shape, -1, dtype=np.int64)
        ok = (c >= 0) & (c < len(table))
        out[ok] = table[c[ok]]
        # CPUs beyond the map: each its own group (distinct negative ids)
        out[~ok] = -2 - c[~ok]
        return out

    def llc_of(self, cpus) -> np.ndarray:
        return self._lookup(self._llc_of, cpus)

    def core_of(self, cpus) -> np.ndarray:
        return self._lookup(self._core_of, cpus)

    def node_of(self, cpus) -> np.ndarray:
        return self._lookup(self._node_of, cpus)

    def classify(self, src, dst) -> pd.Categorical:
        """Vectorized class of a move from ``src`` to ``dst`` CPUs (MIGRATION_CLASSES).

        Negative or missing CPUs give ``none`` when equal, otherwise ``cross_llc``
        is not claimed: an unknown CPU gives a missing value.
        """
        s = np.asarray(src, dtype=np.int64)
        d = np.asarray(dst, dtype=np.int64)
        return pd.Categorical.from_codes(
            self._class_codes(s, d), categories=list(MIGRATION_CLASSES)
        )

    def _class_codes(self, s: np.ndarray, d: np.ndarray) -> np.ndarray:
        """The class codes of moves ``s`` -> ``d`` (int64 CPUs): per CPU pair once,
        then looked up, when the rows outnumber the pairs of their CPU range (a
        wake-up table's millions of rows over a few CPUs); else row by row."""
        if s.ndim == 1 and s.shape == d.shape and len(s) > 1:
            lo = min(int(s.min()), int(d.min()))
            span = max(int(s.max()), int(d.max())) - lo + 1
            if span * span <= len(s):
                cpus = np.arange(lo, lo + span, dtype=np.int64)
                table = self._pair_codes(np.repeat(cpus, span), np.tile(cpus, span))
                at = s - lo
                at *= span
                at += d
                at -= lo
                return table[at]
        return self._pair_codes(s, d)

    def _pair_codes(self, s: np.ndarray, d: np.ndarray) -> np.ndarray:
        """The class code of each move ``s[i]`` -> ``d[i]``, compared row by row."""
        code = np.full(s.shape, 4, dtype=np.int8)
        code[self.node_of(s) == self.node_of(d)] = 3
        code[self.llc_of(s) == self.llc_of(d)] = 2
        code[self.core_of(s) == self.core_of(d)] = 1
        code[s == d] = 0
        code[(s < 0) | (d < 0)] = -1
        return code

    def check_covers(self, ncpus: int, what="trace") -> None:
        """TraceError if the map does not know CPUs the trace has, or leaves some of them
        in no LLC (``--llc 0-3`` for an 8-CPU trace would make every move to CPUs 4-7 a
        cross-LLC one)."""
        if self.assumed:
            return
        if ncpus > self.cpus:
            raise TraceError(
                self.source, f"topology covers {self.cpus} CPUs but the {what} has {ncpus}"
            )
        placed = {c for g in self.llc for c in g}
        missing = [c for c in range(ncpus) if c not in placed]
        if missing:
            raise TraceError(
                self.source,
                f"the LLCs given leave CPU {format_cpulist(missing)} of the {what}'s {ncpus} "
                "CPUs out: give every CPU's LLC",
            )


#: The topology file of every trace in its directory (``run1/trace.dat`` +
#: ``run1/topology.json``), looked for after ``<trace>.topology.json``.
DIRECTORY_TOPOLOGY = "topology.json"

#: Extensions a trace file's name ends with (compression, then format).
_TRACE_SUFFIXES = {".gz", ".xz", ".zst", ".bz2", ".txt", ".dat", ".data", ".report", ".perf"}


def trace_stem(path) -> str:
    """A trace file's name without its extensions (``run.txt.gz`` -> ``run``): the name
    of its NAME.topology.json, and its label in a comparison."""
    stem = Path(str(path)).name
    while Path(stem).suffix in _TRACE_SUFFIXES:
        stem = stem[: -len(Path(stem).suffix)]
    return stem


def topology_of_header(header: dict) -> Topology:
    """The topology a trace's header gives (a perf.data's CACHE, CPU_TOPOLOGY and
    NUMA_TOPOLOGY sections); TraceError naming the header if it is no CPU map. The
    file's own map may count CPUs the trace's header does not (offline ones): bounded
    by MAX_CPUS, not by the trace."""
    return Topology.from_dict({k: header[k] for k in _KEYS if k in header}, FILE_HEADER)


def topology_beside(trace_path: str | Path) -> Path | None:
    """The topology file :func:`resolve` finds for a trace without being told: the
    ``<trace>.topology.json`` beside it, else a ``topology.json`` in its directory (a
    ``schedwake convert`` directory: the one inside it, the trace's that convert
    copied); None when there is none."""
    p = Path(trace_path)
    # trace.dat.topology.json (schedwake record), then the name without its
    # extensions: run.txt.gz -> run.topology.json
    candidates = dict.fromkeys(
        [
            *([p / DIRECTORY_TOPOLOGY] if p.is_dir() else []),
            p.with_name(p.name + ".topology.json"),
            p.with_suffix(".topology.json"),
            p.with_name(trace_stem(p) + ".topology.json"),
            # one directory a run (run1/trace.dat): the run's topology.json
            p.with_name(DIRECTORY_TOPOLOGY),
        ]
    )
    # (a device or FIFO there is found, to be refused, not passed over)
    return next((c for c in candidates if c.exists()), None)


def resolve(trace_path=None, cpus: int = 1, topology_file=None, llc=None, header=None) -> Topology:
    """The topology to use for a trace of ``cpus`` CPUs: explicit file, ``--llc`` lists,
    the ``<trace>.topology.json`` beside the trace, else a ``topology.json`` in its
    directory, the map of the trace's own header
    (``header``: a topology dict, e.g. a perf.data's), or one assumed LLC, in that
    order. A file or ``--llc`` list that names a CPU the trace does not have is refused,
    as is a trace that says it has more CPUs than a map may have (before one is made)."""
    if cpus > MAX_CPUS:
        raise TraceError(
            trace_path or "trace",
            f"says it has {cpus} CPUs, more than the {MAX_CPUS} a map may have",
        )
    topo: Topology | None
    if topology_file:
        topo = Topology.from_file(topology_file, cpus)
    elif llc:
        topo = Topology.from_llc_lists(llc, cpus)
    else:
        topo = None
        beside = topology_beside(trace_path) if trace_path else None
        if beside is not None:
            topo = Topology.from_file(beside, cpus)
        if topo is None and header:
            try:
                topo = topology_of_header(header)
            except TraceError as exc:  # (the trace's damage: named by the trace)
                raise TraceError(
                    trace_path or "trace", f"the CPU topology in its header: {exc.problem}"
                ) from None
    if topo is None:
        return Topology.single_llc(cpus)
    topo.check_covers(cpus)
    return topo
