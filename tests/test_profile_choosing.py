"""Which samples a profile keeps and what it says could not be named, and which values
a comparison of profiles tests, apart from how they are computed and shown:
schedwake/profile/__init__.py's sample_mask and unresolved_shares, profile_compare.py's
function_keys and per_run_values, fed hand-made tables and profiles."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from schedwake.errors import OptionError
from schedwake.profile import sample_mask, unresolved_shares
from schedwake.profile.compare import function_keys, per_run_values
from schedwake.symbols.resolve import Resolved

# six samples: (comm, thread, process, cpu, ts)
SAMPLES = pa.table(
    {
        "common_comm": pa.array(["a", "b", "a", "c", "b", None]).dictionary_encode(),
        "common_pid": [10, 11, 12, 13, 14, 15],
        "pid": [10, 10, 12, 13, 14, 15],
        "cpu": [0, 1, 2, 3, 0, 1],
        "ts": [100, 200, 300, 400, 500, 600],
    }
)


def _kept(**filters) -> list[int]:
    mask, _ = sample_mask(SAMPLES, 4, **filters)
    return np.flatnonzero(mask).tolist()


def test_no_filter_keeps_every_sample():
    mask, filters = sample_mask(SAMPLES, 4)
    assert mask.all() and filters == {"comm": None, "pid": None, "cpu": None, "time": None}


def test_each_filter_alone():
    assert _kept(comm="a") == [0, 2]
    assert _kept(comm=["b", "c", "nobody"]) == [1, 3, 4]  # (a sample without a name: never)
    # a thread by its id, or every thread of a process by the process's
    assert _kept(pid=11) == [1]
    assert _kept(pid=10) == [0, 1]
    assert _kept(cpu=[0, 1]) == [0, 1, 4, 5]
    assert _kept(time=(200, 400)) == [1, 2, 3]  # inclusive
    assert _kept(time=(None, 200)) == [0, 1] and _kept(time=(500, None)) == [4, 5]


def test_filters_combine_and_are_said_sorted():
    mask, filters = sample_mask(
        SAMPLES, 4, comm=["b", "a"], pid=[14, 10], cpu=[1, 0], time=(150, None)
    )
    assert np.flatnonzero(mask).tolist() == [1, 4]
    assert filters == {"comm": ["a", "b"], "pid": [10, 14], "cpu": [0, 1], "time": [150, None]}


def test_a_time_filter_of_no_bounds_is_no_filter():
    mask, filters = sample_mask(SAMPLES, 4, time=(None, None))
    assert mask.all() and filters["time"] is None


@pytest.mark.parametrize(
    "filters, what",
    [({"cpu": 4}, "cpu"), ({"pid": -1}, "pid"), ({"pid": True}, "pid"), ({"time": (5, 1)}, "time")],
)
def test_filter_values_that_cannot_be(filters, what):
    with pytest.raises(OptionError, match=what):
        sample_mask(SAMPLES, 4, **filters)


def test_unresolved_shares_weigh_the_own_addresses_only():
    # frames: three own (one per sample) then two callchain frames
    is_self = np.array([True, True, True, False, False])
    reason = np.array(["stripped", "", "no map", "stripped", "no map"], dtype=object)
    res = Resolved(
        symbol=np.array(["[unknown]", "f", "[unknown]", "[unknown]", "[unknown]"], dtype=object),
        dso=np.array(["libx.so", "a.out", "anon", "liby.so", "anon"], dtype=object),
        reason=reason,
        unresolved={"stripped": 2, "no map": 5, "in chains only": 1},
        unresolved_dsos={"stripped": {"liby.so": 1, "libx.so": 1}, "no map": {"anon": 5}},
    )
    own_period = np.array([30.0, 50.0, 20.0])  # the three samples' periods
    got = unresolved_shares(res, own_period, is_self, 100.0)
    assert got == {
        # by share of the period first: 30 / 100, then 20 / 100
        "stripped": {"addresses": 2, "self_share": 0.3, "dsos": ["libx.so", "liby.so"]},
        "no map": {"addresses": 5, "self_share": 0.2, "dsos": ["anon"]},
        "in chains only": {"addresses": 1, "self_share": 0.0, "dsos": []},
    }
    assert list(got) == ["stripped", "no map", "in chains only"]
    assert unresolved_shares(res, own_period, is_self, 0.0)["stripped"]["self_share"] == 0.0


# -- compare_profiles: which functions, and their values per run ------------------------
def _profile(funcs: dict[str, tuple[int, int]], total: int, event: str = "cpu-clock:ppp"):
    """A run's profile: symbol -> (self period, children period), all in one DSO."""
    from schedwake.profile import Profile

    rows = pd.DataFrame(
        {
            "symbol": list(funcs),
            "dso": ["[kernel.kallsyms]"] * len(funcs),
            "samples": [1] * len(funcs),
            "self_share": [s / total for s, _ in funcs.values()],
            "children_share": [c / total for _, c in funcs.values()],
            "self_period": [s for s, _ in funcs.values()],
            "children_period": [c for _, c in funcs.values()],
            "level": ["k"] * len(funcs),
        }
    )
    return Profile(rows, "run.data", event, len(funcs), total, True, "")


SIDES = {
    "base": [_profile({"f": (20, 50), "g": (10, 10)}, 100), _profile({"f": (30, 60)}, 200)],
    "new": [_profile({"h": (5, 5), "f": (40, 40)}, 50)],
}


def test_function_keys_are_every_function_once_in_the_order_first_seen():
    keys = function_keys(SIDES)
    assert keys["symbol"].tolist() == ["f", "g", "h"]
    assert keys.index.tolist() == [0, 1, 2]


def test_per_run_values_are_shares_of_each_run_and_0_where_unseen():
    keys = function_keys(SIDES)
    values, base_cost = per_run_values(keys, SIDES, None)
    assert set(values) == {"self_share", "children_share"} and base_cost is None
    # functions f, g, h (rows) x runs (columns)
    np.testing.assert_allclose(values["self_share"]["base"], [[0.2, 0.15], [0.1, 0], [0, 0]])
    np.testing.assert_allclose(values["children_share"]["base"], [[0.5, 0.3], [0.1, 0], [0, 0]])
    np.testing.assert_allclose(values["self_share"]["new"], [[0.8], [0], [0.1]])


def test_per_run_values_with_work_are_periods_per_unit_of_work_too():
    keys = function_keys(SIDES)
    work = {"base": np.array([10.0, 40.0]), "new": np.array([5.0])}
    values, base_cost = per_run_values(keys, SIDES, work)
    np.testing.assert_allclose(values["self_rate"]["base"], [[2, 0.75], [1, 0], [0, 0]])
    np.testing.assert_allclose(values["children_rate"]["new"], [[8], [0], [1]])
    assert base_cost == pytest.approx((100 / 10 + 200 / 40) / 2)  # the baseline's, per unit
