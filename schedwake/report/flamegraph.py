"""Flame graphs of a profile comparison as inline SVG, drawn in Python (no script, no
library, nothing fetched).

A side's stacks (:attr:`schedwake.profile_compare.ProfileComparison.stacks`, own
function first) are merged root first into a tree; the root ``all`` is at the bottom
(the classic flame graph), each frame above its caller, a frame's width its path's
share of the side's samples (mean over the side's runs), siblings in alphabetical
order, left-aligned under their caller (the room left above a frame is its self time).

Differential graphs, as Brendan Gregg draws them, one per direction:

* *after, coloured by what grew*: drawn with the new side's widths; a frame is red when
  its function's self or children share grew significantly (the comparison's test:
  ``self_share:significant[side]`` or ``children_share:significant[side]``);
* *before, coloured by what shrank*: drawn with the baseline's widths; blue where the
  function's share shrank significantly.

Everything not significant is a neutral beige (shades vary with the name, only to tell
neighbours apart), so noise is never painted; the deeper the colour, the larger the
change (relative to the largest significant change in that direction).  Every frame has
a ``<title>`` (the browser's tooltip): the function, its DSO, both sides' shares of
that frame path and their difference, then the function's self and children change
and q-value when they were tested.

Size: frames narrower than ``min_width`` (a fraction of the graph, default 0.1%) are
not drawn; the narrow children of one frame are merged into one grey ``[N narrow
frames]`` frame when together they reach ``min_width``.  At most ``max_frames`` frames
are kept (the widest; a frame is never kept without its caller), plus at most one
merged frame per kept frame: at most ``2 * max_frames`` frames in all, whatever the
number of stacks.  Names are clipped to :data:`NAME_CHARS` characters in the titles
and to the frame's width in the labels: a frame of ordinary names costs about 0.3 kB,
so a graph stays under 2 MB with the default :data:`MAX_FRAMES` (the real samples'
graphs: about 60 kB; 100,000 random stacks: about 140 kB); the worst case, every
name long and made of characters to escape, is about 3 kB a frame.  Time: the tree is
built level by level under the frames wide enough to be drawn only, so the work
follows what is drawn, not how many stacks there are.  Runs of consecutive
``[unknown]`` frames of one DSO are drawn as one frame (see :func:`tree`).
"""

from __future__ import annotations

import html as _html
import math
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

#: The graph's width in pixels (the viewBox; the page scales it to fit).
WIDTH = 1200
#: A frame's height and the font size of its label, in pixels.
FRAME_H = 16
FONT_PX = 11
#: The label font's mean advance per character (monospace: 0.6 em).
CHAR_PX = FONT_PX * 0.6
#: Frames narrower than this fraction of the graph are merged or left out.
MIN_WIDTH = 0.001
#: At most this many frames are kept (the widest), plus one merged frame per kept frame.
MAX_FRAMES = 3000
#: Names longer than this are clipped in the titles.
NAME_CHARS = 160
DSO_CHARS = 80
#: Space above the frames for the graph's title and legend, and below them.
PAD_TOP = 58
PAD_BOTTOM = 6
PAD_X = 10

#: Directions of a differential graph: what is drawn, what is coloured.
AFTER = "after"
BEFORE = "before"

UNKNOWN = "[unknown]"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _e(x) -> str:
    return _html.escape(str(x), quote=True)


def clean(text: str) -> str:
    """A name as the page may carry it: control characters and unpaired surrogates
    (from names that were not UTF-8) replaced by ``?``; escaping is still needed."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    return _CONTROL.sub("?", text)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: max(n - 2, 1)] + ".."


def frame_label(frame: tuple[str, str]) -> str:
    """The name drawn for a frame: the symbol, or ``[unknown] (dso)``."""
    dso, symbol = frame
    name = symbol if symbol != UNKNOWN else f"{UNKNOWN} ({dso})"
    return clean(name) or "?"


class _Node:
    """A frame path: each side's share of it, its children at least ``floor`` wide on
    the drawn side, and the count and shares of the narrower ones."""

    __slots__ = ("frame", "vals", "kids", "narrow_n", "narrow_vals")

    def __init__(self, frame: tuple[str, str] | None, vals: list[float]):
        self.frame = frame
        self.vals = vals
        self.kids: dict[tuple[str, str], _Node] = {}
        self.narrow_n = 0
        self.narrow_vals = [0.0] * len(vals)


def _path(frames: tuple, unknown_runs: bool) -> tuple:
    """A stack root first; with ``unknown_runs``, runs of one ``[unknown]`` frame as one."""
    path = frames[::-1]
    if not unknown_runs or len(set(frames)) == len(frames):
        return path
    out = [path[0]]
    for fr in path[1:]:
        if fr != out[-1] or fr[1] != UNKNOWN:
            out.append(fr)
    return tuple(out)


def tree(stacks: Sequence, drawn: int = 0, floor: float = 0.0, unknown_runs: bool = True):
    """The tree of the stacks of several sides (DataFrames ``frames``, own function
    first, and ``share``), root first: every node holds each side's share of its path.

    Built level by level, and only under frames at least ``floor`` wide on side
    ``drawn`` (a frame is never wider than its caller): the narrower children of a
    frame are only counted and summed, so the work follows what is drawn, not how many
    stacks there are.  ``unknown_runs``: consecutive ``[unknown]`` frames of one DSO are
    one frame (their addresses have no names to tell them apart: unwinding through code
    without symbols, or a broken frame-pointer chain, up to perf's 127 frames)."""
    n = len(stacks)
    paths: list[tuple] = []
    side_of: list[int] = []
    shares: list[float] = []
    totals = [0.0] * n
    for j, st in enumerate(stacks):
        for frames, share in zip(st["frames"], st["share"]):
            paths.append(_path(tuple(frames), unknown_runs))
            side_of.append(j)
            shares.append(float(share))
            totals[j] += float(share)
    root = _Node(None, totals)
    level: list[tuple[_Node, list[int]]] = [(root, list(range(len(paths))))]
    depth = 0
    while level:
        deeper: list[tuple[_Node, list[int]]] = []
        for node, ids in level:
            groups: dict[tuple[str, str], list[int]] = {}
            for i in ids:
                p = paths[i]
                if len(p) > depth:
                    groups.setdefault(p[depth], []).append(i)
            for fr, members in groups.items():
                vals = [0.0] * n
                for i in members:
                    vals[side_of[i]] += shares[i]
                if vals[drawn] <= 0:
                    continue  # not on the drawn side: nothing to draw
                if vals[drawn] >= floor:
                    kid = node.kids[fr] = _Node(fr, vals)
                    deeper.append((kid, members))
                else:
                    node.narrow_n += 1
                    for j in range(n):
                        node.narrow_vals[j] += vals[j]
        level = deeper
        depth += 1
    return root


@dataclass
class _Function:
    """A function's test results on one side (NaN q: not tested)."""

    self_change: float
    self_q: float
    self_sig: bool
    children_change: float
    children_q: float
    children_sig: bool

    def change(self, direction: str) -> float:
        """The largest significant change in ``direction`` (pp, > 0), or 0."""
        sign = 1.0 if direction == AFTER else -1.0
        best = 0.0
        for sig, c in (
            (self.self_sig, self.self_change),
            (self.children_sig, self.children_change),
        ):
            if sig and c * sign > best:
                best = c * sign
        return best

    def describe(self) -> str:
        parts = []
        for what, c, q, sig in (
            ("self", self.self_change, self.self_q, self.self_sig),
            ("children", self.children_change, self.children_q, self.children_sig),
        ):
            if isinstance(q, float) and math.isnan(q):
                continue
            parts.append(f"{what} {c:+.2f} pp (q {q:.2g}){' *' if sig else ''}")
        return "function: " + ", ".join(parts) if parts else ""


def functions(cmp, side: str) -> dict[tuple[str, str], _Function]:
    """(dso, symbol) -> the function's test results on ``side`` (a non-baseline side)."""
    rows = cmp.rows
    cols = [
        rows[f"{m}:{k}[{side}]"].to_numpy()
        for m in ("self_share", "children_share")
        for k in ("change", "q", "significant")
    ]
    out = {}
    for i, key in enumerate(zip(rows["dso"], rows["symbol"])):
        sc, sq, ss, cc, cq, cs = (c[i] for c in cols)
        out[key] = _Function(float(sc), float(sq), bool(ss), float(cc), float(cq), bool(cs))
    return out


def neutral(name: str) -> str:
    """The beige of a frame that is not coloured (a shade picked by the name)."""
    h = zlib.crc32(name.encode("utf-8", "replace"))
    v = h % 24
    return f"rgb({222 + v},{216 + v},{196 + (h >> 8) % 16})"


def hot(direction: str, intensity: float) -> str:
    """Red (``after``: grew) or blue (``before``: shrank), deeper for ``intensity`` 1."""
    i = 0.35 + 0.65 * min(max(intensity, 0.0), 1.0)
    c = round(215 - 195 * i)
    return f"rgb(255,{c},{c})" if direction == AFTER else f"rgb({c},{c},255)"


NARROW_FILL = "rgb(200,200,200)"


def svg(
    cmp,
    side: str | None = None,
    direction: str | None = AFTER,
    *,
    title: str | None = None,
    width: int = WIDTH,
    min_width: float = MIN_WIDTH,
    max_frames: int = MAX_FRAMES,
    ident: str = "fg",
    unknown_runs: bool = True,
    standalone: bool = False,
) -> str:
    """The flame graph of a :class:`~schedwake.profile_compare.ProfileComparison` as
    SVG text, for inline HTML (``standalone``: with its XML namespace, for a file of its
    own).

    ``side``: a non-baseline side (default: the last).  ``direction``: :data:`AFTER`
    (drawn with ``side``'s widths, red where a function grew significantly),
    :data:`BEFORE` (the baseline's widths, blue where a function shrank) or None (the
    plain graph of ``side``, nothing coloured; the only choice when there is one side,
    where ``side`` defaults to it).  ``ident`` prefixes the frames' ids (``ident-N``;
    each frame names its caller's id in ``data-p``), so that several graphs can share
    a page.  ``unknown_runs``: consecutive ``[unknown]`` frames of one DSO drawn as one
    (see :func:`tree`).  See the module for the sizes.
    """
    sides = list(cmp.sides)
    base = sides[0]
    if side is None:
        side = sides[-1]
    if side not in sides:
        raise ValueError(f"side: {side!r} is not one of the sides ({', '.join(sides)})")
    if direction not in (AFTER, BEFORE, None):
        raise ValueError(f"direction: {direction!r} is not 'after', 'before' or None")
    if not 0 <= min_width < 1:
        raise ValueError(f"min_width: must be a fraction of the width, not {min_width!r}")
    if direction is not None and (len(sides) < 2 or side == base):
        raise ValueError("direction: a differential graph needs a side other than the baseline")
    if direction is None:
        shown = [side]
        drawn = 0
        funcs: dict[tuple[str, str], _Function] = {}
    else:
        shown = [base, side]
        drawn = 1 if direction == AFTER else 0
        funcs = functions(cmp, side)
    total = float(cmp.stacks[shown[drawn]]["share"].sum()) or 1.0
    root = tree([cmp.stacks[s] for s in shown], drawn, min_width * total, unknown_runs)
    scale = {k: f.change(direction) for k, f in funcs.items()} if direction else {}
    top_change = max(scale.values(), default=0.0) or 1.0
    if title is None:
        title = (
            f"{side}"
            if direction is None
            else f"{side}: after, coloured by what grew (vs {base})"
            if direction == AFTER
            else f"{base}: before, coloured by what shrank (vs {side})"
        )
    inner = width - 2 * PAD_X
    cut = _threshold(root, drawn, min_width * total, max_frames)

    frames: list[str] = []
    depth_max = 0
    # (node, x share, depth, parent id); iterative (stacks can be deep)
    todo: list[tuple[_Node, float, int, str]] = [(root, 0.0, 0, "")]
    rects: list[tuple[int, float, float, str, str, str, str, str, str]] = []
    while todo:
        node, x, depth, parent = todo.pop()
        ident_n = f"{ident}-{len(rects)}"
        v = node.vals[drawn]
        label = "all" if node.frame is None else frame_label(node.frame)
        fill = neutral(label)
        cls = "f"
        info = ""
        if node.frame is not None:
            f = funcs.get(node.frame)
            if f is not None:
                info = f.describe()
                c = scale.get(node.frame, 0.0)
                if c > 0:
                    fill = hot(direction or AFTER, c / top_change)
                    cls = "f grew" if direction == AFTER else "f shrank"
                    if c / top_change > 0.6:
                        cls += " dk"  # a deep colour: white labels
        tip = _tooltip(node, label, shown, info)
        rects.append((depth, x, v, ident_n, parent, cls, fill, tip, label))
        depth_max = max(depth_max, depth)
        # the children, alphabetically, left-aligned; the narrow ones merged
        kids = sorted(node.kids.values(), key=lambda k: frame_label(k.frame or ("", "")))
        wide = [k for k in kids if k.vals[drawn] > cut]
        narrow = [k for k in kids if k.vals[drawn] <= cut]
        at = x
        queued = []
        for k in wide:
            queued.append((k, at, depth + 1, ident_n))
            at += k.vals[drawn]
        todo.extend(reversed(queued))
        n_narrow = node.narrow_n + len(narrow)
        others = [node.narrow_vals[j] + sum(k.vals[j] for k in narrow) for j in range(len(shown))]
        rest = others[drawn]
        if n_narrow and rest >= min_width * total and rest > 0:
            n_id = f"{ident}-n{len(rects)}"
            tip = f"[{n_narrow} narrow frames] (each below {cut / total * 100:.2g}% of the graph)"
            tip += _shares(shown, others)
            rects.append(
                (
                    depth + 1,
                    at,
                    rest,
                    n_id,
                    ident_n,
                    "f narrow",
                    NARROW_FILL,
                    tip,
                    f"[{n_narrow} narrow]",
                )
            )
            depth_max = max(depth_max, depth + 1)

    height = PAD_TOP + (depth_max + 1) * FRAME_H + PAD_BOTTOM
    for depth, x, v, fid, parent, cls, fill, tip, label in rects:
        px = PAD_X + x / total * inner
        w = v / total * inner
        y = height - PAD_BOTTOM - (depth + 1) * FRAME_H
        chars = int((w - 6) / CHAR_PX)
        text = ""
        if chars >= 4:
            text = (
                f'<text x="{px + 3:.1f}" y="{y + FRAME_H - 4.5:.1f}">'
                f"{_e(_clip(label, chars))}</text>"
            )
        p_attr = f' data-p="{parent}"' if parent else ""
        frames.append(
            f'<g class="{cls}" id="{fid}"{p_attr}><title>{_e(tip)}</title>'
            f'<rect x="{px:.1f}" y="{y}" width="{w:.1f}" height="{FRAME_H - 1}" '
            f'fill="{fill}" rx="2"/>{text}</g>'
        )
    legend = _legend(direction, shown, base, side, cmp, min_width)
    head = (
        "<svg"
        + (' xmlns="http://www.w3.org/2000/svg"' if standalone else "")
        + f' class="flamegraph" id="{_e(ident)}" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{_e(clean(title))}">'
        f"<style>.flamegraph text{{font-family:Menlo,Consolas,'DejaVu Sans Mono',monospace;"
        f"font-size:{FONT_PX}px;fill:#000}} .flamegraph .f:hover rect{{stroke:#000;"
        f"stroke-width:1}} .flamegraph .dk text{{fill:#fff}} .flamegraph .hd{{font-size:14px}}"
        "</style>"
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fdfdf8"/>'
        f'<text class="hd" x="{PAD_X}" y="18">{_e(clean(title))}</text>'
        + "".join(
            f'<text x="{PAD_X}" y="{34 + 14 * i}">{_e(line)}</text>'
            for i, line in enumerate(legend)
        )
    )
    return head + "".join(frames) + "</svg>"


def _threshold(root: _Node, drawn: int, floor: float, max_frames: int) -> float:
    """The width (share) a frame must exceed to be drawn: below ``floor`` never; when
    more than ``max_frames`` frames reach it, the width of the first one left out (a
    frame is never wider than its caller, so the kept frames keep their callers)."""
    values: list[float] = []
    todo = [root]
    while todo:
        node = todo.pop()
        for k in node.kids.values():  # (all at least ``floor`` wide)
            values.append(k.vals[drawn])
            todo.append(k)
    cut = floor - 1e-15  # "> cut" keeps the frames at the floor
    room = max_frames - 1  # the root is always drawn
    if len(values) > room:
        values.sort(reverse=True)
        # the frames wider than the widest left out: at most ``room`` of them
        cut = max(cut, values[room] if room >= 0 else math.inf)
    return cut


def _tooltip(node: _Node, label: str, shown: list[str], info: str) -> str:
    if node.frame is None:
        name = label
    else:
        name = f"{clip_name(clean(node.frame[1]) or '?')} ({clip_dso(node.frame[0])})"
    tip = name + _shares(shown, node.vals)
    if node.frame is not None and node.frame[1] == UNKNOWN:
        tip += "\n(consecutive unnamed frames of this DSO are drawn as one)"
    return tip + ("\n" + info if info else "")


def _shares(shown: list[str], vals: list[float]) -> str:
    """``  base 1.00%  new 3.00%  (+2.00 pp)``: each side's share of a frame's path."""
    out = "".join(f"  {clean(s)} {v * 100:.2f}%" for s, v in zip(shown, vals))
    if len(shown) == 2:
        out += f"  ({(vals[1] - vals[0]) * 100:+.2f} pp)"
    return out


def clip_name(name: str) -> str:
    return _clip(name, NAME_CHARS)


def clip_dso(dso: str) -> str:
    return _clip(clean(dso), DSO_CHARS)


def _legend(direction, shown, base, side, cmp, min_width) -> list[str]:
    """The two lines under the title: what the widths are, what the colours are."""
    drawn = side if direction != BEFORE else base
    first = (
        f"width: share of {clean(drawn)}'s samples (frames under {min_width * 100:g}% "
        "merged or left out); hover a frame for "
        + ("both sides' shares of its path" if len(shown) == 2 else "its share")
    )
    rule = f"q < {cmp.alpha:g} and |change| >= {cmp.min_effect:g} pp"
    if direction is None:
        second = "no comparison: nothing coloured"
    else:
        what = "red: grew" if direction == AFTER else "blue: shrank"
        second = (
            f"{what} significantly (self or children share, {rule}), deeper = larger change;"
            " beige: not significant"
        )
    return [first, second]


__all__ = ["svg", "tree", "functions", "AFTER", "BEFORE", "MIN_WIDTH", "MAX_FRAMES"]
