"""The occupancy's woken waits end where the wake-ups' runs say when the wake-ups found
them in the same runs (a whole trace whose pids each name one task: their
``run_from_ts``, not a second search of the runs), exactly as the search ends them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import schedwake
from schedwake.model import occupancy

DATA = Path(__file__).resolve().parents[1] / "sample_traces"


@pytest.mark.parametrize("name", ["dbench-xfs-1client.dat", "fio-pinned-weighted.dat"])
def test_woken_waits_as_the_search_ends_them(name, monkeypatch):
    m = schedwake.load(DATA / name).model
    assert not m.events.lives  # (the case it takes the wake-ups' runs for)
    args = (m.events, m.all_wakeups, m.completeness, m._wait_migrations, None)
    found = occupancy.build(*args)
    searched = []
    call = occupancy._WaitEnds.__call__

    def search(self, start, pid, moved_after=None, run_from=None):
        searched.append(run_from is not None)
        return call(self, start, pid, moved_after, None)

    monkeypatch.setattr(occupancy._WaitEnds, "__call__", search)
    pd.testing.assert_frame_equal(found, occupancy.build(*args))
    assert searched[0]  # (the woken waits were given their runs' starts)
