"""A detector owns how it is shown (docs/architecture.md, "Recipe: add a detector"): its
key metrics, the weight of its top entries and its gap sentence are its ``SHOWN``
(``detect.base.Shown``), so that no report or gate code names a detector or one of its
metrics, and a detector registered with no other change is shown with its key metrics."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

import schedwake
from schedwake.detect import DETECTORS, Finding, Shown

from .conftest import ROOT, sample, shared_model_trace

#: Words of the whole vocabulary, not of one detector, that a detector's key metrics
#: also use (a report has its own ``cpu`` and ``task`` columns and ``share`` values).
GENERIC = {"cpu", "task", "share"}


def _renderers() -> list[Path]:
    """The sources of the report and gate code."""
    pkg = ROOT / "schedwake"
    return sorted((pkg / "report").rglob("*.py")) + sorted((pkg / "gate").rglob("*.py"))


def _literals(path: Path) -> list[tuple[int, str]]:
    """Every string literal of the module but docstrings (f-string parts included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    return [
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    ]


def test_no_report_or_gate_code_names_a_detector_or_its_metrics():
    declared = {
        k: d.NAME
        for d in DETECTORS.values()
        for k in (*d.SHOWN.key_metrics, d.SHOWN.top_weight, d.SHOWN.gap)
        if k is not None and k not in GENERIC
    }
    assert "episodes" in declared and "longest_gap" in declared  # (the scan sees them)
    names = re.compile(r"\b(" + "|".join(map(re.escape, DETECTORS)) + r")\b")
    found = [
        f"{p.relative_to(ROOT)}:{line}: {v!r}"
        for p in _renderers()
        for line, v in _literals(p)
        if names.search(v) or v in declared
    ]
    assert not found, "\n".join(found)


@pytest.mark.slow
def test_every_detector_shows_metrics_its_findings_have():
    """Each registered detector's key metrics are metrics of its findings on the trace
    of its worked example (a typo in SHOWN would silently show nothing)."""
    from .test_detector_protocol import FLAGGED

    for name, d in DETECTORS.items():
        assert d.SHOWN.key_metrics, name
        t = shared_model_trace(sample(FLAGGED[name]))
        (f, *_) = [f for f in schedwake.detect.detect(t, detectors=[name], evidence_lines=0)]
        missing = [k for k in d.SHOWN.key_metrics if k not in f.metrics]
        assert not missing, (name, missing)
        if d.SHOWN.top_weight is not None:
            assert all(d.SHOWN.top_weight in e for e in f.top), name


def _toy_detect(trace, model, th) -> list[Finding]:
    return [
        Finding(
            "toy_naps",
            "low",
            "a toy finding",
            {
                "naps": 3,
                "naps_per_s": 1.5,
                "unshown_detail": 12345,
                "nap_gap": {
                    "at": 1.25,
                    "us": 2500.0,
                    "idle_cpus": [3],
                    "waiting": [
                        {
                            "pid": 7,
                            "comm": "napper",
                            "cpu": 1,
                            "waited_us": 2500.0,
                            "behind_pid": None,
                            "behind_comm": None,
                        },
                    ],  # fmt: skip
                },
            },
            top=[{"comm": "napper", "naps": 3}, {"comm": "dozer", "naps": 5}],
        )
    ]


TOY = SimpleNamespace(
    NAME="toy_naps",
    THRESHOLDS=(),
    EVENTS=(("sched_switch",),),
    SHOWN=Shown(key_metrics=("naps_per_s", "naps"), top_weight="naps", gap="nap_gap"),
    detect=_toy_detect,
)


@pytest.fixture
def toy(monkeypatch):
    """The toy detector registered (its module and its registry line, nothing else)."""
    monkeypatch.setitem(DETECTORS, "toy_naps", TOY)
    return TOY


def test_a_new_detector_is_shown_without_touching_report_code(toy):
    from schedwake.report import analyze as report

    a = schedwake.analyze(schedwake.load(sample("nonutf8-comm.dat")), detectors=["toy_naps"])
    (f,) = a.findings
    gap = (
        "longest gap: at 1.250000, for 2.500 ms, CPU(s) 3 idle while napper (pid 7) waited on CPU 1"
    )
    text = report.text(a)
    body = text.split("-- Findings (1)")[1].split("-- Task states")[0]
    assert "[LOW] toy_naps: a toy finding" in body
    # the gap sentence, then the key metrics in SHOWN's order; not the other metrics
    assert body.index(gap) < body.index("naps_per_s: 1.5") < body.index("naps: 3")
    assert "unshown_detail" not in body
    md = report.markdown(a)
    assert "- naps_per_s: 1.5\n- naps: 3" in md and f"- {gap}" in md


@pytest.mark.slow
def test_a_new_detector_is_shown_in_the_html_report(toy):
    from schedwake.report import analysis_html

    a = schedwake.analyze(schedwake.load(sample("nonutf8-comm.dat")), detectors=["toy_naps"])
    gap = (
        "longest gap: at 1.250000, for 2.500 ms, CPU(s) 3 idle while napper (pid 7) waited on CPU 1"
    )
    page = analysis_html.render(a)
    assert "naps_per_s: 1.5, naps: 3" in page and gap in page
    assert "unshown_detail" not in page.split("toy_naps")[1].split("</h3>")[1].split("<h")[0]


def test_a_new_detectors_top_entries_weigh_by_its_own_field(toy):
    from schedwake.gate.explain import top_names

    f = _toy_detect(None, None, None)[0]
    assert top_names([f, f]) == "tasks (by naps) dozer 10, napper 6"
