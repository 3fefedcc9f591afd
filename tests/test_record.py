"""`schedwake record`: real recordings on this machine (CI runs as root), clean-up of the
tracing state also on SIGINT and errors, one-line refusals, and the event-list parser."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import schedwake
from schedwake.record import (
    DEFAULT_EVENTS,
    INSTANCE_PREFIX,
    RecordError,
    find_tracefs,
    kernel_has_tracefs,
    parse_events,
    parse_stats,
    trace_cmd_record_usable,
)

from .conftest import run_cli

WORKLOAD = ["sh", "-c", "for i in 1 2 3; do ls -R /usr/share/doc > /dev/null; sleep 0.05; done"]


def _tracefs() -> str | None:
    """tracefs's mount point. A fresh machine boots with tracefs unmounted until a tool
    mounts it; as root, mount it where `schedwake record` would, so the recording tests
    run on a fresh CI machine instead of skipping."""
    tfs = find_tracefs()
    if tfs is None and os.geteuid() == 0 and kernel_has_tracefs():
        os.makedirs("/sys/kernel/tracing", exist_ok=True)
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=False)
        tfs = find_tracefs()
    return tfs


TRACEFS = _tracefs()
_can_trace = pytest.mark.skipif(
    os.geteuid() != 0 or TRACEFS is None or shutil.which("trace-cmd") is None,
    reason="recording needs root, a mounted tracefs and trace-cmd",
)


def needs_tracing(test):
    """A test that records (root, tracefs, trace-cmd): slow, a real workload traced."""
    return pytest.mark.slow(_can_trace(test))


# -- pure parts ---------------------------------------------------------------------------
def test_parse_events_default_and_forms():
    assert parse_events(None) == list(DEFAULT_EVENTS)
    assert parse_events("sched:sched_switch, sched_waking,workqueue:*,irq") == [
        ("sched", "sched_switch", True),
        ("sched", "sched_waking", True),
        ("workqueue", "*", True),
        ("irq", "*", True),
    ]
    assert parse_events("workqueue_execute_start") == [
        ("workqueue", "workqueue_execute_start", True)
    ]


@pytest.mark.parametrize("bad", ["", " , ", "sched:../x", "a b:c", ":x"])
def test_parse_events_rejects(bad):
    with pytest.raises(RecordError) as e:
        parse_events(bad)
    assert "\n" not in str(e.value) and str(e.value).startswith("--events:")


def test_parse_stats():
    st = parse_stats(
        "entries: 12\noverrun: 3\ncommit overrun: 0\nbytes: 4096\n"
        "oldest event ts:  2579.775853\nnow ts:  2580.1\ndropped events: 2\n"
    )
    assert st["entries"] == 12 and st["overrun"] == 3 and st["dropped events"] == 2


def test_default_events_cover_the_model():
    """Every event the model reads is recorded by default, but sched_stat_runtime: the
    model takes it as a proof where a trace has it, and `record --runtime` adds it (its
    cost, 35-40 % more events, docs/counters.md, is the user's to choose)."""
    from schedwake.model import MODEL_EVENTS
    from schedwake.record import RUNTIME_EVENT

    names = {e for s, e, _ in DEFAULT_EVENTS}
    for ev in MODEL_EVENTS:
        # (sched_stat_runtime: a proof the completeness model reads when recorded; not a
        # default, its cost is an event per run-time charge: record --runtime)
        optional = ev.startswith("workqueue_") or ev in ("print", RUNTIME_EVENT[1])
        assert ev in names or optional, ev
    assert RUNTIME_EVENT in parse_events("sched:sched_stat_runtime")


def test_recording_modules_start_no_threads():
    """record blocks SIGINT/SIGTERM/SIGHUP in its thread while it creates its tracefs
    instance: a thread started at import (numpy's BLAS pool) would take the signal
    instead, and the instance would be left behind. Importing record and counters
    (whose snapshots record takes) starts none."""
    code = (
        "import os, sys; import schedwake.record, schedwake.counters; "
        "assert 'numpy' not in sys.modules, 'numpy'; "
        "print(len(os.listdir('/proc/self/task')))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "1", proc.stdout + proc.stderr


# -- real recordings ----------------------------------------------------------------------
@pytest.fixture
def tracing_lock():
    """One recording test at a time (saved_cmdlines_size is machine-wide), also across
    pytest-xdist workers."""
    with open("/tmp/schedwake-test-record.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield
        fcntl.flock(f, fcntl.LOCK_UN)


def _instances() -> set[str]:
    return {p.name for p in Path(TRACEFS, "instances").iterdir() if p.name.startswith("schedwake-")}


def _cmdlines() -> int:
    return int(Path(TRACEFS, "saved_cmdlines_size").read_text().split()[0])


@pytest.fixture
def clean_state(tracing_lock):
    """Checks after the test that no new schedwake-* instance remains and that
    saved_cmdlines_size is back to its value from before."""
    before, cmdl = _instances(), _cmdlines()
    yield
    assert _instances() - before == set(), "a schedwake-* tracefs instance was left behind"
    assert _cmdlines() == cmdl, "saved_cmdlines_size was not restored"


@needs_tracing
def test_record_real_workload(tmp_path, clean_state):
    out = tmp_path / "trace.dat"
    proc = run_cli("record", "-o", out, "--buffer-kb", 16384, "--", *WORKLOAD, subprocess=True)
    assert proc.returncode == 0, proc.stderr
    summary = proc.stdout.strip()
    assert summary.startswith(f"wrote {out}") and "command exit code 0" in summary
    assert "lost events: 0" in summary or "LOST" in summary
    t = schedwake.load(out)
    for ev in ("sched_switch", "sched_waking", "sched_wakeup", "sched_process_exec"):
        assert t.has(ev) and t.table(ev).num_rows > 0, ev
    assert t.meta.cpus == os.cpu_count()
    # the ls processes of the workload were traced, with their comm
    assert "ls" in set(t.df("sched_switch")["next_comm"].astype(str))
    assert any(f.endswith("/ls") for f in t.df("sched_process_exec")["filename"].astype(str))
    marks = t.df("print")["buf"].astype(str).str.strip().tolist()
    assert marks[0] == "schedwake: start" and marks[-1].startswith("schedwake: stop")
    topo = json.loads(Path(f"{out}.topology.json").read_text())
    assert topo["cpus"] == os.cpu_count() and topo["llc"]
    assert t.topology.source.endswith("trace.dat.topology.json")  # picked up by load
    assert not list(tmp_path.glob(".schedwake-record-*"))  # no temporary files left
    # the kernel release is in the file, as trace-cmd record stores it (UNAME option)
    assert t.meta.kernel == os.uname().release
    if shutil.which("trace-cmd"):
        uname = subprocess.run(
            ["trace-cmd", "report", "--uname", "-i", str(out)], capture_output=True, text=True
        ).stdout
        assert os.uname().release in uname
    # where the time went, phase by phase (set-up, recording, restore, convert, ...)
    times = [ln for ln in proc.stderr.splitlines() if ln.startswith("schedwake record: time: ")]
    assert len(times) == 1 and "recording " in times[0] and "set-up" in times[0]


@needs_tracing
@pytest.mark.skipif(shutil.which("perf") is None, reason="--perf-stat needs perf")
def test_record_keeps_the_kernels_counters(tmp_path, clean_state):
    """The counters at the start and the stop, between their markers in the trace;
    sched_stat_runtime with --runtime; perf stat over the same stretch with --perf-stat;
    debugfs as it was (mounted, or not)."""
    from schedwake import counters

    out = tmp_path / "c.dat"
    debugfs = _debugfs_mounted()
    proc = run_cli(
        "record",
        "-q",
        "--runtime",
        "--perf-stat",
        "--no-kallsyms",
        "-o",
        out,
        "--buffer-kb",
        16384,
        "--",
        "sh",
        "-c",
        "for i in 1 2 3 4 5; do ls /usr/share/doc > /dev/null; sleep 0.02; done",
        subprocess=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"counters {out}.counters.json" in proc.stdout
    assert f"perf stat {out}.perf-stat.txt" in proc.stdout
    assert _debugfs_mounted() == debugfs
    beside = counters.read_beside(out)
    assert beside is not None and beside.counters is not None and beside.perf_stat is not None
    c = beside.counters
    assert c.runtime_events and c.perf_stat == {"file": "c.dat.perf-stat.txt", "window": "counters"}
    assert c.command is not None and c.command.argv[0] == "sh" and c.command.cpu_ns > 0
    assert c.cpus == sorted(c.start.cpus) and len(c.cpus) == os.cpu_count()
    for cpu in c.cpus:  # every CPU's idle time and switches, read on it
        a, b = c.start.cpus[cpu], c.stop.cpus[cpu]
        assert a.pinned and b.pinned and b.nr_switches >= a.nr_switches
        assert b.timer_now_ns - a.timer_now_ns > 0
    t = schedwake.load(out)
    marks = [m.strip() for m in t.df("print")["buf"].astype(str)]
    assert marks == [
        "schedwake: start",
        *c.markers["start"],
        *c.markers["stop"],
        "schedwake: stop rc=0",
    ]
    assert t.table("sched_stat_runtime").num_rows > 0
    assert os.path.getsize(out) < 1_000_000  # no kernel symbol table
    from schedwake import referee

    lo, hi = referee.kernel_ctxt(c)
    assert lo <= sum(referee.kernel_switches(c, cpu) for cpu in c.cpus) <= hi
    assert set(beside.perf_stat.per_cpu("context-switches")) == set(c.cpus)


def _debugfs_mounted() -> bool:
    with open("/proc/mounts") as f:
        return any(line.split()[2:3] == ["debugfs"] for line in f)


@needs_tracing
def test_record_exit_code_events_and_analyze(tmp_path, clean_state):
    out = tmp_path / "t.dat"
    proc = run_cli(
        "record",
        "-q",
        "-o",
        out,
        "--events",
        "sched:sched_switch,sched_waking",
        "--",
        "sh",
        "-c",
        "sleep 0.1; exit 3",
        subprocess=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "command exit code 3" in proc.stdout and proc.stderr == ""
    t = schedwake.load(out)
    assert set(t.events) == {"sched_switch", "sched_waking", "print"}
    assert run_cli("analyze", out).returncode == 0


@needs_tracing
def test_record_duration_without_command(tmp_path, clean_state):
    out = tmp_path / "d.dat"
    t0 = time.monotonic()
    proc = run_cli("record", "-o", out, "--duration", "0.3", "--buffer-kb", 4096, subprocess=True)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - t0 < 30
    assert "command" not in proc.stdout
    assert schedwake.load(out, events=[]).meta.event_counts["sched_switch"] > 0


@needs_tracing
def test_record_reports_lost_events(tmp_path, clean_state):
    out = tmp_path / "lost.dat"
    forks = "i=0; while [ $i -lt 400 ]; do i=$((i+1)); /bin/true; done"  # ~10 events each
    proc = run_cli("record", "-o", out, "--buffer-kb", 8, "--", "sh", "-c", forks, subprocess=True)
    assert proc.returncode == 0, proc.stderr
    assert "LOST " in proc.stdout and "WARNING: the ring buffer lost" in proc.stderr
    assert schedwake.load(out, events=[]).meta.event_counts["sched_switch"] > 0


def _children_comms(pid: int) -> list[str]:
    """The names of the processes ``pid`` started (its threads' children), as the kernel
    gives them (/proc/PID/task/TID/children); [] once it is gone."""
    names = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return names
    for task in tasks:
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            try:
                names.append(Path(f"/proc/{child}/comm").read_text().strip())
            except OSError:
                continue
    return names


@needs_tracing
def test_record_interrupted_cleans_up(tmp_path, clean_state):
    out = tmp_path / "int.dat"
    exe = Path(sys.executable).with_name("schedwake")
    proc = subprocess.Popen(
        [str(exe), "record", "-o", str(out), "--buffer-kb", "4096", "--", "sleep", "5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    inst = Path(TRACEFS, "instances", f"{INSTANCE_PREFIX}{proc.pid}")
    deadline = time.monotonic() + 20
    while not (inst / "tracing_on").exists() or (inst / "tracing_on").read_text()[0] != "1":
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    # the command runs: a child of the recorder that is `sleep` (not a guessed delay)
    while "sleep" not in _children_comms(proc.pid):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    # the command ran for well under its 5 s: the recording phase (tracing on until the
    # command ended; not the conversion after it, which a busy machine makes long)
    times = [ln for ln in stderr.splitlines() if ln.startswith("schedwake record: time: ")]
    recording = re.search(r"\brecording ([0-9.]+) s", times[0]) if times else None
    assert recording and float(recording[1]) < 4.5, ("SIGINT was not forwarded", stderr)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stdout and "killed by signal 2" in stdout
    assert not inst.exists()
    assert schedwake.load(out, events=[]).meta.event_counts["sched_switch"] > 0


@needs_tracing
def test_record_interrupted_during_setup_cleans_up(tmp_path, clean_state):
    """SIGTERM at any moment leaves nothing behind (the trace may or may not exist):
    before the interpreter has started (the default action kills it: -SIGTERM), as soon
    as the private instance exists (the set-up: ring buffer, saved_cmdlines_size, events:
    cleaned up, "interrupted", 130) and once tracing is on (forwarded to the command,
    the trace written, 130). The moments are made or watched for, not guessed with fixed
    delays (which land in another phase when the start-up is faster or the machine
    busier)."""
    exe = Path(sys.executable).with_name("schedwake")
    for moment in ("start", "set-up", "recording"):
        proc = subprocess.Popen(
            [
                str(exe),
                "record",
                "-o",
                str(tmp_path / "x.dat"),
                "--buffer-kb",
                "4096",
                "--",
                "sleep",
                "3",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        inst = Path(TRACEFS, "instances", f"{INSTANCE_PREFIX}{proc.pid}")
        if moment != "start":  # (start: at once, before Python has even begun)
            deadline = time.monotonic() + 20
            # (a new instance's tracing_on is 1 until record writes 0: recording is
            # tracing on with the events enabled)
            while not inst.exists() or (
                moment == "recording"
                and not (
                    _read_or_empty(inst / "set_event").strip()
                    and _read_or_empty(inst / "tracing_on")[:1] == "1"
                )
            ):
                assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
                time.sleep(0.001)
        proc.send_signal(signal.SIGTERM)
        stdout, _ = proc.communicate(timeout=30)
        want = -signal.SIGTERM if moment == "start" else 130
        assert proc.returncode == want, (moment, proc.returncode, stdout)
        assert not inst.exists(), moment
        if moment == "recording":  # forwarded, also before the command had started
            assert "command killed by signal 15; interrupted" in stdout, stdout


def _read_or_empty(path: Path) -> str:
    """A tracefs file's text, or "" while it does not exist yet (or no longer)."""
    try:
        return path.read_text()
    except OSError:
        return ""


@needs_tracing
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv")
def test_record_without_root_one_line(tmp_path):
    exe = Path(sys.executable).with_name("schedwake")
    proc = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            # may search any directory: the checkout (and its .venv) can sit under a
            # private 0700 directory the unprivileged user could not otherwise reach
            # (still not root: record refuses by the effective uid)
            "--inh-caps=+dac_read_search",
            "--ambient-caps=+dac_read_search",
            str(exe),
            "record",
            "-o",
            "/tmp/never.dat",
            "--",
            "true",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "needs root" in proc.stderr
    assert not Path("/tmp/never.dat").exists()


@needs_tracing
def test_record_forced_trace_cmd_fails_cleanly_where_it_cannot_work(tmp_path, clean_state):
    ok, why = trace_cmd_record_usable()
    if ok:
        pytest.skip("trace-cmd record works on this kernel")
    proc = run_cli(
        "record", "-o", tmp_path / "tc.dat", "--method", "trace-cmd", "--", "true", subprocess=True
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("schedwake: record: trace-cmd record failed")
    assert proc.stderr.count("\n") == 1 and not (tmp_path / "tc.dat").exists()


@needs_tracing
def test_record_unknown_event_one_line(tmp_path, clean_state):
    proc = run_cli(
        "record",
        "-q",
        "-o",
        tmp_path / "e.dat",
        "--events",
        "sched:no_such_event",
        "--",
        "true",
        subprocess=True,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "sched:no_such_event does not exist" in proc.stderr


@needs_tracing
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare")
def test_record_mounts_tracefs_when_missing(tmp_path, clean_state):
    """In a private mount namespace without tracefs: mounted for the recording and
    unmounted again afterwards (the machine's own mount is untouched). Every tracefs
    mount goes, and debugfs too (its tracing/ directory automounts tracefs again);
    record mounts debugfs for the kernel's counters and unmounts it again."""
    exe = Path(sys.executable).with_name("schedwake")
    script = (
        'for m in $(awk \'$3 == "tracefs" || $3 == "debugfs" {print $2}\' '
        "/proc/mounts | sort -r); do umount $m || exit 99; done; "
        f"{exe} record -o {tmp_path / 'm.dat'} --buffer-kb 2048 -- true || exit $?; "
        "if grep -q ' tracefs ' /proc/mounts; then exit 98; fi; "
        "if grep -q ' debugfs ' /proc/mounts; then exit 97; fi"
    )
    proc = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
    )
    if proc.returncode == 99:
        pytest.skip("cannot unmount tracefs in a mount namespace here")
    assert proc.returncode == 0, proc.stderr
    assert "mounted tracefs" in proc.stderr
    assert "mounted debugfs" in proc.stderr  # for the sched debug file: unmounted again (97)
    assert (tmp_path / "m.dat").stat().st_size > 0
