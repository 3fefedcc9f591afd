"""Profiles before and after, several runs a side: which functions really changed.

``perf diff`` compares one profile with one; a function's share moves from run to run
by itself (sampling, timing, what else ran), so one-to-one differences star noise.
Here each side is several runs (recordings of the same configuration), and a function
is *changed* only when the difference of its mean share is beyond the run-to-run
spread of both sides and large enough to matter::

    base = [schedwake.profile(schedwake.load(p)) for p in ("a1.data", "a2.data", "a3.data")]
    new = [schedwake.profile(schedwake.load(p)) for p in ("b1.data", "b2.data", "b3.data")]
    cmp = schedwake.compare_profiles({"base": base, "patched": new})
    cmp.rows[cmp.rows.significant_self]          # the functions whose self share moved

The method (docs/profile.md says why):

* Functions are (DSO, symbol) pairs, matched by name across runs and builds, never by
  address.  Per run: the function's self share and children share of that run's
  sample period (0 where the run never saw it).  With ``work`` (units of work each run
  did: operations, loops, bytes), also the period per unit of work: a share can move
  only because another function moved, a rate per unit of work cannot.
* Each measure is tested per function with Welch's t-test over the per-run values (the
  unit of replication is the run, so the test sees the real run-to-run variance;
  sample counts within one run are overdispersed by it and would star noise).
* The p-values of one measure over all functions tested are adjusted with
  Benjamini-Hochberg (false discovery rate ``alpha``).  A function is tested only when
  its mean over all runs reaches half the minimum effect (independent filtering: that
  mean does not depend on which side is which, so the selection keeps the FDR).
* Changes are in percentage points: of the run's period for shares; for rates, of the
  baseline's whole period per unit of work (a function whose cost per operation grew
  from 10% to 30% of what an operation cost before the patch: +20 pp), so one minimum
  effect serves both.
* A change is starred only when its adjusted p-value (q) is below ``alpha`` *and* it is
  at least ``min_effect`` percentage points: with many functions some tiny but steady
  shift is always "significant", and nobody wants to read it.
* Two sides: the second against the first; more sides: each against the first.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..compare import stats as st
from ..errors import OptionError
from . import Profile

#: The measures compared, in the order of the report.
MEASURES = ("self_share", "children_share", "self_rate", "children_rate")
#: Default minimum effect: percentage points of share (and percent of a rate).
MIN_EFFECT = 0.5
#: Default false discovery rate.
ALPHA = 0.05
#: Callers' trees: at most this many levels and this many callers per level.
CALLER_DEPTH = 6
CALLER_BRANCHES = 4


@dataclass
class ProfileComparison:
    """What :func:`compare_profiles` found.

    ``rows``: one row per function (``symbol``, ``dso``, ``level``), and per measure
    ``m`` in :data:`MEASURES` and side ``s``: ``m[s]`` the mean over the side's runs
    (shares 0..1, rates in the event's period units per unit of work); per measure and
    non-baseline side: ``m:change[s]`` (percentage points), ``m:p[s]`` (Welch),
    ``m:q[s]`` (Benjamini-Hochberg) and
    ``m:significant[s]``; NaN p/q where the function was not tested.  Rates only with
    ``work``.  Sorted by the largest self-share change, then children-share change.
    """

    sides: list[str]
    runs: dict[str, list[str]]  #: side -> the runs' paths
    event: str
    rows: pd.DataFrame
    alpha: float
    min_effect: float
    work: dict[str, list[float]] | None  #: side -> units of work per run, or None
    tested: dict[str, int]  #: measure -> functions tested
    caveats: list[str] = field(default_factory=list)
    #: side -> its runs' stacks summed: DataFrame ``frames`` (tuples of (dso, symbol),
    #: own function first), ``share`` (mean over runs of the stack's share)
    stacks: dict[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def baseline(self) -> str:
        return self.sides[0]

    @property
    def measures(self) -> list[str]:
        return [m for m in MEASURES if self.work is not None or m.endswith("_share")]

    def changed(self, measure: str = "self_share", side: str | None = None) -> pd.DataFrame:
        """The rows whose ``measure`` changed significantly on ``side`` (default: the
        last side), largest change first."""
        side = side or self.sides[-1]
        col = f"{measure}:change[{side}]"
        hit = self.rows[self.rows[f"{measure}:significant[{side}]"]]
        return hit.reindex(hit[col].abs().sort_values(ascending=False, kind="stable").index)

    def callers(self, symbol: str, dso: str | None = None, side: str | None = None) -> dict:
        """The tree of ``symbol``'s callers on ``side`` (default: every side), as
        ``perf report --children`` draws it under the function: ``{"share": its
        children share on the side, "callers": [{"symbol", "dso", "share", "callers":
        [...]}, ...]}``, shares of the side's period (mean over runs), at most
        :data:`CALLER_BRANCHES` callers a level (the rest summed as ``[other]``) and
        :data:`CALLER_DEPTH` levels."""
        sides = [side] if side else self.sides
        out = {}
        for s in sides:
            out[s] = callers_tree(self.stacks[s], symbol, dso)
        return out if side is None else out[side]


def compare_profiles(
    sides: Mapping[str, Sequence[Profile]],
    *,
    alpha: float = ALPHA,
    min_effect: float = MIN_EFFECT,
    work: float | Mapping[str, float | Sequence[float]] | None = None,
) -> ProfileComparison:
    """Compare the profiles of ``sides`` (name -> the runs' :class:`Profile`, in order;
    the first side is the baseline).  One side with one or more runs gives the means
    and spreads without tests.

    ``alpha``: the false discovery rate of the Benjamini-Hochberg adjustment (0 < alpha
    < 1).  ``min_effect``: the smallest change starred, in percentage points of share
    (>= 0).  ``work``: the units of work of every run (one number), of each side's runs
    (side -> number), or of each run (side -> one number per run); None: no rates.
    Raises :class:`OptionError` (a ValueError) naming the parameter that is wrong.
    """
    names = list(sides)
    event = _checked(sides, alpha, min_effect)
    work_of = _work_per_run(work, sides)
    keys = function_keys(sides)
    per_run, base_cost = per_run_values(keys, sides, work_of)
    measures = [m for m in MEASURES if m in per_run]
    rows = keys[["symbol", "dso", "level"]].copy()
    tested = {}
    for measure in measures:
        for name in names:
            rows[f"{measure}[{name}]"] = per_run[measure][name].mean(axis=1)
        scale = 100.0 if measure.endswith("_share") else 100.0 / (base_cost or 1.0)
        tested[measure] = _test_measure(
            rows, measure, per_run[measure], names, scale, alpha, min_effect
        )
    return ProfileComparison(
        sides=names,
        runs={name: [p.path for p in sides[name]] for name in names},
        event=event,
        rows=_sorted(rows, names),
        alpha=float(alpha),
        min_effect=float(min_effect),
        work=None if work_of is None else {k: v.tolist() for k, v in work_of.items()},
        tested=tested,
        caveats=_caveats(sides, names),
        stacks={name: _side_stacks(sides[name]) for name in names},
    )


def _checked(sides: Mapping[str, Sequence[Profile]], alpha, min_effect) -> str:
    """The event the profiles of ``sides`` sample, once the options are checked (see
    :func:`compare_profiles`): an OptionError naming the one that is wrong."""
    names = list(sides)
    if not names:
        raise OptionError("sides", "{}", "give at least one side")
    for name in names:
        if not sides[name]:
            raise OptionError("sides", name, "the side has no profiles")
    if isinstance(alpha, bool) or not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise OptionError("alpha", alpha, "must be between 0 and 1 (exclusive)")
    if isinstance(min_effect, bool) or not (
        isinstance(min_effect, (int, float)) and math.isfinite(min_effect) and min_effect >= 0
    ):
        raise OptionError("min_effect", min_effect, "must be a finite number >= 0")
    # one event, by its name without perf's modifiers (perf script prints cpu-clock for
    # the cpu-clock:ppp that a perf.data names)
    events = {p.event.split(":", 1)[0] for name in names for p in sides[name]}
    if len(events) > 1:
        raise OptionError(
            "sides",
            ", ".join(sorted(events)),
            "the profiles sample different events: compare runs of one event",
        )
    return sides[names[0]][0].event


def function_keys(sides: Mapping[str, Sequence[Profile]]) -> pd.DataFrame:
    """One row per function seen in any run of any side (``dso``, ``symbol``,
    ``level``), in the order first seen (the sides in order, each run's rows in order)."""
    keys = pd.concat(
        [p.rows[["dso", "symbol", "level"]] for name in sides for p in sides[name]]
    ).drop_duplicates(["dso", "symbol"], keep="first")
    return keys.reset_index(drop=True)


def per_run_values(
    keys: pd.DataFrame,
    sides: Mapping[str, Sequence[Profile]],
    work_of: Mapping[str, np.ndarray] | None,
) -> tuple[dict[str, dict[str, np.ndarray]], float | None]:
    """Each measure of each function of ``keys`` in each run: measure -> side ->
    (functions x runs), the shares always, the rates (period per unit of work) with
    ``work_of`` (side -> units of work per run); 0 where a run never saw the function.
    With the baseline's whole period per unit of work, mean over its runs (None
    without ``work_of``): the unit of the rates' changes."""
    index = pd.MultiIndex.from_frame(keys[["dso", "symbol"]])
    measures = [m for m in MEASURES if work_of is not None or m.endswith("_share")]
    per_run: dict[str, dict[str, np.ndarray]] = {m: {} for m in measures}
    base_cost = None
    for name, runs in sides.items():
        self_p = np.zeros((len(keys), len(runs)))
        child_p = np.zeros((len(keys), len(runs)))
        total = np.array([float(p.total_period) for p in runs])
        for j, p in enumerate(runs):
            at = index.get_indexer(pd.MultiIndex.from_frame(p.rows[["dso", "symbol"]]))
            self_p[at, j] = p.rows["self_period"].to_numpy(dtype=np.float64)
            child_p[at, j] = p.rows["children_period"].to_numpy(dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            per_run["self_share"][name] = self_p / total
            per_run["children_share"][name] = child_p / total
            if work_of is not None:
                per_run["self_rate"][name] = self_p / work_of[name]
                per_run["children_rate"][name] = child_p / work_of[name]
                if base_cost is None:
                    base_cost = float(np.mean(total / work_of[name]))
    return per_run, base_cost


def _work_per_run(work, sides) -> dict[str, np.ndarray] | None:
    """side -> units of work per run, checked: finite, from MIN_WORK to MAX_WORK (5e-324
    would make every rate infinite)."""
    from ..work import MAX_WORK, MIN_WORK

    if work is None:
        return None
    out = {}
    for name, runs in sides.items():
        w = work.get(name) if isinstance(work, Mapping) else work
        if w is None:
            raise OptionError("work", f"(side {name})", "no units of work given for this side")
        try:
            arr = np.atleast_1d(np.asarray(w, dtype=np.float64))
        except (TypeError, ValueError):
            raise OptionError("work", w, "must be a number, or one per run") from None
        if arr.size == 1:
            arr = np.repeat(arr, len(runs))
        if arr.size != len(runs):
            raise OptionError(
                "work", w, f"side {name!r} has {len(runs)} runs but {arr.size} units of work"
            )
        if not np.all(np.isfinite(arr) & (arr >= MIN_WORK) & (arr <= MAX_WORK)):
            raise OptionError(
                "work",
                w,
                f"units of work must be numbers from {MIN_WORK:g} to {MAX_WORK:g} (side {name!r})",
            )
        out[name] = arr
    return out


def _test_measure(rows, measure, values, names, scale, alpha, min_effect) -> int:
    """Add change (``scale`` times the difference of the means: percentage points),
    p, q and significant columns of ``measure`` for each non-baseline side; return how
    many functions were tested (the same on every side)."""
    base = values[names[0]]
    tested_n = 0
    for name in names[1:]:
        new = values[name]
        change = (new.mean(axis=1) - base.mean(axis=1)) * scale
        # independent filtering: the mean over both sides' runs, blind to the sides
        pooled = np.concatenate([base, new], axis=1).mean(axis=1) * scale
        testable = (pooled >= min_effect / 2.0) & (base.shape[1] >= 2) & (new.shape[1] >= 2)
        p = np.full(len(rows), np.nan)
        q = np.full(len(rows), np.nan)
        if testable.any():
            p[testable] = welch_p(base[testable], new[testable])
            q[testable] = benjamini_hochberg(p[testable])
        rows[f"{measure}:change[{name}]"] = change
        rows[f"{measure}:p[{name}]"] = p
        rows[f"{measure}:q[{name}]"] = q
        rows[f"{measure}:significant[{name}]"] = (
            testable & (np.nan_to_num(q, nan=1.0) < alpha) & (np.abs(change) >= min_effect)
        )
        tested_n = int(testable.sum())
    return tested_n


def welch_p(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Two-sided p-values of Welch's t-test, row by row, of ``a`` (functions x runs)
    against ``b``: unpooled standard error, Welch-Satterthwaite degrees of freedom.
    Zero spread on both sides: p 0 where the means differ, 1 where they do not."""
    na, nb = a.shape[1], b.shape[1]
    ma, mb = a.mean(axis=1), b.mean(axis=1)
    va, vb = a.var(axis=1, ddof=1) / na, b.var(axis=1, ddof=1) / nb
    se2 = va + vb
    p = np.where(ma == mb, 1.0, 0.0)
    spread = se2 > 0
    if spread.any():
        t = (mb[spread] - ma[spread]) / np.sqrt(se2[spread])
        df = se2[spread] ** 2 / (va[spread] ** 2 / (na - 1) + vb[spread] ** 2 / (nb - 1))
        p[spread] = np.asarray(st.t_two_sided_p(t, df), dtype=np.float64)
    return p


def benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (q-values) of ``p``, in its order."""
    p = np.asarray(p, dtype=np.float64)
    m = len(p)
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    ranked = p[order] * m / np.arange(1, m + 1)
    q_sorted = np.minimum.accumulate(ranked[::-1])[::-1]
    q = np.empty(m)
    q[order] = np.minimum(q_sorted, 1.0)
    return q


def _sorted(rows: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    if len(names) < 2:
        key = rows[f"self_share[{names[0]}]"]
        return rows.iloc[np.argsort(-key.to_numpy(), kind="stable")].reset_index(drop=True)
    self_eff = np.max([rows[f"self_share:change[{n}]"].abs().to_numpy() for n in names[1:]], axis=0)
    child_eff = np.max(
        [rows[f"children_share:change[{n}]"].abs().to_numpy() for n in names[1:]], axis=0
    )
    order = np.lexsort((rows["symbol"].to_numpy(), -child_eff, -self_eff))
    return rows.iloc[order].reset_index(drop=True)


def _side_stacks(runs: Sequence[Profile]) -> pd.DataFrame:
    """The runs' stacks by function names, each stack's share averaged over the runs
    (a run without the stack counts 0)."""
    parts = []
    for p in runs:
        names = list(zip(p.rows["dso"], p.rows["symbol"]))
        frames = [tuple(names[i] for i in f) for f in p.stacks["frames"]]
        share = p.stacks["period"].to_numpy(dtype=np.float64) / max(float(p.total_period), 1.0)
        parts.append(pd.DataFrame({"frames": frames, "share": share}))
    df = pd.concat(parts, ignore_index=True)
    out = df.groupby("frames", sort=False)["share"].sum() / len(runs)
    out = out.sort_values(ascending=False, kind="stable")
    return pd.DataFrame({"frames": out.index.to_list(), "share": out.to_numpy()})


def callers_tree(stacks: pd.DataFrame, symbol: str, dso: str | None = None) -> dict:
    """The callers' tree of a function in a side's stacks (see
    :meth:`ProfileComparison.callers`)."""

    def hit(frame) -> bool:
        return frame[1] == symbol and (dso is None or frame[0] == dso)

    # the path from the function (its innermost occurrence) outwards, per stack
    paths: list[tuple] = []
    weights: list[float] = []
    for frames, share in zip(stacks["frames"], stacks["share"]):
        for i, fr in enumerate(frames):
            if hit(fr):
                paths.append(tuple(frames[i + 1 : i + 1 + CALLER_DEPTH]))
                weights.append(float(share))
                break
    return {"share": float(sum(weights)), "callers": _grow(paths, weights, 0)}


def _grow(paths: list[tuple], weights: list[float], depth: int) -> list[dict]:
    by: dict[tuple, tuple[list, list]] = {}
    for path, w in zip(paths, weights):
        if len(path) <= depth:
            continue
        ps, ws = by.setdefault(path[depth], ([], []))
        ps.append(path)
        ws.append(w)
    ranked = sorted(by.items(), key=lambda kv: (-sum(kv[1][1]), kv[0]))
    out = []
    for (caller_dso, caller), (ps, ws) in ranked[:CALLER_BRANCHES]:
        out.append(
            {
                "symbol": caller,
                "dso": caller_dso,
                "share": float(sum(ws)),
                "callers": _grow(ps, ws, depth + 1),
            }
        )
    rest = sum(sum(ws) for _, (_, ws) in ranked[CALLER_BRANCHES:])
    if rest > 0:
        out.append({"symbol": "[other]", "dso": "", "share": float(rest), "callers": []})
    return out


def _caveats(sides, names) -> list[str]:
    """The sides too small to test, then the runs' own caveats: each kind once (its
    first wording), with how many runs share it."""
    out = []
    for name in names:
        runs = sides[name]
        if len(runs) < 3:
            out.append(
                f"side {name!r} has {len(runs)} run(s): run-to-run spread "
                + ("cannot be measured (nothing is tested)" if len(runs) < 2 else "is a guess")
                + "; record 3 or more"
            )
    # a kind: the caveat's words before its first ":" without numbers (the lists of
    # files and the counts after it differ from run to run)
    kinds: dict[str, tuple[str, int]] = {}  # kind -> its first wording, runs with it
    total = 0
    for name in names:
        for p in sides[name]:
            total += 1
            for c in dict.fromkeys(p.caveats):
                kind = re.sub(r"[0-9][0-9.,]*", "#", c.split(":", 1)[0])
                first, n = kinds.get(kind, (c, 0))
                kinds[kind] = (first, n + 1)
    for first, n in kinds.values():
        out.append(first if total == 1 else f"{first} (in {n} of the {total} runs)")
    return out


__all__ = [
    "ProfileComparison",
    "compare_profiles",
    "welch_p",
    "benjamini_hochberg",
    "callers_tree",
    "function_keys",
    "per_run_values",
    "MEASURES",
]
