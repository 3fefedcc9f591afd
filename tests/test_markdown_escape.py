"""Markdown output escapes what a renderer would act on (#37): raw HTML, links, emphasis,
code spans, table cells and line breaks in names that come from files (a rule's symbol,
a side's label, a comm, a unit), in every Markdown renderer, by one helper
(:func:`schedwake.report.markdown.md`); the HTML pages keep escaping too."""

from __future__ import annotations

import re

import pytest

from schedwake.report.markdown import code_line, fence, md

from .conftest import SAMPLE_KALLSYMS, SAMPLES, run_cli

PAYLOADS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[click](javascript:alert(1))",
    "![x](http://evil/x.png)",
    "**bold** _em_ ~~del~~ `code`",
    "a|b",
    "x\nPASS: every rule holds",
    "&lt;script&gt;",
    "\x1b[2J",
]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_md_leaves_nothing_a_renderer_acts_on(payload):
    out = md(payload)
    assert "<" not in out and ">" not in out and "\n" not in out and "\x1b" not in out
    for c in "*`[]|~":  # every one escaped
        assert out.count(c) == out.count("\\" + c)
    assert "&lt;" not in out.replace("&amp;lt;", "") or "<" in payload


def test_md_keeps_plain_text_and_numbers():
    assert md("wake_to_run_p99_us 12.5 (+3.1%)") == "wake_to_run_p99_us 12.5 (+3.1%)"
    assert md("__seccomp_filter _x_") == "\\_\\_seccomp_filter \\_x\\_"
    assert md("AT&T") == "AT&T"


def test_fence_outlasts_backticks_inside():
    lines = ["a ``` b", "c"]
    assert fence(lines) == "````" and fence(["x"]) == "```"
    assert code_line("a\nb") == "a\\nb"


@pytest.mark.slow
def test_gate_markdown_escapes_a_rules_symbol(tmp_path):
    rules = tmp_path / "rules.toml"
    rules.write_text(
        '[gate]\nmin_duration = 0.5\n\n[rules."self_share:<script>alert(1)</script>"]\n'
        'allowed = 1\nmissing = "skip"\n\n[rules."self_share:_raw_spin_lock"]\nallowed = 1\n'
    )
    out = tmp_path / "gate.md"
    profiles = SAMPLES / "profiles"
    proc = run_cli(
        "gate", "--rules", rules, "--markdown", out,
        "--baseline", profiles / "base" / "run*.perf.data",
        "--candidate", profiles / "aa" / "run*.perf.data",
        "--kallsyms", SAMPLE_KALLSYMS, subprocess=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "self\\_share:\\_raw_spin_lock" in text or "self_share:\\_raw_spin_lock" in text


@pytest.mark.slow
def test_profile_and_compare_markdown_escape_labels(tmp_path):
    side = tmp_path / "<b>x|y"
    side.mkdir()
    for i in (1, 2):
        (side / f"run{i}.perf.data").symlink_to(SAMPLES / "profiles" / "base" / f"run{i}.perf.data")
    proc = run_cli(
        "profile", "--side", f"b=a<b>|c={side}/run*.perf.data", "--format", "markdown",
        "--top", "3", "--kallsyms", SAMPLE_KALLSYMS, subprocess=True,
    )  # fmt: skip
    if proc.returncode == 0:
        assert "<b>" not in proc.stdout and "a&lt;b&gt;\\|c" in proc.stdout, proc.stdout
    else:  # a label the option refuses is refused in one line
        assert proc.returncode == 2 and proc.stderr.count("\n") <= 2
    a = SAMPLES / "idle-sleep.dat"
    proc = run_cli(
        "compare", "--side", f"x<i>y={a}", "--side", f"z={a}", "--format", "markdown",
        subprocess=True,
    )  # fmt: skip
    if proc.returncode in (0, 1):
        outside = re.sub(r"(?ms)^(`{3,})\n.*?^\1$", "", proc.stdout)  # (code blocks: literal)
        assert "x<i>y" in proc.stdout and "<i>" not in outside, outside
    else:
        assert "Traceback" not in proc.stderr
