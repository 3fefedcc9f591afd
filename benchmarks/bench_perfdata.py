#!/usr/bin/env python3
"""Benchmark: perf.data -> Arrow tables with schedwake, side by side with perf's own tools.

Measures, on one `perf sched record` file of at least 750,000 samples and in the same run:
  * schedwake.load(path) with the default jobs and with jobs=1: wall time, samples/s,
    peak anonymous memory above the interpreter's baseline, the size of the Arrow
    tables; and the perf-script reader (`reader="perf-script"`, the text path);
  * `perf sched timehist -M -w`, `perf sched latency`, `perf script`: wall time, peak RSS
    (output to /dev/null);
  * `schedwake analyze` (a whole process: start-up, reading, model, detectors, report)
    against `perf sched timehist -M -w` + `perf sched latency` together;
  * `schedwake convert` of the file and of a recording a quarter its size: peak RSS,
    which must not grow with the file (it streams, round by round).
Each measurement runs in a fresh subprocess, best of --repeat runs.

Without --trace it records one at run time (root needed): `perf sched record --
perf bench sched messaging -g 8 -l 2500` (or the command after --); the big file is
never committed.

    sudo .venv/bin/python benchmarks/bench_perfdata.py [--trace FILE] [--keep FILE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_tracedat import best, run_convert, run_schedwake, timed  # noqa: E402

WORKLOAD = ["perf", "bench", "sched", "messaging", "-g", "8", "-l", "2500"]


def record(out: Path, command: list[str]) -> None:
    subprocess.run(
        ["perf", "sched", "record", "-o", str(out), "--", *command],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def perf_script_reader(path: Path) -> dict:
    code = (
        "import json, sys, time, schedwake\n"
        "t0 = time.perf_counter()\n"
        "t = schedwake.load(sys.argv[1], reader='perf-script')\n"
        "print(json.dumps({'seconds': time.perf_counter() - t0}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, help="benchmark this perf.data instead of recording")
    ap.add_argument("--keep", type=Path, help="keep the recorded perf.data here")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("command", nargs="*", default=WORKLOAD)
    args = ap.parse_args()
    schedwake = str(Path(sys.executable).with_name("schedwake"))

    tmpdir = Path(tempfile.mkdtemp(prefix="schedwake-bench-"))
    try:
        path = args.trace
        if path is None:
            path = args.keep or tmpdir / "sched.data"
            print(f"recording: perf sched record -- {' '.join(args.command)}", file=sys.stderr)
            record(path, args.command)
        small = tmpdir / "small.data"
        n_small = [a for a in args.command]
        if "-l" in n_small:  # a quarter of the loops: a quarter of the samples
            i = n_small.index("-l") + 1
            n_small[i] = str(max(1, int(n_small[i]) // 4))
        record(small, n_small)

        r = args.repeat
        full = best([run_schedwake(path, None) for _ in range(r)])
        serial = best([run_schedwake(path, None, jobs=1) for _ in range(r)])
        text = perf_script_reader(path)
        timehist = best(
            [timed(["perf", "sched", "timehist", "-M", "-w", "-i", str(path)]) for _ in range(r)]
        )
        latency = best([timed(["perf", "sched", "latency", "-i", str(path)]) for _ in range(r)])
        script = best([timed(["perf", "script", "-i", str(path)]) for _ in range(r)])
        analyze = best([timed([schedwake, "analyze", str(path)]) for _ in range(r)])
        conv_full = best([run_convert(path) for _ in range(r)])
        conv_small = best([run_convert(small) for _ in range(r)])
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)

    n = full["events_total"]
    size = (args.trace or args.keep).stat().st_size if (args.trace or args.keep) else 0
    print(f"\nperf.data: {n} samples{f', {size / 2**20:.1f} MiB' if size else ''}; best of {r}")
    print(f"{'reader':<40}{'seconds':>9}{'Msamples/s':>12}{'peak MiB':>10}{'tables MiB':>12}")
    rows = [
        ("perf script > /dev/null", script, None),
        ("perf sched timehist -M -w", timehist, None),
        ("perf sched latency", latency, None),
        ("schedwake.load (perf-script reader)", text, None),
        ("schedwake.load (jobs=default)", full, full),
        ("schedwake.load (jobs=1)", serial, serial),
    ]
    for name, m, own in rows:
        peak = own["peak_anon_kb"] / 1024 if own else m.get("peak_kb", 0) / 1024
        tables = f"{own['table_bytes'] / 2**20:.0f}" if own else ""
        print(
            f"{name:<40}{m['seconds']:>9.2f}{n / m['seconds'] / 1e6:>12.2f}"
            f"{peak:>10.0f}{tables:>12}"
        )
    both = timehist["seconds"] + latency["seconds"]
    print(
        f"\nschedwake.load vs perf sched timehist:        "
        f"{timehist['seconds'] / full['seconds']:.1f}x faster"
    )
    print(
        f"schedwake.load vs the perf-script reader:     "
        f"{text['seconds'] / full['seconds']:.1f}x faster"
    )
    print(
        f"schedwake analyze (whole process):            {analyze['seconds']:.2f} s, "
        f"timehist + latency {both:.2f} s"
    )
    print(
        f"peak anon / Arrow tables:                     "
        f"{full['peak_anon_kb'] * 1024 / full['table_bytes']:.2f}"
    )
    print(
        f"schedwake convert, peak RSS MiB:              quarter "
        f"{conv_small['peak_kb'] / 1024:.0f}, whole {conv_full['peak_kb'] / 1024:.0f}"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "samples": n,
                    "schedwake_all": full,
                    "schedwake_jobs1": serial,
                    "perf_script_reader": text,
                    "perf_sched_timehist": timehist,
                    "perf_sched_latency": latency,
                    "perf_script": script,
                    "schedwake_analyze": analyze,
                    "convert_quarter": conv_small,
                    "convert_all": conv_full,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
