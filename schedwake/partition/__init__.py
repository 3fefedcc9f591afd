"""One trace analysed in time parts (docs/design-partitioned-analysis.md).

A part of a trace is analysed on its own events and a prelude of real events before it
that rebuilds the state at its start (:mod:`.prelude`); the model of the part gives the
rows of the whole trace's model tables that it owns (:mod:`.parts`), equal to them. A
file is read in parts by time range, never whole (:mod:`.passes`), and the passes over
its parts run here or on a Dask cluster (:mod:`.driver`: :func:`plan`); the metrics from
the parts' partials are :mod:`schedwake.analysis.partials`'s. Not yet built: the
detectors' carry and the command (the design's 'What is left').
"""

from ..model import in_span
from .driver import Plan, plan
from .parts import (
    OWNED_BY,
    model_table,
    model_tables,
    owned_mask,
    owned_masks,
    owned_rows,
    part_of,
)
from .passes import PartSpec, read_part
from .prelude import carried_rows

__all__ = [
    "OWNED_BY",
    "PartSpec",
    "Plan",
    "carried_rows",
    "in_span",
    "model_table",
    "model_tables",
    "owned_mask",
    "owned_masks",
    "owned_rows",
    "part_of",
    "plan",
    "read_part",
]
