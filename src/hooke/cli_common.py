"""What the commands of ``hooke`` share: where they print, and how they fail.

Contract: ``console`` is stdout (a command's results), ``errors`` is stderr (errors, notes and
progress bars); :func:`fail` prints each line of a message as ``error: line`` on stderr and exits
with ``code`` (2: bad input, the default), never with a traceback; :func:`output_directory`
creates a directory or fails naming the flag it came from.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

# Piped or logged output gets room for the wide tables (verify, sweep) instead of 80 columns.
console = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 120)
errors = Console(stderr=True)


def print_error(line: str) -> None:
    """``error: line`` on stderr; the line is escaped, as a value such as ``[nan, 0.0]`` would
    otherwise be taken for Rich markup and vanish."""
    errors.print(f"[bold red]error:[/] {escape(line)}", highlight=False, markup=True, soft_wrap=True)


def fail(message: str, code: int = 2) -> None:
    """Each line of ``message`` as an error on stderr, then exit with ``code``."""
    for line in str(message).splitlines():
        print_error(line)
    raise typer.Exit(code)


def output_directory(path: Path, flag: str = "--out") -> Path:
    """``path`` as a directory (created if missing); a clear error when it cannot be one."""
    if path.exists() and not path.is_dir():
        fail(f"{flag}: is an existing file, not a directory, got {str(path)!r}")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        fail(f"{flag}: cannot create the directory ({error.strerror or error}), got {str(path)!r}")
    return path
