"""Profiles compared over several runs a side (schedwake/profile/compare.py) on the real
recordings of sample_traces/profiles/ (scripts/record-samples/record-profiles.sh):
``base`` and ``aa`` are the same configuration (an A/A pair: nothing may be starred),
``seccomp`` is the same workload behind a seccomp filter that reads an argument (the
known cause: the system-call entry's seccomp path must be starred)."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import schedwake
from schedwake.profile.compare import (
    benjamini_hochberg,
    callers_tree,
    compare_profiles,
    welch_p,
)
from schedwake.report import gate as gate_report
from schedwake.report import profile_compare as render

from .conftest import SAMPLE_KALLSYMS, perf_kallsyms, run_cli, sample_profiles

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ROOT / "sample_traces" / "profiles"
WORK = 960_000  # messages per run (record-profiles.sh)
#: The functions of the seccomp path on Linux 6.18 x86-64: the syscall entry's slow
#: path calls the filter; the JIT-compiled filter has no kallsyms name after its
#: process exits, so it is the kernel's [unknown].
SECCOMP_PATH = {"syscall_trace_enter", "__seccomp_filter", "[unknown]"}
#: ... and the functions it may also bring up: the filter's own helpers, and the
#: system-call dispatch that the slow entry path takes instead of the fast one.
SECCOMP_MAY = SECCOMP_PATH | {
    "populate_seccomp_data",
    "__secure_computing",
    "seccomp_run_filters",
    "x64_sys_call",
}


@pytest.fixture(scope="module")
def sides():
    """The profiles of the three sides' runs, their kernel frames named by the recording
    kernel's kallsyms (tests/conftest.py, ``sample_profiles``): read them, never change
    them."""
    return sample_profiles()


@pytest.fixture(scope="module")
def cmp(sides):
    return compare_profiles(sides, work=WORK)


def _t_two_sided_by_quadrature(t: float, df: float) -> float:
    """P(|T| >= |t|) by integrating Student's t density (independent of the
    incomplete-beta route that schedwake.compare.stats takes)."""
    x = np.linspace(0.0, abs(t), 200_001)
    c = math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) * math.gamma(df / 2))
    density = c * (1 + x * x / df) ** (-(df + 1) / 2)
    return 1.0 - 2.0 * float(np.sum((density[1:] + density[:-1]) / 2 * np.diff(x)))


def test_welch_p():
    # R: t.test(1:3, 4:6) -> t = -3.6742, df = 4, p-value = 0.02131
    p = welch_p(np.array([[1.0, 2.0, 3.0]]), np.array([[4.0, 5.0, 6.0]]))
    assert p[0] == pytest.approx(0.02131, abs=5e-5)
    # unequal sizes and spreads: Welch's t and Satterthwaite's df worked by hand
    a, b = np.array([1.0, 2.0, 3.0, 4.0]), np.array([2.0, 4.0, 6.0, 8.0, 10.0])
    va, vb = a.var(ddof=1) / 4, b.var(ddof=1) / 5  # 5/12 and 2
    t = (b.mean() - a.mean()) / math.sqrt(va + vb)  # 3.5 / sqrt(29/12)
    df = (va + vb) ** 2 / (va**2 / 3 + vb**2 / 4)  # 5.52...
    assert t == pytest.approx(2.2514, abs=1e-4) and df == pytest.approx(5.5208, abs=1e-4)
    got = welch_p(a[None, :], b[None, :])[0]
    assert got == pytest.approx(_t_two_sided_by_quadrature(t, df), abs=1e-6)
    assert welch_p(b[None, :], a[None, :])[0] == pytest.approx(got)  # symmetric
    # no spread on either side: the means decide
    p = welch_p(np.array([[1.0, 1.0], [2.0, 2.0]]), np.array([[1.0, 1.0], [3.0, 3.0]]))
    assert p.tolist() == [1.0, 0.0]


def test_benjamini_hochberg_matches_r():
    # R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "BH") -> 0.02 0.04 0.04 0.02
    q = benjamini_hochberg(np.array([0.01, 0.04, 0.03, 0.005]))
    assert q.tolist() == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert benjamini_hochberg(np.array([0.9, 0.5])).tolist() == pytest.approx([0.9, 0.9])


@pytest.mark.slow
def test_stacks_add_up_to_the_rows(sides):
    p = sides["base"][0]
    self_p = np.zeros(len(p.rows))
    child_p = np.zeros(len(p.rows))
    for frames, period in zip(p.stacks["frames"], p.stacks["period"]):
        self_p[frames[0]] += period
        for f in set(frames):
            child_p[f] += period
    assert p.stacks["period"].sum() == pytest.approx(p.total_period)
    assert np.allclose(self_p, p.rows["self_period"], atol=1)
    assert np.allclose(child_p, p.rows["children_period"], atol=1)
    assert p.stacks["samples"].sum() == p.samples


@pytest.mark.slow
def test_a_a_pair_stars_nothing(cmp):
    for measure in cmp.measures:
        starred = cmp.rows[cmp.rows[f"{measure}:significant[aa]"]]
        assert starred.empty, (measure, starred[["symbol", f"{measure}:change[aa]"]])
    assert cmp.tested["self_share"] > 20 and cmp.tested["children_share"] > 20


def test_known_cause_stars_the_seccomp_path(cmp):
    changed = cmp.changed("children_share", "seccomp")
    grown = set(changed[changed["children_share:change[seccomp]"] > 0]["symbol"])
    assert SECCOMP_PATH <= grown
    # what grew is the path and nothing else: every other starred function shrank (its
    # share gave way to the filter's)
    assert grown <= SECCOMP_MAY
    seccomp = cmp.rows.set_index("symbol").loc["__seccomp_filter"]
    assert seccomp["children_share[base]"] == 0 and seccomp["children_share[seccomp]"] > 0.05
    assert seccomp["children_share:change[seccomp]"] == pytest.approx(
        seccomp["children_share[seccomp]"] * 100
    )


def test_callers_tree_of_the_filter(cmp):
    tree = cmp.callers("__seccomp_filter", "[kernel.kallsyms]", "seccomp")
    row = cmp.rows[(cmp.rows.symbol == "__seccomp_filter")].iloc[0]
    assert tree["share"] == pytest.approx(row["children_share[seccomp]"])
    assert tree["callers"][0]["symbol"] == "syscall_trace_enter"
    assert tree["callers"][0]["callers"][0]["symbol"] == "do_syscall_64"
    assert cmp.callers("__seccomp_filter", side="base") == {"share": 0.0, "callers": []}

    # a tree's branches never hold more than their parent
    def check(node):
        assert sum(c["share"] for c in node["callers"]) <= node["share"] + 1e-9
        for c in node["callers"]:
            check(c)

    check(tree)
    assert callers_tree(cmp.stacks["seccomp"], "no_such_function") == {"share": 0.0, "callers": []}


def test_rates_per_unit_of_work(cmp):
    row = cmp.rows[cmp.rows.symbol == "__seccomp_filter"].iloc[0]
    assert row["children_rate[base]"] == 0 and row["children_rate[seccomp]"] > 0
    # a rate is the period per message: the shares times the runs' periods over the work
    base = cmp.rows[cmp.rows.symbol == "do_syscall_64"].iloc[0]
    assert base["children_rate[base]"] > base["self_rate[base]"] > 0


def test_text_report(cmp):
    out = render.text(cmp, top=10)
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "Welch t-test" in out and "Benjamini-Hochberg" in out
    assert "Self share of the samples (%)" in out and "Children period per unit of work" in out
    line = next(x for x in out.splitlines() if x.startswith("Amean __seccomp_filter"))
    assert line.count("*") == 2  # starred on the seccomp side only
    assert "Callers of the changed functions" in out


def test_markdown_and_json(cmp):
    md = render.markdown(cmp, top=5)
    assert "| Function | base | aa | seccomp |" in md and "\\*" in md
    doc = json.loads(render.to_json(cmp))
    assert doc["sides"] == ["base", "aa", "seccomp"]
    assert doc["method"]["test"] == "welch" and doc["method"]["alpha"] == 0.05
    assert doc["functions_total"] == len(doc["functions"]) == len(cmp.rows)
    f = next(x for x in doc["functions"] if x["symbol"] == "__seccomp_filter")
    assert set(f["self_share"]) == {"base", "aa", "seccomp"}
    assert f["significant"]["children_share"] == {"aa": False, "seccomp": True}
    assert 0 <= f["p"]["children_share"]["seccomp"] < 0.05
    assert any(k.startswith("__seccomp_filter") for k in doc["callers"])
    for fn in doc["functions"]:
        for per_side in fn["change"].values():
            for v in per_side.values():
                assert v is None or math.isfinite(v)


def test_folded_stacks(sides):
    two = compare_profiles({"base": sides["base"], "seccomp": sides["seccomp"]})
    lines = render.folded(two).splitlines()
    counts = np.array([[int(x) for x in line.rsplit(" ", 2)[1:]] for line in lines])
    # each side's stacks sum to its whole (parts per million, rounded per stack)
    assert abs(counts[:, 0].sum() - 1_000_000) < len(lines)
    assert abs(counts[:, 1].sum() - 1_000_000) < len(lines)
    seccomp = [line for line in lines if ";__seccomp_filter" in line]
    assert seccomp and all(line.split(" ")[-2] == "0" for line in seccomp)
    # root first: the entry, then the slow path, then the filter
    assert any(
        "entry_SYSCALL_64_after_hwframe;do_syscall_64;syscall_trace_enter;__seccomp_filter" in line
        for line in seccomp
    )


def test_one_side_reports_without_tests(sides):
    one = compare_profiles({"base": sides["base"]})
    assert one.tested == {"self_share": 0, "children_share": 0}
    out = render.text(one, top=5)
    assert "Amean" in out and "*" not in out.split("Self share", 1)[1]


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"alpha": float("nan")}, "alpha"),
        ({"alpha": 1.5}, "alpha"),
        ({"min_effect": -1}, "min_effect"),
        ({"min_effect": float("inf")}, "min_effect"),
        ({"work": 0}, "work"),
        ({"work": {"base": 1}}, "work"),
        ({"work": {"base": [1, 2], "aa": 1}}, "work"),
    ],
)
def test_bad_parameters_name_themselves(sides, kwargs, words):
    with pytest.raises(ValueError, match=words):
        compare_profiles({"base": sides["base"], "aa": sides["aa"]}, **kwargs)


def test_a_side_without_runs_is_refused(sides):
    with pytest.raises(ValueError, match="sides=empty: the side has no profiles"):
        compare_profiles({"base": sides["base"], "empty": []})


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
@pytest.mark.slow
def test_perf_script_text_profiles_like_the_perf_data(tmp_path):
    """``perf script`` text of a profile (frames named by perf) gives the perf.data's
    shares: the same samples, the same kernel functions with the same self and children
    shares (user-space names may differ where a binary changed since the recording:
    perf script names from today's file, schedwake refuses a changed build id). Both are
    given the recording kernel's kallsyms."""
    data = ROOT / "sample_traces" / "perf" / "perf-profile-g.perf.data"
    text = tmp_path / "profile.txt"
    with open(text, "wb") as out:
        subprocess.run(
            ["perf", "script", "--kallsyms", str(perf_kallsyms()), "-i", str(data)],
            stdout=out,
            check=True,
            stderr=subprocess.DEVNULL,
        )
    from_text = schedwake.profile(schedwake.load(text))
    from_data = schedwake.profile(schedwake.load(data), kallsyms=SAMPLE_KALLSYMS)
    assert from_data.kernel_symbols.startswith(str(SAMPLE_KALLSYMS))
    assert from_text.samples == from_data.samples
    assert from_text.total_period == from_data.total_period
    assert from_text.event.split(":")[0] == from_data.event.split(":")[0] == "cpu-clock"
    kernel = "[kernel.kallsyms]"
    both = from_text.rows[from_text.rows.dso == kernel].merge(
        from_data.rows[from_data.rows.dso == kernel], on=["symbol", "dso"], suffixes=("_t", "_d")
    )
    named = both[both.symbol != "[unknown]"]
    assert len(named) > 50
    assert np.allclose(named.self_share_t, named.self_share_d, atol=1e-12)
    assert np.allclose(named.children_share_t, named.children_share_d, atol=1e-12)
    # and the two compare as one event, with nothing changed between them
    cmp = compare_profiles({"data": [from_data] * 2, "text": [from_text] * 2})
    assert cmp.event == from_data.event


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
@pytest.mark.slow
@pytest.mark.parametrize("side", ["base", "aa", "seccomp"])
def test_sample_profiles_equal_perf_report_given_the_same_kallsyms(sides, side):
    """Every function of a run at 0.2% or more, self and children, has the share that
    ``perf report --kallsyms`` prints given the recording kernel's kallsyms (perf with
    this machine's /proc/kallsyms names other functions, unless it runs that build)."""
    from .test_profile import assert_matches_perf

    path = PROFILES / side / "run1.perf.data"
    prof = sides[side][0]
    assert prof.path == str(path)
    assert assert_matches_perf(path, prof, "--kallsyms", str(perf_kallsyms()), floor=0.2) > 150


def _schedwake(*args, cwd=None) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=cwd)


def _profile(*args) -> subprocess.CompletedProcess:
    """``schedwake profile ARGS`` of the samples, given their kernel's kallsyms."""
    return _schedwake("profile", "--kallsyms", SAMPLE_KALLSYMS, *args)


def _side(name: str) -> str:
    return f"{name}={PROFILES / name}/run*.perf.data"


@pytest.mark.slow
def test_cli_compares_sides_and_writes_html_and_folded(tmp_path):
    html, folded = tmp_path / "cmp.html", tmp_path / "cmp.folded"
    sides = ["--side", _side("base"), "--side", _side("seccomp"), "--work", "960000"]
    out = _profile(*sides, "--top", "5", "--html", html, "--folded", folded)
    assert out.returncode == 0, out.stderr
    assert "schedwake profile: base vs seccomp" in out.stdout
    assert re.search(r"^Amean __seccomp_filter \[k\].*\*\s*\+\d+\.\d+pp\*$", out.stdout, re.M)
    assert "Callers of the changed functions" in out.stdout
    assert "<svg" in html.read_text() and "__seccomp_filter" in html.read_text()
    assert all(len(line.rsplit(" ", 2)) == 3 for line in folded.read_text().splitlines())
    doc = json.loads(
        _profile("--side", _side("base"), "--side", _side("aa"), "--format", "json").stdout
    )
    assert not any(
        any(v for v in f["significant"]["self_share"].values()) for f in doc["functions"]
    )


def test_cli_markdown_of_one_side():
    out = _schedwake("profile", "--side", _side("base"), "--format", "markdown", "--top", "3")
    assert out.returncode == 0, out.stderr
    assert "| Function | base |" in out.stdout and "\\*" not in out.stdout.split("\n\n", 2)[2]


@pytest.mark.parametrize(
    "args, says",
    [
        (["--work", "lots"], "Error: --work lots: expected N or NAME=N"),
        (["--work", "nope=3"], "Error: --work nope=3: no side named 'nope'"),
        (["--work", "0"], "Error: --work 0: units of work must be a number from 1e-09 to 1e+18"),
        (["--alpha", "2"], "--alpha"),
        (["--min-effect", "nan"], "--min-effect"),
        (["--side", "x=/nonexistent/*.data"], "/nonexistent/*.data"),
    ],
)
def test_cli_bad_options_are_one_line(args, says):
    out = _schedwake("profile", "--side", _side("base"), *args)
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and says in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_cli_needs_a_profile():
    out = _schedwake("profile")
    assert out.returncode == 2 and "give a profile (TRACE) or --side NAME=GLOB" in out.stderr


# -- gate rules on a profile's functions ----------------------------------------------------

PROFILE_RULES = """
[gate]
min_duration = 0.5

[rules."children_share:__seccomp_filter"]
allowed = 2
missing = "skip"

[rules."self_share:_raw_spin_lock"]
allowed = "1pp"
dso = "[kernel.kallsyms]"
"""


def _gate(tmp_path, candidate: str, rules: str = PROFILE_RULES, baseline: str = "base"):
    path = tmp_path / "rules.toml"
    path.write_text(rules)
    return schedwake.gate(
        str(PROFILES / baseline / "run*.perf.data"),
        str(PROFILES / candidate / "run*.perf.data"),
        rules=path,
        kallsyms=SAMPLE_KALLSYMS,
    )


@pytest.mark.slow
def test_gate_on_functions_passes_the_a_a_pair(tmp_path):
    result = _gate(tmp_path, "aa")
    assert result.exit_code == 0, gate_report.headline(result)
    status = {r.rule.metric: r.status for r in result.results}
    # the filter is in no run of either side: skipped as the rule asks
    assert status == {
        "children_share:__seccomp_filter": "skipped",
        "self_share:_raw_spin_lock": "pass",
    }


@pytest.mark.slow
def test_gate_on_functions_breaks_on_the_known_cause(tmp_path):

    result = _gate(tmp_path, "seccomp")
    assert result.exit_code == 1
    broken = [r for r in result.results if r.status == "broken"]
    assert [r.rule.metric for r in broken] == ["children_share:__seccomp_filter"]
    r = broken[0]
    assert r.baseline == 0 and r.candidate == pytest.approx(r.change) and r.change > 2
    assert r.significant and r.detail < 0.05
    assert "worst allowed +2 pp" in r.message and "significant (q=" in r.message
    assert r.why and "called from syscall_trace_enter <- do_syscall_64" in r.why[0]
    text = gate_report.text(result)
    assert "children_share:__seccomp_filter[%]" in text and "yes (q=" in text
    assert "BROKEN" in text and "-2pp" in text
    junit = gate_report.junit(result)
    assert "children_share:__seccomp_filter (allowed -2pp)" in junit and "<failure" in junit
    doc = json.loads(gate_report.to_json(result))
    assert any(x["status"] == "broken" and x["allowed"] == "-2pp" for x in doc["rules"])


@pytest.mark.slow
def test_gate_on_functions_fails_closed(tmp_path):
    misspelt = PROFILE_RULES.replace('missing = "skip"\n', "").replace(
        "__seccomp_filter", "__seccomp_filtre"
    )
    result = _gate(tmp_path, "seccomp", misspelt)
    assert result.exit_code == 2
    assert any("no run sampled __seccomp_filtre" in r.message for r in result.results)
    # one run a side cannot say what is noise
    path = tmp_path / "rules.toml"
    path.write_text(PROFILE_RULES)
    one = schedwake.gate(
        str(PROFILES / "base" / "run1.perf.data"),
        str(PROFILES / "seccomp" / "run1.perf.data"),
        rules=path,
        kallsyms=SAMPLE_KALLSYMS,
    )
    assert one.exit_code == 2
    assert any("significance cannot be tested (runs a side: 1/1)" in r.message for r in one.results)


@pytest.mark.parametrize(
    "rule, says",
    [
        ('allowed = "2%"', "percentage points"),
        ("allowed = -1", "allowed must be a finite amount from 0 to 1e18"),
        ("allowed = 1\nweight = 2", "unknown key(s) weight"),
        ("allowed = 1\ndso = 3", "dso must be a file name"),
        ("significance = true", "no allowed change"),
    ],
)
def test_gate_profile_rules_are_checked(tmp_path, rule, says):
    path = tmp_path / "rules.toml"
    path.write_text(f'[rules."self_share:x"]\n{rule}\n')
    with pytest.raises(schedwake.TraceError, match=re.escape(says)):
        schedwake.gate("a.data", "b.data", rules=path)


@pytest.mark.slow
def test_gate_cli_on_functions(tmp_path):
    path = tmp_path / "rules.toml"
    path.write_text(PROFILE_RULES)
    out = _schedwake(
        "gate",
        "--kallsyms",
        SAMPLE_KALLSYMS,
        "--rules",
        str(path),
        "--baseline",
        str(PROFILES / "base" / "run*.perf.data"),
        "--candidate",
        str(PROFILES / "seccomp" / "run*.perf.data"),
    )
    assert out.returncode == 1, out.stderr
    assert "FAIL: 1 of 2 rules broken: children_share:__seccomp_filter" in out.stdout
