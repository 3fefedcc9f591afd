"""Context-switch storm (DESIGN section 6).

A task and kworkers alternating on one CPU at a high rate, the kworker preempted while
runnable (``prev_state`` ``R+`` when it is switched out for the task), and the task
waking only to sleep again after a very short run. Judged per (CPU, task), for user
tasks (kernel threads such as ksoftirqd also alternate with kworkers, by design):

``switches``
    ``sched_switch`` events on the CPU from the task to a kworker or from a kworker to
    the task;
``kworker_preemptions``
    of those, kworker -> task switches with the kworker preempted (``R+``);
``futile_wakeups``
    wake-ups of the task placed on that CPU after which it ran less than
    ``storm_futile_run_us`` and then slept (switched out not runnable).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .base import Finding, Threshold

NAME = "cswitch_storm"

THRESHOLDS = (
    Threshold(
        "storm_min_switches_per_s",
        2000.0,
        "switches/s",
        "lowest rate of task<->kworker switches on one CPU",
    ),
    Threshold(
        "storm_min_preemptions_per_s",
        500.0,
        "preemptions/s",
        "lowest rate of kworkers preempted (R+) by the task",
    ),
    Threshold(
        "storm_min_futile_share",
        0.25,
        "fraction",
        "lowest share of the task's wake-ups on the CPU that are futile",
    ),
    Threshold(
        "storm_futile_run_us",
        50.0,
        "us",
        "a wake-up is futile when the task then runs less than this and sleeps",
    ),
    Threshold(
        "storm_high_preemptions_per_s",
        2000.0,
        "preemptions/s",
        "kworker preemption rate from which the finding is high",
    ),
)


def _kworker_of(cat: pd.Categorical) -> np.ndarray:
    flags = np.array([str(c).startswith("kworker/") for c in cat.categories] + [False])
    codes = np.asarray(cat.codes)
    return flags[np.where(codes < 0, len(flags) - 1, codes)]


def futile_mask(w: pd.DataFrame, futile_run_ns: float) -> np.ndarray:
    if len(w) == 0:
        return np.zeros(0, dtype=bool)
    run = (w["run_end_ts"] - w["run_ts"]).to_numpy(dtype="float64", na_value=np.inf)
    return w["slept_after"].to_numpy() & (run < futile_run_ns)


def pair_table(model, th: dict) -> pd.DataFrame:
    """One row per (cpu, task pid) with switches, kworker_preemptions, futile_wakeups."""
    s = model.events.switch
    cols = ["cpu", "pid", "switches", "kworker_preemptions", "wakeups", "futile_wakeups"]
    if s is None or len(s) == 0:
        return pd.DataFrame(columns=cols)
    pk = _kworker_of(s["prev_comm"].array)
    nk = _kworker_of(s["next_comm"].array)
    prev_pid = s["prev_pid"].to_numpy()
    next_pid = s["next_pid"].to_numpy()
    to_task = pk & ~nk & (next_pid != 0)
    to_kw = ~pk & nk & (prev_pid != 0)
    alt = to_task | to_kw
    task = np.where(to_task, next_pid, prev_pid)
    if "prev_state_str" in s.columns:
        preempted = (s["prev_state_str"] == "R+").to_numpy()
    else:
        preempted = np.zeros(len(s), dtype=bool)
    df = pd.DataFrame(
        {"cpu": s["cpu"].to_numpy()[alt], "pid": task[alt], "kp": (to_task & preempted)[alt]}
    )
    per = df.groupby(["cpu", "pid"]).agg(switches=("kp", "size"), kworker_preemptions=("kp", "sum"))
    w = model.wakeups
    fut = futile_mask(w, th["storm_futile_run_us"] * 1000)
    # only the pairs above are joined: group the wake-ups of their tasks alone
    wpid = w["wakee_pid"].to_numpy()
    mine = np.isin(wpid, per.index.get_level_values("pid"))
    wf = (
        pd.DataFrame({"cpu": w["chosen_cpu"].to_numpy()[mine], "pid": wpid[mine], "f": fut[mine]})
        .groupby(["cpu", "pid"])
        .agg(wakeups=("f", "size"), futile_wakeups=("f", "sum"))
    )
    del fut, wpid, mine
    per = per.join(wf, how="left").fillna({"wakeups": 0, "futile_wakeups": 0})
    per = per.astype({"wakeups": np.int64, "futile_wakeups": np.int64})
    return per.reset_index()


def detect(trace, model, th: dict) -> list[Finding]:
    per = pair_table(model, th)
    if len(per) == 0:
        return []
    dur_s = max(model.duration_ns, 1) / 1e9
    per["switches_per_s"] = per["switches"] / dur_s
    per["preemptions_per_s"] = per["kworker_preemptions"] / dur_s
    per["futile_share"] = per["futile_wakeups"] / per["wakeups"].clip(lower=1)
    names = _names(model)
    from ..model.tasks import USER, name_class

    user = np.array(
        [name_class(names.get(int(p), "?"), int(p)) == USER for p in per["pid"].to_numpy()],
        dtype=bool,
    )  # per task, not per event
    hit = per[
        user
        & (per["switches_per_s"] >= th["storm_min_switches_per_s"])
        & (per["preemptions_per_s"] >= th["storm_min_preemptions_per_s"])
        & (per["futile_share"] >= th["storm_min_futile_share"])
    ]
    if len(hit) == 0:
        return []
    hit = hit.sort_values("kworker_preemptions", ascending=False)
    top = [
        {
            "cpu": int(r.cpu),
            "pid": int(r.pid),
            "comm": names.get(int(r.pid), "?"),
            "switches": int(r.switches),
            "switches_per_s": round(float(r.switches_per_s), 1),
            "kworker_preemptions": int(r.kworker_preemptions),
            "wakeups": int(r.wakeups),
            "futile_wakeups": int(r.futile_wakeups),
            "futile_share": round(float(r.futile_share), 4),
        }
        for r in hit.head(10).itertuples(index=False)
    ]
    worst = hit.iloc[0]
    kw = _kworkers_on(model, int(worst["cpu"]), int(worst["pid"]))
    metrics = {
        "switches": int(hit["switches"].sum()),
        "switches_per_s": round(float(worst["switches_per_s"]), 1),
        "kworker_preemptions": int(hit["kworker_preemptions"].sum()),
        "futile_wakeups": int(hit["futile_wakeups"].sum()),
        "futile_share": round(float(worst["futile_share"]), 4),
        "cpu": int(worst["cpu"]),
        "task": {"pid": int(worst["pid"]), "comm": names.get(int(worst["pid"]), "?")},
        "kworkers": kw,
        "futile_run_us": th["storm_futile_run_us"],
    }
    sev = "high" if worst["preemptions_per_s"] >= th["storm_high_preemptions_per_s"] else "medium"
    title = (
        f"{names.get(int(worst['pid']), '?')} (pid {int(worst['pid'])}) and kworkers "
        f"alternate on CPU {int(worst['cpu'])} at {worst['switches_per_s']:.0f} "
        f"switches/s; kworkers preempted {int(worst['kworker_preemptions'])} times; "
        f"{100 * worst['futile_share']:.0f}% of the task's wake-ups there were futile"
    )
    # evidence: a kworker preemption by the task in the middle of the trace
    s = model.events.switch
    sel = (
        np.flatnonzero(
            (s["cpu"].to_numpy() == worst["cpu"])
            & (s["next_pid"].to_numpy() == worst["pid"])
            & (s["prev_state_str"] == "R+").to_numpy()
            & _kworker_of(s["prev_comm"].array)
        )
        if "prev_state_str" in s
        else []
    )
    ev_at = None
    if len(sel):
        t = int(s["ts"].iloc[sel[len(sel) // 2]])
        ev_at = {
            "t0": t - 60_000,
            "t1": t + 60_000,
            "cpus": [int(worst["cpu"])],
            "pids": [int(worst["pid"])],
            "focus_ts": t,
        }
    return [Finding(NAME, sev, title, metrics, top, evidence_at=ev_at)]


def _names(model) -> dict[int, str]:
    s = model.events.switch
    d = pd.DataFrame({"pid": s["next_pid"].to_numpy(), "comm": s["next_comm"].array})
    last = d.drop_duplicates("pid", keep="last")
    return {int(p): str(c) for p, c in zip(last["pid"], last["comm"])}


def _kworkers_on(model, cpu: int, pid: int) -> list[dict]:
    s = model.events.switch
    m = (
        (s["cpu"].to_numpy() == cpu)
        & (s["next_pid"].to_numpy() == pid)
        & _kworker_of(s["prev_comm"].array)
    )
    vc = s["prev_comm"][m].astype(str).value_counts().head(5)
    return [{"comm": k, "switches_to_task": int(v)} for k, v in vc.items()]
