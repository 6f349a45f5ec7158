"""ModelBuilder: collect particles and springs, validate, freeze into a :class:`Model`.

Contract: every ``add_*`` method validates its arguments at once and raises
:class:`HookeInputError` naming the argument and value; :meth:`ModelBuilder.finalize` converts
the lists to arrays once and returns an immutable Model, which carries the initial positions and
velocities (``Model.initial_state()``). Helpers (:meth:`grid`, :meth:`lattice`, :meth:`from_mesh`)
are built on ``add_particle``/``add_spring`` and return index arrays.
"""

from __future__ import annotations

import math
import os
from typing import Sequence

import numpy as np

from .air import air_fields, check_drag
from .constraints import check_joint_set
from .errors import HookeInputError, HookeInputErrors, collect, is_count, raise_all
from .io.files import read_mesh
from .memory import check_model_size
from .model import SPRING_ENERGIES, Model
from .mesh_topology import (MESH_EDGES, bending_pairs, boundary_faces, grid_bending, grid_quads,
                            lattice_tetrahedra, lumped_masses, mesh_cells, mesh_edges)
from .obstacles import CLEARANCE_FLOOR, ObstacleBuilder, check_sphere, obstacle_mesh
from .surfaces import check_face_shapes, check_faces, repeated_faces, start_problems
# The primitives moved to hooke.checks stay importable from here (scene files, builders use them).
from .checks import (_checked_motion, _count, _number, _numbers, _strict_array,  # noqa: F401
                     _vector, per_particle)


# -- checks shared by ModelBuilder and scene-file validation (hooke.io.scene_file) ----------------
# Each raises HookeInputError naming the field; the builder stops at the first, a scene file
# collects them all.

def check_index(i, n: int, field: str) -> int:
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
        raise HookeInputError(field, "must be an integer particle index", i)
    if not 0 <= i < n:
        raise HookeInputError(field, f"particle index out of range [0, {n})", i)
    return int(i)


def check_distinct_pair(table: str, k: int, i: int, j: int,
                        seen: dict[tuple[int, int], int]) -> tuple[int, int]:
    """``table[k]`` joins two different particles not already joined by an entry of ``seen``
    ((min, max) → index); returns its key for ``seen``."""
    if i == j:
        raise HookeInputError(f"{table}[{k}]", "connects a particle to itself", (i, j))
    key = (min(i, j), max(i, j))
    if key in seen:
        raise HookeInputError(f"{table}[{k}]", f"duplicates {table}[{seen[key]}] between the same "
                              f"particles {i} and {j}", (i, j))
    return key


def endpoint_distance(where: str, xi: np.ndarray, xj: np.ndarray, i: int, j: int) -> float:
    """|x_j − x_i|, which must be finite: the energies use its square, which overflows first."""
    with np.errstate(over="ignore", invalid="ignore"):
        squared = float(np.dot(xj - xi, xj - xi))
    if not math.isfinite(squared):
        raise HookeInputError(where, f"the distance between particles {i} and {j} is too large "
                              "(its square overflows to inf)", (i, j))
    return math.sqrt(squared)


def spring_rest_length(k: int, xi, xj, i: int, j: int, rest_length, damping: float,
                       spring_energy: str) -> float:
    """springs[k]'s rest length: ``rest_length``, or the endpoints' distance when None."""
    where = f"springs[{k}]"
    distance = endpoint_distance(where, xi, xj, i, j)
    if rest_length is None:
        if distance == 0.0:
            raise HookeInputError(where, f"zero-length spring: particles {i} and {j} coincide "
                                  "and no rest_length was given", (i, j))
        l0 = distance
    else:
        l0 = _number(rest_length, f"{where}.rest_length", nonnegative=True)
        if l0 == 0.0 and spring_energy == "squared_length":
            raise HookeInputError(f"{where}.rest_length",
                                  "must be > 0 for the squared_length spring energy", l0)
    if distance == 0.0 and damping > 0:
        raise HookeInputError(where, f"damped spring with coincident endpoints {i} and {j} "
                              "has no direction", (i, j))
    return l0


def joint_length(k: int, xi, xj, i: int, j: int, length) -> float:
    """joints[k]'s length: ``length``, or the endpoints' distance when None; the endpoints must
    not coincide (the constraint's direction would be undefined)."""
    where = f"joints[{k}]"
    distance = endpoint_distance(where, xi, xj, i, j)
    if distance == 0.0:
        raise HookeInputError(where, f"endpoints coincide: particles {i} and {j} are both at "
                              f"{np.asarray(xi).tolist()}, a joint needs a direction", (i, j))
    if length is None:
        return distance
    length = _number(length, f"{where}.length", positive=True)
    if not math.isfinite(length * length):  # the joints' matrices and energies square it
        raise HookeInputError(f"{where}.length", "is too large (its square overflows to inf)",
                              length)
    return length


def check_plane(k: int, normal, point, friction, dim: int) -> tuple[np.ndarray, np.ndarray, float]:
    """planes[k] as (unit normal, point, μ)."""
    where = f"planes[{k}]"
    n = _vector(normal, dim, f"{where}.normal")
    largest = float(np.max(np.abs(n), initial=0.0))
    if largest == 0.0:
        raise HookeInputError(f"{where}.normal", "must be a non-zero vector", normal)
    n = n / largest  # first: |(0, 1e-300)|² underflows to 0, which made it "zero"
    return (n / np.linalg.norm(n), _vector(point, dim, f"{where}.point", squared=True),
            _number(friction, f"{where}.friction", nonnegative=True))


def contact_area(area, n: int | None = None) -> float | np.ndarray:
    """The barrier weight A: one number >= 0, or one per particle (``n`` of them, when known)."""
    return per_particle(area, "contact.area", n)


def contact_weights(area, pinned) -> np.ndarray:
    """Each particle's barrier weight: its contact area, 0 for pinned particles (no contact)."""
    pinned = np.asarray(pinned, dtype=bool)
    return np.where(pinned, 0.0, np.broadcast_to(area, pinned.shape))


def _cell_indices(block, n_points: int) -> np.ndarray:
    """A mesh cell block's vertex indices: integers in [0, n_points) (a negative one would wrap
    round to the last points)."""
    data = _strict_array(block.data, "iu", is_count)
    if data is None or data.ndim != 2 or (data.size and not 0 <= data.min() <= data.max() < n_points):
        raise HookeInputError(f"mesh.cells[{block.type}]", f"must be vertex indices from 0 to "
                              f"{n_points - 1}", np.shape(block.data))
    return np.asarray(data, dtype=np.int64)


def _check_body_has_a_boundary(surface, counts: tuple, thinnest: int, name: str,
                               least: str) -> None:
    """``surface=True`` on a grid of one particle (a 3D cloth: one row) or a lattice one particle
    thick (``thinnest``: the count that must be 2 or more), which have no cell and so no
    boundary, is refused naming ``surface`` (it was NumPy's "cannot reshape array of size 0",
    a bug line)."""
    if isinstance(surface, (bool, np.bool_)) and surface and thinnest < 2:
        shown = " × ".join(map(str, counts))
        raise HookeInputError("surface", f"needs a body with cells: {name} = {shown} has none, so "
                              f"no boundary to make a contact surface of (at least 2 particles "
                              f"{least})", True)


class ModelBuilder(ObstacleBuilder):
    """Collects a mass-spring system and freezes it with :meth:`finalize`.

    >>> b = ModelBuilder(dim=2, gravity=(0, -9.81))
    >>> i = b.add_particle((0, 0), mass=1.0, pinned=True)
    >>> j = b.add_particle((1, 0), mass=1.0)
    >>> b.add_spring(i, j, stiffness=100.0)
    0
    """

    def __init__(self, dim: int = 3, gravity: Sequence[float] | None = None,
                 spring_energy: str = "hookean"):
        if not is_count(dim) or dim not in (1, 2, 3):  # 2.0 == 2, but is no count
            raise HookeInputError("dim", "must be the integer 1, 2 or 3", dim)
        if not isinstance(spring_energy, str) or spring_energy not in SPRING_ENERGIES:
            raise HookeInputError("spring_energy", f"must be one of {', '.join(SPRING_ENERGIES)}",
                                  spring_energy)
        self.dim = int(dim)
        self.gravity = np.zeros(dim) if gravity is None else _vector(gravity, dim, "gravity")
        self.spring_energy = spring_energy
        self._x: list[np.ndarray] = []
        self._v: list[np.ndarray] = []
        self._mass: list[float] = []
        self._pinned: list[bool] = []
        self._names: list[str] = []
        self._springs: list[tuple[int, int]] = []
        self._rest: list[float] = []
        self._stiffness: list[float] = []
        self._damping: list[float] = []
        self._spring_keys: dict[tuple[int, int], int] = {}
        self._motions: dict[int, object] = {}
        self._planes: list[tuple[np.ndarray, np.ndarray, float]] = []  # normal, point, μ
        self._plane_motions: dict[int, object] = {}
        self._contact: dict[str, float] = {"contact_dhat": 0.01, "contact_kappa": 1e5,
                                           "contact_epsv": 1e-3}
        self._contact_area: float | np.ndarray = 1.0
        self._self_contact = False
        self._surfaces: list[np.ndarray] = []  # (m, dim) faces of each add_surface call
        self._surface_friction: list[float] = []  # μ of each
        self._joints: list[tuple[int, int]] = []
        self._joint_length: list[float] = []
        self._joint_keys: dict[tuple[int, int], int] = {}
        self._cells: list[dict[str, np.ndarray]] = []  # helpers' cells: Model.triangles …
        self._air: dict | None = None  # set_air's arguments, checked against n in finalize
        self._init_obstacles()  # add_sphere, add_obstacle: hooke.obstacles.ObstacleBuilder

    # -- particles ------------------------------------------------------------------------
    @property
    def n_particles(self) -> int:
        return len(self._mass)

    def add_particle(self, x, mass: float = 1.0, velocity=None, pinned: bool = False,
                     name: str | None = None, motion=None) -> int:
        """Add a particle at ``x`` and return its index.

        A pinned particle may follow a prescribed ``motion`` (see :mod:`hooke.motion`; any
        callable of t giving the displacement works), otherwise it stays at ``x``; it takes no
        ``velocity`` (its motion's is its own).
        """
        index = self.n_particles
        where = f"particles[{index}]"
        position = _vector(x, self.dim, f"{where}.x", squared=True)
        vel = np.zeros(self.dim) if velocity is None else _vector(velocity, self.dim, f"{where}.v",
                                                                   squared=True)
        m = _number(mass, f"{where}.mass", positive=True)
        if m < 1.0 / np.finfo(float).max:  # a subnormal mass: its inverse, which every step
            # multiplies the forces by, would be inf and the first step NaN ("try a smaller dt")
            raise HookeInputError(f"{where}.mass", "is too small (1/mass overflows to inf)", mass)
        if not isinstance(pinned, (bool, np.bool_)):
            raise HookeInputError(f"{where}.pinned", "must be True or False", pinned)
        if name is not None and not isinstance(name, str):
            raise HookeInputError(f"{where}.name", "must be a str or None", name)
        if (pinned or motion is not None) and np.any(vel):  # pin() sets it: dropped in silence
            raise HookeInputError(f"{where}.v", "is a pinned particle's velocity (it stays at x, "
                                  "or moves as its motion does)", velocity)
        self._x.append(position)
        self._v.append(vel)
        self._mass.append(m)
        self._pinned.append(bool(pinned))
        self._names.append(name if name is not None else "")
        if pinned or motion is not None:
            try:
                self.pin(index, motion)
            except BaseException:  # a motion refused: no particle is left half-added
                for values in (self._x, self._v, self._mass, self._pinned, self._names):
                    values.pop()
                raise
        return index

    def pin(self, i: int, motion=None) -> None:
        """Hold particle ``i`` at its current position x0, or make it follow ``motion``:
        x0 + u(t) − u(0) (see :mod:`hooke.motion`); its velocity is then its pin's, so a
        particle added with another is refused."""
        check_index(i, self.n_particles, "pin")
        if not self._pinned[i] and np.any(self._v[i]):  # the pin sets it: dropped in silence
            raise HookeInputError(f"particles[{i}].v", "is the velocity of a particle to pin (it "
                                  "stays at x, or moves as its motion does): add it without one",
                                  self._v[i])
        if motion is not None:  # checked before anything changes: a refused one pins nothing
            motion = _checked_motion(motion, self.dim, f"particles[{i}].motion")
        self._pinned[i] = True
        self._motions.pop(i, None)
        if motion is None:
            self._v[i] = np.zeros(self.dim)
            return
        self._motions[i] = motion
        self._v[i] = np.asarray(motion(0.0)[1], dtype=float)

    def position(self, i: int) -> np.ndarray:
        """A copy of particle i's position."""
        check_index(i, self.n_particles, "index")
        return self._x[i].copy()

    # -- springs --------------------------------------------------------------------------
    def add_spring(self, i: int, j: int, stiffness: float, rest_length: float | None = None,
                   damping: float = 0.0) -> int:
        """Add a spring between particles ``i`` and ``j``; return its index.

        ``rest_length=None`` takes the current distance between the endpoints.
        """
        index = len(self._springs)
        where = f"springs[{index}]"
        i = check_index(i, self.n_particles, f"{where}.i")
        j = check_index(j, self.n_particles, f"{where}.j")
        key = check_distinct_pair("springs", index, i, j, self._spring_keys)
        k = _number(stiffness, f"{where}.stiffness", nonnegative=True)
        c = _number(damping, f"{where}.damping", nonnegative=True)
        l0 = spring_rest_length(index, self._x[i], self._x[j], i, j, rest_length, c,
                                self.spring_energy)
        self._spring_keys[key] = index
        self._springs.append((i, j))
        self._rest.append(l0)
        self._stiffness.append(k)
        self._damping.append(c)
        return index

    # -- joints -------------------------------------------------------------------------
    def add_joint(self, i: int, j: int, length: float | None = None) -> int:
        """Add a joint (a rigid distance constraint |x_j − x_i| = length) and return its index.

        Either end may be pinned (a fixed or moving support). ``length=None`` takes the current
        distance. The endpoints must not coincide: the constraint's direction would be undefined.
        """
        index = len(self._joints)
        where = f"joints[{index}]"
        i = check_index(i, self.n_particles, f"{where}.i")
        j = check_index(j, self.n_particles, f"{where}.j")
        key = check_distinct_pair("joints", index, i, j, self._joint_keys)
        value = joint_length(index, self._x[i], self._x[j], i, j, length)
        self._joint_keys[key] = index
        self._joints.append((i, j))
        self._joint_length.append(value)
        return index

    # -- contact ------------------------------------------------------------------------
    def add_plane(self, normal, point, friction: float = 0.0, motion=None) -> int:
        """Add a contact half-space {x : n·(x − point) ≥ 0}; return its index.

        ``normal`` (any non-zero length) points to the allowed side; ``friction`` is the Coulomb
        coefficient μ ≥ 0; a ``motion`` (see :mod:`hooke.motion`) moves the plane as
        point + u(t) − u(0). Contact needs ``implicit_euler`` (barrier, CCD and friction live in
        its incremental potential); :meth:`finalize` checks that no particle starts on or below.
        """
        index = len(self._planes)
        plane = check_plane(index, normal, point, friction, self.dim)
        if motion is not None:
            self._plane_motions[index] = _checked_motion(motion, self.dim, f"planes[{index}].motion")
        self._planes.append(plane)
        return index

    def set_contact(self, dhat: float | None = None, kappa: float | None = None, area=None,
                    epsv: float | None = None, self_contact: bool | None = None) -> None:
        """Contact settings shared by every plane and surface; None keeps the current value
        (defaults, the book's: d̂ = 0.01 m, κ = 1e5, area A = 1 per particle, ε_v = 1e-3 m/s,
        no self-contact).

        ``area`` is the planes' barrier weight A (boundary length or area a particle stands
        for): one number for every particle or one per particle; pinned particles get 0 (no
        contact). ``self_contact=True`` makes the surfaces (:meth:`add_surface`) repel each
        other and themselves with the same d̂ and κ (:mod:`hooke.energies.surface_barrier`);
        :meth:`finalize` then checks that no two non-adjacent surface elements touch.
        """
        if dhat is not None:  # the barriers take (d/d̂)² and d̂²: both must be finite
            number = _number(dhat, "contact.dhat", positive=True)
            if not math.isfinite(number * number):
                raise HookeInputError("contact.dhat", "is too large (its square overflows to inf)",
                                      dhat)
        for key, value in (("dhat", dhat), ("kappa", kappa), ("epsv", epsv)):
            if value is not None:
                self._contact[f"contact_{key}"] = _number(value, f"contact.{key}", positive=True)
        if area is not None:
            self._contact_area = contact_area(area)
        if self_contact is not None:
            if not isinstance(self_contact, (bool, np.bool_)):
                raise HookeInputError("contact.self_contact", "must be True or False", self_contact)
            self._self_contact = bool(self_contact)

    def set_air(self, drag, wind=None, motion=None) -> None:
        """Linear air drag f_i = −c_i (v_i − w(t)) towards the wind w(t) on every particle
        (:mod:`hooke.energies.drag`): ``drag`` c [N·s/m] is one number for every particle or one
        per particle (checked against the particle count by :meth:`finalize`); ``wind`` the
        steady wind velocity (default 0); ``motion`` the air moving as a prescribed motion (see
        :mod:`hooke.motion`) whose velocity adds to the wind, for a gust or a sloshing wind. A
        second call replaces the first.
        """
        check_drag(drag)
        if wind is not None:
            _vector(wind, self.dim, "air.wind", squared=True)
        if motion is not None:
            motion = _checked_motion(motion, self.dim, "air.motion")
        self._air = dict(drag=drag, wind=wind, motion=motion)

    def add_surface(self, faces, friction: float = 0.0) -> np.ndarray:
        """Add a contact surface: ``faces`` are index pairs (segments) in 2D, index triples
        (triangles) in 3D, over particles already added; returns the new faces' indices.

        Each call is one surface (one body's boundary, say): with
        ``set_contact(self_contact=True)`` every pair of non-adjacent elements repels, within a
        surface and between surfaces, and rubs with Coulomb friction μ = ``friction`` (a pair of
        two surfaces: the mean of their μ; :mod:`hooke.energies.surface_friction`). Faces are
        validated at once (arity, indices in range, no repeated particle); their shapes (no zero
        length or area) and the start (no two elements touching) when the model is finalized.
        """
        k = len(self._surfaces)
        checked = check_faces(k, faces, self.n_particles, self.dim)
        mu = _number(friction, f"surfaces[{k}].friction", nonnegative=True)
        start = sum(len(surface) for surface in self._surfaces)
        self._surfaces.append(checked)
        self._surface_friction.append(mu)
        return np.arange(start, start + len(checked), dtype=np.int64)

    def _contact_fields(self, x0: np.ndarray, pinned: np.ndarray) -> dict:
        """The Model's contact fields, after checking that no contact particle starts on or
        below a plane, that no surface face is degenerate, with self-contact that no two surface
        elements touch (all surface problems at once), and that no particle starts in a sphere
        or obstacle (:class:`hooke.obstacles.ObstacleBuilder`)."""
        d, n = self.dim, x0.shape[0]
        area = contact_weights(contact_area(self._contact_area, n), pinned)
        normals = np.array([plane[0] for plane in self._planes], dtype=float).reshape(-1, d)
        points = np.array([plane[1] for plane in self._planes], dtype=float).reshape(-1, d)
        check_clear_of_planes(normals, points, area, x0)
        surfaces = self._surface_fields(x0)
        return dict(plane_normals=normals, plane_points=points,
                    plane_friction=np.array([plane[2] for plane in self._planes], dtype=float),
                    plane_motions=tuple(sorted(self._plane_motions.items(), key=lambda kv: kv[0])),
                    contact_area=area, **self._contact, **surfaces, **self._obstacle_fields(
                        x0, area, surfaces.get("surface_faces", np.empty((0, d), np.int64))))

    def _surface_fields(self, x0: np.ndarray) -> dict:
        problems: list[str] = []
        for k, faces in enumerate(self._surfaces):
            collect(problems, check_face_shapes, k, faces, x0)
        problems += repeated_faces(self._surfaces)
        if self._self_contact and not self._surfaces:
            problems.append("contact.self_contact: needs a contact surface (add_surface, or "
                            "surface=True on grid, lattice or from_mesh), got True")
        faces = np.concatenate(self._surfaces) if self._surfaces else None
        if self._self_contact and faces is not None and not problems:
            problems += start_problems(faces, x0)
        if problems:
            raise HookeInputErrors(problems)
        if faces is None:
            return dict(self_contact=self._self_contact)
        owner = np.repeat(np.arange(len(self._surfaces)), [len(f) for f in self._surfaces])
        return dict(surface_faces=faces, surface_of_face=owner.astype(np.int64),
                    surface_friction=np.array(self._surface_friction, dtype=float),
                    self_contact=self._self_contact)

    # -- helpers --------------------------------------------------------------------------
    def grid(self, nx: int, ny: int, spacing: float | Sequence[float] = 1.0, origin=None,
             mass: float = 1.0, stiffness: float = 1.0, damping: float = 0.0,
             diagonals: bool = True, plane: str = "xy", surface: bool = False,
             bending: float = 0.0) -> np.ndarray:
        """A rectangular nx × ny grid of particles with structural springs (and both diagonals).

        Particle (i, j) sits at origin + i·dx·e1 + j·dy·e2 where (e1, e2) span ``plane``; the
        returned (nx, ny) array holds the indices, numbered i·ny + j from the first new index.
        ``surface=True`` adds the grid's contact surface (:meth:`add_surface`): in 2D its
        boundary loop (the chain itself for a single row), in 3D (a cloth) its cells as two
        triangles each. ``bending`` > 0 adds bending springs of that stiffness between second
        neighbours along each grid direction (:func:`hooke.mesh_topology.grid_bending`): a
        3D cloth then folds in smooth curves instead of crumpling at every row of particles.
        """
        nx, ny = _count(nx, "nx"), _count(ny, "ny")
        bending = _number(bending, "bending", nonnegative=True)
        _check_body_has_a_boundary(surface, (nx, ny), nx * ny if self.dim == 2 else min(nx, ny),
                                   "nx × ny", "in all" if self.dim == 2 else "along each axis")
        check_model_size("nx × ny", (nx, ny), nx * ny, 4 * nx * ny)
        pair = (spacing, spacing) if np.isscalar(spacing) else tuple(np.ravel(np.asarray(spacing, dtype=object)))
        if len(pair) != 2:
            raise HookeInputError("spacing", "must be one number or a pair (dx, dy)", spacing)
        dx, dy = (_number(value, "spacing", positive=True) for value in pair)
        if not isinstance(diagonals, (bool, np.bool_)):
            raise HookeInputError("diagonals", "must be True or False", diagonals)
        axes = {"x": 0, "y": 1, "z": 2}
        if not isinstance(plane, str) or len(plane) != 2 or any(a not in axes for a in plane) \
                or plane[0] == plane[1]:
            raise HookeInputError("plane", "must name two distinct axes such as 'xy' or 'xz'", plane)
        a1, a2 = axes[plane[0]], axes[plane[1]]
        if max(a1, a2) >= self.dim:
            raise HookeInputError("plane", f"needs dim > {max(a1, a2)}", plane)
        base = np.zeros(self.dim) if origin is None else _vector(origin, self.dim, "origin")
        ids = np.empty((nx, ny), dtype=np.int64)
        for i in range(nx):
            for j in range(ny):
                p = base.copy()
                p[a1] += i * dx
                p[a2] += j * dy
                ids[i, j] = self.add_particle(p, mass=mass)
        pairs = [(ids[:-1, :], ids[1:, :]), (ids[:, :-1], ids[:, 1:])]
        if diagonals:
            pairs += [(ids[:-1, :-1], ids[1:, 1:]), (ids[1:, :-1], ids[:-1, 1:])]
        for first, second in pairs:
            for p, q in zip(first.ravel(), second.ravel()):
                self.add_spring(int(p), int(q), stiffness=stiffness, damping=damping)
        if bending > 0:
            self._add_springs(ids.reshape(-1)[grid_bending(nx, ny)], bending, damping)
        quads = ids.reshape(-1)[grid_quads(nx, ny)]
        self._cells.append({"quad": quads})
        if self._surface_flag(surface):
            if nx > 1 and ny > 1:
                cells = {"quad": quads}
            else:
                chain = ids.reshape(-1)
                cells = {"line": np.stack([chain[:-1], chain[1:]], axis=1)}
            self.add_surface(boundary_faces(cells, self.dim))
        return ids

    @staticmethod
    def _surface_flag(surface) -> bool:
        if not isinstance(surface, (bool, np.bool_)):
            raise HookeInputError("surface", "must be True or False", surface)
        return bool(surface)

    def lattice(self, nx: int, ny: int, nz: int, spacing: float = 1.0, origin=None,
                mass: float = 1.0, stiffness: float = 1.0, damping: float = 0.0,
                surface: bool = False) -> np.ndarray:
        """A 3D block of (nx·ny·nz) particles; each cube split into 6 tetrahedra whose edges
        become springs. Returns the (nx, ny, nz) index array. ``surface=True`` adds the block's
        boundary triangles as a contact surface (:meth:`add_surface`)."""
        if self.dim != 3:
            raise HookeInputError("dim", "lattice needs dim=3", self.dim)
        counts = [_count(n, name) for n, name in ((nx, "nx"), (ny, "ny"), (nz, "nz"))]
        _check_body_has_a_boundary(surface, tuple(counts), min(counts), "nx × ny × nz",
                                   "along each axis")
        check_model_size("nx × ny × nz", tuple(counts), math.prod(counts), 7 * math.prod(counts))
        h = _number(spacing, "spacing", positive=True)
        base = np.zeros(3) if origin is None else _vector(origin, 3, "origin")
        grid = np.stack(np.meshgrid(*[np.arange(n) for n in counts], indexing="ij"), axis=-1)
        points = base + h * grid.reshape(-1, 3)
        tets = lattice_tetrahedra(*counts)
        return self._add_mesh(points, {"tetra": tets}, mass, stiffness, damping,
                              surface).reshape(counts)

    def from_mesh(self, mesh, mass: float = 1.0, stiffness: float = 1.0,
                  damping: float = 0.0, surface: bool = False, bending: float = 0.0,
                  density: float | None = None) -> np.ndarray:
        """Add every vertex of a mesh (a meshio.Mesh or a path meshio can read) as a particle
        and every element edge (line, triangle, quad, tetra) once as a spring.

        Returns the indices of the new particles, in the mesh's vertex order. ``surface=True``
        adds the body's boundary as a contact surface (:func:`hooke.surfaces.boundary_faces`:
        boundary edges of 2D triangles and quads, boundary triangles of tetrahedra, a 3D
        cloth's triangles, 2D lines). ``bending`` > 0 adds springs of that stiffness across
        every edge two triangles or two quads share (:func:`hooke.mesh_topology.bending_pairs`:
        a triangle pair's opposite vertices, a quad pair's second neighbours). ``density``
        replaces the one ``mass`` per particle by the cells' measure lumped to their vertices
        (:func:`hooke.mesh_topology.lumped_masses`: kg/m³ for tetrahedra, kg/m² for triangles
        and quads, kg/m for lines, over the cells of the highest dimension present).
        """
        if isinstance(mesh, (str, os.PathLike)):
            mesh = read_mesh(mesh, "mesh")
        if not (hasattr(mesh, "points") and hasattr(mesh, "cells")):
            raise HookeInputError("mesh", "must be a path meshio reads or a meshio.Mesh",
                                  type(mesh).__name__)
        points = _numbers(mesh.points)
        if points is None or points.ndim != 2 or points.shape[1] < self.dim:  # NaN: add_particle
            raise HookeInputError("mesh", f"points must be an (n, {self.dim}) array of numbers",
                                  np.shape(mesh.points))
        dropped = points[:, self.dim:]
        if dropped.size and np.any(dropped != 0):
            raise HookeInputError("mesh", f"points leave the first {self.dim} axes", "non-zero extra coordinates")
        cells = {block.type: _cell_indices(block, len(points)) for block in mesh.cells
                 if block.type in MESH_EDGES}
        check_model_size("mesh", f"{len(points)} points", len(points),
                         sum(len(data) * len(MESH_EDGES[kind]) for kind, data in cells.items()))
        if not cells:
            raise HookeInputError("mesh", f"has no cells of type {', '.join(MESH_EDGES)}",
                                  [block.type for block in mesh.cells])
        bending = _number(bending, "bending", nonnegative=True)
        hinges = bending_pairs(cells) if bending > 0 else np.empty((0, 2), dtype=np.int64)
        if bending > 0 and not len(hinges):
            raise HookeInputError("bending", "needs triangles or quads that share edges (a "
                                  "sheet) to bend across", bending)
        if density is not None:
            density = _number(density, "density", positive=True)
            mass = lumped_masses(points[:, : self.dim], cells, density)
            if np.any(mass <= 0):
                raise HookeInputError("density", "leaves mesh vertices in no cell (or in cells of "
                                      f"zero size) without mass, e.g. vertex {int(np.argmin(mass))}",
                                      density)
        ids = self._add_mesh(points[:, : self.dim], cells, mass, stiffness, damping, surface)
        edges = {tuple(pair) for pair in np.sort(mesh_edges(cells), axis=1).tolist()}
        self._add_springs(ids[[pair for pair in hinges.tolist() if tuple(pair) not in edges]],
                          bending, damping)
        return ids

    def _add_springs(self, pairs: np.ndarray, stiffness: float, damping: float) -> None:
        for p, q in np.asarray(pairs, dtype=np.int64).reshape(-1, 2):
            self.add_spring(int(p), int(q), stiffness=stiffness, damping=damping)

    def _add_mesh(self, points: np.ndarray, cells: dict[str, np.ndarray], mass, stiffness,
                  damping, surface: bool = False) -> np.ndarray:
        """The mesh's particles (``mass``: one value, or one per point) and edge springs."""
        surface = self._surface_flag(surface)
        masses = _numbers(mass)
        if masses is None or masses.shape not in ((), (len(points),)):
            raise HookeInputError("mass", f"must be one number or one per point ({len(points)})",
                                  mass if masses is None else masses.shape)
        masses = np.broadcast_to(masses, (len(points),))
        ids = np.array([self.add_particle(p, mass=float(m)) for p, m in zip(points, masses)],
                       dtype=np.int64)
        self._add_springs(ids[mesh_edges(cells)], stiffness, damping)
        self._cells.append({cell_type: ids[data] for cell_type, data in cells.items()})
        if surface:
            self.add_surface(ids[boundary_faces(cells, self.dim)])
        return ids

    # -- freeze ---------------------------------------------------------------------------
    def finalize(self) -> Model:
        """Validate the whole system and return the immutable Model."""
        if self.n_particles == 0:
            raise HookeInputError("particles", "at least one particle is needed", 0)
        d = self.dim
        springs = np.array(self._springs, dtype=np.int64).reshape(-1, 2)
        pinned = np.array(self._pinned, dtype=bool)
        v0 = np.array(self._v, dtype=float).reshape(-1, d)
        static = pinned.copy()
        static[list(self._motions)] = False
        v0[static] = 0.0
        x0 = np.array(self._x, dtype=float).reshape(-1, d)
        model = Model(
            dim=d,
            mass=np.array(self._mass, dtype=float),
            pinned=pinned,
            gravity=self.gravity.copy(),
            spring_indices=springs,
            spring_rest_length=np.array(self._rest, dtype=float),
            spring_stiffness=np.array(self._stiffness, dtype=float),
            spring_damping=np.array(self._damping, dtype=float),
            x0=x0,
            v0=v0,
            spring_energy=self.spring_energy,
            particle_names=tuple(self._names),
            pinned_motions=tuple(sorted(self._motions.items(), key=lambda item: item[0])),
            joint_indices=np.array(self._joints, dtype=np.int64).reshape(-1, 2),
            joint_length=np.array(self._joint_length, dtype=float),
            **self._contact_fields(x0, pinned), **mesh_cells(self._cells),
            **({} if self._air is None else air_fields(d, x0.shape[0], **self._air)),
        )
        check_joint_set(model)
        return model


def check_clear_of_planes(normals: np.ndarray, points: np.ndarray, area: np.ndarray,
                          x: np.ndarray, field: str | None = None) -> None:
    """Raise :class:`HookeInputError` naming the contact particles (area > 0) of positions x
    (n, d) on or below a plane k {n_k·(x − o_k) = 0} (points o_k), where the barrier is infinite,
    or within ``CLEARANCE_FLOOR`` of it: field ``planes[k]``, or ``field`` (the plane then named
    in the message); one line per such plane, all at once."""
    problems = []
    for k in range(normals.shape[0]):
        distance = (x - points[k]) @ normals[k]
        inside = np.flatnonzero((area > 0) & ~(distance > CLEARANCE_FLOOR))
        if inside.size:
            listed = ", ".join(map(str, inside[:10])) + (", ..." if inside.size > 10 else "")
            plane = "the plane" if field is None else f"planes[{k}]"
            problems.append(HookeInputError(field or f"planes[{k}]", f"particle(s) {listed} start "
                                            f"on or below {plane} (signed distance <= {CLEARANCE_FLOOR:.2g} m)",
                                            distance[inside[:10]].tolist()))
    raise_all(problems)


def add_contact(model: Model, planes: Sequence[dict] = (), surfaces: Sequence = (),
                spheres: Sequence[dict] = (), obstacles: Sequence[dict] = (), folder=None,
                **settings) -> Model:
    """A copy of ``model`` with more contact planes, surfaces, spheres and obstacles (dicts of
    :meth:`ModelBuilder.add_plane`'s, ``add_surface``'s, ``add_sphere``'s and ``add_obstacle``'s
    arguments; a relative obstacle mesh path is taken from ``folder``) and contact settings
    (:meth:`ModelBuilder.set_contact`'s),
    validated the same way but all problems reported at once; scene files use it to put them on
    a body a builder function made."""
    from dataclasses import replace

    b = ModelBuilder(dim=model.dim)
    motions = dict(model.plane_motions)
    for k in range(model.n_planes):
        b.add_plane(model.plane_normals[k], model.plane_points[k], model.plane_friction[k],
                    motions.get(k))
    for k in range(int(model.surface_of_face.max(initial=-1)) + 1):
        b._surfaces.append(model.surface_faces[model.surface_of_face == k])
        b._surface_friction.append(float(model.surface_friction[k]))
    b._copy_obstacles(model)
    if (model.n_planes or model.n_surface_faces or model.self_contact or model.n_spheres
            or model.n_obstacles):
        b.set_contact(model.contact_dhat, model.contact_kappa, model.contact_area,
                      model.contact_epsv, model.self_contact)
    problems: list[str] = []
    dim = model.dim
    checked = [collect(problems, check_faces, k, surface["faces"], model.n_particles, dim)
               for k, surface in enumerate(surfaces, start=len(b._surfaces))]
    for k, surface in enumerate(surfaces, start=len(b._surfaces)):
        collect(problems, _number, surface.get("friction", 0.0), f"surfaces[{k}].friction",
                nonnegative=True)
    for k, plane in enumerate(planes, start=model.n_planes):
        collect(problems, check_plane, k, plane["normal"], plane["point"],
                plane.get("friction", 0.0), dim)
    for k, sphere in enumerate(spheres, start=model.n_spheres):
        collect(problems, check_sphere, k, sphere["center"], sphere["radius"],
                sphere.get("friction", 0.0), dim)
    meshes = [collect(problems, obstacle_mesh, k, obstacle["mesh"], dim, folder)
              for k, obstacle in enumerate(obstacles, start=model.n_obstacles)]
    for k, obstacle in enumerate(obstacles, start=model.n_obstacles):
        collect(problems, _number, obstacle.get("friction", 0.0), f"obstacles[{k}].friction",
                nonnegative=True)
    for table, items, first in (("planes", planes, model.n_planes),
                                ("spheres", spheres, model.n_spheres),
                                ("obstacles", obstacles, model.n_obstacles)):
        for k, item in enumerate(items, start=first):
            if item.get("motion") is not None:
                collect(problems, _checked_motion, item["motion"], dim, f"{table}[{k}].motion")
    for key, value in settings.items():
        collect(problems, b.set_contact, **{key: value})
    if problems:
        raise HookeInputErrors(problems)
    for plane in planes:
        b.add_plane(**plane)
    for sphere in spheres:
        b.add_sphere(**sphere)
    for obstacle, mesh in zip(obstacles, meshes):
        b.add_obstacle(mesh, obstacle.get("friction", 0.0), obstacle.get("motion"))
    b._surfaces += checked
    b._surface_friction += [float(surface.get("friction", 0.0)) for surface in surfaces]
    return replace(model, **b._contact_fields(model.x0, model.pinned))
