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
    [[joints]]               # a rigid distance constraint; length defaults to the distance
    i = 0
    j = 1
    length = 1.0

A pinned particle can follow a prescribed motion (seed 003's moving support), x0 + u(t) − u(0):

    [[particles]]
    x = [0.0, 0.0, 0.0]
    pinned = true
    motion = { type = "sinusoid", amplitude = 0.1, direction = [1.0, 0.0, 0.0], omega = 3.0 }

Contact (any scene, also builder scenes: the planes go under the body the builder made):

    [[planes]]
    normal = [0.0, 1.0]      # towards the allowed side
    point = [0.0, -1.0]
    friction = 0.11          # Coulomb μ
    motion = { type = "constant_velocity", velocity = [0.0, -0.5] }   # optional
    [contact]
    dhat = 0.01              # barrier activation distance [m]
    kappa = 1.0e5            # barrier stiffness
    area = 0.25              # per particle, or a list with one value per particle
    epsv = 1.0e-3            # friction smoothing velocity [m/s]
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..builder import ModelBuilder, add_contact
from ..errors import HookeInputError, HookeInputErrors, format_value
from ..model import SPRING_ENERGIES
from ..motion import ConstantVelocity, Sinusoid

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


class SpringSpec(Strict):
    i: Annotated[int, Field(ge=0)]
    j: Annotated[int, Field(ge=0)]
    stiffness: NonNegative
    rest_length: NonNegative | None = None
    damping: NonNegative = 0.0


class JointSpec(Strict):
    i: Annotated[int, Field(ge=0)]
    j: Annotated[int, Field(ge=0)]
    length: Positive | None = None


class ConstantVelocitySpec(Strict):
    type: Literal["constant_velocity"]
    velocity: list[Finite]
    duration: Positive = float("inf")

    def build(self):
        return ConstantVelocity(tuple(self.velocity), self.duration)


class SinusoidSpec(Strict):
    type: Literal["sinusoid"]
    amplitude: Finite
    direction: list[Finite]
    omega: Finite
    phase: Finite = 0.0

    def build(self):
        return Sinusoid(self.amplitude, tuple(self.direction), self.omega, self.phase)


MotionSpec = Annotated[ConstantVelocitySpec | SinusoidSpec, Field(discriminator="type")]


class ParticleSpec(Strict):
    x: list[Finite]
    v: list[Finite] | None = None
    mass: Positive = 1.0
    pinned: bool = False
    name: str | None = None
    motion: MotionSpec | None = None  # a pinned particle following a prescribed motion


class PlaneSpec(Strict):
    normal: list[Finite]
    point: list[Finite]
    friction: NonNegative = 0.0
    motion: MotionSpec | None = None


class ContactSpec(Strict):
    dhat: Positive | None = None
    kappa: Positive | None = None
    area: NonNegative | list[NonNegative] | None = None
    epsv: Positive | None = None


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
    joints: list[JointSpec] = Field(default_factory=list)
    planes: list[PlaneSpec] = Field(default_factory=list)
    contact: ContactSpec | None = None
    run: RunSettings = Field(default_factory=RunSettings)

    @model_validator(mode="after")
    def _one_kind(self):
        if self.builder is not None:
            if self.particles or self.springs or self.joints:
                raise ValueError("builder: give either 'builder' or 'particles'/'springs'/'joints', not both, "
                                 f"got {format_value(self.builder)}")
        else:
            if self.dim is None:
                raise ValueError("dim: field required when the file lists its particles")
            if not self.particles:
                raise ValueError("particles: must list at least one particle (or name a 'builder')")
            if self.parameters:
                raise ValueError("parameters: only apply to a 'builder' scene, "
                                 f"got {format_value(sorted(self.parameters))}")
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
        if not item["loc"]:  # a whole-file rule (_one_kind): its message names the field itself
            lines.append(message)
        elif item["type"] == "missing":
            lines.append(f"{where}: field required")
        elif item["type"] == "extra_forbidden":
            lines.append(f"{where}: unknown field, got {format_value(item['input'])}")
        else:
            lines.append(f"{where}: {message}, got {format_value(item['input'])}")
    return HookeInputErrors(lines)


def parse(text: str, source: str = "scene file") -> SceneFile:
    """Validate a scene file's text; every problem is reported at once (schema and structure)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise HookeInputError(source, f"malformed TOML ({error})", show_value=False) from None
    problems = structural_problems(data)
    try:
        spec = SceneFile.model_validate(data)
    except ValidationError as error:
        raise HookeInputErrors(validation_errors(error).problems + problems) from None
    if problems:
        raise HookeInputErrors(problems)
    return spec


def structural_problems(data: dict) -> list[str]:
    """Problems between entries that the per-field schema cannot see: indices out of range,
    duplicate springs or joints, springs and joints whose endpoints coincide. Works on the raw
    TOML data and skips entries the schema will report anyway."""
    particles = data.get("particles")
    if not isinstance(particles, list):
        return []
    positions = [p.get("x") if isinstance(p, dict) else None for p in particles]
    problems: list[str] = []
    for table in ("springs", "joints"):
        entries = data.get(table)
        if not isinstance(entries, list):
            continue
        seen: dict[tuple[int, int], int] = {}
        for k, entry in enumerate(entries):
            if not isinstance(entry, dict):
                continue
            ends = []
            for end in ("i", "j"):
                index = entry.get(end)
                if isinstance(index, int) and not isinstance(index, bool) and index >= 0:
                    if index >= len(particles):  # (negative ones are the schema's to report)
                        problems.append(f"{table}[{k}].{end}: particle index out of range "
                                        f"[0, {len(particles)}), got {index}")
                    else:
                        ends.append(index)
            if len(ends) != 2:
                continue
            i, j = ends
            key = (min(i, j), max(i, j))
            if i == j:
                problems.append(f"{table}[{k}]: connects a particle to itself, got ({i}, {j})")
            elif key in seen:
                problems.append(f"{table}[{k}]: duplicates {table}[{seen[key]}] between particles "
                                f"{i} and {j}, got ({i}, {j})")
            else:
                seen[key] = k
                length_key = "rest_length" if table == "springs" else "length"
                if entry.get(length_key) is None and positions[i] == positions[j] and positions[i] is not None:
                    problems.append(f"{table}[{k}]: zero length: particles {i} and {j} coincide and "
                                    f"no {length_key} is given, got ({i}, {j})")
    return problems


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
    if spec.planes or spec.contact is not None:
        planes = [dict(normal=plane.normal, point=plane.point, friction=plane.friction,
                       motion=None if plane.motion is None else plane.motion.build())
                  for plane in spec.planes]
        contact = {} if spec.contact is None else spec.contact.model_dump(exclude_none=True)
        model = add_contact(model, planes, **contact)
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
                             pinned=particle.pinned, name=particle.name,
                             motion=None if particle.motion is None else particle.motion.build())
    for spring in spec.springs:
        builder.add_spring(spring.i, spring.j, stiffness=spring.stiffness,
                           rest_length=spring.rest_length, damping=spring.damping)
    for joint in spec.joints:
        builder.add_joint(joint.i, joint.j, length=joint.length)
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
