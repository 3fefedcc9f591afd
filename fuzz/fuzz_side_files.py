#!/usr/bin/env python3
"""atheris harness: the side files a trace brings (#37) through the project's public
reading functions: ``TRACE.bench.json`` (:func:`schedwake.bench.parse_sidecar`), fio's
JSON (:func:`~schedwake.bench.parse_fio`), dbench's output
(:func:`~schedwake.bench.parse_dbench`), a recorded command's output
(:func:`~schedwake.bench.parse_output`), ``topology.json``
(:meth:`schedwake.topology.Topology.from_text`), the kernel's counters
(:func:`schedwake.counters.parse`), ``perf stat`` output
(:func:`~schedwake.counters.parse_perf_stat`) and gate rules TOML
(:func:`schedwake.gate.parse_rules`).

The input's first byte picks the reader, the rest is the file's text (UTF-8 with
errors replaced, as the readers get it). The only acceptable failure is
:class:`schedwake.TraceError` (its subclasses too) whose message is one line naming
the file; anything else is a finding. Pure Python: no sanitizer build.

    .venv/bin/python fuzz/run.py fuzz_side_files --seconds 600
"""

import importlib
import os
import sys

import atheris

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

with atheris.instrument_imports(include=["schedwake"]):
    from schedwake import bench, counters, sidevalues, topology  # noqa: F401
    from schedwake.errors import TraceError

    gate = importlib.import_module("schedwake.gate")

PATH = "/fuzz/side-file"
READERS = (
    lambda t: bench.parse_sidecar(t, PATH),
    lambda t: bench.parse_fio(t, PATH),
    lambda t: bench.parse_dbench(t, PATH),
    lambda t: bench.parse_output(t, PATH),
    lambda t: topology.Topology.from_text(t, PATH, 64),
    lambda t: counters.parse(t, PATH),
    lambda t: counters.parse_perf_stat(t, PATH),
    lambda t: gate.parse_rules(t, PATH),
)


def TestOneInput(data: bytes) -> None:
    if not data:
        return
    read = READERS[data[0] % len(READERS)]
    text = data[1:].decode("utf-8", errors="replace")
    try:
        read(text)
    except TraceError as exc:
        said = str(exc)
        if "\n" in said or not said.startswith(PATH + ": "):
            raise AssertionError(f"not one line naming the file: {said[:300]!r}") from None


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
