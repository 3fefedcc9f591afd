"""The C decoder's units call one way: no unit calls, through others or directly, back
into one that calls it (issue #36: _td_container.c, _td_perfdata.c and _td_merge.c once
called each other in a circle).

Each unit of schedwake/ingest/ (_td_*.c and the binding _tdread.c) is compiled on its
own, and ``nm`` says which functions and data it defines and which it uses from
outside; a unit that uses a symbol another one defines depends on it. The graph must
have no cycle, the merge must know other sources only through their Source interface
(_td_internal.h), and no unit includes another's .c file.
``docs/architecture.md`` draws the same graph.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "schedwake" / "ingest"

#: What the merge may use: the shared parts, never a file format's own unit.
MERGE_MAY_USE = {"_td_common", "_td_format", "_td_symbols", "_td_records", "_td_pool"}


def units() -> list[Path]:
    return [*sorted(SRC.glob("_td_*.c")), SRC / "_tdread.c"]


def compiler() -> str:
    for cc in ("cc", "gcc", "clang"):
        if shutil.which(cc):
            return cc
    pytest.skip("no C compiler")


@cache
def graph(objdir: Path) -> dict[str, dict[str, set[str]]]:
    """unit -> the units it uses, each with the symbols it uses of them."""
    if shutil.which("nm") is None:
        pytest.skip("no nm")
    cc = compiler()
    include = sysconfig.get_paths()["include"]

    def compile_one(src: Path) -> Path:
        obj = objdir / f"{src.stem}.o"
        cmd = [cc, "-c", "-O0", "-std=gnu11", f"-I{SRC}", f"-I{include}", str(src), "-o", str(obj)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return obj

    with ThreadPoolExecutor(max_workers=2) as pool:
        objs = list(pool.map(compile_one, units()))
    defined: dict[str, set[str]] = {}
    used: dict[str, set[str]] = {}
    for obj in objs:
        out = subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout
        rows = [line.split() for line in out.splitlines()]
        defined[obj.stem] = {r[2] for r in rows if len(r) == 3 and r[1] in "TDBRC"}
        used[obj.stem] = {r[1] for r in rows if len(r) == 2 and r[0] == "U"}
    owner = {sym: unit for unit, syms in defined.items() for sym in syms}
    deps: dict[str, dict[str, set[str]]] = {}
    for unit, syms in used.items():
        deps[unit] = {}
        for sym in syms:
            if sym in owner and owner[sym] != unit:
                deps[unit].setdefault(owner[sym], set()).add(sym)
    return deps


@pytest.fixture(scope="module")
def deps(tmp_path_factory) -> dict[str, dict[str, set[str]]]:
    return graph(tmp_path_factory.mktemp("c-layout"))


def find_cycle(deps: dict[str, dict[str, set[str]]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(u: str) -> list[str] | None:
        state[u] = 1
        path.append(u)
        for v in sorted(deps.get(u, {})):
            if state.get(v) == 1:
                return path[path.index(v) :] + [v]
            if v not in state and (found := visit(v)):
                return found
        path.pop()
        state[u] = 2
        return None

    for u in sorted(deps):
        if u not in state and (found := visit(u)):
            return found
    return None


def test_units_call_without_a_cycle(deps):
    cycle = find_cycle(deps)
    if cycle:
        edges = [
            f"{a} -> {b} ({', '.join(sorted(deps[a][b]))})"
            for a, b in zip(cycle, cycle[1:], strict=False)
        ]
        pytest.fail("the C units call in a circle:\n" + "\n".join(edges))


def test_merge_knows_sources_only_through_their_interface(deps):
    assert set(deps["_td_merge"]) <= MERGE_MAY_USE, deps["_td_merge"]
    assert "_td_perfdata" in deps["_td_dispatch"]  # (the graph is read at all)


def test_a_cycle_is_found():
    assert find_cycle({"a": {"b": {"f"}}, "b": {"c": {"g"}}, "c": {"a": {"h"}}}) == [
        "a",
        "b",
        "c",
        "a",
    ]
    assert find_cycle({"a": {"b": {"f"}}, "b": {}, "c": {"a": {"h"}, "b": {"g"}}}) is None


def test_no_unit_includes_another_c_file():
    for src in [*units(), *SRC.glob("*.h")]:
        included = re.findall(r'^\s*#\s*include\s+"([^"]+)"', src.read_text(), re.M)
        assert not [name for name in included if name.endswith(".c")], src.name


def test_setup_builds_every_unit():
    """A unit added or split off is built by a fresh ``pip install`` (setup.py lists them)."""
    listed = re.findall(r'"schedwake/ingest/(_td_\w+\.c)"', (ROOT / "setup.py").read_text())
    assert sorted(listed) == sorted(p.name for p in SRC.glob("_td_*.c"))
