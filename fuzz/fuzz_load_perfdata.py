#!/usr/bin/env python3
"""atheris harness: ``schedwake.load`` over hostile perf.data files.

Each input is written to a file in a private temporary directory and loaded with
schedwake's own perf.data reader; the only acceptable failure is
:class:`schedwake.TraceError` (one line naming the file).  Any other exception, a crash
of the compiled reader (under the sanitizer build: any ASan/UBSan report), a hang past
-timeout or memory past -rss_limit_mb is a finding, saved by libFuzzer as
fuzz/crashes/fuzz_load_perfdata-*.

Seeds: real recordings shrunk by fuzz/make_perf_seeds.py (file and pipe mode, zstd
records, callchains, a profile); the dictionary has perf.data's magic, record types
and feature markers.  Run through fuzz/run.py (``make fuzz`` does), or by hand:
    .venv/bin/python fuzz/fuzz_load_perfdata.py -dict=fuzz/perfdata.dict \
        fuzz/corpus/fuzz_load_perfdata
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

    _common.import_readers("schedwake.ingest.perfdata", "schedwake.symbols.kernel")

LOADER = _common.Loader(".data")


def TestOneInput(data: bytes) -> None:
    LOADER.load(data)


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
