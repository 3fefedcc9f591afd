"""Which traces a path, a directory or a glob pattern names: the one rule of every
command that takes traces (``compare``, ``gate``, ``batch``, and ``--from-batch``, which
applies it to a dataset's stored paths).
"""

from __future__ import annotations

import glob as _glob
import os
import re
from pathlib import Path

from .errors import TraceError

#: File name endings a directory argument is searched for (a trace.dat, text, perf.data,
#: compressed or not; ``NAME.topology.json`` and other files beside them are not traces).
TRACE_SUFFIXES = (".dat", ".data", ".txt", ".report", ".perf", ".gz", ".xz", ".zst", ".bz2")

_GLOB_CHARS = re.compile(r"[*?\[]")


def expand_paths(pattern: str, what: str) -> list[str]:
    """A path, or the sorted files a glob pattern matches (TraceError if none)."""
    if Path(pattern).exists() or not _GLOB_CHARS.search(pattern):
        return [pattern]
    found = glob_files(pattern)
    if not found:
        raise TraceError(pattern, f"{what}: the pattern matches no file")
    return found


def glob_files(pattern: str) -> list[str]:
    """The files ``pattern`` matches, sorted, as ``glob.glob(pattern, recursive=True)``
    finds them, except that ``**`` does not follow symbolic links to directories: glob
    does, so that a link to a parent directory repeats the tree under it until the path
    is too long (each trace 41 times; 2^40 times with two such links)."""
    if "**" not in pattern:
        return sorted(f for f in _glob.glob(pattern) if os.path.isfile(f))
    parts = Path(pattern).parts
    fixed = next(i for i, part in enumerate(parts) if _GLOB_CHARS.search(part))
    root = Path(*parts[:fixed]) if fixed else Path(".")
    rx = glob_regex(str(Path(pattern)))  # (Path drops "./" and "//", as the walk's paths)
    found = []
    for top, dirs, files in os.walk(root):  # (followlinks=False)
        dirs[:] = [d for d in dirs if not d.startswith(".")]  # as glob: no hidden names
        for name in files:
            path = str(Path(top, name))
            if not name.startswith(".") and rx.match(path) and os.path.isfile(path):
                found.append(path)
    prefix = "./" if pattern.startswith("./") else ""  # the names as glob gives them
    return sorted(prefix + f for f in found)


def glob_regex(pattern: str) -> re.Pattern:
    """A path glob as a regular expression: ``*`` and ``?`` stop at ``/``, ``**``
    crosses directories, ``[...]`` is a class (as :mod:`glob` matches files)."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "]") else i + 1)
            if j < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")
