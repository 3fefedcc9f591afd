"""Which traces a path, a directory or a glob pattern names: the one rule of every
command that takes traces (``compare``, ``gate``, ``batch``), applied to the files on
disk or to the paths a batch dataset stored (``compare``/``gate --from-batch``,
``batch --topology-for``).

The rule (:func:`expand`):

1. A pattern naming an existing file is that file, also when its name holds ``*``, ``?``
   or ``[``; a directory ``perf record --threads`` wrote is one trace too.
2. A directory is the traces under it, at any depth: the files whose names end in
   :data:`TRACE_SUFFIXES` (a trace.dat, text, perf.data, compressed or not; a
   ``NAME.topology.json`` or a benchmark's results beside them are not traces, nor is a
   file named after a file beside it, ``NAME.cmd.txt`` of ``NAME``) and the
   ``perf record --threads`` directories (not the files inside them).
3. A glob is every file it matches, whatever its name, and the ``perf record --threads``
   directories it matches: ``*`` and ``?`` stop at ``/``, ``**`` crosses directories,
   ``[...]`` is a class.
4. Anything else is the path as given: reading it says what is wrong ("no such file").

A directory or a ``**`` glob leaves out names that start with a dot and does not follow
symbolic links to directories (a link to a parent would repeat every trace under it, up
to 40 times). A relative pattern is relative to the current directory, and the paths
come out spelled as the pattern spells them, sorted. A directory or glob that names no
trace is a :class:`~schedwake.errors.TraceError` naming the pattern and the option
(``nope/*.dat: --side a: the pattern matches no file``); ``batch`` makes it an error
row and goes on.

Among a batch dataset's traces (``among``: :class:`Stored`) the stored paths stand for
the files: a path equal to the pattern (rule 1), the traces under a directory (2), the
paths a glob matches (3); a relative pattern is matched against each trace's path as
stored and relative to a few directories (the batch's, the current one, the traces'
common one), an absolute one against the traces' absolute paths.
"""

from __future__ import annotations

import glob as _glob
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .errors import TraceError
from .ingest import SUFFIXES

#: File name endings a directory argument is searched for: the input formats' suffixes
#: (``ingest.INPUT_FORMATS``: a trace.dat, text, perf.data, compressed or not;
#: ``NAME.topology.json`` and other files beside them are not traces).
TRACE_SUFFIXES = SUFFIXES

_GLOB_CHARS = re.compile(r"[*?\[]")


def is_glob(pattern: str) -> bool:
    """Whether ``pattern`` holds a wildcard (``*``, ``?``, ``[``)."""
    return bool(_GLOB_CHARS.search(pattern))


@dataclass
class Stored:
    """Traces known by the paths a batch dataset stored instead of files on disk: what
    :func:`expand` matches a pattern against with ``among``."""

    #: Each trace's path as stored (what :func:`expand` gives).
    paths: Sequence[str]
    #: Each trace's absolute path (an absolute pattern is matched against it), or None.
    absolute: Sequence[str | None]
    #: Each trace's names a relative pattern is matched against (its stored path first).
    relative: Sequence[Sequence[str]]
    #: What was searched, for the error: ``"the batch OUT (4 trace(s); ...)"``.
    where: str


def expand(pattern: str, what: str = "trace", among: Stored | None = None) -> list[str]:
    """The traces ``pattern`` names, by the rule of this module's docstring: on disk, or
    among the stored traces ``among``; sorted. TraceError naming ``pattern`` and ``what``
    (the option or side it came from) when a directory or glob names none."""
    pattern = str(pattern)
    if among is not None:
        if os.path.isabs(pattern):
            names: Sequence[Sequence[str]] = [
                [a] if isinstance(a, str) else [] for a in among.absolute
            ]
        else:
            names = among.relative
        hits = match(pattern, names)
        if not hits:
            raise TraceError(pattern, f"{what}: the pattern matches no trace of {among.where}")
        return sorted(str(among.paths[i]) for i in hits)
    if os.path.isdir(pattern) and not _is_perf_directory(pattern):
        found = trace_files(pattern)
    elif os.path.exists(pattern) or not is_glob(pattern):
        return [pattern]
    else:
        found = glob_files(pattern)
    if not found:
        raise TraceError(pattern, f"{what}: {matches_nothing(pattern)}")
    return found


def matches_nothing(pattern: str) -> str:
    """Why ``pattern`` names no trace on disk (the text of :func:`expand`'s error)."""
    if os.path.isdir(pattern):
        ends = ", ".join(TRACE_SUFFIXES[:-1]) + " or " + TRACE_SUFFIXES[-1]
        return f"the directory holds no trace file (a name ending {ends})"
    return "the pattern matches no file"


def match(pattern: str, names: Sequence[Sequence[str]]) -> list[int]:
    """Which of the traces known by ``names`` (each trace's names) ``pattern`` names, by
    the rule of :func:`expand`: those with a name equal to it; else, for a glob, those
    with a name it matches; else those with a name under it as a directory. Names and
    pattern are compared normalised (``./a//b.dat`` is ``a/b.dat``)."""
    target = os.path.normpath(pattern)
    norm = [[os.path.normpath(str(v)) for v in vs if v is not None] for vs in names]
    hits = [i for i, vs in enumerate(norm) if target in vs]
    if hits:
        return hits
    if is_glob(pattern):
        rx = glob_regex(target)
        return [i for i, vs in enumerate(norm) if any(rx.match(v) for v in vs)]
    if target == ".":  # (every relative name that stays below the current directory)
        return [
            i
            for i, vs in enumerate(norm)
            if any(not (os.path.isabs(v) or v == ".." or v.startswith("../")) for v in vs)
        ]
    prefix = target.rstrip("/") + "/"
    return [i for i, vs in enumerate(norm) if any(v.startswith(prefix) for v in vs)]


def trace_files(directory: str) -> list[str]:
    """The traces under ``directory`` (rule 2 of :func:`expand`), sorted: the files whose
    names end in :data:`TRACE_SUFFIXES` and the ``perf record --threads`` directories,
    without names that start with a dot and without following links to directories."""
    found = []
    for top, dirs, files in os.walk(directory):  # (followlinks=False)
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        perf = [d for d in dirs if _is_perf_directory(os.path.join(top, d))]
        dirs[:] = [d for d in dirs if d not in perf]  # (one trace, not its files)
        found += [os.path.join(top, d) for d in perf]
        names = [n for n in files if not n.startswith(".") and n.endswith(TRACE_SUFFIXES)]
        # a file named after a trace beside it is that trace's (record's TRACE.cmd.txt,
        # TRACE.perf-stat.txt), not a trace
        mine = {n for n in names for m in names if m != n and n.startswith(m + ".")}
        for name in names:
            path = os.path.join(top, name)
            if name not in mine and os.path.isfile(path):
                found.append(path)
    return sorted(found)


def _is_perf_directory(path: str) -> bool:
    from .ingest import is_perf_directory

    return os.path.isdir(path) and is_perf_directory(Path(path))


def glob_files(pattern: str) -> list[str]:
    """The files ``pattern`` matches (and the ``perf record --threads`` directories: one
    trace each), sorted, as ``glob.glob(pattern, recursive=True)`` finds them, except
    that ``**`` does not follow symbolic links to directories: glob does, so that a link
    to a parent directory repeats the tree under it until the path is too long (each
    trace 41 times; 2^40 times with two such links)."""
    if "**" not in pattern:
        return sorted(f for f in _glob.glob(pattern) if os.path.isfile(f) or _is_perf_directory(f))
    parts = Path(pattern).parts
    fixed = next(i for i, part in enumerate(parts) if _GLOB_CHARS.search(part))
    root = Path(*parts[:fixed]) if fixed else Path(".")
    rx = glob_regex(str(Path(pattern)))  # (Path drops "./" and "//", as the walk's paths)
    found = []
    for top, dirs, files in os.walk(root):  # (followlinks=False)
        dirs[:] = [d for d in dirs if not d.startswith(".")]  # as glob: no hidden names
        perf = [d for d in dirs if _is_perf_directory(os.path.join(top, d))]
        dirs[:] = [d for d in dirs if d not in perf]  # (one trace, not its files)
        for name in files + perf:
            path = str(Path(top, name))
            if (
                not name.startswith(".")
                and rx.match(path)
                and (name in perf or os.path.isfile(path))
            ):
                found.append(path)
    prefix = "./" if pattern.startswith("./") else ""  # the names as glob gives them
    return sorted(prefix + f for f in found)


#: The longest glob pattern taken (a path is at most 4096 bytes on Linux).
MAX_PATTERN = 4096

# a glob's tokens: one character (a literal, ``?``, a class), ``*`` (a run of characters
# but ``/``), ``**`` (a run of any characters), ``**/`` (nothing, or a run ending in ``/``)
_LIT, _ONE, _CLASS, _STAR, _DSTAR, _ENTRY = range(6)


class GlobPattern:
    """A path glob, matched without backtracking: ``*`` and ``?`` stop at ``/``, ``**``
    crosses directories, ``**/`` is nothing or any directories, ``[...]`` is a class
    (``[!...]`` its complement; a class never matches ``/``), as :mod:`glob` matches
    files. :meth:`match` runs the pattern's automaton over the name with every state at
    once (a bit each, Python integers as bit sets): time linear in the name's length
    whatever the pattern (``*a*a*a*a*a*a*a*a*a*b`` against 60 characters took a
    regular expression's backtracking minutes)."""

    def __init__(self, pattern: str):
        if len(pattern) > MAX_PATTERN:
            raise TraceError(pattern[:60] + "...", f"a pattern is at most {MAX_PATTERN} characters")
        self.pattern = pattern
        tokens: list[tuple[int, object]] = []
        skip3 = 0  # the entries of ``**/``: an empty way past its three tokens
        i = 0
        while i < len(pattern):
            c = pattern[i]
            if pattern.startswith("**/", i):
                skip3 |= 1 << len(tokens)
                tokens += [(_ENTRY, None), (_DSTAR, None), (_LIT, "/")]
                i += 3
                continue
            if pattern.startswith("**", i):
                if not (tokens and tokens[-1][0] == _DSTAR):
                    tokens.append((_DSTAR, None))
                i += 2
                continue
            if c == "*":
                if not (tokens and tokens[-1][0] in (_STAR, _DSTAR)):
                    tokens.append((_STAR, None))
            elif c == "?":
                tokens.append((_ONE, None))
            elif c == "[":
                j = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "]") else i + 1)
                if j < 0:
                    tokens.append((_LIT, c))
                else:
                    tokens.append((_CLASS, _char_class(pattern[i + 1 : j])))
                    i = j
            else:
                tokens.append((_LIT, c))
            i += 1
        self._tokens = tokens
        self._accept = 1 << len(tokens)

        def bits(*kinds: int) -> int:
            return sum(1 << k for k, (kind, _) in enumerate(tokens) if kind in kinds)

        self._skip1 = bits(_STAR, _DSTAR, _ENTRY)
        self._skip3 = skip3
        self._stars = bits(_STAR)
        self._dstars = bits(_DSTAR)
        self._steps: dict[str, tuple[int, int]] = {}
        self._start = self._closure(1)

    def _closure(self, states: int) -> int:
        """``states`` and every state reached from them without a character."""
        while True:
            more = states | ((states & self._skip1) << 1) | ((states & self._skip3) << 3)
            if more == states:
                return states
            states = more

    def _step(self, c: str) -> tuple[int, int]:
        """(states that move on past their token, states that stay) on character ``c``."""
        got = self._steps.get(c)
        if got is None:
            move = 0
            for k, (kind, arg) in enumerate(self._tokens):
                if (
                    (kind == _LIT and arg == c)
                    or (kind == _ONE and c != "/")
                    or (kind == _CLASS and c != "/" and arg(c))  # type: ignore[operator]
                ):
                    move |= 1 << k
            stay = self._dstars | (self._stars if c != "/" else 0)
            got = self._steps[c] = (move, stay)
        return got

    def match(self, name: str) -> bool:
        """Whether the whole of ``name`` matches."""
        states = self._start
        for c in name:
            move, stay = self._step(c)
            states = self._closure(((states & move) << 1) | (states & stay))
            if not states:
                return False
        return bool(states & self._accept)


def _char_class(body: str) -> Callable[[str], bool]:
    """A glob class's body (``a-z0``, ``!0-9``) as a test of one character."""
    negate = body.startswith("!")
    if negate:
        body = body[1:]
    singles: set[str] = set()
    ranges: list[tuple[str, str]] = []
    k = 0
    while k < len(body):
        if k + 2 < len(body) and body[k + 1] == "-":
            ranges.append((body[k], body[k + 2]))
            k += 3
        else:
            singles.add(body[k])
            k += 1

    def test(c: str) -> bool:
        hit = c in singles or any(lo <= c <= hi for lo, hi in ranges)
        return hit != negate

    return test


def glob_regex(pattern: str) -> GlobPattern:
    """A path glob as a matcher whose ``match(name)`` says whether ``name`` matches it
    all: :class:`GlobPattern` (no backtracking; the name is kept from when it was a
    regular expression)."""
    return GlobPattern(pattern)
