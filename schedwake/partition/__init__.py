"""One trace analysed in time parts (docs/design-partitioned-analysis.md).

A part of a trace is analysed on its own events and a prelude of real events before it
that rebuilds the state at its start (:mod:`.prelude`); the model of the part gives the
rows of the whole trace's model tables that it owns (:mod:`.parts`), equal to them.
Built so far: the prelude, the parts and the ownership of the model's tables (step 2 of
the design's order of building); the readers' time ranges, the facts folded from the
parts' first pass, the metrics' partials and the command are the next steps.
"""

from .parts import OWNED_BY, model_tables, owned_rows, part_of
from .prelude import carried_rows

__all__ = ["OWNED_BY", "carried_rows", "model_tables", "owned_rows", "part_of"]
