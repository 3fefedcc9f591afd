"""The registry of input formats (``schedwake.ingest.INPUT_FORMATS``) is the one list:
each format's sample files are sniffed as that format and end with one of its suffixes,
``batch`` searches directories for exactly the registry's suffixes, the reader checks
say what they said before, and docs/api.md's table of input formats is the registry's."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedwake import ingest
from schedwake.batch import expand_inputs
from schedwake.errors import TraceError
from schedwake.ingest import COMPRESSED_SUFFIXES, FORMATS, INPUT_FORMATS, SUFFIXES

from .conftest import ROOT, SAMPLES

#: A real file of each format (sample_traces/README.md says how each was recorded).
SAMPLE = {
    "trace.dat": SAMPLES / "idle-sleep.dat",
    "ftrace-text": SAMPLES / "conformance" / "conf.ftrace.txt.gz",
    "trace-cmd-report": SAMPLES / "conformance" / "conf.report.txt.gz",
    "perf-script": SAMPLES / "conformance" / "conf.perf-script.txt.gz",
    "perf.data": SAMPLES / "perf" / "perf-pipe.perf.data",
    "perfetto": SAMPLES / "perfetto" / "idle-sleep.pftrace",
}

DOCS = ROOT / "docs" / "api.md"
BEGIN = "<!-- input formats: from schedwake.ingest.INPUT_FORMATS -->"
END = "<!-- /input formats -->"


def formats_table() -> str:
    """docs/api.md's table of input formats, made from the registry."""
    rows = [
        "| `input_format` | what it is | readers | file suffixes | read batch by batch |",
        "|---|---|---|---|---|",
    ]
    for f in INPUT_FORMATS.values():
        suffixes = ", ".join(f"`{s}`" for s in f.suffixes)
        if f.compressed:
            suffixes += ", compressed: " + ", ".join(f"`{s}`" for s in COMPRESSED_SUFFIXES)
        if f.directory:
            suffixes += "; a directory" if suffixes else "a directory"
        readers = ", ".join(f"`{r}`" for r in f.readers)
        batches = "yes" if f.iter_batches is not None else "no"
        rows.append(f"| `{f.name}` | {f.doc} | {readers} | {suffixes} | {batches} |")
    return "\n".join(rows)


def test_docs_table_is_the_registry():
    text = DOCS.read_text()
    assert BEGIN in text and END in text, f"docs/api.md lost the markers {BEGIN} {END}"
    shown = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert shown == formats_table(), "docs/api.md's input formats, as the registry has them:\n" + (
        formats_table()
    )


def test_names_in_the_order_the_cli_lists_them():
    assert FORMATS == (
        "trace.dat", "ftrace-text", "trace-cmd-report", "perf-script", "perf.data", "perfetto",
        "parquet",
    )  # fmt: skip
    assert all(name == f.name for name, f in INPUT_FORMATS.items())
    # every format is read batch by batch, but Perfetto traces (read whole, a packet at
    # a time: docs/perfetto.md) and convert's directories (read whole or by time range)
    assert ingest.STREAMED_FORMATS == FORMATS[:-2]


# (a convert directory, made from these: tests/test_convert_read.py)
@pytest.mark.parametrize("fmt", list(SAMPLE))
def test_each_format_sniffs_its_sample(fmt):
    path = SAMPLE[fmt]
    assert ingest.sniff(path) == fmt
    name = path.name
    f = INPUT_FORMATS[fmt]
    if f.compressed and name.endswith(COMPRESSED_SUFFIXES):
        name = name.rsplit(".", 1)[0]
    assert name.endswith(f.suffixes), (fmt, path.name, f.suffixes)


def test_a_perf_directory_is_perf_data(tmp_path):
    d = tmp_path / "perf.data"
    d.mkdir()
    (d / "data").write_bytes(SAMPLE["perf.data"].read_bytes()[:64])
    assert ingest.sniff(ingest.check_path(d)) == "perf.data"


def test_batch_searches_for_the_registry_suffixes(tmp_path):
    # the suffixes of every earlier version (batch's own list), and no others
    assert set(SUFFIXES) == {".dat", ".data", ".txt", ".report", ".perf"} | {
        ".pftrace",
        ".perfetto-trace",
        ".pb",
    } | {
        ".gz",
        ".xz",
        ".zst",
        ".bz2",
    }
    for name in ("a.dat", "b.perf.data", "c.txt", "d.report", "e.perf", "f.txt.zst", "g.csv"):
        (tmp_path / name).write_text("x")
    (tmp_path / "a.topology.json").write_text("{}")
    found, missing = expand_inputs([str(tmp_path)])
    assert [Path(p).name for p in found] == [
        "a.dat",
        "b.perf.data",
        "c.txt",
        "d.report",
        "e.perf",
        "f.txt.zst",
    ]
    assert missing == []


@pytest.mark.parametrize(
    "reader, fmt, said",
    [
        ("libtracecmd", "ftrace-text", "the libtracecmd reader only reads trace.dat files"),
        ("libtracecmd", "perf.data", "the libtracecmd reader only reads trace.dat files"),
        ("perf-script", "trace.dat", "the perf-script reader only reads perf.data files"),
    ],
)
def test_a_reader_reads_only_its_formats(reader, fmt, said):
    with pytest.raises(TraceError) as e:
        ingest.check_reader_format(Path("x"), fmt, reader)
    assert str(e.value) == f"x: {said}, and this is {fmt}"
    for f in INPUT_FORMATS.values():  # schedwake's reader reads every format
        ingest.check_reader_format(Path("x"), f.name, "schedwake")
