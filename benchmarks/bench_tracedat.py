#!/usr/bin/env python3
"""Benchmark: trace.dat -> Arrow tables with schedwake, side by side with `trace-cmd report`.

Measures, on one trace of at least 5 million events and in the same run:
  * schedwake.load(path) with the default jobs (the CPUs this process may use), with
    jobs=1, and for a 2-event subset, each after the libraries are imported (a
    warm-up load of a small sample first); and a fresh process's first load (its
    imports included): wall time, events/s, peak RSS and peak
    anonymous memory above the interpreter's baseline, the size of the Arrow
    tables, and the files left in a private $TMPDIR (there should be none);
  * `trace-cmd report -i path > /dev/null`: wall time, events/s, peak RSS;
  * `schedwake convert` of the trace and of its first 2 million events (cut with
    `trace-cmd split`): peak RSS, which must not grow with the trace (it streams).
Each measurement runs in a fresh subprocess, best of --repeat interleaved rounds.

Without --trace it records one at run time (root and tracefs needed): `perf bench
sched messaging` (or the command after --) traced in a private tracefs instance
with the scheduler and workqueue events, until --events events were written; the
big file is never committed.

    sudo .venv/bin/python benchmarks/bench_tracedat.py [--trace FILE] [--keep FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

TRACEFS = Path("/sys/kernel/tracing")
EVENTS = [
    "sched/sched_waking",
    "sched/sched_wakeup",
    "sched/sched_wakeup_new",
    "sched/sched_migrate_task",
    "sched/sched_switch",
    "sched/sched_process_fork",
    "sched/sched_process_exit",
    "workqueue",
]

LOAD_SNIPPET = r"""
import json, resource, sys, threading, time
import schedwake

def anon_kb():
    with open("/proc/self/status") as f:
        return sum(int(l.split()[1]) for l in f if l.startswith(("RssAnon:", "RssShmem:")))

state = {"peak_anon": 0, "run": True}
def sample():  # peak anonymous memory: RSS without the file pages libtracecmd maps
    while state["run"]:
        state["peak_anon"] = max(state["peak_anon"], anon_kb())
        time.sleep(0.005)

base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
base_anon = anon_kb()
events = json.loads(sys.argv[2])
jobs = json.loads(sys.argv[3])
warm = sys.argv[4] == "warm"
if warm:
    # after the libraries a load imports (pyarrow, numpy, pandas: lazily, ~0.5 s) and
    # the decoder's first call, as in a notebook or a long-lived process
    ti = time.perf_counter()
    schedwake.load(sys.argv[5], jobs=1)
    import_s = time.perf_counter() - ti
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    base_anon = anon_kb()
sampler = threading.Thread(target=sample, daemon=True)
sampler.start()
t0 = time.perf_counter()
trace = schedwake.load(sys.argv[1], events=events, jobs=jobs)
dt = time.perf_counter() - t0
state["run"] = False
sampler.join()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
nbytes = sum(trace.table(n).nbytes for n in trace.events)
read = sum(trace.table(n).num_rows for n in trace.events)
print(json.dumps({"seconds": dt, "warm": warm, "peak_kb": peak, "base_kb": base,
                  "table_bytes": nbytes,
                  "peak_anon_kb": state["peak_anon"] - base_anon,
                  "events_read": read, "events_total": sum(trace.meta.event_counts.values())}))
"""


def record(out: Path, want_events: int, command: list[str]) -> None:
    """Record `command` (repeated) in a private instance until want_events are written."""
    inst = TRACEFS / "instances" / f"schedwake-bench-{os.getpid()}"
    if not (TRACEFS / "tracing_on").exists():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], check=True)
    inst.mkdir()
    tmp = Path(tempfile.mkdtemp(prefix="schedwake-bench-"))
    try:
        (inst / "buffer_size_kb").write_text(str(max(65536, want_events // 10)))
        for e in EVENTS:
            (inst / "events" / e / "enable").write_text("1")
        (inst / "tracing_on").write_text("1")
        deadline = time.time() + 300
        while time.time() < deadline:
            subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            written = sum(
                int(line.split()[1])
                for cpu in (inst / "per_cpu").iterdir()
                for line in (cpu / "stats").read_text().splitlines()
                if line.startswith("entries:")
            )
            print(f"  recorded {written} events", file=sys.stderr)
            if written >= want_events:
                break
        (inst / "tracing_on").write_text("0")
        raws = []
        for cpu in sorted((inst / "per_cpu").iterdir(), key=lambda p: int(p.name[3:])):
            raw = tmp / f"{cpu.name}.raw"
            subprocess.run(
                ["dd", f"if={cpu / 'trace_pipe_raw'}", f"of={raw}", "bs=4096", "iflag=nonblock"],
                stderr=subprocess.DEVNULL,
            )
            raws.append(str(raw))
        subprocess.run(
            ["trace-cmd", "restore", "-c", "-o", str(tmp / "head.dat")],
            check=True,
            capture_output=True,
        )
        subprocess.run(
            [
                "trace-cmd",
                "restore",
                "-i",
                str(tmp / "head.dat"),
                "-o",
                str(tmp / "raw.dat"),
                *raws,
            ],
            check=True,
            capture_output=True,
        )
        subprocess.run(
            [
                "trace-cmd",
                "convert",
                "-i",
                str(tmp / "raw.dat"),
                "-o",
                str(out),
                "--compression",
                "zstd",
            ],
            check=True,
            capture_output=True,
        )
    finally:
        (inst / "tracing_on").write_text("0")
        (inst / "set_event").write_text("")
        inst.rmdir()
        shutil.rmtree(tmp, ignore_errors=True)


# a small trace whose load, before the measured one, imports what a load needs
WARM_UP = Path(__file__).resolve().parent.parent / "sample_traces" / "idle-sleep.dat"


def run_schedwake(path: Path, events, jobs=None, warm=True) -> dict:
    """schedwake.load in a fresh process: after a warm-up load of a small trace (warm:
    the libraries imported), or as the process's first load (imports included)."""
    with tempfile.TemporaryDirectory(prefix="schedwake-bench-tmp-") as tmp:
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                LOAD_SNIPPET,
                str(path),
                json.dumps(events),
                json.dumps(jobs),
                "warm" if warm else "cold",
                str(WARM_UP),
            ],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "TMPDIR": tmp},
        ).stdout
        result = json.loads(out)
        result["tmp_files"] = len(os.listdir(tmp))
    return result


def run_convert(path: Path) -> dict:
    """`schedwake convert` in a fresh process: seconds and peak RSS."""
    schedwake = Path(sys.executable).with_name("schedwake")
    with tempfile.TemporaryDirectory(prefix="schedwake-bench-out-") as out:
        t0 = time.perf_counter()
        proc = subprocess.run(
            ["/usr/bin/time", "-f", "%M", str(schedwake), "convert", str(path), "-o", out],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=True,
        )
        dt = time.perf_counter() - t0
    return {"seconds": dt, "peak_kb": int(proc.stderr.strip().splitlines()[-1])}


def first_events(path: Path, n: int, outdir: Path) -> Path:
    """The first n events of path, as trace-cmd split writes them."""
    subprocess.run(
        ["trace-cmd", "split", "-i", str(path), "-o", str(outdir / "cut.dat"), "-e", str(n)],
        check=True,
        capture_output=True,
    )
    return outdir / "cut.dat.1"


def timed(argv: list[str]) -> dict:
    """Wall and CPU seconds (user + system) and peak RSS of a command, its output
    thrown away; a failing command ends the benchmark with its error."""
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "%e %U %S %M", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(argv)}\n{proc.stderr}")
    wall, user, system, peak_kb = proc.stderr.strip().splitlines()[-1].split()
    return {"seconds": float(wall), "cpu": float(user) + float(system), "peak_kb": int(peak_kb)}


def run_trace_cmd(path: Path) -> dict:
    return timed(["trace-cmd", "report", "-i", str(path)])


def best(runs: list[dict]) -> dict:
    return min(runs, key=lambda r: r["seconds"])


def add_trace_arguments(ap: argparse.ArgumentParser, events: int) -> None:
    """--trace / --events / --keep / COMMAND: which trace a benchmark runs on."""
    ap.add_argument("--trace", type=Path, help="benchmark this trace.dat instead of recording")
    ap.add_argument("--events", type=int, default=events, help="events to record")
    ap.add_argument("--keep", type=Path, help="keep the recorded trace here")
    ap.add_argument(
        "command",
        nargs="*",
        default=["perf", "bench", "sched", "messaging", "-g", "4", "-l", "300"],
    )


@contextmanager
def benchmark_trace(args):
    """The trace given with --trace, or one recorded now (removed afterwards unless --keep)."""
    if args.trace is not None:
        yield args.trace
        return
    tmpdir = Path(tempfile.mkdtemp(prefix="schedwake-bench-"))
    try:
        path = args.keep or tmpdir / "bench.dat"
        print(f"recording {args.events} events with: {' '.join(args.command)}", file=sys.stderr)
        record(path, args.events, args.command)
        yield path
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_arguments(ap, events=5_500_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args()

    with benchmark_trace(args) as path, tempfile.TemporaryDirectory() as cutdir:
        size = path.stat().st_size
        # interleaved rounds, so that a slow spell of the machine (other guests) does not
        # fall on one row only
        runs: dict[str, list[dict]] = {k: [] for k in ("full", "cold", "serial", "subset", "tc")}
        for _ in range(args.repeat):
            runs["full"].append(run_schedwake(path, None))
            runs["cold"].append(run_schedwake(path, None, warm=False))
            runs["serial"].append(run_schedwake(path, None, jobs=1))
            runs["subset"].append(run_schedwake(path, ["sched_switch", "sched_waking"]))
            runs["tc"].append(run_trace_cmd(path))
        full, cold, serial, subset, tc = (best(runs[k]) for k in runs)
        cut = first_events(path, 2_000_000, Path(cutdir))
        conv_full = best([run_convert(path) for _ in range(args.repeat)])
        conv_cut = best([run_convert(cut) for _ in range(args.repeat)])
    n = full["events_total"]
    jobs = len(os.sched_getaffinity(0))
    rows = [
        ("trace-cmd report > /dev/null", tc["seconds"], tc["peak_kb"] / 1024, None, None),
        (
            f"schedwake.load (all, jobs={jobs})",
            full["seconds"],
            (full["peak_kb"] - full["base_kb"]) / 1024,
            full["peak_anon_kb"] / 1024,
            full["table_bytes"] / 2**20,
        ),
        (
            f"first load of a process (jobs={jobs})",
            cold["seconds"],
            (cold["peak_kb"] - cold["base_kb"]) / 1024,
            cold["peak_anon_kb"] / 1024,
            cold["table_bytes"] / 2**20,
        ),
        (
            "schedwake.load (all, jobs=1)",
            serial["seconds"],
            (serial["peak_kb"] - serial["base_kb"]) / 1024,
            serial["peak_anon_kb"] / 1024,
            serial["table_bytes"] / 2**20,
        ),
        (
            "schedwake.load (2 events)",
            subset["seconds"],
            (subset["peak_kb"] - subset["base_kb"]) / 1024,
            subset["peak_anon_kb"] / 1024,
            subset["table_bytes"] / 2**20,
        ),
    ]
    print(f"\ntrace: {n} events, {size / 2**20:.1f} MiB trace.dat; best of {args.repeat}")
    print(
        f"{'reader':<32}{'seconds':>9}{'Mevents/s':>11}{'x report':>10}"
        f"{'peak RSS MiB':>14}{'peak anon MiB':>15}{'tables MiB':>12}"
    )
    for name, sec, peak, anon, tables in rows:
        print(
            f"{name:<32}{sec:>9.2f}{n / sec / 1e6:>11.2f}{tc['seconds'] / sec:>10.1f}"
            f"{peak:>14.0f}{'' if anon is None else f'{anon:.0f}':>15}"
            f"{'' if tables is None else f'{tables:.0f}':>12}"
        )
    print("\nschedwake.load rows: after the libraries are imported (a warm-up load of a small")
    print("trace); the first-load row: a fresh process's first load, imports included")
    print("peak RSS counts the trace file's pages the reader maps; peak anon does not")
    print(f"jobs={jobs} / jobs=1 speed-up:            {serial['seconds'] / full['seconds']:.2f}")
    print(
        f"peak anon / Arrow tables (all events): "
        f"{full['peak_anon_kb'] * 1024 / full['table_bytes']:.2f}"
    )
    print(
        f"files left in $TMPDIR:                 "
        f"{max(full['tmp_files'], serial['tmp_files'], subset['tmp_files'])}"
    )
    print(
        f"schedwake convert, peak RSS MiB:       2M events {conv_cut['peak_kb'] / 1024:.0f}, "
        f"{n / 1e6:.1f}M events {conv_full['peak_kb'] / 1024:.0f} "
        f"({conv_cut['seconds']:.2f} s, {conv_full['seconds']:.2f} s)"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "events": n,
                    "trace_cmd": tc,
                    "schedwake_all": full,
                    "schedwake_first_load": cold,
                    "schedwake_jobs1": serial,
                    "schedwake_subset": subset,
                    "convert_2M": conv_cut,
                    "convert_all": conv_full,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
