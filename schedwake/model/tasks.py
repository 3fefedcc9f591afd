"""Classes of tasks and wake-up contexts (docs/detectors.md, 'Semantics the
detectors rely on', waker class).

Classification works on the distinct names (a categorical's categories), never per
event, and is broadcast with the category codes.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import numpy.typing as npt
import pandas as pd

from ..schema import FLAG_HARDIRQ, FLAG_NMI, FLAG_SOFTIRQ

#: Waker / task classes.
PERCPU_KTHREAD = "percpu_kthread"
UNBOUND_KWORKER = "unbound_kworker"
IRQ = "irq"
IDLE = "idle"
KTHREAD = "kthread"
USER = "user"
CLASSES = (PERCPU_KTHREAD, UNBOUND_KWORKER, IRQ, IDLE, KTHREAD, USER)

#: Wake-up contexts, from ``common_flags``.
CONTEXTS = ("task", "softirq", "hardirq", "nmi", "unknown")

# kworker/N:M, kworker/N:MH, possibly cut at 15 chars or carrying "+desc"/"-desc".
_BOUND_KWORKER = re.compile(r"^kworker/(\d+):\d+H?(?:[-+].*)?$|^kworker/(\d+):\d*$")
_UNBOUND_KWORKER = re.compile(r"^kworker/u\d+:\d*")
_RESCUER = re.compile(r"^kworker/R-")
_PERCPU = re.compile(
    r"^(?:ksoftirqd|migration|cpuhp|rcuc|idle_inject|watchdog|"
    r"rcuop|posixcputmr|irq_work|ktimers)/(\d+)$"
)
# Other kernel threads known by name (no reliable marker in a trace).
_KTHREAD = re.compile(
    r"^(?:kthreadd|rcu_\w+|rcu_tasks\w*|kswapd\d*|kcompactd\d*|khugepaged|ksmd|"
    r"kworker/.*|kblockd|kintegrityd|kdevtmpfs|kauditd|khungtaskd|oom_reaper|"
    r"writeback|kthrotld|xfsaild/.*|xfs-.*|jbd2/.*|ext4-.*|irq/\d+-.*|scsi_\w+|"
    r"kvfree_rcu_reclaim|watchdogd|pool_workqueue_release|hwrng|kstrp|"
    r"ipv6_addrconf|zswap\w*|loop\d+|nvme\w*|md\w*_raid\w*|dm[-_].*|btrfs-.*|"
    r"card\d+-crtc\d+|napi/.*|psimon|ecryptfs-kthread|migration/\d+|"
    r"ksoftirqd/\d+|cpuhp/\d+|kcryptd.*|edac-poller|ttm|charger_manager)$"
)


def kthread_cpu(comm: str) -> int:
    """The CPU a per-CPU kthread's name binds it to, or -1."""
    m = _BOUND_KWORKER.match(comm)
    if m:
        return int(m.group(1) if m.group(1) is not None else m.group(2))
    m = _PERCPU.match(comm)
    if m:
        return int(m.group(1))
    return -1


def name_class(comm: str, pid: int | None = None) -> str:
    """Class of a task from its name alone (no interrupt context)."""
    return IDLE if pid == 0 else _class_of_name(comm)


@functools.lru_cache(maxsize=1 << 16)
def _class_of_name(comm: str) -> str:
    """:func:`name_class` of a name (asked per task: thousands of tasks share a few
    names, each matched once)."""
    if comm in ("<idle>", "swapper") or comm.startswith("swapper/"):
        return IDLE
    if kthread_cpu(comm) >= 0:
        return PERCPU_KTHREAD
    if _UNBOUND_KWORKER.match(comm):
        return UNBOUND_KWORKER
    if _RESCUER.match(comm) or _KTHREAD.match(comm):
        return KTHREAD
    return USER


def context_codes(flags: pd.Series | npt.ArrayLike) -> np.ndarray:
    """Index into CONTEXTS for each ``common_flags`` value (null -> unknown)."""
    f = pd.array(flags, dtype="UInt8") if not isinstance(flags, pd.Series) else flags
    arr = np.asarray(pd.Series(f).fillna(255).astype(np.int64))
    out = np.zeros(len(arr), dtype=np.int8)
    out[(arr & FLAG_SOFTIRQ) != 0] = 1
    out[(arr & FLAG_HARDIRQ) != 0] = 2
    out[(arr & FLAG_NMI) != 0] = 3
    out[arr == 255] = 4
    return out


def classify(
    comm: pd.Categorical | pd.Series, pid: np.ndarray, ctx: np.ndarray | None = None
) -> tuple[pd.Categorical, np.ndarray]:
    """Vectorized class (categorical of CLASSES) and bound CPU (-1 if none) of tasks.

    ``comm``: categorical names; ``pid``: pids; ``ctx``: CONTEXTS codes, where a
    softirq/hardirq/NMI context makes the class ``irq`` whatever task was current.
    """
    cat = pd.Categorical(comm)
    cats = list(cat.categories)
    cls_of_cat = np.array(
        [CLASSES.index(name_class(str(c))) for c in cats] + [CLASSES.index(USER)], dtype=np.int8
    )
    cpu_of_cat = np.array([kthread_cpu(str(c)) for c in cats] + [-1], dtype=np.int32)
    codes = np.asarray(cat.codes)
    codes = np.where(codes < 0, len(cats), codes)
    cls = cls_of_cat[codes]
    kcpu = cpu_of_cat[codes]
    pid = np.asarray(pid)
    cls = np.where(pid == 0, CLASSES.index(IDLE), cls).astype(np.int8)
    if ctx is not None:
        irq = (ctx == 1) | (ctx == 2) | (ctx == 3)
        cls = np.where(irq, CLASSES.index(IRQ), cls).astype(np.int8)
    return pd.Categorical.from_codes(cls, categories=list(CLASSES)), kcpu
