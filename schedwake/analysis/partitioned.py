"""The analysis of one trace from its time parts (docs/design-partitioned-analysis.md,
'Metrics and findings'): what each part gives (:func:`part_summary`, run where the
part is, on a Dask worker) and how the client joins the parts' summaries into the
sections of the whole trace's analysis (:class:`Joined`), equal to them.

A part's summary is small: sums per task, CPU and kind, a task's name, counts; never
its events nor its model's rows. Each part counts only the rows it owns
(:func:`schedwake.partition.owned_rows`), so that every row of the whole trace's model
is counted once.

Built so far (tests/test_partition_analysis.py): the trace's facts and completeness
(``trace`` section, without its waits), the topology and the task states
(``task_states``). Not yet: the metrics, the findings, the caveats and the waits
explained (the design's 'What is left').
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..model.completeness import Told
from ..model.task_states import StateSums, focused, joined_names, last_names, summary_of
from ..partition import owned_rows
from ..summary import completeness_told, meta_summary
from . import topology_facts

if TYPE_CHECKING:
    from ..partition import PartSpec, Plan
    from ..trace import Trace


@dataclass(frozen=True)
class PartSummary:
    """What one part gives the client (:func:`part_summary`)."""

    #: The part's share of the trace's completeness, and its contradictions (the
    #: columns that are counted of them: cpu, kind, count).
    told: Told
    breaks: pd.DataFrame
    #: The ns of the task states it owns, per task, (task, CPU) and CPU.
    states: StateSums
    #: Each task's last name in the part, per source of names.
    names: list[dict[int, str]]


def part_summary(part: Trace, spec: PartSpec) -> PartSummary:
    """The summary of the part ``part`` read from ``spec``
    (:meth:`schedwake.partition.Plan.map`)."""
    model = part.model
    t0, t1 = spec.t0, spec.t1
    owned = owned_rows(model, t0, t1, ("breaks", "timeline", "task_states"))
    breaks, timeline = owned["breaks"], owned["timeline"]
    comp = model.completeness
    unknown = timeline[(timeline["state"] == "unknown").to_numpy()]
    unknown_ns = (unknown["end_ts"] - unknown["start_ts"]).groupby(unknown["cpu"]).sum()
    told = Told(
        counts=pd.DataFrame(),  # (counted once, of every part's breaks: Told.add)
        unknown_ns={int(c): int(n) for c, n in unknown_ns.items()},
        first_switch=dict(comp.first_switch),
        t_end=int(comp.t_end),
        complete=len(breaks) == 0 and len(unknown) == 0,
    )
    return PartSummary(
        told=told,
        breaks=breaks[["cpu", "kind", "count"]].copy(),
        states=StateSums.of(focused(model, owned["task_states"])),
        names=last_names(model.events, t0, t1),
    )


@dataclass(frozen=True)
class Joined:
    """The sections of the whole trace's analysis from its parts' summaries."""

    plan: Plan
    parts: Sequence[PartSummary]

    def told(self) -> Told:
        """The whole trace's completeness, as the reports tell it."""
        breaks = pd.concat([p.breaks for p in self.parts], ignore_index=True)
        return Told.add([p.told for p in self.parts], breaks)

    def trace_facts(self) -> dict[str, Any]:
        """The ``trace`` section's facts, completeness and topology
        (:meth:`schedwake.analysis.Analysis.to_dict`, without its waits)."""
        meta = self.plan.meta
        switches = meta.event_counts.get("sched_switch", 0) > 0
        return {
            **meta_summary(meta),
            "completeness": completeness_told(self.told()) if switches else None,
            "topology": topology_facts(self.plan.topology),
        }

    def names(self) -> dict[int, str]:
        """Each task's name (:func:`schedwake.model.task_states.comms`)."""
        return joined_names([p.names for p in self.parts])

    def task_states(self) -> dict[str, Any]:
        """The ``task_states`` section (:attr:`schedwake.analysis.Analysis.task_states`)."""
        return summary_of(StateSums.add([p.states for p in self.parts]), self.names())


def joined(plan: Plan) -> Joined:
    """Every part's summary (on the plan's cluster, or here), joined."""
    return Joined(plan, plan.map(part_summary))
