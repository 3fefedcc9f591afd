"""The recipes of docs/architecture.md work against today's code, as written.

The package is copied into a temporary directory; every ```python block of the recipes
whose first line names a file (``# schedwake/...``) is written there, and every ```diff
block applied (each hunk's context and ``-`` lines must be found exactly once in the
file). A child process then runs the patched package on real sample traces: the new
detector fires on fio-pinned-weighted.dat and stays silent on idle-sleep.dat, the new
metric (one record) is the wake-ups per second everywhere it should appear, and the new reader gives
the same tables and analysis as trace.dat for a trace exported to its format.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from .conftest import ROOT, computed_once, run_dir

ARCHITECTURE = ROOT / "docs" / "architecture.md"


def recipe_blocks() -> list[tuple[str, str]]:
    """(language, text) of the fenced python and diff blocks after '## Recipes'."""
    text = ARCHITECTURE.read_text()
    assert "\n## Recipes\n" in text, "docs/architecture.md has no '## Recipes' section"
    text = text.split("\n## Recipes\n", 1)[1]
    return re.findall(r"^```(python|diff)\n(.*?)^```$", text, re.M | re.S)


def apply_diff(root: Path, diff: str) -> None:
    """Apply a unified diff whose hunks may lack line numbers: a hunk is found by its
    context and removed lines, which must occur exactly once."""
    target: Path | None = None
    hunks: list[list[str]] = []

    def flush():
        if target is None:
            return
        text = target.read_text()
        for hunk in hunks:
            old = "".join(ln[1:] + "\n" for ln in hunk if ln[:1] in (" ", "-", ""))
            new = "".join(ln[1:] + "\n" for ln in hunk if ln[:1] in (" ", "+", ""))
            n = text.count(old)
            assert n == 1, f"{target.relative_to(root)}: hunk found {n} times:\n{old}"
            text = text.replace(old, new)
        target.write_text(text)

    for line in diff.rstrip("\n").split("\n"):
        if line.startswith("--- "):
            flush()
            target, hunks = None, []
        elif line.startswith("+++ "):
            target = root / line[4:].removeprefix("b/")
            assert target.exists(), f"the diff patches {line[4:]}, which does not exist"
        elif line.startswith("@@"):
            hunks.append([])
        else:
            hunks[-1].append(line)
    flush()


def patched(root: Path) -> Path:
    """The package copied into ``root``, with every recipe applied."""
    shutil.copytree(
        ROOT / "schedwake", root / "schedwake", ignore=shutil.ignore_patterns("__pycache__")
    )
    (root / "sample_traces").symlink_to(ROOT / "sample_traces")
    blocks = recipe_blocks()
    assert [lang for lang, _ in blocks].count("diff") >= 3, "a recipe lost its diff"
    for lang, text in blocks:
        if lang == "diff":
            apply_diff(root, text)
        elif text.startswith("# schedwake/"):
            path = root / text.split("\n", 1)[0][2:].strip()
            assert not path.exists(), f"the recipe's new file {path.name} already exists"
            path.write_text(text)
    return root


def run_patched(root: Path, code: str, *args: str) -> dict:
    """Run ``code`` (``sys.argv[1:]`` = ``args``) with the patched package; its last line
    of output, as JSON."""
    env = dict(os.environ, PYTHONPATH=str(root))
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        cwd=root,  # (python -c puts the working directory first on sys.path)
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().split("\n")[-1])


@pytest.fixture(scope="module")
def results() -> dict:
    """What the three recipes' checks read: computed by one child process (one start of
    the patched package, not one per recipe), once per test run for either worker
    (tests/conftest.py, computed_once)."""
    return computed_once(
        f"test_docs_recipes: the recipes of {ARCHITECTURE} applied, run on sample traces",
        lambda: _results(patched(Path(tempfile.mkdtemp(prefix="recipes-", dir=run_dir())))),
    )


def _results(root: Path) -> dict:
    return run_patched(
        root,
        """
        import json
        import sys

        import schedwake
        from schedwake.analysis import metrics
        from schedwake.detect import DETECTORS, THRESHOLDS
        from schedwake.report import analyze as report

        assert schedwake.__file__.startswith(sys.argv[1]), schedwake.__file__
        out = {"detectors": list(DETECTORS), "thresholds": list(THRESHOLDS)}
        for name in ("fio-pinned-weighted.dat", "idle-sleep.dat"):
            t = schedwake.load("sample_traces/" + name)
            a = schedwake.analyze(t)
            naps = [f for f in a.findings if f.detector == "short_naps"]
            w = t.wakeups()
            run = (w["run_end_ts"] - w["run_ts"]).to_numpy("float64", na_value=float("nan"))
            recount = int(((run < 100_000) & w["slept_after"].fillna(False).to_numpy(bool)).sum())
            wm = metrics.window_metrics(t, 0.5)
            out[name] = {
                "naps": naps[0].metrics["naps"] if naps else None,
                "evidence": len(naps[0].evidence) if naps else 0,
                "shown": [x.strip() for x in report.text(a).splitlines()
                          if x.strip().startswith(("naps:", "naps_per_s:"))],
                "recount": recount,
                "wakeups": len(w),
                "duration_s": t.duration_ns / 1e9,
                "wakeups_per_s": a.metrics["wakeups_per_s"],
                "window_sum": float(
                    (wm["wakeups_per_s"] * (wm["end_ns"] - wm["start_ns"]) / 1e9).sum()
                ),
                "window_count": int(wm["wakeups"].sum()),
                "sample": float(metrics.metric_samples(t, metrics=["wakeups_per_s"])["value"][0]),
            }
        out["catalogue"] = list(metrics.catalogue()["name"])
        out["needs"] = metrics.NEEDS.get("wakeups_per_s")
        out["explained_by"] = metrics.EXPLAINED_BY.get("wakeups_per_s")

        # the input-format recipe: idle-sleep.dat exported to its JSON lines, read back
        src = schedwake.load("sample_traces/idle-sleep.dat")
        path = sys.argv[2]
        fields = {
            e: {f.name: "string" if str(f.type).startswith("dictionary") else str(f.type)
                for f in src.table(e).schema}
            for e in src.events
        }
        head = {"cpus": src.meta.cpus, "clock": src.meta.clock, "fields": fields}
        with open(path, "w") as f:
            f.write(json.dumps({"schedwake_jsonl": 1, **head}) + "\\n")
            for e in src.events:
                for row in src.table(e).to_pylist():
                    f.write(json.dumps({"event": e, **row}) + "\\n")
        got = schedwake.load(path)
        same = {  # names, types and values (the readers differ in nullable flags)
            e: [(f.name, f.type) for f in got.table(e).schema]
            == [(f.name, f.type) for f in src.table(e).schema]
            and got.table(e).to_pylist() == src.table(e).to_pylist()
            for e in src.events
        }
        a, b = schedwake.analyze(src), schedwake.analyze(got)
        out["input_format"] = {
            "format": got.meta.format,
            "same_tables": same,
            "same_metrics": a.metrics == b.metrics,
            "findings": [[f.detector for f in x.findings] for x in (a, b)],
            "wakeups": [len(src.wakeups()), len(got.wakeups())],
        }
        print(json.dumps(out))
        """,
        str(root),
        str(root / "idle-sleep.jsonl"),
    )


@pytest.mark.slow
def test_detector_recipe(results):
    assert "short_naps" in results["detectors"] and "naps_min_per_s" in results["thresholds"]
    fio, idle = results["fio-pinned-weighted.dat"], results["idle-sleep.dat"]
    # fio's futile wake-ups (docs/examples/cswitch_storm.md) are naps: thousands of them
    assert fio["naps"] == fio["recount"] and fio["naps"] > 4000 and fio["evidence"] > 0
    assert idle["naps"] is None
    # its key metrics under its finding in analyze's report, no report code touched
    assert [x.split(":")[0] for x in fio["shown"]] == ["naps", "naps_per_s"]
    assert fio["shown"][0] == f"naps: {fio['naps']}" and not idle["shown"]


def test_metric_recipe(results):
    for name in ("fio-pinned-weighted.dat", "idle-sleep.dat"):
        r = results[name]
        assert r["wakeups_per_s"] == pytest.approx(r["wakeups"] / r["duration_s"], rel=1e-5)
        # per window: the window's wake-ups / its length
        assert r["window_sum"] == pytest.approx(r["window_count"], rel=1e-9)
        assert 0.9 * r["wakeups"] < r["window_count"] <= r["wakeups"]
        assert r["sample"] == r["wakeups_per_s"]  # compare's per-trace sample
    assert "wakeups_per_s" in results["catalogue"]
    assert results["needs"] == [["sched_waking", "sched_wakeup"]]
    assert results["explained_by"] == ["cswitch_storm"]


def test_metric_recipe_is_one_record():
    """Adding a metric is one record: the recipe's diff adds one ``Metric(...)`` to
    ``METRICS`` and touches nothing else."""
    text = ARCHITECTURE.read_text().split("### Recipe: add a metric\n", 1)[1]
    diff = re.search(r"^```diff\n(.*?)^```$", text, re.M | re.S).group(1)
    files = re.findall(r"^\+\+\+ (\S+)", diff, re.M)
    hunks = re.findall(r"^@@", diff, re.M)
    added = [ln[1:] for ln in diff.split("\n") if ln.startswith("+") and not ln.startswith("+++")]
    assert files == ["b/schedwake/analysis/metrics.py"] and len(hunks) == 1
    assert not re.findall(r"^-(?!--)", diff, re.M), "the recipe removes lines"
    assert added[0].strip() == "Metric(" and added[-1].strip() == "),"


@pytest.mark.slow
def test_input_format_recipe(results):
    """idle-sleep.dat exported to the recipe's JSON lines reads back to the same tables
    and the same analysis."""
    out = results["input_format"]
    assert out["format"] == "jsonl"
    assert out["same_tables"] and all(out["same_tables"].values()), out["same_tables"]
    assert out["same_metrics"] and out["findings"][0] == out["findings"][1]
    assert out["wakeups"][0] == out["wakeups"][1] > 0
