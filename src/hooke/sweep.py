"""Parameter studies on Dask distributed: one simulation per member of a grid or a random sample.

    result = hooke.sweep("spring1d", {"spring.k": [1e3, 1e4, 1e5],
                                      "integrator": ["symplectic_euler", "rk4"]}, out="out/sweep")
    result.table            # one row per member (pandas DataFrame), also DIR/summary.{parquet,csv}

Parameter paths (keys of ``params``, ``--param PATH=…`` and a sweep file's ``[params]``):

- model paths, on every scene (a value replaces, it does not scale):
  ``spring.k`` the stiffness of every spring [N/m]; ``spring.damping`` the damping of every
  spring [N·s/m]; ``particle.mass`` the mass of every particle [kg]; ``gravity`` the gravity
  [m/s²] as the scene file writes it. On a scene file that lists its particles, the value is
  written into every ``[[springs]]`` entry's ``stiffness`` / ``damping``, every ``[[particles]]``
  entry's ``mass`` (pinned ones too), or the file's ``gravity`` vector; the member runs (and its
  trajectory stores) that rewritten file. On a builder scene the path is the builder's parameter
  of that meaning: ``stiffness``, ``damping``, ``mass``, ``gravity`` (every built-in builder gives
  every spring its ``stiffness`` and ``damping`` and every free particle its ``mass``; cloth2d's
  and chain's ``gravity`` is the number g_y, the others' a vector). A scene without springs
  rejects ``spring.*``, a builder without that parameter rejects the path (square builds its
  masses from ``density``, pendulum takes ``masses``).
- ``parameters.NAME`` or ``NAME``: a parameter of the scene's builder, as in
  ``hooke.scene(name, NAME=value)`` (``stiffness`` for spring1d, cloth2d and chain, ``masses`` or
  ``length`` for pendulum; ``hooke list`` names the scenes, their TOML files the parameters).
- ``run.integrator`` / ``integrator``, ``run.dt`` / ``dt``, ``run.t_end`` / ``t_end``: the run
  settings of :func:`hooke.simulate`.
- ``run.options.NAME``, ``options.NAME`` or ``NAME``: an integrator option (``rtol``, ``k_c``,
  ``beta_c``, ``tol`` …), passed to ``simulate`` as a keyword; the scene's own default options
  still apply when a member uses the scene's integrator (``simulate``'s rule).

A bare NAME is looked up in that order (run setting, option, builder parameter, model path); a
NAME that is both a builder parameter and an integrator option must be written in dotted form.
Every option must be known to every integrator of the sweep.

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
β_c ∈ {0, …, 0.4} at k_c = 0, 10 members. In a sweep file, ``[params]`` holds the axes every
grid shares and each ``[[grid]]`` table one grid's own axes. The table has one row per member in
this order; members with the same settings (k_c = 0, β_c = 0.2 above) are one simulation, run
once, with a row each.

On the command line (:func:`parse_param`): ``PATH=v1,v2,…`` (each value read as a TOML value:
``1e3``, ``true``, ``[0.0, -9.81]``, ``"text"``; anything else is a plain string such as
``rk4``; commas inside brackets belong to the value), ``PATH=lo:hi`` and ``PATH=log:lo:hi``;
on a sweep file's grids a ``--param`` replaces (or adds) that path in every grid.

Before anything runs the sweep checks its input: unknown paths, an option some integrator of the
sweep does not take, ranges without random mode, and every value (each value of each path is
built into a scene and an integrator set-up together with the first value of the other paths of
its grid) raise :class:`~hooke.errors.HookeInputError` naming the field and the value.

Members are picklable descriptions (:class:`Member`: the scene file's text, builder parameters,
run settings, options) rebuilt and run on a Dask worker. With ``client=None`` the sweep starts a
``distributed.LocalCluster`` on this machine (one single-threaded worker process per core this
process may run on, ``os.sched_getaffinity``) and closes it at the end; with an address
(``"tcp://host:8786"``) it connects to that scheduler; a ``distributed.Client`` is used as it is.
Workers write into DIR, so on a real cluster DIR must be a path every worker can write (a shared
file system), unless ``summary_only``. A scheduler that cannot be reached is an input error and
writes nothing.

Output layout of DIR:

- ``members/<id>/trajectory.h5``: the member's HDF5 trajectory (``simulate(..., store=…)``),
  written as it runs; not with ``summary_only``. ``<id>`` is 12 hex digits of a SHA-256 of the
  member's scene text, its parameters and settings: the same member always has the same id.
- ``members/<id>/row.json``: the member's row, written by the client as soon as it is final.
- ``summary.parquet`` and ``summary.csv``: the table of :data:`COLUMNS` (one row per member, in
  plan order, once it has a row); ``<metric>.png``: the chosen metric against each swept path.

Table columns, in order: ``member`` (str, the id); one column per path as given (float64 for
numbers, int64 for integers, bool, else str: lists as JSON); ``status`` (str: ok, failed,
timeout); ``error`` (str: ``Type: message`` on one line, empty when ok); ``attempts`` (int64);
``wall_time`` (float64, s, of the last attempt on its worker); the metrics of :func:`metrics`
(float64, NaN unless ok or where they do not apply); ``steps``, ``rejected`` (int64, counted up
to a failure, 0 when unknown); ``trajectory`` (str, the path relative to DIR, empty when there
is none). The CSV writes NaN as ``nan`` and empty strings as empty fields:
``pandas.read_csv(path, keep_default_na=False, na_values=["nan"])`` reads it back as the Parquet.

Failures: a member that raises (a non-finite state is a :class:`~hooke.errors.SimulationError`,
but any exception counts) is recorded as failed with its error, and so is one whose worker died
(Dask's ``KilledWorker``); a member still running ``timeout`` seconds after it
started stops at its next saved frame (status timeout, its trajectory keeps the frames so far);
one still running ``max(2 s, timeout / 4)`` later (stuck inside one frame) is cancelled and its
worker restarted (on a shared cluster that also restarts whatever else ran on that worker). The
other members go on. ``retries`` re-runs a failed or timed-out member up to that many more
times. Started again with the same DIR, a sweep skips every member whose row says ok (and whose
trajectory exists, unless ``summary_only``); failed and timed-out members run again.

Scripts that call ``hooke.sweep`` with the default local cluster need the usual
``if __name__ == "__main__":`` guard (its workers are started as new processes).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import itertools
import json
import logging
import math
import os
import re
import time
import tomllib
import uuid
from contextlib import contextmanager, nullcontext
from importlib import resources
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Callable, Literal

import numpy as np
import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .callable_module import make_callable
from .errors import HookeInputError, SimulationError, format_value
from .integrators import base as integrator_registry
from .io.pydantic_errors import validation_errors
from .io.scene_file import build, parse, parse_value
from .scene_setup import Scene
from .simulate import plan as plan_run, simulate
from .studies import length_drift

METRICS = ("energy_error", "constraint_drift", "penetration", "wall_time", "steps", "rejected")
STATUSES = ("ok", "failed", "timeout")
RUN_SETTINGS = ("integrator", "dt", "t_end")
# Model paths: (the builder parameter of that meaning, the scene file's list of entries or None
# for a top-level field, the field set in each entry).
MODEL_PATHS = {"spring.k": ("stiffness", "springs", "stiffness"),
               "spring.damping": ("damping", "springs", "damping"),
               "particle.mass": ("mass", "particles", "mass"),
               "gravity": ("gravity", None, "gravity")}
# The table's columns around the parameter columns (which come right after "member"), with dtypes.
COLUMNS = {"member": "str", "status": "str", "error": "str", "attempts": "int64",
           "wall_time": "float64", "energy_error": "float64", "constraint_drift": "float64",
           "penetration": "float64", "steps": "int64", "rejected": "int64", "trajectory": "str"}
_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


# -- description: settings, paths, values -------------------------------------------------------

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


def _plain(value, where: str):
    """``value`` as a JSON-able Python value (numpy scalars unwrapped), or an input error."""
    if isinstance(value, np.generic):
        value = value.item()
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
                or not all(isinstance(end, (int, float)) and not isinstance(end, bool)
                           and math.isfinite(end) for end in ends)):
            raise HookeInputError(f"{where}.range", "must be [lo, hi], two finite numbers", ends)
        if not isinstance(log, bool):
            raise HookeInputError(f"{where}.log", "must be true or false", log)
        lo, hi = ends
        if not lo < hi:
            raise HookeInputError(f"{where}.range", "must have lo < hi", list(ends))
        if log and lo <= 0:
            raise HookeInputError(f"{where}.range", "a log range needs lo > 0", list(ends))
        if random is None:
            raise HookeInputError(where, "a range needs random mode (random = N, --random N); "
                                  "a grid takes a list of values", list(ends))
        return Range(float(lo), float(hi), log)
    if not isinstance(spec, (list, tuple)) or not spec:
        raise HookeInputError(where, "must be a non-empty list of values or a range "
                              "{range = [lo, hi], log = false}", spec)
    return [_plain(value, where) for value in spec]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SweepSettings(Strict):
    """What to sweep and how; validated the same from the API, the CLI and sweep files.
    ``params`` (one grid or a list of grids) becomes a list of grids."""

    params: dict[str, Any] | list[dict[str, Any]]
    random: Annotated[int, Field(ge=1)] | None = None
    seed: Annotated[int, Field(ge=0)] = 0
    retries: Annotated[int, Field(ge=0)] = 0
    timeout: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    summary_only: bool = False
    metric: Literal[METRICS] = "energy_error"  # type: ignore[valid-type]
    save_every: Annotated[int, Field(ge=1)] = 1

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
            if path in COLUMNS:
                raise ValueError(f"params.{path}: is also a column of the summary table; use the "
                                 f"dotted form (parameters.{path} or options.{path}), got {path!r}")
        try:
            self.params = [{path: _axis(path, grid[path], self.random) for path in grids[0]}
                           for grid in grids]
        except HookeInputError as error:
            raise ValueError(str(error)) from None
        return self

    @property
    def paths(self) -> list[str]:
        return list(self.params[0])


class SweepFile(SweepSettings):
    """A sweep file: the settings plus the scene (a built-in name, or a scene file path relative
    to the sweep file) and a description; ``[params]`` and ``[[grid]]`` tables (each with the
    shared ``[params]`` added) become the list of grids."""

    scene: str
    description: str = ""

    @model_validator(mode="before")
    @classmethod
    def _grids(cls, data):
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if isinstance(data.get("params"), dict):
            data["params"] = _dotted(data["params"])
        if "grid" not in data:
            return data
        grids, shared = data.pop("grid"), data.get("params", {})
        if not isinstance(grids, list) or not all(isinstance(grid, dict) for grid in grids):
            raise ValueError(f"grid: must be [[grid]] tables of paths, got {format_value(grids)}")
        if not isinstance(shared, dict):
            return data  # the schema reports [params]
        grids = [_dotted(grid) for grid in grids]
        for index, grid in enumerate(grids):
            both = sorted(set(grid) & set(shared))
            if both:
                raise ValueError(f"grid[{index}].{both[0]}: is also in [params]; a path goes in "
                                 f"[params] (every grid) or in the grids, got {both[0]!r}")
        data["params"] = [{**shared, **grid} for grid in grids]
        return data


def _dotted(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """TOML reads the path ``spring.k = [1.0]`` as a table {spring = {k = [1.0]}}: back to paths
    (a table holding ``range`` is a range)."""
    paths: dict[str, Any] = {}
    for name, value in table.items():
        if isinstance(value, dict) and "range" not in value:
            paths.update(_dotted(value, f"{prefix}{name}."))
        else:
            paths[prefix + name] = value
    return paths


def _validated(model: type[BaseModel], data: dict[str, Any]):
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise validation_errors(error, model) from None


def shipped_sweeps() -> list[str]:
    """Names of the sweep files shipped in ``hooke/scenes/sweeps`` (seed 003's study …)."""
    folder = resources.files("hooke.scenes") / "sweeps"
    return sorted(item.name[:-5] for item in folder.iterdir() if item.name.endswith(".toml"))


def is_sweep_file(name: str) -> bool:
    """Whether SCENE_OR_FILE names a sweep file rather than a scene: a shipped sweep's name, or
    a TOML file with a top-level ``scene`` (a field no scene file has)."""
    from .scenes import names as scene_names

    if name in scene_names():
        return False
    if name in shipped_sweeps():
        return True
    try:
        return "scene" in tomllib.loads(Path(name).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False  # not readable as TOML: loading it as a scene names the problem


def read_sweep_file(path) -> SweepFile:
    """Read and validate a sweep file (TOML), given by path or as the name of a shipped one; a
    relative scene path in it is relative to the file."""
    from .scenes import names as scene_names

    if str(path) in shipped_sweeps() and not Path(path).exists():
        path = resources.files("hooke.scenes") / "sweeps" / f"{path}.toml"
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HookeInputError("--file", "no such sweep file (shipped: "
                              f"{', '.join(shipped_sweeps())})", str(path)) from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as error:
        raise HookeInputError("--file", f"cannot read the sweep file ({error.__class__.__name__})",
                              str(path)) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise HookeInputError(str(path), f"malformed TOML ({error})", show_value=False) from None
    spec = _validated(SweepFile, data)
    if spec.scene not in scene_names() and not Path(spec.scene).is_absolute():
        spec.scene = str(path.parent / spec.scene)
    return spec


def parse_param(text: str) -> tuple[str, list | dict]:
    """``PATH=v1,v2`` → (PATH, [v1, v2]); ``PATH=lo:hi`` / ``PATH=log:lo:hi`` → (PATH, range)."""
    path, sign, spec = text.partition("=")
    path, spec = path.strip(), spec.strip()
    if not sign or not path or not spec:
        raise HookeInputError("--param", "expected PATH=VALUES (e.g. stiffness=1e3,1e4 or "
                              "stiffness=log:1e3:1e5)", text)
    ranged = re.fullmatch(r"(log:)?([^:,\[\]]+):([^:,\[\]]+)", spec)
    if ranged:
        ends = [parse_value(part.strip()) for part in ranged.group(2, 3)]
        if not all(isinstance(end, (int, float)) and not isinstance(end, bool) for end in ends):
            raise HookeInputError(f"--param {path}", "a range is lo:hi or log:lo:hi with numbers", spec)
        return path, {"range": ends, "log": bool(ranged.group(1))}
    values, depth, start = [], 0, 0
    for index, char in enumerate(spec + ","):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            item = spec[start:index].strip()
            if not item:
                raise HookeInputError(f"--param {path}", "has an empty value", spec)
            values.append(parse_value(item))
            start = index + 1
    return path, values


# -- members -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Member:
    """One simulation of a sweep, as a picklable description rebuilt on the worker."""

    id: str
    values: dict[str, Any]       # path as given → value: the table's parameter columns
    scene_name: str
    scene_text: str              # the scene file (rewritten where a model path sets its fields)
    parameters: dict[str, Any]   # builder parameters (the scene's, with the swept ones replaced)
    run: dict[str, Any]          # swept run settings: integrator, dt, t_end
    options: dict[str, Any]      # swept integrator options
    save_every: int = 1

    def scene(self) -> Scene:
        text = self.scene_text
        return build(parse(text, source=self.scene_name), text, overrides=self.parameters,
                     default_name=self.scene_name)

    def simulate(self, store=None, progress=None):
        """Run this member in this process (what a worker does): a :class:`hooke.Result`."""
        return simulate(self.scene(), save_every=self.save_every, progress=progress, store=store,
                        **self.run, **self.options)

    def check(self) -> None:
        """Build the scene and set up its run as ``simulate`` does, without stepping."""
        plan_run(self.scene(), save_every=self.save_every, **self.run, **self.options)


def _base_scene(scene) -> Scene:
    from .io.scene_file import builtin_scene, load
    from .scenes import names as scene_names

    if isinstance(scene, Scene):
        if scene.source is None:
            raise HookeInputError("scene", "was built in code; a sweep rebuilds every member from "
                                  "a scene file's text: give a built-in name, a scene file or a "
                                  "Scene loaded from one", scene.name)
        return scene
    if isinstance(scene, str) and scene in scene_names():
        return builtin_scene(scene)
    if isinstance(scene, (str, Path)) and (str(scene).endswith(".toml") or Path(scene).exists()):
        return load(scene)
    raise HookeInputError("scene", f"is neither a built-in scene ({', '.join(scene_names())}) "
                          "nor a scene file", scene)


def _resolve(path: str, base: Scene, builder: str | None) -> tuple[str, str]:
    """(kind, name) of a parameter path: kind is "parameter", "run", "option" or "model"."""
    from .scenes.builders import parameter_names

    builder_parameters = [] if builder is None else parameter_names(builder)
    options = sorted({name for cls in map(integrator_registry.get, integrator_registry.names())
                      for name in cls.defaults})
    head, _, name = path.rpartition(".")
    if head in ("", "run") and name in RUN_SETTINGS:
        return "run", name
    if head in ("run.options", "options") or (head == "" and name in options
                                                 and name not in builder_parameters):
        if name not in options:
            raise HookeInputError(path, "is not an option of any integrator (options: "
                                  f"{', '.join(options)})", path)
        return "option", name
    if head in ("parameters", "") and name in builder_parameters:
        if head == "" and name in options:
            raise HookeInputError(path, "is both a builder parameter and an integrator option:"
                                  f" write parameters.{name} or options.{name}", path)
        return "parameter", name
    if path in MODEL_PATHS:
        parameter, entries, _ = MODEL_PATHS[path]
        if entries == "springs" and not base.model.n_springs:
            raise HookeInputError(path, f"scene '{base.name}' has no springs", path)
        if builder is None:
            return "model", path
        if parameter in builder_parameters:
            return "parameter", parameter
        raise HookeInputError(path, f"scene '{base.name}' is made by builder '{builder}', which "
                              f"takes no {parameter} (its parameters: "
                              f"{', '.join(builder_parameters)})", path)
    known = (f"builder parameters of scene '{base.name}': {', '.join(builder_parameters)}; "
             if builder_parameters else f"scene '{base.name}' lists its particles (no builder); ")
    raise HookeInputError(path, f"unknown parameter ({known}model: {', '.join(MODEL_PATHS)}; "
                          f"run settings: {', '.join(RUN_SETTINGS)}; or an integrator option)", path)


def _with_model_values(data: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """A scene file's data with each model path's value set (see the module docstring)."""
    data = copy.deepcopy(data)
    for path, value in values.items():
        _, entries, name = MODEL_PATHS[path]
        for entry in data.get(entries, []) if entries else [data]:
            entry[name] = value
    return data


def _blame(error: HookeInputError, targets: dict[str, tuple[str, str]]) -> HookeInputError:
    """An error about a field a model path wrote into the scene file (one per entry), as one
    line about that path; other errors as they are."""
    field, _, problem = str(error).splitlines()[0].partition(": ")
    for path in (path for path, (kind, _) in targets.items() if kind == "model"):
        _, entries, key = MODEL_PATHS[path]
        if re.fullmatch(rf"{entries}\[\d+\]\.{key}" if entries else key, field):
            return HookeInputError(path, problem, show_value=False)
    return error


def member_id(scene_name: str, scene_text: str, parameters: dict, run: dict, options: dict,
              save_every: int) -> str:
    text = json.dumps({"scene": scene_name, "source": scene_text, "parameters": parameters,
                       "run": run, "options": options, "save_every": save_every}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def plan(scene, params: dict[str, Any] | list[dict[str, Any]], *, random: int | None = None,
         seed: int = 0, save_every: int = 1) -> list[Member]:
    """The members of a sweep in table order, checked (see the module docstring) but not run;
    members with the same settings are the same :class:`Member` (one simulation)."""
    settings = _validated(SweepSettings, {"params": params, "random": random, "seed": seed,
                                          "save_every": save_every})
    return _plan(_base_scene(scene), settings)


def _plan(base: Scene, settings: SweepSettings) -> list[Member]:
    from .scenes.builders import parameter_schema

    spec = parse(base.source, source=base.name)
    targets = {path: _resolve(path, base, spec.builder) for path in settings.paths}
    seen: dict[tuple[str, str], str] = {}
    for path, target in targets.items():
        if target in seen:
            raise HookeInputError(path, f"sets the same {target[0]} as {seen[target]}", path)
        seen[target] = path
    data = tomllib.loads(base.source) if any(k == "model" for k, _ in targets.values()) else None

    def integral(path: str, values):
        """A range of an integer builder parameter draws integers."""
        if isinstance(values, Range) and targets[path][0] == "parameter" and parameter_schema(
                spec.builder)["properties"][targets[path][1]].get("type") == "integer":
            values = dataclasses.replace(values, integer=True)
            if values.ends()[0] > values.ends()[1]:
                raise HookeInputError(f"params.{path}.range", "holds no integer", [values.lo, values.hi])
        return values

    grids = [{path: integral(path, values) for path, values in grid.items()}
             for grid in settings.params]

    def member(values: dict[str, Any]) -> Member:
        chosen = {kind: {name: values[path] for path, (k, name) in targets.items() if k == kind}
                  for kind in ("parameter", "run", "option", "model")}
        parameters = {**base.parameters, **chosen["parameter"]}
        text = (tomli_w.dumps(_with_model_values(data, chosen["model"])) if chosen["model"]
                else base.source)
        return Member(member_id(base.name, text, parameters, chosen["run"], chosen["option"],
                                settings.save_every),
                      dict(values), base.name, text, parameters, chosen["run"],
                      chosen["option"], settings.save_every)

    for axes in grids:
        first = {path: values.ends()[0] if isinstance(values, Range) else values[0]
                 for path, values in axes.items()}
        for path, values in axes.items():
            for value in values.ends() if isinstance(values, Range) else values:
                try:
                    member({**first, path: value}).check()
                except HookeInputError as error:
                    raise _blame(error, targets) from None
    if settings.random is None:
        combos = (dict(zip(axes, combo)) for axes in grids
                  for combo in itertools.product(*axes.values()))
    else:
        rng = np.random.default_rng(settings.seed)
        combos = ({path: values.draw(rng) if isinstance(values, Range)
                   else values[int(rng.integers(len(values)))] for path, values in grids[0].items()}
                  for _ in range(settings.random))
    members: dict[str, Member] = {}
    return [members.setdefault(candidate.id, candidate) for candidate in map(member, combos)]


# -- running one member (on a worker) -------------------------------------------------------------

class MemberTimeout(SimulationError):
    """A member ran past its time limit (raised at a saved frame)."""


def metrics(result) -> dict[str, float | int]:
    """The scalar metrics of a run.

    ``energy_error``: |E(end) − E(0)| relative to the energy scale max(|E(0)|, max kinetic)
    (:meth:`hooke.Result.energy_drift`), inf when the energy overflowed; ``constraint_drift``:
    seed 003's string-length error ΔL = Σ_joints |L − L0| [m], its maximum over the saved frames
    (:func:`hooke.studies.length_drift`, the max ΔL of ``hooke study``; NaN without joints);
    ``penetration``: max(0, −min contact distance) [m] (NaN without contact planes); ``steps``
    and ``rejected`` (0 for fixed-step integrators) from ``result.stats``.
    """
    model = result.scene.model
    drift = float(length_drift(model, result.x).max()) if model.n_joints else math.nan
    contact = result.contact_distance
    penetration = (max(0.0, -float(np.min(contact))) if np.isfinite(contact).any() else math.nan)
    total = result.energy["total"]
    energy_error = abs(result.energy_drift()) if np.isfinite(total).all() else math.inf
    return {"energy_error": energy_error, "constraint_drift": drift,
            "penetration": penetration, **counts(result)}


def counts(result) -> dict[str, int]:
    return {"steps": int(result.stats.get("steps", 0)), "rejected": int(result.stats.get("rejected", 0))}


def _deadline(limit: float):
    """A ``simulate`` progress callback that raises :class:`MemberTimeout` after ``limit`` s."""
    end = time.monotonic() + limit

    def check(done: int, total: int) -> None:
        if time.monotonic() > end:
            raise MemberTimeout(f"stopped after {limit:g} s (the time limit) at step {done} of {total}")
    return check


def _failure(status: str, message: str, steps: int = 0, rejected: int = 0) -> dict[str, Any]:
    return {"status": status, "error": message.replace("\n", "; "), "energy_error": math.nan,
            "constraint_drift": math.nan, "penetration": math.nan, "steps": steps,
            "rejected": rejected}


def run_member(member: Member, store: str | None, timeout: float | None, topic: str) -> dict[str, Any]:
    """Run one member on a Dask worker; returns its row (status, error, wall time, metrics).

    Never raises for a failing member: the error becomes the row. Announces its start on the
    event ``topic`` so the client's watchdog can time it."""
    from distributed import get_worker

    worker = get_worker()
    worker.log_event(topic, {"key": worker.get_current_task(), "worker": worker.address})
    started = time.perf_counter()
    try:
        with np.errstate(all="ignore"):  # a member that blows up is a row, not console noise
            result = member.simulate(store=store,
                                     progress=None if timeout is None else _deadline(timeout))
            row = {"status": "ok", "error": "", **metrics(result)}
    except SimulationError as error:
        partial = getattr(error, "result", None)
        row = _failure("timeout" if isinstance(error, MemberTimeout) else "failed",
                       f"{type(error).__name__}: {error}",
                       **(counts(partial) if partial is not None else {}))
    except Exception as error:  # any failure of one member is its row, not the sweep's end
        row = _failure("failed", f"{type(error).__name__}: {error}")
    row["wall_time"] = time.perf_counter() - started
    return row


# -- the sweep (on the client) --------------------------------------------------------------------

@contextmanager
def _connect(client):
    """A ``distributed.Client``: the given one, one for a scheduler address, or a LocalCluster's."""
    from distributed import Client, LocalCluster

    if client is None:
        cores = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                 else os.cpu_count() or 1)
        with LocalCluster(n_workers=cores, threads_per_worker=1, processes=True,
                          dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
                Client(cluster) as local:
            yield local
    elif isinstance(client, str):
        try:
            remote = Client(client, timeout="10s")
        except (OSError, TimeoutError, ValueError) as error:
            raise HookeInputError("scheduler", f"cannot connect ({error})", client) from None
        with remote:
            yield remote
    elif isinstance(client, Client):
        yield client
    else:
        raise HookeInputError("client", "must be None, a scheduler address or a distributed.Client",
                              type(client).__name__)


def _execute(client, members: list[Member], directory: Path, settings: SweepSettings,
             on_final: Callable[[Member, dict], None]) -> None:
    """Run ``members`` on ``client``, retrying failures; ``on_final(member, row)`` per member."""
    from distributed import wait

    topic = f"hooke-sweep-{uuid.uuid4().hex}"
    started: dict[str, tuple[float, str]] = {}  # task key → (client clock at start, worker)
    client.subscribe_topic(topic, lambda event: started.__setitem__(
        event[1]["key"], (time.monotonic(), event[1]["worker"])))
    pending: dict[Any, tuple[Member, int]] = {}

    def submit(member: Member, attempt: int) -> None:
        store = None if settings.summary_only else str(directory / "members" / member.id / "trajectory.h5")
        future = client.submit(run_member, member, store, settings.timeout, topic,
                               key=f"hooke-member-{member.id}-{uuid.uuid4().hex[:8]}")
        pending[future] = (member, attempt)

    def finish(member: Member, attempt: int, row: dict) -> None:
        if row["status"] != "ok" and attempt <= settings.retries:
            submit(member, attempt + 1)
        else:
            on_final(member, {**row, "attempts": attempt})

    hard_limit = None if settings.timeout is None else settings.timeout + max(2.0, settings.timeout / 4)
    for member in members:
        submit(member, 1)
    try:
        while pending:
            try:
                finished, _ = wait(list(pending), timeout=None if hard_limit is None else 0.5,
                                   return_when="FIRST_COMPLETED")
            except TimeoutError:
                finished = set()
            for future in finished:
                member, attempt = pending.pop(future)
                started.pop(future.key, None)
                try:
                    row = future.result()
                except Exception as error:  # the worker died (e.g. out of memory), or a cancel
                    row = _failure("failed", f"{type(error).__name__}: {error}")
                    row["wall_time"] = math.nan
                finish(member, attempt, row)
            if hard_limit is not None:
                _stop_overdue(client, pending, started, hard_limit, finish)
    finally:
        client.unsubscribe_topic(topic)
        client.cancel(list(pending))


def _stop_overdue(client, pending: dict, started: dict, hard_limit: float, finish) -> None:
    """Cancel members stuck past ``hard_limit`` and restart their workers (a thread cannot be
    stopped from outside its process)."""
    now = time.monotonic()
    for future, (member, attempt) in list(pending.items()):
        if future.done() or future.key not in started or now - started[future.key][0] < hard_limit:
            continue
        began, worker = started.pop(future.key)
        del pending[future]
        future.cancel()
        client.restart_workers([worker], raise_for_error=False)
        row = _failure("timeout", f"MemberTimeout: still running {now - began:.1f} s after it "
                       f"started, inside one frame; its worker {worker} was restarted")
        row["wall_time"] = now - began
        finish(member, attempt, row)


def _row_path(directory: Path, member: Member) -> Path:
    return directory / "members" / member.id / "row.json"


def _store_path(directory: Path, member: Member) -> Path:
    return directory / "members" / member.id / "trajectory.h5"


def _write_row(directory: Path, member: Member, row: dict) -> None:
    path = _row_path(directory, member)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".json.part")
    partial.write_text(json.dumps({"member": member.id, "values": member.values, **row}, indent=1))
    os.replace(partial, path)  # atomic: an interrupted sweep never leaves half a row


def _read_row(directory: Path, member: Member) -> dict | None:
    try:
        return json.loads(_row_path(directory, member).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def _done(directory: Path, member: Member, summary_only: bool) -> bool:
    row = _read_row(directory, member)
    return (row is not None and row["status"] == "ok"
            and (summary_only or _store_path(directory, member).is_file()))


def summary_table(members: list[Member], directory: Path):
    """The table (pandas DataFrame) of every member of ``members`` that has a row in DIR."""
    import pandas as pd

    records = []
    for member in members:
        row = _read_row(directory, member)
        if row is None:
            continue
        store = _store_path(directory, member)
        records.append({"member": member.id, **member.values,
                        **{key: row[key] for key in COLUMNS if key not in ("member", "trajectory")},
                        "trajectory": str(store.relative_to(directory)) if store.is_file() else ""})
    paths = list(members[0].values) if members else []
    table = pd.DataFrame.from_records(records, columns=["member", *paths, *list(COLUMNS)[1:]])
    for path in paths:
        table[path] = _parameter_column(table[path].tolist())
    return table.astype(COLUMNS)


def _parameter_column(values: list):
    import pandas as pd

    if values and all(isinstance(value, bool) for value in values):
        return pd.Series(values, dtype="bool")
    if values and all(isinstance(value, int) and not isinstance(value, bool) for value in values):
        return pd.Series(values, dtype="int64")
    if values and all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in values):
        return pd.Series(values, dtype="float64")
    return pd.Series([value if isinstance(value, str) else json.dumps(value) for value in values],
                     dtype="str")


def plot_metric(table, paths: list[str], metric: str, path: Path, title: str = "") -> Path:
    """``metric`` against each swept path (one panel per path with more than one value); in a
    grid, one line per combination of the other paths when there are at most 8."""
    from .viz.plots import finish, new_figure

    varying = [name for name in paths if table[name].nunique() > 1] or paths[:1]
    figure = new_figure(figsize=(5.5 * len(varying), 4.2))
    axes = figure.subplots(1, len(varying), squeeze=False)
    values = table[metric].to_numpy(dtype=float)
    finite = values[np.isfinite(values)]
    positive = finite[finite > 0]
    logscale = positive.size > 0 and positive.size == finite.size and positive.max() >= 100 * positive.min()
    for axis, name in zip(axes[0], varying):
        numeric = table[name].dtype.kind in "if"
        levels = sorted(table[name].unique()) if not numeric else None
        position = (lambda frame: frame[name].to_numpy(dtype=float)) if numeric else (
            lambda frame: frame[name].map(levels.index).to_numpy(dtype=float))
        others = [other for other in varying if other != name]
        groups = list(table.groupby(others, sort=False)) if others else [((), table)]
        if len(groups) <= 8:
            for key, frame in groups:
                key = key if isinstance(key, tuple) else (key,)
                label = ", ".join(f"{other}={value}" for other, value in zip(others, key)) or None
                frame = frame.sort_values(name)
                axis.plot(position(frame), frame[metric].to_numpy(dtype=float), "o-", ms=4, label=label)
            if others:
                axis.legend(fontsize=7, loc="best")
        else:
            axis.scatter(position(table), values, s=12)
        if numeric:
            column = table[name].to_numpy(dtype=float)
            if column.min() > 0 and column.max() >= 100 * column.min():
                axis.set_xscale("log")
        else:
            axis.set_xticks(range(len(levels)), levels, rotation=20)
        if logscale:
            axis.set_yscale("log")
        axis.set_xlabel(name)
        axis.set_ylabel(metric)
        axis.grid(alpha=0.3)
    failed = int((table["status"] != "ok").sum())
    figure.suptitle(f"{title}: {metric} over {len(table)} member(s)"
                    + (f", {failed} not ok (not shown)" if failed else ""), fontsize=10)
    finish(figure, path)
    return Path(path)


@dataclass
class SweepResult:
    """A finished sweep: ``table`` (pandas DataFrame, see the module docstring) and its files;
    ``skipped`` lists the members found done in DIR and not run again."""

    table: Any
    directory: Path
    parquet: Path
    csv: Path
    plot: Path
    metric: str
    paths: list[str]
    skipped: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Members per status."""
        return {status: int((self.table["status"] == status).sum()) for status in STATUSES}

    def text(self, limit: int = 20) -> str:
        """A summary line and the table's main columns (the first ``limit`` rows)."""
        counts = ", ".join(f"{count} {status}" for status, count in self.counts().items())
        distinct = self.table["member"].nunique()
        head = (f"{len(self.table)} member(s)"
                + (f", {distinct} distinct" if distinct < len(self.table) else "") + f": {counts}"
                + (f" ({len(self.skipped)} done before, skipped)" if self.skipped else ""))
        columns = ["member", *self.paths, "status", self.metric, "wall_time", "error"]
        shown = self.table[list(dict.fromkeys(columns))].head(limit)
        more = f"\n… {len(self.table) - limit} more in {self.csv}" if len(self.table) > limit else ""
        return f"{head}\n{shown.to_string(index=False, max_colwidth=70)}{more}"

    def result(self, member: str):
        """The stored trajectory of ``member`` (an id of the table) as a :class:`hooke.Result`."""
        from .io.store import open_result

        return open_result(self.directory / "members" / member / "trajectory.h5")


def sweep(scene, params: dict[str, Any] | list[dict[str, Any]], client=None, *, out="out/sweep",
          random: int | None = None, seed: int = 0, retries: int = 0, timeout: float | None = None,
          summary_only: bool = False, metric: str = "energy_error", save_every: int = 1,
          progress: Callable[[int, int], None] | None = None) -> SweepResult:
    """Run one simulation per member of a parameter grid (or of ``random`` samples) on Dask.

    Args:
        scene: a built-in scene name, a scene file path, or a Scene loaded from one.
        params: parameter path → list of values, or range ``{"range": [lo, hi], "log": False}``
            (random mode); or a list of such grids, concatenated. See the module docstring for
            the paths.
        client: None (a LocalCluster here), a scheduler address, or a ``distributed.Client``.
        out: the sweep's directory DIR (a sweep started again with the same DIR resumes).
        random: draw this many members instead of the grid, with ``numpy`` generator ``seed``.
        retries: how many more times a failed or timed-out member runs.
        timeout: seconds a member may run.
        summary_only: keep only the rows (no trajectories).
        metric: the table column to plot (one of :data:`METRICS`).
        save_every: saved frame interval of the trajectories (steps).
        progress: ``progress(done, total)`` over the distinct members (those found done in DIR
            count as done): called once the cluster is up, then once as each member finishes.
    """
    settings = _validated(SweepSettings, {
        "params": params, "random": random, "seed": seed, "retries": retries, "timeout": timeout,
        "summary_only": summary_only, "metric": metric, "save_every": save_every})
    base = _base_scene(scene)
    model = base.model
    if settings.metric == "constraint_drift" and not model.n_joints:
        raise HookeInputError("metric", f"scene '{base.name}' has no joints", settings.metric)
    if settings.metric == "penetration" and not model.n_planes:
        raise HookeInputError("metric", f"scene '{base.name}' has no contact planes", settings.metric)
    members = _plan(base, settings)
    distinct = list({member.id: member for member in members}.values())
    directory = Path(out).resolve()
    skipped = [member.id for member in distinct if _done(directory, member, settings.summary_only)]
    found = set(skipped)
    todo = [member for member in distinct if member.id not in found]
    done = len(skipped)

    def on_final(member: Member, row: dict) -> None:
        nonlocal done
        _write_row(directory, member, row)
        done += 1
        if progress is not None:
            progress(done, len(distinct))

    # Connect first: a scheduler that cannot be reached leaves DIR as it was.
    with _connect(client) if todo else nullcontext() as dask_client:
        try:
            if todo:
                if progress is not None:
                    progress(done, len(distinct))
                _execute(dask_client, todo, directory, settings, on_final)
        finally:  # also when interrupted: the table of the members finished so far
            table = summary_table(members, directory)
            directory.mkdir(parents=True, exist_ok=True)
            parquet, csv = directory / "summary.parquet", directory / "summary.csv"
            table.to_parquet(parquet, index=False)
            table.to_csv(csv, index=False, na_rep="nan")
    plot = plot_metric(table, settings.paths, settings.metric,
                       directory / f"{settings.metric}.png", title=base.name)
    return SweepResult(table, directory, parquet, csv, plot, settings.metric, settings.paths,
                       skipped)


make_callable(__name__, sweep)
