"""The members of a sweep: what each parameter path sets, checked against the scene before
anything runs, and one picklable :class:`Member` per simulation.

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
The values a path takes are :mod:`hooke.sweep.settings`'.

Before anything runs the sweep checks its input. Unknown paths, ranges without random mode, a
range end that cannot be built and more members than fit in memory
(:data:`hooke.memory.MEMBER_BYTES` each) or than ``MAX_MEMBERS`` raise :class:`~hooke.errors.HookeInputError` naming the field
and the value. Each value of a grid is built into a scene and an integrator set-up together
with the first value of the other paths of its grid; a member holding a value that fails is
checked in full, and one that fails (a negative dt, an option its integrator does not take) is
marked ``invalid`` with its error: the sweep records it as failed and runs the others. Only
when every member is invalid is the sweep refused (the errors, one line each).

Members are picklable descriptions (the scene file's text, builder parameters, run settings,
options) rebuilt and run on a Dask worker. Members with the same settings are one simulation:
the same :class:`Member`, whose id (12 hex digits of a SHA-256 of the member's scene text, its
parameters and settings) is the same in every sweep.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import itertools
import json
import math
import re
import tomllib
from dataclasses import dataclass
from typing import Any

import numpy as np
import tomli_w

from ..errors import HookeInputError, HookeInputErrors
from ..integrators import base as integrator_registry
from ..io.scene_file import build, named_scene, parse
from ..memory import MEMBER_BYTES, check_fits, real_count
from ..scene_setup import Scene
from ..scenes.builders import parameter_names, parameter_schema
from ..simulate import plan as plan_run, simulate
from .settings import Range, SweepSettings, validated

# Members of one sweep, at most: planning takes ~15 µs a member here (a grid of 4e6 planned for
# a minute in silence, then gave Dask 4e6 tasks, at about a millisecond of its scheduler each)
MAX_MEMBERS = 1_000_000

RUN_SETTINGS = ("integrator", "dt", "t_end")
# Model paths: (the builder parameter of that meaning, the scene file's list of entries or None
# for a top-level field, the field set in each entry).
MODEL_PATHS = {"spring.k": ("stiffness", "springs", "stiffness"),
               "spring.damping": ("damping", "springs", "damping"),
               "particle.mass": ("mass", "particles", "mass"),
               "gravity": ("gravity", None, "gravity")}


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
    invalid: str = ""            # why its settings cannot run (their input error), or empty
    folder: str | None = None    # the scene file's (Scene.folder): its mesh files are read there

    def scene(self) -> Scene:
        text = self.scene_text
        return build(parse(text, source=self.scene_name, folder=self.folder), text,
                     overrides=self.parameters, default_name=self.scene_name, folder=self.folder)

    def simulate(self, store=None, progress=None):
        """Run this member in this process (what a worker does): a :class:`hooke.Result`."""
        return simulate(self.scene(), save_every=self.save_every, progress=progress, store=store,
                        **self.run, **self.options)

    def check(self) -> None:
        """Build the scene and set up its run as ``simulate`` does, without stepping."""
        plan_run(self.scene(), save_every=self.save_every, **self.run, **self.options)


def base_scene(scene) -> Scene:
    """The scene a sweep varies: a built-in name, a scene file path, or a Scene loaded from one."""
    if isinstance(scene, Scene):
        if scene.source is None:
            raise HookeInputError("scene", "was built in code; a sweep rebuilds every member from "
                                  "a scene file's text: give a built-in name, a scene file or a "
                                  "Scene loaded from one", scene.name)
        return scene
    return named_scene(scene, "scene")


def _resolve(path: str, base: Scene, builder: str | None) -> tuple[str, str]:
    """(kind, name) of a parameter path: kind is "parameter", "run", "option" or "model"."""
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
    """An error about a field a path set under another name, as one line about the path as the
    user wrote it: a model path's fields in the scene file (one per entry), and a builder
    parameter given as ``spring.k`` (the builder names it ``parameters.stiffness``); other
    errors as they are."""
    field, _, problem = str(error).splitlines()[0].partition(": ")
    for path, (kind, name) in targets.items():
        if kind == "model":
            _, entries, key = MODEL_PATHS[path]
            pattern = rf"{entries}\[\d+\]\.{key}" if entries else key
        elif kind == "parameter":
            pattern = re.escape(f"parameters.{name}")
        else:
            continue
        if field != path and re.fullmatch(pattern, field):  # (its advice names it too)
            return HookeInputError(path, problem.replace(f"smaller {field}", f"smaller {path}"),
                                   show_value=False)
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
    settings = validated(SweepSettings, {"params": params, "random": random, "seed": seed,
                                          "save_every": save_every})
    return plan_members(base_scene(scene), settings)


def plan_members(base: Scene, settings: SweepSettings) -> list[Member]:
    """:func:`plan` with the scene and the settings already checked."""
    spec = parse(base.source, source=base.name, folder=base.folder)
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
    if settings.random is None:  # before any member is made: a grid's product can be vast
        count = sum(math.prod(len(values) for values in axes.values()) for axes in grids)
        field, value = "params", {path: len(values) for axes in grids for path, values in axes.items()}
    else:
        count, field, value = settings.random, "random", settings.random
    count = real_count(count)  # 10**400 is no float: inf, shown so and refused
    check_fits(field, value, count * MEMBER_BYTES, f"the sweep would have {count:.4g} members",
               "choose fewer members, or run the sweep in parts")
    if count > MAX_MEMBERS:  # fits in memory, yet would plan for a minute before any member ran
        raise HookeInputError(field, f"the sweep would have {count:.4g} members, more than the "
                              f"{MAX_MEMBERS:.0e} one sweep plans and schedules: run it in parts, "
                              "each with its own directory", value)

    def member(values: dict[str, Any]) -> Member:
        chosen = {kind: {name: values[path] for path, (k, name) in targets.items() if k == kind}
                  for kind in ("parameter", "run", "option", "model")}
        parameters = {**base.parameters, **chosen["parameter"]}
        text = (tomli_w.dumps(_with_model_values(data, chosen["model"])) if chosen["model"]
                else base.source)
        return Member(member_id(base.name, text, parameters, chosen["run"], chosen["option"],
                                settings.save_every),
                      dict(values), base.name, text, parameters, chosen["run"],
                      chosen["option"], settings.save_every, folder=base.folder)

    suspects: set[tuple[str, str]] = set()  # (path, value as JSON) whose check failed
    for axes in grids:
        first = {path: values.ends()[0] if isinstance(values, Range) else values[0]
                 for path, values in axes.items()}
        for path, values in axes.items():
            for value in values.ends() if isinstance(values, Range) else values:
                try:
                    member({**first, path: value}).check()
                except HookeInputError as error:
                    if isinstance(values, Range):  # its draws cannot be told apart
                        raise _blame(error, targets) from None
                    suspects.add((path, json.dumps(value)))
    if settings.random is None:
        combos = (dict(zip(axes, combo)) for axes in grids
                  for combo in itertools.product(*axes.values()))
    else:
        rng = np.random.default_rng(settings.seed)
        combos = ({path: values.draw(rng) if isinstance(values, Range)
                   else values[int(rng.integers(len(values)))] for path, values in grids[0].items()}
                  for _ in range(settings.random))
    members: dict[str, Member] = {}
    ordered = [members.setdefault(candidate.id, candidate) for candidate in map(member, combos)]
    return _mark_invalid(ordered, members, suspects, targets) if suspects else ordered


def _mark_invalid(ordered: list[Member], members: dict[str, Member],
                  suspects: set[tuple[str, str]], targets) -> list[Member]:
    """``ordered`` with each member that holds a suspect value and fails its own check marked
    invalid (the suspect's check may have failed on another path's first value); refused when
    every member is."""
    errors: dict[str, HookeInputError] = {}
    for key, candidate in members.items():
        if not any((path, json.dumps(value)) in suspects for path, value in candidate.values.items()):
            continue
        try:
            candidate.check()
        except HookeInputError as error:
            blamed = _blame(error, targets)
            errors.setdefault(str(blamed), blamed)
            members[key] = dataclasses.replace(candidate, invalid=str(blamed))
    if all(candidate.invalid for candidate in members.values()):
        lines = [line for text in errors for line in text.splitlines()]
        raise (next(iter(errors.values())) if len(errors) == 1
               else HookeInputErrors(list(dict.fromkeys(lines))))
    return [members[candidate.id] for candidate in ordered]
