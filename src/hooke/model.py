"""Model (static description of a mass-spring system) and State (what changes in time).

Contract: a :class:`Model` is immutable once built (its arrays are read-only) and holds every
static quantity as a struct of arrays; a :class:`State` holds the time, positions and velocities.
Integrators read a Model and map one State to the next; nothing writes back into the Model.
Build models with :class:`hooke.ModelBuilder`, which validates before freezing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .model_checks import SPRING_ENERGIES, check_model


@dataclass(frozen=True, eq=False)
class Model:
    """A mass-spring system: n particles, s springs, d = dim.

    Attributes:
        dim: spatial dimension, 1, 2 or 3.
        mass: (n,) particle masses [kg], all > 0.
        pinned: (n,) bool, True for particles held fixed (their DOFs are eliminated).
        gravity: (d,) gravitational acceleration [m/s²].
        spring_indices: (s, 2) int64 particle indices of each spring's endpoints.
        spring_rest_length: (s,) rest lengths l0 [m], ≥ 0 (0 only for the Hookean form).
        spring_stiffness: (s,) stiffness k [N/m], ≥ 0.
        spring_damping: (s,) damping c [N·s/m] along the spring direction, ≥ 0.
        spring_energy: "hookean" for ½k(|d| − l0)², "squared_length" for ½k·l0²·(|d|²/l0² − 1)².
        x0: (n, d) initial positions [m]; pinned particles stay here.
        v0: (n, d) initial velocities [m/s]; a pinned particle's is its pin's (0, or u̇(0) on a
            prescribed motion).
        particle_names: optional names, "" where none was given.
        pinned_motions: (particle index, motion) pairs for pinned particles that follow a
            prescribed motion x0 + u(t) (see :mod:`hooke.motion`); other pinned particles stay.
        joint_indices: (m, 2) int64 particle indices of each joint's endpoints (m joints: rigid
            distance constraints |x_j − x_i| = L, see :mod:`hooke.constraints`).
        joint_length: (m,) joint lengths L [m], > 0.
        plane_normals: (q, d) unit normals of q contact half-spaces, pointing to the allowed side
            (see :mod:`hooke.energies.barrier`); (0, d) without contact.
        plane_points: (q, d) a point on each plane at t = 0 [m]; the signed distance of x to
            plane k is d_k(x) = n_k·(x − o_k), and every contact particle keeps d_k > 0.
        plane_friction: (q,) Coulomb friction coefficients μ ≥ 0 (0: frictionless).
        plane_motions: (plane index, motion) pairs for planes moving as o_k + u(t) − u(0)
            (see :mod:`hooke.motion`); the normal part moves the plane, the tangential part
            drags friction along (a conveyor belt).
        contact_area: (n,) barrier weight A of each particle [m in 2D, m² in 3D], ≥ 0; 0 for
            pinned particles and particles exempt from contact.
        contact_dhat: barrier activation distance d̂ [m], > 0.
        contact_kappa: barrier stiffness κ [N/m² in 2D, N/m³ in 3D], > 0.
        contact_epsv: friction smoothing velocity ε_v [m/s], > 0: below it friction is viscous.
        surface_faces: (f, d) int64 particle indices of the faces of every contact surface
            (see :mod:`hooke.surfaces`): segments (d = 2 indices) in 2D, triangles (3) in 3D;
            (0, 0) without surfaces.
        surface_of_face: (f,) int64 index of the surface (the ``ModelBuilder.add_surface`` call,
            in order) each face belongs to.
        surface_friction: (s,) Coulomb friction coefficient μ ≥ 0 of each surface (with
            self-contact: :mod:`hooke.energies.surface_friction`).
        self_contact: whether the surfaces repel each other and themselves (non-adjacent
            elements, with the barrier of :mod:`hooke.energies.surface_barrier`, same d̂ and κ
            as the planes); the surfaces are inert data otherwise.
        triangles: (c, 3) int64 particle indices of the body's triangles where its builder knew
            them (a grid's cells split along one diagonal: a 2D sheet's area, a 3D cloth's
            surface; a mesh's triangles and split quads); (0, 3) otherwise.
        tetrahedra: (c, 4) int64 particle indices of the body's tetrahedra (a lattice's, a
            tetrahedral mesh's); (0, 4) otherwise. Cells are for drawing and export only: no
            energy reads them (the springs are the mechanics), so they are left out of a run's
            ``input_hash`` and files written before they existed still resume.
        sphere_centers: (k, d) centres of k contact spheres (circles in 2D) at t = 0 [m]
            (see :mod:`hooke.obstacles`, :mod:`hooke.energies.sphere_barrier`); (0, d) without.
        sphere_radii: (k,) radii r > 0 [m]; every contact particle keeps |x − c| − r > 0.
        sphere_friction: (k,) Coulomb friction coefficients μ ≥ 0.
        sphere_motions: (sphere index, motion) pairs for spheres whose centre moves as
            c + u(t) − u(0) (see :mod:`hooke.motion`).
        obstacle_vertices: (V, d) vertices of every obstacle mesh at t = 0 [m] (see
            :mod:`hooke.obstacles`, :mod:`hooke.energies.obstacle_barrier`); not particles.
        obstacle_faces: (F, d) int64 indices into ``obstacle_vertices``: segments (2D) or
            triangles (3D) of every obstacle; (0, d) without obstacles.
        obstacle_of_vertex: (V,) int64 index of the obstacle (the ``add_obstacle`` call, in
            order) each vertex belongs to.
        obstacle_friction: (o,) Coulomb friction coefficient μ ≥ 0 of each obstacle.
        obstacle_motions: (obstacle index, motion) pairs for obstacles translating as
            u(t) − u(0) (see :mod:`hooke.motion`).
        drag: (n,) linear air drag coefficients c_i [N·s/m], ≥ 0: the force −c_i (v_i − w(t))
            (see :mod:`hooke.energies.drag`); (0,) without air drag.
        wind: (d,) steady wind velocity [m/s]; (0,) without air drag.
        wind_motion: None, or a motion (see :mod:`hooke.motion`) of the air whose velocity
            du(t) adds to ``wind``: w(t) = wind + du(t).
    """

    dim: int
    mass: np.ndarray
    pinned: np.ndarray
    gravity: np.ndarray
    spring_indices: np.ndarray
    spring_rest_length: np.ndarray
    spring_stiffness: np.ndarray
    spring_damping: np.ndarray
    x0: np.ndarray
    v0: np.ndarray
    spring_energy: str = "hookean"
    particle_names: tuple[str, ...] = field(default=())
    pinned_motions: tuple[tuple[int, object], ...] = field(default=())
    joint_indices: np.ndarray = field(default_factory=lambda: np.empty((0, 2), dtype=np.int64))
    joint_length: np.ndarray = field(default_factory=lambda: np.empty(0))
    plane_normals: np.ndarray = field(default_factory=lambda: np.empty((0, 0)))
    plane_points: np.ndarray = field(default_factory=lambda: np.empty((0, 0)))
    plane_friction: np.ndarray = field(default_factory=lambda: np.empty(0))
    plane_motions: tuple[tuple[int, object], ...] = field(default=())
    contact_area: np.ndarray = field(default_factory=lambda: np.empty(0))
    contact_dhat: float = 0.01
    contact_kappa: float = 1e5
    contact_epsv: float = 1e-3
    surface_faces: np.ndarray = field(default_factory=lambda: np.empty((0, 0), dtype=np.int64))
    surface_of_face: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    surface_friction: np.ndarray = field(default_factory=lambda: np.empty(0))
    self_contact: bool = False
    triangles: np.ndarray = field(default_factory=lambda: np.empty((0, 3), dtype=np.int64))
    tetrahedra: np.ndarray = field(default_factory=lambda: np.empty((0, 4), dtype=np.int64))
    sphere_centers: np.ndarray = field(default_factory=lambda: np.empty((0, 0)))
    sphere_radii: np.ndarray = field(default_factory=lambda: np.empty(0))
    sphere_friction: np.ndarray = field(default_factory=lambda: np.empty(0))
    sphere_motions: tuple[tuple[int, object], ...] = field(default=())
    obstacle_vertices: np.ndarray = field(default_factory=lambda: np.empty((0, 0)))
    obstacle_faces: np.ndarray = field(default_factory=lambda: np.empty((0, 0), dtype=np.int64))
    obstacle_of_vertex: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    obstacle_friction: np.ndarray = field(default_factory=lambda: np.empty(0))
    obstacle_motions: tuple[tuple[int, object], ...] = field(default=())
    drag: np.ndarray = field(default_factory=lambda: np.empty(0))
    wind: np.ndarray = field(default_factory=lambda: np.empty(0))
    wind_motion: object = None

    def __post_init__(self) -> None:
        check_model(self)
        for name in ("mass", "pinned", "gravity", "spring_indices", "spring_rest_length",
                     "spring_stiffness", "spring_damping", "x0", "v0", "joint_indices",
                     "joint_length"):
            getattr(self, name).setflags(write=False)
        for name in ("plane_normals", "plane_points", "plane_friction", "contact_area",
                     "surface_faces", "surface_of_face", "surface_friction", "triangles",
                     "tetrahedra", "sphere_centers", "sphere_radii", "sphere_friction", "obstacle_vertices",
                     "obstacle_faces", "obstacle_of_vertex", "obstacle_friction", "drag", "wind"):
            getattr(self, name).setflags(write=False)

    @property
    def n_particles(self) -> int:
        return int(self.mass.shape[0])

    @property
    def n_springs(self) -> int:
        return int(self.spring_indices.shape[0])

    @property
    def n_joints(self) -> int:
        return int(self.joint_indices.shape[0])

    @property
    def n_planes(self) -> int:
        return int(self.plane_normals.shape[0])

    @property
    def n_spheres(self) -> int:
        return int(self.sphere_radii.shape[0])

    @property
    def n_obstacles(self) -> int:
        return int(self.obstacle_friction.shape[0])

    @property
    def n_surface_faces(self) -> int:
        return int(self.surface_faces.shape[0])

    @property
    def n_contact_faces(self) -> int:
        """The faces that take part in contact between surfaces: all with ``self_contact``,
        none otherwise."""
        return self.n_surface_faces if self.self_contact else 0

    def surface_triangles(self) -> np.ndarray:
        """(f, 3) triangles of the body's surface: in 2D its triangles (the sheet itself), in 3D
        its triangles and the boundary of its tetrahedra, else its contact surface's triangles;
        (0, 3) when it has none (always in 1D)."""
        from .mesh_topology import boundary_faces

        if self.dim != 3:
            return self.triangles if self.dim == 2 else np.empty((0, 3), dtype=np.int64)
        cells = {kind: data for kind, data in (("triangle", self.triangles),
                                                ("tetra", self.tetrahedra)) if data.size}
        if cells:
            return boundary_faces(cells, 3)
        return self.surface_faces.reshape(-1, 3)

    @property
    def n_dofs(self) -> int:
        return self.n_particles * self.dim

    @property
    def free(self) -> np.ndarray:
        """(n,) bool, True for particles that move."""
        return ~self.pinned

    @property
    def free_dofs(self) -> np.ndarray:
        """Indices into the flattened (n·d,) coordinate vector of the DOFs that move."""
        return np.flatnonzero(np.repeat(self.free, self.dim))

    def joint_length_error(self, x: np.ndarray) -> np.ndarray:
        """| |x_j − x_i| − L | [m] of every joint, shape (..., joints), for positions x of shape
        (..., n, d) (one state or a series of frames)."""
        i, j = self.joint_indices.T
        lengths = np.linalg.norm(x[..., j, :] - x[..., i, :], axis=-1)
        return np.abs(lengths - self.joint_length)

    def initial_state(self, t: float = 0.0) -> "State":
        """The State at time t with copies of ``x0`` and ``v0``."""
        from .errors import HookeInputError, is_number

        if not is_number(t) or not np.isfinite(t):  # "1" and True were read as 1.0, nan taken
            raise HookeInputError("t", "must be a finite time [s]", t)
        return State(float(t), self.x0.copy(), self.v0.copy())

    @property
    def pinned_index(self) -> np.ndarray:
        return np.flatnonzero(self.pinned)

    def pinned_positions(self, t: float) -> np.ndarray:
        """Where the pins hold the pinned particles at time t, (pinned, d) in ``pinned_index``
        order: x0, or x0 + u(t) − u(0) on a prescribed motion (``System.apply_pins``)."""
        index = self.pinned_index
        x = self.x0[index].copy()
        for i, motion in self.pinned_motions:
            x[np.searchsorted(index, i)] = self.x0[i] + motion(t)[0] - motion(0.0)[0]
        return x

    def pinned_velocities(self, t: float) -> np.ndarray:
        """How the pins move the pinned particles at time t, in ``pinned_positions``' order: 0,
        or u̇(t) on a prescribed motion (``System.apply_pins``)."""
        return self.pin_rates(t)[0]

    def pin_rates(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(u̇(t), ü(t)) of each pinned particle, (pinned, d) each in ``pinned_positions``'
        order: 0 for a still pin."""
        index = self.pinned_index
        du, ddu = np.zeros((index.size, self.dim)), np.zeros((index.size, self.dim))
        for i, motion in self.pinned_motions:
            _, du[np.searchsorted(index, i)], ddu[np.searchsorted(index, i)] = motion(t)
        return du, ddu

    @property
    def has_damping(self) -> bool:
        return bool(np.any(self.spring_damping > 0))

    @property
    def has_drag(self) -> bool:
        """Whether any particle feels air drag (:mod:`hooke.energies.drag`)."""
        return bool(np.any(self.drag > 0))


@dataclass(frozen=True, eq=False)
class State:
    """Time t [s], positions x (n, d) [m] and velocities v (n, d) [m/s]."""

    t: float
    x: np.ndarray
    v: np.ndarray

    def copy(self) -> "State":
        """A State with copies of the arrays."""
        return State(self.t, self.x.copy(), self.v.copy())

    def replace(self, **changes) -> "State":
        """A State with the fields in ``changes`` replaced (the arrays are not copied)."""
        return replace(self, **changes)
