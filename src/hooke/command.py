"""The ``hooke`` command's entry point (``[project.scripts]`` and ``python -m hooke``).

Contract: runs :func:`hooke.cli.main`. Importing the command line (Typer, Rich and hooke's own
command modules: most of a second) happens here, inside ``main``, so that a Ctrl-C in that time
is the same one line and exit 130 as a Ctrl-C later, not a KeyboardInterrupt traceback from the
import. (The interpreter's own start and ``import hooke``, NumPy's import, come before any of
hooke's code runs: a Ctrl-C in that first tenth of a second or so is still Python's traceback.)
"""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from .cli import main as command_line
    except KeyboardInterrupt:  # nothing has run yet, so nothing is lost
        sys.stderr.write("error: interrupted\n")
        raise SystemExit(130) from None
    command_line()
