"""Mangled real lines never crash the compiled scanner: every line either parses or is
counted as unparsed, and the tables still follow the schema."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pyarrow as pa
import pytest

import schedwake
from schedwake.errors import TraceError
from schedwake.ingest import text
from schedwake.schema import COMMON_FIELDS

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "sample_traces" / "conformance"
FIXTURES = ROOT / "tests" / "data" / "kernel-list"

SOURCES = {
    "ftrace-text": [CONF / "conf.ftrace.txt.gz", FIXTURES / "lkml-2020-xfs-dbench-ftrace.txt"],
    "trace-cmd-report": [
        CONF / "conf.report.txt.gz",
        CONF / "conf.report-l.txt.gz",
        CONF / "conf.report-R.txt.gz",
    ],
    "perf-script": [
        CONF / "conf.perf-script-g.txt.gz",
        FIXTURES / "lkml-2024-dio-storm-perf-script.txt",
    ],
}
ALPHABET = b" \t:[]()-=+|.0123456789abcdefxX<>/\\#\r\x00\xff\xc3"


def lines_of(path: Path) -> list[bytes]:
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return data.split(b"\n")[:1500]


def mangle(rnd: random.Random, line: bytes) -> bytes:
    ln = bytearray(line)
    for _ in range(rnd.randint(0, 4)):
        if not ln:
            break
        i, op = rnd.randrange(len(ln)), rnd.random()
        if op < 0.3:
            ln[i] = rnd.choice(ALPHABET)
        elif op < 0.5:
            del ln[i : i + rnd.randint(1, 20)]
        elif op < 0.7:
            ln[i:i] = bytes(rnd.choice(ALPHABET) for _ in range(rnd.randint(1, 5)))
        elif op < 0.8:
            del ln[i:]
        else:
            ln[i:i] = ln[rnd.randrange(len(ln)) :][:30]
    return bytes(ln)


@pytest.mark.parametrize("fmt", sorted(SOURCES))
@pytest.mark.parametrize("seed", [1, 2])
def test_mangled_lines(tmp_path, monkeypatch, fmt, seed):
    paths = SOURCES[fmt]
    missing = [str(p) for p in paths if not p.exists()]
    assert not missing, f"source texts missing from the repository: {missing}"
    monkeypatch.setattr(text, "CHUNK_BYTES", 4096)  # many chunk edges too
    rnd = random.Random(seed)
    out = []
    for p in paths:
        lines = lines_of(p)
        out += [
            mangle(rnd, ln) if rnd.random() < 0.3 else ln
            for ln in rnd.sample(lines, min(len(lines), 1200))
        ]
    f = tmp_path / "mangled.txt"
    f.write_bytes(b"\n".join(out))
    try:
        t = text.read(f, fmt)
    except TraceError as e:
        assert "\n" not in str(e)
        return
    src = t.meta.source
    assert src["unparsed_lines"] == 0 or src["first_unparsed"]
    for table in t.tables.values():
        assert [x.name for x in table.schema][: len(COMMON_FIELDS)] == [
            x.name for x in COMMON_FIELDS
        ]
        table.validate(full=True)
        assert pa.types.is_int64(table.schema.field("ts").type)


@pytest.mark.slow
def test_structure_aware_mutations_load_or_fail_in_one_line(tmp_path):
    """fuzz_load_text's custom mutator (fuzz/text_model.py) on the hostile corpus: it
    is deterministic in its seed, changes its input, and each of its outputs loads or
    raises a one-line TraceError naming the file (the harness's contract, here without
    the sanitizers, in a few seconds)."""
    import sys

    sys.path.insert(0, str(ROOT / "fuzz"))
    try:
        import text_model
    finally:
        sys.path.remove(str(ROOT / "fuzz"))
    seeds = sorted((ROOT / "tests" / "data" / "text_hostile").glob("*.txt*"))
    assert text_model.mutate(seeds[0].read_bytes(), 1 << 20, 7) == text_model.mutate(
        seeds[0].read_bytes(), 1 << 20, 7
    )
    changed = 0
    for seed in range(300):
        data = seeds[seed % len(seeds)].read_bytes()
        out = text_model.mutate(data, 1 << 20, seed)
        assert out is not None and len(out) <= 1 << 20
        changed += out != data
        f = tmp_path / "mutated.txt"
        f.write_bytes(out)
        try:
            schedwake.load(f)
        except TraceError as e:
            assert "\n" not in str(e) and str(e).startswith(str(f))
    assert changed > 250
