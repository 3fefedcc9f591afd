"""The libtracecmd reader's time limit (schedwake/ingest/libtracecmd.py): the base a
file gets comes from $SCHEDWAKE_LIBTRACECMD_STALL_S when it is set, and a value that is
no positive number of seconds is refused in one line naming the variable."""

from __future__ import annotations

import pytest

import schedwake
from schedwake.ingest import libtracecmd


def test_the_variable_replaces_the_base(monkeypatch):
    monkeypatch.delenv(libtracecmd.STALL_ENV, raising=False)
    assert libtracecmd._stall_base_s() == libtracecmd.STALL_BASE_S
    monkeypatch.setenv(libtracecmd.STALL_ENV, "2.5")
    assert libtracecmd._stall_base_s() == 2.5


@pytest.mark.parametrize("value", ["", "soon", "0", "-3", "nan"])
def test_a_bad_value_is_one_line_naming_the_variable(monkeypatch, dbench1, value):
    monkeypatch.setenv(libtracecmd.STALL_ENV, value)
    with pytest.raises(schedwake.TraceError) as err:
        schedwake.load(dbench1, reader="libtracecmd")
    assert str(err.value) == (
        f"SCHEDWAKE_LIBTRACECMD_STALL_S: must be a positive number of seconds, not {value!r}"
    )
