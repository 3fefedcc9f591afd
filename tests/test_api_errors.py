"""The API speaks API (issue #22, item 4).

A bad parameter of an API entry point raises :class:`schedwake.errors.OptionError` (a
ValueError and a TraceError) whose message names the API's own parameter (``samples``,
``thresholds``, ``pids``), never a command-line option; the CLI, for the same mistake,
prints one line naming its option (the ``OPTION_OF`` mapping of schedwake/cli/common.py) and
exits with code 2. Caveats, shown by every front-end, name no option either. Real
sample traces (tests/conftest.py: ``sample``).
"""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

import schedwake
from schedwake.batch import label_columns
from schedwake.cli import OPTION_OF, cli
from schedwake.detect import detect
from schedwake.errors import OptionError, TraceError
from schedwake.model import MODEL_EVENTS

from .conftest import sample

IDLE = str(sample("idle-sleep.dat"))  # 2 CPUs, 2 s
A = str(sample("iterations/dbench-xfs-1c-i1.dat"))  # 2 CPUs, 1 s
B = str(sample("iterations/dbench-xfs-1c-i2.dat"))

#: anything that looks like a command-line option in a message
OPTION = re.compile(r"(?<![\w-])--[a-z]")


@pytest.fixture(scope="module")
def idle():
    return schedwake.load(IDLE, events=list(MODEL_EVENTS))


def _refused(call, param: str) -> OptionError:
    """``call()`` raises an OptionError about ``param`` whose text names no option."""
    with pytest.raises(OptionError) as info:
        call()
    exc = info.value
    assert isinstance(exc, ValueError) and isinstance(exc, TraceError)
    assert exc.param == param, str(exc)
    assert str(exc).startswith(param), str(exc)
    assert not OPTION.search(str(exc)), str(exc)
    assert "\n" not in str(exc)
    return exc


def test_load_and_read_name_their_parameters():
    _refused(lambda: schedwake.load(IDLE, reader="nope"), "reader")
    _refused(lambda: schedwake.load(IDLE, jobs=0), "jobs")
    _refused(lambda: schedwake.load(IDLE, jobs="2"), "jobs")
    # a string is not a list of names: it would be read letter by letter
    exc = _refused(lambda: schedwake.load(IDLE, events="sched_switch"), "events")
    assert "list of event names" in exc.problem
    _refused(lambda: schedwake.load(IDLE, events=[1, 2]), "events")
    _refused(lambda: schedwake.load(IDLE, input_format="pcap"), "input_format")
    # a tuple or a generator of names is a list of names
    t = schedwake.load(IDLE, events=(e for e in ("sched_switch",)))
    assert t.events == ["sched_switch"]


def test_read_options_are_checked_in_one_place(tmp_path):
    """schedwake.ingest.ReadOptions checks what load and convert take, when made: the
    same mistake gets the same message from both (jobs above MAX_JOBS included); the
    events are kept as plain names, None is the default reader."""
    from schedwake.convert import convert
    from schedwake.ingest import DEFAULT_READER, MAX_JOBS, ReadOptions

    for kwargs, param in (
        ({"reader": "nope"}, "reader"),
        ({"jobs": 0}, "jobs"),
        ({"jobs": True}, "jobs"),
        ({"jobs": MAX_JOBS + 1}, "jobs"),
        ({"events": "sched_switch"}, "events"),
        ({"input_format": "pcap"}, "input_format"),
    ):
        made = _refused(lambda kw=kwargs: ReadOptions(**kw), param)
        by_load = _refused(lambda kw=kwargs: schedwake.load(IDLE, **kw), param)
        by_convert = _refused(lambda kw=kwargs: convert(IDLE, tmp_path / "out", **kw), param)
        assert str(made) == str(by_load) == str(by_convert)
    assert not (tmp_path / "out").exists()
    o = ReadOptions(events=("sched:sched_switch", "sched_waking"), jobs=MAX_JOBS)
    assert (o.events, o.reader, o.jobs) == (
        ["sched_switch", "sched_waking"],
        DEFAULT_READER,
        MAX_JOBS,
    )


def test_detect_and_analyze_name_thresholds_and_detectors(idle):
    exc = _refused(lambda: detect(idle, {"nope": 1}), "thresholds")
    assert exc.problem.startswith("unknown threshold 'nope'")
    _refused(lambda: detect(idle, pingpong_min_episodes="many"), "thresholds")
    _refused(lambda: detect(idle, detectors=["nope"]), "detectors")
    _refused(lambda: schedwake.analyze(idle, {"nope": 1}), "thresholds")
    _refused(lambda: schedwake.analyze(idle, {"iwr_min_share": float("nan")}), "thresholds")


def test_compare_names_its_parameters():
    _refused(lambda: schedwake.compare([A, B], samples="x"), "samples")
    _refused(lambda: schedwake.compare([A, B], significance="bogus"), "significance")
    _refused(lambda: schedwake.compare([A, B], metrics=["nonsense"]), "metrics")
    _refused(lambda: schedwake.compare([A, B], labels=["a"]), "labels")
    _refused(lambda: schedwake.compare([A, B], labels=["a", "a"]), "labels")


def test_focus_checks_pids_against_the_trace(idle):
    t = schedwake.load(IDLE, events=list(MODEL_EVENTS))
    exc = _refused(lambda: t.focus([999999]), "pids")
    assert exc.value == "999999" and "no task with pid 999999" in exc.problem
    _refused(lambda: t.focus([-1]), "pids")
    _refused(lambda: t.focus(["12"]), "pids")
    _refused(lambda: t.focus([]), "pids")
    _refused(lambda: t.focus(12), "pids")
    # a pid the trace shows running is accepted, and the refused calls left no focus
    assert t.model.pids is None
    pid = int(idle.table("sched_switch").column("next_pid").to_numpy().max())
    assert t.focus([pid]).model.pids == frozenset({pid})
    assert any(f"of pid(s) {pid};" in c for c in t.model.caveats)
    assert not any(OPTION.search(c) for c in t.model.caveats)


def test_waits_need_a_focused_trace():
    t = schedwake.load(IDLE, events=list(MODEL_EVENTS))
    exc = _refused(lambda: schedwake.analyze(t, waits=True), "waits")
    assert "trace.focus(pids)" in exc.problem
    assert _cli("analyze", IDLE, "--waits") == (
        "Error: --waits: needs --pid: the tasks whose waits to explain"
    )


def test_llc_lists_name_llc():
    t = schedwake.load(IDLE, events=list(MODEL_EVENTS))
    exc = _refused(lambda: t.use_topology(None, ["0-99999999"]), "llc")
    assert exc.value == "0-99999999" and "the trace has CPUs 0-1" in exc.problem
    exc = _refused(lambda: t.use_topology(None, ["0-1", "1"]), "llc")
    assert "CPU(s) 1 in more than one group" in exc.problem
    assert _cli("analyze", IDLE, "--llc", "0-1", "--llc", "1").startswith(
        "Error: --llc: topology 'llc': CPU(s) 1 in more than one group"
    )


def test_a_slice_caveat_names_no_option(idle):
    first = idle.meta.first_ts_ns
    part = idle.sliced(first, first + 500_000_000, [0])
    said = [w for w in part.meta.warnings if w.startswith("analysed only the events")]
    lo, hi = first / 1e9, (first + 500_000_000) / 1e9
    assert len(said) == 1
    assert said[0].startswith(f"analysed only the events from {lo:.6f} to {hi:.6f} s and on CPUs 0")
    assert not OPTION.search(said[0])
    with pytest.raises(TraceError) as info:  # nothing left: the file and the slice
        idle.sliced(first - 10**9, first - 1)
    assert not OPTION.search(str(info.value))


def test_batch_names_its_parameters():
    _refused(lambda: label_columns(["a"], "(a"), "label_from")
    _refused(lambda: label_columns(["a"], "a"), "label_from")


def _cli(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args], prog_name="schedwake")
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2, (args, result.stdout, result.stderr)
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["analyze", IDLE, "--threshold", "nope=1"],
            "Error: --threshold: unknown threshold 'nope'",
        ),
        (["analyze", IDLE, "--threshold", "nope"], "Error: --threshold: expected name=value"),
        (["analyze", IDLE, "--pid", "999999"], "Error: --pid 999999: no task with pid 999999 "),
        (["compare", A, B, "--metric", "nonsense"], "Error: --metric: unknown metric"),
        (["compare", A, B, "--label", "a", "--label", "a"], "Error: --label: side label(s) a"),
        (["batch", A, "-o", "{tmp}/o", "--label-from", "(a"], "Error: --label-from: not a regular"),
    ],
)
def test_the_cli_names_the_option_of_the_same_mistake(args, line, tmp_path):
    got = _cli(*[str(a).replace("{tmp}", str(tmp_path)) for a in args])
    assert got.startswith(line), got


def test_every_parameter_the_cli_maps_is_an_option():
    assert all(v.startswith("--") and not k.startswith("-") for k, v in OPTION_OF.items())
    # the one line of an OptionError the CLI gets from the API: the option, never the param
    from schedwake.cli import option_error_line

    assert option_error_line(OptionError("samples", "'x'", "must be one of ...")) == (
        "Error: --samples 'x': must be one of ..."
    )
    assert option_error_line(OptionError("thresholds", None, "unknown threshold 'x'")) == (
        "Error: --threshold: unknown threshold 'x'"
    )
