"""The whole analysis of a trace file from its time parts (schedwake.analysis.partitioned:
analyze_parts, analyze_file; `schedwake analyze --partitions`): the JSON document equals
the whole trace's, section by section, on real recordings of each kind the range readers
read, at the index's cuts and at cuts that make parts shorter than the waits they fall
in (those parts are modelled again, given the waits: WholeFacts.waits_beyond); and what
the parts do not give yet is refused, never left out.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import schedwake
from schedwake import ingest
from schedwake.analysis import analyze
from schedwake.analysis.part_findings import JOINED
from schedwake.analysis.partials import NotJoinedError
from schedwake.analysis.partitioned import analyze_file, analyze_parts
from schedwake.jsonout import dumps
from schedwake.partition import plan
from schedwake.partition.driver import Kept, auto_parts

from .conftest import SAMPLES, run_cli_process
from .test_partition import longest_gaps, short_parts_inside
from .test_partition_file import TRACES


def whole_document(path: Path, detectors: list[str] | None = None) -> dict:
    return json.loads(dumps(analyze(schedwake.load(path), detectors=detectors).to_dict()))


def parts_document(path: Path, n: int, detectors: list[str] | None = None) -> dict:
    return json.loads(dumps(analyze_parts(plan(path, n), detectors=detectors).to_dict()))


def assert_same_document(got: dict, expected: dict) -> None:
    assert list(got) == list(expected)
    for section in expected:
        assert got[section] == expected[section], section


@pytest.mark.slow  # (whole real traces, a model per part)
@pytest.mark.parametrize("name", ["kstack-off", "lost-events", "guest16", "perf-sched-g"])
def test_the_document_from_the_parts(name: str) -> None:
    path = TRACES[name]
    expected = whole_document(path)
    for n in (2, 4):
        assert_same_document(parts_document(path, n), expected)


@pytest.mark.slow  # (a whole real trace, a model per part)
def test_parts_shorter_than_the_waits_they_fall_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts a fifth as long as the 16-CPU guest's three longest idle-while-runnable gaps,
    in their middles: the tasks waiting there run after the part stops reading on (one
    more part's length), so those parts are modelled again, given the waits the later
    parts own; the idle-while-runnable share is the whole trace's (0.002528 instead of
    0.002668 without)."""
    path = TRACES["guest16"]
    whole = schedwake.load(path)
    cuts = short_parts_inside(longest_gaps(whole))
    monkeypatch.setattr(ingest, "cut_times", lambda p, n: cuts)
    redone: list[int] = []
    real = Kept.redone

    def spy(self: Kept, fn: object, specs: dict) -> Kept:
        redone.extend(specs)
        return real(self, fn, specs)  # type: ignore[arg-type]

    monkeypatch.setattr(Kept, "redone", spy)
    got = parts_document(path, len(cuts) + 1)
    assert redone  # (the short parts were modelled again)
    assert_same_document(got, whole_document(path))


@pytest.mark.slow  # (a whole real trace)
def test_what_the_parts_do_not_give_is_refused() -> None:
    """A detector whose findings are not joined from parts yet, and the referee (the
    kernel's counters beside the trace): refused, never left out of the answer."""
    path = TRACES["kstack-off"]
    not_joined = [d for d in schedwake.detect.DETECTORS if d not in JOINED]
    if not_joined:
        with pytest.raises(NotJoinedError, match=not_joined[0]):
            analyze_parts(plan(path, 2))
    beside = SAMPLES / "cgroup-weight" / "msg-w1024-r01.dat"  # (and its .counters.json)
    with pytest.raises(NotJoinedError, match="counters"):
        analyze_file(beside, 2)


def test_auto_parts_fit_the_workers_memory() -> None:
    """--partitions auto: at least one part per worker; more parts for less memory; a
    part's estimated need within its share of a worker's memory."""
    from schedwake.partition.driver import (
        PART_BYTES_PER_EVENT,
        PART_MEMORY_SHARE,
        WORKER_BASE_BYTES,
    )

    path = TRACES["kstack-off"]
    events = sum(schedwake.load(path).meta.event_counts.values())
    roomy = auto_parts(path, None, 64 << 30, 2)
    assert roomy == 2
    tight = WORKER_BASE_BYTES + events * PART_BYTES_PER_EVENT // 8
    n = auto_parts(path, None, int(tight / PART_MEMORY_SHARE), 1)
    # (the events are estimated from a 64th of the file: within a factor of 2 here)
    assert 4 <= n <= 16, n


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--partitions", "2", "--pid", "1"], "Error: --pid is not given from --partitions"),
        (["--partitions", "2", "--time", "1,2"], "Error: --time is not given from --partitions"),
        (["--partitions", "0"], "Error: --partitions 0: a number of parts >= 1, or auto"),
        (["--partitions", "many"], "Error: --partitions many: a number of parts >= 1, or auto"),
        (["--scheduler", "tcp://127.0.0.1:1"], "Error: --scheduler and --workers run --partitions"),
    ],
)
def test_the_command_refuses_in_one_line(args: list[str], message: str) -> None:
    r = run_cli_process("analyze", str(TRACES["kstack-off"]), *args)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith(message), r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.slow  # (real subprocesses: a LocalCluster of two workers, a whole analysis)
@pytest.mark.parametrize("name", ["fio-weighted", "perf-lost"])
def test_the_command_gives_the_whole_answer(name: str) -> None:
    """`schedwake analyze --partitions 3 --workers 2` (a LocalCluster of two worker
    processes) writes the JSON `schedwake analyze` writes, byte for byte; the text
    report too."""
    path = TRACES[name]
    for fmt in ("json", "text"):
        whole = run_cli_process("analyze", "--format", fmt, path, check=True)
        parts = run_cli_process(
            "analyze", "--format", fmt, "--partitions", "3", "--workers", "2", path, check=True
        )
        assert parts.stdout == whole.stdout, fmt


@pytest.mark.slow  # (real subprocesses: a LocalCluster of two workers)
def test_damage_inside_a_part_is_one_line(tmp_path: Path) -> None:
    """Records damaged in the middle of the file (the index is whole, so the damage is
    found by the worker that reads that part): exit code 2 and one line naming the file
    and what is wrong, as the whole analysis says it; no worker's log, no traceback."""
    data = bytearray((SAMPLES / "lost-events.dat").read_bytes())
    at = len(data) * 85 // 100
    data[at : at + 64] = bytes(b ^ 0x5A for b in data[at : at + 64])
    path = tmp_path / "damaged.dat"
    path.write_bytes(bytes(data))
    whole = run_cli_process("analyze", path)
    parts = run_cli_process("analyze", "--partitions", "3", "--workers", "2", path)
    assert whole.returncode == parts.returncode == 2
    assert parts.stderr.strip().splitlines() == [f"schedwake: {path}: " + whole.stderr.split(
        f"{path}: ", 1)[1].strip()], parts.stderr  # fmt: skip
