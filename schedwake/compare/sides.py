"""The sides of a comparison as the command line names them: ``(label, [paths])`` from
positional traces and ``--side NAME=GLOB`` (:func:`parse_sides`, for ``compare``,
``gate`` and ``profile``), and how reports name each trace among the others
(:func:`distinct_names`: the shortest end of its path that tells it apart)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from ..errors import TraceError
from ..paths import expand as expand_paths
from ..topology import trace_stem

__all__ = ["default_label", "distinct_names", "parse_sides"]


def distinct_names(paths: Sequence[str]) -> dict[str, str]:
    """Each path's shortest trailing part that no other of ``paths`` ends with: how the
    reports name traces, so that ``run1/trace.dat`` and ``run2/trace.dat`` are not both
    ``trace.dat`` (``{"/a/run1/trace.dat": "run1/trace.dat", ...}``; a lone or unique
    file name stays its name). Paths naming the same file (``a.dat`` and ``./a.dat``)
    are one; a path that another ends with entirely is given whole."""
    given = list(dict.fromkeys(str(p) for p in paths))
    parts = {p: Path(os.path.abspath(p)).parts for p in given}
    files = list(dict.fromkeys(parts.values()))
    depth = max((len(f) for f in files), default=0)
    name_of: dict[tuple[str, ...], str] = {}
    left = set(files)
    for k in range(1, depth + 1):
        ends: dict[tuple[str, ...], int] = {}
        for f in files:
            ends[f[-k:]] = ends.get(f[-k:], 0) + 1
        for f in list(left):
            if ends[f[-k:]] == 1 or k == len(f):
                name_of[f] = str(Path(*f[-k:]))
                left.discard(f)
        if not left:
            break
    return {p: name_of[parts[p]] for p in given}


def default_label(paths: list[str], index: int) -> str:
    """The label of an unnamed side: its trace's name (a file's stem), or what the names
    of its traces begin with (digits and separators at the end left out), else
    ``side<index + 1>``."""
    stems = [trace_stem(p) for p in paths]
    if len(stems) == 1:
        return stems[0]
    prefix = stems[0]
    for s in stems[1:]:
        while not s.startswith(prefix):
            prefix = prefix[:-1]
    prefix = prefix.rstrip("-_.0123456789")
    return prefix or f"side{index + 1}"


def _told_apart(sides: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    """Sides whose default labels (file names) are the same are named by the directory
    that tells their paths apart instead: ``a/trace.dat b/trace.dat`` -> ``a``, ``b``."""
    out = list(sides)
    by_label: dict[str, list[int]] = {}
    for i, (label, _) in enumerate(sides):
        by_label.setdefault(label, []).append(i)
    for same in by_label.values():
        if len(same) < 2:
            continue
        dirs = [Path(sides[i][1][0]).resolve().parent.parts for i in same]
        depth = min(len(d) for d in dirs)
        # the directory level nearest the files where the paths part
        for k in range(1, depth + 1):
            names = [d[-k] for d in dirs]
            if len(set(names)) == len(names):
                for i, name in zip(same, names):
                    out[i] = (name, sides[i][1])
                break
    return out


def parse_sides(
    traces: Sequence[str] = (),
    side_specs: Sequence[str] = (),
    labels: Sequence[str] = (),
    expand: Callable[[str, str], list[str]] = expand_paths,
    least: int = 2,
) -> list[tuple[str, list[str]]]:
    """The sides of the command line: ``(label, [paths])`` in order.

    Each positional trace is one side (one trace); each ``NAME=GLOB`` adds the files of
    GLOB to side NAME (a NAME given twice adds to the same side), after the positional
    sides. ``labels``, when given, rename the sides in order and must be one per side.
    ``expand(pattern, what)`` gives the paths of a pattern (default: the files it
    matches; a batch dataset matches its ``path`` column instead).
    Raises TraceError (a one-line reason) for a malformed spec, a glob matching nothing,
    fewer than ``least`` sides, a label count that does not match, or duplicate labels.
    """
    sides: list[tuple[str, list[str]]] = []
    for i, t in enumerate(traces):
        paths = expand(str(t), "trace")
        sides.append((default_label(paths, i), paths))
    named: dict[str, list[str]] = {}
    for spec in side_specs:
        name, sep, pattern = str(spec).partition("=")
        if not sep or not name.strip() or not pattern.strip():
            raise TraceError("--side", f"expected NAME=GLOB, got {spec!r}")
        named.setdefault(name.strip(), []).extend(expand(pattern.strip(), f"--side {name}"))
    for name, paths in named.items():
        sides.append((name, list(dict.fromkeys(paths))))
    if len(traces):
        sides[: len(traces)] = _told_apart(sides[: len(traces)])
    if labels:
        if len(labels) != len(sides):
            raise TraceError(
                "--label",
                f"{len(labels)} label(s) for {len(sides)} side(s); "
                "give one --label per side, in order",
            )
        sides = [(str(lab), paths) for lab, (_, paths) in zip(labels, sides)]
    if len(sides) < least:
        raise TraceError(
            "compare",
            f"needs at least two sides (got {len(sides)}): "
            "give two traces, or --side NAME=GLOB twice",
        )
    seen = [lab for lab, _ in sides]
    dup = sorted({lab for lab in seen if seen.count(lab) > 1})
    if dup:
        raise TraceError(
            "--label", f"side label(s) {', '.join(dup)} used twice; name the sides with --label"
        )
    return sides
