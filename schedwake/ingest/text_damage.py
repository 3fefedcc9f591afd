"""What a text trace's damage costs: judged from the compiled scanner's counters.

The scanner (``_textscan.c``) counts every kind of damage as it reads, line by line;
this module only looks at the counters, once per batch, and decides:

* **refused** (:class:`TraceError`, one line naming the file and the first damaged
  line): a second trace's header after events, or more than
  :data:`TOLERATED_LINES` lines *and* more than :data:`MAX_DAMAGED_SHARE` of the lines
  of one kind of damage: lines that are not events, lines of another text layout
  (perf script text in ftrace text, trace-cmd report text in ftrace text, or the
  reverse), events on CPUs the trace cannot have, events that go back in time on
  their CPU;
* **read around** with one warning (``meta.warnings``, a caveat in every report):
  a handful of such lines, each kind with its count and first line number. Lines that
  are not events and events on impossible CPUs are left out of the tables; events
  that go back in time stay (the tables are sorted); a few events far outside the
  time range of all the others (:func:`count_outliers`) are left out of the tables and of
  the duration.

Event counts (``meta.event_counts``) are those of the tables: the events left out
are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import TraceError

#: Lines of one kind of damage that are always read around, whatever their share (a
#: handful of garbled lines in a small file).
TOLERATED_LINES = 10
#: Beyond :data:`TOLERATED_LINES`, the share of the lines one kind of damage may hold
#: before the file is refused.
MAX_DAMAGED_SHARE = 0.01
#: Lines longer than this are damage (no text layout prints one near it); the reader
#: never holds more of one than a chunk. Equal to _textscan.c's MAX_LINE_BYTES.
MAX_LINE_BYTES = 65536
#: Largest CPU count a header may state (the C decoders' MAX_CPUS).
MAX_CPUS = 65536
#: A gap that sets events apart from the others as damage must be longer than the
#: others' whole span and than this (ns, or clock ticks for raw timestamps).
MIN_OUTLIER_GAP = 1_000_000_000

LAYOUT_NAMES = {
    "ftrace-text": "ftrace text",
    "trace-cmd-report": "trace-cmd report text",
    "perf-script": "perf script text",
    "perf.data": "perf script text",
}
#: the scanner's event-name styles (index): one space after the name, or padded
STYLES = ("ftrace text", "trace-cmd report text")


@dataclass
class Stamp:
    """One of the lowest or highest timestamps of the file, and where it is."""

    ts: int
    lineno: int
    cpu: int
    event: int  # the scanner's event index


@dataclass
class Assessment:
    """What to keep of a text trace, and what to say about the rest."""

    cpus: int | None
    first_ts: int | None
    last_ts: int | None
    stray_cpus: frozenset[int] = frozenset()  # CPUs whose few events are damage
    lost_cpu_limit: int | None = None  # lost-event lines on this CPU and above are damage
    outliers: list[Stamp] = field(default_factory=list)  # events far outside the rest
    parts: list[str] = field(default_factory=list)  # the warning's clauses

    @property
    def warnings(self) -> list[str]:
        """The one warning line of the file's damage (none for a whole, clean file)."""
        return ["; ".join(self.parts)] if self.parts else []


def too_much(n: int, lines: int) -> bool:
    """Whether ``n`` damaged lines of ``lines`` are more than a file may hold."""
    return n > TOLERATED_LINES and n > MAX_DAMAGED_SHARE * lines


def assess(path, fmt: str, st: dict, facts: dict, final: bool) -> Assessment:
    """Judge the damage counters ``st`` of the scanner (cumulative). Raises TraceError
    for damage a file may not hold (only once ``final``: the whole file is read)."""
    if final:
        _check_layout(path, fmt, st)
    counts = np.frombuffer(st["cpu_events"], np.int64)
    stray = _stray_cpus(counts, facts.get("cpus"))
    a = Assessment(cpus=None, first_ts=None, last_ts=None, stray_cpus=frozenset(stray))
    _unparsed(path, st, a, final)
    if final:
        _short(st, facts, a)
    _stray(path, st, counts, stray, facts.get("cpus"), a, final)
    if final:
        _cpu_clocks(path, st, counts, stray)
    _backwards(path, st, a, final)
    _time_range(st, a)
    present = np.nonzero(counts)[0]
    kept = [int(c) for c in present if int(c) not in a.stray_cpus]
    a.cpus = max(facts.get("cpus") or 0, kept[-1] + 1 if kept else 0) or None
    _lost_cpus(st, kept, a)
    return a


def _check_layout(path, fmt: str, st: dict) -> None:
    """Two traces in one file: a second header, or many lines of another layout."""
    n, first = st["restart"]
    if n:
        raise TraceError(
            path,
            f"line {first:,} starts a second trace (its header, after events): two traces "
            "in one file; split them and read each",
        )
    n, first = st["foreign"]
    if too_much(n, st["events"] + st["unparsed"]):
        other = "perf script text" if fmt not in ("perf-script", "perf.data") else "ftrace text"
        raise TraceError(
            path,
            f"line {first:,} starts {other} inside {LAYOUT_NAMES[fmt]} ({n:,} lines of it): "
            "two traces in one file; split them and read each",
        )
    (n0, first0), (n1, first1) = st["style"]
    if min(n0, n1) > TOLERATED_LINES:
        late, first = (1, first1) if first1 > first0 else (0, first0)
        raise TraceError(
            path,
            f"line {first:,} starts {STYLES[late]} inside {STYLES[1 - late]} "
            f"({(n0, n1)[late]:,} lines of it): two traces in one file; split them and read each",
        )


def _unparsed(path, st: dict, a: Assessment, final: bool) -> None:
    n = st["unparsed"]
    if not n:
        return
    lines = st["events"] + n
    first = st["first_unparsed"][0] if st["first_unparsed"] else (0, "")
    if final and too_much(n, lines):
        raise TraceError(
            path,
            f"{n:,} of {lines:,} lines ({n / lines:.1%}) are not trace events of this "
            f"format (first: line {first[0]:,}: {first[1]!r:.80}); more than "
            f"{MAX_DAMAGED_SHARE:.0%} is not a damaged trace but the wrong format or no trace",
        )
    why = [f"first: line {first[0]:,}"]
    if st["overlong"][0]:
        why.append(f"{st['overlong'][0]:,} longer than {MAX_LINE_BYTES // 1024} KiB")
    if st["nul"][0]:
        why.append(f"{st['nul'][0]:,} with NUL bytes")
    if st["foreign"][0]:
        why.append(f"{st['foreign'][0]:,} of another text layout")
    if st["cut_line"]:
        why.append(f"the last, line {st['cut_line']:,}, cut off without a line end")
    a.parts.append(
        f"{n:,} of {lines:,} lines ({n / lines:.2%}) are not events and were skipped "
        f"({'; '.join(why)})"
    )


def _short(st: dict, facts: dict, a: Assessment) -> None:
    """Fewer lines than the events ftrace's header counts in its buffer (it prints them
    all): a file cut at a line boundary."""
    entries = facts.get("entries_in_buffer")
    lines = st["events"] + st["unparsed"]
    if entries is not None and lines < entries:
        a.parts.append(
            f"the header counts {entries:,} events in the buffer and the file holds "
            f"{lines:,} lines of events: cut short?"
        )


def _stray_cpus(counts: np.ndarray, header_cpus: int | None) -> list[int]:
    """CPUs whose events are damage: a few events on a CPU the header does not have, or
    far above the CPUs that hold many events (a garbled ``[9999]`` would otherwise make
    a trace of 10,000 CPUs). A CPU of many events above the header's count is believed
    (``#P:`` counts the CPUs online when the trace was read)."""
    present = np.nonzero(counts)[0]
    if not len(present):
        return []
    few = counts[present] <= max(TOLERATED_LINES, MAX_DAMAGED_SHARE * counts.sum())
    trusted = present[~few]
    top = int(trusted.max()) if len(trusted) else int(present.max())
    far = 2 * top + 64
    return [
        int(c)
        for c, f in zip(present, few)
        if f and ((header_cpus is not None and c >= header_cpus) or c > far)
    ]


def _stray(path, st, counts, stray, header_cpus, a: Assessment, final: bool) -> None:
    if not stray:
        return
    n = int(counts[stray].sum())
    first = int(np.frombuffer(st["cpu_first"], np.int64)[stray].min())
    lines = st["events"] + st["unparsed"]
    which = ", ".join(str(c) for c in stray[:5]) + (", ..." if len(stray) > 5 else "")
    why = (
        f"the header says {header_cpus:,} CPUs"
        if header_cpus is not None and min(stray) >= header_cpus
        else "far above the others"
    )
    if final and too_much(n, lines):
        raise TraceError(
            path,
            f"{n:,} events are on CPUs the trace cannot have (CPU {which}: {why}; first: "
            f"line {first:,}): damaged CPU numbers",
        )
    a.parts.append(
        f"{'1 event' if n == 1 else f'{n:,} events'} on CPU {which} ({why}) "
        f"{'was' if n == 1 else 'were'} skipped (first: line {first:,})"
    )


def _lost_cpus(st: dict, kept: list[int], a: Assessment) -> None:
    """Lost-event lines ("CPU:9999 [LOST 3 EVENTS]") on a CPU far above all the CPUs of
    the events and the header's count are damage too."""
    limit = max(a.cpus or 0, 2 * (kept[-1] if kept else 0) + 65)
    if st["max_lost_cpu"] >= limit:
        a.lost_cpu_limit = limit
        a.parts.append(
            f"lost-event lines on CPUs above {limit - 1} (up to CPU {st['max_lost_cpu']}, "
            "far above the others) were skipped"
        )


def _cpu_clocks(path, st: dict, counts: np.ndarray, stray: list[int]) -> None:
    """A CPU whose events all lie far after (or before) all the other CPUs' events: its
    clock is not theirs (clocks out of step, or one CPU's lines of another recording),
    and no wake-up latency across CPUs can be computed. (A few such events are outliers,
    left out by :func:`_time_range`.)"""
    cpus = np.array(
        [c for c in np.nonzero(counts > TOLERATED_LINES)[0] if int(c) not in stray], np.int64
    )
    if len(cpus) < 2:
        return
    first = np.frombuffer(st["cpu_first_ts"], np.int64)[cpus]
    last = np.frombuffer(st["cpu_last_ts"], np.int64)[cpus]
    for i, side in ((int(np.argmax(first)), "after"), (int(np.argmin(last)), "before")):
        others = np.arange(len(cpus)) != i
        lo, hi = int(first[others].min()), int(last[others].max())
        gap = int(first[i]) - hi if side == "after" else lo - int(last[i])
        if gap > max(hi - lo, MIN_OUTLIER_GAP):
            c = int(cpus[i])
            line = int(np.frombuffer(st["cpu_first"], np.int64)[c])
            raise TraceError(
                path,
                f"the {int(counts[c]):,} events of CPU {c} are all {gap / 1e9:,.3f} s {side} "
                f"the other CPUs' (first: line {line:,}): the CPUs' clocks disagree, or the "
                "lines come from different recordings",
            )


def _backwards(path, st: dict, a: Assessment, final: bool) -> None:
    n, first = st["backwards"]
    if not n:
        return
    if final and too_much(n, st["events"]):
        raise TraceError(
            path,
            f"{n:,} of {st['events']:,} events go back in time on their CPU (first: line "
            f"{first:,}): the lines are not in time order (interleaved or damaged)",
        )
    events = (
        "1 event goes back in time on its" if n == 1 else f"{n:,} events go back in time on their"
    )
    a.parts.append(f"{events} CPU (first: line {first:,}); the tables are in time order")


def _time_range(st: dict, a: Assessment) -> None:
    """The first and last timestamps, without a few events far outside the rest."""
    lowest = sorted(
        (Stamp(*s) for s in st["lowest"] if s[2] not in a.stray_cpus), key=lambda s: s.ts
    )
    highest = sorted(
        (Stamp(*s) for s in st["highest"] if s[2] not in a.stray_cpus), key=lambda s: -s.ts
    )
    if not lowest or not highest:  # (all the extreme ones on stray CPUs)
        lowest = sorted((Stamp(*s) for s in st["lowest"]), key=lambda s: s.ts)
        highest = sorted((Stamp(*s) for s in st["highest"]), key=lambda s: -s.ts)
    if not lowest:
        return
    if st["events"] >= 2 * len(st["lowest"]) and len(lowest) > 1 and len(highest) > 1:
        span = highest[-1].ts - lowest[-1].ts  # of all but the ends' few
        low = count_outliers([s.ts for s in lowest], span)
        high = count_outliers([-s.ts for s in highest], span)
        unit = "s" if st["ts_decimals"] else "clock ticks"
        for side, cut, stamps in (("before", low, lowest), ("after", high, highest)):
            if cut:
                a.outliers.extend(stamps[:cut])
                gap = abs(stamps[cut].ts - stamps[cut - 1].ts)
                gap_text = f"{gap / 1e9:,.3f} s" if unit == "s" else f"{gap:,} clock ticks"
                a.parts.append(
                    f"{cut} event{'s' * (cut != 1)} {gap_text} {side} all the others "
                    f"(line {stamps[0].lineno:,}) left out of the tables and the duration"
                )
        lowest, highest = lowest[low:], highest[high:]
    a.first_ts, a.last_ts = lowest[0].ts, highest[0].ts


def count_outliers(ts: list[int], span: int) -> int:
    """How many of the outermost of ``ts`` (sorted outward-first) stand apart from
    the rest: the innermost gap among them longer than the rest's ``span`` and than
    :data:`MIN_OUTLIER_GAP` cuts there."""
    limit = max(span, MIN_OUTLIER_GAP)
    for i in range(len(ts) - 2, -1, -1):
        if ts[i + 1] - ts[i] > limit:
            return i + 1
    return 0
