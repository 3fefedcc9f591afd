"""Kernel symbols: which kallsyms belongs to a recording, and address -> function.

A perf.data names its kernel by the release (``OSRELEASE``) and the build id of
``[kernel.kallsyms]`` (``BUILD_ID``); perf itself writes no kallsyms into the file. So
kernel addresses are named from, in this order: a kallsyms file the user gives
(``--kallsyms FILE``, e.g. a copy of the traced machine's ``/proc/kallsyms``, plain or
compressed with gzip, xz, bzip2 or zstd), else this machine's ``/proc/kallsyms`` when the
running kernel is the recorded one (same build id, or, when the file has no build id,
the same release) and its addresses are readable (root, or ``kptr_restrict`` off).
Otherwise nothing: every kernel address stays ``[unknown]``, and the reason is a caveat.

With the environment variable ``SCHEDWAKE_IGNORE_RUNNING_KERNEL`` set (to anything but
empty or ``0``), schedwake behaves as on a machine that runs none of the recorded
kernels: this machine's ``/proc/kallsyms`` and vDSO never name a recording's addresses,
only the files given do. The test suite runs so (``tests/conftest.py``), so that no test
depends on the kernel of the machine it runs on.
"""

from __future__ import annotations

import os
import platform
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..compressed import read_whole
from ..errors import TraceError

PROC_KALLSYMS = Path("/proc/kallsyms")
KERNEL_NOTES = Path("/sys/kernel/notes")
#: The environment variable that hides the running kernel from schedwake (module doc).
IGNORE_RUNNING_KERNEL = "SCHEDWAKE_IGNORE_RUNNING_KERNEL"
_MAX_ADDRESS = (1 << 64) - 1
#: The most kallsyms text read from a file (a kernel's is 5 to 30 MB).
MAX_KALLSYMS_BYTES = 256 << 20


def running_kernel_ignored() -> bool:
    """Whether ``SCHEDWAKE_IGNORE_RUNNING_KERNEL`` hides this machine's kernel."""
    return os.environ.get(IGNORE_RUNNING_KERNEL, "") not in ("", "0")


def read_kallsyms(path) -> bytes:
    """The kallsyms text of the file at ``path``, plain or compressed (gzip, xz, bzip2,
    zstd); TraceError in one line when it cannot be read, is damaged, too large
    (:data:`MAX_KALLSYMS_BYTES`) or not kallsyms."""
    text = read_whole(path, MAX_KALLSYMS_BYTES, "kallsyms file")
    check_kallsyms_text(path, text)
    return text


#: A kallsyms line whose address is beyond 64 bits (more than 16 hex digits but zeros).
_WIDE_ADDRESS = re.compile(rb"^0*[0-9a-fA-F]{17,}[ \t][^\n]*\n?", re.MULTILINE)


def without_wide_addresses(path, text: bytes) -> tuple[bytes, list[str]]:
    """``text`` without its lines whose address is beyond 64 bits (no kernel has one: a
    damaged or forged file), and the warning that names them; a TraceError naming
    ``path`` when they are half of its lines or more (then it is no kallsyms)."""
    wide = len(_WIDE_ADDRESS.findall(text))
    if not wide:
        return text, []
    lines = text.count(b"\n") + (not text.endswith(b"\n"))
    if wide * 2 >= lines:
        raise TraceError(
            path, f"{wide} of its {lines} lines have an address beyond 64 bits: not a kallsyms"
        )
    return _WIDE_ADDRESS.sub(b"", text), [
        f"{path}: {wide} kallsyms line(s) with an address beyond 64 bits left out"
    ]


def running_build_id(notes: Path = KERNEL_NOTES) -> str | None:
    """The running kernel's build id (hex), from the ELF notes in sysfs; None if absent."""
    try:
        data = notes.read_bytes()
    except OSError:
        return None
    pos = 0
    while pos + 12 <= len(data):
        namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
        pos += 12
        name = data[pos : pos + namesz]
        pos += (namesz + 3) & ~3
        desc = data[pos : pos + descsz]
        pos += (descsz + 3) & ~3
        if ntype == 3 and name.rstrip(b"\0") == b"GNU":  # NT_GNU_BUILD_ID
            return desc.hex()
    return None


@dataclass
class KallsymsChoice:
    """The kallsyms text to use for a recording (None: none fits) and why."""

    text: bytes | None
    source: str  # a path, "/proc/kallsyms", or "" when none
    reason: str  # one line: why this one, or why none
    #: what was left out of the file (lines with an address beyond 64 bits), one line each
    warnings: list[str] = field(default_factory=list)


def kernel_build_id(build_ids) -> str | None:
    """The kernel's build id among a perf.data's BUILD_ID entries."""
    for b in build_ids or []:
        if b.get("filename") == "[kernel.kallsyms]" and b.get("build_id"):
            return b["build_id"]
    return None


def choose_kallsyms(
    release: str | None, build_id: str | None, given=None, proc: Path | None = None
) -> KallsymsChoice:
    """The kallsyms for a kernel recorded as ``release`` with ``build_id``: ``given``
    (a path) when there is one, else this machine's when its kernel is that one (never
    while :func:`running_kernel_ignored`).

    Raises TraceError when ``given`` cannot be read or is not kallsyms text."""
    if given is not None:
        text, warnings = without_wide_addresses(given, read_kallsyms(given))
        return KallsymsChoice(text, str(given), "given with --kallsyms", warnings)
    if running_kernel_ignored():
        return KallsymsChoice(
            None,
            "",
            f"this machine's kernel is not used ({IGNORE_RUNNING_KERNEL} is set): give the "
            "recorded kernel's kallsyms with --kallsyms",
        )
    here_id = running_build_id()
    here_rel = platform.release()
    if build_id and here_id:
        if build_id != here_id:
            return KallsymsChoice(
                None,
                "",
                f"the recorded kernel (build id {build_id[:12]}) is not the running one "
                f"({here_id[:12]}): give its kallsyms with --kallsyms",
            )
        why = f"the running kernel is the recorded one (build id {build_id[:12]})"
    elif release:
        if release != here_rel:
            return KallsymsChoice(
                None,
                "",
                f"the recorded kernel ({release}) is not the running one ({here_rel}): give "
                "its kallsyms with --kallsyms",
            )
        why = f"the running kernel has the recorded release ({release}; no build id to compare)"
    else:
        return KallsymsChoice(
            None, "", "the file does not say which kernel it recorded: give --kallsyms"
        )
    proc = PROC_KALLSYMS if proc is None else proc
    try:
        text = proc.read_bytes()
    except OSError as exc:
        return KallsymsChoice(None, "", f"{proc} cannot be read ({exc.strerror})")
    if not _addresses_visible(text):
        return KallsymsChoice(
            None,
            "",
            f"{proc} shows no addresses (kptr_restrict, or not root): give --kallsyms",
        )
    return KallsymsChoice(text, str(proc), why)


def check_kallsyms_text(path, text: bytes) -> None:
    """TraceError unless ``text`` starts like kallsyms (``ADDR TYPE NAME`` lines)."""
    first = text[:4096].split(b"\n", 1)[0].split()
    ok = len(first) >= 3 and len(first[1]) == 1
    if ok:
        try:
            int(first[0], 16)
        except ValueError:
            ok = False
    if not ok:
        raise TraceError(
            path, "is not a kallsyms file (expected lines like 'ffffffff81000000 T _text')"
        )


def _addresses_visible(text: bytes) -> bool:
    """Whether kallsyms shows real addresses (all zeros when they are hidden)."""
    for line in text[:65536].splitlines()[:200]:
        addr = line.split(b" ", 1)[0]
        if addr.strip(b"0"):
            return True
    return False


class KernelSymbols:
    """Address -> kernel function (and module) from kallsyms text, vectorized."""

    def __init__(self, text: bytes):
        addrs, names, modules = [], [], []
        for line in text.decode("utf-8", "replace").splitlines():
            parts = line.split()
            if len(parts) < 3 or parts[1] in ("a", "A") or parts[2].startswith("$"):
                continue
            try:
                addr = int(parts[0], 16) if len(parts[0]) <= 64 else -1
            except ValueError:
                continue
            if not 0 <= addr <= _MAX_ADDRESS:  # (beyond 64 bits: no address)
                continue
            addrs.append(addr)
            names.append(parts[2])
            modules.append(parts[3].strip("[]") if len(parts) > 3 else "")
        order = np.argsort(np.array(addrs, dtype=np.uint64), kind="stable")
        self.addrs = np.array(addrs, dtype=np.uint64)[order]
        self.names = np.array(names, dtype=object)[order]
        self.modules = np.array(modules, dtype=object)[order]

    def __len__(self) -> int:
        return len(self.addrs)

    def lookup(self, addrs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(found, name, module) per address: the function whose start is the nearest
        at or below the address. An address below the first symbol is not found."""
        addrs = np.asarray(addrs, dtype=np.uint64)
        i = np.searchsorted(self.addrs, addrs, side="right") - 1
        found = i >= 0
        i = np.where(found, i, 0)
        if not len(self.addrs):
            empty = np.full(len(addrs), "", dtype=object)
            return np.zeros(len(addrs), bool), empty, empty
        return found, self.names[i], self.modules[i]


__all__ = [
    "KallsymsChoice",
    "KernelSymbols",
    "choose_kallsyms",
    "kernel_build_id",
    "read_kallsyms",
    "running_build_id",
    "running_kernel_ignored",
]
