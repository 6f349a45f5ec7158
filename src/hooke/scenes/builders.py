"""Scene builders: the Python half of built-in scenes whose structure needs code.

Contract: a builder is a function with keyword-only, annotated parameters and no defaults (the
values live in the scene's TOML file, one source of truth), registered with ``@builder``. It
returns ``(model, analytic)`` where ``analytic`` is None or a function t (frames,) → x (frames, n, d).
Parameters are validated from the annotations by pydantic before the call; one annotated
:data:`MeshFile` names a mesh shipped in hooke/scenes/meshes or else a path relative to the scene
file's folder, as an obstacle's mesh is (the builder gets the path to read). A builder whose
counts set its size checks them against this machine's memory and the time a build may take
before it builds anything (:func:`hooke.memory.check_model_size`, naming the parameters).
"""

from __future__ import annotations

import inspect
import math
from dataclasses import replace
from importlib import resources
from typing import Annotated, Any, Callable, Literal

import numpy as np
from pydantic import ConfigDict, Field, ValidationError, create_model

from ..array_models import model_from_arrays
from ..builder import ModelBuilder, _vector, add_contact
from ..mesh_topology import (boundary_faces, grid_bending, grid_quads, grid_springs,
                             lattice_edges, lattice_tetrahedra)
from ..errors import HookeInputError, collect, python_scalars
from ..io.files import mesh_path, read_mesh
from ..io.pydantic_errors import validation_errors
from ..memory import check_model_size
from ..model import SPRING_ENERGIES
from ..motion import ConstantVelocity, Sinusoid

Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Finite = Annotated[float, Field(allow_inf_nan=False)]
Count = Annotated[int, Field(ge=1)]


class _MeshFileMark:
    """Pydantic ignores it: it tells :func:`run_builder` which parameters are mesh files."""


MeshFile = Annotated[str, _MeshFileMark()]

_BUILDERS: dict[str, Callable] = {}
_SCHEMAS: dict[str, Any] = {}
_MESH_FILES: dict[str, list[str]] = {}  # builder → its MeshFile parameters


def builder(function: Callable) -> Callable:
    signature = inspect.signature(function, eval_str=True)
    fields = {name: (p.annotation, ...) for name, p in signature.parameters.items()}
    _SCHEMAS[function.__name__] = create_model(
        f"{function.__name__}_parameters", __config__=ConfigDict(extra="forbid"), **fields)
    _BUILDERS[function.__name__] = function
    _MESH_FILES[function.__name__] = [name for name, p in signature.parameters.items()
                                      if p.annotation is MeshFile]
    return function


def parameter_names(name: str) -> list[str]:
    return list(_SCHEMAS[name].model_fields)


def parameter_schema(name: str) -> dict[str, Any]:
    """JSON schema of builder ``name``'s parameters: their types and bounds (for forms)."""
    return _SCHEMAS[name].model_json_schema()


def _known(name: str) -> None:
    if name not in _BUILDERS:
        raise HookeInputError("builder", f"unknown scene builder (known: {', '.join(_BUILDERS)})", name)


def parameter_problems(name: str, parameters: dict[str, Any]) -> list[str]:
    """A scene file's builder parameters against the builder's schema, strictly (no string or
    bool taken for a number, no 5.0 for a count): one line per problem."""
    problems: list[str] = []
    collect(problems, _known, name)
    if problems:
        return problems
    try:
        _SCHEMAS[name].model_validate(parameters, strict=True)
    except ValidationError as error:
        problems += validation_errors(error, _SCHEMAS[name], prefix="parameters").problems
    return problems


def run_builder(name: str, parameters: dict[str, Any], folder=None):
    """Build the scene; ``parameters`` are the file's with overrides from code (``hooke.scene``,
    sweeps, the viewer), validated as strictly as the file's (NumPy's scalars count as Python's:
    ``np.int64(40)`` is a count, ``40.0`` and ``True`` are not); mesh files not shipped are
    relative to ``folder``, the scene file's (the current directory without one)."""
    _known(name)
    try:
        checked = _SCHEMAS[name].model_validate(python_scalars(parameters), strict=True)
    except ValidationError as error:
        raise validation_errors(error, _SCHEMAS[name], prefix="parameters") from None
    values = checked.model_dump()
    for key in _MESH_FILES[name]:
        values[key] = _mesh_file(values[key], f"parameters.{key}", folder)
    return _BUILDERS[name](**values)


def _mesh_file(value: str, field: str, folder) -> str:
    packaged = resources.files("hooke.scenes") / "meshes" / value
    return str(packaged) if value and packaged.is_file() else str(mesh_path(value, field, folder))


def _harmonic(x0: float, v0: float, omega: float):
    def analytic(t):
        t = np.asarray(t, dtype=float)
        x = np.zeros((t.size, 2, 1))
        x[:, 1, 0] = x0 * np.cos(omega * t) + v0 / omega * np.sin(omega * t)
        return x
    return analytic


@builder
def harmonic(*, x0: Finite, v0: Finite, stiffness: Positive, mass: Positive):
    """Seed 000's 1D system: a particle on a zero-rest-length spring to a fixed particle at 0,
    f = −k x; analytic x(t) = x0 cos(ωt) + (v0/ω) sin(ωt), ω = √(k/m)."""
    b = ModelBuilder(dim=1)
    anchor = b.add_particle([0.0], mass=1.0, pinned=True, name="anchor")
    bob = b.add_particle([x0], mass=mass, velocity=[v0], name="mass")
    b.add_spring(anchor, bob, stiffness=stiffness, rest_length=0.0)
    omega = math.sqrt(stiffness / mass)
    if not 0 < omega < math.inf:  # the analytic solution would be NaN (a RuntimeWarning)
        raise HookeInputError("parameters.stiffness", f"over parameters.mass = {mass:g} gives "
                              f"ω = √(k/m) = {omega:g} rad/s; ω must be a finite number > 0",
                              stiffness)
    return b.finalize(), _harmonic(x0, v0, omega)


@builder
def cloth2d(*, nx: Count, ny: Count, spacing: Positive, mass: Positive, stiffness: NonNegative,
            damping: NonNegative, gravity: Finite):
    """A vertical nx × ny sheet in the xy plane (structural and both diagonal springs) hanging
    from its two top corners."""
    check_model_size("parameters.nx × ny", (nx, ny), nx * ny, 4 * nx * ny)
    b = ModelBuilder(dim=2, gravity=(0.0, gravity))
    ids = b.grid(nx, ny, spacing=spacing, origin=(-(nx - 1) * spacing / 2, -(ny - 1) * spacing),
                 mass=mass, stiffness=stiffness, damping=damping)
    b.pin(int(ids[0, -1]))
    b.pin(int(ids[-1, -1]))
    return b.finalize(), None


def _horizontal_chain(n: int, length: float, mass: float, gravity: float, link):
    """n particles of ``mass`` at spacing length/n along x from a pinned support at the origin,
    in the xy plane with gravity along y, each linked to the one before by ``link(b, i, j)``."""
    check_model_size("parameters.n", n, n + 1, n)
    b = ModelBuilder(dim=2, gravity=(0.0, gravity))
    previous = b.add_particle((0.0, 0.0), mass=mass, pinned=True, name="support")
    segment = length / n
    for k in range(1, n + 1):
        current = b.add_particle((k * segment, 0.0), mass=mass)
        link(b, previous, current)
        previous = current
    return b.finalize(), None


@builder
def chain(*, n: Count, length: Positive, mass: Positive, stiffness: NonNegative,
          damping: NonNegative, gravity: Finite):
    """A chain of n particles (each of ``mass``) on springs from a pinned support at the origin,
    released from the horizontal, in the xy plane."""
    return _horizontal_chain(n, length, mass, gravity, lambda b, i, j: b.add_spring(
        i, j, stiffness=stiffness, damping=damping))


@builder
def jointed_chain(*, n: Count, length: Positive, mass: Positive, gravity: Finite):
    """The same chain on rigid joints (links of length/n): the benchmark's hanging chain, whose
    free end whips round near t = 1.4 s (for length 1 m)."""
    return _horizontal_chain(n, length, mass, gravity, lambda b, i, j: b.add_joint(i, j))


@builder
def chain_pile(*, n: Count, length: Positive, mass: Positive, height: Finite, tilt: Finite,
               bend: Finite, gravity: Finite, surface: bool):
    """A free chain in the xy plane for dropping on the ground: n + 1 particles of ``mass`` on
    n rigid joints of length/n, particle 0 the lowest at (0, ``height``), link k leaning
    tilt + bend·sin(2π(k + ½)/n) degrees from the vertical (towards +x upwards): a gentle S,
    since a straight vertical chain would land on its end and balance there. Every particle's
    barrier weight is a link's length (``set_contact(area=...)``: the length of chain it stands
    for). ``surface``: the links are a contact surface (the segments between consecutive
    particles), so that with ``[contact] self_contact = true`` links that share no particle
    repel and the chain cannot pass through itself where it piles up."""
    check_model_size("parameters.n", n, n + 1, n)
    b = ModelBuilder(dim=2, gravity=(0.0, gravity))
    link = length / n
    angle = np.radians(tilt + bend * np.sin(2.0 * np.pi * (np.arange(n) + 0.5) / n))
    steps = link * np.stack([np.sin(angle), np.cos(angle)], axis=1)
    x = np.vstack([[0.0, height], [0.0, height] + np.cumsum(steps, axis=0)])
    for k in range(n + 1):
        b.add_particle(x[k], mass=mass)
        if k:
            b.add_joint(k - 1, k, length=link)
    if surface:
        b.add_surface(np.stack([np.arange(n), np.arange(1, n + 1)], axis=1))
    b.set_contact(area=link)
    return b.finalize(), None


@builder
def tet_mesh(*, mesh: MeshFile, mass: Positive, stiffness: NonNegative, damping: NonNegative,
             gravity: list[Finite], fix_tolerance: NonNegative, scale: Positive,
             pin_lowest: bool, spin: list[Finite]):
    """Seed 001's soft body: the tetrahedral mesh ``mesh`` (a file shipped in hooke/scenes/meshes
    or a path meshio reads), tet edges as springs, vertices within ``fix_tolerance`` of the lowest
    y (its base) fixed when ``pin_lowest`` (a free body, for example dropped on a contact plane,
    otherwise). ``spin`` [rad/s]: the angular velocity the body starts with about the centroid c
    of its base, v = spin × (x − c) on every free vertex (a push that sets it rocking on its
    base); [0, 0, 0] starts it at rest."""
    angular = _vector(spin, 3, "parameters.spin", squared=True)
    b = ModelBuilder(dim=3, gravity=gravity)
    data = read_mesh(mesh, "parameters.mesh")
    data.points = np.asarray(data.points, dtype=float) * scale
    ids = b.from_mesh(data, mass=mass, stiffness=stiffness, damping=damping)
    y = np.asarray(data.points)[:, 1]
    base = ids[np.abs(y - y.min()) <= fix_tolerance]
    if pin_lowest:
        for i in base:
            b.pin(int(i))
    model = b.finalize()
    velocity = np.cross(angular, model.x0 - model.x0[base].mean(axis=0))
    return replace(model, v0=np.where(model.pinned[:, None], 0.0, velocity)), None


def _square(side, n_seg, density, stiffness, gravity, spring_energy):
    """Seed 004's elastic square on a ModelBuilder, and its (n_seg + 1, n_seg + 1) node indices."""
    check_model_size("parameters.n_seg", n_seg, (n_seg + 1) ** 2, 4 * (n_seg + 1) ** 2)
    b = ModelBuilder(dim=2, gravity=gravity, spring_energy=spring_energy)
    segment = side / n_seg
    ids = b.grid(n_seg + 1, n_seg + 1, spacing=segment, origin=(-side / 2, -side / 2),
                 mass=density * side * side / (n_seg + 1) ** 2, stiffness=stiffness)
    return b, ids


@builder
def square(*, side: Positive, n_seg: Count, density: Positive, stiffness: NonNegative,
           gravity: list[Finite], spring_energy: Literal[SPRING_ENERGIES]):  # type: ignore[valid-type]
    """Seed 004's elastic square: (n_seg + 1)² nodes of mass density·side²/(n_seg + 1)², node
    i·(n_seg + 1) + j at (−side/2 + i·side/n_seg, −side/2 + j·side/n_seg), horizontal, vertical
    and both diagonal springs of each cell (rest lengths from this configuration). Contact planes
    come from the scene file's ``[[planes]]``."""
    return _square(side, n_seg, density, stiffness, gravity, spring_energy)[0].finalize(), None


def _triangulated_square(b: ModelBuilder, side, n_seg, density, stiffness, origin,
                         surface: bool) -> np.ndarray:
    """A square of (n_seg + 1)² nodes on ``b`` (lower-left corner at ``origin``), its cells
    split into two triangles along alternating diagonals (a union jack, symmetric about the
    centre), a spring on every triangle edge; returns the (n_seg + 1, n_seg + 1) node indices."""
    ids = b.grid(n_seg + 1, n_seg + 1, spacing=side / n_seg, origin=origin,
                 mass=density * side * side / (n_seg + 1) ** 2, stiffness=stiffness,
                 diagonals=False, surface=surface)
    for i in range(n_seg):
        for j in range(n_seg):
            if (i + j) % 2 == 0:
                b.add_spring(int(ids[i, j]), int(ids[i + 1, j + 1]), stiffness=stiffness)
            else:
                b.add_spring(int(ids[i + 1, j]), int(ids[i, j + 1]), stiffness=stiffness)
    return ids


@builder
def squares(*, side: Positive, n_seg: Count, density: Positive, stiffness: NonNegative,
            gravity: list[Finite], spring_energy: Literal[SPRING_ENERGIES],  # type: ignore[valid-type]
            offset: list[Finite], surface: bool):
    """The phys-sim-book's self-contact scene as mass-spring bodies: two squares of ``side``
    with (n_seg + 1)² nodes each of mass density·side²/(n_seg + 1)², the first centred at the
    origin, the second moved by ``offset``; every cell split into two triangles (alternating
    diagonals) with a spring on every triangle edge. ``surface``: each square's boundary loop
    is a contact surface (``[contact] self_contact = true`` makes them repel). Nodes numbered
    i·(n_seg + 1) + j in the first square, then the same in the second."""
    check_model_size("parameters.n_seg", n_seg, 2 * (n_seg + 1) ** 2, 6 * (n_seg + 1) ** 2)
    b = ModelBuilder(dim=2, gravity=gravity, spring_energy=spring_energy)
    corner = np.array([-side / 2, -side / 2])
    shift = _vector(offset, 2, "parameters.offset")
    for origin in (corner, corner + shift):
        _triangulated_square(b, side, n_seg, density, stiffness, origin, surface)
    return b.finalize(), None


@builder
def square_press(*, side: Positive, n_seg: Count, density: Positive, stiffness: NonNegative,
                 gravity: list[Finite], spring_energy: Literal[SPRING_ENERGIES],  # type: ignore[valid-type]
                 speed: Finite, duration: Positive):
    """:func:`square` with its top row (j = n_seg) pinned and driven down at ``speed`` [m/s] for
    ``duration`` [s], then held: a moving Dirichlet boundary, which ``implicit_euler`` imposes
    inside its solve (the pinned nodes sit exactly on their path at every step)."""
    b, ids = _square(side, n_seg, density, stiffness, gravity, spring_energy)
    press = ConstantVelocity((0.0, -speed), duration)
    for node in ids[:, -1]:
        b.pin(int(node), motion=press)
    return b.finalize(), None


@builder
def cloth3d(*, nx: Count, nz: Count, spacing: Positive, height: Finite, tilt: Finite,
            mass: Positive, stiffness: NonNegative, damping: NonNegative, gravity: list[Finite]):
    """An nx × nz cloth in 3D (structural and both diagonal springs) centred at (0, ``height``,
    0), in the xz plane turned by ``tilt`` degrees about the z axis (its +x edge up), nothing
    pinned: it falls onto the scene file's ``[[planes]]``. Particle (i, k) is numbered i·nz + k."""
    check_model_size("parameters.nx × nz", (nx, nz), nx * nz, 4 * nx * nz, built_from="arrays")
    angle = np.radians(tilt)
    i, k = np.meshgrid(np.arange(nx) - (nx - 1) / 2, np.arange(nz) - (nz - 1) / 2, indexing="ij")
    across = spacing * i.ravel()
    x0 = np.stack([np.cos(angle) * across, height + np.sin(angle) * across,
                   spacing * k.ravel()], axis=1)
    return model_from_arrays(3, x0, mass, grid_springs(nx, nz), stiffness, damping=damping,
                             gravity=gravity, cells={"quad": grid_quads(nx, nz)}), None


def _stacked_pendulum(masses, length, gravity, top_velocity, support_amplitude, support_omega):
    b = ModelBuilder(dim=3, gravity=gravity)
    motion = (Sinusoid(support_amplitude, (1.0, 0.0, 0.0), support_omega)
              if support_amplitude != 0.0 else None)
    previous = b.add_particle((0.0, 0.0, 0.0), pinned=True, name="support", motion=motion)
    for k, mass in enumerate(masses, start=1):
        velocity = top_velocity if k == len(masses) else None
        current = b.add_particle((0.0, 0.0, k * length), mass=mass, velocity=velocity, name=f"mass{k}")
        b.add_joint(previous, current)
        previous = current
    return b.finalize(), None


@builder
def pendulum(*, masses: Annotated[list[Positive], Field(min_length=1)], length: Positive,
             gravity: list[Finite], top_velocity: list[Finite], support_amplitude: Finite,
             support_omega: Finite):
    """Seed 003's pendulum in Cartesian coordinates: a support at the origin, one mass per entry
    of ``masses`` stacked straight above it at z = L, 2L, … on joints of length L, the top mass
    starting with ``top_velocity``. With ``support_amplitude`` ≠ 0 the support moves as
    amplitude·sin(omega·t) along x (seed 003's ``box(t)``)."""
    check_model_size("parameters.masses", f"{len(masses)} masses", len(masses) + 1, len(masses))
    return _stacked_pendulum(masses, length, gravity, top_velocity, support_amplitude, support_omega)


@builder
def npendulum(*, n: Count, mass: Positive, length: Positive, gravity: list[Finite],
              top_velocity: list[Finite], support_amplitude: Finite, support_omega: Finite):
    """The N-link version of :func:`pendulum`: n equal masses, each link of length ``length``."""
    check_model_size("parameters.n", n, n + 1, n)
    return _stacked_pendulum([mass] * n, length, gravity, top_velocity, support_amplitude,
                             support_omega)


@builder
def cloth(*, n: Annotated[int, Field(ge=2)], size: Positive, height: Finite, mass: Positive,
          stiffness: NonNegative, damping: NonNegative, gravity: list[Finite]):
    """A horizontal n × n cloth of side ``size`` at y = ``height`` (structural and both shear
    springs: 2n(n−1) + 2(n−1)² springs, 39,402 for n = 100), hanging from the two corners of
    its x = 0 edge. Built from arrays (:func:`hooke.array_models.model_from_arrays`): 1000 × 1000
    (about 4 million springs) takes seconds."""
    check_model_size("parameters.n", n, n * n, 4 * n * n, built_from="arrays")
    pinned = np.zeros(n * n, dtype=bool)
    pinned[[0, n - 1]] = True
    return model_from_arrays(3, _level_grid(n, size / (n - 1), height), mass, grid_springs(n, n),
                             stiffness, damping=damping, pinned=pinned, gravity=gravity,
                             cells={"quad": grid_quads(n, n)}), None


def _level_grid(n: int, spacing: float, height: float, start: float = 0.0) -> np.ndarray:
    """(n², 3) particle (i, j) of a level n × n grid at (start + i·spacing, height,
    start + j·spacing), numbered i·n + j (as :func:`hooke.mesh_topology.grid_springs`)."""
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return np.stack([start + i.ravel() * spacing, np.full(n * n, height),
                     start + j.ravel() * spacing], axis=1)


@builder
def cloth_drape(*, n: Annotated[int, Field(ge=2)], size: Positive, height: Finite, tilt: Finite,
                mass: Positive, stiffness: NonNegative, bending: NonNegative,
                damping: NonNegative, gravity: list[Finite]):
    """An n × n cloth of side ``size`` [m] and total ``mass`` [kg] centred at (0, ``height``, 0),
    level and turned by ``tilt`` degrees about the z axis (its +x edge up), free, with structural
    and shear springs and its triangles (two per grid cell) as a contact surface, each
    particle's contact area (size/(n − 1))² (the cloth's area per particle, for the planes' and
    spheres' barrier). ``stiffness`` is the same sheet at every n: a square lattice of springs k
    stretched by a strain ε carries k·ε per unit width whatever its spacing, so the drape looks
    the same at n = 40, 80, 160. ``bending`` [N/m] adds springs between second neighbours
    (:func:`hooke.mesh_topology.grid_bending`), so that the cloth folds in curves instead of
    crumpling at every row; spring damping acts on them too. Particle (i, j) is i·n + j."""
    check_model_size("parameters.n", n, n * n, 6 * n * n, built_from="arrays")
    spacing = size / (n - 1)
    quads = grid_quads(n, n)
    springs = grid_springs(n, n)
    hinges = grid_bending(n, n) if bending > 0 else np.empty((0, 2), dtype=np.int64)
    level = _level_grid(n, spacing, 0.0, -size / 2)
    angle = np.radians(tilt)
    x0 = np.stack([np.cos(angle) * level[:, 0], height + np.sin(angle) * level[:, 0],
                   level[:, 2]], axis=1)
    model = model_from_arrays(3, x0, mass / n ** 2, np.concatenate([springs, hinges]),
                              np.repeat([stiffness, bending], [len(springs), len(hinges)]),
                              damping=damping, gravity=gravity, cells={"quad": quads})
    return add_contact(model, surfaces=[{"faces": boundary_faces({"quad": quads}, 3)}],
                       area=spacing ** 2), None


@builder
def block_pile(*, count: Annotated[int, Field(ge=1)], n: Annotated[int, Field(ge=2)],
               spacing: Positive, gap: Positive, shift: Finite, mass: Positive,
               stiffness: NonNegative, damping: NonNegative, friction: NonNegative,
               gravity: list[Finite]):
    """``count`` soft blocks stacked with a ``gap`` [m] between them and below the lowest (the
    ground being y = 0), block k moved by k·``shift`` [m] along x so that each lands off the
    centre of the one below: each an n × n × n lattice of particles of ``mass`` [kg] at
    ``spacing`` [m], every cube split into 6 tetrahedra whose edges are springs, its boundary
    triangles a contact surface of Coulomb coefficient ``friction`` (with self-contact: the blocks
    rub where they rest on each other); each particle's contact area is spacing². Particle (i, j, k)
    of block b is b·n³ + (i·n + j)·n + k."""
    check_model_size("parameters.count × n³", (count, n), count * n ** 3, 7 * count * n ** 3,
                     built_from="arrays")
    side = (n - 1) * spacing
    grid = spacing * np.stack(np.meshgrid(*[np.arange(n)] * 3, indexing="ij"), -1).reshape(-1, 3)
    grid[:, [0, 2]] -= side / 2
    tets, edges = lattice_tetrahedra(n, n, n), lattice_edges(n, n, n)
    size = n ** 3
    x0 = np.concatenate([grid + (b * shift, gap + b * (side + gap), 0.0) for b in range(count)])
    model = model_from_arrays(3, x0, mass, np.concatenate([edges + b * size for b in range(count)]),
                              stiffness, damping=damping, gravity=gravity,
                              cells={"tetra": np.concatenate([tets + b * size
                                                              for b in range(count)])})
    faces = boundary_faces({"tetra": tets}, 3)
    return add_contact(model, surfaces=[{"faces": faces + b * size, "friction": friction}
                                        for b in range(count)],
                       area=spacing ** 2), None


@builder
def lattice(*, nx: Annotated[int, Field(ge=2)], ny: Annotated[int, Field(ge=2)],
            nz: Annotated[int, Field(ge=2)], spacing: Positive, mass: Positive,
            stiffness: NonNegative, damping: NonNegative, gravity: list[Finite],
            pin_bottom: bool):
    """A 3D block of nx × ny × nz particles, each cube split into 6 tetrahedra (Freudenthal)
    whose edges are springs (about 7 per particle), its bottom layer y = 0 pinned when
    ``pin_bottom`` (a free body otherwise); particle (i, j, k) at spacing·(i, j, k), numbered
    (i·ny + j)·nz + k. Built from arrays."""
    check_model_size("parameters.nx × ny × nz", (nx, ny, nz), nx * ny * nz, 7 * nx * ny * nz,
                     built_from="arrays")
    grid = np.stack(np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz), indexing="ij"), -1)
    x0 = spacing * grid.reshape(-1, 3).astype(float)
    pinned = (grid.reshape(-1, 3)[:, 1] == 0) & pin_bottom
    return model_from_arrays(3, x0, mass, lattice_edges(nx, ny, nz), stiffness, damping=damping,
                             pinned=pinned, gravity=gravity,
                             cells={"tetra": lattice_tetrahedra(nx, ny, nz)}), None
