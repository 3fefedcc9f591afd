#!/usr/bin/env python3
"""Run every notebook in notebooks/ top to bottom and save it with its outputs, so that
the notebooks read as tutorials on a forge (`make notebooks`; tests/test_notebooks.py
checks that the committed outputs come from such a run and that the notebooks still run).

Usage: .venv/bin/python scripts/run-notebooks.py [NOTEBOOK ...]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
# the saved outputs are those of any machine: no recording's kernel addresses named from
# this machine's kallsyms (a notebook gives the samples' own), as in the test suite
os.environ["SCHEDWAKE_IGNORE_RUNNING_KERNEL"] = "1"


def run(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    t0 = time.monotonic()
    NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, path)
    return time.monotonic() - t0


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    for p in paths:
        print(f"{p.name}: {run(p):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
