"""What to sweep and how: :class:`SweepSettings`, validated the same from the API, the CLI and
sweep files, and the command line's syntax for a path's values (:func:`parse_param`).

Values of a path:

- a list of values: an axis of the grid (every combination; the first path varies slowest), or
  in random mode the choices, one drawn uniformly per member;
- a range ``{range = [lo, hi], log = false}`` (random mode only): uniform in [lo, hi), or
  log-uniform with ``log = true`` (then lo > 0); for an integer builder parameter (``n``,
  ``nx`` …) the draws are rounded to integers in [lo, hi].
  Random mode draws ``random`` members from ``numpy.random.default_rng(seed)``, member by member,
  path by path in the order given.

``params`` is one grid (a dict) or a list of grids whose members are concatenated, each grid
naming the same paths: seed 003's study is k_c ∈ {0, …, 0.04} at β_c = 0.2 followed by
β_c ∈ {0, …, 0.4} at k_c = 0, 10 members. The table has one row per member in this order.

On the command line (:func:`parse_param`): ``PATH=v1,v2,…`` (each value read as a TOML value:
``1e3``, ``true``, ``[0.0, -9.81]``, ``"text"``; anything else is a plain string such as
``rk4``; commas inside brackets belong to the value), ``PATH=lo:hi`` and ``PATH=log:lo:hi``;
on a sweep file's grids a ``--param`` replaces (or adds) that path in every grid.

What the paths mean, and the checks of each value against the scene, are
:mod:`hooke.sweep.planning`'s.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import HookeInputError, format_value, is_number, python_scalars
from ..io.pydantic_errors import validation_errors
from ..io.scene_file import parse_value
from .table import COLUMNS, METRICS

_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


@dataclass(frozen=True)
class Range:
    """A range to draw from in random mode: uniform in [lo, hi), log-uniform with ``log``;
    rounded to integers in [lo, hi] when ``integer``."""

    lo: float
    hi: float
    log: bool = False
    integer: bool = False

    def draw(self, rng: np.random.Generator):
        if self.log:
            value = math.exp(rng.uniform(math.log(self.lo), math.log(self.hi)))
        else:
            value = float(rng.uniform(self.lo, self.hi))
        if self.integer:
            low, high = self.ends()
            return min(max(int(round(value)), low), high)
        return value

    def ends(self) -> list:
        return [math.ceil(self.lo), math.floor(self.hi)] if self.integer else [self.lo, self.hi]


def _range_problem(lo: float, hi: float, log: bool) -> str | None:
    """What is wrong with a range's finite ends lo, hi (None: nothing)."""
    if not lo < hi:
        return "must have lo < hi"
    if log and lo <= 0:
        return "a log range needs lo > 0"
    return None


def _column_clash(path: str) -> str | None:
    """The problem of a path that is also a column of the summary table (None: it is not)."""
    if path in COLUMNS:
        return (f"is also a column of the summary table; use the dotted form "
                f"(parameters.{path} or options.{path})")
    return None


def _plain(value, where: str):
    """``value`` as a JSON-able Python value (NumPy scalars and arrays unwrapped), or an input
    error."""
    if isinstance(value, (np.generic, np.ndarray)):
        value = value.tolist()
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(item, where) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item, where) for key, item in value.items()}
    raise HookeInputError(where, "values must be numbers, strings, booleans or lists of them", value)


def _axis(path: str, spec, random: int | None):
    """A path's values: a list, or a :class:`Range` (random mode only)."""
    where = f"params.{path}"
    if isinstance(spec, Range):  # settings validated once already (a sweep file's)
        spec = {"range": [spec.lo, spec.hi], "log": spec.log}
    if isinstance(spec, dict):
        if set(spec) - {"range", "log"} or "range" not in spec:
            raise HookeInputError(where, "a range is {range = [lo, hi], log = false}", spec)
        ends, log = spec["range"], spec.get("log", False)
        if (not isinstance(ends, (list, tuple)) or len(ends) != 2
                or not all(is_number(end) and math.isfinite(end) for end in ends)):
            raise HookeInputError(f"{where}.range", "must be [lo, hi], two finite numbers", ends)
        if not isinstance(log, (bool, np.bool_)):
            raise HookeInputError(f"{where}.log", "must be true or false", log)
        problem = _range_problem(*ends, log)
        if problem:
            raise HookeInputError(f"{where}.range", problem, list(ends))
        lo, hi = ends
        if random is None:
            raise HookeInputError(where, "a range needs random mode (random = N, --random N); "
                                  "a grid takes a list of values", {"range": list(ends), "log": log})
        return Range(float(lo), float(hi), bool(log))
    if isinstance(spec, np.ndarray) and spec.ndim:  # np.linspace(…): its values (rows) in turn
        spec = list(spec)
    if not isinstance(spec, (list, tuple)) or not spec:
        raise HookeInputError(where, "must be a non-empty list of values or a range "
                              "{range = [lo, hi], log = false}", spec)
    return [_plain(value, where) for value in spec]


# A failed member runs again at most this many times: retries are for a worker lost or a flaky
# machine; a member that fails the same way each time ran a billion times (issue 15).
MAX_RETRIES = 10
MAX_TIMEOUT = 1e7  # s a member may run (116 days): waiting longer overflowed the OS's time


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SweepSettings(Strict):
    """What to sweep and how; validated the same from the API, the CLI and sweep files.
    ``params`` (one grid or a list of grids) becomes a list of grids. Strict: True is not a
    count nor 1 a flag, 2.0 is not a count."""

    model_config = ConfigDict(extra="forbid", strict=True)
    params: dict[str, Any] | list[dict[str, Any]]
    random: Annotated[int, Field(ge=1)] | None = None
    seed: Annotated[int, Field(ge=0)] = 0
    retries: Annotated[int, Field(ge=0, le=MAX_RETRIES)] = 0
    timeout: Annotated[float, Field(gt=0, le=MAX_TIMEOUT, allow_inf_nan=False)] | None = None
    summary_only: bool = False
    metric: Literal[METRICS] = "energy_error"  # type: ignore[valid-type]
    save_every: Annotated[int, Field(ge=1)] = 1

    @model_validator(mode="before")
    @classmethod
    def _grid_tables(cls, data):
        """``params`` that is neither a table nor a list of tables, or whose paths are not all
        strings: one line, not one per branch of the type's union
        (``params.list[dict[str,any]][0]: …``)."""
        if isinstance(data, dict) and "params" in data:
            params = data["params"]
            grids = [params] if isinstance(params, dict) else params
            if not (isinstance(grids, list) and all(
                    isinstance(grid, dict) and all(isinstance(path, str) for path in grid)
                    for grid in grids)):
                raise ValueError("params: must be a table of parameter paths ([params]) or a "
                                 f"list of them, got {format_value(params)}")
        return data

    @model_validator(mode="after")
    def _axes(self):
        grids = self.params if isinstance(self.params, list) else [self.params]
        if not grids:
            raise ValueError("params: must list at least one grid, got []")
        for grid in grids:
            if not grid:
                raise ValueError("params: must name at least one parameter path, got {}")
            if set(grid) != set(grids[0]):
                raise ValueError(f"params: every grid must name the same paths as the first "
                                 f"({', '.join(grids[0])}), got {sorted(grid)}")
        if self.random is not None and len(grids) > 1:
            raise ValueError(f"random: draws from one grid, not from a list of {len(grids)}, "
                             f"got {self.random}")
        for path in grids[0]:
            if not _PATH.fullmatch(path):
                raise ValueError(f"params: a path is NAME or dotted.NAME, got {format_value(path)}")
            if clash := _column_clash(path):
                raise ValueError(f"params.{path}: {clash}, got {path!r}")
        try:
            self.params = [{path: _axis(path, grid[path], self.random) for path in grids[0]}
                           for grid in grids]
        except HookeInputError as error:
            raise ValueError(str(error)) from None
        return self

    @property
    def paths(self) -> list[str]:
        return list(self.params[0])


def validated(model: type[BaseModel], data: dict[str, Any]):
    """``model`` validated from ``data``; every problem one line of a HookeInputError. NumPy's
    scalars count as Python's (``np.int64(2)`` is a count, as everywhere in hooke), which
    pydantic's strict mode would refuse."""
    try:
        return model.model_validate(python_scalars(data))
    except ValidationError as error:
        raise validation_errors(error, model) from None


def parse_params(texts: list[str], random: int | None) -> list[tuple[str, list | dict]]:
    """Every ``--param`` as (PATH, values) (:func:`parse_param`); a PATH given twice, or a range
    outside random mode (``random`` None: neither ``--random`` nor the sweep file's), is refused
    naming the flag and the text as typed (the settings' check named ``params.PATH`` and showed
    the range as a dict nobody typed)."""
    given: dict[str, list | dict] = {}
    for text in texts:
        path, values = parse_param(text)
        if path in given:
            raise HookeInputError(f"--param {path}", "given more than once", text)
        if isinstance(values, dict) and random is None:
            raise HookeInputError(f"--param {path}", "a range needs random mode (--random N); a "
                                  f"grid takes a list of values ({path}=v1,v2,…)",
                                  text.partition("=")[2].strip())
        given[path] = values
    return list(given.items())


def parse_param(text: str) -> tuple[str, list | dict]:
    """``PATH=v1,v2`` → (PATH, [v1, v2]); ``PATH=lo:hi`` / ``PATH=log:lo:hi`` → (PATH, range).
    What the text alone shows wrong is refused naming ``--param`` and the text as typed: the
    syntax, the path (:data:`_PATH`, a column of the table), a range's ends, brackets that do
    not close."""
    path, sign, spec = text.partition("=")
    path, spec = path.strip(), spec.strip()
    if not sign or not path or not spec:
        raise HookeInputError("--param", "expected PATH=VALUES (e.g. stiffness=1e3,1e4 or "
                              "stiffness=log:1e3:1e5)", text)
    if not _PATH.fullmatch(path):
        raise HookeInputError("--param", "a path is NAME or dotted.NAME", text)
    if clash := _column_clash(path):
        raise HookeInputError(f"--param {path}", clash, text)
    ranged = re.fullmatch(r"(log:)?([^:,\[\]]+):([^:,\[\]]+)", spec)
    if ranged:
        ends = [parse_value(part.strip(), f"--param {path}") for part in ranged.group(2, 3)]
        if not all(isinstance(end, (int, float)) and not isinstance(end, bool)
                   and math.isfinite(end) for end in ends):
            raise HookeInputError(f"--param {path}", "a range is lo:hi or log:lo:hi with finite "
                                  "numbers", spec)
        if problem := _range_problem(*ends, bool(ranged.group(1))):
            raise HookeInputError(f"--param {path}", problem, spec)
        return path, {"range": ends, "log": bool(ranged.group(1))}
    values, depth, start = [], 0, 0
    for index, char in enumerate(spec + ","):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth < 0 or (index == len(spec) and depth):  # "[1,2" was no value at all
            raise HookeInputError(f"--param {path}", "has a [ without its ] or a ] without "
                                  "its [", spec)
        if char == "," and depth == 0:
            item = spec[start:index].strip()
            if not item:
                raise HookeInputError(f"--param {path}", "has an empty value", spec)
            values.append(parse_value(item, f"--param {path}"))
            start = index + 1
    return path, values
