"""The one check of the values that side files bring in (#37).

A benchmark's results (``TRACE.bench.json``, fio's JSON, dbench's output), the kernel's
counters (``TRACE.counters.json``, ``perf stat`` output) and a topology
(``topology.json``) are written by other programs, or by hand, or forged; their values
end in reports, in JSON and in the arithmetic of a comparison. Every value read from
them passes here, and a bad one refuses the file in one line naming the file and the
key (:class:`SideValueError`, a :class:`~schedwake.errors.TraceError`; the CLI prints
it and exits 2):

* JSON (:func:`load_json`): a key given twice in one object (``json`` keeps the last
  one silently), an integer of more than :data:`MAX_INT_DIGITS` digits (a 4,000-digit
  integer would overflow every float it meets), a number beyond a float (``1e400``)
  and ``NaN``/``Infinity`` (not JSON, though Python's ``json`` takes them), nesting
  too deep;
* numbers (:func:`number`): finite, at most :data:`MAX_MAGNITUDE` in size, and not
  below 0 where the quantity cannot be (a throughput, a rate, a latency, a percentile,
  a count), also after a sum (two fio jobs of 1e308 KiB/s each);
* texts (:func:`text`): no control characters (a newline in a unit would forge a line
  of the text report), no lone surrogate (``"\\ud800"`` cannot be written as UTF-8),
  at most :data:`MAX_TEXT` characters.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NoReturn

from .errors import TraceError

if TYPE_CHECKING:
    from _typeshed import StrPath

#: The most digits an integer of a side file may have (2**63 has 19).
MAX_INT_DIGITS = 20
#: The largest magnitude of a side file's number: far beyond any real count, rate or
#: time in ns, far below where sums and products overflow a float.
MAX_MAGNITUDE = 1e18
#: The longest text (a unit, a name, a reason) taken from a side file.
MAX_TEXT = 4096
#: Control characters (C0 but tab, DEL, C1), line and paragraph separators and lone
#: surrogates: none of them belongs in a unit or a name.
_BAD_CHARS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


class SideValueError(TraceError):
    """A side file's value that cannot be used: one line naming the file and the key."""


def shown(text: str, width: int = 40) -> str:
    """``text`` as a message may quote it: cut to ``width`` characters, every character
    beyond ASCII (a control character, a surrogate) escaped."""
    text = text if len(text) <= width else text[: width - 3] + "..."
    return text.encode("ascii", "backslashreplace").decode("ascii")


_short = shown


class _Duplicate(ValueError):
    pass


class _BadNumber(ValueError):
    pass


def _unique(pairs: list) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise _Duplicate(k)
        out[k] = v
    return out


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _BadNumber(f"an integer of {len(text.lstrip('-'))} digits")
    return int(text)


def _float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise _BadNumber(f"the number {_short(text)} is beyond a float")
    return v


def _constant(text: str) -> NoReturn:
    raise _BadNumber(f"{text} is not a finite number")


def load_json(text: str, path: StrPath, what: str = "JSON") -> Any:  # (a JSON value)
    """``text`` parsed as JSON, or a :class:`SideValueError` naming ``path`` that says
    what is wrong (``what``: what the file should be, for the message): a key given
    twice, an integer too long, a number beyond a float, NaN or Infinity, nesting too
    deep, not JSON at all."""
    try:
        return json.loads(
            text,
            object_pairs_hook=_unique,
            parse_int=_int,
            parse_float=_float,
            parse_constant=_constant,
        )
    except _Duplicate as exc:
        raise SideValueError(path, f"key {_short(str(exc.args[0]))!r} is given twice") from None
    except _BadNumber as exc:
        raise SideValueError(path, f"not {what}: {exc.args[0]}") from None
    except RecursionError:
        raise SideValueError(path, f"not {what}: nested too deeply") from None
    except ValueError as exc:
        raise SideValueError(path, f"not {what}: {' '.join(str(exc).split())[:120]}") from None


def number(path: StrPath, key: str, value: object, *, negative: bool = False) -> float:
    """``value`` (a JSON number, or text already parsed to a float) as a float: finite,
    at most :data:`MAX_MAGNITUDE` in size, not below 0 unless ``negative``; else a
    SideValueError naming ``path`` and ``key``. True and false are not numbers."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SideValueError(path, f"{key} must be a finite number, not {_short(repr(value))}")
    v = float(value) if abs(value) <= MAX_MAGNITUDE else math.inf
    if not math.isfinite(v) or abs(v) > MAX_MAGNITUDE:
        raise SideValueError(
            path, f"{key} {_short(repr(value))} is out of range (at most {MAX_MAGNITUDE:.0e})"
        )
    if v < 0 and not negative:
        raise SideValueError(path, f"{key} {_short(repr(value))} is negative")
    return v


def parsed_number(path: StrPath, key: str, text: str, *, negative: bool = False) -> float:
    """A number written as text (dbench's ``Throughput 1e400 MB/sec``): as
    :func:`number`."""
    try:
        v = float(text)
    except ValueError:
        raise SideValueError(path, f"{key} {_short(text)!r} is not a number") from None
    if not math.isfinite(v):
        raise SideValueError(
            path, f"{key} {_short(text)} is out of range (at most {MAX_MAGNITUDE:.0e})"
        )
    return number(path, key, v, negative=negative)


def total(path: StrPath, key: str, values: Iterable[float]) -> float:
    """The sum of checked numbers, itself checked (two in range may sum beyond it)."""
    return number(path, key, math.fsum(values))


def text(
    path: StrPath, key: str, value: object, *, empty: bool = True, most: int = MAX_TEXT
) -> str:
    """``value`` as a text of a side file: no control characters, no line break, no
    lone surrogate, at most ``most`` characters (and not empty unless ``empty``); else a
    SideValueError naming ``path`` and ``key``."""
    if not isinstance(value, str):
        raise SideValueError(path, f"{key} must be text, not {_short(repr(value))}")
    if len(value) > most:
        raise SideValueError(path, f"{key} is longer than {most} characters")
    bad = _BAD_CHARS.search(value)
    if bad:
        raise SideValueError(
            path,
            f"{key} {_short(repr(value))} holds the character "
            f"U+{ord(bad.group()):04X} (a control character or a lone surrogate)",
        )
    if not empty and not value.strip():
        raise SideValueError(path, f"{key} must not be empty")
    return value


def has_bad_chars(value: str) -> bool:
    """Whether ``value`` holds a character :func:`text` refuses."""
    return _BAD_CHARS.search(value) is not None


__all__ = [
    "SideValueError",
    "MAX_INT_DIGITS",
    "MAX_MAGNITUDE",
    "MAX_TEXT",
    "load_json",
    "number",
    "parsed_number",
    "total",
    "text",
    "has_bad_chars",
    "shown",
]
