"""Options and side files in range (issue #23, item 5).

Every option value out of range, and every topology or gate-rules file that is out of
range or contradicts itself (``tests/data/hostile_options``), ends in exit code 2 and one
stderr line naming the option (``Error: --window 1e-09: ...``) or the file, quickly and
in little memory: never a traceback, gigabytes allocated for a CPU list or a window
count, or an answer made with a NaN threshold. The bulk runs through click's CliRunner
(the same handler as the console script); a representative subset through real
``schedwake`` processes limited to 4 GB of address space.
"""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import schedwake
from schedwake.cli import cli
from schedwake.detect import THRESHOLDS
from schedwake.topology import Topology, parse_cpulist, resolve

from .conftest import ROOT, computed_once, sample

HOSTILE = ROOT / "tests" / "data" / "hostile_options"
IDLE = str(sample("idle-sleep.dat"))  # 2 CPUs, 2 s
A = str(sample("iterations/dbench-xfs-1c-i1.dat"))  # 2 CPUs, 1 s
B = str(sample("iterations/dbench-xfs-1c-i2.dat"))
PERF = str(sample("perf/perf-profile-g.perf.data"))


def hostile(name: str) -> str:
    path = HOSTILE / name
    assert path.is_file(), path
    return str(path)


#: command line -> the words its one stderr line must hold (an option's line starts
#: with "Error: OPTION VALUE:", a file's with "schedwake: FILE:")
CASES = {
    # CPU lists: refused against the trace's 2 CPUs before they are expanded
    "--llc 1e8 CPUs": (
        ["analyze", IDLE, "--llc", "0-99999999"],
        ["Error: --llc 0-99999999:", "CPUs 0-1"],
    ),
    "--llc 2^64": (
        ["analyze", IDLE, "--llc", "18446744073709551616"],
        ["Error: --llc 18446744073709551616:", "bad cpulist"],
    ),
    "--llc beyond the trace": (["analyze", IDLE, "--llc", "0-1", "--llc", "2-3"], ["--llc 2-3"]),
    "--cpu 1e8 CPUs": (
        ["analyze", IDLE, "--cpu", "0-99999999"],
        ["Error: --cpu 0-99999999:", "CPUs 0-1"],
    ),
    "--cpu 2^64": (["analyze", IDLE, "--cpu", "18446744073709551616"], ["--cpu", "bad cpulist"]),
    "compare --llc 1e8 CPUs": (["compare", A, B, "--llc", "0-99999999"], ["--llc 0-99999999"]),
    "batch --llc 1e8 CPUs": (
        ["batch", "--serial", IDLE, "-o", "{tmp}/out", "--llc", "0-99999999"],
        ["--llc 0-99999999", "65536 CPUs"],
    ),
    "profile --cpu 1e8 CPUs": (["profile", PERF, "--cpu", "0-99999999"], ["--cpu 0-99999999"]),
    # --time
    "--time reversed": (["analyze", IDLE, "--time", "5,1"], ["--time 5,1:", "START must come"]),
    "--time NaN": (["analyze", IDLE, "--time", "nan,1"], ["--time nan,1:", "finite"]),
    "--time inf": (["analyze", IDLE, "--time", "inf,"], ["--time inf,:", "finite"]),
    "--time 1e300": (["analyze", IDLE, "--time", "1e300,"], ["--time 1e300,:", "finite"]),
    "--time outside the trace": (
        ["analyze", IDLE, "--time", "1,2"],
        ["--time 1,2:", "no events from 1.000000 to 2.000000 s", "the trace runs from"],
    ),
    "profile --time NaN": (["profile", PERF, "--time", "nan,"], ["--time nan,:", "finite"]),
    # --pid
    "--pid negative": (["analyze", IDLE, "--pid", "-1"], ["--pid -1:", ">= 0"]),
    "--pid above 2^32": (["analyze", IDLE, "--pid", "99999999999"], ["--pid", "PID_MAX_LIMIT"]),
    "profile --pid above 2^32": (
        ["profile", PERF, "--pid", "99999999999"],
        ["--pid", "PID_MAX_LIMIT"],
    ),
    # thresholds: NaN, infinite, negative, fractional counts, shares above 1, flags
    "--threshold NaN": (
        ["analyze", IDLE, "--threshold", "iwr_min_share=nan"],
        ["Error: --threshold iwr_min_share=nan:", "finite"],
    ),
    "--threshold inf": (["analyze", IDLE, "--threshold", "iwr_min_seconds=inf"], ["finite"]),
    "--threshold negative": (["analyze", IDLE, "--threshold", "iwr_min_share=-1"], [">= 0"]),
    "--threshold share above 1": (
        ["analyze", IDLE, "--threshold", "pingpong_high_share=1.5"],
        ["is a share: from 0 to 1"],
    ),
    "--threshold fractional count": (
        ["analyze", IDLE, "--threshold", "storm_min_preemptions=1.5"],
        ["a count of preemptions: a whole number"],
    ),
    "--threshold flag 2": (
        ["analyze", IDLE, "--threshold", "roundrobin_include_kthreads=2"],
        ["is a flag: 0 or 1"],
    ),
    "compare --threshold NaN": (
        ["compare", A, B, "--threshold", "iwr_min_share=nan"],
        ["--threshold iwr_min_share=nan"],
    ),
    "gate --threshold NaN": (
        ["gate", "--baseline", A, "--candidate", B, "--threshold", "iwr_min_share=nan"],
        ["--threshold iwr_min_share=nan"],
    ),
    "batch --threshold NaN": (
        ["batch", "--serial", IDLE, "-o", "{tmp}/out", "--threshold", "iwr_min_share=nan"],
        ["--threshold iwr_min_share=nan"],
    ),
    # --jobs, --workers, --top, --duration
    "--jobs 1e20": (
        ["analyze", IDLE, "--jobs", "99999999999999999999"],
        ["'--jobs'", "1<=x<=1024"],
    ),
    "--jobs 0": (["info", IDLE, "--jobs", "0"], ["'--jobs'", "1<=x<=1024"]),
    "convert --jobs 1e20": (
        ["convert", IDLE, "-o", "{tmp}/t", "--jobs", "99999999999999999999"],
        ["'--jobs'"],
    ),
    "convert --events misspelt": (
        ["convert", IDLE, "-o", "{tmp}/t", "--events", "sched_switch,sched_swich"],
        ["Error: --events sched_swich:", "idle-sleep.dat has no such event"],
    ),
    "--workers 1e5": (["batch", IDLE, "-o", "{tmp}/out", "--workers", "99999"], ["'--workers'"]),
    "--top -1": (["profile", PERF, "--top", "-1"], ["'--top'"]),
    "record --duration inf": (
        ["record", "-o", "{tmp}/r.dat", "--duration", "inf"],
        ["--duration inf:", "finite"],
    ),
    "record --duration NaN": (
        ["record", "-o", "{tmp}/r.dat", "--duration", "nan"],
        ["--duration nan:", "finite"],
    ),
    # windows and alpha
    "--window 1e-9": (
        ["compare", A, B, "--window", "1e-9"],
        ["Error: --window 1e-09: a window must be at least 1 us", "windows"],
    ),
    "--window 1e-300": (["compare", A, B, "--window", "1e-300"], ["--window 1e-300:", "1 us"]),
    "--window inf": (["compare", A, B, "--window", "inf"], ["--window inf:", "finite"]),
    "--window NaN": (["compare", A, B, "--window", "nan"], ["--window nan:", "finite"]),
    "--window 1e308": (["compare", A, B, "--window", "1e308"], ["--window 1e+308:", "longer"]),
    "--window 1 us: 1e6 windows": (
        ["compare", A, B, "--window", "0.000001"],
        ["--window 1e-06:", "windows, more than the 1e+05"],
    ),
    "--window longer than the traces": (
        ["compare", A, B, "--window", "100"],
        ["--window 100:", "longer than the longest trace"],
    ),
    "--alpha NaN": (["compare", A, B, "--alpha", "nan"], ["--alpha nan:", "finite"]),
    "--alpha 1": (["compare", A, B, "--alpha", "1"], ["'--alpha'"]),
    "batch --window 1e-9": (
        ["batch", "--serial", IDLE, "-o", "{tmp}/out", "--window", "1e-9"],
        ["--window 1e-09:", "1 us"],
    ),
    "batch --window inf": (
        ["batch", "--serial", IDLE, "-o", "{tmp}/out", "--window", "inf"],
        ["--window inf:", "finite"],
    ),
    "batch --window: 2e5 windows of the trace": (
        ["batch", "--serial", IDLE, "-o", "{tmp}/out", "--window", "0.00001"],
        ["idle-sleep.dat", "--window 1e-05", "windows"],
    ),
    # topology files
    **{
        f"--topology {name}": (["analyze", IDLE, "--topology", hostile(name)], [name, *words])
        for name, words in {
            "topo-cpus-1e9.json": ["'cpus' must be a CPU count"],
            "topo-llc-huge-int.json": ["CPUs 0-1, not 18446744073709551616"],
            "topo-nested.json": ["nested too deeply"],
            "topo-duplicate-key.json": ["key 'llc' is given twice"],
            "topo-cpu-in-two-llcs.json": ["more than one group"],
            "topo-empty-llc.json": ["is not a CPU list"],
            "topo-no-llc.json": ["non-empty list"],
            "topo-names-cpus-the-trace-lacks.json": ["the trace has CPUs 0-1"],
            "topo-core-split-across-llcs.json": ["spans more than one LLC"],
            "topo-cpus-below-named.json": ["'cpus' is 1 but it names CPU 1"],
            "topo-unknown-key.json": ["unknown topology key(s) 'llcs'"],
            "topo-cpulist-huge-range.json": ["CPUs 0-1, not 99999999"],
        }.items()
    },
    "batch --topology cpus 1e9": (
        ["batch", "--serial", IDLE, "-o", "{tmp}/out", "--topology", hostile("topo-cpus-1e9.json")],
        ["topo-cpus-1e9.json", "'cpus' must be a CPU count"],
    ),
    # gate rules
    **{
        f"--rules {name}": (
            ["gate", "--rules", hostile(name), "--baseline", A, "--candidate", B],
            [name, *words],
        )
        for name, words in {
            "rules-min-duration-nan.toml": ["min_duration must be a finite number"],
            "rules-min-duration-bool.toml": ["min_duration must be a finite number"],
            "rules-alpha-nan.toml": ["alpha must be a finite number"],
            "rules-window-inf.toml": ["window must be a finite number"],
            "rules-window-1e-9.toml": ["window 1e-09: a window must be at least 1 us"],
            "rules-max-lost-fraction.toml": ["max_lost_events must be a whole number"],
            "rules-nested.toml": ["nested too deeply"],
            "rules-window-longer-than-traces.toml": ["window 100", "longer than the longest"],
        }.items()
    },
}

#: The cases also run through a real schedwake process (the issue's own reproducers).
IN_A_PROCESS = [
    "--llc 1e8 CPUs",
    "--cpu 1e8 CPUs",
    "--llc 2^64",
    "--jobs 1e20",
    "--window 1e-9",
    "--window inf",
    "--window 1e308",
    "--window 1e-300",
    "--alpha NaN",
    "--threshold NaN",
    "--topology topo-cpus-1e9.json",
    "--topology topo-llc-huge-int.json",
    "--topology topo-nested.json",
    "--rules rules-nested.toml",
    "--rules rules-min-duration-nan.toml",
]


def _args(args: list[str], tmp: Path) -> list[str]:
    return [a.replace("{tmp}", str(tmp)) for a in args]


def _check(code: int, stdout: str, stderr: str, words: list[str]) -> None:
    lines = stderr.strip().splitlines()
    assert code == 2, (code, stdout[-500:], stderr)
    assert "Traceback" not in stderr + stdout and "internal error" not in stderr + stdout
    assert len(lines) == 1, stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_in_one_line(name, tmp_path):
    args, words = CASES[name]
    result = CliRunner().invoke(cli, _args(args, tmp_path), prog_name="schedwake")
    _check(result.exit_code, result.stdout, result.stderr, words)
    # record refused before it changed anything, convert left nothing
    assert not (tmp_path / "r.dat").exists() and not (tmp_path / "t").exists()


def _limit_memory():
    four_gb = 4 << 30
    resource.setrlimit(resource.RLIMIT_AS, (four_gb, four_gb))


#: Runs the installed console script once per case, each in a child forked from one
#: process limited to 4 GB of address space (the limit is each child's, inherited), so
#: that a case is a fresh ``schedwake`` process without paying an interpreter start and
#: the imports per case. The script file itself runs in the child (``runpy``): its
#: ``sys.exit(main())``, stdout and stderr at file descriptors 1 and 2. Prints one JSON
#: document: each case's exit code, stdout and stderr, and which heavy modules the
#: entry point imported by itself (none: an option error needs no pandas).
CONSOLE_SCRIPT_DRIVER = textwrap.dedent(
    """
    import json, os, runpy, sys, tempfile, traceback
    script, cases = sys.argv[1], json.loads(sys.argv[2])
    from schedwake.cli import main  # what the script imports first
    heavy = sorted(m for m in ("numpy", "pandas", "pyarrow", "matplotlib") if m in sys.modules)
    # what the commands of the cases import, once here rather than in every child
    import schedwake.analysis, schedwake.compare, schedwake.gate, schedwake.report.analyze
    results = {}
    for name, args in cases.items():
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            pid = os.fork()
            if pid == 0:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.argv = [script, *args]
                try:
                    runpy.run_path(script, run_name="__main__")
                    code = 0
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else (exc.code is not None)
                except BaseException:
                    traceback.print_exc()
                    code = 1
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
            _, status = os.waitpid(pid, 0)
            out.seek(0)
            err.seek(0)
            results[name] = (
                os.waitstatus_to_exitcode(status),
                out.read().decode(),
                err.read().decode(),
            )
    print(json.dumps({"heavy": heavy, "results": results}))
    """
)


def _console_script_runs() -> dict:
    exe = Path(sys.executable).with_name("schedwake")
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            CONSOLE_SCRIPT_DRIVER,
            str(exe),
            json.dumps({name: CASES[name][0] for name in IN_A_PROCESS}),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, COLUMNS="120"),
        stdin=subprocess.DEVNULL,
        preexec_fn=_limit_memory,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def console_script():
    """The cases of :data:`IN_A_PROCESS` through the console script (once per test run,
    shared by the xdist workers: tests/conftest.py, ``computed_once``)."""
    return computed_once("test_option_ranges: console script in 4 GB", _console_script_runs)


@pytest.mark.parametrize("name", IN_A_PROCESS)
@pytest.mark.slow
def test_refused_by_the_console_script_in_little_memory(name, console_script):
    """The console script, in 4 GB of address space: a CPU list of 1e8 CPUs, a window
    of 1 ns or a topology of 1e9 CPUs would need gigabytes before it was refused."""
    assert not any("{tmp}" in a for a in CASES[name][0])  # (the driver has no tmp_path)
    code, stdout, stderr = console_script["results"][name]
    _check(code, stdout, stderr, CASES[name][1])


@pytest.mark.slow
def test_an_option_error_needs_no_pandas(console_script):
    """The console script's entry point imports click and the options' facts, not the
    data stack: ``schedwake --version``, ``--help`` or a mistyped option answer at once."""
    assert console_script["heavy"] == []


@pytest.mark.parametrize("name", sorted(THRESHOLDS))
def test_every_threshold_refuses_nan_and_infinity(name):
    for value in ("nan", "inf", "-1"):
        result = CliRunner().invoke(
            cli, ["analyze", IDLE, "--threshold", f"{name}={value}"], prog_name="schedwake"
        )
        _check(result.exit_code, result.stdout, result.stderr, [f"--threshold {name}="])


# -- the API: a ValueError naming its own parameter ---------------------------------------------


def test_api_raises_value_error_naming_the_parameter():
    trace = schedwake.load(IDLE)
    with pytest.raises(ValueError, match=r"^thresholds=iwr_min_share=nan: "):
        schedwake.analyze(trace, {"iwr_min_share": math.nan})
    with pytest.raises(ValueError, match=r"^window_s=1e-09: a window must be at least 1 us"):
        schedwake.compare([trace, trace], labels=["a", "b"], window_s=1e-9)
    with pytest.raises(ValueError, match=r"^alpha=nan: "):
        schedwake.compare([trace, trace], labels=["a", "b"], alpha=math.nan)
    with pytest.raises(ValueError, match=r"^start_ns=5: must come before end_ns"):
        trace.sliced(5, 1)
    with pytest.raises(ValueError, match=r"^end_ns=nan: "):
        trace.sliced(None, math.nan)
    with pytest.raises(ValueError, match=r"^cpus=7: the trace has CPUs 0-1"):
        trace.sliced(cpus=[0, 7])
    with pytest.raises(ValueError, match=r"^jobs=100000000000000000000: "):
        schedwake.load(IDLE, jobs=10**20)
    from schedwake.convert import convert

    with pytest.raises(ValueError, match=r"^jobs=100000000000000000000: "):
        convert(IDLE, "/nonexistent/tables", jobs=10**20)
    with pytest.raises(ValueError, match=r"^windows=inf: "):
        schedwake.batch([IDLE], "/nonexistent/out", windows=[math.inf])
    from schedwake.compare import stats

    with pytest.raises(ValueError, match=r"^alpha=nan: "):
        stats.ttest_lkml([1, 2, 3], [4, 5, 6], alpha=math.nan)
    perf = schedwake.load(PERF)
    with pytest.raises(ValueError, match=r"^pid=100000000000000000000: "):
        schedwake.profile(perf, pid=10**20)
    with pytest.raises(ValueError, match=r"^cpu=7: must be a whole number from 0 to 1"):
        schedwake.profile(perf, cpu=7)
    with pytest.raises(ValueError, match=r"^time=nan: "):
        schedwake.profile(perf, time=(math.nan, None))


def test_a_cpulist_is_bounded_before_it_is_expanded():
    """``0-99999999`` is refused from its numbers, not after a list of 1e8 ints."""
    with pytest.raises(ValueError, match="the trace has CPUs 0-1, not 99999999"):
        parse_cpulist("0-99999999", "--cpu", 2)
    with pytest.raises(ValueError, match="beyond the 65536 CPUs"):
        parse_cpulist("0-99999999", "--llc")
    with pytest.raises(ValueError, match="at most 65536 CPUs"):
        Topology(cpus=10**9, llc=[[0]])
    # a trace whose header says 1e11 CPUs gets no map of 1e11 entries
    with pytest.raises(schedwake.TraceError, match="x.txt: says it has 100000000000 CPUs"):
        resolve("x.txt", 10**11)
    assert parse_cpulist("0-1", "--cpu", 2) == [0, 1]


@pytest.mark.slow
def test_sound_values_still_work(tmp_path):
    """The bounds refuse only what is out of range: a window of 0.1 s, a share of 1, a
    count of 0, --time inside the trace, --llc of every CPU, a topology of the trace."""
    runner = CliRunner()
    ok = [
        ["compare", A, B, "--window", "0.1", "--alpha", "0.05", "--format", "json"],
        [
            "analyze",
            IDLE,
            "--threshold",
            "iwr_high_share=1",
            "--threshold",
            "pingpong_min_episodes=0",
            "--time",
            "403.5,404.5",
            "--llc",
            "0",
            "--llc",
            "1",
        ],
        ["analyze", IDLE, "--topology", str(sample("idle-sleep.topology.json")), "--cpu", "0-1"],
    ]
    for args in ok:
        result = runner.invoke(cli, args, prog_name="schedwake")
        assert result.exit_code == 0, (args, result.stderr)


def test_usage_errors_are_one_line_and_the_bare_command_its_help():
    runner = CliRunner()
    result = runner.invoke(cli, ["analyze"], prog_name="schedwake")
    assert result.exit_code == 2 and result.stderr == "Error: Missing argument 'TRACE'.\n"
    result = runner.invoke(cli, ["analyze", IDLE, "--nope"], prog_name="schedwake")
    assert result.exit_code == 2 and result.stderr.startswith("Error: No such option '--nope'")
    assert len(result.stderr.splitlines()) == 1
    result = runner.invoke(cli, [], prog_name="schedwake")
    assert "Usage: schedwake [OPTIONS] COMMAND" in result.output and "analyze" in result.output
