"""Types of the compiled trace.dat and perf.data reader (_tdread.c, its docstrings)."""

from collections.abc import Callable, Collection, Iterator
from typing import Any

from _typeshed import StrOrBytesPath

#: (kernel release, kernel build id) -> kallsyms text, or None when there is none
Kallsyms = Callable[[str | None, str | None], bytes | None]

class TraceDatError(ValueError): ...

def read(
    path: StrOrBytesPath,
    events: Collection[str] | None = None,
    progress: Callable[[float], object] | None = None,
    jobs: int | None = None,
    kallsyms: Kallsyms | None = None,
    time_range: tuple[int, int | None] | None = None,
) -> dict[str, Any]: ...
def index(path: StrOrBytesPath) -> dict[str, Any]: ...

class Stream(Iterator[dict[str, Any]]):
    def __next__(self) -> dict[str, Any]: ...

def stream(
    path: StrOrBytesPath,
    events: Collection[str] | None = None,
    batch_rows: int = 1048576,
    kallsyms: Kallsyms | None = None,
) -> Stream: ...
