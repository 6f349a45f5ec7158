"""What the commands of ``hooke`` share: where they print, how they fail, loading a scene by
name or file, reading ``--option KEY=VALUE``.

Contract: ``console`` is stdout (a command's results), ``errors`` is stderr (errors, notes and
progress bars); :func:`fail` prints each line of a message as ``error: line`` on stderr and exits
with ``code`` (2: bad input, the default), never with a traceback; :func:`output_directory`
creates a directory, proves it writable or fails naming the flag it came from, and
:func:`output_files` refuses output files that may not be replaced; :func:`load_scene` and
:func:`parse_option` raise :class:`HookeInputError` for bad input.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from .errors import HookeInputError
from .scenes import names as scene_names

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
    """``path`` as a directory (created if missing) that a file can be written in; a clear error
    naming ``flag`` when it cannot be one (:func:`hooke.io.outputs.writable_directory`)."""
    from .io.outputs import writable_directory

    try:
        return writable_directory(path, flag)
    except HookeInputError as error:
        fail(str(error))


def output_files(paths, flag: str = "--out") -> None:
    """Fail naming ``flag`` and the path when one of ``paths``, a command's output files, is
    one a new file may not replace: a directory, a FIFO, a device, a read-only file
    (:func:`hooke.io.outputs.check_replaceables`); called before the command's work."""
    from .io.outputs import check_replaceables

    try:
        check_replaceables(paths, flag)
    except HookeInputError as error:
        fail(str(error))


def empty_argument(args: list[str]) -> str | None:
    """The one line refusing an empty argument (``--out ""``, ``--out=``, ``DIR`` as ""), or
    None: typer reads an empty path as ".", so `hooke run --out ""` wrote into the current
    directory, and `hooke run --resume ""` resumed whatever run was there."""
    for index, arg in enumerate(args):
        flag, equals, value = arg.partition("=")
        if arg == "" or (equals and flag.startswith("--") and not value):
            name = flag if arg else (args[index - 1] if index and args[index - 1].startswith("-")
                                     else f"argument {index + 1}")
            return f"{name}: must not be empty (an empty path is the current directory), got ''"
    return None


def load_scene(scene_or_file: str):
    from .io.scene_file import builtin_scene, load

    if scene_or_file in scene_names():
        return builtin_scene(scene_or_file)
    if scene_or_file.endswith(".toml") or Path(scene_or_file).exists():
        return load(scene_or_file)
    raise HookeInputError("SCENE_OR_FILE", "is neither a built-in scene "
                          f"({', '.join(scene_names())}) nor a scene file", scene_or_file)


def parse_option(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` of ``--option``: VALUE as ``--param`` reads it (``parse_value``: 1e-8, 25,
    inf, a word …), and in any case true/false as a bool and none/null as None (Python options
    take None, which TOML has no word for)."""
    from .io.scene_file import parse_value

    key, sep, value = text.partition("=")
    key, value = key.strip(), value.strip()
    if not sep or not key:
        raise HookeInputError("--option", "must be KEY=VALUE", text)
    words = {"true": True, "false": False, "none": None, "null": None}
    return key, words[value.lower()] if value.lower() in words else parse_value(value)
