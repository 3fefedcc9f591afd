"""What the fuzz harnesses and the replay runner share.

* :func:`use_native_build`: import schedwake with the compiled modules of a sanitizer
  build (``build/asan`` or ``build/asan-fuzz``, made by ``fuzz/build_asan.sh``) in
  place of the normal ones.  Each ``*.so`` of ``<build>/schedwake/ingest/`` is loaded
  under its package name before schedwake's readers import it, so
  ``from . import _textscan`` in text.py gets the sanitizer build; anything not in
  the build dir stays the normal module.
* :class:`Loader`: the one call every harness makes: the bytes as a file in a
  private temporary directory, then ``schedwake.load(path)``.  Only
  :class:`schedwake.TraceError` is an acceptable failure; anything else propagates,
  but for the open findings of tests/data/fuzz_regressions/known.json when
  $SCHEDWAKE_FUZZ_KNOWN names that file (fuzz/run.py sets it unless --strict), so
  that a campaign goes on past a bug that is already pinned and reported.
* :func:`replay_one`: what the replay test and fuzz/replay.py do with one file.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# fuzz/run.py preloads atheris's custom_mutator module into a harness (libFuzzer calls a
# custom mutator only so): it loads only into Python, so the harness's own children
# (the sanitizer's symbolizer) must not inherit it
if "custom_mutator" in os.environ.get("LD_PRELOAD", ""):
    os.environ["LD_PRELOAD"] = " ".join(
        lib for lib in os.environ["LD_PRELOAD"].split() if "custom_mutator" not in lib
    )
NATIVE_ENV = "SCHEDWAKE_NATIVE_BUILD"
KNOWN_ENV = "SCHEDWAKE_FUZZ_KNOWN"
TRACEDAT_MAGIC = b"\x17\x08\x44tracing"
REGRESSIONS = ROOT / "tests" / "data" / "fuzz_regressions"
KNOWN_FILE = REGRESSIONS / "known.json"
CORPUS = ROOT / "fuzz" / "corpus"
#: What ``load()`` runs of the schedwake package (its calls, traced over a replay of the
#: corpora, the regressions and the hostile files: the readers, the compression magic,
#: the schema, the errors, the Trace class; the kallsyms choice of perf.data): the
#: modules a harness instruments, with the package's ``__init__`` and this file. The rest
#: of the package (the model, the detectors, the reports) is never run by ``load()``:
#: instrumenting its bytecode took most of a harness's start-up and guided nothing.
#: tests/test_fuzz.py checks the list.
LOAD_REACHES = (
    "schedwake.errors",
    "schedwake.compressed",
    "schedwake.schema",
    "schedwake.trace",
    "schedwake.ingest",
    "schedwake.symbols",
    "schedwake.topology",  # a perf.data header's CPU map is checked when the file is read
    "schedwake.sidevalues",  # (topology's: how a bad cpulist is shown)
)


def reached_by_load(module: str) -> bool:
    """Whether ``module`` is one of LOAD_REACHES (or in one of them), or the package."""
    return module == "schedwake" or any(
        module == m or module.startswith(m + ".") for m in LOAD_REACHES
    )


def not_reached_by_load() -> list[str]:
    """The modules of the schedwake package outside LOAD_REACHES, from its files (nothing
    imported): the ``exclude`` of a harness's ``atheris.instrument_imports``, whose
    ``include`` takes whole top-level packages only."""
    out = []
    for f in sorted((ROOT / "schedwake").rglob("*.py")):
        parts = f.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if not reached_by_load(name):
            out.append(name)
    return out


def signature(exc: BaseException) -> str:
    """``Type@path:function`` of the innermost schedwake frame an exception came from
    (the frame that raised it if none): what known.json pins a finding by."""
    inner = ours = None
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        parts = Path(frame.f_code.co_filename).parts
        inner = f"{parts[-1]}:{frame.f_code.co_name}"
        if "schedwake" in parts:
            rel = parts[len(parts) - 1 - parts[::-1].index("schedwake") :]
            ours = f"{'/'.join(rel)}:{frame.f_code.co_name}"
    where = ours or inner or "?"
    return f"{type(exc).__name__}@{where}"


def known_findings(path: str | os.PathLike | None = KNOWN_FILE) -> dict:
    """known.json: {regression file name: {"signature", "status": "open"|"fixed",
    "harness", "note"}}."""
    if not path or not Path(path).exists():
        return {}
    return json.loads(Path(path).read_text())


def regression_files() -> list[Path]:
    return sorted(
        p
        for p in REGRESSIONS.glob("*")
        if p.is_file() and p.name not in ("known.json", "README.md")
    )


#: Corpora of harnesses that do not load traces (the side files': bench.json, fio JSON,
#: dbench text, topology.json, gate TOML): not replayed through ``load()``.
NOT_TRACES = ("fuzz_side_files",)


def corpus_files() -> list[Path]:
    return sorted(p for p in CORPUS.glob("*/*") if p.is_file() and p.parent.name not in NOT_TRACES)


#: The hostile corpora of the tests (damaged on purpose, each with its expected outcome
#: in its manifest.json): replayed too, so the sanitizer builds see every class of damage.
HOSTILE = [
    ROOT / "tests" / "data" / d
    for d in ("hostile", "hostile_formats", "text_hostile", "perf_hostile")
]


def hostile_files() -> list[Path]:
    return sorted(
        p for d in HOSTILE for p in d.glob("*") if p.is_file() and p.name != "manifest.json"
    )


def use_native_build(build_dir: str | os.PathLike | None = None) -> list:
    """Load the extension modules of ``build_dir`` (default: $SCHEDWAKE_NATIVE_BUILD,
    nothing if unset) as ``schedwake.ingest.<name>``.  Must run before anything
    imports schedwake's readers.  Returns the modules loaded."""
    build_dir = build_dir or os.environ.get(NATIVE_ENV)
    if not build_dir:
        return []
    ingest_dir = Path(build_dir) / "schedwake" / "ingest"
    sos = sorted(ingest_dir.glob("*.so"))
    if not sos:
        raise SystemExit(f"{NATIVE_ENV}={build_dir}: no compiled modules in {ingest_dir}")
    import schedwake.ingest as ingest  # the package only: it imports no extension

    loaded = []
    for so in sos:
        full = f"schedwake.ingest.{so.name.split('.')[0]}"
        if full in sys.modules:
            raise SystemExit(f"{full} was imported before the sanitizer build could replace it")
        spec = importlib.util.spec_from_file_location(full, so)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules[full] = mod
        setattr(ingest, full.rsplit(".", 1)[1], mod)
        loaded.append(mod)
    return loaded


def load_path(path: str | os.PathLike):
    """schedwake.load(path): the Trace, or None for a TraceError that keeps its
    contract (one line, naming the file); anything else propagates."""
    import schedwake

    try:
        return schedwake.load(path)
    except schedwake.TraceError as exc:
        msg = str(exc)
        if "\n" in msg or not msg.startswith(str(path)):
            raise AssertionError(f"TraceError breaks its contract: {msg!r}") from exc
        return None


def import_readers(*names: str) -> None:
    """Import the reader modules that exist (they come and go as the readers change)."""
    for name in names:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise


class Loader:
    """Writes each input to the same file of a private temporary directory and loads it."""

    def __init__(self, suffix: str):
        self.dir = tempfile.mkdtemp(prefix="schedwake-fuzz-")
        self.path = os.path.join(self.dir, "input" + suffix)
        known = known_findings(os.environ.get(KNOWN_ENV))
        self.tolerated = {k["signature"] for k in known.values() if k.get("status") == "open"}

    def load(self, data: bytes):
        with open(self.path, "wb") as f:
            f.write(data)
        try:
            return load_path(self.path)
        except Exception as exc:
            if self.tolerated and signature(exc) in self.tolerated:
                return None
            raise


def replay_one(path: Path, known: dict) -> tuple[bool, str]:
    """Load one corpus or regression file: (as expected?, what happened).  Expected:
    a Trace or a TraceError, or for an open finding of known.json its very failure
    (a fixed one must then be marked "fixed": the test says so)."""
    entry = known.get(path.name) if path.parent == REGRESSIONS else None
    try:
        got = "loaded" if load_path(path) is not None else "TraceError"
    except Exception as exc:  # noqa: BLE001 - any other exception is the finding
        got = signature(exc)
        if entry and entry.get("status") == "open" and got == entry["signature"]:
            return True, f"open finding reproduces: {got}"
        return False, f"{got}: {exc}"[:500]
    if entry and entry.get("status") == "open":
        return False, (
            f"{got}, but known.json says the open finding {entry['signature']} "
            'reproduces here: fixed? then set its status to "fixed"'
        )
    return True, got
