"""A structure-aware mutator for trace text (fuzz_load_text's custom mutator).

Byte flips rarely make a line that still parses but says something else; these
mutations change one field of a real event line at a time, the way damage and careless
tools do: timestamps (moved, other precision, too many digits), CPU brackets, comm-pid,
event names (another event, perf's modifiers), key=value pairs (value, order, missing,
repeated), line ends (CRLF, CR alone, none at the end, NUL bytes, a byte order mark),
headers (#P:, cpus=, perf's nrcpus, entry counts), lost-event lines, lines of another
layout mid-file (ftrace text, trace-cmd report text, perf script text), lines moved,
repeated or cut, and very long lines.

``mutate(data, max_size, seed)`` is deterministic in ``seed``; gzip input is mutated
inside its compression and compressed again (or not).
"""

from __future__ import annotations

import gzip
import random
import re
import zlib

#: lines of each layout, from sample_traces/conformance (the same run in each)
LINES = {
    "ftrace": [
        b"# tracer: nop\n",
        b"# entries-in-buffer/entries-written: 5/5   #P:2\n",
        b"     workload.sh-14642   [001] ...1.   707.093359: tracing_mark_write: lab: start\n",
        b"     workload.sh-14642   [001] d..2.   707.093484: sched_wakeup_new: comm=workload.sh"
        b" pid=14645 prio=120 target_cpu=000\n",
        b"     workload.sh-14642   [001] d..2.   707.093489: sched_switch: prev_comm=workload.sh"
        b" prev_pid=14642 prev_prio=120 prev_state=D ==> next_comm=perf next_pid=14606"
        b" next_prio=120\n",
        b"          <idle>-0       [001] d.s2.   707.094616: sched_migrate_task: comm=workload.sh"
        b" pid=14645 prio=120 orig_cpu=0 dest_cpu=1\n",
        b"CPU:1 [LOST 12 EVENTS]\n",
    ],
    "report": [
        b"cpus=2\n",
        b"     workload.sh-14642 [001]   707.093359: print:                tracing_mark_write:"
        b" lab: start\n",
        b"     workload.sh-14642 [001]   707.093484: sched_wakeup_new:     workload.sh:14645"
        b" [120] CPU:000\n",
        b"     workload.sh-14642 [001]   707.093489: sched_switch:         workload.sh:14642"
        b" [120] D ==> perf:14606 [120]\n",
        b"workload-14642   1d..2.   707.093484: sched_wakeup_new:     workload.sh:14645 [120]"
        b" CPU:000\n",
    ],
    "perf": [
        b"# ========\n# nrcpus online : 2\n# nrcpus avail : 2\n# os release : 6.1.0\n# ========\n",
        b"            perf 14606 [000]   707.066406:                sched:sched_waking:"
        b" comm=migration/0 pid=18 prio=0 target_cpu=000\n",
        b"            perf 14606 [000]   707.066412:                sched:sched_switch:"
        b" prev_comm=perf prev_pid=14606 prev_prio=120 prev_state=D ==>"
        b" next_comm=migration/0 next_pid=18 next_prio=0\n",
        b"perf-exec 24201 [000]  2147.725584491:    1001001 cpu-clock:ppp: \n"
        b"\tffffffff8226e639 _raw_spin_unlock_irqrestore+0x19 ([kernel.kallsyms])\n"
        b"\t           d4ad7 __GI___execve+0x7 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n\n",
        b"perf 14742 [000] 712.900300: PERF_RECORD_LOST lost 7\n",
    ],
}
EVENTS = [
    b"sched_switch",
    b"sched_waking",
    b"sched_wakeup",
    b"sched_wakeup_new",
    b"sched_migrate_task",
    b"sched_process_fork",
    b"sched_process_exit",
    b"workqueue_queue_work",
    b"workqueue_execute_start",
    b"print",
    b"tracing_mark_write",
    b"sched:sched_switch",
    b"cpu-clock:ppp",
    b"sched:sched_waking:u",
    b"my_event",
]
NUMBERS = [
    b"0",
    b"-1",
    b"1",
    b"2147483647",
    b"2147483648",
    b"4294967295",
    b"9223372036854775807",
    b"9223372036854775808",
    b"18446744073709551616",
    b"99999999999999999999999",
    b"000",
    b"",
    b"0x10",
    b"1e9",
]
_TS = re.compile(rb"\d+(?:\.\d+)?:")
_CPU = re.compile(rb"\[\d+\]")
_PID = re.compile(rb"-\d+(?= )|(?<= )\d+(?= +\[)")
_NAME = re.compile(rb"(?<=: )\s*[\w:.-]+(?=:)|(?<=\d: )[\w:.-]+(?=:)")
_PAIR = re.compile(rb"\w+=\S*")
_HEADER = re.compile(rb"#P:\d+|cpus=\d+|nrcpus avail : \d+|entries-written: \d+/\d+")


def mutate(data: bytes, max_size: int, seed: int) -> bytes | None:
    """A mutated copy of ``data`` (at most ``max_size`` bytes), or None when ``data``
    has no text to work on."""
    rnd = random.Random(seed)
    packed = data[:2] == b"\x1f\x8b"
    if packed:
        try:
            data = zlib.decompressobj(wbits=31).decompress(data, 1 << 20)
        except zlib.error:
            return None
    lines = data.splitlines(keepends=True) or [rnd.choice(LINES["ftrace"])]
    for _ in range(rnd.choice((1, 1, 1, 2, 3))):
        rnd.choice(MUTATIONS)(rnd, lines)
    out = b"".join(lines)
    if packed and rnd.random() < 0.8:
        out = gzip.compress(out, compresslevel=1, mtime=0)
    return out[:max_size]


def _pick(rnd: random.Random, lines: list[bytes], pattern: re.Pattern) -> tuple | None:
    """(line index, match) of ``pattern`` in a random line that has it."""
    for _ in range(8):
        i = rnd.randrange(len(lines))
        found = list(pattern.finditer(lines[i]))
        if found:
            return i, rnd.choice(found)
    return None


def _replace(lines, i, m, new: bytes) -> None:
    lines[i] = lines[i][: m.start()] + new + lines[i][m.end() :]


def timestamp(rnd, lines):
    hit = _pick(rnd, lines, _TS)
    if hit is None:
        return
    i, m = hit
    whole, _, frac = m.group(0)[:-1].partition(b".")
    choice = rnd.random()
    if choice < 0.4:  # moved, by a little or a lot
        moved = max(int(whole) + rnd.choice((-100, -1, 1, 100, 10**9)), 0)
        new = b"%d.%s:" % (moved, frac or b"0")
    elif choice < 0.6:  # another precision
        new = whole + b"." + b"1234567890123"[: rnd.choice((0, 1, 3, 6, 9, 12))] + b":"
    elif choice < 0.8:  # too many digits, or none
        new = rnd.choice((b"9" * 19, b"1" * 40, b"", b"-5")) + b"." + frac + b":"
    else:  # raw counter
        new = whole + frac + b":"
    _replace(lines, i, m, new)


def cpu(rnd, lines):
    hit = _pick(rnd, lines, _CPU)
    if hit is not None:
        i, m = hit
        new = rnd.choice((b"[9999]", b"[-1]", b"[]", b"[65536]", b"[999999]", b"[2]", b"[ 1]"))
        _replace(lines, i, m, new)


def pid(rnd, lines):
    hit = _pick(rnd, lines, _PID)
    if hit is not None:
        i, m = hit
        sep = b"-" if m.group(0).startswith(b"-") else b""
        _replace(lines, i, m, sep + rnd.choice(NUMBERS))


def comm(rnd, lines):
    hit = _pick(rnd, lines, _PID)
    if hit is not None:
        i, m = hit
        odd = rnd.choice((b"a b", b"[001]", b"x:1", b"\xff\xfe", b"-", b"", b"a" * 300, b"\t"))
        lines[i] = b" " + odd + lines[i][m.start() :].lstrip()


def event_name(rnd, lines):
    hit = _pick(rnd, lines, _NAME)
    if hit is not None:
        i, m = hit
        _replace(lines, i, m, rnd.choice(EVENTS))


def pair(rnd, lines):
    hit = _pick(rnd, lines, _PAIR)
    if hit is None:
        return
    i, m = hit
    key, _, value = m.group(0).partition(b"=")
    choice = rnd.random()
    if choice < 0.5:
        new = key + b"=" + rnd.choice(NUMBERS + [value * 2, b"\xc3", b"a=b"])
    elif choice < 0.7:
        new = b""
    elif choice < 0.85:
        new = m.group(0) + b" " + m.group(0)
    else:
        others = _PAIR.findall(lines[i])
        new = rnd.choice(others)
    _replace(lines, i, m, new)


def line_ends(rnd, lines):
    choice = rnd.random()
    if choice < 0.3:
        ending = rnd.choice((b"\r\n", b"\r", b"\n\n", b""))
        for k in range(len(lines)):
            if rnd.random() < 0.5 or ending == b"\r":
                lines[k] = lines[k].rstrip(b"\n") + ending
    elif choice < 0.5:
        lines[-1] = lines[-1].rstrip(b"\n")
    elif choice < 0.7:
        k = rnd.randrange(len(lines))
        at = rnd.randrange(len(lines[k]) + 1)
        lines[k] = lines[k][:at] + b"\x00" * rnd.choice((1, 7, 4096)) + lines[k][at:]
    else:
        lines[0] = rnd.choice((b"\xef\xbb\xbf", b"\xff\xfe", b"\r")) + lines[0]


def header(rnd, lines):
    hit = _pick(rnd, lines, _HEADER)
    if hit is not None:
        i, m = hit
        key = re.match(rb"\D*", m.group(0)).group(0)
        _replace(lines, i, m, key + rnd.choice(NUMBERS))
    else:
        at = rnd.randrange(len(lines) + 1)
        lines.insert(at, rnd.choice((b"#P:", b"cpus=", b"# nrcpus avail : ")) + b"99999\n")


def layout(rnd, lines):
    """Lines of another layout (or a whole other trace's header) mid-file."""
    other = LINES[rnd.choice(sorted(LINES))]
    at = rnd.randrange(len(lines) + 1)
    lines[at:at] = rnd.sample(other, rnd.randint(1, len(other))) * rnd.choice((1, 1, 20))


def lost(rnd, lines):
    at = rnd.randrange(len(lines) + 1)
    cpu_text, count = rnd.choice(NUMBERS), rnd.choice(NUMBERS)
    line = rnd.choice(
        (b"CPU:%s [LOST %s EVENTS]\n", b"CPU:%s [%s EVENTS DROPPED]\n", b"CPU:%s [LOST EVENTS]%s\n")
    )
    lines.insert(at, line % (cpu_text, count))


def move(rnd, lines):
    i, j = rnd.randrange(len(lines)), rnd.randrange(len(lines))
    choice = rnd.random()
    if choice < 0.3:
        lines[i], lines[j] = lines[j], lines[i]
    elif choice < 0.5:
        lines.insert(j, lines[i])
    elif choice < 0.7 and len(lines) > 1:
        del lines[i]
    elif choice < 0.85:
        lines[i] = lines[i][: rnd.randrange(len(lines[i]) + 1)]
        del lines[i + 1 :]
    else:
        lines[i:i] = lines[: rnd.randint(1, len(lines))]  # the file again


def long_line(rnd, lines):
    at = rnd.randrange(len(lines) + 1)
    lines.insert(at, rnd.choice((b"x", b" ", b"[0] ", b"a=b ")) * rnd.choice((300, 5000, 70000)))


MUTATIONS = (
    timestamp,
    timestamp,
    cpu,
    pid,
    comm,
    event_name,
    pair,
    pair,
    line_ends,
    header,
    layout,
    lost,
    move,
    move,
    long_line,
)
