"""User-space symbols: the functions of an ELF file (an executable, a shared library, the
vDSO) by address, as ``perf report`` names them.

A sampled user address is named in three steps: the process's memory map says which
file and file offset it is (``address - map start + map pgoff``, :mod:`.resolve`); the
file's ``PT_LOAD`` program headers turn the offset into the file's virtual address; its
symbol table says which function covers that address. The table is, as perf takes it:

* a separate debug file of the same build id with a ``.symtab``
  (``/usr/lib/debug/.build-id/ab/cdef....debug``, or the file's ``.gnu_debuglink`` in
  its directory, its ``.debug/`` or ``/usr/lib/debug/DIR``): Debian's ``*-dbg`` and
  ``*-dbgsym`` packages put them there;
* else the file's own ``.symtab`` (a binary not stripped);
* else its ``.dynsym`` (exported functions only: a stripped binary's internal
  functions stay unnamed).

Only functions (``STT_FUNC``, ``STT_GNU_IFUNC``) count, over ``[st_value, st_value +
st_size)``; one of size 0 reaches the next function (perf's ``symbols__fixup_end``), and
of several at one address the one perf prints is kept (``symbols__fixup_duplicate``: a
sized one, not weak, global, fewer leading underscores, the longer name).

The work is bounded: a file that is missing, unreadable, not ELF or larger than
:data:`MAX_FILE_BYTES` (or whose symbol table is larger than :data:`MAX_SYMTAB_BYTES`)
is simply not used, with the reason. A file whose build id differs from the one the
recording names is not used either: it was rebuilt or replaced since, and its symbols
would name the wrong functions. Parsed files are cached in memory per path and
(device, inode, size, mtime).
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..compressed import open_regular
from ..errors import TraceError

#: A mapped file larger than this is not read (its symbols stay unknown).
MAX_FILE_BYTES = 2 << 30
#: A symbol table (with its strings) larger than this is not read.
MAX_SYMTAB_BYTES = 256 << 20
#: Parsed files kept in memory.
CACHE_FILES = 256

DEBUG_ROOT = Path("/usr/lib/debug")

# why a file gave no symbols (the keys of the caveats' counts)
MISSING = "in files not on this machine"
UNREADABLE = "in files that cannot be read"
NOT_ELF = "in files that are not ELF"
TOO_BIG = "in files too large to read"
BUILD_ID_MISMATCH = "in files rebuilt since the recording (build id differs)"
NO_SYMBOLS = "in files without symbols"

_STT_NOTYPE, _STT_OBJECT, _STT_FUNC, _STT_GNU_IFUNC = 0, 1, 2, 10
_STB_GLOBAL, _STB_WEAK = 1, 2
_STV_INTERNAL, _STV_HIDDEN = 1, 2
_SHN_UNDEF, _SHN_LORESERVE = 0, 0xFF00
_SHF_ALLOC = 0x2


class ElfSymbols:
    """The symbols of one ELF file (sorted, one per address) and its loadable segments.
    Names are read from the string table (and demangled) only when looked up."""

    def __init__(
        self,
        path: str,
        build_id: str | None,
        source: str,
        table: str,
        loads: np.ndarray,
        starts: np.ndarray,
        ends: np.ndarray,
        name_offsets: np.ndarray,
        strings: bytes,
        names: np.ndarray | None = None,
    ):
        self.path = path  #: the mapped file
        self.build_id = build_id  #: its build id (hex), None if it has none
        self.source = source  #: the file whose table was read (the file or a debug file)
        self.table = table  #: ".symtab" or ".dynsym" ("" when none)
        self.loads = loads  #: PT_LOAD rows: p_offset, p_vaddr, p_filesz (uint64)
        self.starts = starts  #: symbol start addresses, sorted (uint64)
        self.ends = ends  #: exclusive ends (uint64)
        self._offsets = name_offsets  # into strings; -1: the name is already in _names
        self._strings = strings
        self._names = names if names is not None else np.full(len(starts), None, object)
        self._max_end = np.maximum.accumulate(ends) if len(ends) else np.zeros(0, np.uint64)

    def __len__(self) -> int:
        return len(self.starts)

    def name(self, i: int) -> str:
        """The (demangled) name of symbol ``i``."""
        got = self._names[i]
        if got is None:
            got = demangle(_cstr(self._strings, int(self._offsets[i])))
            self._names[i] = got
        return got

    @property
    def names(self) -> list[str]:
        """Every symbol's name (decodes them all)."""
        return [self.name(i) for i in range(len(self))]

    def offset_to_vaddr(self, offsets) -> tuple[np.ndarray, np.ndarray]:
        """(ok, vaddr): file offsets -> the file's virtual addresses, through the
        ``PT_LOAD`` segment that holds each offset (not ok: in none of them)."""
        off = np.asarray(offsets, dtype=np.uint64)
        ok = np.zeros(len(off), dtype=bool)
        vaddr = np.zeros(len(off), dtype=np.uint64)
        for p_offset, p_vaddr, p_filesz in self.loads:
            inside = ~ok & (off >= p_offset) & (off < p_offset + p_filesz)
            vaddr[inside] = off[inside] - p_offset + p_vaddr
            ok |= inside
        return ok, vaddr

    def lookup(self, vaddrs) -> tuple[np.ndarray, np.ndarray]:
        """(found, name): the symbol covering each virtual address."""
        v = np.asarray(vaddrs, dtype=np.uint64)
        names = np.full(len(v), "", dtype=object)
        if not len(self.starts):
            return np.zeros(len(v), dtype=bool), names
        i = np.searchsorted(self.starts, v, side="right") - 1
        found = i >= 0
        j = np.where(found, i, 0)
        found &= v < self.ends[j]
        # a symbol nested in a longer one (an address past the inner one's end but
        # inside the outer one): look back while some earlier symbol reaches it
        again = np.flatnonzero(~found & (i >= 0) & (v < self._max_end[j]))
        for k in again:  # bounded: a few symbols back
            for m in range(int(i[k]) - 1, max(int(i[k]) - 65, -1), -1):
                if self.starts[m] <= v[k] < self.ends[m]:
                    found[k], j[k] = True, m
                    break
                if self._max_end[m] <= v[k]:
                    break
        hit = np.unique(j[found])
        table = {int(h): self.name(int(h)) for h in hit}
        names[found] = [table[int(h)] for h in j[found]]
        return found, names


@dataclass
class ElfLoad:
    """What opening a mapped file gave: its symbols, or why none."""

    symbols: ElfSymbols | None
    problem: str = ""  # one of the reasons above; "" when symbols is usable
    detail: str = ""  # the file and what was wrong, for a caveat

    @property
    def ok(self) -> bool:
        return self.symbols is not None and not self.problem


_cache: OrderedDict[tuple, ElfLoad] = OrderedDict()
_cache_lock = threading.Lock()


def load(path, build_id: str | None = None, data: bytes | None = None) -> ElfLoad:
    """The symbols of the ELF file at ``path`` (or of the image ``data``, e.g. the
    vDSO, named ``path``). ``build_id``: the one the recording names for it (hex); a file
    with another build id is not used (``problem == BUILD_ID_MISMATCH``)."""
    path = str(path)
    if data is not None:
        key: tuple = (path, "image", hashlib.sha1(data).hexdigest())
    else:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return ElfLoad(None, MISSING, f"{path} is not on this machine")
        except OSError as exc:
            return ElfLoad(None, UNREADABLE, f"{path}: {exc.strerror}")
        key = (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if st.st_size > MAX_FILE_BYTES:
            return ElfLoad(None, TOO_BIG, f"{path} is larger than {MAX_FILE_BYTES >> 20} MiB")
    with _cache_lock:
        got = _cache.get(key)
        if got is not None:
            _cache.move_to_end(key)
    if got is None:
        got = _parse(path, data)
        with _cache_lock:
            _cache[key] = got
            while len(_cache) > CACHE_FILES:
                _cache.popitem(last=False)
    if got.symbols is not None and build_id and got.symbols.build_id:
        if got.symbols.build_id != build_id.lower():
            return ElfLoad(
                None,
                BUILD_ID_MISMATCH,
                f"{path} has build id {got.symbols.build_id[:12]}, the recording "
                f"{build_id[:12]}: rebuilt or replaced since, not used",
            )
    return got


def clear_cache() -> None:
    """Forget the parsed files (they are re-read on next use)."""
    with _cache_lock:
        _cache.clear()


def _parse(path: str, data: bytes | None) -> ElfLoad:
    import io

    from elftools.common.exceptions import ELFError

    try:
        if data is not None:
            return _read(path, io.BytesIO(data))
        # a regular file only, opened non-blocking, and nothing read of one that says it
        # is empty: a mapping's name may be /proc/kmsg, trace_pipe or a FIFO (a hostile
        # perf.data), whose reading would hang or drain the kernel's log
        with open_regular(path, "ELF file") as f:
            if os.fstat(f.fileno()).st_size < 4 or f.read(4) != b"\x7fELF":
                return ElfLoad(None, NOT_ELF, f"{path} is not an ELF file")
            f.seek(0)
            return _read(path, f)
    except TraceError as exc:  # not a regular file
        return ElfLoad(None, NOT_ELF, str(exc))
    except PermissionError as exc:
        return ElfLoad(None, UNREADABLE, f"{path}: {exc.strerror}")
    except IsADirectoryError:
        return ElfLoad(None, NOT_ELF, f"{path} is a directory")
    except OSError as exc:
        return ElfLoad(None, UNREADABLE, f"{path}: {exc.strerror or exc}")
    except (ELFError, ValueError, KeyError, IndexError, AssertionError, EOFError) as exc:
        return ElfLoad(None, NOT_ELF, f"{path}: damaged ELF ({exc})")
    except Exception as exc:  # noqa: BLE001 - pyelftools on hostile input: any error
        return ElfLoad(None, NOT_ELF, f"{path}: unreadable ELF ({type(exc).__name__})")


class _Sections:
    """An ELF file's section headers, read once (pyelftools parses one header per call):
    per index its name, type, flags; a section by name through pyelftools."""

    def __init__(self, elf):
        self.elf = elf
        h = elf.header
        n, size, off = int(h["e_shnum"]), int(h["e_shentsize"]), int(h["e_shoff"])
        end = "<" if elf.little_endian else ">"
        word = "u8" if elf.elfclass == 64 else "u4"
        dt = np.dtype(
            [
                ("name", end + "u4"),
                ("type", end + "u4"),
                ("flags", end + word),
                ("addr", end + word),
                ("offset", end + word),
                ("size", end + word),
                ("link", end + "u4"),
                ("info", end + "u4"),
                ("align", end + word),
                ("entsize", end + word),
            ]
        )
        if not n or not off or size != dt.itemsize or n > 1 << 16:
            self.table = np.zeros(0, dt)
            self.names: list[str] = []
            self.index: dict[str, int] = {}
            return
        elf.stream.seek(off)
        raw = elf.stream.read(n * size)
        self.table = np.frombuffer(raw[: len(raw) // size * size], dtype=dt)
        shstr = b""
        k = int(h["e_shstrndx"])
        if 0 < k < len(self.table):
            elf.stream.seek(int(self.table["offset"][k]))
            shstr = elf.stream.read(int(self.table["size"][k]))
        self.names = [_cstr(shstr, int(x)) if x < len(shstr) else "" for x in self.table["name"]]
        self.index = {}
        for i, name in enumerate(self.names):
            self.index.setdefault(name, i)

    def get(self, name: str):
        i = self.index.get(name)
        return None if i is None else self.elf.get_section(i)


def _read(path: str, stream) -> ElfLoad:
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(stream)
    secs = _Sections(elf)
    build_id = _build_id(elf, secs)
    loads = np.array(
        [
            (s["p_offset"], s["p_vaddr"], s["p_filesz"])
            for s in elf.iter_segments()
            if s["p_type"] == "PT_LOAD" and s["p_filesz"]
        ],
        dtype=np.uint64,
    ).reshape(-1, 3)
    empty = np.zeros(0, np.uint64)
    # the symbol table: the file's .symtab, a debug file's, the file's .dynsym
    for candidate in (_own_symtab, _debug_symtab, _own_dynsym):
        found = candidate(elf, secs, path, build_id)
        if found is None:
            continue
        sym_elf, sym_secs, section, table, src = found
        try:
            starts, ends, offsets, names, strings = _symbols(sym_elf, sym_secs, section)
        finally:
            if sym_elf is not elf:
                sym_elf.stream.close()
        try:
            p_starts, p_names = _plt_symbols(elf, secs)
        except Exception:  # noqa: BLE001 - a damaged PLT costs its @plt names only
            p_starts, p_names = np.zeros(0, np.uint64), np.zeros(0, object)
        if len(p_starts):
            entry = p_starts[1] - p_starts[0] if len(p_starts) > 1 else np.uint64(16)
            order = np.argsort(np.concatenate([starts, p_starts]), kind="stable")
            starts = np.concatenate([starts, p_starts])[order]
            ends = np.concatenate([ends, p_starts + entry])[order]
            offsets = np.concatenate([offsets, np.full(len(p_starts), -1, np.int64)])[order]
            names = np.concatenate([names, p_names])[order]
        if len(starts):
            return ElfLoad(
                ElfSymbols(path, build_id, src, table, loads, starts, ends, offsets, strings, names)
            )
    return ElfLoad(
        ElfSymbols(path, build_id, path, "", loads, empty, empty, np.zeros(0, np.int64), b""),
        NO_SYMBOLS,
        f"{path} has no symbols (stripped, and no debug file found)",
    )


def _build_id(elf, secs: _Sections) -> str | None:
    for i in np.flatnonzero(secs.table["type"] == 7):  # SHT_NOTE
        for note in elf.get_section(int(i)).iter_notes():
            if note["n_type"] == "NT_GNU_BUILD_ID":
                desc = note["n_desc"]
                return desc if isinstance(desc, str) else bytes(desc).hex()
    return None


def _table(secs: _Sections, name: str, sh_type: int):
    i = secs.index.get(name)
    if i is None or int(secs.table["type"][i]) != sh_type or not int(secs.table["size"][i]):
        return None
    return secs.elf.get_section(i)


def _own_symtab(elf, secs, path, build_id):
    s = _table(secs, ".symtab", 2)  # SHT_SYMTAB
    return None if s is None else (elf, secs, s, ".symtab", path)


def _own_dynsym(elf, secs, path, build_id):
    s = _table(secs, ".dynsym", 11)  # SHT_DYNSYM
    return None if s is None else (elf, secs, s, ".dynsym", path)


def _debug_symtab(elf, secs, path, build_id):
    """The ``.symtab`` of a separate debug file with the same build id."""
    from elftools.elf.elffile import ELFFile

    candidates = []
    if build_id and len(build_id) > 2:
        candidates.append(DEBUG_ROOT / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug")
    link = secs.get(".gnu_debuglink")
    if link is not None:
        name = link.data().split(b"\0", 1)[0].decode("utf-8", "replace")
        if name and "/" not in name and os.path.isabs(path):
            d = Path(path).parent
            candidates += [d / name, d / ".debug" / name, DEBUG_ROOT / d.relative_to("/") / name]
    for cand in candidates:
        try:
            if str(cand) == path or not cand.is_file():
                continue
            if cand.stat().st_size > MAX_FILE_BYTES:
                continue
            f = open(cand, "rb")  # noqa: SIM115 - kept open while its table is read
        except OSError:
            continue
        try:
            dbg = ELFFile(f)
            dsecs = _Sections(dbg)
            s = _table(dsecs, ".symtab", 2)
            if s is None or (build_id is not None and _build_id(dbg, dsecs) != build_id):
                f.close()
                continue
            return dbg, dsecs, s, ".symtab", str(cand)
        except Exception:  # noqa: BLE001 - a damaged debug file is skipped
            f.close()
    return None


def _symbols(elf, secs: _Sections, section):
    """(starts, ends, name offsets, names, strings) of the symbols of a symbol table
    section that perf keeps, sorted, one per address (perf's choice among aliases)."""
    entsize = section["sh_entsize"] or (24 if elf.elfclass == 64 else 16)
    strtab = elf.get_section(section["sh_link"])
    if section["sh_size"] + strtab["sh_size"] > MAX_SYMTAB_BYTES:
        raise ValueError("symbol table too large")
    dt = _sym_dtype(elf)
    if entsize != dt.itemsize:
        raise ValueError(f"unexpected symbol entry size {entsize}")
    raw = section.data()
    syms = np.frombuffer(raw[: len(raw) // dt.itemsize * dt.itemsize], dtype=dt)
    strings = strtab.data()
    # per section: occupies memory at run time; its name says text or data (labels)
    alloc = np.append((secs.table["flags"] & _SHF_ALLOC) != 0, False)
    code_or_data = np.append(
        np.array([("text" in n or "data" in n) for n in secs.names], dtype=bool), False
    )
    typ = syms["info"] & 0xF
    bind = syms["info"] >> 4
    visibility = syms["other"] & 0x3
    shndx = syms["shndx"].astype(np.int64)
    in_section = (shndx != _SHN_UNDEF) & (shndx < min(_SHN_LORESERVE, len(alloc) - 1))
    named = (syms["name"] != 0) & (syms["name"] < len(strings))
    # functions and data objects; labels (no type: asm entry points such as
    # _dl_start_user) in text or data sections, unless hidden or internal
    label = (typ == _STT_NOTYPE) & (visibility != _STV_INTERNAL) & (visibility != _STV_HIDDEN)
    keep = named & in_section
    keep &= (typ == _STT_FUNC) | (typ == _STT_GNU_IFUNC) | (typ == _STT_OBJECT) | label
    idx = np.where(keep, shndx, len(alloc) - 1)
    keep &= alloc[idx] & (~label | code_or_data[idx])
    syms, bind = syms[keep], bind[keep]
    starts = syms["value"].astype(np.uint64)
    sizes = syms["size"].astype(np.uint64)
    offsets = syms["name"].astype(np.int64)
    if not len(starts):
        e = np.zeros(0, np.uint64)
        return e, e, np.zeros(0, np.int64), np.zeros(0, object), strings
    order = np.argsort(starts, kind="stable")  # file order among equal starts
    starts, sizes, offsets, bind = starts[order], sizes[order], offsets[order], bind[order]
    ends = starts + sizes
    # size 0: up to the next symbol (perf's fixup_end: the next in order, which may be
    # an alias at the same address), the last one to the end of its page and one more
    last = (int(starts[-1]) + 4095) // 4096 * 4096 + 4096
    nxt = np.append(starts[1:], np.uint64(last))
    ends = np.where(sizes == 0, nxt, ends).astype(np.uint64)
    names = np.full(len(starts), None, dtype=object)
    keep = _dedupe(starts, ends, offsets, names, bind, strings)
    return starts[keep], ends[keep], offsets[keep], names[keep], strings


def _sym_dtype(elf) -> np.dtype:
    end = "<" if elf.little_endian else ">"
    if elf.elfclass == 64:
        return np.dtype(
            [
                ("name", end + "u4"),
                ("info", "u1"),
                ("other", "u1"),
                ("shndx", end + "u2"),
                ("value", end + "u8"),
                ("size", end + "u8"),
            ]
        )
    return np.dtype(
        [
            ("name", end + "u4"),
            ("value", end + "u4"),
            ("size", end + "u4"),
            ("info", "u1"),
            ("other", "u1"),
            ("shndx", end + "u2"),
        ]
    )


def _plt_symbols(elf, secs: _Sections) -> tuple[np.ndarray, np.ndarray]:
    """perf's ``NAME@plt`` symbols (starts, names) for the entries of ``.plt``, from the
    file itself (a debug file has no PLT): relocation i of ``.rela.plt`` (``.rel.plt``)
    is the (i+1)-th ``sh_entsize`` slot of ``.plt``, the first being its header."""
    empty = (np.zeros(0, np.uint64), np.zeros(0, object))
    plt = secs.get(".plt")
    rel = secs.get(".rela.plt") or secs.get(".rel.plt")
    if plt is None or rel is None or plt["sh_type"] == "SHT_NOBITS":
        return empty
    entry = int(plt["sh_entsize"])
    if not entry or rel["sh_type"] not in ("SHT_RELA", "SHT_REL") or not rel["sh_link"]:
        return empty
    dynsym = elf.get_section(rel["sh_link"])
    if dynsym is None or dynsym["sh_type"] != "SHT_DYNSYM":
        return empty
    strings = elf.get_section(dynsym["sh_link"]).data()
    sdt = _sym_dtype(elf)
    sraw = dynsym.data()
    syms = np.frombuffer(sraw[: len(sraw) // sdt.itemsize * sdt.itemsize], dtype=sdt)
    end = "<" if elf.little_endian else ">"
    word = "u8" if elf.elfclass == 64 else "u4"
    fields = [("offset", end + word), ("info", end + word)]
    if rel["sh_type"] == "SHT_RELA":
        fields.append(("addend", end + word.replace("u", "i")))
    rdt = np.dtype(fields)
    rraw = rel.data()
    rels = np.frombuffer(rraw[: len(rraw) // rdt.itemsize * rdt.itemsize], dtype=rdt)
    if len(rels) > 1 << 20:
        return empty
    shift = 32 if elf.elfclass == 64 else 8
    names = []
    for i, k in enumerate((rels["info"] >> shift).astype(np.int64)):
        name = ""
        if 0 < k < len(syms) and syms["name"][k] < len(strings):
            name = demangle(_cstr(strings, int(syms["name"][k])))
        offset = int(plt["sh_offset"]) + (i + 1) * entry
        names.append(f"{name}@plt" if name else f"offset_{offset:#x}@plt")
    starts = np.uint64(plt["sh_addr"]) + np.uint64(entry) * (
        np.arange(len(rels), dtype=np.uint64) + np.uint64(1)
    )
    return starts, np.array(names, dtype=object)


def _cstr(strings: bytes, offset: int) -> str:
    stop = strings.find(b"\0", offset)
    raw = strings[offset:] if stop < 0 else strings[offset:stop]
    return raw.decode("utf-8", "replace")


def best_alias_key(sized: bool, weak: bool, is_global: bool, name: str) -> tuple:
    """perf's ``choose_best_symbol`` as a sort key (larger wins): a symbol with a size,
    not weak, global, fewer leading underscores, the longer name."""
    return (sized, not weak, is_global, -(len(name) - len(name.lstrip("_"))), len(name))


def _dedupe(starts, ends, offsets, names, bind, strings) -> np.ndarray:
    """Which symbols to keep: one per start address, perf's choice among aliases (the
    first on ties). Fills ``names`` for the symbols it had to compare."""
    keep = np.ones(len(starts), dtype=bool)
    if len(starts) < 2:
        return keep
    dup = np.flatnonzero(starts[1:] == starts[:-1])
    if not len(dup):
        return keep
    members = np.unique(np.concatenate([dup, dup + 1]))
    group_of = np.searchsorted(np.unique(starts[members]), starts[members])
    for g in np.split(members, np.flatnonzero(np.diff(group_of)) + 1):
        best, best_key = -1, None
        for k in g:
            k = int(k)
            if names[k] is None:
                names[k] = demangle(_cstr(strings, int(offsets[k])))
            key = best_alias_key(
                bool(ends[k] > starts[k]), bind[k] == _STB_WEAK, bind[k] == _STB_GLOBAL, names[k]
            )
            if best_key is None or key > best_key:
                best, best_key = k, key
        keep[g] = False
        keep[best] = True
    return keep


_demangled: dict[str, str] = {}
_cxa: list = []  # [(__cxa_demangle, free)] once looked up, [None] if unavailable
_OPERATOR = re.compile(r"operator(?:<<=|>>=|<=>|<<|>>|<=|>=|->\*|->|<|>|\(\))")
_RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")
_CLONE = re.compile(r"(?: \[clone [^\]]*\])+$")


def demangle(name: str) -> str:
    """A C++ (Itanium ABI) name as perf prints it: demangled without parameters and
    return type (``std::ostream::flush``); special names (thunks, guard variables) in
    full. Through libstdc++'s ``__cxa_demangle``; other names, or without libstdc++,
    as they are."""
    if not name.startswith("_Z"):
        return name
    got = _demangled.get(name)
    if got is None:
        full = _cxa_demangle(name)
        if full is not None:  # GCC's clones (.isra.0, .constprop.0, ...): the function's name
            full = _CLONE.sub("", full)
        if full is None:
            got = name
        elif name.startswith(("_ZT", "_ZGV", "_ZGR", "_ZGT")):
            got = full
        else:
            got = _RUST_HASH.sub("", _without_signature(full))
        if len(_demangled) < 1 << 20:
            _demangled[name] = got
    return got


def _cxa_demangle(name: str) -> str | None:
    if not _cxa:
        try:
            import ctypes
            import ctypes.util

            lib = ctypes.CDLL(ctypes.util.find_library("stdc++") or "libstdc++.so.6")
            fn = lib.__cxa_demangle
            fn.restype = ctypes.c_void_p
            fn.argtypes = [
                ctypes.c_char_p,
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.POINTER(ctypes.c_int),
            ]
            libc = ctypes.CDLL(None)
            libc.free.argtypes = [ctypes.c_void_p]
            _cxa.append((fn, libc.free, ctypes))
        except (OSError, AttributeError):
            _cxa.append(None)
    if _cxa[0] is None:
        return None
    fn, free, ctypes = _cxa[0]
    status = ctypes.c_int(1)
    ptr = fn(name.encode("utf-8", "replace"), None, None, ctypes.byref(status))
    if not ptr or status.value != 0:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        free(ptr)


def _without_signature(full: str) -> str:
    """``ret name<T>(params) const`` -> ``name<T>`` (what libiberty prints without
    DMGL_PARAMS); anything it cannot take apart is returned whole."""
    s = full
    while True:
        for q in (" const", " volatile", " &&", " &", " noexcept", " restrict"):
            if s.endswith(q):
                s = s[: -len(q)]
                break
        else:
            break
    if not s.endswith(")"):
        return full
    masked = _OPERATOR.sub(lambda m: "o" * len(m.group()), s)
    depth = 0
    cut = -1
    for i in range(len(masked) - 1, -1, -1):
        c = masked[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                cut = i
                break
    if cut <= 0:
        return full
    name, masked = s[:cut], masked[:cut]
    # a return type (template functions): before the last top-level space, not one
    # inside an operator's name ("operator new", "operator unsigned int")
    op = masked.rfind("operator")
    limit = op if op >= 0 else len(masked)
    depth = 0
    space = -1
    for i, c in enumerate(masked[:limit]):
        if c in "<({[":
            depth += 1
        elif c in ">)}]":
            depth -= 1
        elif c == " " and depth == 0:
            space = i
    return name[space + 1 :] if space >= 0 else name


def vdso_image() -> bytes | None:
    """This machine's vDSO image (from this process's memory), None if unavailable."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                if line.rstrip().endswith("[vdso]"):
                    lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                    break
            else:
                return None
        with open("/proc/self/mem", "rb") as mem:
            mem.seek(lo)
            return mem.read(hi - lo)
    except (OSError, ValueError, OverflowError):
        return None


__all__ = [
    "ElfLoad",
    "ElfSymbols",
    "load",
    "clear_cache",
    "vdso_image",
    "best_alias_key",
    "demangle",
    "MISSING",
    "UNREADABLE",
    "NOT_ELF",
    "TOO_BIG",
    "BUILD_ID_MISMATCH",
    "NO_SYMBOLS",
]
