"""docs/examples/ stays true: one worked example per detector, each the real output of the
``schedwake analyze`` command it shows. The command is run again and every shown line must
still be in its output, in order; consecutive shown lines must be consecutive there
(``[...]`` marks where the doc leaves lines out)."""

from __future__ import annotations

import functools
import re
import shlex
from pathlib import Path

import pytest

from schedwake.detect import DETECTORS

from .conftest import ROOT, run_cli

EXAMPLES = ROOT / "docs" / "examples"
OMITTED = "[...]"


def console_block(path: Path) -> list[str]:
    """The lines of the doc's one ```console block."""
    blocks = re.findall(r"^```console\n(.*?)^```$", path.read_text(), re.M | re.S)
    assert len(blocks) == 1, f"{path.name}: expected one ```console block, found {len(blocks)}"
    return blocks[0].rstrip("\n").split("\n")


@functools.cache
def run(command: str) -> list[str]:
    argv = shlex.split(command)
    assert argv[:2] == ["schedwake", "analyze"], command
    proc = run_cli(*argv[1:], cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.split("\n")


def chunks(lines: list[str]) -> list[list[str]]:
    """The shown lines in runs between the ``[...]`` marks."""
    out: list[list[str]] = [[]]
    for line in lines:
        if line == OMITTED:
            out.append([])
        else:
            out[-1].append(line)
    return [c for c in out if c]


def test_one_example_per_detector():
    assert {p.stem for p in EXAMPLES.glob("*.md")} == set(DETECTORS)
    listed = (ROOT / "docs" / "detectors.md").read_text()
    for name in DETECTORS:
        assert f"examples/{name}.md" in listed, f"docs/detectors.md does not link {name}'s example"


@pytest.mark.parametrize("name", sorted(DETECTORS))
@pytest.mark.slow
def test_example_is_the_real_output(name):
    path = EXAMPLES / f"{name}.md"
    shown = console_block(path)
    assert shown[0].startswith("$ "), f"{path.name}: the block starts with the command line"
    output = run(shown[0][2:])
    assert any(re.match(rf"\[[A-Z]+\] {name}: ", ln) for ln in shown), (
        f"{path.name} does not show a {name} finding"
    )
    at = 0
    for chunk in chunks(shown[1:]):
        n = len(chunk)
        found = next(
            (k for k in range(at, len(output) - n + 1) if output[k : k + n] == chunk), None
        )
        assert found is not None, (
            f"docs/examples/{path.name}: these lines are no longer in the output of "
            f"`{shown[0][2:]}` (after line {at}); paste the new output:\n"
            + "\n".join(chunk)
            + "\n--- output ---\n"
            + "\n".join(output)
        )
        at = found + n
