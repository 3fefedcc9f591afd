#!/usr/bin/env python3
"""Replay the regression corpus and the seed corpora through the ASan + UBSan build.

    .venv/bin/python fuzz/replay.py                 # builds build/asan if needed, replays all
    .venv/bin/python fuzz/replay.py FILE...         # only these files
    .venv/bin/python fuzz/replay.py --build-dir build/asan-fuzz   # atheris's build instead
    .venv/bin/python fuzz/replay.py --normal        # the normal build (tests/test_fuzz.py)

The parent builds the sanitizer modules (fuzz/build_asan.sh) and starts a child
python with the sanitizer runtime in LD_PRELOAD (it must be the first library of the
process) and ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 (CPython's own allocations
are never freed at exit, so leak reports would be noise).  The child loads the
sanitizer modules in place of the normal ones (fuzz/_common.py), checks that the
readers really use them, and runs schedwake.load over every file: each must load or
raise TraceError (or, for an open finding of tests/data/fuzz_regressions/known.json,
fail exactly as pinned).  A sanitizer report aborts the child: the parent prints it
with the file it was reading.  Exit status 0 when every file behaved.  --normal runs
the same child on the normal build: a hostile file that kills the interpreter kills
only the child.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _common  # noqa: E402

ROOT = _common.ROOT
SAN_OPTIONS = {
    "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:allocator_may_return_null=1:"
    "handle_segv=1:detect_stack_use_after_return=0:symbolize=1",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
}


def child(build_dir: Path | None, files: list[Path]) -> int:
    if build_dir is None:
        print("replay: the normal build", flush=True)
    else:
        err = check_modules(build_dir)
        if err:
            return err
    known = _common.known_findings()
    bad = 0
    for f in files:
        print(f"replay: reading {f}", flush=True)
        ok, what = _common.replay_one(f, known)
        shown = f.relative_to(ROOT) if f.is_relative_to(ROOT) else f
        print(f"replay: {'ok  ' if ok else 'FAIL'} {shown}: {what}", flush=True)
        bad += not ok
    print(f"replay: {len(files)} files, {bad} failed", flush=True)
    return 1 if bad else 0


def check_modules(build_dir: Path) -> int:
    """Load the sanitizer modules and check that the readers use them."""
    mods = _common.use_native_build(build_dir)
    import schedwake.ingest.text as text

    names = {m.__name__.rsplit(".", 1)[1]: m for m in mods}
    if text._textscan is not names.get("_textscan"):
        print(
            f"replay: text.py does not use the sanitizer build of _textscan "
            f"({getattr(text._textscan, '__file__', None)})",
            flush=True,
        )
        return 3
    import schedwake.ingest.tracedat as tracedat

    used = [
        n for n in ("_tdread", "_tracedat") if getattr(tracedat, n, None) is not None and n in names
    ]
    for n in used:
        if getattr(tracedat, n) is not names[n]:
            print(f"replay: tracedat.py does not use the sanitizer build of {n}", flush=True)
            return 3
    print(
        f"replay: sanitizer modules in use: {', '.join(sorted(names))} "
        f"(trace.dat via {', '.join(used) or 'a module not in the build'})",
        flush=True,
    )
    return 0


def sanitizer_env(build_dir: Path | None, runtime: str | None = None) -> dict:
    """The environment of a python that runs the sanitizer build of ``build_dir`` (or
    only preloads the sanitizer ``runtime``: a module built apart, as the tests' canary)."""
    env = dict(os.environ)
    env.update(SAN_OPTIONS)
    if runtime is None:
        assert build_dir is not None
        runtime = (build_dir / "runtime").read_text().strip()
    env["LD_PRELOAD"] = runtime
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    env.pop(_common.KNOWN_ENV, None)
    return env


def build(build_dir: Path) -> None:
    mode = "--atheris" if build_dir.name == "asan-fuzz" else "--asan"
    subprocess.run(
        [str(HERE / "build_asan.sh"), mode],
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHON": sys.executable},
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--build-dir", type=Path, default=ROOT / "build" / "asan")
    ap.add_argument("--no-build", action="store_true", help="use the build dir as it is")
    ap.add_argument(
        "--normal",
        action="store_true",
        help="replay through the normal build (no sanitizers), in a child process",
    )
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    files = [f.resolve() for f in args.files] or (
        _common.regression_files() + _common.corpus_files() + _common.hostile_files()
    )
    if args.child:
        return child(None if args.normal else args.build_dir, files)

    if args.normal:
        env = dict(os.environ)
        env.pop(_common.KNOWN_ENV, None)
        env.pop(_common.NATIVE_ENV, None)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
        cmd = [sys.executable, str(HERE / "replay.py"), "--child", "--normal"]
    else:
        if not args.no_build:
            build(args.build_dir)
        env = sanitizer_env(args.build_dir)
        cmd = [
            sys.executable,
            str(HERE / "replay.py"),
            "--child",
            "--build-dir",
            str(args.build_dir.resolve()),
        ]
    # a file that kills the child is a failure; the files after it get a new child
    todo, died, failed_files = list(files), [], 0
    while todo:
        try:
            proc = subprocess.run(
                cmd + [str(f) for f in todo],
                env=env,
                cwd=ROOT,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=args.timeout,
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout or ""
            out = out.decode(errors="replace") if isinstance(out, bytes) else out
            last = [ln for ln in out.splitlines() if ln.startswith("replay: reading")]
            print(out[-4000:])
            print(
                f"replay: timed out after {args.timeout:.0f} s"
                + (f", {last[-1][len('replay: ') :]}" if last else "")
            )
            return 1
        sys.stdout.write(proc.stdout)
        failed_files += len(re.findall(r"^replay: FAIL ", proc.stdout, re.M))
        if proc.returncode in (0, 1) and re.search(r"^replay: \d+ files", proc.stdout, re.M):
            break
        # died (a signal, a sanitizer report) or could not start
        sys.stdout.write(proc.stderr[-20000:])
        last = re.findall(r"^replay: reading (.*)$", proc.stdout, re.M)
        if not last:
            print(f"replay: the child failed before reading a file (status {proc.returncode})")
            return 1
        print(f"replay: FAIL {last[-1]}: the child died (status {proc.returncode})", flush=True)
        died.append(last[-1])
        todo = todo[[str(f) for f in todo].index(last[-1]) + 1 :]
    if died:
        print(f"replay: {len(died)} file(s) killed the child: {', '.join(died)}")
    return 1 if failed_files or died else 0


if __name__ == "__main__":
    sys.exit(main())
