"""The one JSON encoder of every JSON document schedwake writes.

``schedwake analyze --format json``, ``schedwake compare --format json``, ``schedwake
gate --json``, ``schedwake profile --format json`` and the JSON columns of a batch
dataset (a finding's ``metrics``, ``top`` and ``evidence_events``) are all written by
:func:`dumps`, under one rule for what JSON cannot hold:

* a number that is not finite (NaN, +inf, -inf; a Python or a NumPy float) is ``null``:
  JSON has no NaN, and a document with one is not JSON (``jq`` and most parsers refuse
  it). A renderer that must tell an infinity from an undefined number converts it
  before (the gate writes ``"inf"``/``"-inf"`` for an infinite gain, docs/gate.md);
* NumPy scalars are their Python numbers (``np.bool_`` a boolean), NumPy arrays lists;
* a path (:class:`pathlib.PurePath`) is its string;
* a dataclass instance is the dict of its fields;
* a set or a frozenset is a list of its items, sorted when they can be;
* dict keys that are NumPy scalars are their Python numbers (JSON turns them to strings
  as it does Python's);
* an object whose type has ``__json__()`` is what that returns (converted by this
  rule); written indented, its type's ``__json_indented__(indent, level)``, when it has
  one, writes its text itself (the same bytes: a table's rows written from its columns,
  :class:`schedwake.model.task_states.TaskRows`);
* anything else is its ``str()``.

:func:`jsonable` is the same conversion without the encoding, for a caller that
builds a bigger document or writes with other options.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import PurePath
from typing import Any

import numpy as np

__all__ = ["dumps", "jsonable"]


def jsonable(o: Any) -> Any:
    """``o`` as plain JSON values (dict, list, str, int, float, bool, None) by the rule
    of this module: what :func:`dumps` encodes."""
    if o is None or isinstance(o, (str, bool)):
        return o
    if isinstance(o, int):  # (np.integer is not an int: below)
        return o
    if isinstance(o, float):  # (np.float64 is a float)
        return float(o) if math.isfinite(o) else None
    if isinstance(o, dict):
        return {_key(k): jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [jsonable(v) for v in o]
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        v = float(o)
        return v if math.isfinite(v) else None
    if isinstance(o, np.ndarray):
        return jsonable(o.tolist())
    if isinstance(o, PurePath):
        return str(o)
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return jsonable({f.name: getattr(o, f.name) for f in dataclasses.fields(o)})
    if isinstance(o, (set, frozenset)):
        items = [jsonable(v) for v in o]
        try:
            return sorted(items)
        except TypeError:
            return items
    own = getattr(type(o), "__json__", None)
    if own is not None:
        return jsonable(own(o))
    return str(o)


def _key(k: Any) -> Any:
    if isinstance(k, np.generic):
        return k.item()
    return k


def dumps(o: Any, indent: int | str | None = 2, sort_keys: bool = False) -> str:
    """``o`` as a JSON document (:func:`jsonable`, then :func:`json.dumps` with
    ``allow_nan=False``: what it writes is valid JSON).

    An indented document without sorted keys is written by :class:`_Indented`: the same
    bytes, several times faster on big documents (the standard library indents in pure
    Python, one generator step per value)."""
    if indent is None or sort_keys or not isinstance(indent, (int, str)):
        return _plain_dumps(o, indent, sort_keys)
    out: list[str] = []
    _Indented(" " * indent if isinstance(indent, int) else indent).put(o, 0, out)
    return "".join(out)


def _plain_dumps(o: Any, indent: int | str | None, sort_keys: bool = False) -> str:
    return json.dumps(jsonable(o), indent=indent, sort_keys=sort_keys, allow_nan=False)


#: The values :class:`_Indented` writes itself (exactly these types: a subclass, such as
#: NumPy's float64 or an IntEnum, goes the way of :func:`jsonable`).
_SCALARS = frozenset({str, int, float, bool, type(None)})
_STR = frozenset({str})


def _refuse(o: Any) -> Any:
    raise TypeError(type(o).__name__)


class _Indented:
    """``json.dumps(jsonable(o), indent=indent, allow_nan=False)`` byte for byte, written
    container by container: a container of plain values only (str, int, finite float,
    bool, None) by the standard library's C encoder, with an item separator that holds
    the newline and the indentation of its level; the others walked here; a value of
    any other type as :func:`jsonable` and :func:`json.dumps` write it (a string holds
    no raw newline, so a document written at level 0 is indented to any level by
    indenting its lines)."""

    def __init__(self, indent: str) -> None:
        self.indent = indent
        self._flat: dict[int, Any] = {}

    def flat(self, level: int) -> Any:
        """The C encoder of a flat container at ``level`` (None without the C module)."""
        enc = self._flat.get(level)
        if enc is None and _make_encoder is not None:
            enc = _make_encoder(
                None, _refuse, json.encoder.encode_basestring_ascii, None, ": ",
                ",\n" + self.indent * (level + 1), False, False, False,
            )  # fmt: skip
            self._flat[level] = enc
        return enc

    def put(self, o: Any, level: int, out: list[str]) -> None:
        t = type(o)
        if t is str:
            out.append(_encode_str(o))
        elif t is dict or t is list:
            self.container(o, t is dict, level, out)
        elif t is int:
            out.append(int.__repr__(o))
        elif t is float:
            out.append(float.__repr__(o) if math.isfinite(o) else "null")
        elif o is None:
            out.append("null")
        elif t is bool:
            out.append("true" if o else "false")
        else:
            own = getattr(t, "__json_indented__", None)
            out.append(own(o, self.indent, level) if own else self.plain(o, level))

    def plain(self, o: Any, level: int) -> str:
        """``o`` by :func:`jsonable` and :func:`json.dumps`, indented to ``level``."""
        text = _plain_dumps(o, self.indent)
        return text.replace("\n", "\n" + self.indent * level) if level else text

    def container(self, o: Any, is_dict: bool, level: int, out: list[str]) -> None:
        if not o:
            out.append("{}" if is_dict else "[]")
            return
        if is_dict and not _STR.issuperset(map(type, o)):
            out.append(self.plain(o, level))  # (keys as jsonable and json turn them)
            return
        values = o.values() if is_dict else o
        inner = "\n" + self.indent * (level + 1)
        outer = inner[: len(inner) - len(self.indent)]
        if _SCALARS.issuperset(map(type, values)):
            enc = self.flat(level)
            if enc is not None:
                try:
                    text = "".join(enc(o, 0))
                except ValueError:  # a NaN or an infinity: null, below
                    pass
                else:
                    out.append(text[0] + inner + text[1:-1] + outer + text[-1])
                    return
        put = self.put
        if is_dict:
            sep = "{" + inner
            run: dict = {}  # (plain values in a row: one C encoding)
            for k, v in o.items():
                if type(v) in _SCALARS:
                    run[k] = v
                    continue
                if run:
                    sep = self.run(run, level, sep, inner, out)
                    run = {}
                out.append(sep + _encode_str(k) + ": ")
                put(v, level + 1, out)
                sep = "," + inner
            if run:
                self.run(run, level, sep, inner, out)
            out.append(outer + "}")
        else:
            sep = "[" + inner
            for v in o:
                out.append(sep)
                put(v, level + 1, out)
                sep = "," + inner
            out.append(outer + "]")

    def run(self, items: dict, level: int, sep: str, inner: str, out: list[str]) -> str:
        """Write the plain ``items`` of a dict at ``level`` after ``sep``; the separator
        of the next item."""
        enc = self.flat(level)
        try:
            text = None if enc is None else "".join(enc(items, 0))
        except ValueError:  # a NaN or an infinity: null, below
            text = None
        if text is not None:
            out.append(sep + text[1:-1])
            return "," + inner
        for k, v in items.items():
            out.append(sep + _encode_str(k) + ": ")
            self.put(v, level + 1, out)
            sep = "," + inner
        return sep


_encode_str = json.encoder.encode_basestring_ascii
#: The standard library's C encoder (None where json has no C module)
_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
