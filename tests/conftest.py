"""Shared fixtures: paths of the real sample traces, a runner for the CLI, and what one
test run computes once for all its workers."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import gzip
import hashlib
import os
import pickle
import shutil
import subprocess as _subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click.formatting
import pyarrow as pa
import pytest
from click.testing import CliRunner

from schedwake.symbols.kernel import IGNORE_RUNNING_KERNEL

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_traces"

#: The whole suite runs as on a machine whose kernel recorded none of the samples:
#: schedwake never names a recording's kernel addresses from this machine's kallsyms or
#: vDSO, nor lets the ``perf script`` it runs do so (schedwake/symbols/kernel.py), in
#: this process, the xdist workers and every process they start (CLI runs, notebook
#: kernels). A test that needs a sample's kernel functions gives the recording kernel's
#: kallsyms (:data:`SAMPLE_KALLSYMS`); a test of a recording made on this machine opts
#: out (the ``running_kernel`` fixture). tests/test_kernel_symbols.py checks it.
os.environ[IGNORE_RUNNING_KERNEL] = "1"

#: The kernel that recorded sample_traces/perf/*.perf.data and sample_traces/profiles/:
#: its release, the build id perf wrote for it, and its kallsyms, gzip'd
#: (sample_traces/README.md, "kallsyms/")
SAMPLE_KERNEL = "6.18.44-fc-v782"
SAMPLE_BUILD_ID = "85c7e4e2ed76f4417e8aaad7c6b040d2bb897a26"
SAMPLE_KALLSYMS = SAMPLES / "kallsyms" / f"{SAMPLE_KERNEL}.gz"
#: Trace excerpts quoted in public kernel mailing-list threads (README.md there)
KERNEL_LIST = ROOT / "tests" / "data" / "kernel-list"

#: Real trace.dat recordings the binding is checked on (see sample_traces/README.md).
SAMPLE_DATS = sorted(SAMPLES.glob("*.dat"))


def sample(name: str) -> Path:
    path = SAMPLES / name
    assert path.exists(), f"sample trace {path} is missing"
    return path


#: Same-configuration iterations i1..i3 (sample_traces/README.md), by key: the sample
#: path of each run without its final digit and ".dat".
ITERATION_SETS = {
    "c1": "iterations/dbench-xfs-1c-i",  # host, dbench 1 client, 1 s
    "c4": "iterations/dbench-xfs-4c-i",  # host, dbench 4 clients, 1 s
    # the real before/after pair: 6.1, 8-CPU guest, dbench 2 clients, with the
    # select_idle_sibling() kthread-stacking clause on (the fix) and off (before it)
    "on": "kstack-6.1/k61-dbench-c2-kstack-on-i",
    "off": "kstack-6.1/k61-dbench-c2-kstack-off-i",
}


def iteration_names(key: str) -> list[str]:
    return [f"{ITERATION_SETS[key]}{i}" for i in (1, 2, 3)]


def iteration_paths(key: str) -> list[Path]:
    return [sample(f"{n}.dat") for n in iteration_names(key)]


def iteration_glob(key: str) -> str:
    return f"{SAMPLES / ITERATION_SETS[key]}*.dat"


def plain(col) -> pa.Array:
    """An Arrow column as one plain array (chunks combined, dictionaries decoded)."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    return col


def shared_trace(path, events=None):
    """``schedwake.load(path, events=events)``, loaded once per test process (per xdist
    worker) and shared by every test that asks for the same file and events: its model
    is built once too. For tests that only read the trace: one that focuses it, sets
    its topology, slices it in place or changes its meta or tables loads its own."""
    return _shared_trace(str(path), None if events is None else tuple(events))


def shared_model_trace(path):
    """:func:`shared_trace` of the model's events: a trace as ``compare`` and ``gate`` read
    a path (their default reader), for the tests that hand them traces to read only."""
    from schedwake.model import MODEL_EVENTS

    return shared_trace(path, MODEL_EVENTS)


@functools.cache
def _shared_trace(path: str, events: tuple[str, ...] | None):
    import schedwake

    return schedwake.load(path, events=None if events is None else list(events))


#: The directory that every process of one test run shares (the xdist workers inherit it
#: from the controller's environment): what :func:`computed_once` keeps.
_RUN_DIR_VAR = "SCHEDWAKE_TEST_RUN_DIR"
T = TypeVar("T")


def pytest_configure(config):
    if not hasattr(config, "workerinput") and _RUN_DIR_VAR not in os.environ:
        os.environ[_RUN_DIR_VAR] = tempfile.mkdtemp(prefix="schedwake-test-run-")
        config._schedwake_run_dir = os.environ[_RUN_DIR_VAR]


def pytest_unconfigure(config):
    run_dir = getattr(config, "_schedwake_run_dir", None)
    if run_dir:
        shutil.rmtree(run_dir, ignore_errors=True)
        os.environ.pop(_RUN_DIR_VAR, None)


def computed_once(key: str, compute: Callable[[], T]) -> T:
    """``compute()``, computed once per test run and shared by every xdist worker.

    For what is slow, deterministic and needed on both workers: the output of an
    independent tool (``trace-cmd report``, ``perf sched``) parsed into rows, or a
    reference implementation's result on a whole sample. The first process to ask
    computes it under a lock and pickles it into the run's directory; the others wait
    and read it. ``key`` names the computation completely (tool, flags, file); the
    value must pickle, and is shared: read it, never change it.
    """
    cached = _MEMO.get(key)
    if cached is not None:
        return cached[0]
    run_dir = Path(os.environ[_RUN_DIR_VAR])
    name = hashlib.sha256(key.encode()).hexdigest()[:32]
    path = run_dir / f"{name}.pickle"
    with open(run_dir / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            value = pickle.loads(path.read_bytes())
        else:
            value = compute()
            part = path.with_suffix(".part")
            part.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
            part.rename(path)
    _MEMO[key] = (value,)
    return value


_MEMO: dict[str, tuple] = {}  # this process's copies, by key


def trace_cmd_output(path, *flags) -> bytes:
    """What ``trace-cmd report FLAGS -i PATH`` prints (checked exit code). trace-cmd
    writes to a file: a pipe is read 32 kB at a time. Skips the test when trace-cmd is
    not installed."""
    exe = shutil.which("trace-cmd")
    if exe is None:
        pytest.skip("trace-cmd not installed")
    with tempfile.TemporaryFile() as out:
        cmd = [exe, "report", *flags, "-i", str(path)]
        _subprocess.run(cmd, stdout=out, stderr=_subprocess.PIPE, check=True)
        out.seek(0)
        return out.read()


def trace_cmd_report(path, *flags) -> str:
    """:func:`trace_cmd_output` decoded as ``subprocess.run(..., text=True)`` decodes it,
    made once per test run (:func:`computed_once`) for every test that reads the same
    report."""
    return computed_once(
        f"trace-cmd report {' '.join(flags)} -i {path}: text",
        lambda: _text(trace_cmd_output(path, *flags)),
    )


def run_dir() -> Path:
    """The directory of this test run, shared by its workers (where a :func:`computed_once`
    computation that writes files puts them)."""
    return Path(os.environ[_RUN_DIR_VAR])


def perf_kallsyms() -> Path:
    """:data:`SAMPLE_KALLSYMS` decompressed, for ``perf script --kallsyms`` and ``perf
    report --kallsyms`` (perf reads plain text only), made once per test run."""

    def unpack() -> Path:
        out = run_dir() / SAMPLE_KALLSYMS.with_suffix("").name
        out.write_bytes(gzip.decompress(SAMPLE_KALLSYMS.read_bytes()))
        return out

    return computed_once(f"gunzip {SAMPLE_KALLSYMS}: its path", unpack)


def sample_profiles() -> dict:
    """``schedwake.profile`` of every run of sample_traces/profiles/ by side (base, aa,
    seccomp), their kernel frames named by :data:`SAMPLE_KALLSYMS`; made once per test
    run and shared by the xdist workers: read them, never change them."""

    def make() -> dict:
        import schedwake

        out = {}
        for side in ("base", "aa", "seccomp"):
            paths = sorted((SAMPLES / "profiles" / side).glob("run*.perf.data"))
            assert len(paths) >= 3, f"{side}: the sample needs 3 runs"
            out[side] = [
                schedwake.profile(schedwake.load(p), kallsyms=SAMPLE_KALLSYMS) for p in paths
            ]
        return out

    return computed_once(
        "schedwake.profile(load(p), kallsyms=SAMPLE_KALLSYMS) of sample_traces/profiles/"
        "{base,aa,seccomp}/run*.perf.data",
        make,
    )


@pytest.fixture
def running_kernel(monkeypatch):
    """For a test of recordings made on this machine (whose kernel is the recorded one):
    schedwake may name their kernel addresses from this machine's kallsyms, as outside
    the suite (``SCHEDWAKE_IGNORE_RUNNING_KERNEL`` unset during the test)."""
    monkeypatch.delenv(IGNORE_RUNNING_KERNEL)


@pytest.fixture
def samples_kernel_here(monkeypatch, tmp_path) -> Path:
    """This machine made to look as if it ran the samples' kernel: its release, build id
    and /proc/kallsyms (a copy of :data:`SAMPLE_KALLSYMS`, returned) are theirs. The
    suite's setting still hides it (``monkeypatch.delenv(IGNORE_RUNNING_KERNEL)``: as
    outside the suite)."""
    from schedwake.symbols import kernel

    proc = tmp_path / "kallsyms"
    proc.write_bytes(gzip.decompress(SAMPLE_KALLSYMS.read_bytes()))
    monkeypatch.setattr(kernel.platform, "release", lambda: SAMPLE_KERNEL)
    monkeypatch.setattr(kernel, "running_build_id", lambda notes=None: SAMPLE_BUILD_ID)
    monkeypatch.setattr(kernel, "PROC_KALLSYMS", proc)
    return proc


#: The system's Chromium (the Debian package ``chromium``, installed by scripts/bootstrap.sh)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """The test process's headless Chromium: ``run(fn, *args)`` returns ``fn(browser,
    *args)``, called in the browser's own thread with playwright's ``Browser``."""

    def __init__(self, pool, browser):
        self._pool, self._browser = pool, browser

    def run(self, fn, *args):
        return self._pool.submit(fn, self._browser, *args).result()


def cut_network(page) -> list[str]:
    """Cut a playwright page off the network: every request but for a ``file:`` URL is
    refused. Returns the list the refused URLs are added to (a self-contained report
    asks for none)."""
    outside: list[str] = []

    def route(r):
        if r.request.url.startswith("file:"):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    return outside


@pytest.fixture(scope="session")
def chromium():
    """One headless Chromium per test process (per xdist worker), driven by playwright,
    shared by every browser test (each opens its pages in a context of its own): a
    browser started once, not twice per test. It lives in a thread of its own because
    playwright's sync API marks its event loop as running in the thread that started it,
    also between its calls, which would break the event loops of the tests that follow
    in this process (nbclient's, Dask's)."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (Debian package 'chromium', scripts/bootstrap.sh)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # (the test extra)
        pytest.skip("playwright is not installed (the test extra)")
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(1, thread_name_prefix="chromium")

    def start():
        pw = sync_playwright().start()
        return pw, pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])

    pw, browser = pool.submit(start).result()
    try:
        yield Browser(pool, browser)
    finally:
        pool.submit(lambda: (browser.close(), pw.stop())).result()
        pool.shutdown()


@pytest.fixture(scope="session")
def dbench1() -> Path:
    return sample("dbench-xfs-1client.dat")


@pytest.fixture(scope="session")
def dbench2() -> Path:
    return sample("dbench-xfs-2clients.dat")


def run_cli(
    *args, check: bool = False, cwd=None, env=None, subprocess: bool = False, input=None
) -> _subprocess.CompletedProcess:
    """Run ``schedwake ARGS`` and return its exit code, stdout and stderr.

    In this process by default, through click's CliRunner on the very ``cli.main`` that
    the console script's ``main()`` calls (so the one-line errors and exit codes are the
    script's), with what the subprocess had: ``COLUMNS=120`` (click's help is not forced
    to 80 columns), a stdin that is not a terminal (empty, or the bytes ``input``: what
    a pipe would bring, in process only), stdout and stderr kept apart
    and captured at the file descriptors (what C code writes there is kept), the
    warnings Python shows by default written to stderr, ``cwd`` for the working
    directory and ``env`` over the environment. An exception that escapes ``main()`` (a
    traceback under the script) is raised here and fails the test.

    ``subprocess=True`` runs the installed console script in a real process instead
    (:func:`run_cli_process`), for what only a process shows: the entry point, signals,
    hangs, stdin pipes, terminals, the environment at import. A call from another thread
    than the main one runs in a subprocess too: the in-process run swaps what the whole
    process shares (``sys.stdout``, file descriptors 1 and 2, the working directory,
    ``os.environ``), one run at a time.
    """
    if subprocess or threading.current_thread() is not threading.main_thread():
        assert input is None, "input= is for an in-process run (a real pipe: subprocess.run)"
        return run_cli_process(*args, check=check, cwd=cwd, env=env)
    from schedwake.cli import cli

    argv = [str(a) for a in args]
    runner = _ScriptRunner(
        env={"COLUMNS": "120", **(env or {})}, catch_exceptions=False, capture="fd"
    )
    with contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext():
        with warnings.catch_warnings():
            _python_default_warnings()
            result = runner.invoke(cli, argv, input=input, prog_name="schedwake")
    proc = _subprocess.CompletedProcess(
        ["schedwake", *argv],
        result.exit_code,
        _text(result.stdout_bytes),
        _text(result.stderr_bytes),
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"schedwake {' '.join(argv)} failed ({proc.returncode}): {proc.stderr}"
        )
    return proc


def _text(data: bytes) -> str:
    """Output bytes as ``subprocess.run(text=True)`` gives them: strict UTF-8, universal
    newlines."""
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def _python_default_warnings() -> None:
    """The warning filters of a fresh interpreter (what the console script shows), each
    warning printed to the current ``sys.stderr`` as the interpreter prints it."""
    warnings.resetwarnings()
    warnings.simplefilter("default")
    for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
        warnings.filterwarnings("ignore", category=category)

    def show(message, category, filename, lineno, file=None, line=None):
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    warnings.showwarning = show


class _ScriptRunner(CliRunner):
    """CliRunner without its forced 80-column help: the width comes from COLUMNS, as
    under the console script."""

    @contextlib.contextmanager
    def isolation(self, *args, **kwargs):
        with super().isolation(*args, **kwargs) as streams:
            click.formatting.FORCED_WIDTH = None  # isolation() restores it
            yield streams


def run_cli_process(*args, check: bool = False, cwd=None, env=None) -> _subprocess.CompletedProcess:
    """Run ``schedwake ARGS`` as a real subprocess (the installed console script)."""
    exe = Path(sys.executable).with_name("schedwake")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "schedwake.cli"]
    env = dict(os.environ, COLUMNS="120", **(env or {}))
    # a hang (the reader must refuse, never stall) fails the test instead of the CI job
    proc = _subprocess.run(
        cmd + [str(a) for a in args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        stdin=_subprocess.DEVNULL,
        timeout=600,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"schedwake {' '.join(map(str, args))} failed ({proc.returncode}): {proc.stderr}"
        )
    return proc


def mmtests_part(text: str) -> str:
    """The mmtests table (and what follows it) of ``schedwake compare`` text: what comes
    after the summary block that opens the output."""
    return text.split("\n\n", 1)[1] if text.startswith("summary:") else text


def pytest_collection_modifyitems(config, items):
    # the slow tests first (stable otherwise): xdist hands tests out in this order, so the
    # workers end the run together on short tests instead of one waiting on a long one
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
