"""Name many sampled addresses of one recording at once: kernel ones through kallsyms,
user-space ones through the process's memory maps and the mapped files' ELF symbols.

``Resolver(trace).resolve(pid, ts, addr, context)`` takes arrays (one row per address:
the process, the sample's time, the address, its cpumode) and gives per row the
function name, the DSO and, when the address could not be named, why:

* context 1 (kernel): the kallsyms :func:`.kernel.choose_kallsyms` picks for the
  recorded kernel (release and build id), as perf filters it (``T``/``W``/``D``/``B``
  symbols, one per address, a symbol reaching the next one); DSO ``[kernel.kallsyms]``,
  or ``[module]`` for a module's function.
* context 2 (user): the mapping that held the address at the sample's time: the
  process's latest MMAP/MMAP2 up to that time (or one it inherited at its fork, or
  one of pid -1) containing it: a later mapping replaces the part of an earlier one
  it overlaps, and an exec drops nothing by itself (as in perf: a sample inside
  ``execve()`` still shows the old image's addresses); then file offset
  ``address - start + pgoff`` and :mod:`.elf` for the file (or for ``[vdso]``, this
  machine's vDSO when its build id is the recorded one, unless
  :func:`.kernel.running_kernel_ignored`). DSO: the file's basename.
* guest and hypervisor addresses stay unnamed.

Unnamed addresses get the symbol ``[unknown]`` (DSO their mapping's, or ``[unknown]``
outside every mapping) and a reason; :attr:`Resolved.unresolved` counts distinct
addresses per reason and :attr:`Resolved.notes` says which files and why. Every
(process, address) pair is named once, however many samples show it.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from dataclasses import dataclass, field

import numpy as np

from . import elf
from .kernel import (
    IGNORE_RUNNING_KERNEL,
    KallsymsChoice,
    KernelSymbols,
    choose_kallsyms,
    kernel_build_id,
    running_kernel_ignored,
)

UNKNOWN = "[unknown]"
KERNEL_DSO = "[kernel.kallsyms]"

# reasons an address stays unnamed, besides the file reasons of elf.py
NO_KALLSYMS = "in the kernel, whose kallsyms is not at hand"
NO_KERNEL_SYMBOL = "in the kernel outside every kallsyms symbol"
NO_MAPPING = "outside every mapping the recording shows"
ANONYMOUS = "in anonymous or special memory (JIT code, heap, stack, vsyscall)"
NO_FUNCTION = "between the functions of their file"
STRIPPED = "in stripped files (only exported symbols; no debug file found)"
OUTSIDE_FILE = "outside their file's loadable segments"
GUEST = "in a guest or the hypervisor"

_INT64_MIN = np.iinfo(np.int64).min
# kallsyms lines perf keeps: text, weak, data and bss symbols, with their module
# (at most 16 hex digits an address: a line with a wider one is no symbol, never an
# OverflowError of the uint64 array)
_KALLSYMS_LINE = re.compile(
    r"^0*([0-9a-fA-F]{1,16}) [TtWwDdBb] (\S+)(?:[ \t]+\[([^\]\s]+)\])?", re.M
)
_CHUNK = 1 << 22  # cells of an address x mapping comparison at once


@dataclass
class Resolved:
    """Per input row: ``symbol``, ``dso`` and ``reason`` ("" when named), object arrays;
    ``unresolved``: distinct unnamed addresses per reason; ``unresolved_dsos``: the same
    per reason and DSO; ``notes``: one line per file (or the kernel) that could not be
    used, and why."""

    symbol: np.ndarray
    dso: np.ndarray
    reason: np.ndarray
    unresolved: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    unresolved_dsos: dict[str, dict[str, int]] = field(default_factory=dict)
    kallsyms: KallsymsChoice | None = None


class KernelTable:
    """kallsyms as perf reads it, for lookups through :class:`.kernel.KernelSymbols`:
    only text, weak, data and bss symbols (``T``, ``W``, ``D``, ``B``, either case); of
    several at one address the last in kallsyms order (perf 6.1 extends the zero-size
    symbols to the next one before choosing among aliases, so only the last has a
    size: ``__pi_memcpy``, not ``memcpy``); each symbol reaches the next one, the last of
    the kernel or of a module the end of its page and one more."""

    def __init__(self, text: bytes):
        rows = _KALLSYMS_LINE.findall(text.decode("utf-8", "replace"))
        addrs = np.array([int(a, 16) for a, _, _ in rows], dtype=np.uint64)
        order = np.argsort(addrs, kind="stable")  # file order among aliases
        addrs = addrs[order]
        last = np.ones(len(addrs), dtype=bool)
        last[:-1] = addrs[1:] != addrs[:-1]
        keep = order[last]
        # KernelSymbols' lookup over the filtered table (its own parse would keep every
        # symbol type and every alias)
        self.symbols = KernelSymbols(b"")
        self.symbols.addrs = addrs[last]
        self.symbols.names = np.array([rows[i][1] for i in keep], dtype=object)
        self.symbols.modules = np.array([rows[i][2] for i in keep], dtype=object)
        addrs, modules = self.symbols.addrs, self.symbols.modules
        page = np.uint64(4096)
        ends = np.zeros(len(addrs), dtype=np.uint64)
        if len(addrs):
            ends[:-1] = addrs[1:]
            boundary = np.zeros(len(addrs), dtype=bool)
            boundary[:-1] = modules[:-1] != modules[1:]
            page_end = (addrs + page + page - np.uint64(1)) // page * page
            ends[boundary] = page_end[boundary]
            ends[-1] = (addrs[-1] + page - np.uint64(1)) // page * page + page
        self.ends = ends

    def lookup(self, addrs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(found, name, module) per address."""
        a = np.asarray(addrs, dtype=np.uint64)
        found, names, modules = self.symbols.lookup(a)
        if len(self.ends):
            i = np.searchsorted(self.symbols.addrs, a, side="right") - 1
            found = found & (a < self.ends[np.maximum(i, 0)])
        return found, names, modules


_kernel_tables: dict[str, KernelTable] = {}
_kernel_lock = threading.Lock()


def kernel_table(text: bytes) -> KernelTable:
    """The :class:`KernelTable` of a kallsyms text, built once per text."""
    key = hashlib.sha1(text).hexdigest()
    with _kernel_lock:
        table = _kernel_tables.get(key)
    if table is None:
        table = KernelTable(text)
        with _kernel_lock:
            _kernel_tables.clear()  # one kernel at a time is plenty
            _kernel_tables[key] = table
    return table


def dso_name(filename: str) -> str:
    """How perf names a mapping's DSO: the file's basename; ``[vdso]``, ``//anon`` and
    other special names as they are."""
    if not filename:
        return UNKNOWN
    if filename.startswith("[") or filename.startswith("//"):
        return filename
    return os.path.basename(filename.removesuffix(" (deleted)")) or filename


class Resolver:
    """Names the addresses of one trace (a perf.data with its side-band tables)."""

    def __init__(self, trace, kallsyms=None):
        self.meta = trace.meta
        self.sideband = getattr(trace, "sideband", None) or {}
        self.given_kallsyms = kallsyms
        self._kernel: KernelTable | None = None
        self._kallsyms: KallsymsChoice | None = None
        self._maps = None

    # -- kernel -----------------------------------------------------------------------
    @property
    def kallsyms(self) -> KallsymsChoice:
        """The kallsyms choice (raises TraceError for an unreadable ``kallsyms`` file)."""
        if self._kallsyms is None:
            source = self.meta.source
            self._kallsyms = choose_kallsyms(
                self.meta.kernel,
                kernel_build_id(source.get("build_ids")),
                given=self.given_kallsyms,
            )
        return self._kallsyms

    def _kernel_table(self) -> KernelTable | None:
        if self._kernel is None and self.kallsyms.text is not None:
            self._kernel = kernel_table(self.kallsyms.text)
        return self._kernel

    # -- user-space maps --------------------------------------------------------------
    def _recorded_build_ids(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for b in self.meta.source.get("build_ids") or []:
            name, bid = b.get("filename"), b.get("build_id")
            if name and bid and (b.get("pid", -1) == -1 or name not in out):
                out[name] = bid
        return out

    def _load_maps(self):
        """The mmaps as arrays and the fork parents."""
        if self._maps is not None:
            return self._maps
        m = self.sideband.get("mmaps")
        if m is None or m.num_rows == 0:
            maps = None
        else:
            names = m.column("filename").to_pylist()
            bids = m.column("build_id").to_pylist() if "build_id" in m.column_names else None
            recorded = self._recorded_build_ids()
            files = sorted(set(names))
            file_id = {f: i for i, f in enumerate(files)}
            file_bid = {}
            for i, f in enumerate(names):
                b = bids[i] if bids else None
                if b and f not in file_bid:
                    file_bid[f] = b.hex() if isinstance(b, bytes | bytearray) else str(b)
            for f in files:
                if f not in file_bid and f in recorded:
                    file_bid[f] = recorded[f]
            maps = {
                "ts": m.column("ts").to_numpy().astype(np.int64),
                "pid": m.column("pid").to_numpy().astype(np.int64),
                "start": m.column("start").to_numpy().astype(np.uint64),
                "len": m.column("len").to_numpy().astype(np.uint64),
                "pgoff": m.column("pgoff").to_numpy().astype(np.uint64),
                "cpumode": m.column("cpumode").to_numpy().astype(np.int64),
                "file": np.array([file_id[f] for f in names], dtype=np.int64),
                "files": files,
                "build_ids": [file_bid.get(f) for f in files],
            }
        forks = self.sideband.get("forks")
        parents: dict[int, tuple[int, int]] = {}
        if forks is not None and forks.num_rows:
            f = forks.to_pydict()
            for ts, pid, ppid, tid in zip(f["ts"], f["pid"], f["ppid"], f["tid"]):
                if pid == tid and pid != ppid and pid not in parents:
                    parents[pid] = (ppid, ts)
        self._maps = (maps, parents)
        return self._maps

    def _candidates(self, pid: int, maps, parents, memo, depth=0):
        """Mapping rows a process may use: index into the mmaps, and the time each
        became part of the process (its mmap, or the fork that inherited it)."""
        if pid in memo:
            return memo[pid]
        own = np.flatnonzero((maps["pid"] == pid) | (maps["pid"] == -1))
        idx, born = [own], [maps["ts"][own]]
        if pid in parents and depth < 64:
            ppid, fork_ts = parents[pid]
            if ppid != pid:
                p_idx, p_born = self._candidates(ppid, maps, parents, memo, depth + 1)
                # the parent's mappings at the fork: mapped before it
                alive = (maps["ts"][p_idx] <= fork_ts) & (maps["pid"][p_idx] != -1)
                idx.append(p_idx[alive])
                born.append(np.full(int(alive.sum()), fork_ts, dtype=np.int64))
        out = (np.concatenate(idx), np.concatenate(born))
        memo[pid] = out
        return out

    def _map_rows(self, pid, ts, addr):
        """The mmaps row holding each user address at its time (-1: none)."""
        maps, parents = self._load_maps()
        out = np.full(len(addr), -1, dtype=np.int64)
        if maps is None or not len(addr):
            return out
        memo: dict = {}
        order = np.argsort(pid, kind="stable")
        bounds = np.flatnonzero(np.diff(pid[order])) + 1
        for rows in np.split(order, bounds):
            p = int(pid[rows[0]])
            cidx, cborn = self._candidates(p, maps, parents, memo)
            if not len(cidx):
                continue
            start, end = maps["start"][cidx], maps["start"][cidx] + maps["len"][cidx]
            cts = maps["ts"][cidx]
            # the latest mapping wins: by time, then by when it joined the process
            rank = np.empty(len(cidx), dtype=np.int64)
            rank[np.lexsort((np.arange(len(cidx)), cborn, cts))] = np.arange(len(cidx))
            a, t = addr[rows], ts[rows]
            ua, inv = np.unique(a, return_inverse=True)
            step = max(1, _CHUNK // len(cidx))
            ncand = np.zeros(len(ua), dtype=np.int64)
            first = np.zeros(len(ua), dtype=np.int64)
            for lo in range(0, len(ua), step):
                inside = (ua[lo : lo + step, None] >= start) & (ua[lo : lo + step, None] < end)
                ncand[lo : lo + step] = inside.sum(1)
                first[lo : lo + step] = inside.argmax(1)
            nc = ncand[inv]
            one = np.flatnonzero(nc == 1)
            c = first[inv[one]]
            ok = cts[c] <= t[one]
            out[rows[one[ok]]] = cidx[c[ok]]
            many = np.flatnonzero(nc > 1)
            for lo in range(0, len(many), step):
                r = many[lo : lo + step]
                inside = (a[r, None] >= start) & (a[r, None] < end)
                inside &= cts <= t[r, None]
                score = np.where(inside, rank[None, :], -1)
                best = score.argmax(1)
                has = score[np.arange(len(r)), best] >= 0
                out[rows[r[has]]] = cidx[best[has]]
        return out

    # -- all together -----------------------------------------------------------------
    def resolve(self, pid, ts, addr, context) -> Resolved:
        """Name each row's address (arrays of equal length)."""
        pid = np.asarray(pid, dtype=np.int64)
        ts = np.asarray(ts, dtype=np.int64)
        addr = np.asarray(addr, dtype=np.uint64)
        context = np.asarray(context, dtype=np.int64)
        n = len(addr)
        symbol = np.full(n, UNKNOWN, dtype=object)
        dso = np.full(n, UNKNOWN, dtype=object)
        reason = np.full(n, "", dtype=object)
        counts: dict[str, int] = {}
        by_dso: dict[str, dict[str, int]] = {}
        notes: list[str] = []

        def count(why: str, k: int, where: str = UNKNOWN) -> None:
            if k:
                counts[why] = counts.get(why, 0) + int(k)
                d = by_dso.setdefault(why, {})
                d[where] = d.get(where, 0) + int(k)

        # kernel
        kern = np.flatnonzero(context == 1)
        if len(kern):
            ua, inv = np.unique(addr[kern], return_inverse=True)
            table = self._kernel_table()
            if table is None:
                reason[kern] = NO_KALLSYMS
                dso[kern] = KERNEL_DSO
                count(NO_KALLSYMS, len(ua), KERNEL_DSO)
                notes.append(f"kernel function names unknown: {self.kallsyms.reason}")
            else:
                found, names, modules = table.lookup(ua)
                kd = np.array([f"[{m}]" if m else KERNEL_DSO for m in modules], dtype=object)
                symbol[kern] = np.where(found, names, UNKNOWN)[inv]
                dso[kern] = kd[inv]
                reason[kern] = np.where(found, "", NO_KERNEL_SYMBOL).astype(object)[inv]
                count(NO_KERNEL_SYMBOL, int((~found).sum()), KERNEL_DSO)
        # guests, hypervisor, anything else
        other = np.flatnonzero((context != 1) & (context != 2))
        if len(other):
            reason[other] = GUEST
            count(GUEST, len(np.unique(addr[other])))
        # user space
        user = np.flatnonzero(context == 2)
        if len(user):
            self._resolve_user(user, pid, ts, addr, symbol, dso, reason, count, notes)
        return Resolved(
            symbol,
            dso,
            reason,
            unresolved=counts,
            notes=notes,
            unresolved_dsos=by_dso,
            kallsyms=self._kallsyms,
        )

    def _resolve_user(self, user, pid, ts, addr, symbol, dso, reason, count, notes) -> None:
        rows = self._map_rows(pid[user], ts[user], addr[user])
        maps = self._load_maps()[0]
        unmapped = user[rows < 0]
        reason[unmapped] = NO_MAPPING
        if len(unmapped):
            pairs = np.stack([pid[unmapped], addr[unmapped].view(np.int64)])
            count(NO_MAPPING, np.unique(pairs, axis=1).shape[1])
        mapped = rows >= 0
        if not mapped.any():
            return
        u, r = user[mapped], rows[mapped]
        file_ids = maps["file"][r]
        offsets = addr[u] - maps["start"][r] + maps["pgoff"][r]
        for fid in np.unique(file_ids):
            sel = file_ids == fid
            where, off = u[sel], offsets[sel]
            filename = maps["files"][int(fid)]
            name = dso_name(filename)
            dso[where] = name
            uo, inv = np.unique(off, return_inverse=True)
            got = self._open(filename, maps["build_ids"][int(fid)])
            if isinstance(got, str):  # a reason: the whole file is unnamed
                reason[where] = got
                count(got, len(uo), name)
                continue
            if not got.ok:
                reason[where] = got.problem
                count(got.problem, len(uo), name)
                if got.detail:
                    notes.append(got.detail)
                continue
            syms = got.symbols
            assert syms is not None
            ok, vaddr = syms.offset_to_vaddr(uo)
            found, names = syms.lookup(vaddr)
            found &= ok
            missing = STRIPPED if syms.table == ".dynsym" else NO_FUNCTION
            why = np.where(ok, np.where(found, "", missing), OUTSIDE_FILE).astype(object)
            symbol[where] = np.where(found, names, UNKNOWN)[inv]
            reason[where] = why[inv]
            count(missing, int((ok & ~found).sum()), name)
            count(OUTSIDE_FILE, int((~ok).sum()), name)

    def _open(self, filename: str, build_id: str | None):
        """The ELF symbols of a mapped file, or the reason why it has none."""
        if filename == "[vdso]":
            if running_kernel_ignored():  # as on another kernel: not the recorded vDSO
                return elf.ElfLoad(
                    None,
                    elf.BUILD_ID_MISMATCH,
                    f"[vdso]: this machine's vDSO is not used ({IGNORE_RUNNING_KERNEL} is set)",
                )
            image = elf.vdso_image()
            if image is None:
                return ANONYMOUS
            got = elf.load("[vdso]", build_id, data=image)
            if got.problem == elf.BUILD_ID_MISMATCH:
                return elf.ElfLoad(
                    None, got.problem, "[vdso]: this machine's vDSO is not the recorded one"
                )
            return got
        if (
            not filename
            or filename.startswith("[")
            or filename.startswith("//")
            or filename.startswith("/memfd:")
            or filename.startswith("/dev/")
        ):
            return ANONYMOUS
        if filename.endswith(" (deleted)"):
            return elf.ElfLoad(None, elf.MISSING, f"{filename}: deleted since it was mapped")
        return elf.load(filename, build_id)


__all__ = ["Resolver", "Resolved", "KernelTable", "kernel_table", "dso_name", "UNKNOWN"]
