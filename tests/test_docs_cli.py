"""docs/cli.md stays in step with the CLI: for every command of the click group it has a
section, the command's current ``--help`` (at 80 columns) verbatim in a fenced block, and
a worked example (a fenced block starting with ``$ schedwake CMD``)."""

from __future__ import annotations

import re

import pytest

from schedwake.cli import cli

from .conftest import ROOT, run_cli

CLI_MD = ROOT / "docs" / "cli.md"
COMMANDS = sorted(cli.commands)


def fenced_blocks(text: str) -> list[str]:
    """Contents of the fenced code blocks (``` or longer fences, closed by the same)."""
    blocks, fence, buf = [], None, []
    for line in text.split("\n"):
        m = re.match(r"^(`{3,})\s*\w*\s*$", line)
        if fence is None and m:
            fence, buf = m.group(1), []
        elif fence is not None and line.strip() == fence:
            blocks.append("\n".join(buf))
            fence = None
        elif fence is not None:
            buf.append(line)
    assert fence is None, "docs/cli.md has an unclosed code fence"
    return blocks


def help_text(*args) -> str:
    proc = run_cli(*args, "--help", env={"COLUMNS": "80"}, check=True)
    return proc.stdout.rstrip("\n")


@pytest.fixture(scope="module")
def blocks() -> list[str]:
    return fenced_blocks(CLI_MD.read_text())


def test_expected_commands_exist():
    assert {"info", "convert", "topology", "analyze", "record"} <= set(COMMANDS)


def test_group_help_is_documented(blocks):
    assert help_text() in blocks, (
        "docs/cli.md lacks the current `schedwake --help`; paste it:\n" + help_text()
    )


@pytest.mark.parametrize("cmd", COMMANDS)
def test_command_help_is_documented(cmd, blocks):
    text = CLI_MD.read_text()
    assert re.search(rf"^## {re.escape(cmd)}\s*$", text, re.M), (
        f"docs/cli.md has no '## {cmd}' section"
    )
    current = help_text(cmd)
    assert current in blocks, (
        f"docs/cli.md lacks the current `schedwake {cmd} --help` "
        f"(80 columns) as a fenced block of its own; paste it:\n" + current
    )


@pytest.mark.parametrize("cmd", COMMANDS)
def test_command_has_worked_example(cmd, blocks):
    examples = [b for b in blocks if re.match(rf"\$ schedwake {re.escape(cmd)}\b", b)]
    assert examples, f"docs/cli.md has no worked example of `schedwake {cmd}`"
    # an example shows output, not only the command line
    assert any(len(b.strip().split("\n")) > 1 for b in examples)


def test_fenced_blocks_parser():
    text = "a\n```\nx\n```\n````\n```\ny\n```\n````\n"
    assert fenced_blocks(text) == ["x", "```\ny\n```"]


def test_gate_doc_commands_parse():
    """Every `schedwake gate ...` command of docs/gate.md (the CI jobs included) is
    accepted by the current CLI: its options exist and take the values given."""
    import shlex

    text = (ROOT / "docs" / "gate.md").read_text()
    lines = []
    for block in fenced_blocks(text):
        joined = re.sub(r"\\\n\s*", " ", block)  # shell line continuations
        for line in joined.split("\n"):
            m = re.match(r"(?:\$ )?(?:\S*/)?schedwake (gate .*)$", line.strip())
            if m:
                lines.append(m.group(1).replace("[", "").replace("]", ""))
    assert len(lines) >= 6, lines
    for line in lines:
        args = shlex.split(line.split(" >")[0])
        ctx = cli.commands["gate"].make_context("gate", args[1:])
        assert ctx.params["baseline"] or ctx.params["print_default_rules"], line


def test_every_command_summary_is_whole_and_every_help_has_an_example():
    """`schedwake --help` at 80 columns cuts no summary mid-sentence, and every
    command's --help shows how it is called."""
    group = help_text()
    commands = group.split("Commands:\n", 1)[1].splitlines()
    assert len(commands) == len(COMMANDS)
    assert not [ln for ln in commands if ln.rstrip().endswith("...")], commands
    for name in COMMANDS:
        text = help_text(name)
        assert "Example:" in text and f"schedwake {name} " in text.split("Example:", 1)[1], name
