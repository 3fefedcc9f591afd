"""schedwake: find Linux scheduler wake-up pathologies in kernel traces.

Public API::

    import schedwake
    trace = schedwake.load("trace.dat")          # Trace
    trace.table("sched_waking")                   # pyarrow.Table
    trace.df("sched_switch")                      # pandas.DataFrame
    trace.meta                                    # TraceMeta: cpus, clock, lost events, ...
    result = schedwake.analyze(trace)             # Analysis: findings, metrics, caveats
    schedwake.compare(["base.dat", "new.dat"])    # mmtests table, plots, HTML
    schedwake.gate("base*.dat", "new*.dat")       # CI verdict: exit_code 0/1/2
    schedwake.batch(["runs/**/*.dat"], "out/")    # many traces on Dask -> Parquet dataset
    schedwake.BatchDataset("out/").traces         # ... read back (pandas)
    schedwake.profile(schedwake.load("perf.data"))  # perf record -g: self/children per function
    schedwake.compare_profiles({"base": [p1, p2, p3], "new": [q1, q2, q3]})  # what changed

Every function raises :class:`TraceError` (one line naming the file and the problem)
for input it cannot use.
"""

from .analysis import Analysis, analyze
from .batch import BatchDataset, batch
from .compare import compare
from .errors import TraceError
from .gate import gate
from .profile import Profile, profile
from .profile_compare import ProfileComparison, compare_profiles
from .trace import Trace, TraceMeta, load
from .version import __version__

__all__ = [
    "load",
    "analyze",
    "compare",
    "gate",
    "batch",
    "profile",
    "compare_profiles",
    "Analysis",
    "BatchDataset",
    "Profile",
    "ProfileComparison",
    "Trace",
    "TraceMeta",
    "TraceError",
    "__version__",
]
