"""Flame graphs of a profile comparison as inline SVG, drawn in Python (no script, no
library, nothing fetched).

A side's stacks (:attr:`schedwake.profile.compare.ProfileComparison.stacks`, own
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
    """The flame graph of a :class:`~schedwake.profile.compare.ProfileComparison` as
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
    g = graph(cmp, side, direction, min_width)
    total = float(cmp.stacks[g.shown[g.drawn]]["share"].sum()) or 1.0
    root = tree([cmp.stacks[s] for s in g.shown], g.drawn, min_width * total, unknown_runs)
    cut = _threshold(root, g.drawn, min_width * total, max_frames)
    frames = layout(root, g, cut, total, min_width * total, ident)
    legend = _legend(direction, g.shown, g.base, g.side, cmp, min_width)
    title = g.title if title is None else title
    return _svg_text(frames, total, legend, title, width, ident, standalone)


@dataclass(frozen=True)
class Graph:
    """What one flame graph draws (:func:`graph`): the sides it shows (one, or the
    baseline and a side), which of them gives the widths (``drawn``, an index of
    ``shown``), the functions' test results (empty for a plain graph), each function's
    significant change in the graph's direction (pp) and the largest of them."""

    base: str
    side: str
    direction: str | None
    shown: list[str]
    drawn: int
    funcs: dict[tuple[str, str], _Function]
    scale: dict[tuple[str, str], float]
    top_change: float

    @property
    def title(self) -> str:
        if self.direction is None:
            return f"{self.side}"
        if self.direction == AFTER:
            return f"{self.side}: after, coloured by what grew (vs {self.base})"
        return f"{self.base}: before, coloured by what shrank (vs {self.side})"


def graph(cmp, side: str | None, direction: str | None, min_width: float) -> Graph:
    """What the graph of ``side`` in ``direction`` draws (see :func:`svg`); a ValueError
    for a side, direction or ``min_width`` it cannot draw."""
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
        return Graph(base, side, None, [side], 0, {}, {}, 1.0)
    funcs = functions(cmp, side)
    scale = {k: f.change(direction) for k, f in funcs.items()}
    top = max(scale.values(), default=0.0) or 1.0
    return Graph(base, side, direction, [base, side], 1 if direction == AFTER else 0, funcs,
                 scale, top)  # fmt: skip


@dataclass(frozen=True)
class Frame:
    """A frame as drawn: its depth (0: the root), left edge and width (shares of the
    drawn side), id and its caller's (``parent``, "" for the root), CSS class, fill,
    tooltip and label."""

    depth: int
    x: float
    width: float
    ident: str
    parent: str
    cls: str
    fill: str
    tip: str
    label: str


def frame_style(frame: tuple[str, str] | None, label: str, g: Graph) -> tuple[str, str, str]:
    """(CSS class, fill, the function's test results for the tooltip) of a frame:
    coloured by its function's significant change in the graph's direction, relative
    to the largest (``dk``: deep, for white labels), else a beige picked by its label."""
    f = g.funcs.get(frame) if frame is not None else None
    if f is None:
        return "f", neutral(label), ""
    c = g.scale.get(frame, 0.0) if frame is not None else 0.0
    if c <= 0:
        return "f", neutral(label), f.describe()
    cls = "f grew" if g.direction == AFTER else "f shrank"
    if c / g.top_change > 0.6:
        cls += " dk"  # a deep colour: white labels
    return cls, hot(g.direction or AFTER, c / g.top_change), f.describe()


def layout(
    root: _Node, g: Graph, cut: float, total: float, floor: float, ident: str
) -> list[Frame]:
    """The frames of the tree ``root``, in drawing order: each frame's children wider
    than ``cut`` alphabetically, left-aligned above it; the narrower ones (and those
    :func:`tree` only counted) as one merged frame when together at least ``floor``.
    ``total``: the drawn side's whole share (the merged frames' tooltips say how narrow
    a frame is, of it)."""
    drawn = g.drawn
    out: list[Frame] = []
    # (node, x share, depth, parent id); iterative (stacks can be deep)
    todo: list[tuple[_Node, float, int, str]] = [(root, 0.0, 0, "")]
    while todo:
        node, x, depth, parent = todo.pop()
        ident_n = f"{ident}-{len(out)}"
        label = "all" if node.frame is None else frame_label(node.frame)
        cls, fill, info = frame_style(node.frame, label, g)
        tip = _tooltip(node, label, g.shown, info)
        out.append(Frame(depth, x, node.vals[drawn], ident_n, parent, cls, fill, tip, label))
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
        others = [node.narrow_vals[j] + sum(k.vals[j] for k in narrow) for j in range(len(g.shown))]
        rest = others[drawn]
        if n_narrow and rest >= floor and rest > 0:
            tip = f"[{n_narrow} narrow frames] (each below {cut / total * 100:.2g}% of the graph)"
            tip += _shares(g.shown, others)
            out.append(
                Frame(depth + 1, at, rest, f"{ident}-n{len(out)}", ident_n, "f narrow",
                      NARROW_FILL, tip, f"[{n_narrow} narrow]")
            )  # fmt: skip
    return out


def _svg_text(
    frames: list[Frame],
    total: float,
    legend: list[str],
    title: str,
    width: int,
    ident: str,
    standalone: bool,
) -> str:
    inner = width - 2 * PAD_X
    height = PAD_TOP + (max(f.depth for f in frames) + 1) * FRAME_H + PAD_BOTTOM
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
    return head + "".join(_frame_svg(f, total, inner, height) for f in frames) + "</svg>"


def _frame_svg(f: Frame, total: float, inner: float, height: int) -> str:
    px = PAD_X + f.x / total * inner
    w = f.width / total * inner
    y = height - PAD_BOTTOM - (f.depth + 1) * FRAME_H
    chars = int((w - 6) / CHAR_PX)
    text = ""
    if chars >= 4:
        text = (
            f'<text x="{px + 3:.1f}" y="{y + FRAME_H - 4.5:.1f}">{_e(_clip(f.label, chars))}</text>'
        )
    p_attr = f' data-p="{f.parent}"' if f.parent else ""
    return (
        f'<g class="{f.cls}" id="{f.ident}"{p_attr}><title>{_e(f.tip)}</title>'
        f'<rect x="{px:.1f}" y="{y}" width="{w:.1f}" height="{FRAME_H - 1}" '
        f'fill="{f.fill}" rx="2"/>{text}</g>'
    )


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


__all__ = [
    "svg",
    "tree",
    "functions",
    "graph",
    "layout",
    "frame_style",
    "AFTER",
    "BEFORE",
    "MIN_WIDTH",
    "MAX_FRAMES",
]
