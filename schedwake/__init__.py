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

from __future__ import annotations

import importlib as _importlib
import sys as _sys
import types as _types
from typing import TYPE_CHECKING

from .errors import TraceError
from .version import __version__

if TYPE_CHECKING:
    from .analysis import Analysis, analyze
    from .batch import BatchDataset, batch
    from .compare import compare
    from .gate import gate
    from .profile import Profile, profile
    from .profile.compare import ProfileComparison, compare_profiles
    from .trace import Trace, TraceMeta, load

#: The API's names and their modules, imported at the first use of a name (PEP 562), not
#: with the package: ``schedwake --version``, ``--help`` or an option error (every
#: ``schedwake.*`` import runs this file first) then needs neither pandas nor pyarrow.
_LAZY = {
    "load": ".trace",
    "Trace": ".trace",
    "TraceMeta": ".trace",
    "analyze": ".analysis",
    "Analysis": ".analysis",
    "compare": ".compare",
    "gate": ".gate",
    "batch": ".batch",
    "BatchDataset": ".batch",
    "profile": ".profile",
    "Profile": ".profile",
    "compare_profiles": ".profile.compare",
    "ProfileComparison": ".profile.compare",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


class _Package(_types.ModuleType):
    """The package's module type: ``compare``, ``gate``, ``batch`` and ``profile`` name
    both a function of the API and a submodule, and importing a submodule sets the
    package's attribute of its name to the module. The function keeps the name (as it
    did when this file imported them all): ``schedwake.compare`` is the function
    whichever of its modules was imported first; the module is ``sys.modules``'s."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _LAZY and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package

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
