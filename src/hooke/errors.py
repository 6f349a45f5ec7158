"""Errors hooke raises for bad input.

Contract: every problem with user input is a :class:`HookeInputError` whose message is one line
(or one line per problem) of the form ``field: problem, got value``; every :class:`HookeError`'s
message is kept one line by :func:`one_line` (a file name holding a newline cannot split it).
The CLI turns it into exit code 2 without a traceback. Numerical failures during a run are
:class:`SimulationError`. The input primitives every module shares (``is_number``,
``is_count``, ``_numbers``, ``as_path`` …) live here too: this module imports nothing of hooke's, so any module may use them
(:mod:`hooke.checks` builds on them, and :mod:`hooke.motion`, which it imports, needs them).
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .limits import MAX_COUNT_OPTION


class HookeError(Exception):
    """Base class of every error hooke raises on purpose; its message is :func:`one_line`."""

    def __init__(self, message: str = "", *args):
        super().__init__(one_line(message), *args)


class HookeInputError(HookeError, ValueError):
    """Bad input: the message names the field and the offending value."""

    exit_code = 2  # the CLI's

    def __init__(self, field: str, problem: str, value: Any = None, *, show_value: bool = True):
        self.field = field
        self.problem = problem
        self.value = value
        self.show_value = show_value
        message = f"{field}: {problem}"
        if show_value:
            message += f", got {format_value(value)}"
        super().__init__(message)


class OutputWriteError(HookeInputError):
    """An output checked before the work could not be written after it (a full disk, an I/O
    error): named as bad input is, ``field: cannot write …``, but the input was good and the
    machine failed, so the CLI exits 1, not 2."""

    exit_code = 1


class HookeInputErrors(HookeInputError):
    """Several input problems reported at once (one line each)."""

    def __init__(self, problems: list[str]):
        self.problems = [one_line(problem) for problem in problems]
        self.field, self.value, self.show_value = None, None, False
        self.problem = "\n".join(self.problems)
        ValueError.__init__(self, self.problem)

    def __str__(self) -> str:
        return "\n".join(self.problems)


def raise_all(problems: list[HookeInputError]) -> None:
    """Raise ``problems`` found together: one as itself, several as one
    :class:`HookeInputErrors` (a line each); nothing when there are none."""
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise HookeInputErrors([str(problem) for problem in problems])


class CompleteRunError(HookeInputError):
    """A stored run given to resume has all its frames: nothing to continue (``hooke run
    --resume`` then finishes its outputs, which a kill during its last moments may have left
    unwritten)."""


class SimulationError(HookeError, RuntimeError):
    """A run could not continue (non-finite state, solver failure). ``advice``: what to change,
    where the run's usual advice (a smaller dt, another integrator) cannot help; else None."""

    advice: str | None = None


class StoreWriteError(SimulationError):
    """A run's trajectory file could not be written (a full disk, an I/O error): the run stopped,
    the file keeps the frames of its last complete flush (``frames_kept``) and, like every
    SimulationError of a run, ``result`` holds every frame computed."""

    def __init__(self, message: str, frames_kept: int):
        super().__init__(message)
        self.frames_kept = frames_kept


def is_number(value) -> bool:
    """A real number as scene files take one: an int or a float (NumPy's too), not a bool and
    not a string; the API is as strict. Nor is an int past float's range (10**400): every
    check converts with float(), which raises OverflowError for it."""
    if isinstance(value, int) and not isinstance(value, bool):
        return -sys.float_info.max <= value <= sys.float_info.max
    return isinstance(value, (float, np.integer, np.floating)) and not isinstance(value, np.bool_)


def _strict_array(value, kinds: str, accepts) -> np.ndarray | None:
    """``value`` (an array, or a number or nested sequence of them) as an array when every entry
    is of NumPy dtype kinds ``kinds`` or passes ``accepts``, else None: the API is as strict as
    scene files, so "1" and True are not numbers, nor 2.5 an index. A masked entry of a NumPy
    masked array is no number: NaN where floats are taken, else the array is refused."""
    if isinstance(value, np.ma.MaskedArray):  # its arithmetic returns masked arrays: unwrap
        if not np.ma.is_masked(value):
            value = value.data
        elif value.dtype.kind in "iuf" and "f" in kinds:
            value = value.astype(float).filled(np.nan)
        else:
            return None
    if isinstance(value, np.ndarray) and value.dtype.kind in kinds:
        return value
    try:
        items = np.asarray(value, dtype=object)
    except (TypeError, ValueError):
        return None
    return items if all(accepts(item) for item in items.reshape(-1)) else None


def _numbers(value) -> np.ndarray | None:
    array = _strict_array(value, "iuf", is_number)
    return None if array is None else array.astype(float)


def python_scalars(values: dict) -> dict:
    """``values`` with NumPy scalars as Python's (``np.int64(5)`` as 5): what a run stores as
    JSON (its parameters, its options) must read back as numbers, not as the strings
    ``json.dumps(default=str)`` makes of them."""
    return {key: value.item() if isinstance(value, np.generic) else value
            for key, value in values.items()}


def is_count(value) -> bool:
    """An integer (Python's or NumPy's), not a bool and not a float, however whole."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_count(field: str, value) -> None:
    """Raise HookeInputError naming ``field`` unless ``value`` is a count of iterations: an
    integer from 1 to :data:`hooke.limits.MAX_COUNT_OPTION`."""
    if not is_count(value) or not 1 <= value <= MAX_COUNT_OPTION:
        raise HookeInputError(field, f"must be an integer from 1 to {MAX_COUNT_OPTION}", value)


def as_path(value, field: str) -> Path:
    """``value`` (a str or an os.PathLike) as a Path; anything else (None, a number, bytes) and
    the empty string are bad input naming ``field``, not a TypeError from deep inside ``pathlib``
    nor the current directory; so are a PathLike whose ``__fspath__`` gives no str (an int: a
    TypeError from ``os.fspath``; bytes: from ``pathlib``) and a NUL byte, which no file name
    holds (ValueError from ``os.stat``)."""
    if not isinstance(value, (str, os.PathLike)) or not isinstance(_fspath(value), str):
        raise HookeInputError(field, "must be a path (a str or a pathlib.Path)", value)
    if os.fspath(value) == "":  # Path("") is ".", the current directory: shown so, it misled
        raise HookeInputError(field, "must not be empty (for the current directory give '.')", "")
    if "\0" in str(os.fspath(value)):
        raise HookeInputError(field, "must not contain a NUL byte", str(value))
    return Path(value)


def _fspath(value):
    """``os.fspath(value)``, or None when its ``__fspath__`` gives neither str nor bytes."""
    try:
        return os.fspath(value)
    except TypeError:
        return None


def collect(problems: list[str], check, *args, prefix: str = "", **kwargs):
    """``check(*args, **kwargs)``, but bad input is appended to ``problems`` (each line under
    ``prefix.``) and gives None instead of raising: how a whole file's problems are gathered."""
    try:
        return check(*args, **kwargs)
    except HookeInputError as error:
        lines = error.problems if isinstance(error, HookeInputErrors) else [str(error)]
        problems.extend(f"{prefix}.{line}" if prefix else line for line in lines)
        return None


def one_line(text) -> str:
    """``text`` (a str, or a path: ``str(text)``) with each character that is not printed as
    itself (a newline, a carriage return, a terminal's escape sequence) written as ``repr``
    writes it (``\\n``, ``\\r``, ``\\x1b``): a path such as ``$'a\\nb'`` in a message split a
    one-line error across two lines."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


MAX_SHOWN = 1000  # characters of a value in a message: a list of 10⁶ numbers would bury the line


def format_value(value: Any, most: int = MAX_SHOWN) -> str:
    """A value as an error message shows it: repr, NumPy arrays abbreviated, anything longer
    than ``most`` characters cut there (saying how long it was)."""
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    if isinstance(value, np.ndarray):  # a 0-d one as an array (it read as a plain number)
        text = np.array2string(value, separator=", ", threshold=8, precision=6)
        return f"array({text})" if value.ndim == 0 else text
    try:
        text = repr(value)
    except RecursionError:  # a TOML file's [a.a.a.…] thousands deep: repr recurses per level
        return f"a {type(value).__name__} nested too deeply to show"
    return cut(text, most)


MAX_NAME_SHOWN = 80  # characters of a name (a key, a field) in a message's path


def cut(text: str, most: int = MAX_NAME_SHOWN) -> str:
    """``text`` cut at ``most`` characters, saying how long it was: a key of 60,000 characters
    in a scene file or a viewer message was echoed whole in its error's path."""
    return text if len(text) <= most else f"{text[:most]}… ({len(text):,} characters)"
