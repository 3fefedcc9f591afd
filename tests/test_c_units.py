"""The C units' own tests. tests/c/tdcore_units.c: literal bytes of one event format, one
ring-buffer page and perf.data records, through the decoder's C interface, and the
integer arithmetic on a file's numbers (time offsets, parse_int at the edges of int64).
tests/c/textscan_units.c: the text scanner's field parsers (_textscan.c, which it
includes) on hand-made lines, good and malformed. tests/c/passes_units.c: the model's
compiled passes (schedwake/model/_pass_*.c, which it includes) against plain loops on
random arrays, times at the ends of int64 among them. Each is built with AddressSanitizer
and UndefinedBehaviorSanitizer (clang, or gcc when it has their runtimes; signed
overflow included, and with clang the implicit conversions that change a value) so
that an out-of-bounds read or an overflow fails the test.

The build is what takes the time, so it is made as fuzz/build_asan.sh makes the
sanitizer builds: at -O0 (the sanitizer checks are the same as at -O1, and compiling
is about 5x faster), each source in a process of its own, all at once, and kept in
build/c-units/ under a key that hashes everything it is made of (sources, headers,
compiler, flags): a run whose sources are unchanged reuses it, an edit rebuilds it.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "schedwake" / "ingest"
SANITIZE = [
    "-fsanitize=address,undefined,signed-integer-overflow,float-divide-by-zero",
    "-fno-sanitize-recover=all",
]
CLANG_ONLY = ["-fsanitize=implicit-conversion"]
CFLAGS = ["-g", "-O0", "-std=gnu11", f"-I{SRC}"]
#: Where the build is kept between runs (build/ is not in git).
BUILD = ROOT / "build" / "c-units"


@dataclass(frozen=True)
class Units:
    """A unit-test program: its main file in tests/c/, what it links with."""

    name: str
    cflags: tuple[str, ...] = ()
    libs: tuple[str, ...] = ()
    #: the units of ``src`` compiled beside it (the pattern of their names)
    units: str | None = None
    #: the folder of the C files it compiles or includes
    src: Path = SRC

    def sources(self) -> list[Path]:
        own = ROOT / "tests" / "c" / f"{self.name}.c"
        return [own, *(sorted(self.src.glob(self.units)) if self.units else [])]


TDCORE = Units("tdcore_units", libs=("-lzstd", "-lz", "-lpthread"), units="_td_*.c")


def python_flags() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Compile and link flags for a program that includes a module's C file: Python's
    headers, and libpython for the symbols the module uses (no test calls them)."""
    libdir = sysconfig.get_config_var("LIBDIR")
    libs = [f"-L{libdir}", f"-lpython{sysconfig.get_config_var('LDVERSION')}"]
    libs += [f"-Wl,-rpath,{libdir}", *(sysconfig.get_config_var("LIBS") or "").split()]
    return (f"-I{sysconfig.get_paths()['include']}",), (*libs, "-lm")


TEXTSCAN = Units("textscan_units", *python_flags())
MODEL = ROOT / "schedwake" / "model"
PASSES = Units("passes_units", (f"-I{MODEL}", *python_flags()[0]), python_flags()[1], src=MODEL)


def compile_and_link(units: Units, cc: str, flags: list[str], out: Path) -> bool:
    """``out`` built from ``units``' sources with ``cc`` and ``flags``: each source
    compiled in a process of its own, all at once, then linked. False if a step fails."""
    objdir = out.parent / f"obj-{units.name}"
    shutil.rmtree(objdir, ignore_errors=True)
    objdir.mkdir(parents=True)
    objs = [objdir / f"{src.stem}.o" for src in units.sources()]
    procs = [
        subprocess.Popen(
            [cc, *CFLAGS, *units.cflags, *flags, "-c", str(src), "-o", str(obj)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for src, obj in zip(units.sources(), objs, strict=True)
    ]
    if any([p.wait() != 0 for p in procs]):  # (a list: wait for every one)
        return False
    link = [cc, *CFLAGS, *flags, *map(str, objs), *units.libs, "-o", str(out)]
    return subprocess.run(link, capture_output=True).returncode == 0


def build_key(units: Units, cc: str, flags: list[str]) -> str:
    """What a build of ``units`` with ``cc`` and ``flags`` is made of, hashed."""
    h = hashlib.sha256()
    headers = sorted((ROOT / "tests" / "c").glob("*.h"))
    for path in [*units.sources(), *sorted(units.src.glob("*.[ch]")), *headers, Path(__file__)]:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    version = subprocess.run([cc, "--version"], capture_output=True).stdout
    h.update(version + " ".join([*CFLAGS, *units.cflags, *flags, *units.libs]).encode())
    return h.hexdigest()


def build(units: Units = TDCORE) -> Path:
    """The unit-test executable: with the sanitizers (clang first, then gcc, then cc),
    else without them. Reused from build/c-units/ while its key is unchanged; one
    build at a time (a lock), so a second test run waits for the first one's."""
    BUILD.mkdir(parents=True, exist_ok=True)
    exe, key_file = BUILD / units.name, BUILD / f"{units.name}.key"
    with open(BUILD / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for cc in ("clang", "gcc", "cc"):
            if shutil.which(cc) is None:
                continue
            for flags in ([*SANITIZE, *CLANG_ONLY] if cc == "clang" else SANITIZE, []):
                key = build_key(units, cc, flags)
                if exe.exists() and key_file.exists() and key_file.read_text() == key:
                    return exe
                key_file.unlink(missing_ok=True)
                if compile_and_link(units, cc, flags, exe):
                    key_file.write_text(key)
                    return exe
    pytest.fail(f"tests/c/{units.name}.c does not build with clang, gcc or cc")


def run(units: Units, min_checks: int) -> None:
    proc = subprocess.run([str(build(units))], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    checks, failed = proc.stdout.split()[0], proc.stdout.split()[2]
    assert int(checks) >= min_checks and failed == "0", proc.stdout


@pytest.mark.slow
def test_c_units():
    run(TDCORE, 80)


@pytest.mark.slow
def test_textscan_units():
    run(TEXTSCAN, 120)


@pytest.mark.slow
def test_passes_units():
    run(PASSES, 20)
