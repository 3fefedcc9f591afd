"""``schedwake profile`` against ``perf report`` on real recordings made here (so on the
running kernel, whose kallsyms names their kernel frames).

The fixtures record with ``perf record -g`` into tmp_path (a system-wide profile of
``perf bench sched messaging``, a small C program with two hot functions), and the
shares are checked against what ``perf report --stdio --children`` prints in its Self
and Children columns for the same file, to their 2 printed decimals. The tests skip,
saying why, where perf is missing or may not record (perf_event_paranoid, no root).
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import schedwake
from schedwake.cli import main
from schedwake.profile import profile
from schedwake.report import profile as report
from schedwake.symbols import elf
from schedwake.symbols.kernel import choose_kallsyms, kernel_build_id
from schedwake.symbols.resolve import UNKNOWN, Resolver, dso_name

from .conftest import computed_once, run_cli, sample

PERF = shutil.which("perf")
CC = shutil.which("gcc") or shutil.which("cc")

PROG = r"""
#include <stdio.h>
#include <stdlib.h>
volatile double sink;
__attribute__((noinline)) double spin_alpha(long n)
{ double s = 0; for (long i = 1; i < n; i++) s += 1.0 / (double)i; return s; }
__attribute__((noinline)) double spin_beta(long n)
{ double s = 0; for (long i = 1; i < n; i++) s += (double)(i % 7) * 0.5; return s; }
__attribute__((noinline)) void work(long n)
{ for (int k = 0; k < 10; k++) { sink += spin_alpha(n); sink += spin_beta(3 * n); } }
int main(int argc, char **argv)
{ long n = argc > 1 ? atol(argv[1]) : 1000000; work(n); printf("%f\n", sink); return 0; }
"""


@pytest.fixture(autouse=True)
def _recorded_here(running_kernel):
    """Every profile of this module is recorded on this machine (the fixtures below): its
    kernel is the recorded one, and its kernel frames are named from this machine's
    kallsyms as outside the test suite (tests/conftest.py: the suite runs as on another
    kernel otherwise)."""


def record(out: Path, *args: str) -> Path:
    """``perf record ARGS -o OUT``; skips the test when perf cannot record here."""
    if PERF is None:
        pytest.skip("perf is not installed")
    # -N: no copies in ~/.debug (the tests read the files themselves, as schedwake does)
    proc = subprocess.run(
        [PERF, "record", "-N", "-o", str(out), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0 or not out.exists():
        why = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"perf record is not permitted or failed here: {why}")
    return out


@pytest.fixture(scope="module")
def messaging(tmp_path_factory) -> Path:
    """A system-wide profile of a scheduler-heavy workload (kernel and user frames),
    recorded once per test run and shared by the xdist workers (tests/conftest.py,
    ``computed_once``: the file's bytes), each reading its own copy."""

    def make() -> bytes:
        out = tmp_path_factory.mktemp("profile-recorded") / "messaging.perf.data"
        return record(
            out, "-g", "-a", "-F", "999", "--", PERF or "perf", "bench", "sched", "messaging",
            "-g", "2", "-l", "200",
        ).read_bytes()  # fmt: skip

    data = computed_once(
        "test_profile: perf record -N -g -a -F 999 -- perf bench sched messaging -g 2 -l 200",
        make,
    )
    out = tmp_path_factory.mktemp("profile") / "messaging.perf.data"
    out.write_bytes(data)
    return out


@pytest.fixture(scope="module")
def prog(tmp_path_factory) -> Path:
    if CC is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("prog")
    (d / "prog.c").write_text(PROG)
    subprocess.run(
        [CC, "-O1", "-g", "-fno-omit-frame-pointer", "-o", str(d / "prog"), str(d / "prog.c")],
        check=True,
    )
    return d / "prog"


@pytest.fixture(scope="module")
def prog_profile(prog) -> Path:
    return record(prog.with_name("prog.perf.data"), "-g", "-F", "999", "--", str(prog), "4000000")


def perf_report(path: Path, *extra: str) -> tuple[dict, dict]:
    """(self, children): (dso, symbol) -> the percentages ``perf report --stdio
    --children`` prints for it in its Self and Children columns, one per row (perf prints
    a row per function *address*: two static functions of one name are two rows; and,
    with --sort comm, per thread name). One run gives both: its Self column is what
    ``--no-children`` prints (the same hist entries' own periods; the rows --children
    adds are callers with no sample of their own, Self 0.00%, which no floor reaches)."""
    keys = "comm,dso,sym" if "--comm" in extra else "dso,sym"
    proc = subprocess.run(
        [PERF or "perf", "report", "--stdio", "-i", str(path), "--sort", keys, "-g", "none",
         "--children", *extra],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    own: dict[tuple[str, str], list[float]] = {}
    children: dict[tuple[str, str], list[float]] = {}
    for line in proc.stdout.splitlines():
        m = re.match(r"\s+([\d.]+)%\s+([\d.]+)%\s+(?:.*?\s)?(\S+)\s+\[.\]\s+(.*\S)", line)
        if m and not line.startswith("#"):
            key = (m.group(3), m.group(4))
            children.setdefault(key, []).append(float(m.group(1)))
            own.setdefault(key, []).append(float(m.group(2)))
    return own, children


def unresolved_in_perf(symbol: str) -> bool:
    """perf prints an address it cannot name as the address itself, one row each."""
    return symbol.startswith("0x") or re.fullmatch(r"[0-9a-f]{16}", symbol) is not None


def assert_matches_perf(path: Path, prof, *extra: str, floor: float = 0.5) -> int:
    """Every function perf prints at ``floor``% or more, self and children, has the
    share perf prints (2 decimals, as perf computes and prints it: ``100.0 * period /
    total`` through printf's ``%.2f``); returns how many were compared."""
    ours = {(r.dso, r.symbol): r for r in prof.rows.itertuples()}
    compared, wrong = 0, []
    for children, printed in zip((False, True), perf_report(path, *extra)):
        for (dso, sym), pcts in printed.items():
            if sum(pcts) < floor or unresolved_in_perf(sym):
                continue
            r = ours.get((dso, sym))
            period = 0 if r is None else (r.children_period if children else r.self_period)
            got = 100.0 * period / prof.total_period
            compared += 1
            if len(pcts) == 1:  # exactly what perf prints
                same = f"{got:.2f}" == f"{pcts[0]:.2f}"
            elif not children:  # a sum of rounded rows: within their rounding
                same = abs(got - sum(pcts)) <= 0.005 * len(pcts) + 1e-9
            else:  # a sample under both addresses (one calling the other) counts once
                tol = 0.005 * len(pcts) + 1e-9
                same = max(pcts) - tol <= got <= sum(pcts) + tol
            if not same:
                wrong.append((("children" if children else "self"), dso, sym, pcts, got))
    assert not wrong, f"shares differing from perf report: {wrong}"
    return compared


# -- the shares ----------------------------------------------------------------------------
@pytest.mark.slow
def test_shares_equal_perf_report(messaging):
    prof = profile(schedwake.load(messaging))
    assert prof.callchains and prof.samples > 50
    assert prof.event.startswith("cpu-clock") or prof.event.startswith("cycles")
    assert assert_matches_perf(messaging, prof, floor=0.5) > 10
    # the total is perf's "Event count"; the named shares and [unknown] add up to 1
    assert prof.total_period == int(prof.rows["self_period"].sum())
    assert prof.rows["self_share"].sum() == pytest.approx(1.0)
    assert (prof.rows["children_share"] >= prof.rows["self_share"] - 1e-12).all()
    assert prof.rows["samples"].sum() == prof.samples
    # sorted by self, then children
    s = prof.rows[["self_share", "children_share"]].to_numpy()
    assert all(tuple(a) >= tuple(b) for a, b in zip(s, s[1:]))


def test_kernel_frames_are_named_when_the_kernel_is_this_one(messaging):
    trace = schedwake.load(messaging)
    prof = profile(trace)
    kernel = prof.rows[prof.rows["dso"] == "[kernel.kallsyms]"]
    assert (kernel["level"] == "k").all()
    named = kernel[kernel["symbol"] != UNKNOWN]
    assert named["self_share"].sum() > 0.3  # a messaging benchmark lives in the kernel
    assert "entry_SYSCALL_64" in " ".join(named["symbol"]) or "do_syscall_64" in set(
        named["symbol"]
    )
    assert prof.kernel_symbols.startswith("/proc/kallsyms")


def test_another_kernel_gets_no_kernel_names(messaging, tmp_path):
    """A recording of another kernel: /proc/kallsyms would name the wrong functions, so
    kernel addresses stay [unknown] and a caveat says why; --kallsyms names them."""
    choice = choose_kallsyms("1.2.3-not-this-one", "00" * 20)
    assert choice.text is None and "not the running one" in choice.reason
    trace = schedwake.load(messaging)
    real_id = kernel_build_id(trace.meta.source["build_ids"])
    trace.meta = dataclasses.replace(trace.meta, kernel="1.2.3-not-this-one")
    for b in trace.meta.source["build_ids"]:
        if b["filename"] == "[kernel.kallsyms]":
            b["build_id"] = "00" * 20
    prof = profile(trace)
    kernel = prof.rows[prof.rows["dso"] == "[kernel.kallsyms]"]
    assert list(kernel["symbol"]) == [UNKNOWN]
    assert kernel["self_share"].iloc[0] > 0.3
    assert any("not the running one" in c for c in prof.caveats)
    assert any("kallsyms" in c for c in prof.caveats)
    assert "not the running one" in prof.kernel_symbols
    # ... a kallsyms file given for it is used as it is
    copy = tmp_path / "kallsyms"
    copy.write_bytes(Path("/proc/kallsyms").read_bytes())
    named = profile(trace, kallsyms=copy)
    assert named.kernel_symbols.startswith(str(copy))
    reference = profile(schedwake.load(messaging))
    assert set(named.rows["symbol"]) == set(reference.rows["symbol"])
    assert real_id  # the file recorded the kernel's build id


# -- user space ------------------------------------------------------------------------------
@pytest.mark.slow
def test_user_program_functions_are_named(prog, prog_profile):
    prof = profile(schedwake.load(prog_profile))
    rows = prof.rows.set_index(["dso", "symbol"])
    alpha, beta = rows.loc[("prog", "spin_alpha")], rows.loc[("prog", "spin_beta")]
    assert alpha["self_share"] > 0.05 and beta["self_share"] > 0.3
    assert alpha["self_share"] + beta["self_share"] > 0.8
    assert alpha["level"] == "." and beta["level"] == "."
    # most samples are under main; the rest fall in the loader and exit, more of them on
    # a loaded machine (0.947 was seen with the suite on 2 busy CPUs)
    assert rows.loc[("prog", "main"), "children_share"] > 0.9
    assert rows.loc[("prog", "main"), "self_share"] < 0.05
    assert assert_matches_perf(prog_profile, prof, floor=0.5) >= 4


def test_a_rebuilt_binary_is_not_used(prog, prog_profile, tmp_path):
    """The file at the recorded path now has another build id: its symbols would name
    the wrong functions, so its addresses stay [unknown], counted, with a caveat."""
    trace = schedwake.load(prog_profile)
    moved = tmp_path / "prog"
    shutil.copy2(prog, moved)
    try:
        (tmp_path / "other.c").write_text(PROG.replace("i % 7", "i % 5"))
        subprocess.run([CC or "cc", "-O1", "-o", str(prog), str(tmp_path / "other.c")], check=True)
        prof = profile(trace)
    finally:
        shutil.copy2(moved, prog)
    mine = prof.rows[prof.rows["dso"] == "prog"]
    assert list(mine["symbol"]) == [UNKNOWN]
    assert elf.BUILD_ID_MISMATCH in prof.unresolved
    assert prof.unresolved[elf.BUILD_ID_MISMATCH]["self_share"] > 0.8
    assert prof.unresolved[elf.BUILD_ID_MISMATCH]["dsos"] == ["prog"]
    assert any("rebuilt or replaced" in c for c in prof.caveats)
    # the original again: named
    assert "spin_beta" in set(profile(trace).rows["symbol"])


@pytest.mark.slow
def test_without_callchains_children_equal_self(prog, tmp_path):
    flat = record(tmp_path / "flat.perf.data", "-F", "999", "--", str(prog), "4000000")
    prof = profile(schedwake.load(flat))
    assert not prof.callchains
    assert np.allclose(prof.rows["self_share"], prof.rows["children_share"])
    assert "spin_beta" in set(prof.rows["symbol"])
    assert any("no callchains" in c for c in prof.caveats)
    assert_matches_perf(flat, prof)


@pytest.mark.slow
def test_dwarf_callchains_are_said_not_to_be_unwound(prog, tmp_path):
    # (the program runs ~20 ms: at 999 Hz some 20 samples; at 199 Hz for a quarter of
    # that, as before, a run now and then had none)
    data = record(
        tmp_path / "dwarf.perf.data", "--call-graph", "dwarf", "-F", "999", "--", str(prog),
        "4000000",
    )  # fmt: skip
    prof = profile(schedwake.load(data))
    assert any("--call-graph dwarf" in c for c in prof.caveats)


def test_each_address_is_named_once(messaging):
    """The resolver names unique (process, address) pairs: repeating rows repeats the
    answers, and a pair's answer does not depend on its neighbours."""
    trace = schedwake.load(messaging)
    t = trace.table("cpu-clock") if trace.has("cpu-clock") else trace.table(trace.events[0])
    pid = t.column("pid").to_numpy()
    ts = t.column("ts").to_numpy()
    ip = t.column("ip").to_numpy()
    ctx = t.column("cpumode").to_numpy()
    r = Resolver(trace)
    once = r.resolve(pid, ts, ip, ctx)
    twice = r.resolve(np.r_[pid, pid], np.r_[ts, ts], np.r_[ip, ip], np.r_[ctx, ctx])
    n = len(ip)
    assert list(twice.symbol[:n]) == list(once.symbol) == list(twice.symbol[n:])
    assert list(twice.dso[n:]) == list(once.dso)
    single = r.resolve(pid[:1], ts[:1], ip[:1], ctx[:1])
    assert single.symbol[0] == once.symbol[0]


# -- filters -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_filters_restrict_the_samples(messaging):
    trace = schedwake.load(messaging)
    whole = profile(trace)
    t = trace.table("cpu-clock") if trace.has("cpu-clock") else trace.table(trace.events[0])
    by_cpu = profile(trace, cpu=[0])
    assert by_cpu.samples == int((t.column("cpu").to_numpy() == 0).sum())
    assert by_cpu.filters["cpu"] == [0]
    assert_matches_perf(messaging, by_cpu, "-C", "0", floor=1.0)
    comm = profile(trace, comm="sched-messaging")
    assert 0 < comm.samples < whole.samples
    assert_matches_perf(
        messaging, comm, "--comm", "sched-messaging", "--percentage", "relative", floor=1.0
    )
    ts = t.column("ts").to_numpy()
    lo, hi = int(np.percentile(ts, 25)), int(np.percentile(ts, 75))
    window = profile(trace, time=(lo, hi))
    assert window.samples == int(((ts >= lo) & (ts <= hi)).sum())
    pids = t.column("pid").to_numpy()
    # the busiest task (a system-wide recording may hold samples of pid -1: no task)
    values, counts = np.unique(pids[pids >= 0], return_counts=True)
    pid = int(values[counts.argmax()])
    one = profile(trace, pid=[pid])
    assert one.samples == int((pids == pid).sum())
    with pytest.raises(schedwake.TraceError, match="no .* samples match"):
        profile(trace, comm="no-such-task")


# -- the renderers and the command line -----------------------------------------------------------
def test_text_and_json(prog_profile):
    prof = profile(schedwake.load(prog_profile))
    txt = report.text(prof)
    assert all(len(line) <= report.WIDTH for line in txt.splitlines())
    assert "event:" in txt and "total period" in txt and str(prof.samples) in txt
    assert re.search(r"^\s+Self\s+Children\s+Samples\s+DSO\s+Symbol$", txt, re.M)
    assert re.search(r"^\s+\d+\.\d\d%\s+\d+\.\d\d%\s+0\s+prog\s+\[\.\] main$", txt, re.M)
    doc = json.loads(report.to_json(prof))
    assert doc["samples"] == prof.samples and doc["total_period"] == prof.total_period
    assert len(doc["functions"]) == doc["functions_total"] == len(prof.rows)
    first = doc["functions"][0]
    assert set(first) >= {"symbol", "dso", "self_share", "children_share", "samples"}
    assert first["symbol"] == prof.rows["symbol"].iloc[0]
    assert isinstance(doc["caveats"], list) and isinstance(doc["unresolved"], dict)
    assert len(json.loads(report.to_json(prof, top=2))["functions"]) == 2


def cli(capsys, *args) -> tuple[int, str, str]:
    """``schedwake profile ARGS`` in this process: (exit code, stdout, stderr)."""
    capsys.readouterr()
    try:
        main(["profile", *(str(a) for a in args)])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_cli_text_json_top_and_filters(messaging, prog_profile, capsys):
    out = run_cli("profile", prog_profile, "--top", "3", subprocess=True)  # the console script
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"schedwake profile: {prog_profile.name}"
    assert any("spin_beta" in line for line in lines)
    assert re.search(r"^\.\.\. \d+ more functions", out.stdout, re.M)
    assert all(len(line) <= 100 for line in lines)
    code, js, _ = cli(capsys, prog_profile, "--format", "json", "--top", "2")
    assert code == 0
    doc = json.loads(js)
    assert [f["symbol"] for f in doc["functions"]] == ["spin_beta", "spin_alpha"]
    code, js, err = cli(
        capsys, messaging, "--format", "json", "--cpu", "0", "--comm", "sched-messaging",
        "--time", ",",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(js)
    assert doc["filters"]["cpu"] == [0] and doc["filters"]["comm"] == ["sched-messaging"]
    assert (
        0
        < doc["samples"]
        == profile(schedwake.load(messaging), cpu=[0], comm="sched-messaging").samples
    )
    code, txt, _ = cli(capsys, messaging, "--pid", "1,2", "--top", "0")
    assert code == 2 or "filters:  pid 1,2" in txt
    code, help_text, _ = cli(capsys, "--help")
    assert code == 0 and "Example:" in help_text and "schedwake profile perf.data" in help_text


def test_bad_input_exits_2_with_one_line(messaging, tmp_path, capsys):
    text = tmp_path / "notes.txt"
    text.write_text("not a trace at all\n")
    bad = tmp_path / "kallsyms"
    bad.write_text("this is not kallsyms\n")
    cases = {
        "not a trace": ([text], ""),
        "no profile samples": ([sample("dbench-xfs-1client.dat")], "no profile samples"),
        "unreadable --kallsyms": ([messaging, "--kallsyms", tmp_path / "nope"], "kallsyms"),
        "not kallsyms": ([messaging, "--kallsyms", bad], "not a kallsyms file"),
        "bad --pid": ([messaging, "--pid", "x"], "--pid"),
        "bad --time": ([messaging, "--time", "5"], "--time"),
        "no such event": ([messaging, "--event", "such-event"], "no event"),
        "nothing matches": ([messaging, "--comm", "no-such-task"], "match"),
    }
    for name, (args, says) in cases.items():
        code, out, err = cli(capsys, *args)
        assert code == 2, (name, out, err)
        assert out == "" and len(err.strip().splitlines()) == 1, (name, err)
        assert says in err, (name, err)
    # and through the console script
    out = run_cli("profile", messaging, "--cpu", "99")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().splitlines() == ["Error: --cpu 99: the trace has CPUs 0-1, not 99"]
    # the same through the API: TraceError
    trace = schedwake.load(messaging)
    with pytest.raises(schedwake.TraceError, match="not a kallsyms file"):
        profile(trace, kallsyms=bad)
    with pytest.raises(schedwake.TraceError, match="no event"):
        profile(trace, event="such-event")


@pytest.mark.slow
def test_a_tracepoint_recording_without_callchains_is_refused(tmp_path):
    data = record(tmp_path / "tp.perf.data", "-e", "sched:sched_switch", "-a", "--", "true")
    trace = schedwake.load(data)
    with pytest.raises(schedwake.TraceError, match="no profile samples"):
        profile(trace)


# -- ELF files -------------------------------------------------------------------------------
def test_elf_files_that_cannot_be_used(tmp_path):
    assert elf.load(tmp_path / "missing").problem == elf.MISSING
    (tmp_path / "text").write_text("hello\n")
    assert elf.load(tmp_path / "text").problem == elf.NOT_ELF
    assert elf.load(tmp_path).problem in (elf.NOT_ELF, elf.UNREADABLE)
    (tmp_path / "truncated").write_bytes(b"\x7fELF\x02\x01\x01" + b"\0" * 20)
    assert elf.load(tmp_path / "truncated").problem == elf.NOT_ELF
    assert dso_name("/usr/lib/x86_64-linux-gnu/libc.so.6") == "libc.so.6"
    assert dso_name("[vdso]") == "[vdso]" and dso_name("") == UNKNOWN


def test_elf_symbols_of_a_program(prog):
    got = elf.load(prog)
    assert got.ok and got.symbols is not None
    syms = got.symbols
    assert syms.table == ".symtab" and syms.build_id
    assert elf.load(prog) is got  # cached
    assert elf.load(prog, syms.build_id).ok
    wrong = elf.load(prog, "ff" * 20)
    assert wrong.problem == elf.BUILD_ID_MISMATCH and "rebuilt" in wrong.detail
    names = syms.names
    start = int(syms.starts[names.index("spin_alpha")])
    found, name = syms.lookup(np.array([start, start + 1], dtype=np.uint64))
    assert found.all() and list(name) == ["spin_alpha", "spin_alpha"]
    # file offset -> address through PT_LOAD: the text segment's offset maps to its vaddr
    p_offset, p_vaddr, _ = (int(x) for x in syms.loads[1])
    ok, vaddr = syms.offset_to_vaddr(np.array([p_offset], dtype=np.uint64))
    assert ok.all() and int(vaddr[0]) == p_vaddr
    ok, _ = syms.offset_to_vaddr(np.array([1 << 40], dtype=np.uint64))
    assert not ok.any()
    # the vDSO: this machine's image, from memory
    image = elf.vdso_image()
    if image is not None:
        vdso = elf.load("[vdso]", data=image)
        assert vdso.ok and vdso.symbols is not None
        assert any("clock_gettime" in n for n in vdso.symbols.names)


def test_demangled_as_perf_prints():
    cases = {
        "_ZNSo5flushEv": "std::ostream::flush",
        "_ZNSt8ios_base4InitD1Ev": "std::ios_base::Init::~Init",
        "_Z3fooIiEvT_": "foo<int>",
        "_ZN3FooltERKS_": "Foo::operator<",
        "_ZZ3fooiENKUlvE_clEv": "foo(int)::{lambda()#1}::operator()",
        "main": "main",
    }
    got = {k: elf.demangle(k) for k in cases}
    if got["_ZNSo5flushEv"] == "_ZNSo5flushEv":
        pytest.skip("libstdc++ is not loadable here: names stay mangled")
    assert got == cases
    thunk = elf.demangle("_ZTv0_n24_NSoD1Ev")
    assert thunk.startswith("virtual thunk to ") and thunk.endswith("()")
