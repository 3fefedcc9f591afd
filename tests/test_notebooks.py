"""Every notebook in notebooks/ runs top to bottom (nbclient, the python3 kernel of this
interpreter), and is committed with the outputs of such a run (`make notebooks`), so that
it reads as a tutorial on a forge."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from .conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: Per-cell limit; every notebook should take well under a minute in all.
CELL_TIMEOUT_S = 180
NOTEBOOK_BUDGET_S = 120


def _mirror(tmp: Path) -> Path:
    """A temporary copy of the checkout's layout: every top-level entry symlinked except
    notebooks/, whose notebooks are copied (so running them never writes into the repo
    and ``../sample_traces`` resolves as in a checkout). Returns the notebooks dir."""
    for entry in ROOT.iterdir():
        if entry.name not in ("notebooks", ".git"):
            (tmp / entry.name).symlink_to(entry)
    nbdir = tmp / "notebooks"
    nbdir.mkdir()
    return nbdir


def _run(nb, cwd: Path):
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(cwd)}},
    )
    return client.execute()


def test_there_are_notebooks():
    names = {p.name for p in NOTEBOOKS}
    assert {
        "01-quickstart.ipynb",
        "02-xfs-dbench-pingpong.ipynb",
        "03-cswitch-storm-weighted-cgroup.ipynb",
    } <= names


def _with_output(nb) -> list[int]:
    """The code cells (by index) that have outputs."""
    return [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.get("outputs")]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_with_the_outputs_of_one_run(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    counts = [c.get("execution_count") for c in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{path.name}: execution counts {counts}: not one run top to bottom; run "
        "`make notebooks` (scripts/run-notebooks.py) before committing"
    )
    assert _with_output(nb), f"{path.name}: no outputs; run `make notebooks`"
    errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{path.name}: committed with an error output"


#: The last cell of every notebook run: nbclient's python3 kernel runs in this environment
#: (jupyter_client starts it with sys.executable), so the notebooks import the schedwake
#: under test. (Checked in the notebooks' own kernels rather than in one more kernel.)
_KERNEL_CHECK = "import sys, schedwake\nprint(sys.prefix)"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path):
    nbdir = _mirror(tmp_path)
    copy = nbdir / path.name
    copy.write_bytes(path.read_bytes())
    nb = nbformat.read(copy, as_version=4)
    # and, once it has run, a cell of the test's own: the kernel is this interpreter
    nb.cells.append(nbformat.v4.new_code_cell(_KERNEL_CHECK))
    t0 = time.monotonic()
    _run(nb, nbdir)  # raises CellExecutionError with the failing cell and traceback
    took = time.monotonic() - t0
    assert took < NOTEBOOK_BUDGET_S, f"{path.name} took {took:.0f} s"
    check = nb.cells.pop()
    out = "".join(o.get("text", "") for o in check.outputs).strip()
    assert out == sys.prefix, f"{path.name} ran in {out}, not in this interpreter's {sys.prefix}"
    errors = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    assert not errors
    # the committed outputs are those of the code as it is: the same cells print
    assert _with_output(nb) == _with_output(nbformat.read(path, as_version=4)), (
        f"{path.name}: its cells' outputs changed; run `make notebooks`"
    )
