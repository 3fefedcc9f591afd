#!/usr/bin/env python3
"""Write the event-format corpus of tests/test_event_formats.py.

Every file of ``tests/data/hostile_formats/`` is a trace whose event formats (the
kernel's ``events/<system>/<event>/format`` texts the file carries) were changed in one
way, and ``manifest.json`` says what schedwake must do with it:

* ``error``: the file is corrupt (a format no kernel writes, or records that
  contradict their format): ``schedwake.load`` raises TraceError and every command
  exits 2 with one stderr line naming the file (``info`` too, unless ``info_ok``: the
  damage is only seen where a field is read, and ``info`` reads none);
* ``unusable``: a legal format the model cannot use (a pid of 3 bytes, an array where
  a scalar belongs, a missing ``target_cpu``): it loads, ``info`` exits 0, and the
  commands that build the model (``analyze``, ``compare``, ``gate``, ``batch``) exit 2
  with one line naming the file, the event and the field;
* ``warning``: loads, every command exits 0 with exactly one warning line;
* ``ok``: loads, every command exits 0 with nothing on stderr.

``mentions`` are regexes the error or warning line must match.

The bases:

* ``base-v6.dat``: ``tests/data/hostile/base-v6.dat`` (written by
  ``scripts/make_hostile.py`` from ``sample_traces/idle-sleep.dat``) cut to CPU 1's
  first page (85 events: wake-ups, switches, migrations, forks; CPU 0 without data)
  and to the formats of the events in it, so that each damaged copy is 12 KB instead
  of 124 KB; its layout parsed and written by make_hostile.py;
* ``base-wq-v6.dat``: the same with CPU 1's second page too, which holds workqueue
  events (20 KB), for the damage to workqueue formats;
* v7 copies are written from a damaged v6 by ``fuzz/tracedat_model.py`` (zlib
  sections, as trace-cmd writes them), for the damage a compressed section must carry;
* ``perf.data`` files are ``fuzz/corpus/fuzz_load_perfdata/seed-perf-file.data`` (a
  ``perf record -e sched:...`` of this machine, 18 KB) with its format texts edited in
  place, each edit keeping their length (so no size or offset in the file moves).

    .venv/bin/python scripts/make_hostile_formats.py

Writing the corpus twice gives the same bytes (the test checks the committed corpus
against a fresh run).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "hostile_formats"
HOSTILE_BASE = ROOT / "tests" / "data" / "hostile" / "base-v6.dat"
PERF_BASE = ROOT / "fuzz" / "corpus" / "fuzz_load_perfdata" / "seed-perf-file.data"
BASE6 = "base-v6.dat"


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


mh = _module("make_hostile", ROOT / "scripts" / "make_hostile.py")
tdm = _module("tracedat_model", ROOT / "fuzz" / "tracedat_model.py")

#: The small bases: name -> (CPU -> how many of its first pages are kept).
BASES = {BASE6: {0: 0, 1: 1}, "base-wq-v6.dat": {0: 0, 1: 2}}


# ------------------------------------------------------------------------ the base


def small_base(keep: dict[int, int]) -> tuple[bytes, dict]:
    """The v6 base cut to the first ``keep[cpu]`` pages of each CPU and to the formats
    their records need, and its event counts."""
    data = HOSTILE_BASE.read_bytes()
    lay = mh.parse_v6(data)
    fmts = mh.formats_v6(lay)
    psize = lay.head["page_size"]
    pages = [p for p in mh.walk_pages(lay) if (p.off - lay.cpu_table[p.cpu][1]) // psize
             < keep[p.cpu]]  # fmt: skip
    used = {fmts[r.id].name for p in pages for r in p.records}
    parts = mh.V6Parts.of(lay)
    parts.ftrace = [t for t in parts.ftrace if mh.parse_format(b"ftrace", t).name in used]
    parts.systems = [
        (name, [t for t in texts if mh.parse_format(name, t).name in used])
        for name, texts in parts.systems
    ]
    parts.printk = b""
    parts.cpu_data = [chunk[: keep[cpu] * psize] for cpu, chunk in enumerate(parts.cpu_data)]
    out = parts.write()
    counts = Counter(fmts[r.id].name for p in pages for r in p.records)
    return out, dict(sorted(counts.items()))


def rewrite(base: bytes, event: str, edit) -> bytes:
    """``base`` with the format text of ``event`` replaced by ``edit(text)``."""
    parts = mh.V6Parts.of(mh.parse_v6(base))
    parts.edit_format(event, edit)
    return parts.write()


def sub(old: bytes, new: bytes):
    """An edit replacing the one ``old`` of a format text by ``new``."""

    def edit(text: bytes) -> bytes:
        if text.count(old) != 1:
            raise mh.LayoutError(f"{old!r} is {text.count(old)} times in the format")
        return text.replace(old, new)

    return edit


def drop_line(field: bytes):
    """An edit removing the line of ``field`` (``b"target_cpu;"``)."""
    return lambda text: re.sub(
        rb"(?m)^\tfield:[^\n]*\b" + re.escape(field) + rb"[^\n]*\n", b"", text
    )


def with_system(base: bytes, system: bytes, text: bytes) -> bytes:
    """``base`` with the format ``text`` added: to ``system`` (a new system, last, when
    the file has none of that name)."""
    parts = mh.V6Parts.of(mh.parse_v6(base))
    for name, texts in parts.systems:
        if name == system:
            texts.append(text)
            break
    else:
        parts.systems.append((system, [text]))
    return parts.write()


def format_text(base: bytes, event: str) -> bytes:
    lay = mh.parse_v6(base)
    for system, blob in lay.formats():
        text = bytes(base[blob.off : blob.end])
        if mh.parse_format(system, text).name == event:
            return text
    raise mh.LayoutError(f"no format {event}")


def new_id(text: bytes, eid: int) -> bytes:
    return re.sub(rb"(?m)^ID: \d+$", b"ID: " + str(eid).encode(), text)


def v7(v6: bytes) -> bytes:
    """A v6 file written again as version 7 with zlib sections."""
    return tdm.TraceDat(v6).write(7, "zlib")


def perf_edit(data: bytes, event: bytes, old: bytes, new: bytes) -> bytes:
    """The perf.data ``data`` with ``old`` replaced by ``new`` (same length) in the
    format text of ``event``."""
    if len(old) != len(new):
        raise ValueError("a perf.data edit must keep the length")
    start = data.index(b"name: " + event + b"\n")
    end = data.index(b"print fmt:", start)
    at = data.index(old, start, end)
    return data[:at] + new + data[at + len(old) :]


# ------------------------------------------------------------------------ the corpus


class Corpus:
    def __init__(self):
        self.files: dict[str, dict] = {}
        self.bytes: dict[str, bytes] = {}

    def add(self, name: str, data: bytes, outcome: str, damage: str, why: str, mentions=(), **kw):
        assert name not in self.files
        self.bytes[name] = data
        self.files[name] = {
            "outcome": outcome,
            "damage": damage,
            "why": why,
            "mentions": list(mentions),
            **kw,
        }


WHY_CORRUPT = (
    "the kernel writes a format from the event's C struct; no struct gives this, so the "
    "file is corrupt"
)
WHY_UNUSABLE = (
    "a format a reader can decode, but not into the value the model reads: analysing "
    "it would be a guess"
)


def corrupt_formats(c: Corpus, base: bytes) -> None:
    sw, wk = "sched_switch", "sched_waking"
    cases = [
        (
            "sched_switch-two-fields-next_pid",
            sw,
            sub(b"int next_prio;", b"int next_pid;"),
            "next_prio renamed next_pid: two fields named next_pid",
            [r"sched_switch", r"two fields named next_pid"],
        ),
        (
            "sched_switch-next_pid-size-negative",
            sw,
            sub(b"next_pid;\toffset:56;\tsize:4;", b"next_pid;\toffset:56;\tsize:-4;"),
            "next_pid's 'size:4' changed to 'size:-4'",
            [r"sched_switch", r"out of range", r"next_pid"],
        ),
        (
            "sched_switch-prev_pid-length-minus-1",
            sw,
            sub(b"pid_t prev_pid;", b"pid_t prev_pid[-1];"),
            "'pid_t prev_pid;' changed to 'pid_t prev_pid[-1];'",
            [r"sched_switch", r"out of range", r"prev_pid\[-1\]"],
        ),
        (
            "sched_switch-next_pid-overlaps-next_comm",
            sw,
            sub(b"next_pid;\toffset:56;", b"next_pid;\toffset:52;"),
            "next_pid's 'offset:56' changed to 'offset:52', inside next_comm (40..56)",
            [r"sched_switch", r"next_comm", r"next_pid", r"overlap"],
        ),
        (
            "sched_switch-prev_pid-in-common-fields",
            sw,
            sub(b"prev_pid;\toffset:24;", b"prev_pid;\toffset:4; "),
            "prev_pid's 'offset:24' changed to 'offset:4', over common_pid",
            [r"sched_switch", r"prev_pid", r"common fields"],
        ),
        (
            "sched_waking-comm-size-0",
            wk,
            sub(b"char comm[16];\toffset:8;\tsize:16;", b"char comm[0];\toffset:8;\tsize:0;"),
            "'char comm[16]; size:16' changed to 'char comm[0]; size:0', before pid",
            [r"sched_waking", r"comm", r"size 0", r"pid"],
        ),
        (
            "sched_switch-int-array-not-whole",
            sw,
            sub(b"int prev_prio;", b"int prev_prio[3];"),
            "'int prev_prio;' (4 bytes) changed to 'int prev_prio[3];': 3 ints in 4 bytes",
            [r"sched_switch", r"out of range", r"prev_prio\[3\]"],
        ),
    ]
    for tag, event, edit, damage, mentions in cases:
        c.add(f"v6-{tag}.dat", rewrite(base, event, edit), "error", damage, WHY_CORRUPT, mentions)

    waking = format_text(base, wk)
    dup = with_system(base, b"sched", new_id(waking, 999))
    c.add(
        "v6-sched_waking-two-formats.dat",
        dup,
        "error",
        "a second sched_waking format (ID 999) added to system sched",
        "tracefs has one directory per system and event: two formats of one name in one "
        "system are damage (read as two tables of one name, the second would hide the "
        "first's records)",
        [r"system sched has two event formats named sched_waking", r"999"],
    )
    c.add(
        "v7-sched_waking-two-formats.dat",
        v7(dup),
        "error",
        "v6-sched_waking-two-formats.dat written as version 7 (zlib sections)",
        "the same damage inside a compressed section",
        [r"system sched has two event formats named sched_waking"],
    )


def corrupt_records(c: Corpus, base: bytes) -> None:
    c.add(
        "v6-sched_switch-prev_pid-past-record.dat",
        rewrite(base, "sched_switch", sub(b"prev_pid;\toffset:24;", b"prev_pid;\toffset:240;")),
        "error",
        "prev_pid's 'offset:24' changed to 'offset:240': past the end of every sched_switch "
        "record (64 bytes)",
        "a record always holds its event's whole struct: a field past its end would read "
        "the next record's bytes or none (every prev_pid read 0 before)",
        [r"sched_switch record of 64 bytes", r"prev_pid", r"240"],
    )
    c.add(
        "v6-sched_process_fork-data_loc-outside.dat",
        rewrite(
            base,
            "sched_process_fork",
            lambda t: (
                t.replace(b"child_comm;\toffset:16;", b"child_comm;\toffset:XX;")
                .replace(b"child_pid;\toffset:20;", b"child_pid;\toffset:16;")
                .replace(b"child_comm;\toffset:XX;", b"child_comm;\toffset:20;")
            ),
        ),
        "error",
        "the offsets of child_comm (a __data_loc) and child_pid swapped: the pid is read as "
        "the string's location",
        "a __data_loc whose string lies outside its record is damage (every comm read empty "
        "before); info does not read the fields",
        [r"sched_process_fork record", r"child_comm", r"outside the record"],
        info_ok=True,
    )
    c.add(
        "v6-sched_switch-next_pid-data_loc.dat",
        rewrite(
            base,
            "sched_switch",
            sub(b"field:pid_t next_pid;", b"field:__data_loc char[] next_pid;"),
        ),
        "error",
        "'pid_t next_pid;' changed to '__data_loc char[] next_pid;': each pid is read as "
        "the location of a string",
        "a pid read as a string's location points outside the record: damage, found "
        "where the field is read (info reads none)",
        [r"sched_switch record", r"next_pid", r"outside the record"],
        info_ok=True,
    )


def unusable(c: Corpus, base: bytes, wq_base: bytes) -> None:
    sw, wk = "sched_switch", "sched_waking"
    cases = [
        (
            "sched_switch-next_pid-array-2",
            sw,
            sub(b"pid_t next_pid;", b"pid_t next_pid[2];"),
            "'pid_t next_pid;' changed to 'pid_t next_pid[2];' (size 4 kept)",
            [r"event format sched_switch: field next_pid is an array of 2", r"4-byte signed"],
        ),
        (
            "sched_switch-prev_pid-array-0",
            sw,
            sub(b"pid_t prev_pid;", b"pid_t prev_pid[0];"),
            "'pid_t prev_pid;' changed to 'pid_t prev_pid[0];' (size 4 kept)",
            [r"sched_switch: field prev_pid is raw bytes \(4 per record\)"],
        ),
        (
            "sched_switch-next_pid-size-3",
            sw,
            sub(b"next_pid;\toffset:56;\tsize:4;", b"next_pid;\toffset:56;\tsize:3;"),
            "next_pid's 'size:4' changed to 'size:3'",
            [r"sched_switch: field next_pid is raw bytes \(3 per record\)"],
        ),
        (
            "sched_switch-next_pid-size-0",
            sw,
            sub(b"next_pid;\toffset:56;\tsize:4;", b"next_pid;\toffset:56;\tsize:0;"),
            "next_pid's 'size:4' changed to 'size:0'",
            [r"sched_switch: field next_pid is raw bytes \(0 per record\)"],
        ),
        (
            "sched_switch-prev_state-size-5",
            sw,
            sub(b"prev_state;\toffset:32;\tsize:8;", b"prev_state;\toffset:32;\tsize:5;"),
            "prev_state's 'size:8' changed to 'size:5'",
            [r"sched_switch: field prev_state is raw bytes \(5 per record\)", r"4 or 8-byte"],
        ),
        (
            "sched_switch-prev_state-unsigned-int",
            sw,
            sub(
                b"long prev_state;\toffset:32;\tsize:8;\tsigned:1;",
                b"unsigned int prev_state;\toffset:32;\tsize:4;\tsigned:0;",
            ),
            "'long prev_state; size:8; signed:1' changed to 'unsigned int prev_state; size:4; "
            "signed:0'",
            [r"sched_switch: field prev_state is a 4-byte unsigned integer"],
        ),
        (
            "sched_switch-no-next_pid",
            sw,
            drop_line(b"next_pid;"),
            "next_pid's line removed",
            [r"sched_switch: field next_pid is missing"],
        ),
        (
            "sched_waking-no-target_cpu",
            wk,
            drop_line(b"target_cpu;"),
            "target_cpu's line removed (every wake-up's previous CPU would be unknown, and "
            "idle-while-runnable would change)",
            [r"sched_waking: field target_cpu is missing", r"CPU number"],
        ),
        (
            "sched_waking-target_cpu-unsigned",
            wk,
            sub(
                b"int target_cpu;\toffset:32;\tsize:4;\tsigned:1;",
                b"unsigned int target_cpu;\toffset:32;\tsize:4;\tsigned:0;",
            ),
            "'int target_cpu; signed:1' changed to 'unsigned int target_cpu; signed:0'",
            [r"sched_waking: field target_cpu is a 4-byte unsigned integer"],
        ),
        (
            "sched_switch-next_pid-char-array",
            sw,
            sub(b"field:pid_t next_pid;", b"field:char next_pid[4];"),
            "'pid_t next_pid;' changed to 'char next_pid[4];' (a string of 4 bytes)",
            [r"sched_switch: field next_pid is a string"],
        ),
    ]
    for tag, event, edit, damage, mentions in cases:
        c.add(f"v6-{tag}.dat", rewrite(base, event, edit), "unusable", damage, WHY_UNUSABLE,
              mentions)  # fmt: skip
    c.add(
        "v6-workqueue_execute_start-function-not-ps.dat",
        rewrite(wq_base, "workqueue_execute_start", sub(b'function %ps"', b'function %px"')),
        "unusable",
        "the print fmt shows function with %px, not %ps: it is an address, not a name",
        WHY_UNUSABLE,
        [r"workqueue_execute_start: field function is an 8-byte unsigned integer"],
    )
    c.add(
        "v7-sched_waking-no-target_cpu.dat",
        v7(rewrite(base, wk, drop_line(b"target_cpu;"))),
        "unusable",
        "v6-sched_waking-no-target_cpu.dat written as version 7 (zlib sections)",
        WHY_UNUSABLE,
        [r"sched_waking: field target_cpu is missing"],
    )


def legal(c: Corpus, base: bytes, wq_base: bytes) -> None:
    c.add(
        "v6-workqueue_activate_work-work-size-3.dat",
        rewrite(
            wq_base,
            "workqueue_activate_work",
            sub(b"work;\toffset:8;\tsize:8;", b"work;\toffset:8;\tsize:3;"),
        ),
        "ok",
        "workqueue_activate_work's 'work' (a pointer, 8 bytes) given 'size:3'",
        "an event the model does not read: its field is carried as 3 raw bytes, nothing "
        "else changes",
    )
    waking = format_text(base, "sched_waking")
    c.add(
        "v6-sched_waking-in-two-systems.dat",
        with_system(base, b"foo", new_id(waking, 999)),
        "warning",
        "a copy of sched_waking's format (ID 999, no records) added in a new system 'foo', "
        "after 'sched'",
        "one name in two systems is legal, but tables are named by event, so only one "
        "system's table is read (here foo's, without records): a warning for every "
        "command; the model, which reads sched:sched_waking, refuses it",
        [r"1 event name is in two systems", r"sched_waking", r"foo", r"sched"],
        model_error=[r"event sched_waking is from system foo, not sched"],
    )


def perf_cases(c: Corpus) -> None:
    base = PERF_BASE.read_bytes()
    cases = [
        (
            "sched_switch-two-fields-next_pid",
            "error",
            b"sched_switch",
            b"int next_prio;",
            b"int next_pid ;",
            [r"sched_switch", r"two fields named next_pid"],
        ),
        (
            "sched_switch-prev_pid-past-record",
            "error",
            b"sched_switch",
            b"prev_pid;\toffset:24;",
            b"prev_pid;\toffset:99;",
            [r"sched_switch record of \d+ bytes", r"prev_pid"],
        ),
        (
            "sched_switch-next_pid-size-3",
            "unusable",
            b"sched_switch",
            b"next_pid;\toffset:56;\tsize:4;",
            b"next_pid;\toffset:56;\tsize:3;",
            [r"sched_switch: field next_pid is raw bytes \(3 per record\)"],
        ),
        (
            "sched_waking-no-target_cpu",
            "unusable",
            b"sched_waking",
            b"target_cpu;",
            b"target_cpX;",
            [r"sched_waking: field target_cpu is missing"],
        ),
    ]
    for tag, outcome, event, old, new, mentions in cases:
        c.add(
            f"perf-{tag}.data",
            perf_edit(base, event, old, new),
            outcome,
            f"{event.decode()}'s format: {old.decode()!r} changed to {new.decode()!r}",
            WHY_CORRUPT if outcome == "error" else WHY_UNUSABLE,
            mentions,
            # the perf.data decoder reads the fields of wanted events only
            **({"info_ok": True} if "past-record" in tag else {}),
        )


def make_corpus(out: Path) -> dict:
    bases = {name: small_base(keep) for name, keep in BASES.items()}
    c = Corpus()
    for name in BASES:
        c.add(name, bases[name][0], "ok", "none: a base", "the undamaged original")
    base, wq_base = bases[BASE6][0], bases["base-wq-v6.dat"][0]
    corrupt_formats(c, base)
    corrupt_records(c, base)
    unusable(c, base, wq_base)
    legal(c, base, wq_base)
    perf_cases(c)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        if old.name not in c.bytes and old.name != "manifest.json":
            old.unlink()
    for name, data in c.bytes.items():
        (out / name).write_bytes(data)
    manifest = {
        "about": "tests/data/hostile_formats: traces whose event formats were changed, and "
        "what schedwake must do with each; written by scripts/make_hostile_formats.py (see "
        "its docstring and tests/test_event_formats.py)",
        "bases": {
            **{
                name: {"from": str(HOSTILE_BASE.relative_to(ROOT)), "events": counts}
                for name, (_, counts) in bases.items()
            },
            "perf": {"from": str(PERF_BASE.relative_to(ROOT))},
        },
        "files": dict(sorted(c.files.items())),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=True) + "\n")
    return manifest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT, help="corpus directory (default: %(default)s)")
    args = ap.parse_args(argv)
    print(mh.summary(make_corpus(args.out), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
