"""What the model of one time part of a trace is told of the whole trace
(docs/design-partitioned-analysis.md, 'What crosses a cut').

A part of a trace (:mod:`schedwake.partition`) holds its own events and a *prelude*: the
real events before its start that rebuild the state there. Two facts the model reads
are not states at a time but facts of the whole trace, which no prelude can carry:

* the **lives** of the pids (:mod:`.lives`): where a pid passes to a new task, which the
  model learns from events on both sides of the boundary (a birth after events of the
  pid is a boundary only because of what came before it; a task's time ends where its
  pid's next life begins, which may be after the part);
* the woken tasks' **waits beyond the part**: a wait that a cut falls in is in the
  part's occupancy only once its run is seen, and a part reads on past its end for
  such runs only so far (:func:`schedwake.partition.parts.wait_limit`); the waits of
  tasks run later than that are another part's rows, given to this part's
  occupancy so that what counts the waits at an instant of the part counts them all
  (:func:`.occupancy.with_waits`);
* the tasks the trace shows **running unseen** (a ``rewoken`` contradiction anywhere
  in the trace, :mod:`.completeness`): none of their waits after a wake-up is proven,
  before or after the contradiction (:mod:`.task_states`). None when the trace shows
  every switch (complete).

:meth:`schedwake.model.Model.facts_for_parts` takes them from a model of the whole
trace (what the tests compare against; the partitioned analysis will fold them from its
parts' first pass).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .lives import Lives


@dataclass(frozen=True)
class WholeFacts:
    """The whole trace's facts a part's model uses instead of its own."""

    #: Where each pid used again passes to its next task.
    lives: Lives
    #: Life keys of the tasks shown running unseen anywhere in the trace (sorted), None
    #: when the whole trace is complete.
    unseen_tasks: np.ndarray | None
    #: The woken waits (occupancy rows of another part: columns cpu, start_ts, end_ts,
    #: pid, comm) that cross the part and whose runs come after the last of its events
    #: (None: none).
    waits_beyond: pd.DataFrame | None = None
