#!/usr/bin/env python3
"""Write the synthetic sample traces of ``sample_traces/synthetic/``.

Each sample is a :func:`schedwake.synth.make_trace` trace with planted, exactly known
pathologies (fixed seed), written as raw ftrace text (the kernel's tracefs ``trace``
file format, gzip-compressed: :func:`schedwake.synth.write_ftrace_text`):

* ``NAME.txt.gz``: the events;
* ``NAME.topology.json``: the synthetic CPU map (8 CPUs, 2 LLCs of 4, SMT pairs), in
  the format of the real ``*.topology.json`` files;
* ``planted.json`` (one for all): per file, the ``make_trace`` parameters (seed
  included), the planted counts and the event counts.

The output is deterministic: running the script twice gives identical bytes (gzip
without name and with mtime 0; JSON with sorted keys). ``tests/test_synthetic_samples.py``
checks that the committed files equal what this script writes.

Usage (from the repository root)::

    .venv/bin/python scripts/write-synthetic-samples.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from schedwake.synth import make_trace, write_ftrace_text

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "sample_traces" / "synthetic"

#: name -> (description, make_trace parameters). Every planted scene count is large
#: enough for its detector's default thresholds; the background scenes alone find nothing.
SAMPLES: dict[str, tuple[str, dict]] = {
    "healthy": (
        "background scenes only (irq and softirq wake-ups, user tasks waking "
        "each other, kworkers waking tasks on their own CPU, newly-idle "
        "load-balance pulls): no findings",
        dict(background=600, seed=11),
    ),
    "pingpong": (
        "bound kworkers waking a task whose previous CPU is the kworker's, "
        "the task migrated away (40 stackable, 15 with another task runnable "
        "on the kworker's CPU)",
        dict(pingpong=40, pingpong_busy=15, background=300, seed=12),
    ),
    "roundrobin": (
        "one user task woken onto a different CPU of its LLC at every wake-up",
        dict(roundrobin=80, background=300, seed=13),
    ),
    "storm": (
        "a kworker and a pinned task alternating on CPU 1, the kworker preempted "
        "(R+) at every wake-up and the task sleeping again after 8 us",
        dict(storm=400, background=300, seed=14),
    ),
    "idle-gap": (
        "a task woken onto a busy CPU and waiting 0.2-2 ms while another CPU of its LLC is idle",
        dict(idle_gaps=60, background=300, seed=15),
    ),
    "mixed": (
        "all four pathologies in one trace (enough ping-pong episodes that a fifth of "
        "the kworkers' wake-ups on their own CPU move the task, the storm's included)",
        dict(
            pingpong=100,
            pingpong_busy=20,
            roundrobin=60,
            storm=300,
            idle_gaps=60,
            background=400,
            seed=16,
        ),
    ),
}


def write_samples(out: Path) -> dict:
    """Write every sample into ``out``; returns the planted.json content."""
    out.mkdir(parents=True, exist_ok=True)
    index = {}
    for name, (description, params) in SAMPLES.items():
        trace, planted = make_trace(**params)
        trace_file, topo_file = f"{name}.txt.gz", f"{name}.topology.json"
        write_ftrace_text(trace, out / trace_file)
        (out / topo_file).write_text(trace.topology.to_json() + "\n")
        index[name] = {
            "file": trace_file,
            "topology": topo_file,
            "description": description,
            "params": params,
            "planted": planted,
            "events": {e: trace.table(e).num_rows for e in trace.events if trace.table(e).num_rows},
        }
    doc = {
        "generator": "scripts/write-synthetic-samples.py (schedwake.synth.make_trace, "
        "schedwake.synth.write_ftrace_text)",
        "samples": index,
    }
    (out / "planted.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return doc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"output directory (default: {DEFAULT_OUT.relative_to(ROOT)})",
    )
    args = ap.parse_args(argv)
    doc = write_samples(args.out)
    for s in doc["samples"].values():
        size = (args.out / s["file"]).stat().st_size
        print(f"{s['file']:<22} {sum(s['events'].values()):>6} events {size:>8} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
