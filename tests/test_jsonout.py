"""The one JSON encoder (schedwake/jsonout.py): what JSON cannot hold, one rule for
every JSON document schedwake writes, and the documents written by it are valid JSON."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from schedwake.jsonout import dumps, jsonable


def _strict_loads(text: str):
    """json.loads that refuses NaN and the infinities, as jq and most parsers do."""

    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


@dataclass
class _Point:
    x: float
    where: Path


def test_nan_and_infinities_are_null_whatever_their_type():
    doc = {
        "nan": math.nan,
        "inf": math.inf,
        "-inf": -math.inf,
        "np_nan": np.float64("nan"),
        "np32_inf": np.float32("inf"),
        "array": np.array([1.5, np.nan, -np.inf]),
        "nested": [{"v": (math.nan, 2.0)}],
    }
    got = _strict_loads(dumps(doc))
    assert got == {
        "nan": None,
        "inf": None,
        "-inf": None,
        "np_nan": None,
        "np32_inf": None,
        "array": [1.5, None, None],
        "nested": [{"v": [None, 2.0]}],
    }


def test_numpy_scalars_paths_dataclasses_sets_and_keys():
    doc = {
        np.int64(3): np.int32(7),
        "flag": np.bool_(True),
        "share": np.float32(0.5),
        "path": Path("runs") / "a.dat",
        "point": _Point(np.float64(1.25), Path("/t/x.dat")),
        "cpus": {3, 1, 2},
        "other": complex(1, 2),
    }
    assert jsonable(doc) == {
        3: 7,
        "flag": True,
        "share": 0.5,
        "path": "runs/a.dat",
        "point": {"x": 1.25, "where": "/t/x.dat"},
        "cpus": [1, 2, 3],
        "other": "(1+2j)",
    }
    assert type(jsonable(np.int64(3))) is int and type(jsonable(np.bool_(False))) is bool
    assert _strict_loads(dumps(doc))["3"] == 7  # (JSON keys are strings)


def test_finite_documents_are_what_json_dumps_writes():
    """A document without NaN is byte for byte what json.dumps writes (the outputs of
    analyze, compare and gate did not change when they moved to this encoder)."""
    doc = {"a": [1, 2.5, "x", None, True], "b": {"c": -0.0, "d": 1e-300}, "e": []}
    for indent in (None, 2):
        assert dumps(doc, indent=indent) == json.dumps(doc, indent=indent)


def test_indented_documents_are_the_standard_librarys_bytes():
    """dumps' own indented writer (flat containers by the C encoder) writes what
    json.dumps(jsonable(o), indent=...) writes, for any mix of values and levels."""
    import random

    r = random.Random(7)
    scalars = [
        lambda: r.random() * 10 ** r.randrange(-8, 20),
        lambda: r.randrange(-(10**12), 10**12),
        lambda: 's"\n\u00e9\\x'[: r.randrange(7)],
        lambda: None,
        lambda: r.random() < 0.5,
        lambda: float("nan"),
        lambda: -math.inf,
        lambda: np.float64(r.random()),
        lambda: np.int32(r.randrange(100)),
        lambda: np.bool_(r.random() < 0.5),
        lambda: np.array([1.5, np.nan]),
        lambda: _Point(0.5, Path("/a")),
        lambda: {2, 1},
    ]

    def value(depth):
        if depth > 4 or r.random() < 0.4:
            return r.choice(scalars)()
        n = r.randrange(5)
        kind = r.randrange(5)
        if kind == 0:
            return [value(depth + 1) for _ in range(n)]
        if kind == 1:
            return tuple(value(depth + 1) for _ in range(n))
        if kind == 2:
            return {f"k{i}\u00e9": value(depth + 1) for i in range(n)}
        if kind == 3:
            keys = [lambda i: i, np.int64, lambda i: i + 0.5, lambda i: None, bool, str]
            return {r.choice(keys)(i): value(depth + 1) for i in range(n)}
        return [r.choice(scalars)() for _ in range(n)]

    for _ in range(3000):
        o = value(0)
        for indent in (2, 0, "\t"):
            assert dumps(o, indent=indent) == json.dumps(
                jsonable(o), indent=indent, allow_nan=False
            )
