"""The gate's input: the traces of each side loaded and checked (unreadable, lost
events, too short, both sides the same traces) before a rule is judged; a problem
means exit code 2."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from ..compare.sides import distinct_names
from ..errors import TraceError
from ..model.events import timestamp_problem
from ..sidetrace import SideItem, SideSpec, SideTrace, is_path, side_items
from .result import GateResult
from .rules import Settings

#: ``expand(pattern, side)``: the paths a side's pattern names
Expand = Callable[[str, str], list[str]]


def _side_files(side: str, spec: SideSpec, expand: Expand) -> dict[tuple[str, int | str], str]:
    """``{identity: path}`` of the traces a side's ``spec`` names: a file by its real
    absolute path (``./a.dat``, ``a.dat`` and a link to it are one file), a loaded trace
    by itself (two windows of one file are two traces). A pattern that cannot be
    expanded names none (its problem is reported where the side is loaded)."""
    out: dict[tuple[str, int | str], str] = {}
    for item in side_items(spec, side):
        if not is_path(item):
            out[("trace", id(item))] = str(item.path)
            continue
        try:
            for p in expand(str(item), side):
                out[("file", os.path.realpath(p))] = p
        except TraceError:
            pass
    return out


def judge_overlap(
    result: GateResult, baseline: SideSpec, candidate: SideSpec, expand: Expand
) -> str | None:
    """The problem when the baseline and the candidate are the same traces (a job that
    compares a build with itself passes every rule and judges nothing), else None; a
    note in ``result`` when some of them are on both sides."""
    base = _side_files("baseline", baseline, expand)
    cand = _side_files("candidate", candidate, expand)
    if base and base.keys() == cand.keys():
        return (
            f"the baseline and the candidate are the same {len(base)} trace file(s): "
            "nothing would be judged (a misconfigured job? give the candidate's own traces)"
        )
    if shared := [k for k in base if k in cand]:
        names = distinct_names(list(base.values()) + list(cand.values()))
        result.overlap = [
            f"{len(shared)} trace file(s) are both baseline and candidate "
            f"({', '.join(names[base[k]] for k in shared)}): the sides are not independent"
        ]
    return None


def trace_name(names: dict[str, str], trace: SideTrace) -> str:
    """How the messages name ``trace``: its entry in ``names``, else its file name."""
    path = str(trace.meta.path)
    return names.get(path) or Path(path).name


def input_problems(
    side: str, trace: SideTrace, settings: Settings, name: str | None = None, rates: bool = True
) -> list[str]:
    """Why one loaded trace cannot be judged (empty, lost events, too short); ``name``:
    how the messages name it (default its file name); ``rates``: its scheduler rates are
    judged (a profile's samples need no sched_switch events)."""
    name = name or Path(str(trace.meta.path)).name
    records = sum(trace.meta.event_counts.values())
    if records == 0:
        return [f"{side} {name}: the trace has no events"]
    out = []
    lost = trace.meta.lost_events
    unknown = trace.meta.lost_unknown
    total = sum(lost.values())
    if unknown:
        out.append(
            f"{side} {name}: the ring buffer dropped events (an unknown number) on "
            f"CPU {', '.join(map(str, unknown))}"
        )
    elif total > settings.max_lost_events:
        out.append(
            f"{side} {name}: the ring buffer lost {total} events (allowed: "
            f"{settings.max_lost_events}; [gate] max_lost_events)"
        )
    if why := timestamp_problem(trace.meta):
        return out + [f"{side} {name}: {why}"]
    switches = int(trace.meta.event_counts.get("sched_switch", 0))
    if rates and switches < settings.min_switches:
        out.append(
            f"{side} {name}: {switches} sched_switch events, fewer than the "
            f"{settings.min_switches} a judgement needs ([gate] min_switches): its rates "
            "would be noise"
        )
    dur = trace.duration_ns / 1e9
    if dur < settings.min_duration:
        out.append(
            f"{side} {name}: lasts {dur:.3g} s, shorter than the {settings.min_duration:g}"
            " s a judgement needs ([gate] min_duration)"
        )
    return out


def load_side(
    side: str,
    specs: Iterable[SideItem],
    loader: Callable[[str], SideTrace],
    expand: Expand,
    problems: list[str],
) -> tuple[list[SideTrace], list[str]]:
    traces: list[SideTrace] = []
    paths: list[str] = []
    for spec in specs:
        if not is_path(spec):
            traces.append(spec)
            paths.append(str(spec.meta.path))
            continue
        try:
            found = expand(str(spec), side)
        except TraceError as exc:
            problems.append(f"{side}: {exc}")
            continue
        for p in found:
            paths.append(p)
            try:
                traces.append(loader(p))
            except TraceError as exc:
                problems.append(f"{side}: {exc}")
    if not paths:
        problems.append(f"{side}: no trace given (--{side} TRACE...)")
    return traces, paths
