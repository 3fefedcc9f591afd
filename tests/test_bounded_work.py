"""Bounded work on user patterns and numbers (#37): globs matched without backtracking,
``--label-from`` searches stopped after a stated time, ``--work`` within a range,
samples whose period the recording cannot hold left out with a caveat, kallsyms lines
with an address beyond 64 bits left out (or the file refused), never a hang, a
traceback or int64 garbage.
"""

from __future__ import annotations

import shutil
import time
import warnings
from pathlib import Path

import pytest

from schedwake.batch import label_columns
from schedwake.errors import OptionError
from schedwake.paths import GlobPattern, glob_files, match

from .conftest import SAMPLE_KALLSYMS, SAMPLES, run_cli

DATA = Path(__file__).parent / "data"
HUGE_PERIOD = DATA / "profile_periods" / "cpu-clock-period-int64-max.perf.data"
PROFILE = SAMPLES / "profiles" / "base" / "run1.perf.data"

# -- globs --------------------------------------------------------------------------------------

BACKTRACKING = "*a" * 9 + "b"  # against 60 a's: a regular expression's [^/]* hung


def test_a_backtracking_glob_is_linear():
    name = "a" * 60
    t = time.perf_counter()
    assert not GlobPattern(BACKTRACKING).match(name)
    assert not GlobPattern("**/" * 30 + "*a" * 200 + "b").match("a/" * 100 + "a" * 3000)
    assert time.perf_counter() - t < 1.0


@pytest.mark.parametrize(
    ("pattern", "name", "hit"),
    [
        ("*.dat", "run1.dat", True),
        ("*.dat", "d/run1.dat", False),  # * stops at /
        ("**/*.dat", "run1.dat", True),  # **/ is nothing too
        ("**/*.dat", "a/b/run1.dat", True),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("a/**/b", "a/xb", False),
        ("a**", "a/b/c", True),  # ** crosses directories
        ("run[0-9].dat", "run7.dat", True),
        ("run[!0-9].dat", "run7.dat", False),
        ("run[!0-9].dat", "run/.dat", False),  # a class never matches /
        ("run?.dat", "run/.dat", False),
        ("[ab", "[ab", True),  # an unclosed [ is itself
        ("*a*a*a*b", "xaxaxab", True),
    ],
)
def test_glob_semantics(pattern, name, hit):
    assert GlobPattern(pattern).match(name) is hit


def test_a_backtracking_glob_on_disk_and_among_stored_paths(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / ("a" * 60)).write_text("")
    t = time.perf_counter()
    assert glob_files(str(tmp_path / "**" / BACKTRACKING)) == []
    assert match(BACKTRACKING, [["a" * 60]] * 1000) == []
    assert time.perf_counter() - t < 2.0


def test_a_backtracking_glob_on_the_command_line(tmp_path):
    (tmp_path / ("a" * 60 + ".dat")).write_text("")
    shutil.copyfile(SAMPLES / "idle-sleep.dat", tmp_path / "x.dat")
    proc = run_cli(
        "compare", "--side", f"a={tmp_path}/**/{BACKTRACKING}", "--side", f"b={tmp_path}/x.dat",
        subprocess=True,
    )  # fmt: skip
    assert proc.returncode == 2 and "the pattern matches no file" in proc.stderr, proc.stderr


# -- --label-from --------------------------------------------------------------------------------


def test_label_from_that_backtracks_is_stopped_and_refused():
    paths = ["runs/" + "a" * 40 + "!.dat"]
    t = time.perf_counter()
    with pytest.raises(OptionError, match=r"took more than 1 s: the expression backtracks"):
        label_columns(paths, r"(?P<x>(a+)+)$", seconds=1)
    assert time.perf_counter() - t < 5
    # a sound expression still labels every path, non-UTF-8 names too
    got = label_columns(["k1/run-i3.dat", "k2/x\udcff-i12.dat"], r"(?P<k>k\d)/.*-i(?P<i>\d+)")
    assert got == {"k": ["k1", "k2"], "i": [3, 12]}
    with pytest.raises(OptionError, match="longer than 1000 characters"):
        label_columns(paths, "(?P<x>a)" + "a" * 1000)


@pytest.mark.slow
def test_label_from_that_backtracks_on_the_command_line(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copyfile(SAMPLES / "idle-sleep.dat", runs / ("a" * 40 + "!.dat"))
    t = time.perf_counter()
    proc = run_cli(
        "batch", runs, "-o", tmp_path / "out", "--label-from", r"(?P<x>(a+)+)$", "--serial",
        subprocess=True,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().endswith(
        "the expression backtracks (a group repeated inside a "
        "repetition, such as (a+)+, or alternatives that "
        "overlap); write it without nested repetition"
    )
    assert proc.stderr.count("\n") == 1 and "--label-from" in proc.stderr
    assert time.perf_counter() - t < 40  # refused before any trace was analysed


# -- --work and periods --------------------------------------------------------------------------


@pytest.mark.parametrize("work", ["5e-324", "1e300", "nan", "-1"])
def test_work_out_of_range_is_refused(work):
    proc = run_cli("profile", PROFILE, "--work", work, subprocess=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "units of work must be a number from 1e-09 to 1e+18" in proc.stderr
    assert "RuntimeWarning" not in proc.stderr


def test_a_period_the_recording_cannot_hold_is_left_out_with_a_caveat():
    proc = run_cli("profile", HUGE_PERIOD, subprocess=True)
    assert proc.returncode == 0, proc.stderr
    assert "RuntimeWarning" not in proc.stderr and "Traceback" not in proc.stderr
    assert "23 samples, total period 23023023" in proc.stdout  # 23 x 1001001 ns
    assert (
        "1 cpu-clock sample(s) with a period beyond 1e+11 (100 a ns of a recording of "
        "0.021 s, or of 1 s at least) left out" in " ".join(proc.stdout.split())
    )
    # no function holds (nearly) every sample's period because of one sample
    assert " 65.22%   100.00%       15  [unknown]" in proc.stdout


def test_periods_never_overflow_the_totals():
    import schedwake

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (numpy's "invalid value encountered in cast")
        prof = schedwake.profile(schedwake.load(HUGE_PERIOD))
    assert prof.total_period == 23023023 and prof.rows["self_period"].min() >= 0
    assert prof.rows["self_share"].sum() == pytest.approx(1.0)


# -- kallsyms ------------------------------------------------------------------------------------


def test_a_kallsyms_address_beyond_64_bits_is_left_out_with_a_warning(tmp_path):
    import gzip

    ks = tmp_path / "kallsyms"
    ks.write_bytes(
        gzip.decompress(SAMPLE_KALLSYMS.read_bytes())
        + (DATA / "kallsyms" / "address-160-bits.txt").read_bytes()
    )
    proc = run_cli("profile", PROFILE, "--kallsyms", ks, subprocess=True)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    said = " ".join(proc.stdout.split())
    assert f"{ks}: 1 kallsyms line(s) with an address beyond 64 bits left out" in said
    assert "evil_wide_symbol" not in proc.stdout


def test_a_kallsyms_of_mostly_wide_addresses_is_refused():
    bad = DATA / "kallsyms" / "mostly-160-bits.txt"
    proc = run_cli("profile", PROFILE, "--kallsyms", bad, subprocess=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == (
        f"schedwake: {bad}: 3 of its 4 lines have an address beyond 64 bits: not a kallsyms"
    )


def test_the_kernel_symbol_tables_skip_wide_addresses():
    from schedwake.symbols.kernel import KernelSymbols
    from schedwake.symbols.resolve import KernelTable

    text = (DATA / "kallsyms" / "mostly-160-bits.txt").read_bytes()
    assert list(KernelSymbols(text).names) == ["_text"]
    assert list(KernelTable(text).symbols.names) == ["_text"]
