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
    return str(o)


def _key(k: Any) -> Any:
    if isinstance(k, np.generic):
        return k.item()
    return k


def dumps(o: Any, indent: int | None = 2, sort_keys: bool = False) -> str:
    """``o`` as a JSON document (:func:`jsonable`, then :func:`json.dumps` with
    ``allow_nan=False``: what it writes is valid JSON)."""
    return json.dumps(jsonable(o), indent=indent, sort_keys=sort_keys, allow_nan=False)
