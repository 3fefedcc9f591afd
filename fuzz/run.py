#!/usr/bin/env python3
"""Run the fuzz harnesses, one process at a time (``make fuzz`` calls this).

    .venv/bin/python fuzz/run.py                          # every harness, 600 s each
    .venv/bin/python fuzz/run.py fuzz_load_text --seconds 60
    .venv/bin/python fuzz/run.py --seconds 600 --merge    # then merge new coverage into
                                                          # fuzz/corpus/<harness>/

Each harness runs with its committed corpus fuzz/corpus/<harness>/ (read, never
written during the run: new inputs go to build/fuzz/work/<harness>/), its dictionary,
and -artifact_prefix=fuzz/crashes/<harness>-, so a finding is a file
fuzz/crashes/<harness>-{crash,timeout,oom,leak}-<sha1>.  --merge then adds to the
committed corpus only the new inputs that reach new coverage (libFuzzer -merge=1).

The atheris harnesses run with the ASan+UBSan+sancov build of the compiled readers
(build/asan-fuzz, fuzz/build_asan.sh --atheris) and atheris's asan_with_fuzzer.so
preloaded, so the C code is both checked and coverage-guided.  tdcore_fuzz is built
by the Makefile rule build/fuzz/tdcore_fuzz (only when the decoder's sources,
schedwake/ingest/_td_*.c, exist).

Politeness on a shared machine: a lock (/tmp/schedwake-fuzz.lock) keeps to one fuzzer
process at a time across checkouts and test workers, and fuzzers run under nice 10.
Exit status: 0 if no harness found anything, 1 if one did, 2 on a usage or build error,
3 if --lock-wait ran out.  --keep-going starts a harness again after a finding, until
its time is spent (make fuzz does), so one early finding does not end a campaign.
One JSON line per harness run is appended to build/fuzz/runs.jsonl.
"""

from __future__ import annotations

import argparse
import fcntl
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import _common  # noqa: E402

BUILD = ROOT / "build" / "fuzz"
CRASHES = HERE / "crashes"
LOCK = Path("/tmp/schedwake-fuzz.lock")
TDCORE_SRC = ROOT / "schedwake" / "ingest" / "_td_merge.c"  # one of the decoder's sources
TDCORE_BIN = BUILD / "tdcore_fuzz"
TDCORE_MISSING = "the C trace.dat decoder is not built yet"

HARNESSES = {
    "fuzz_load_tracedat": {
        "kind": "atheris",
        "custom_mutator": True,
        "dict": "tracedat.dict",
        "max_len": 65536,
        "timeout": 30,
        "rss_limit_mb": 3072,
        "budget": 1500 << 10,
    },
    "fuzz_load_text": {
        "kind": "atheris",
        "custom_mutator": True,
        "dict": "text.dict",
        "max_len": 16384,
        "timeout": 20,
        "rss_limit_mb": 3072,
        "budget": 800 << 10,
    },
    "fuzz_load_perfdata": {
        "kind": "atheris",
        "dict": "perfdata.dict",
        "max_len": 65536,
        "timeout": 30,
        "rss_limit_mb": 3072,
        "budget": 600 << 10,
    },
    "fuzz_load_perfetto": {
        "kind": "atheris",
        "dict": "perfetto.dict",
        "max_len": 8192,
        "timeout": 30,
        "rss_limit_mb": 3072,
        "budget": 300 << 10,
    },
    # pure Python (no compiled reader reached): no sanitizer build, no preload
    "fuzz_side_files": {
        "kind": "atheris-python",
        "dict": "side_files.dict",
        "max_len": 8192,
        "timeout": 20,
        "rss_limit_mb": 2048,
        "budget": 200 << 10,
    },
    # the trace.dat and perf.data harnesses' corpora are its formats: read them too
    "tdcore_fuzz": {
        "kind": "libfuzzer",
        "dict": "tracedat.dict",
        "max_len": 65536,
        "timeout": 10,
        "rss_limit_mb": 2048,
        "budget": 1500 << 10,
        "also_read": ["fuzz_load_tracedat", "fuzz_load_perfdata"],
    },
}
# budget: bytes the committed corpus may hold (all corpora + regressions < 5 MB); a
# merge that would pass it keeps the smallest of its new inputs
FINDING_KINDS = ("crash", "timeout", "oom", "leak")


class LockBusy(Exception):
    pass


def lock(wait: float | None = None):
    """Take the machine-wide fuzzer lock, waiting at most `wait` seconds (None: as long
    as it takes); the returned file holds it until closed."""
    f = open(LOCK, "a+")
    deadline = None if wait is None else time.monotonic() + wait
    said = False
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return f
        except BlockingIOError:
            if deadline is not None and time.monotonic() >= deadline:
                f.close()
                raise LockBusy(f"another fuzzer held {LOCK} for {wait:.0f} s") from None
            if not said:
                print(f"run: another fuzzer holds {LOCK}: waiting", file=sys.stderr, flush=True)
                said = True
            time.sleep(1)


_child: subprocess.Popen | None = None


def _stop(signum, frame):
    """SIGTERM/SIGINT/SIGHUP: stop the fuzzer too (it is in its own process group)."""
    if _child and _child.poll() is None:
        try:
            os.killpg(_child.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    raise SystemExit(128 + signum)


def _polite() -> None:
    """In the fuzzer's process before it starts: nice 10 (not the nice program, which
    could not load the Python module a custom-mutator harness preloads)."""
    os.nice(10)


def execute(argv: list[str], env: dict) -> tuple[int, str]:
    """Run a fuzzer to its end, niced: (status, stdout + stderr)."""
    global _child
    with subprocess.Popen(
        argv,
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
        preexec_fn=_polite,
    ) as proc:
        _child = proc
        out, _ = proc.communicate()
    _child = None
    return proc.returncode, out


def tdcore_available() -> bool:
    return TDCORE_SRC.exists()


def build(name: str) -> None:
    """Build what a harness needs (incremental)."""
    if HARNESSES[name]["kind"] == "atheris-python":
        return  # (nothing compiled to build)
    if HARNESSES[name]["kind"] == "atheris":
        subprocess.run(
            [str(HERE / "build_asan.sh"), "--atheris"],
            check=True,
            cwd=ROOT,
            env={**os.environ, "PYTHON": sys.executable},
        )
    else:
        # one make at a time (the test workers that need the binary wait for it)
        BUILD.mkdir(parents=True, exist_ok=True)
        make = ["make", "-s", "--no-print-directory", str(TDCORE_BIN.relative_to(ROOT))]
        with open(BUILD / ".tdcore.lock", "a+") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            if subprocess.run([*make, "-q"], cwd=ROOT).returncode == 0:
                return  # newer than the decoder's sources: nothing to make
            objects = _atheris_decoder_objects()
            if objects is None:
                subprocess.run(make, check=True, cwd=ROOT)
                return
            # linked from the atheris build's objects, which no build may replace meanwhile
            with open(ASAN_FUZZ / ".lock", "a+") as built:
                fcntl.flock(built, fcntl.LOCK_EX)
                subprocess.run([*make, "TDCORE_OBJ=" + " ".join(objects)], check=True, cwd=ROOT)
            # made of the sources' current bytes (the objects are keyed by them): newer
            # than the sources for the next `make -q`, also when only their mtimes moved
            os.utime(TDCORE_BIN)


ASAN_FUZZ = ROOT / "build" / "asan-fuzz"


def _atheris_decoder_objects() -> list[str] | None:
    """The trace.dat decoder's objects of the atheris build (made or brought up to date
    first): compiled with what the Makefile gives tdcore_fuzz (-O1, ASan + UBSan with the
    implicit conversions, clang) and the coverage of -fsanitize=fuzzer-no-link, so the
    libFuzzer binary links them instead of compiling the decoder a second time. None
    (compile it from its sources) without atheris, or when that build left the decoder
    out."""
    if importlib.util.find_spec("atheris") is None:
        return None
    build("fuzz_load_tracedat")
    failed = ASAN_FUZZ / "failed"
    if failed.exists() and "_tdread" in failed.read_text().split():
        return None
    sources = sorted(p.stem for p in TDCORE_SRC.parent.glob("_td_*.c"))
    objects = [ASAN_FUZZ / "obj" / "_tdread" / f"{s}.o" for s in sources]
    if not sources or not all(p.exists() for p in objects):
        return None
    return [str(p.relative_to(ROOT)) for p in objects]


def _custom_mutator_module() -> str:
    """The file of atheris's custom_mutator extension (found without importing it)."""
    spec = importlib.util.find_spec("atheris")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("run: atheris is not installed (pip install atheris)")
    found = sorted(Path(spec.submodule_search_locations[0]).glob("custom_mutator.*.so"))
    if not found:
        raise SystemExit("run: atheris has no custom_mutator module")
    return str(found[0])


def command(name: str, merge: bool = False) -> tuple[list[str], dict]:
    """The command line (without libFuzzer flags and corpus dirs) and environment.

    A harness with a custom mutator (``custom_mutator=`` in atheris.Setup) gets
    atheris's custom_mutator module preloaded beside the sanitizer runtime: libFuzzer,
    preloaded itself, binds its LLVMFuzzerCustomMutator hook when it is loaded, before
    the harness could load the module, and would never call the mutator otherwise.
    That Python module loads only into Python: the harness is started by this Python
    (not by its #! line through env), and _common removes the module from LD_PRELOAD
    for the harness's own children (the symbolizer). A -merge run does not mutate and
    re-executes the harness by its #! line: it runs without it."""
    env = dict(os.environ)
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    if HARNESSES[name]["kind"] == "libfuzzer":
        # plain C: a leak is a finding too
        env["ASAN_OPTIONS"] = "detect_leaks=1:allocator_may_return_null=1"
        return [str(TDCORE_BIN)], env
    if HARNESSES[name]["kind"] == "atheris-python":
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
        return [sys.executable, str(HERE / f"{name}.py")], env
    # CPython never frees some of its memory: leak reports would be noise
    env["ASAN_OPTIONS"] = (
        "detect_leaks=0:allocator_may_return_null=1:detect_stack_use_after_return=0:handle_segv=1"
    )
    # libFuzzer's -merge runs the harness again as argv[0] (the script, by its
    # "#!/usr/bin/env python3"): that python3 must be this one
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    asan_build = ROOT / "build" / "asan-fuzz"
    env["LD_PRELOAD"] = (asan_build / "runtime").read_text().strip()
    env[_common.NATIVE_ENV] = str(asan_build)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    if HARNESSES[name].get("custom_mutator") and not merge:
        env["LD_PRELOAD"] += " " + _custom_mutator_module()
        return [sys.executable, str(HERE / f"{name}.py")], env
    return [str(HERE / f"{name}.py")], env


def stats(text: str) -> dict:
    out = {}
    for key, val in re.findall(r"^stat::(\w+):\s*(\d+)", text, re.M):
        out[key] = int(val)
    m = re.search(r"Done (\d+) runs in (\d+) second", text)
    if m:
        out.setdefault("number_of_executed_units", int(m.group(1)))
    if "number_of_executed_units" not in out:
        # a run that stopped at a finding: the last status line has the count
        m = re.findall(r"^#(\d+)\s", text, re.M)
        if m:
            out["number_of_executed_units"] = int(m[-1])
    inited = re.findall(r"^#(\d+)\s+INITED\s", text, re.M)
    if inited:
        out["inited_units"] = int(inited[-1])  # executions that read the corpus
    cov = re.findall(r"\scov: (\d+) ft: (\d+)", text)
    if cov:
        out["cov"], out["ft"] = map(int, cov[-1])
    return out


def what_happened(log: str) -> str:
    """One line saying what a run that stopped at a finding found."""
    for pat in (
        r"^SUMMARY: ((?:Address|UndefinedBehavior|Leak|Memory)Sanitizer: .*)$",
        r"^(tdcore_fuzz: contract broken: .*)$",
        r"^==\d+== ERROR: libFuzzer: (timeout.*|out-of-memory.*|fuzz target exited)$",
        r"^(.*runtime error: .*)$",
    ):
        m = re.findall(pat, log, re.M)
        if m:
            found = m[-1].strip()
            if found == "fuzz target exited":
                exc = re.findall(r"^(\w[\w.]*(?:Error|Exception)\b.*)$", log, re.M)
                where = re.findall(r'^\s+File "([^"]+)", line (\d+), in (\w+)$', log, re.M)
                if exc:
                    found = exc[-1][:200]
                    if where:
                        found += f" (at {Path(where[-1][0]).name}:{where[-1][1]} in {where[-1][2]})"
            return found
    m = re.findall(r"^==\d+== ERROR: libFuzzer: (.*)$", log, re.M)
    return m[-1] if m else "see the log"


def run_one(
    name: str,
    seconds: int,
    runs: int | None,
    strict: bool,
    merge: bool,
    log_tail: int,
    work_root: Path | None = None,
    keep_going: bool = False,
    seeds: int | None = None,
) -> dict:
    """Fuzz one harness for `seconds`.  With keep_going, a run that stops at a finding
    is started again (same work corpus) until the time is spent.  With seeds, the run
    starts from that many inputs of its corpora (spread over them by name) copied into
    the work dir instead of the whole corpora: the test suite's short runs, whose
    corpora fuzz/replay.py executes whole anyway."""
    spec = HARNESSES[name]
    corpus = HERE / "corpus" / name
    work = (work_root or BUILD / "work") / name
    work.mkdir(parents=True, exist_ok=True)
    CRASHES.mkdir(parents=True, exist_ok=True)
    BUILD.mkdir(parents=True, exist_ok=True)  # a fresh clone has no build/ yet
    build(name)
    cmd, env = command(name)
    if not strict:
        env[_common.KNOWN_ENV] = str(_common.KNOWN_FILE)
    flags = [
        f"-timeout={spec['timeout']}",
        f"-rss_limit_mb={spec['rss_limit_mb']}",
        f"-max_len={spec['max_len']}",
        f"-dict={HERE / spec['dict']}",
        f"-artifact_prefix={CRASHES}/{name}-",
        "-print_final_stats=1",
        "-reload=0",
    ]
    if runs:
        flags.append(f"-runs={runs}")
    dirs = [work, corpus] + [HERE / "corpus" / d for d in spec.get("also_read", [])]
    if seeds:
        pool = sorted(p for d in dirs[1:] for p in d.iterdir() if p.is_file())
        for p in pool[:: max(1, len(pool) // seeds)][:seeds]:
            shutil.copyfile(p, work / f"seed-{p.parent.name}-{p.name}")
        dirs = [work]
    t0 = time.monotonic()
    result = {
        "harness": name,
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "strict": strict,
        "runs": 0,
        "number_of_executed_units": 0,
        "findings": [],
    }
    logs = []
    while seconds > 0:
        left = int(seconds - (time.monotonic() - t0))
        if result["runs"] and (left < 10 or not keep_going):
            break
        before = set(CRASHES.iterdir())
        rc, log = execute(
            cmd + flags + [f"-max_total_time={left}"] + [str(d) for d in dirs],
            env,
        )
        logs.append(log)
        st = stats(log)
        result["runs"] += 1
        result["returncode"] = rc
        result["number_of_executed_units"] += st.pop("number_of_executed_units", 0)
        result.update(st)
        new = sorted(
            p
            for p in set(CRASHES.iterdir()) - before
            if any(p.name.startswith(f"{name}-{k}-") for k in FINDING_KINDS)
        )
        if rc != 0:
            what = what_happened(log)
            result["findings"].append(
                {"file": str(new[0].relative_to(ROOT)) if new else None, "what": what}
            )
            print(f"run: {name}: finding: {what}", file=sys.stderr, flush=True)
            print("\n".join(log.splitlines()[-log_tail:]), file=sys.stderr)
        if rc == 0 or runs:
            break
    result["seconds"] = round(time.monotonic() - t0, 1)
    (BUILD / f"{name}.log").write_text("\n".join(logs))
    result["average_exec_per_sec"] = round(
        result["number_of_executed_units"] / max(result["seconds"], 1), 1
    )
    if merge:
        merge_cmd, merge_env = command(name, merge=True)
        merge_env.update({k: v for k, v in env.items() if k == _common.KNOWN_ENV})
        result["merged"] = merge_into(name, merge_cmd, merge_env, corpus, work, spec)
    with open(BUILD / "runs.jsonl", "a") as f:
        f.write(json.dumps(result) + "\n")
    return result


def merge_into(name, cmd, env, corpus, work, spec) -> int:
    """Add to the committed corpus the inputs of `work` that reach new coverage."""
    before = set(corpus.iterdir())
    merge_ctl = BUILD / f"{name}.merge"
    merge_ctl.unlink(missing_ok=True)  # an old one would be resumed
    rc, log = execute(
        cmd
        + [
            "-merge=1",
            f"-max_len={spec['max_len']}",
            f"-timeout={spec['timeout']}",
            f"-rss_limit_mb={spec['rss_limit_mb']}",
            f"-merge_control_file={merge_ctl}",
            str(corpus),
            str(work),
        ],
        env,
    )
    (BUILD / f"{name}.merge.log").write_text(log)
    if rc != 0 or not re.search(r"MERGE-OUTER: \d+ new files", log):
        print(log[-3000:], file=sys.stderr)
        raise SystemExit(f"run: merging {name} failed (status {rc}); the new inputs stay in {work}")
    new = sorted(set(corpus.iterdir()) - before, key=lambda p: p.stat().st_size)
    total = sum(p.stat().st_size for p in corpus.iterdir())
    while new and total > spec["budget"]:
        drop = new.pop()
        total -= drop.stat().st_size
        drop.unlink()
    shutil.rmtree(work, ignore_errors=True)
    return len(new)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "harnesses", nargs="*", metavar="HARNESS", help=f"default: all of {', '.join(HARNESSES)}"
    )
    ap.add_argument("--seconds", type=int, default=int(os.environ.get("FUZZ_SECONDS", 600)))
    ap.add_argument("--runs", type=int, help="stop after this many executions as well")
    ap.add_argument(
        "--merge",
        action="store_true",
        help="merge new coverage into fuzz/corpus/<harness>/ afterwards "
        "(with --seconds 0: merge the work dir of earlier runs only)",
    )
    ap.add_argument(
        "--keep-going",
        action="store_true",
        help="after a finding, start the harness again until the time is spent",
    )
    ap.add_argument(
        "--strict",
        action="store_true",
        help="also stop at the open findings of tests/data/fuzz_regressions/known.json",
    )
    ap.add_argument(
        "--work",
        type=Path,
        metavar="DIR",
        help="where new inputs go (DIR/<harness>/; default build/fuzz/work)",
    )
    ap.add_argument(
        "--lock-wait",
        type=float,
        metavar="SECONDS",
        help="give up (status 3) if another fuzzer holds the lock this long",
    )
    ap.add_argument(
        "--seeds",
        type=int,
        metavar="N",
        help="start from N inputs of the corpora, not all of them (the test suite's short runs)",
    )
    ap.add_argument("--log-tail", type=int, default=60)
    args = ap.parse_args()
    names = args.harnesses or list(HARNESSES)
    for n in names:
        if n not in HARNESSES:
            ap.error(f"unknown harness {n!r} (known: {', '.join(HARNESSES)})")
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _stop)
    found = False
    try:
        held = lock(args.lock_wait)
    except LockBusy as exc:
        print(f"run: {exc}", file=sys.stderr)
        return 3
    with held:
        for name in names:
            if HARNESSES[name]["kind"] == "libfuzzer" and not tdcore_available():
                print(
                    f"run: {name}: skipped: {TDCORE_MISSING} "
                    f"({TDCORE_SRC.relative_to(ROOT)} is absent)",
                    file=sys.stderr,
                )
                continue
            r = run_one(
                name,
                args.seconds,
                args.runs,
                args.strict,
                args.merge,
                args.log_tail,
                args.work,
                args.keep_going,
                args.seeds,
            )
            found |= bool(r["findings"])
            print(json.dumps(r), flush=True)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
