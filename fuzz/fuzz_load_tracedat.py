#!/usr/bin/env python3
"""atheris harness: ``schedwake.load`` over hostile trace.dat files.

Each input is written to a file in a private temporary directory and loaded; the
only acceptable failure is :class:`schedwake.TraceError` (one line naming the file).
Any other exception, a crash of the compiled reader (under the sanitizer build:
any ASan/UBSan report), a hang past -timeout or memory past -rss_limit_mb is a
finding, saved by libFuzzer as fuzz/crashes/fuzz_load_tracedat-*.

The mutator is half libFuzzer's byte mutator (with fuzz/tracedat.dict) and half
structure-aware (fuzz/tracedat_model.py): it re-frames what it damages, so a wrong
field size or a bad page header reaches the decoder instead of the length checks,
and it aims at two classes byte mutation hardly reaches: options (OFFSET/DATE at the
edges of 64 bits, CPUCOUNT/TSC2NSEC/CPUSTAT values, options repeated or of the wrong
size, v7 BUFFER options that contradict the data) and event-format text (array sizes
on scalars, two fields or events of one name, __data_loc fields, offset/size/signed).

Run through fuzz/run.py (``make fuzz`` does), or by hand:
    .venv/bin/python fuzz/fuzz_load_tracedat.py -dict=fuzz/tracedat.dict \
        fuzz/corpus/fuzz_load_tracedat
With SCHEDWAKE_NATIVE_BUILD=build/asan-fuzz and LD_PRELOAD of atheris's
asan_with_fuzzer.so (fuzz/run.py sets both), the compiled readers are the
sanitizer build and their C branches guide the fuzzer too.
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

    # the readers are imported lazily by load(): import them here, to instrument them
    _common.import_readers(
        "schedwake.ingest.tracedat",
        "schedwake.ingest.tracedat_layout",
        "schedwake.ingest.libtracecmd",
        "schedwake.ingest.text",
    )

import tracedat_model  # noqa: E402  (not instrumented: the mutator is no target)

LOADER = _common.Loader(".dat")


def TestOneInput(data: bytes) -> None:
    LOADER.load(data)


def CustomMutator(data: bytes, max_size: int, seed: int) -> bytes:
    if seed % 2:
        out = tracedat_model.mutate(data, max_size, seed)
        if out is not None:
            return out
    return atheris.Mutate(data, max_size)


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput, custom_mutator=CustomMutator)
    atheris.Fuzz()
