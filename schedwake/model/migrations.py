"""The migrations table: every ``sched_migrate_task`` with its cause and topology class.

Causes:

``wakeup``
    the migration belongs to a wake-up (see :mod:`.wakeups`): the next of our events
    on the CPU of a ``sched_waking`` of the same pid, in the same current task.
``fork_exec``
    fork balancing (the next of our events on that CPU is the ``sched_wakeup_new`` of
    the pid, fired by the same task: wake_up_new_task() chose the CPU), or exec
    balancing (the task reaches ``sched_process_exec`` without being switched out
    after the migration).
``load_balance``
    pulled by the destination CPU (newly idle and periodic balancing run on the CPU
    that pulls: the event fires there), or moved by a stopper thread ``migration/N``
    (active balancing).
``other``
    the rest: pushes of RT/deadline tasks, NUMA balancing, affinity changes done in the
    caller's context. (Affinity changes of a running task go through ``migration/N``
    and are counted as load balance: the trace does not tell them apart.)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from . import tasks
from ._util import asof_index, take
from .events import Events, i64
from .wakeups import barrier_ts

if TYPE_CHECKING:
    from ..topology import Topology

CAUSES = ("wakeup", "load_balance", "fork_exec", "other")
_STOPPER = re.compile(r"^migration/\d+$")


def build(ev: Events, topo: Topology, mig_w: np.ndarray) -> pd.DataFrame:
    m = ev.migrate
    if m is None or len(m) == 0:
        return pd.DataFrame(
            {
                c: []
                for c in (
                    "ts",
                    "pid",
                    "comm",
                    "orig_cpu",
                    "dest_cpu",
                    "cause",
                    "topology_class",
                    "context_pid",
                    "context_comm",
                    "context_cpu",
                    "context",
                    "waking_index",
                )
            }
        )
    n = len(m)
    ts, cpu, pid = i64(m, "ts"), i64(m, "cpu"), i64(m, "pid")
    cpid = i64(m, "common_pid")
    orig, dest = i64(m, "orig_cpu"), i64(m, "dest_cpu")
    cause = np.full(n, CAUSES.index("other"), dtype=np.int8)

    # fork balancing: the next of our events on this CPU is the sched_wakeup_new of pid
    fork = np.zeros(n, dtype=bool)
    wn = ev.wakeup_new
    if wn is not None and len(wn):
        wts = i64(wn, "ts")
        wi = asof_index(ts, cpu, wts, i64(wn, "cpu"), "forward", allow_exact=True)
        b_ts = barrier_ts(ev, ts, cpu, "forward", allow_exact=True)  # includes wakeup_new
        fork = (
            (wi >= 0)
            & (take(i64(wn, "pid"), wi, -2) == pid)
            & (take(i64(wn, "common_pid"), wi, -2) == cpid)
            & (b_ts >= take(wts, wi, 0))
        )
    # exec balancing: the pid's next sched_process_exec comes before its next switch-out
    ex = ev.exec_
    if ex is not None and len(ex) and ev.switch is not None:
        ets = i64(ex, "ts")
        ei = asof_index(ts, pid, ets, i64(ex, "pid"), "forward", allow_exact=True)
        sts = i64(ev.switch, "ts")
        oi = asof_index(ts, pid, sts, i64(ev.switch, "prev_pid"), "forward", allow_exact=False)
        fork |= (ei >= 0) & (take(ets, ei, 0) < take(sts, oi, np.iinfo(np.int64).max))
    cause[fork] = CAUSES.index("fork_exec")

    comm = m["common_comm"].array
    stopper = np.array([bool(_STOPPER.match(str(c))) for c in comm.categories] + [False])
    codes = np.asarray(comm.codes)
    by_stopper = stopper[np.where(codes < 0, len(stopper) - 1, codes)]
    lb = (~fork) & ((cpu == dest) | by_stopper)
    cause[lb] = CAUSES.index("load_balance")
    wk = mig_w >= 0
    cause[wk] = CAUSES.index("wakeup")

    ctx = (
        tasks.context_codes(m["common_flags"])
        if "common_flags" in m.columns
        else np.full(n, 4, dtype=np.int8)
    )
    return pd.DataFrame(
        {
            "ts": ts,
            "pid": pid.astype(np.int32),
            "comm": m["comm"].array,
            "orig_cpu": orig.astype(np.int32),
            "dest_cpu": dest.astype(np.int32),
            "cause": pd.Categorical.from_codes(cause, categories=list(CAUSES)),
            "topology_class": topo.classify(orig, dest),
            "context_pid": cpid.astype(np.int32),
            "context_comm": comm,
            "context_cpu": cpu.astype(np.int32),
            "context": pd.Categorical.from_codes(ctx, categories=list(tasks.CONTEXTS)),
            "waking_index": mig_w,
        }
    )
