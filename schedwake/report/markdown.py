"""Text from files made safe for Markdown: the one escape of every Markdown renderer
(``gate --markdown``, ``compare``/``analyze``/``profile``/``series --format markdown``).

A name that comes from a trace or a side file (a function's symbol, a task's comm, a
label, a unit, a path, a rule's metric) may hold what a Markdown renderer would act on:
raw HTML (``<script>``, ``<img onerror=...>``), a link or image (``[x](javascript:...)``),
emphasis, code spans and table cells (``*``, ``_``, a backtick, ``|``), or a line break
that starts a line of its own (a forged ``PASS`` line). :func:`md` escapes them all:
``<`` and ``>`` become entities (no HTML, no autolink); ``\\ ` * [ ] | ~`` get a
backslash, and ``_`` too but between two letters or digits (where it is no emphasis:
``wake_to_run`` stays as written); ``&`` before an entity's name becomes ``&amp;``; a
control character or line break becomes visible text (``\\x1b``, ``\\n``). What the
project writes itself (numbers, fixed words) reads the same escaped or not. A code
block's fence is :func:`fence`: longer than any run of backticks in it.
"""

from __future__ import annotations

import re

# (``_`` between two letters or digits is no emphasis in CommonMark: ``wake_to_run``
# stays as written)
_SPECIAL = re.compile(r"[\\`*\[\]|~]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
_ENTITY = re.compile(r"&(?=#?[0-9A-Za-z]+;)")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": " "}


def _control(m: re.Match) -> str:
    c = m.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def md(text) -> str:
    """``text`` (anything: ``str()`` of it) as Markdown shows it literally, on one line."""
    s = str(text)
    s = _SPECIAL.sub(lambda m: "\\" + m.group(), s)
    s = _ENTITY.sub("&amp;", s)
    s = s.replace("<", "&lt;").replace(">", "&gt;")
    return _CONTROL.sub(_control, s)


def fence(lines) -> str:
    """A code block's fence for ``lines``: three backticks, or one more than the longest
    run of backticks in them (a line cannot close the block early)."""
    longest = max((len(r) for ln in lines for r in re.findall("`+", str(ln))), default=0)
    return "`" * max(3, longest + 1)


def code_line(text) -> str:
    """One line inside a code block: control characters and line breaks visible."""
    return _CONTROL.sub(_control, str(text))


__all__ = ["md", "fence", "code_line"]
