"""Scene files: TOML validated by a pydantic schema, then built into a :class:`Scene`
(:func:`load` reads a file, :func:`builtin_scene` one of :mod:`hooke.scenes`).

A scene file either lists its particles and springs, or names a ``builder`` (a registered Python
function, see :mod:`hooke.scenes.builders`) with its ``parameters``; docs/scene-files.md is the
full reference. Every problem is reported at once, one line each, as ``path.of.field: message,
got value`` (the CLI exits with code 2): the strict schema's (no string or bool taken for a
number, no float for an index) and those between fields, checked by the same functions as
:class:`~hooke.builder.ModelBuilder` uses (:func:`consistency_problems`).

    dim = 2
    gravity = [0.0, -9.81]
    [run]
    integrator = "symplectic_euler"
    dt = 0.001
    t_end = 2.0              # a whole number of steps of dt
    save_every = 10          # optional: a frame every 10 steps
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
    self_contact = true      # the [[surfaces]] repel each other and themselves

Air drag f_i = −c_i (v_i − w(t)) towards a wind w(t) (any scene, also builder scenes; see
:mod:`hooke.energies.drag`):

    [air]
    drag = 0.05              # c [N·s/m], or a list with one value per particle
    wind = [0.0, 2.0]        # steady wind velocity [m/s] (default 0)
    motion = { type = "sinusoid", amplitude = 0.1, direction = [0.0, 1.0], omega = 3.0 }
                             # optional: the air moving so; its velocity adds to the wind (a gust)

Contact surfaces (one table per body; a builder may add its body's with a ``surface`` flag):

    [[surfaces]]
    faces = [[0, 1], [1, 2], [2, 0]]   # segments in 2D, triangles (index triples) in 3D
    friction = 0.3                     # Coulomb μ with self-contact (a pair of surfaces: the mean)

Spheres (circles in 2D) and obstacle meshes (triangles in 3D, polylines in 2D), fixed or moving
(:mod:`hooke.obstacles`):

    [[spheres]]
    center = [0.0, 0.25, 0.0]
    radius = 0.25
    friction = 0.3
    [[obstacles]]
    mesh = "ramp.obj"        # a file meshio reads, relative to the scene file's folder, or:
    # vertices = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    # faces = [[0, 2, 1]]
    friction = 0.5

The zero of the energies that plots show (top level, default "zero"; "rest": above the static
equilibrium, for a body that moves about it, see :attr:`hooke.Scene.energy_reference`):

    energy_reference = "rest"
"""

from __future__ import annotations

import math
import os
import sys
import tomllib
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import (BaseModel, ConfigDict, Discriminator, Field, Tag, TypeAdapter,
                      ValidationError)

from ..air import check_drag, with_air
from ..builder import (ModelBuilder, _vector, add_contact, check_clear_of_planes,
                       check_distinct_pair, check_index, check_plane, contact_area,
                       contact_weights, joint_length, spring_rest_length)
from ..errors import HookeInputError, HookeInputErrors, as_path, collect, format_value
from ..obstacles import (check_sphere, joined_obstacles, obstacle_mesh, obstacle_problems,
                         sphere_problems)
from ..integrators import get as get_integrator
from ..model import SPRING_ENERGIES
from ..motion import ConstantVelocity, Sinusoid
from ..scene_setup import ENERGY_REFERENCES, Scene, check_save_every, step_count
from ..scenes import names as scene_names, source as builtin_source
from ..scenes.builders import parameter_problems, run_builder
from ..surfaces import check_face_shapes, check_faces, start_problems
from .files import parse_toml, read_text
from .pydantic_errors import error_lines

Finite = Annotated[float, Field(allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Index = Annotated[int, Field(ge=0)]


class Strict(BaseModel):
    # strict: no silent conversions (a string or a bool is not a number, 1.0 is not an index,
    # 1 is not a boolean); an int is accepted where a float is expected.
    model_config = ConfigDict(extra="forbid", strict=True)


class RunSettings(Strict):
    integrator: str | None = None
    dt: Positive | None = None
    t_end: Positive | None = None
    save_every: Annotated[int, Field(ge=1)] | None = None
    options: dict[str, Any] = Field(default_factory=dict)


class SpringSpec(Strict):
    i: Index
    j: Index
    stiffness: NonNegative
    rest_length: NonNegative | None = None
    damping: NonNegative = 0.0


class JointSpec(Strict):
    i: Index
    j: Index
    length: Positive | None = None


class ConstantVelocitySpec(Strict):
    vector: ClassVar[str] = "velocity"  # the field whose length must be the scene's dim
    type: Literal["constant_velocity"]
    velocity: list[Finite]
    duration: Positive = float("inf")

    def build(self):
        return ConstantVelocity(tuple(self.velocity), self.duration)


class SinusoidSpec(Strict):
    vector: ClassVar[str] = "direction"
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
    motion: MotionSpec | None = None  # pins the particle to a prescribed motion


class PlaneSpec(Strict):
    normal: list[Finite]
    point: list[Finite]
    friction: NonNegative = 0.0
    motion: MotionSpec | None = None


# One number for every particle or one per particle: the value's shape picks the member, so a
# bad value gets that member's message only.
Area = Annotated[Annotated[NonNegative, Tag("number")] | Annotated[list[NonNegative], Tag("list")],
                 Discriminator(lambda value: "list" if isinstance(value, list) else "number")]


class ContactSpec(Strict):
    dhat: Positive | None = None
    kappa: Positive | None = None
    area: Area | None = None
    epsv: Positive | None = None
    self_contact: bool | None = None


class AirSpec(Strict):
    drag: Area  # one number >= 0 or one per particle, as contact.area
    wind: list[Finite] | None = None
    motion: MotionSpec | None = None


class SurfaceSpec(Strict):
    faces: list[list[Index]]
    friction: NonNegative = 0.0


class SphereSpec(Strict):
    center: list[Finite]
    radius: Positive
    friction: NonNegative = 0.0
    motion: MotionSpec | None = None


class ObstacleSpec(Strict):
    mesh: str | None = None  # a file meshio reads, relative to the scene file's folder
    vertices: list[list[Finite]] | None = None
    faces: list[list[Index]] | None = None
    friction: NonNegative = 0.0
    motion: MotionSpec | None = None


class SceneFile(Strict):
    name: str | None = None
    description: str = ""
    builder: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    dim: Annotated[int, Field(ge=1, le=3)] | None = None
    gravity: list[Finite] | None = None
    spring_energy: Literal[SPRING_ENERGIES] = "hookean"  # type: ignore[valid-type]
    particles: list[ParticleSpec] = Field(default_factory=list)
    springs: list[SpringSpec] = Field(default_factory=list)
    joints: list[JointSpec] = Field(default_factory=list)
    planes: list[PlaneSpec] = Field(default_factory=list)
    surfaces: list[SurfaceSpec] = Field(default_factory=list)
    spheres: list[SphereSpec] = Field(default_factory=list)
    obstacles: list[ObstacleSpec] = Field(default_factory=list)
    contact: ContactSpec | None = None
    air: AirSpec | None = None
    run: RunSettings = Field(default_factory=RunSettings)
    energy_reference: Literal[ENERGY_REFERENCES] = "zero"  # type: ignore[valid-type]


_MOTION = TypeAdapter(MotionSpec)


# -- validation -------------------------------------------------------------------------------

def parse_value(text: str, field: str):
    """A value typed on a command line (``--param``, ``--option``): TOML's grammar (1e-8, 25, true,
    inf, [1, 2], "a b"), else a number Python reads (.5, 1E3), else the text itself (a word such
    as correction); digits other than ASCII's (Arabic-Indic, fullwidth) and underscores where
    TOML does not take them (0_0.1), which TOML does not read, are not a number either. One value: "1e-3\nfoo=1" is a document of two keys, taken as its text. A
    number past the largest float (1e400), which both read as inf, is refused naming ``field``
    and the text typed: shown as inf, the message named a value nobody gave."""
    try:
        document = tomllib.loads(f"value = {text}")
    except (tomllib.TOMLDecodeError, RecursionError):  # [[[[…: nested past the recursion limit
        document = {}
    if list(document) == ["value"]:
        value = document["value"]
    elif not text.isascii() or "_" in text:  # float() reads "١٢" or "１２" as 12, and
        return text  # "0_0.1" as 0.1 (Python's literal syntax), which no scene file holds
    else:
        try:
            value = float(text)
        except ValueError:
            return text
    problem = past_largest_float(value, text)
    if problem:
        raise HookeInputError(field, problem, text)
    return value


def past_largest_float(value, text: str) -> str | None:
    """The problem of ``value``, a number read from ``text`` as typed, if it is past the largest
    float (1e400, read as inf: shown as inf, a message named a value nobody gave); else None."""
    if isinstance(value, float) and math.isinf(value) and "inf" not in text.lower():
        return f"is past the largest float ({sys.float_info.max:.4g})"
    return None


def parse(text: str, source: str = "scene file", folder=None) -> SceneFile:
    """Validate a scene file's text; every problem is reported at once, one line each: the
    schema's (types, ranges, unknown and missing fields) and the checks between fields
    (:func:`consistency_problems`; obstacle mesh paths relative to ``folder``)."""
    data = parse_toml(text, source)
    try:
        spec, errors = SceneFile.model_validate(data), []
    except ValidationError as error:
        spec, errors = None, error.errors()
    problems = error_lines(errors, SceneFile) + consistency_problems(data, errors, folder)
    if problems:  # the run's options too, which are otherwise judged when the run is set up
        from .run_options import option_problems

        raise HookeInputErrors(problems + option_problems(data))
    return spec


class _Valid:
    """Values of the raw TOML data that passed the schema (no error at or below their location)."""

    INVALID = object()

    def __init__(self, data: dict, errors: list):
        self.data = data
        self.bad = {tuple(item["loc"][:k]) for item in errors for k in range(1, len(item["loc"]) + 1)}

    def __call__(self, *loc, default=None):
        if loc in self.bad:
            return self.INVALID
        value = self.data
        for part in loc:
            try:
                value = value[part]
            except (KeyError, IndexError, TypeError):
                return default
        return value

    def entries(self, table: str) -> list:
        entries = self.data.get(table)
        return entries if isinstance(entries, list) else []


def consistency_problems(data: dict, errors: list, folder=None) -> list[str]:
    """Problems between fields, which the per-field schema cannot see, on the values that passed
    it (``errors``: the schema's): a file either names a builder or lists particles; vectors have
    ``dim`` components; indices in range; no duplicate, self-connected or zero-length springs and
    joints; no joint between two pinned particles; planes non-degenerate with no particle starting
    on or below; one contact area per particle; surface faces valid and, with self-contact, no two
    surface elements touching; spheres and obstacle meshes valid (files read from ``folder``)
    with no particle starting in or on them; motions; a known integrator; t_end a whole number
    of steps. The same checks as ModelBuilder's (shared functions of :mod:`hooke.builder`),
    collected instead of stopping at the first."""
    valid, problems = _Valid(data, errors), []
    problems += _run_problems(valid) + _obstacle_source_problems(valid)
    if "builder" in data:
        return problems + _builder_problems(data, valid)
    if data.get("parameters"):
        problems.append("parameters: only apply to a 'builder' scene, got "
                        f"{format_value(sorted(data['parameters']))}")
    if "dim" not in data:
        problems.append("dim: field required when the file lists its particles")
    particles = valid.entries("particles")
    if not particles and valid("particles") is not valid.INVALID:
        problems.append("particles: must list at least one particle (or name a 'builder')")
    dim = valid("dim")
    if not isinstance(dim, int):
        return problems  # without a dimension the vectors cannot be checked
    n = len(particles)
    gravity = valid("gravity")
    if isinstance(gravity, list):
        collect(problems, _vector, gravity, dim, "gravity")
    x0: list = [None] * n
    pinned = [False] * n
    for k in range(n):
        where = f"particles[{k}]"
        x = valid("particles", k, "x")
        if isinstance(x, list):
            x0[k] = collect(problems, _vector, x, dim, f"{where}.x", squared=True)
        v = valid("particles", k, "v")
        if isinstance(v, list):
            collect(problems, _vector, v, dim, f"{where}.v", squared=True)
        motion = valid("particles", k, "motion")
        pinned[k] = valid("particles", k, "pinned") is True or motion not in (None, valid.INVALID)
        _motion_problems(problems, motion, valid.INVALID, dim, where)
    energy = valid("spring_energy", default="hookean")
    for table in ("springs", "joints"):
        seen: dict[tuple[int, int], int] = {}
        for k in range(len(valid.entries(table))):
            ends = [valid(table, k, end) for end in ("i", "j")]
            ends = [collect(problems, check_index, index, n, f"{table}[{k}].{end}")
                    if isinstance(index, int) else None for index, end in zip(ends, "ij")]
            if None in ends:
                continue
            i, j = ends
            key = collect(problems, check_distinct_pair, table, k, i, j, seen)
            if key is None:
                continue
            seen[key] = k
            if x0[i] is None or x0[j] is None:
                continue
            if table == "springs":
                rest, damping = valid(table, k, "rest_length"), valid(table, k, "damping", default=0.0)
                if valid.INVALID not in (rest, damping):
                    collect(problems, spring_rest_length, k, x0[i], x0[j], i, j, rest, damping,
                            energy if energy in SPRING_ENERGIES else "hookean")
            else:
                length = valid(table, k, "length")
                if length is not valid.INVALID:
                    collect(problems, joint_length, k, x0[i], x0[j], i, j, length)
                if pinned[i] and pinned[j]:
                    problems.append(f"joints[{k}]: joins two pinned particles {i} and {j} (nothing "
                                    f"can move to keep its length), got ({i}, {j})")
    return (problems + _contact_problems(valid, dim, x0, pinned, folder)
            + _air_problems(valid, dim, n))


def _air_problems(valid: _Valid, dim: int, n: int) -> list[str]:
    """[air]: one drag value per particle when a list, the wind and the motion with ``dim``
    components (with a builder, the body's counts are known once it is built: build() checks
    them there, as the planes')."""
    problems: list[str] = []
    drag = valid("air", "drag")
    if isinstance(drag, list):
        collect(problems, check_drag, drag, n)
    wind = valid("air", "wind")
    if isinstance(wind, list):
        collect(problems, _vector, wind, dim, "air.wind", squared=True)
    _motion_problems(problems, valid("air", "motion"), valid.INVALID, dim, "air")
    return problems


def _run_problems(valid: _Valid) -> list[str]:
    problems: list[str] = []
    integrator = valid("run", "integrator")
    if isinstance(integrator, str):
        collect(problems, get_integrator, integrator, prefix="run")
    dt, t_end = valid("run", "dt"), valid("run", "t_end")
    if isinstance(dt, (int, float)) and isinstance(t_end, (int, float)):
        collect(problems, step_count, float(t_end), float(dt), prefix="run")
    save_every = valid("run", "save_every")
    if isinstance(save_every, int):  # its bound is the Scene's: named here as the file's field
        collect(problems, check_save_every, save_every, prefix="run")
    return problems


def _builder_problems(data: dict, valid: _Valid) -> list[str]:
    problems = []
    listed = [table for table in ("particles", "springs", "joints") if data.get(table)]
    if listed:
        problems.append(f"builder: give either 'builder' or 'particles'/'springs'/'joints', not "
                        f"both, got {format_value(data['builder'])} and {', '.join(listed)}")
    for key in ("dim", "gravity", "spring_energy"):
        if key in data:
            problems.append(f"{key}: only applies to a file that lists its particles (the builder "
                            f"sets it), got {format_value(data[key])}")
    builder, parameters = valid("builder"), valid("parameters", default={})
    if isinstance(builder, str) and isinstance(parameters, dict):
        problems += parameter_problems(builder, parameters)
    # the planes' dimension is the built model's: build() checks them (all at once)
    return problems


def _motion_problems(problems: list[str], motion, invalid, dim: int, where: str) -> None:
    if motion is None or motion is invalid:
        return
    spec = _MOTION.validate_python(motion)
    if collect(problems, _vector, getattr(spec, spec.vector), dim,
               f"{where}.motion.{spec.vector}") is None:
        return
    try:
        spec.build()
    except HookeInputError as error:  # named motion.<field>: put it under its owner
        problems.append(f"{where}.{error}")


def _contact_problems(valid: _Valid, dim: int, x0: list, pinned: list[bool],
                      folder=None) -> list[str]:
    problems: list[str] = []
    planes = []
    for k in range(len(valid.entries("planes"))):
        normal, point = valid("planes", k, "normal"), valid("planes", k, "point")
        friction = valid("planes", k, "friction", default=0.0)
        given = all(isinstance(value, (list, int, float)) for value in (normal, point, friction))
        planes.append(collect(problems, check_plane, k, normal, point, friction, dim) if given else None)
        _motion_problems(problems, valid("planes", k, "motion"), valid.INVALID, dim, f"planes[{k}]")
    area = valid("contact", "area")
    area = 1.0 if area is None else area
    if area is not valid.INVALID:
        area = collect(problems, contact_area, area, len(x0))
    known = all(item is not None for item in x0) and area is not None \
        and area is not valid.INVALID
    weights = contact_weights(area, pinned) if known else None
    if planes and known and all(item is not None for item in planes):
        collect(problems, check_clear_of_planes, np.array([plane[0] for plane in planes]),
                np.array([plane[1] for plane in planes]), weights, np.array(x0))
    surface_problems, surfaces = _surface_problems(valid, dim, x0)
    return problems + surface_problems + _obstacle_problems(valid, dim, x0, weights, surfaces,
                                                            folder)


def _obstacle_problems(valid: _Valid, dim: int, x0: list, weights, surfaces, folder) -> list[str]:
    """[[spheres]] and [[obstacles]] valid (an obstacle's mesh read from ``folder``) and, when
    the particles, their contact weights and the surfaces are known, none inside or touching."""
    problems: list[str] = []
    spheres = []
    for k in range(len(valid.entries("spheres"))):
        center, radius = valid("spheres", k, "center"), valid("spheres", k, "radius")
        friction = valid("spheres", k, "friction", default=0.0)
        given = isinstance(center, list) and all(isinstance(value, (int, float))
                                                 for value in (radius, friction))
        spheres.append(collect(problems, check_sphere, k, center, radius, friction, dim)
                       if given else None)
        _motion_problems(problems, valid("spheres", k, "motion"), valid.INVALID, dim,
                         f"spheres[{k}]")
    if spheres and weights is not None and all(item is not None for item in spheres):
        problems += sphere_problems(np.array([s[0] for s in spheres]),
                                    np.array([s[1] for s in spheres]), weights, np.array(x0))
    meshes = []
    for k in range(len(valid.entries("obstacles"))):
        source = _obstacle_source(valid, k)
        meshes.append(None if source is None else
                      collect(problems, obstacle_mesh, k, source, dim, folder))
        _motion_problems(problems, valid("obstacles", k, "motion"), valid.INVALID, dim,
                         f"obstacles[{k}]")
    if meshes and weights is not None and surfaces is not None \
            and all(item is not None for item in meshes):
        joined = joined_obstacles([m[0] for m in meshes], [m[1] for m in meshes], dim)
        problems += obstacle_problems(joined["obstacle_vertices"], joined["obstacle_faces"],
                                      joined["obstacle_of_vertex"], surfaces, weights,
                                      np.array(x0))
    return problems


def _obstacle_source(valid: _Valid, k: int):
    """obstacles[k]'s mesh: its file path or its (vertices, faces); None when not given
    properly (:func:`_obstacle_source_problems` says why) or invalid by the schema."""
    mesh = valid("obstacles", k, "mesh")
    vertices, faces = valid("obstacles", k, "vertices"), valid("obstacles", k, "faces")
    if isinstance(mesh, str) and vertices is None and faces is None:
        return mesh
    if mesh is None and isinstance(vertices, list) and isinstance(faces, list):
        return vertices, faces
    return None


def _obstacle_source_problems(valid: _Valid) -> list[str]:
    problems = []
    for k, entry in enumerate(valid.entries("obstacles")):
        given = [key for key in ("mesh", "vertices", "faces") if isinstance(entry, dict)
                 and key in entry]
        if isinstance(entry, dict) and given not in (["mesh"], ["vertices", "faces"]):
            problems.append(f"obstacles[{k}]: give either 'mesh' (a file meshio reads) or "
                            f"'vertices' and 'faces', got {format_value(given)}")
    return problems


def _surface_problems(valid: _Valid, dim: int, x0: list) -> tuple[list[str], np.ndarray | None]:
    """[[surfaces]]: faces valid (arity, indices in range, no repeated particle, not degenerate
    at the start) and, with ``contact.self_contact``, no two elements touching at the start;
    with all the faces (f, dim) when they are valid (None otherwise)."""
    problems: list[str] = []
    surfaces = []
    for k in range(len(valid.entries("surfaces"))):
        faces = valid("surfaces", k, "faces")
        if isinstance(faces, list):
            surfaces.append(collect(problems, check_faces, k, faces, len(x0), dim))
    known = all(item is not None for item in x0)
    if known:
        for k, faces in enumerate(surfaces):
            if faces is not None:
                collect(problems, check_face_shapes, k, faces, np.array(x0))
    self_contact = valid("contact", "self_contact")
    if self_contact is True and not valid.entries("surfaces"):
        problems.append("contact.self_contact: needs a contact surface ([[surfaces]]), got True")
    if self_contact is True and known and surfaces and not problems \
            and all(faces is not None for faces in surfaces):
        problems += start_problems(np.concatenate(surfaces), np.array(x0))
    if problems or not all(faces is not None for faces in surfaces):
        return problems, None
    return problems, (np.concatenate(surfaces) if surfaces else np.empty((0, dim), np.int64))


def _motion(spec):
    return None if spec.motion is None else spec.motion.build()


def build(spec: SceneFile, text: str | None = None, overrides: dict[str, Any] | None = None,
          default_name: str = "custom", folder=None) -> Scene:
    """Turn a validated scene file into a Scene (``overrides`` replace builder parameters;
    mesh paths, obstacles' and builders', are relative to ``folder``, the scene file's)."""
    analytic = None
    parameters: dict[str, Any] = {}
    if spec.builder is not None:
        parameters = {**spec.parameters, **(overrides or {})}
        model, analytic = run_builder(spec.builder, parameters, folder)
    else:
        if overrides:
            name = next(iter(overrides))
            raise HookeInputError(name, "is not a parameter: this scene has no builder", overrides[name])
        model = _explicit_model(spec)
    if spec.planes or spec.surfaces or spec.spheres or spec.obstacles or spec.contact is not None:
        planes = [dict(normal=plane.normal, point=plane.point, friction=plane.friction,
                       motion=_motion(plane)) for plane in spec.planes]
        spheres = [dict(center=sphere.center, radius=sphere.radius, friction=sphere.friction,
                        motion=_motion(sphere)) for sphere in spec.spheres]
        obstacles = [dict(mesh=obstacle.mesh if obstacle.mesh is not None else
                          (obstacle.vertices, obstacle.faces), friction=obstacle.friction,
                          motion=_motion(obstacle)) for obstacle in spec.obstacles]
        contact = {} if spec.contact is None else spec.contact.model_dump(exclude_none=True)
        model = add_contact(model, planes, [surface.model_dump() for surface in spec.surfaces],
                            spheres, obstacles, folder, **contact)
    if spec.air is not None:
        model = with_air(model, spec.air.drag, spec.air.wind, _motion(spec.air))
    run = spec.run
    settings = {key: value for key, value in (("integrator", run.integrator), ("dt", run.dt),
                                              ("t_end", run.t_end), ("save_every", run.save_every))
                if value is not None}
    return Scene(model, options=dict(run.options), name=spec.name or default_name,
                 description=spec.description, parameters=parameters,
                 analytic_solution=analytic, source=text,
                 energy_reference=spec.energy_reference, save_every_given=run.save_every is not None,
                 folder=None if folder is None else os.path.abspath(folder), **settings)


def _explicit_model(spec: SceneFile):
    builder = ModelBuilder(dim=spec.dim, gravity=spec.gravity, spring_energy=spec.spring_energy)
    for particle in spec.particles:
        builder.add_particle(particle.x, mass=particle.mass, velocity=particle.v,
                             pinned=particle.pinned, name=particle.name,
                             motion=_motion(particle))
    for spring in spec.springs:
        builder.add_spring(spring.i, spring.j, stiffness=spring.stiffness,
                           rest_length=spring.rest_length, damping=spring.damping)
    for joint in spec.joints:
        builder.add_joint(joint.i, joint.j, length=joint.length)
    return builder.finalize()


def load(path) -> Scene:
    """Read and build a scene file."""
    path = as_path(path, "path")
    text = read_text(path, "path", "scene file")
    return build(parse(text, source=str(path), folder=path.parent), text,
                 default_name=path.stem, folder=path.parent)


def builtin_scene(name: str, **parameters) -> Scene:
    """The built-in scene ``name`` (``hooke.scene``), with builder parameters overridden by
    keywords."""
    text = builtin_source(name)
    return build(parse(text, source=name), text, overrides=parameters, default_name=name)


def named_scene(scene, field: str) -> Scene:
    """A built-in scene's name or a scene file's path (a str or a Path) as its Scene; a problem
    of the file itself (missing, a FIFO, too large) and anything else is named ``field``, the
    argument that gave it (``SCENE_OR_FILE`` on the command line, ``scene`` in the API)."""
    if isinstance(scene, str) and scene in scene_names():
        return builtin_scene(scene)
    # os.path.exists: Path's raises OSError for a name too long for the file system
    if isinstance(scene, (str, os.PathLike)) and str(scene) and (
            str(scene).endswith(".toml") or os.path.exists(scene)):
        try:
            return load(scene)
        except HookeInputError as error:  # the file itself (missing, a FIFO): as the argument
            if error.field != "path":
                raise
            raise HookeInputError(field, error.problem, error.value,
                                  show_value=error.show_value) from None
    raise HookeInputError(field, f"is neither a built-in scene ({', '.join(scene_names())}) "
                          "nor a scene file", scene)
