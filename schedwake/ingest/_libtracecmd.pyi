"""Types of the compiled libtracecmd binding (_libtracecmd.c, its docstrings)."""

from collections.abc import Callable, Collection
from typing import Any

class TraceDatError(ValueError): ...

def read(
    path: str,
    events: Collection[str] | None = None,
    progress: Callable[[float], object] | None = None,
) -> dict[str, Any]: ...
