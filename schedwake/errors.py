"""The exception types schedwake raises for input it cannot use."""

from __future__ import annotations

import os


class TraceError(Exception):
    """A trace (or topology, or rules) file cannot be read or judged.

    ``str(err)`` is one line that names the file and says what is wrong, fit to be
    printed as is; the CLI prints it and exits with code 2.
    """

    def __init__(self, path: str | os.PathLike[str], problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")

    def __reduce__(self) -> tuple:
        # (pickled as it is, whatever a subclass's __init__ takes: a Dask worker that
        # finds a part of a file unreadable returns the error to the client)
        return _rebuilt, (type(self), self.args, dict(self.__dict__))


def _rebuilt(cls: type[TraceError], args: tuple, state: dict) -> TraceError:
    """A TraceError (of any subclass) unpickled: its message and fields, no __init__."""
    err = cls.__new__(cls)
    err.args = args
    err.__dict__.update(state)
    return err


class OptionError(TraceError, ValueError):
    """A parameter's value is out of range: a window that would cut the trace into
    billions of windows, a NaN threshold, a CPU the trace does not have.

    ``param`` is the parameter's name as the API spells it (``window_s``), ``value`` what
    was given (as text), ``problem`` why it is refused; ``str(err)`` is
    ``"window_s=1e-09: a window must be ..."`` (``"--llc 0-x: ..."`` when ``param`` is an
    option's name already); with ``value`` None (the problem quotes what was wrong:
    ``unknown threshold 'x'``) it is ``"thresholds: unknown threshold 'x' ..."``. The CLI
    names its option instead (``--window 1e-09: ...``, ``--threshold: ...``: the one
    ``OPTION_OF`` mapping of schedwake/cli/common.py) and exits with code 2. It is a ValueError for
    callers of the API and a TraceError for code that turns bad input into an error row
    or verdict.
    """

    def __init__(self, param: str, value: object, problem: str):
        self.param = param
        #: the value as a message shows it: quoted when it is empty or blank; None when
        #: the message names no value (the problem says what was wrong)
        self.value: str | None = None
        if value is not None:
            text = str(value)
            self.value = text if text.strip() and text == text.strip() else repr(text)
        # an option (--llc) is named as on a command line, a parameter as in a call
        if self.value is None:
            named = param
        elif param.startswith("-"):
            named = f"{param} {self.value}"
        else:
            named = f"{param}={self.value}"
        super().__init__(named, problem)
