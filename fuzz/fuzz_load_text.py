#!/usr/bin/env python3
"""atheris harness: ``schedwake.load`` over hostile trace text (raw ftrace text,
trace-cmd report text, perf script text; plain or compressed).

Each input is written to a file in a private temporary directory and loaded; the
only acceptable failure is :class:`schedwake.TraceError` (one line naming the file).
Inputs that load() would hand to another reader are skipped: a trace.dat magic
(fuzz_load_tracedat's) and perf.data's PERFILE2 (read by running ``perf script``,
an external program).

Half the mutations are structure-aware (text_model.py: one field of a real event
line at a time, line ends, headers, another layout mid-file), the other half
libFuzzer's own byte mutations.

The compiled scanner (_textscan) needs the CPython API, so there is no plain
libFuzzer harness for it: this one covers it.  With SCHEDWAKE_NATIVE_BUILD=
build/asan-fuzz and LD_PRELOAD of atheris's asan_with_fuzzer.so (fuzz/run.py
sets both) the scanner is the ASan+UBSan build and its C branches guide the fuzzer.

    .venv/bin/python fuzz/fuzz_load_text.py -dict=fuzz/text.dict fuzz/corpus/fuzz_load_text
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
    _common.import_readers("schedwake.ingest.text")

import text_model  # noqa: E402  (not instrumented: the mutator is no target)

LOADER = _common.Loader(".txt")
OTHER_READERS = (b"PERFILE2",)


def TestOneInput(data: bytes) -> None:
    magic = _common.TRACEDAT_MAGIC
    if data[:3] == magic[:3] or magic.startswith(data) or data.startswith(OTHER_READERS):
        return
    LOADER.load(data)


def CustomMutator(data: bytes, max_size: int, seed: int) -> bytes:
    if seed % 2:
        out = text_model.mutate(data, max_size, seed)
        if out is not None:
            return out
    return atheris.Mutate(data, max_size)


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput, custom_mutator=CustomMutator)
    atheris.Fuzz()
