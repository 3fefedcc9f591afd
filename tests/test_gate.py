"""``schedwake gate`` on real traces: it passes reruns of one configuration, fails a
configuration that switches more with the right rule named, refuses (exit 2) what it
cannot judge, and writes JUnit, Markdown and JSON that parse."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import subprocess
import tomllib
import xml.etree.ElementTree as ET

import pytest

import schedwake
from schedwake.compare import from_samples
from schedwake.errors import TraceError
from schedwake.gate import DEFAULT_RULES_TOML, Rule, default_rules, parse_rules
from schedwake.gate.judge_metrics import judge_rule
from schedwake.report import gate as gate_report
from schedwake.report.compare import rule_line_of

from .conftest import iteration_paths, run_cli, sample, shared_model_trace

C1, C4 = iteration_paths("c1"), iteration_paths("c4")
# the real before/after pair: the kthread-stacking clause on (the fix) and off
STACK_ON, STACK_OFF = iteration_paths("on"), iteration_paths("off")


#: The gate's reader for verdicts that read the traces only (``loader=``): what the
#: default one reads, loaded once per worker and shared by the gates of the same
#: iterations. The default reader of paths is what the CLI tests here go through.
shared = shared_model_trace


def gate_cli(tmp_path, *args):
    # reports into directories that do not exist yet: made, as pytest --junitxml does
    out = {k: tmp_path / "reports" / k / f"gate.{k}" for k in ("xml", "md", "json")}
    proc = run_cli(
        "gate", *args, "--junit", out["xml"], "--markdown", out["md"], "--json", out["json"]
    )
    return proc, out


def junit_cases(path):
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert int(suite.get("tests")) == len(cases)
    return suite, cases


# -- verdicts on real traces ------------------------------------------------------------------


@pytest.mark.parametrize(
    "config", [C1, C4, STACK_ON, STACK_OFF], ids=["1client", "4clients", "kstack-on", "kstack-off"]
)
@pytest.mark.parametrize("held_out", [0, 1, 2])
@pytest.mark.slow
def test_reruns_of_one_configuration_pass(config, held_out):
    """Two iterations as baseline, the third as candidate: every default rule holds. On
    the 6.18 VM's recordings (1client, 4clients), whose CPU 1 lacks its idle -> task
    switches, some windows show the p99 latency only within bounds wider than the
    tolerance: no window sample of it from those traces, and the gate cannot judge that
    rule (exit 2, fail closed); the others hold."""
    base = [p for i, p in enumerate(config) if i != held_out]
    result = schedwake.gate(base, config[held_out], loader=shared)
    statuses = {r.rule.metric: r.status for r in result.results}
    if config in (C1, C4) and statuses["wake_to_run_p99_us"] != "pass":
        assert result.exit_code == 2, gate_report.text(result)
        assert statuses.pop("wake_to_run_p99_us") == "error", gate_report.text(result)
        assert set(statuses.values()) == {"pass"}, gate_report.text(result)
        return
    assert result.exit_code == 0, gate_report.text(result)
    assert [r.status for r in result.results] == ["pass"] * 5


@pytest.mark.slow
def test_more_clients_fail_with_context_switches_named(tmp_path):
    proc, out = gate_cli(tmp_path, "--baseline", *C1, "--candidate", *C4)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.startswith("schedwake gate: FAIL")
    broken = [ln for ln in proc.stdout.splitlines() if ln.startswith("broken: ")]
    assert any(ln.startswith("broken: context_switches_per_s: ") for ln in broken), broken
    assert "per-trace values, n=3/3" in proc.stdout

    doc = json.loads(out["json"].read_text())
    assert doc["verdict"] == "FAIL" and doc["exit_code"] == 1
    cs = [r for r in doc["rules"] if r["metric"] == "context_switches_per_s"][0]
    assert cs["status"] == "broken" and cs["significant"] is True
    assert cs["n"] == [3, 3]
    # the numbers are the geometric means of the per-trace context-switch rates
    # (the sched_switch events, and one more per switch whose prev_pid is not the task
    # its CPU's previous switch put on: a switch missing before it)
    rates = []
    for paths in (C1, C4):
        vals = []
        for p in paths:
            t = schedwake.load(p, events=["sched_switch"])
            sw = t.table("sched_switch")
            rows = zip(*(sw.column(k).to_pylist() for k in ("cpu", "ts", "prev_pid", "next_pid")))
            last: dict[int, int] = {}
            missing = 0
            for cpu, _, prev, nxt in sorted(rows, key=lambda r: (r[0], r[1])):
                missing += last.get(cpu, prev) != prev
                last[cpu] = nxt
            vals.append((sw.num_rows + missing) / (t.duration_ns / 1e9))
        # the gate judges on the log scale: geometric means ([gate] scale = "log")
        rates.append(math.exp(sum(math.log(v) for v in vals) / len(vals)))
    assert cs["scale"] == "log"
    assert cs["baseline"] == pytest.approx(rates[0], rel=1e-9)
    assert cs["candidate"] == pytest.approx(rates[1], rel=1e-9)
    # a gain as in mmtests: a higher context-switch rate (lower is better) is negative
    assert cs["gain_pct"] == pytest.approx((1 - rates[1] / rates[0]) * 100, rel=1e-9)
    assert cs["gain_pct"] < 0 and "gain -" in cs["message"]

    suite, cases = junit_cases(out["xml"])
    assert set(cases) == {"inputs"} | {
        f"{r['metric']} (allowed {r['allowed']})" for r in doc["rules"]
    }
    failed = {n for n, c in cases.items() if c.find("failure") is not None}
    assert failed == {
        f"{r['metric']} (allowed {r['allowed']})" for r in doc["rules"] if r["status"] == "broken"
    }
    assert int(suite.get("failures")) == len(failed) and suite.get("errors") == "0"
    md = out["md"].read_text()
    assert md.startswith("### schedwake gate: FAIL")
    assert "| context_switches_per_s | -25% |" in md and "**BROKEN**" in md


@pytest.mark.slow
def test_an_improvement_is_not_a_regression():
    for base, new in ((C4, C1), (STACK_OFF, STACK_ON)):
        result = schedwake.gate(base, new, loader=shared)
        assert result.exit_code == 0, gate_report.text(result)


@pytest.mark.slow
def test_losing_the_kthread_stacking_fix_breaks_the_pingpong_rules(tmp_path):
    """The regression the gate exists for: without the clause, a per-CPU kworker's
    wake-up moves the task away; ping-pong episodes and wake-up migrations break their
    rules, context switches do not."""
    proc, out = gate_cli(tmp_path, "--baseline", *STACK_ON, "--candidate", *STACK_OFF)
    assert proc.returncode == 1, proc.stdout
    doc = json.loads(out["json"].read_text())
    status = {r["metric"]: r["status"] for r in doc["rules"]}
    assert status == {
        "pingpong_episodes_per_s": "broken",
        "wakeup_migrations_per_s": "broken",
        "cross_llc_migrations_per_s": "pass",
        "context_switches_per_s": "pass",
        "wake_to_run_p99_us": "pass",
    }
    pp = [r for r in doc["rules"] if r["metric"] == "pingpong_episodes_per_s"][0]
    assert pp["candidate"] > 5 * pp["baseline"] and pp["significant"] is True
    suite, cases = junit_cases(out["xml"])
    assert {n for n, c in cases.items() if c.find("failure") is not None} == {
        "pingpong_episodes_per_s (allowed -25%)",
        "wakeup_migrations_per_s (allowed -25%)",
    }
    # why: the candidate's ping-pong findings, who is involved, and where to look
    why = pp["why"]
    assert why[0].startswith("kworker_pingpong (high) in 3 of 3 candidate trace(s): wakers")
    assert "xlog_ioend_work" in why[0] and "wakees (by episodes) dbench" in why[0]
    assert why[-1].startswith("see: schedwake analyze ") and "kstack-off-i" in why[-1]
    wm = [r for r in doc["rules"] if r["metric"] == "wakeup_migrations_per_s"][0]
    assert [w.split(" ")[0] for w in wm["why"]] == ["kworker_pingpong", "llc_roundrobin", "see:"]
    assert "  why: kworker_pingpong (high)" in proc.stdout
    failure = cases["pingpong_episodes_per_s (allowed -25%)"].find("failure")
    assert "kworker_pingpong (high)" in failure.get("message")
    assert "significant: true" in failure.text
    # JUnit times are real: reading plus judging, shared out over the cases
    total = float(suite.get("time"))
    assert total > 0 and math.isclose(
        total, sum(float(c.get("time")) for c in cases.values()), abs_tol=0.01
    )
    # a rule that holds has no why
    assert all(not r["why"] for r in doc["rules"] if r["status"] == "pass")


@pytest.mark.slow
def test_single_traces_are_not_judged_by_their_windows_unless_asked():
    """One run a side: no between-run spread, so no verdict (exit 2), never windows of
    the run taken for replicates; with samples = "per-window" the windows are judged as
    batch means, and the notes say what such a verdict means."""
    result = schedwake.gate(STACK_ON[0], STACK_OFF[0], loader=shared)
    assert result.exit_code == 2 and result.comparison is None
    assert "give >= 2 baseline runs (got 1)" in result.problems[0]
    settings, rules = default_rules()
    windows = (dataclasses.replace(settings, samples="per-window"), rules)
    result = schedwake.gate(STACK_ON[0], STACK_OFF[0], windows, loader=shared)
    assert result.comparison.sample_kind == "per-window"
    assert result.exit_code == 1
    assert "tested on batch means" in rule_line_of(result.comparison)
    assert any(
        "windows of one run are tested as batch means" in n for n in gate_report.notes(result)
    )
    # one candidate run against several baseline runs: a prediction interval
    result = schedwake.gate(STACK_ON, STACK_OFF[0], loader=shared)
    assert result.comparison.sample_kind == "per-trace"
    assert "t prediction interval of the baseline runs" in rule_line_of(result.comparison)


@pytest.mark.slow
def test_rules_file_changes_the_verdict(tmp_path):
    """Loosen the rules that broke: the same traces now pass."""
    rules = tmp_path / "gate.toml"
    rules.write_text(
        DEFAULT_RULES_TOML.replace(
            '[rules.context_switches_per_s]\nallowed = "25%"',
            '[rules.context_switches_per_s]\nallowed = "100%"',
        ).replace(
            '[rules.wake_to_run_p99_us]\nallowed = "50%"',
            "[rules.wake_to_run_p99_us]\nallowed = 5000",
        )
    )
    proc = run_cli("gate", "--rules", rules, "--baseline", *C1, "--candidate", *C4)
    assert proc.returncode == 0, proc.stdout
    assert "-100%" in proc.stdout and "-5000 us" in proc.stdout


# -- refusing what cannot be judged -----------------------------------------------------------


def _refused(proc, *needles):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("schedwake gate: ERROR: cannot judge")
    assert proc.stderr == first + "\n"  # the reason, one line, on stderr too
    for n in needles:
        assert n in first, first


def test_truncated_trace_is_refused(tmp_path):
    bad = tmp_path / "truncated.dat"
    data = C1[0].read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    proc, out = gate_cli(tmp_path, "--baseline", *C1[:2], "--candidate", bad)
    _refused(proc, "truncated.dat")
    suite, cases = junit_cases(out["xml"])
    assert cases["inputs"].find("error") is not None
    # every rule is reported as not judged, so a CI summary shows what was skipped
    assert sum(c.find("error") is not None for c in cases.values()) == 6
    assert json.loads(out["json"].read_text())["exit_code"] == 2


def test_empty_and_wrong_files_are_refused(tmp_path):
    empty = tmp_path / "empty.dat"
    empty.write_bytes(b"")
    _refused(run_cli("gate", "--baseline", empty, "--candidate", C1[0]), "empty.dat")
    text = tmp_path / "notes.txt"
    text.write_text("not a trace\n")
    _refused(run_cli("gate", "--baseline", C1[0], "--candidate", text), "notes.txt")
    _refused(
        run_cli("gate", "--baseline", C1[0], "--candidate", tmp_path / "nope-*.dat"),
        "matches no file",
    )
    _refused(run_cli("gate", "--candidate", C1[0]), "--baseline")


def test_lost_events_are_refused():
    lost = sample("lost-events.dat")
    proc = run_cli("gate", "--baseline", *C1, "--candidate", lost)
    _refused(proc, "lost-events.dat", "dropped events")


@pytest.mark.slow
def test_too_short_traces_are_refused(tmp_path):
    rules = tmp_path / "gate.toml"
    rules.write_text(DEFAULT_RULES_TOML.replace("min_duration = 0 ", "min_duration = 5 "))
    _refused(
        run_cli("gate", "--rules", rules, "--baseline", *C1, "--candidate", *C4),
        "shorter than the 5 s",
    )
    # runs of fixed work may be short: they are judged by their events (a rate of fewer
    # sched_switch events than min_switches is noise)
    rules.write_text(DEFAULT_RULES_TOML.replace("min_switches = 200", "min_switches = 10000000"))
    _refused(
        run_cli("gate", "--rules", rules, "--baseline", *C1, "--candidate", *C4),
        "fewer than the 10000000 a judgement needs ([gate] min_switches)",
    )
    rules.write_text(
        DEFAULT_RULES_TOML.replace("# window = 0.5", "window = 0.5").replace(
            'samples = "auto"', 'samples = "per-window"'
        )
    )
    # the count refused is the number of windows compare would sample
    from schedwake.analysis.metrics import window_metrics

    n = len(window_metrics(schedwake.load(C1[0]), 0.5))
    _refused(
        run_cli("gate", "--rules", rules, "--baseline", C1[0], "--candidate", C4[0]),
        f"{n} window(s) of 0.5 s",
    )


@pytest.mark.skipif(shutil.which("trace-cmd") is None, reason="needs trace-cmd")
@pytest.mark.slow
def test_missing_events_are_refused_or_skipped(tmp_path):
    """A real trace without sched_migrate_task (its report text with those lines
    removed): the migration rules cannot be judged; with missing = "skip" they are
    skipped and the others judged."""
    # (the candidate only is cut; plain text: its compression is not what is tested)
    text = subprocess.run(
        ["trace-cmd", "report", "-N", "-t", "-i", str(C1[2])],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    kept = [ln + "\n" for ln in text.splitlines() if "sched_migrate_task:" not in ln]
    cut = tmp_path / "nomigrate-2.txt"
    cut.write_text("".join(kept))
    proc = run_cli("gate", "--baseline", *C1[:2], "--candidate", cut)
    _refused(proc, "no sched_migrate_task events")
    rules = tmp_path / "gate.toml"
    rules.write_text(DEFAULT_RULES_TOML.replace('missing = "error"', 'missing = "skip"'))
    proc = run_cli("gate", "--rules", rules, "--baseline", *C1[:2], "--candidate", cut)
    assert proc.returncode == 0, proc.stdout
    # wake-up and cross-LLC migrations (the one candidate run is judged against the
    # two baseline runs' spread)
    assert proc.stdout.count("skipped: ") == 2
    assert "PASS: 3 rules hold (2 skipped)" in proc.stdout
    # nothing judged is not a pass
    only = tmp_path / "only.toml"
    only.write_text('[rules."migrations_per_s"]\nallowed = "10%"\nmissing = "skip"\n')
    _refused(
        run_cli("gate", "--rules", only, "--baseline", *C1[:2], "--candidate", cut),
        "every rule was skipped",
    )


# -- rules ------------------------------------------------------------------------------------


def test_default_rules_print_parse_and_cover_the_issue(tmp_path):
    proc = run_cli("gate", "--print-default-rules", check=True)
    assert proc.stdout == DEFAULT_RULES_TOML
    doc = tomllib.loads(proc.stdout)
    assert set(doc["rules"]) == {
        "pingpong_episodes_per_s",
        "wakeup_migrations_per_s",
        "cross_llc_migrations_per_s",
        "context_switches_per_s",
        "wake_to_run_p99_us",
    }
    settings, rules = default_rules()
    assert settings.significance == "ttest" and settings.max_lost_events == 0
    assert all(r.relative and r.significance and r.missing == "error" for r in rules)


@pytest.mark.parametrize(
    "text,needle",
    [
        ("[rules.nosuch]\nallowed = '1%'", "unknown metric 'nosuch'"),
        ("[rules.'context_switches_per_s']\nallowed = 'lots'", "allowed must be"),
        ("[rules.'context_switches_per_s']\nallowed = -3", "finite amount from 0 to 1e18"),
        ("[rules.'context_switches_per_s']\nsignificance = true", "no allowed change"),
        ("[rules.'context_switches_per_s']\nallowed = 1\nmissing = 'maybe'", "missing must be"),
        ("[rules.'context_switches_per_s']\nallowed = 1\ncolour = 1", "unknown key(s) colour"),
        (
            "[gate]\nsignificance = 'bayes'\n[rules.'context_switches_per_s']\nallowed = 1",
            "significance must be one of",
        ),
        ("[gate]\nalpha = 2\n[rules.'context_switches_per_s']\nallowed = 1", "alpha"),
        ("[gate]\nsignificance = 'ttest'", "no rules"),
        ("[rules", "not valid TOML"),
    ],
)
def test_bad_rules_are_one_line_errors(tmp_path, text, needle):
    with pytest.raises(TraceError, match="^rules: .*" + re.escape(needle)):
        parse_rules(text)
    f = tmp_path / "bad.toml"
    f.write_text(text)
    proc = run_cli("gate", "--rules", f, "--baseline", C1[0], "--candidate", C1[1])
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "bad.toml" in proc.stderr


def _mean_row(base, new, metric="context_switches_per_s", direction="lower"):
    import pandas as pd

    rows = [
        {"side": s, "metric": metric, "direction": direction, "value": v}
        for s, vals in (("b", base), ("n", new))
        for v in vals
    ]
    comp = from_samples(pd.DataFrame(rows), ["b", "n"])
    (row,) = [r for r in comp.comparison.rows if r.is_mean_row]
    return row


def test_judgement_rules():
    """Relative and absolute allowances, both directions, significance on and off,
    untestable significance."""
    worse = _mean_row([100, 101, 99], [130, 131, 129])  # +30%, significant
    assert judge_rule(Rule("context_switches_per_s", 0.25, True), worse, "ttest").status == "broken"
    assert judge_rule(Rule("context_switches_per_s", 0.35, True), worse, "ttest").status == "pass"
    assert (
        judge_rule(Rule("context_switches_per_s", 29.0, False), worse, "ttest").status == "broken"
    )
    assert judge_rule(Rule("context_switches_per_s", 31.0, False), worse, "ttest").status == "pass"
    noisy = _mean_row([100, 150, 50], [130, 200, 60])  # +30%, not significant
    assert judge_rule(Rule("context_switches_per_s", 0.25, True), noisy, "ttest").status == "pass"
    loose = Rule("context_switches_per_s", 0.25, True, significance=False)
    assert judge_rule(loose, noisy, "ttest").status == "broken"
    # one candidate run: judged against the baseline runs' spread (a prediction interval)
    one = _mean_row([100, 101, 99], [130])
    r = judge_rule(Rule("context_switches_per_s", 0.25, True), one, "ttest")
    assert r.status == "broken" and r.significant and r.detail < 0.01
    assert (
        judge_rule(
            Rule("context_switches_per_s", 0.25, True), _mean_row([100, 140, 60], [130]), "ttest"
        ).status
        == "pass"
    )
    # one baseline run: no spread to judge against, untestable
    r = judge_rule(
        Rule("context_switches_per_s", 0.25, True), _mean_row([100], [130, 131]), "ttest"
    )
    assert r.status == "error" and "cannot be tested" in r.message
    assert "give >= 2 baseline runs" in r.message
    # higher is better: a drop is the worsening
    busy = _mean_row([80, 81, 79], [60, 61, 59], "busy_share_cpu0", "higher")
    r = judge_rule(Rule("busy_share_cpu0", 0.10, True), busy, "ttest")
    assert r.status == "broken" and r.worsening == pytest.approx(20, rel=0.01)
    assert (
        judge_rule(
            Rule("busy_share_cpu0", 0.10, True),
            _mean_row([60, 61, 59], [80, 81, 79], "busy_share_cpu0", "higher"),
            "ttest",
        ).status
        == "pass"
    )
    # a zero baseline: any significant worsening breaks a relative rule
    zero = _mean_row([0, 0, 0], [5, 6, 4])
    r = judge_rule(Rule("context_switches_per_s", 0.25, True), zero, "ttest")
    assert r.status == "broken" and math.isinf(r.gain_pct) and r.gain_pct < 0
