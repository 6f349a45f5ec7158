"""Scene files: TOML validated by a pydantic schema, then built into a :class:`Scene`.

A scene file either lists its particles and springs, or names a ``builder`` (a registered Python
function, see :mod:`hooke.scenes.builders`) with its ``parameters``. Every problem is reported at
once, one line each, as ``path.of.field: message, got value``; the CLI exits with code 2.

    dim = 2
    gravity = [0.0, -9.81]
    [run]
    integrator = "symplectic_euler"
    dt = 0.001
    t_end = 2.0
    [[particles]]
    x = [0.0, 0.0]
    pinned = true
    [[particles]]
    x = [1.0, 0.0]
    mass = 0.5
    [[springs]]
    i = 0
    j = 1
    stiffness = 100.0
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..builder import ModelBuilder
from ..errors import HookeInputError, HookeInputErrors, format_value
from ..model import SPRING_ENERGIES

Finite = Annotated[float, Field(allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunSettings(Strict):
    integrator: str | None = None
    dt: Positive | None = None
    t_end: Positive | None = None
    options: dict[str, Any] = Field(default_factory=dict)


class ParticleSpec(Strict):
    x: list[Finite]
    v: list[Finite] | None = None
    mass: Positive = 1.0
    pinned: bool = False
    name: str | None = None


class SpringSpec(Strict):
    i: Annotated[int, Field(ge=0)]
    j: Annotated[int, Field(ge=0)]
    stiffness: NonNegative
    rest_length: NonNegative | None = None
    damping: NonNegative = 0.0


class SceneFile(Strict):
    name: str | None = None
    description: str = ""
    builder: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    dim: Literal[1, 2, 3] | None = None
    gravity: list[Finite] | None = None
    spring_energy: Literal[SPRING_ENERGIES] = "hookean"  # type: ignore[valid-type]
    particles: list[ParticleSpec] = Field(default_factory=list)
    springs: list[SpringSpec] = Field(default_factory=list)
    run: RunSettings = Field(default_factory=RunSettings)

    @model_validator(mode="after")
    def _one_kind(self):
        if self.builder is not None:
            if self.particles or self.springs:
                raise ValueError("give either 'builder' or 'particles'/'springs', not both")
        else:
            if self.dim is None:
                raise ValueError("'dim' is required when the file lists its particles")
            if not self.particles:
                raise ValueError("'particles' must list at least one particle (or name a 'builder')")
            if self.parameters:
                raise ValueError("'parameters' only apply to a 'builder' scene")
        return self


def _location(loc: tuple) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif not str(part).startswith(("function-", "literal", "constrained", "list[", "int", "float", "nullable")):
            text += ("." if text else "") + str(part)
    return text or "scene"


def validation_errors(error: ValidationError, prefix: str = "") -> HookeInputErrors:
    lines = []
    for item in error.errors():
        where = _location(item["loc"])
        where = f"{prefix}.{where}" if prefix and where != "scene" else (prefix or where)
        message = item["msg"].replace("Value error, ", "")
        if item["type"] == "missing":
            lines.append(f"{where}: field required")
        elif item["type"] == "extra_forbidden":
            lines.append(f"{where}: unknown field, got {format_value(item['input'])}")
        else:
            lines.append(f"{where}: {message}, got {format_value(item['input'])}")
    return HookeInputErrors(lines)


def parse(text: str, source: str = "scene file") -> SceneFile:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise HookeInputError(source, f"malformed TOML ({error})", show_value=False) from None
    try:
        return SceneFile.model_validate(data)
    except ValidationError as error:
        raise validation_errors(error) from None


def build(spec: SceneFile, text: str | None = None, overrides: dict[str, Any] | None = None,
          default_name: str = "custom"):
    """Turn a validated scene file into a Scene (``overrides`` replace builder parameters)."""
    from ..scene import Scene
    from ..scenes.builders import run_builder

    analytic = None
    parameters: dict[str, Any] = {}
    if spec.builder is not None:
        parameters = {**spec.parameters, **(overrides or {})}
        model, analytic = run_builder(spec.builder, parameters)
    else:
        if overrides:
            name = next(iter(overrides))
            raise HookeInputError(name, "is not a parameter: this scene has no builder", overrides[name])
        model = _explicit_model(spec)
    run = spec.run
    settings = {key: value for key, value in (("integrator", run.integrator), ("dt", run.dt),
                                              ("t_end", run.t_end)) if value is not None}
    return Scene(model, options=dict(run.options), name=spec.name or default_name,
                 description=spec.description, parameters=parameters,
                 analytic_solution=analytic, source=text, **settings)


def _explicit_model(spec: SceneFile):
    builder = ModelBuilder(dim=spec.dim, gravity=spec.gravity, spring_energy=spec.spring_energy)
    for particle in spec.particles:
        builder.add_particle(particle.x, mass=particle.mass, velocity=particle.v,
                             pinned=particle.pinned, name=particle.name)
    for spring in spec.springs:
        builder.add_spring(spring.i, spring.j, stiffness=spring.stiffness,
                           rest_length=spring.rest_length, damping=spring.damping)
    return builder.finalize()


def load(path) -> "Scene":  # noqa: F821 - Scene imported lazily to keep the import graph one-way
    """Read and build a scene file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HookeInputError("path", "no such scene file", str(path)) from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as error:
        raise HookeInputError("path", f"cannot read the scene file ({error.__class__.__name__})",
                              str(path)) from None
    return build(parse(text, source=str(path)), text, default_name=path.stem)
