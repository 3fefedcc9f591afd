"""The task picker of the interactive per-CPU timeline (:mod:`schedwake.report.timeline_html`).

A searchable box of the trace's tasks (``comm (pid)``, the most runs first; a name or a
pid typed finds them) picks one task: its runs are drawn outlined on top of the others,
which are dimmed, at every zoom (the aggregated view included), joined by a line (a jump
is a CPU change); its waits to run stay under their rows, each wake-up that ended a
sleep marked at the start of its wait; the wake-ups that moved it are its arrows, drawn
on top. A line under the status line counts them and names its CPUs. What is picked is
what the file holds exactly (:func:`schedwake.report.timeline_html.plan`): a trace over
the budget holds the runs of its named ranges only, and the line says how many runs
the task has in the whole trace.
"""

from __future__ import annotations

import pandas as pd

__all__ = ["MAX_TASKS", "task_choices", "task_picker"]

#: The picker lists at most this many tasks (the most runs first).
MAX_TASKS = 3000

_PICK_COLOUR = "#d62728"

#: The pick: the picked task's rows of the runs and of the arrows into the filters of the
#: picked renderers, every other row into those of the dimmed ones, the line joining its
#: runs, the status line.
_PICK_JS = """
const v = picker.value ?? '';
const m = /\\((-?\\d+)\\)\\s*$/.exec(v) ?? /^\\s*(\\d+)\\s*$/.exec(v);
const pid = m ? Number(m[1]) : null;
const d = runs.data, a = arrows.data;
const mine = [], rest = [], woke = [], ran = [], amine = [], arest = [];
const cpus = new Set();
if (pid !== null) {
  for (let i = 0; i < d.pid.length; i++) {
    if (d.pid[i] !== pid) { rest.push(i); continue; }
    mine.push(i);
    if (d.state[i] === -1) { woke.push(i); }
    if (d.state[i] >= 0) { ran.push(i); cpus.add(d.cpu[i]); }
  }
  for (let i = 0; i < a.wakee_pid.length; i++) { (a.wakee_pid[i] === pid ? amine : arest).push(i); }
}
ran.sort((i, j) => d.left[i] - d.left[j]);
const xs = [], ys = [];
for (const i of ran) {
  const y = (d.top[i] + d.bottom[i]) / 2;
  xs.push(d.left[i], d.right[i]); ys.push(y, y);
}
filters.rest.indices = pid === null ? null : rest;
filters.mine.indices = mine;
filters.woke.indices = woke;
filters.arest.indices = pid === null ? null : arest;
filters.amine.indices = amine;
path.data = {x: xs, y: ys};
for (const r of picked) { r.visible = pid !== null; }
for (const r of dim) { r.muted = pid !== null; }
for (const f of quiet) { f.indices = pid === null ? null : []; }
const waits = mine.length - ran.length;
if (pid === null) {
  status.text = '';
} else {
  const total = totals[pid];
  const where = everything ? '' : ' in the spans this file holds exactly ('
      + (total === undefined ? 'its' : total.toLocaleString('en-US')) + ' runs in the whole trace)';
  status.text = '<b>' + v + '</b>: ' + ran.length + ' runs on CPU '
      + [...cpus].sort((x, y) => x - y).join(', ') + ', ' + waits + ' waits to run ('
      + woke.length + ' after a wake-up, marked &#9660;), ' + amine.length
      + ' wake-up migrations' + where + '; the other tasks dimmed (every task: clear the box)';
}
const el = document.getElementById(name);
el?.setAttribute('data-task', pid === null ? '' : String(pid));
el?.setAttribute('data-task-runs', String(ran.length));
"""


def task_choices(runs: pd.DataFrame, limit: int = MAX_TASKS) -> tuple[list[str], dict[int, int]]:
    """The picker's entries: ``comm (pid)`` of each task that ran in the trace (its latest
    name), the most runs first, at most ``limit``; and each one's runs in the whole
    trace. ``runs``: :func:`schedwake.report.timeline_html._runs`'s table."""
    on = runs[~runs["waiting"] & ~runs["unknown"] & (runs["pid"] > 0)]
    if not len(on):
        return [], {}
    counts = on.groupby("pid", sort=True).size().sort_values(ascending=False, kind="stable")
    counts = counts[:limit]
    comm = on.sort_values("start", kind="stable").drop_duplicates("pid", keep="last")
    name = dict(zip(comm["pid"].to_numpy().tolist(), comm["comm"].astype(str)))
    pids = [int(p) for p in counts.index]
    return [f"{name[p]} ({p})" for p in pids], {p: int(n) for p, n in zip(pids, counts)}


def task_picker(p, src: dict, pl, name: str, dim: list, arrow_renderers, width: int, quiet: list):
    """The picker of the timeline ``name`` on its plot ``p``: the renderers of the picked
    task (added to ``p``), the filters that split the runs' and the arrows' renderers
    into the picked task's and the others' (the others' views are those of the
    renderers of :func:`~schedwake.report.timeline_html.timeline_fragment`), and the
    callback that picks. ``pl``: the timeline's plan; ``dim``: the renderers dimmed while
    a task is picked (the runs, the arrows' shafts and heads);
    ``arrow_renderers``: how the timeline draws an arrow; ``width``: the plot's; ``quiet``:
    the filters that hide all while a task is picked (the aggregate's: a faint copy stays). Returns
    ({"widgets", "status"}, {"runs", "hit"}: the picked renderers that hover)."""
    from bokeh.layouts import row
    from bokeh.models import CDSView, ColumnDataSource, CustomJS, IndexFilter
    from bokeh.models.widgets import AutocompleteInput, Button, Div

    # the dimmed renderers' views filter "the others" (made by timeline_fragment)
    exact_r, seg = dim[0], dim[1]
    filters = {
        "rest": exact_r.view.filter,
        "arest": seg.view.filter,
        "mine": IndexFilter(indices=[]),
        "woke": IndexFilter(indices=[]),
        "amine": IndexFilter(indices=[]),
    }
    path = ColumnDataSource({"x": [], "y": []})
    line = p.line(source=path, x="x", y="y", line_color="#333333", line_width=1,
                  line_alpha=0.7, visible=False)  # fmt: skip
    runs_r = p.quad(
        source=src["runs"], view=CDSView(filter=filters["mine"]), left="left", right="right",
        top="top", bottom="bottom", fill_color="colour", line_color="#000000", line_width=1,
        visible=False, name=f"{name}-task-runs",
    )  # fmt: skip
    woke_r = p.scatter(
        source=src["runs"], view=CDSView(filter=filters["woke"]), x="left", y="top",
        marker="inverted_triangle", size=7, color=_PICK_COLOUR, visible=False,
    )  # fmt: skip
    arrows = arrow_renderers(
        p, src["arrows"], CDSView(filter=filters["amine"]), f"{name}-task-arrows",
        colour=_PICK_COLOUR, visible=False,
    )  # fmt: skip
    labels, totals = task_choices(pl.runs)
    box = AutocompleteInput(
        title=f"task: one task's runs, waits and wake-ups ({len(labels)} tasks)",
        completions=labels, search_strategy="includes", case_sensitive=False,
        min_characters=1, max_completions=40, restrict=True,
        placeholder="type a name or a pid", name=f"{name}-task", width=300,
    )  # fmt: skip
    status = Div(text="", width=width, name=f"{name}-task-status")
    box.js_on_change(
        "value",
        CustomJS(
            args={
                "picker": box,
                "runs": src["runs"],
                "arrows": src["arrows"],
                "filters": filters,
                "path": path,
                "picked": [line, runs_r, woke_r, *arrows],
                "dim": dim,
                "quiet": quiet,
                "status": status,
                "totals": {str(k): v for k, v in totals.items()},
                "everything": pl.everything,
                "name": name,
            },  # fmt: skip
            code=_PICK_JS,
        ),
    )
    clear = Button(label="every task", width=90, align="end")
    clear.js_on_click(CustomJS(args={"box": box}, code="box.value = '';"))
    return {"widgets": row(box, clear), "status": status}, {"runs": runs_r, "hit": arrows[2]}
