"""One child interpreter that runs hostile-input requests one at a time, so that a
crash, a hang or a runaway allocation kills the child and fails one test, never the
test process, without paying an interpreter start and the imports per request.

A request is a CLI command (run in the child as ``tests.conftest.run_cli`` runs it in
process: the console script's ``cli.main``, stdout and stderr captured at the file
descriptors) or a Python snippet run as ``python -c`` would run it (``sys.argv`` set,
``print`` captured, ``sys.exit`` giving the code). The child has an address-space
limit and no core dumps; a request that does not answer within ``timeout`` seconds
kills it (:class:`subprocess.TimeoutExpired`, as ``subprocess.run`` raises). After a
death the next request starts a new child, and the answer of the request that died
is a :class:`subprocess.CompletedProcess` with the child's negative signal number (or
its exit code) and what it wrote to stderr outside the captured requests.
"""

from __future__ import annotations

import json
import os
import resource
import select
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import contextlib, io, json, os, sys, traceback

answers = os.fdopen(int(os.environ["SANDBOX_ANSWER_FD"]), "w")
from tests.conftest import run_cli  # (imports schedwake, click, pyarrow once)

for line in sys.stdin:
    req = json.loads(line)
    if req["kind"] == "cli":
        try:
            p = run_cli(*req["args"])
            code, out, err = p.returncode, p.stdout, p.stderr
        except BaseException:  # (what escapes main() is a traceback under the script)
            code, out, err = 1, "", traceback.format_exc()
    else:
        out_buf, err_buf = io.StringIO(), io.StringIO()
        sys.argv = ["-c", *req["argv"]]
        code = 0
        with contextlib.redirect_stdout(out_buf), contextlib.redirect_stderr(err_buf):
            try:
                exec(compile(req["code"], "<request>", "exec"), {"__name__": "__main__"})
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException:
                traceback.print_exc()
                code = 1
        out, err = out_buf.getvalue(), err_buf.getvalue()
    answers.write(json.dumps({"code": code, "stdout": out, "stderr": err}) + "\n")
    answers.flush()
"""


class Sandbox:
    """The child interpreter (started at the first request); :meth:`close` ends it."""

    def __init__(self, timeout: float = 60, memory_limit: int = 4 << 30):
        self.timeout = timeout
        self.memory_limit = memory_limit
        self._proc: subprocess.Popen | None = None

    def cli(self, *args) -> subprocess.CompletedProcess:
        """``schedwake ARGS`` in the child."""
        argv = [str(a) for a in args]
        return self._ask({"kind": "cli", "args": argv}, ["schedwake", *argv])

    def python(self, code: str, *argv) -> subprocess.CompletedProcess:
        """``python -c CODE ARGV`` in the child."""
        args = [str(a) for a in argv]
        return self._ask({"kind": "python", "code": code, "argv": args}, ["python", "-c", *args])

    def close(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc.stdin.close()  # type: ignore[union-attr]
            os.close(self._answers)
            self._stderr.close()
            self._proc = None

    def _limits(self) -> None:
        resource.setrlimit(resource.RLIMIT_AS, (self.memory_limit, self.memory_limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    def _start(self) -> None:
        read, write = os.pipe()
        self._stderr = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            [sys.executable, "-c", CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            cwd=ROOT,
            env=dict(os.environ, COLUMNS="120", PYTHONPATH=str(ROOT), SANDBOX_ANSWER_FD=str(write)),
            pass_fds=(write,),
            preexec_fn=self._limits,
            text=True,
        )
        os.close(write)
        self._answers = read
        self._pending = b""

    def _ask(self, request: dict, argv: list[str]) -> subprocess.CompletedProcess:
        if self._proc is None:
            self._start()
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps(request) + "\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            return self._died(argv)
        while b"\n" not in self._pending:
            ready, _, _ = select.select([self._answers], [], [], self.timeout)
            if not ready:
                self.close()
                raise subprocess.TimeoutExpired(argv, self.timeout)
            chunk = os.read(self._answers, 1 << 20)
            if not chunk:
                return self._died(argv)
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        got = json.loads(line)
        return subprocess.CompletedProcess(argv, got["code"], got["stdout"], got["stderr"])

    def _died(self, argv: list[str]) -> subprocess.CompletedProcess:
        assert self._proc is not None
        code = self._proc.wait()
        self._stderr.seek(0)
        err = self._stderr.read().decode("utf-8", "replace")
        self.close()
        return subprocess.CompletedProcess(argv, code, "", err)
