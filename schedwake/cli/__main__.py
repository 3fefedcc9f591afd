"""``python -m schedwake.cli``: the ``schedwake`` command."""

from . import main

main()
