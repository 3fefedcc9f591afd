"""The figure of waits broken into causes (``schedwake analyze --html``): one stacked
horizontal bar per explained wait, a segment per part (the wake-up's own path, each
task that ran instead, the CPU's idle time, what the trace cannot tell), coloured by
cause. The parts come from :mod:`schedwake.analysis.wait_causes`; this module only draws them.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from .plots import ReportFigure

__all__ = ["breakdown_bars", "CAUSE_COLOURS"]

#: Colour of each cause (a task's class, or the part's name).
CAUSE_COLOURS = {
    "wake_path": "#8e44ad",
    "idle": "#bdbdbd",
    "unknown": "#ffffff",
    "fair_same_nice": "#1f77b4",
    "fair_heavier": "#0b3d91",
    "fair_lighter": "#6baed6",
    "fair": "#1f77b4",
    "rt_dl": "#d62728",
    "percpu_kthread": "#ff7f0e",
    "ksoftirqd": "#e6550d",
    "stopper": "#7f0000",
}

#: Parts labelled inside their segment when at least this share of the wait.
LABEL_SHARE = 0.08


def _cause(p: dict) -> str:
    return p["class"] if p["part"] == "task" else p["part"]


def _label(p: dict) -> str:
    if p["part"] == "task":
        return f"{p['comm']} ({p['pid']})"
    if p["part"] == "idle":
        return f"CPU {p['cpu']} idle"
    return p["part"].replace("_", " ")


def breakdown_bars(waits: list[tuple[str, dict]], title: str = "why they waited") -> Figure:
    """``waits``: (label, record) pairs, a record with ``wait_us`` and ``breakdown`` (the
    parts, in µs). One bar per wait, its length the wait in ms, its segments the parts
    in the order given, the large ones named inside."""
    n = max(len(waits), 1)
    fig = ReportFigure(figsize=(11.5, 1.4 + 0.55 * n), layout="constrained")
    ax = fig.add_subplot()
    used: dict[str, bool] = {}
    for row, (_, w) in enumerate(waits):
        left = 0.0
        total = sum(p["us"] for p in w["breakdown"]) or 1.0
        for p in w["breakdown"]:
            cause = _cause(p)
            colour = CAUSE_COLOURS.get(cause, "#2ca02c")
            width = p["us"] / 1e3
            ax.barh(
                row,
                width,
                left=left,
                height=0.6,
                color=colour,
                edgecolor="#444444",
                linewidth=0.4,
                hatch="//" if cause == "unknown" else None,
                label=None if cause in used else cause.replace("_", " "),
            )
            used[cause] = True
            if p["us"] / total >= LABEL_SHARE:
                ax.text(
                    left + width / 2,
                    row,
                    _label(p),
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if cause not in ("idle", "unknown", "fair_lighter") else "black",
                    clip_on=True,
                )
            left += width
    ax.set_yticks(range(len(waits)), [label for label, _ in waits], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("ms of the wait (wake-up or preemption -> switch-in)")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(0, -0.25 if n < 4 else -0.1), ncol=6,
              fontsize=8, frameon=False)  # fmt: skip
    ax.grid(axis="x", alpha=0.3)
    return fig
