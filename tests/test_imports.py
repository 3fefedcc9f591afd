"""The package's imports go one way: down the data flow, never in a cycle.

Every ``import`` of every module (at the top or inside a function: a lazy import is
still a dependency) is read with ``ast``; an import of a module in a higher layer
than the importer, or any cycle between modules, fails the test with the edge or the
cycle named. ``docs/architecture.md`` draws the same layers.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import schedwake

PACKAGE = Path(schedwake.__file__).resolve().parent

#: Lowest first. A module may import its own layer's modules (without a cycle) and
#: lower layers. The data flows: file -> ingest -> model -> detect -> metrics ->
#: analysis -> compare -> gate -> batch -> report -> cli, with small shared facts at
#: the bottom. report/ renders results and never computes them, so it sits above every
#: result it renders (Analysis, CompareResult, GateResult) and nothing below imports it.
LAYERS = [
    ["errors", "version", "schema", "jsonout", "compressed", "sidevalues"],  # plain facts; JSON;
    # compression; the values side files bring in
    ["topology"],  # CPU maps
    ["bench", "counters", "work"],  # the benchmark's results, the kernel's counters and the
    # run's work beside a trace
    ["symbols"],  # addresses -> kernel and user-space function names
    ["ingest"],  # files -> Arrow tables
    ["paths"],  # which trace files a path, a directory or a glob names
    ["model"],  # tables -> wake-ups, migrations, occupancy
    ["trace", "sidetrace"],  # the loaded trace (tables + lazy model); a side's trace
    ["referee"],  # the trace against the kernel's counters
    ["summary", "convert"],  # a trace's facts as a dict;
    # a trace's tables written as Parquet (schedwake convert)
    ["detect"],  # findings with evidence
    ["changepoint"],  # change points of a series (E-divisive means)
    ["partition"],  # one trace in time parts: the prelude a part carries, the rows it owns
    ["analysis"],  # one trace (analysis/): findings + metrics + caveats (__init__), the
    # metric catalogue and its values (metrics), waits explained (wait_causes), per-task
    # latency as perf sched gives it (latency)
    ["compare", "profile"],  # several traces side by side (compare/: the comparison in
    # __init__, its statistics, the mmtests comparison of samples, the sides the command
    # line names, an mmtests results tree); profiles (profile/: one run's functions in
    # __init__, several runs a side compared in compare)
    ["gate"],  # a CI verdict from a comparison (gate/: rules, inputs, metric and profile
    # judging, explanations, the run; its false-alarm rate, calibrate)
    ["batch"],  # many traces -> one dataset of analyses
    ["series"],  # a series of builds: which build changed a metric
    ["synth", "record"],  # tools that make traces
    ["report"],  # renderers of analyses, comparisons, verdicts, recordings
    ["cli", "__init__"],  # the command line (cli/: a module a command, the shared options)
    # and the package's API
]
LAYER = {name: i for i, names in enumerate(LAYERS) for name in names}


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(("schedwake",) + parts)


def is_package(name: str) -> bool:
    return (PACKAGE.joinpath(*name.split(".")[1:]) / "__init__.py").exists()


def exists(name: str) -> bool:
    """A module of the package: Python, a package, or compiled from a C file of its name."""
    rel = PACKAGE.joinpath(*name.split(".")[1:])
    return any(
        p.exists()
        for p in (rel.with_suffix(".py"), rel / "__init__.py", rel.with_name(rel.name + ".c"))
    )


@functools.cache  # each file parsed once for all the checks
def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def from_target(node: ast.ImportFrom, base: str) -> str:
    """The module a ``from ... import`` names, relative ones resolved against ``base``
    (the importer's package)."""
    if not node.level:
        return node.module or ""
    parts = base.split(".")
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def imports(path: Path) -> set[str]:
    """The schedwake modules ``path`` imports (``from pkg import mod`` counts as mod)."""
    me = module_name(path)
    base = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "schedwake")
        elif isinstance(node, ast.ImportFrom):
            target = from_target(node, base)
            if target.split(".")[0] != "schedwake":
                continue
            subs = [f"{target}.{a.name}" for a in node.names if exists(f"{target}.{a.name}")]
            out.update(subs)
            if len(subs) < len(node.names):  # names defined in the module itself
                out.add(target)
    out.discard(me)
    return {m for m in out if exists(m)}


@functools.cache  # one walk of the package for every test (read, never changed)
def graph() -> dict[str, set[str]]:
    """Python modules -> the Python modules they import (compiled ones are leaves)."""
    modules = {module_name(p): imports(p) for p in sorted(PACKAGE.rglob("*.py"))}
    return {m: {t for t in targets if t in modules} for m, targets in modules.items()}


def layer(name: str) -> int:
    if name == "schedwake":
        return LAYER["__init__"]
    return LAYER[name.split(".")[1]]


def test_every_module_has_a_layer():
    missing = sorted(m for m in graph() if m != "schedwake" and m.split(".")[1] not in LAYER)
    assert not missing, f"put these modules in a layer of LAYERS: {missing}"


def test_no_import_goes_up():
    upward = [
        f"{a} imports {b}"
        for a, targets in graph().items()
        for b in sorted(targets)
        if layer(b) > layer(a)
    ]
    assert not upward, "imports against the data flow:\n" + "\n".join(upward)


def test_no_import_cycle():
    g = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    assert not cycles, f"modules importing each other: {cycles}"


def test_the_walker_sees_lazy_and_relative_imports():
    """The checks above are only as good as the walker: it must see an import inside a
    function, and resolve ``from . import x`` and ``from ..x import y``."""
    g = graph()
    assert "schedwake.analysis" in g["schedwake.cli.analyze"]  # inside a function
    assert "schedwake.detect.evidence" in g["schedwake.detect"]  # from .evidence import
    assert "schedwake.compare.stats" in g["schedwake.compare.mmtests"]  # from . import stats
    assert "schedwake.jsonout" in g["schedwake.report.analyze"]  # from ..jsonout import


#: Methods that render: a class outside report/ (and the CLI) may define none of them.
RENDERING_METHODS = {
    "text", "markdown", "html", "render", "to_json", "to_markdown", "to_html",
    # (the wording of a verdict or a rule: report/'s too)
    "headline", "summary_line", "rule_line", "rule_name",
}  # fmt: skip
#: The exceptions, each with its reason.
RENDERING_ALLOWED = {
    # the topology file format (`schedwake topology -o`, read back by load): a file the
    # package reads, not a report of a result
    ("schedwake.topology", "Topology", "to_json"),
    # the map in one line, a fact of the topology: the JSON's topology facts carry it and
    # the caveat of an assumed map quotes it (no report lays it out)
    ("schedwake.topology", "Topology", "describe"),
}


def class_methods(
    source: str | ast.Module, module: str
) -> list[tuple[ast.ClassDef, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(class, method) of every method the classes of ``source`` (the text of ``module``,
    or its syntax tree) define, the allowed ones (:data:`RENDERING_ALLOWED`) left out."""
    tree = ast.parse(source) if isinstance(source, str) else source
    return [
        (node, item)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        for item in node.body
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
        and (module, node.name, item.name) not in RENDERING_ALLOWED
    ]


def rendering_methods(source: str | ast.Module, module: str) -> list[str]:
    """``Class.method (line N)`` of each rendering method the classes of ``source``
    (the text of ``module``, or its syntax tree) define, the allowed ones left out."""
    return [
        f"{module}.{cls.name}.{item.name} (line {item.lineno})"
        for cls, item in class_methods(source, module)
        if item.name in RENDERING_METHODS
    ]


def test_results_never_render_themselves():
    """A result object never renders itself (docs/architecture.md): every text,
    Markdown, HTML or JSON rendering of a result is a function of report/, so that no
    class outside report/ and the CLI has a method of :data:`RENDERING_METHODS`."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        if name.split(".")[1:2] not in (["report"], ["cli"]):
            found += rendering_methods(parsed(path), name)
    assert not found, "results rendering themselves (move them to report/):\n" + "\n".join(found)


#: A sentence in a returned string: three lower-case words in a row.
_SENTENCE = re.compile(r"\b[a-z]+ [a-z]+ [a-z]+\b")


def worded_methods(source: str | ast.Module, module: str) -> list[str]:
    """``Class.method (line N)`` of each method of ``source``'s classes (not an
    exception's, not a dunder) that returns a sentence built from its data: an f-string or
    a string sum whose literal parts hold three words in a row. What a method does, not
    what it is called: the wording of a result is report/'s."""
    found = []
    for cls, item in class_methods(source, module):
        if item.name.startswith("__") or any(
            isinstance(b, ast.Name) and b.id.endswith(("Error", "Exception")) for b in cls.bases
        ):
            continue
        for ret in ast.walk(item):
            if isinstance(ret, ast.Return) and isinstance(ret.value, (ast.JoinedStr, ast.BinOp)):
                words = " ".join(
                    n.value
                    for n in ast.walk(ret.value)
                    if isinstance(n, ast.Constant) and isinstance(n.value, str)
                )
                if _SENTENCE.search(words):
                    found.append(f"{module}.{cls.name}.{item.name} (line {item.lineno})")
                    break
    return found


def test_results_never_word_themselves():
    """No class outside report/ and the CLI returns a sentence made of its data (a
    verdict's headline, a rule in words): report/ words results (docs/architecture.md)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        if name.split(".")[1:2] not in (["report"], ["cli"]):
            found += worded_methods(parsed(path), name)
    assert not found, "results wording themselves (move it to report/):\n" + "\n".join(found)


def test_the_wording_check_sees_sentences_and_nothing_else():
    """The wording check flags a method returning an f-string sentence or a string sum,
    not a key, a path, an exception's message or a dunder."""
    src = (
        "class Result:\n"
        "    def headline_words(self):\n        return f'PASS: {self.n} rules hold here'\n"
        "    def line(self):\n        return 'the newest build ' + self.name\n"
        "    def key(self):\n        return f'{self.a}/{self.b}'\n"
        "    def __repr__(self):\n        return f'Result of the {self.n} runs'\n"
        "class BadTrace(ValueError):\n"
        "    def why(self):\n        return f'cannot read the file {self.path}'\n"
    )
    assert worded_methods(src, "schedwake.x") == [
        "schedwake.x.Result.headline_words (line 2)",
        "schedwake.x.Result.line (line 4)",
    ]


def test_the_rendering_check_sees_methods_and_nothing_else():
    """The check above is only as good as its walk: it reports a result's ``text`` and
    ``to_json`` methods (a nested class's too), not a function of that name outside a
    class, not another method, and not the allowed Topology.to_json."""
    src = (
        "def text(x):\n    return ''\n\n"
        "class Result:\n    def text(self):\n        return ''\n\n"
        "    def summary(self):\n        return {}\n\n"
        "    class Part:\n        def to_json(self):\n            return ''\n"
    )
    assert rendering_methods(src, "schedwake.x") == [
        "schedwake.x.Result.text (line 5)",
        "schedwake.x.Part.to_json (line 12)",
    ]
    topo = "class Topology:\n    def to_json(self):\n        return ''\n"
    assert rendering_methods(topo, "schedwake.topology") == []
    assert rendering_methods(topo, "schedwake.compare") == [
        "schedwake.compare.Topology.to_json (line 2)"
    ]


def is_private(name: str) -> bool:
    """``_name`` but not ``__name__``."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(source: str | ast.Module, module: str, package: bool = False) -> list[str]:
    """``module (line N): what`` of each private name ``module`` (the text of its file,
    or its syntax tree; ``package``: the file is a package's ``__init__``) takes from
    another schedwake module: ``from x import _name``, ``x._name`` of a module it
    imported. A private module (``from . import _util``, a compiled ``_tdread``) may be
    imported by the modules of its own package only; a module's own names are its own."""
    tree = ast.parse(source) if isinstance(source, str) else source
    base = module if package else module.rsplit(".", 1)[0]
    found = []
    modules: dict[str, str] = {}  # local name -> the schedwake module it is bound to

    def module_use(target: str, line: int) -> None:
        home = target.rsplit(".", 1)[0]
        mine = module == home or module.startswith(home + ".")
        if is_private(target.rsplit(".", 1)[1]) and not mine:
            found.append(f"{module} (line {line}): module {target}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "schedwake":
                    # ``import a.b as c`` binds c to a.b; ``import a.b`` binds a
                    modules[a.asname or "schedwake"] = a.name if a.asname else "schedwake"
                    for i in range(2, a.name.count(".") + 2):
                        module_use(".".join(a.name.split(".")[:i]), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            target = from_target(node, base)
            if target.split(".")[0] != "schedwake":
                continue
            for i in range(2, target.count(".") + 2):
                module_use(".".join(target.split(".")[:i]), node.lineno)
            for a in node.names:
                full = f"{target}.{a.name}"
                if exists(full):
                    modules[a.asname or a.name] = full
                    module_use(full, node.lineno)
                elif is_private(a.name) and target != module:
                    found.append(f"{module} (line {node.lineno}): from {target} import {a.name}")
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and is_private(node.attr)):
            continue
        chain, v = [], node.value
        while isinstance(v, ast.Attribute):
            chain.append(v.attr)
            v = v.value
        if isinstance(v, ast.Name) and v.id in modules:
            target = ".".join([modules[v.id], *reversed(chain)])
            if target != module and not exists(f"{target}.{node.attr}"):
                found.append(f"{module} (line {node.lineno}): {target}.{node.attr}")
            elif exists(f"{target}.{node.attr}"):
                module_use(f"{target}.{node.attr}", node.lineno)
    return found


def test_no_private_name_crosses_a_module():
    """A name with a leading underscore is its module's own: no schedwake module imports
    one from another module (a sibling of its package too) or reads it as an attribute
    of a module it imported. A name another module needs is public (with a docstring),
    or lives where it is used."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += private_imports(parsed(path), module_name(path), path.name == "__init__.py")
    assert not found, "private names used across modules (make them public):\n" + "\n".join(found)


def test_the_private_name_check_sees_every_form():
    """The check above is only as good as its walk: it reports ``from .x import _y``
    (relative or absolute, inside a function too), ``mod._y`` of an imported module
    (``from . import plots``, ``import schedwake.report.plots as p``) and a private module
    imported from outside its package; not a public name, a dunder, a private module of
    the importer's own package, or the module's own private names."""
    src = (
        "import schedwake.report.plots as p\n"
        "from . import plots\n"
        "from .plots import _hidden, WAKER_STYLE, __all__\n"
        "from ..model import _util\n"
        "def f():\n"
        "    from schedwake.report.analyze import _inner\n"
        "    return plots._x, p._y, plots.row_of, _util.i64\n"
        "def g():\n"
        "    from schedwake.report.timeline import _mine\n"
        "    return _mine\n"
    )
    assert private_imports(src, "schedwake.report.timeline") == [
        "schedwake.report.timeline (line 3): from schedwake.report.plots import _hidden",
        "schedwake.report.timeline (line 4): module schedwake.model._util",
        "schedwake.report.timeline (line 6): from schedwake.report.analyze import _inner",
        "schedwake.report.timeline (line 7): schedwake.report.plots._x",
        "schedwake.report.timeline (line 7): schedwake.report.plots._y",
    ]
    own = "from ._util import i64, take\nfrom . import _util\nfrom schedwake.model import _util\n"
    assert private_imports(own, "schedwake.model.events") == []
    assert private_imports("from . import _util\n", "schedwake.model", package=True) == []
