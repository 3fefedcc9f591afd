"""The one exception type schedwake raises for input it cannot use."""


class TraceError(Exception):
    """A trace (or topology, or rules) file cannot be read or judged.

    ``str(err)`` is one line that names the file and says what is wrong, fit to be
    printed as is; the CLI prints it and exits with code 2.
    """

    def __init__(self, path, problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")
