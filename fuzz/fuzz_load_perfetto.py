#!/usr/bin/env python3
"""atheris harness: ``schedwake.load`` over hostile Perfetto traces.

Each input is written to a file in a private temporary directory and loaded with
schedwake's Perfetto reader (schedwake/ingest/perfetto.py: packets framed by hand,
decoded with Perfetto's protos); the only acceptable failure is
:class:`schedwake.TraceError` (one line naming the file). Any other exception, a hang
past -timeout or memory past -rss_limit_mb is a finding, saved by libFuzzer as
fuzz/crashes/fuzz_load_perfetto-*.

Seeds: Perfetto traces schedwake wrote from real recordings (cut small), and Perfetto's
own trace_processor test traces (compact sched, interned kernel symbols). Run through
fuzz/run.py (``make fuzz`` does), or by hand:
    .venv/bin/python fuzz/fuzz_load_perfetto.py fuzz/corpus/fuzz_load_perfetto
"""

import os
import sys

import atheris

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

with atheris.instrument_imports(include=["_common"]):
    import _common

# only what load() runs of schedwake (_common.LOAD_REACHES)
with atheris.instrument_imports(include=["schedwake"], exclude=_common.not_reached_by_load()):
    _common.use_native_build()
    import schedwake  # noqa: F401

    _common.import_readers("schedwake.ingest.perfetto")

LOADER = _common.Loader(".pftrace")


def TestOneInput(data: bytes) -> None:
    LOADER.load(data)


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
