"""Obstacles beyond planes: spheres (circles in 2D) and meshes (triangles in 3D, segments of a
polyline in 2D) that particles and surfaces cannot enter, fixed or translating with a motion.

Contract:
- :class:`ObstacleBuilder` (mixed into :class:`hooke.ModelBuilder`) gives ``add_sphere(center,
  radius, friction=0, motion=None)`` and ``add_obstacle(mesh, friction=0, motion=None)``; both
  validate at once (:class:`HookeInputError` naming ``spheres[k].<field>`` or
  ``obstacles[k].<field>``) and return the new body's index. ``finalize`` checks the start.
- A sphere k is {x : |x − c_k(t)| < r_k}, c_k(t) = c_k + u(t) − u(0) with its motion u
  (:mod:`hooke.motion`); every particle with a contact area A > 0 (``Model.contact_area``: pinned
  particles have 0) keeps |x − c_k| − r_k > 0 (the barrier and CCD of
  :mod:`hooke.energies.sphere_barrier`). Only particles are kept out: an edge or triangle of a
  surface between two particles outside may cut a sphere's cap by up to L²/(8r) (L its length).
- An obstacle mesh (:func:`obstacle_mesh`): a path meshio reads, a ``meshio.Mesh``, or a
  ``(vertices, faces)`` pair; its surface is the boundary of its cells
  (:func:`hooke.mesh_topology.boundary_faces`: triangles and split quads, or the boundary of
  tetrahedra, in 3D; lines, or the boundary of triangles and quads, in 2D); vertices no face uses
  are dropped. Its vertices are not particles: they sit at v + u(t) − u(0) (a translation).
- Against obstacles the model takes part with its surfaces (``Model.surface_faces``, every
  vertex, edge and triangle, whatever ``self_contact`` says) and with every particle of contact
  area > 0 on no surface, as a single point (:func:`collision_mesh`). Obstacle contact is always
  on: ``self_contact`` only adds the pairs within and between the model's surfaces, a separate
  term (:mod:`hooke.energies.surface_barrier`); the obstacle term has model–obstacle pairs only
  (ipctk's vertex-patch filter), never pairs within the model or between obstacles.
- Start checks (:func:`sphere_problems`, :func:`obstacle_problems`): one line per sphere or
  obstacle with the particles inside or touching it (and, for a closed obstacle, enclosed by
  it: a winding number |w| ≥ ½), or whose surface edges cross it: the barrier is infinite there.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .checks import _checked_motion, _number, _vector
from .errors import HookeInputError, HookeInputErrors
from .io.files import mesh_path, read_mesh
from .mesh_topology import boundary_faces
from .motion import displacements
from .surfaces import check_face_shapes, check_faces

# ipctk weights a pair whose point is vertex v by A_v/2 (2D) or A_v/4 (3D), and an edge–edge
# pair by (A_a + A_b)/4: these scales make every weight 2A, so that near contact a particle of
# contact area A is pushed with A·κ·d̂/(2d), as by a plane (hooke.energies.obstacle_barrier).
# A contact particle must start farther than this from a plane or sphere [m]: the barrier's
# Hessian divides by d², which a smaller d sends to 0 (a start 1e-300 m above the ground failed
# in a division by zero inside the first step).
CLEARANCE_FLOOR = float(np.sqrt(np.finfo(float).tiny))  # 1.5e-154
TOUCH_ROUND_OFF = 64 * float(np.finfo(float).eps)  # relative to the coordinates: a distance 0
VERTEX_SCALE = {2: 4.0, 3: 8.0}
EDGE_SCALE = 4.0
MESH_CELLS = {2: "line cells, or triangles or quads (their boundary)",
              3: "triangle or quad cells, or tetrahedra (their boundary)"}


# -- input ------------------------------------------------------------------------------------
def check_sphere(k: int, center, radius, friction, dim: int) -> tuple[np.ndarray, float, float]:
    """spheres[k] as (centre, radius, μ)."""
    where = f"spheres[{k}]"
    return (_vector(center, dim, f"{where}.center", squared=True),
            _number(radius, f"{where}.radius", positive=True),
            _number(friction, f"{where}.friction", nonnegative=True))


def _mesh_arrays(where: str, mesh, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """(points, faces) of a meshio.Mesh: its cells' boundary (see the module docstring)."""
    points = np.asarray(mesh.points, dtype=float)
    if points.ndim != 2 or points.shape[1] < dim:
        raise HookeInputError(where, f"points must have {dim} coordinates", np.shape(points))
    if np.any(points[:, dim:] != 0):
        raise HookeInputError(where, f"points leave the first {dim} axes",
                              "non-zero extra coordinates")
    cells = {block.type: np.asarray(block.data) for block in mesh.cells
             if block.type in ("line", "triangle", "quad", "tetra")}
    faces = boundary_faces(cells, dim)
    if not len(faces):
        raise HookeInputError(where, f"has no {MESH_CELLS[dim]}",
                              [block.type for block in mesh.cells])
    return points[:, :dim], faces


def obstacle_mesh(k: int, mesh, dim: int, folder=None) -> tuple[np.ndarray, np.ndarray]:
    """obstacles[k]'s (vertices (V, dim), faces (F, dim) int64): from a path meshio reads
    (relative to ``folder`` when given), a meshio.Mesh, or a (vertices, faces) pair; validated
    (finite vertices, indices in range, no face repeating a vertex or of zero size), the
    vertices no face uses dropped."""
    where = f"obstacles[{k}]"
    if dim not in (2, 3):
        raise HookeInputError(where, "obstacle meshes need dim 2 or 3", dim)
    if isinstance(mesh, (str, Path)):
        mesh = read_mesh(mesh_path(mesh, f"{where}.mesh", folder), f"{where}.mesh")
    if hasattr(mesh, "points") and hasattr(mesh, "cells"):
        vertices, faces = _mesh_arrays(f"{where}.mesh", mesh, dim)
    elif isinstance(mesh, (tuple, list)) and len(mesh) == 2:
        vertices, faces = mesh
    else:
        raise HookeInputError(f"{where}.mesh", "must be a path meshio reads, a meshio.Mesh or a "
                              "(vertices, faces) pair", type(mesh).__name__)
    points = np.asarray(vertices, dtype=object)
    if points.ndim != 2 or points.shape[1] != dim or not len(points):
        raise HookeInputError(f"{where}.vertices", f"must be a non-empty list of points with {dim} "
                              "coordinates", np.shape(points))
    points = np.array([_vector(p, dim, f"{where}.vertices[{i}]", squared=True)
                       for i, p in enumerate(points)])
    faces = check_faces(k, faces, len(points), dim, table="obstacles", what="vertex")
    check_face_shapes(k, faces, points, table="obstacles")
    used, local = np.unique(faces, return_inverse=True)
    return points[used], local.reshape(faces.shape).astype(np.int64)


class ObstacleBuilder:
    """Spheres and obstacle meshes of a :class:`hooke.ModelBuilder` (its ``dim``)."""

    def _init_obstacles(self) -> None:
        self._spheres: list[tuple[np.ndarray, float, float]] = []  # centre, radius, μ
        self._sphere_motions: dict[int, object] = {}
        self._obstacles: list[tuple[np.ndarray, np.ndarray, float]] = []  # vertices, faces, μ
        self._obstacle_motions: dict[int, object] = {}

    def add_sphere(self, center, radius: float, friction: float = 0.0, motion=None) -> int:
        """Add a sphere (a circle in 2D) that contact particles cannot enter; return its index.

        ``friction`` is the Coulomb coefficient μ ≥ 0; a ``motion`` (:mod:`hooke.motion`) moves
        the centre as center + u(t) − u(0). Needs ``implicit_euler`` (as planes do); finalize
        checks that no contact particle starts inside or on it.
        """
        index = len(self._spheres)
        sphere = check_sphere(index, center, radius, friction, self.dim)
        if motion is not None:
            self._sphere_motions[index] = _checked_motion(motion, self.dim,
                                                          f"spheres[{index}].motion")
        self._spheres.append(sphere)
        return index

    def add_obstacle(self, mesh, friction: float = 0.0, motion=None) -> int:
        """Add an obstacle mesh (triangles in 3D, a polyline in 2D) that particles and surfaces
        cannot enter; return its index.

        ``mesh``: a path meshio reads, a meshio.Mesh or a (vertices, faces) pair (faces: index
        triples in 3D, pairs in 2D). ``friction`` is μ ≥ 0; a ``motion`` translates the whole
        mesh by u(t) − u(0). Needs ``implicit_euler``; finalize checks the start.
        """
        index = len(self._obstacles)
        vertices, faces = obstacle_mesh(index, mesh, self.dim)
        mu = _number(friction, f"obstacles[{index}].friction", nonnegative=True)
        if motion is not None:
            self._obstacle_motions[index] = _checked_motion(motion, self.dim,
                                                            f"obstacles[{index}].motion")
        self._obstacles.append((vertices, faces, mu))
        return index

    def _copy_obstacles(self, model) -> None:
        """Take over ``model``'s spheres and obstacles (already validated)."""
        motions = dict(model.sphere_motions)
        for k in range(model.n_spheres):
            self._spheres.append((model.sphere_centers[k], float(model.sphere_radii[k]),
                                  float(model.sphere_friction[k])))
            if k in motions:
                self._sphere_motions[k] = motions[k]
        self._obstacle_motions.update(dict(model.obstacle_motions))
        for k in range(model.n_obstacles):
            mine = model.obstacle_of_vertex == k
            start = int(np.flatnonzero(mine)[0])
            faces = model.obstacle_faces[np.all(mine[model.obstacle_faces], axis=1)] - start
            self._obstacles.append((model.obstacle_vertices[mine], faces,
                                    float(model.obstacle_friction[k])))

    def _obstacle_fields(self, x0: np.ndarray, area: np.ndarray, surface_faces) -> dict:
        """The Model's sphere and obstacle fields, after the start checks (all at once)."""
        d = self.dim
        fields = dict(
            sphere_centers=np.array([s[0] for s in self._spheres], dtype=float).reshape(-1, d),
            sphere_radii=np.array([s[1] for s in self._spheres], dtype=float),
            sphere_friction=np.array([s[2] for s in self._spheres], dtype=float),
            sphere_motions=tuple(sorted(self._sphere_motions.items(), key=lambda kv: kv[0])),
            obstacle_friction=np.array([o[2] for o in self._obstacles], dtype=float),
            obstacle_motions=tuple(sorted(self._obstacle_motions.items(), key=lambda kv: kv[0])),
            **joined_obstacles([o[0] for o in self._obstacles], [o[1] for o in self._obstacles],
                               d))
        problems = sphere_problems(fields["sphere_centers"], fields["sphere_radii"], area, x0)
        if self._obstacles:
            problems += obstacle_problems(fields["obstacle_vertices"], fields["obstacle_faces"],
                                          fields["obstacle_of_vertex"], surface_faces, area, x0)
        if problems:
            raise HookeInputErrors(problems)
        return fields


def joined_obstacles(vertices: list, faces: list, dim: int) -> dict:
    """Every obstacle's vertices and faces in one array each (faces renumbered), with the
    obstacle of each vertex: ``obstacle_vertices``, ``obstacle_faces``, ``obstacle_of_vertex``."""
    counts = [len(v) for v in vertices]
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    return dict(
        obstacle_vertices=(np.concatenate(vertices) if vertices else np.empty((0, dim))),
        obstacle_faces=(np.concatenate([f + s for f, s in zip(faces, starts)]) if faces
                        else np.empty((0, dim), dtype=np.int64)),
        obstacle_of_vertex=np.repeat(np.arange(len(counts)), counts).astype(np.int64))


# -- positions in time ---------------------------------------------------------------------------
def sphere_centers(model, t: float = 0.0) -> np.ndarray:
    """(k, d) sphere centres at time t."""
    return model.sphere_centers + displacements(model.sphere_motions, model.n_spheres,
                                                model.dim, t)


def obstacle_vertices(model, t: float = 0.0) -> np.ndarray:
    """(V, d) obstacle vertices at time t."""
    moved = displacements(model.obstacle_motions, model.n_obstacles, model.dim, t)
    return model.obstacle_vertices + moved[model.obstacle_of_vertex]


# -- the collision mesh (ipctk) ------------------------------------------------------------------
def contact_particles(surface_faces: np.ndarray, area: np.ndarray) -> np.ndarray:
    """The particles that meet obstacles, sorted: every surface vertex, and every particle of
    contact area > 0 (a single point when it is on no surface)."""
    on_surface = np.unique(surface_faces) if surface_faces.size else np.empty(0, dtype=np.int64)
    return np.union1d(on_surface, np.flatnonzero(area > 0)).astype(np.int64)


def collision_mesh(surface_faces: np.ndarray, area: np.ndarray, x0: np.ndarray,
                   vertices: np.ndarray, faces: np.ndarray):
    """(ipctk.CollisionMesh, the particle of each of its first D vertices): the contact
    particles (:func:`contact_particles`) and the model's surface elements, then the obstacle
    vertices and faces; only model–obstacle pairs may collide; weights as ``VERTEX_SCALE``."""
    from .surfaces import load_ipctk

    ipctk = load_ipctk()

    dim = x0.shape[1]
    particles = contact_particles(surface_faces, area)
    count = particles.size
    local = np.searchsorted(particles, surface_faces) if surface_faces.size else \
        np.empty((0, dim), dtype=np.int64)
    all_faces = np.concatenate([local, faces + count]).astype(np.int32)
    rest = np.asfortranarray(np.concatenate([x0[particles], vertices]), dtype=float)
    if dim == 2:
        mesh = ipctk.CollisionMesh(rest, np.asfortranarray(all_faces))
    else:
        mesh = ipctk.CollisionMesh(rest, ipctk.edges(np.asfortranarray(all_faces)),
                                   np.asfortranarray(all_faces))
    own = area[particles]
    typical = _typical_weight(own[own > 0])
    weights = np.concatenate([own, np.full(len(vertices), typical)])
    mesh.vertex_areas = VERTEX_SCALE[dim] * weights
    if dim == 3:
        mesh.edge_areas = EDGE_SCALE * weights[mesh.edges].mean(axis=1)
    patches = np.concatenate([np.zeros(count), np.ones(len(vertices))]).astype(np.int32)
    mesh.can_collide = ipctk.make_vertex_patches_filter(patches.reshape(-1, 1))
    return mesh, particles


def _typical_weight(areas: np.ndarray) -> float:
    """The mean of ``areas`` (0 for none), computed so that areas each within the float range
    never sum past it (the mean of two areas of 1.5e307 was inf)."""
    if not areas.size:
        return 0.0
    with np.errstate(over="ignore"):
        mean = float(areas.mean())
    if np.isfinite(mean):
        return mean
    largest = float(areas.max())
    return largest * float(np.mean(areas / largest))


def weight_problem(area: np.ndarray, dim: int) -> str | None:
    """The line refusing contact areas whose obstacle weight (``VERTEX_SCALE``·A, ipctk's vertex
    area) is past the largest float, else None: ipctk refused it with a bare ValueError."""
    largest = float(np.max(area, initial=0.0))
    bound = float(np.finfo(float).max) / VERTEX_SCALE[dim]
    if largest <= bound:
        return None
    return (f"contact.area: is too large for the obstacles' barrier (its weight "
            f"{VERTEX_SCALE[dim]:g}·A must stay below the largest float: A at most {bound:.4g}), "
            f"got {largest!r}")


# -- start checks ------------------------------------------------------------------------------
def _listed(particles) -> str:
    particles = [int(p) for p in particles]
    return ", ".join(map(str, particles[:10])) + (", ..." if len(particles) > 10 else "")


def sphere_problems(centers: np.ndarray, radii: np.ndarray, area: np.ndarray, x: np.ndarray,
                    field: str | None = None) -> list[str]:
    """One line per sphere with contact particles (area > 0) of x inside or on it (at its
    centre too), where the barrier is infinite; ``field`` (e.g. ``state.x``) names the line."""
    problems = []
    for k in range(len(radii)):
        with np.errstate(over="ignore"):  # 1e300 m away: an inf distance, outside
            distance = np.linalg.norm(x - centers[k], axis=1) - radii[k]
        inside = np.flatnonzero((area > 0) & ~(distance > CLEARANCE_FLOOR))
        if inside.size:
            problems.append(str(HookeInputError(
                field or f"spheres[{k}]", f"particle(s) {_listed(inside)} start inside or on "
                f"{'spheres[%d]' % k if field else 'the sphere'} (|x − c| − r <= "
                f"{CLEARANCE_FLOOR:.2g} m)",
                distance[inside[:10]].tolist())))
    return problems


def _winding_numbers(points: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """(p,) winding number of a closed polyline (2D) or triangle mesh (3D) with face corners
    (f, dim, dim) around each point: ±1 inside, 0 outside (van Oosterom–Strackee in 3D)."""
    out = np.zeros(len(points))
    for start in range(0, len(points), 256):
        rel = corners[None] - points[start:start + 256, None, None, :]
        if corners.shape[1] == 2:
            a, b = rel[:, :, 0], rel[:, :, 1]
            angle = np.arctan2(a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0], (a * b).sum(-1))
            out[start:start + 256] = angle.sum(axis=1) / (2 * np.pi)
            continue
        a, b, c = rel[:, :, 0], rel[:, :, 1], rel[:, :, 2]
        la, lb, lc = (np.linalg.norm(v, axis=-1) for v in (a, b, c))
        triple = np.einsum("pfd,pfd->pf", a, np.cross(b, c))
        below = la * lb * lc + (a * b).sum(-1) * lc + (b * c).sum(-1) * la + (c * a).sum(-1) * lb
        out[start:start + 256] = 2 * np.arctan2(triple, below).sum(axis=1) / (4 * np.pi)
    return out


def _is_closed(faces: np.ndarray) -> bool:
    """Whether a polyline (2D: every vertex on two segments) or a triangle mesh (3D: every edge
    on two triangles) encloses a region."""
    if faces.shape[1] == 2:
        return bool(np.all(np.bincount(faces.reshape(-1)) == 2))
    edges = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1)
    return bool(np.all(np.unique(edges, axis=0, return_counts=True)[1] == 2))


def _round_off_squared(points: np.ndarray) -> float:
    """The squared distance [m²] below which a pair of these points' elements touches: what
    round-off leaves of a distance 0 at their coordinates (ipctk gives a point on a polyline's
    corner 7.4e-34 m² from the segment there, a barrier of d = 2.7e-17 m no step can leave)."""
    with np.errstate(over="ignore"):
        return float((TOUCH_ROUND_OFF * np.max(np.abs(points))) ** 2)


def obstacle_problems(vertices: np.ndarray, faces: np.ndarray, owner: np.ndarray,
                      surface_faces: np.ndarray, area: np.ndarray, x: np.ndarray,
                      field: str | None = None) -> list[str]:
    """One line per obstacle that contact particles of x touch (distance 0), that a surface
    edge or triangle of the model crosses, or, closed, that encloses contact particles."""
    from .surfaces import load_ipctk

    ipctk = load_ipctk()

    too_large = weight_problem(area, x.shape[1])
    if too_large:
        return [too_large]
    mesh, particles = collision_mesh(surface_faces, area, x, vertices, faces)
    count = particles.size
    V = np.asfortranarray(np.concatenate([x[particles], vertices]), dtype=float)
    touching: dict[int, set] = {}  # obstacle → the model's particles in pairs at distance 0
    crossing: dict[int, set] = {}  # obstacle → the particles of model elements through it

    def hit(ids, found: dict) -> None:
        ids = [int(i) for i in ids if i >= 0]
        model_side = [particles[i] for i in ids if i < count]
        obstacle = int(owner[[i - count for i in ids if i >= count][0]])
        found.setdefault(obstacle, set()).update(model_side)

    candidates = ipctk.Candidates()
    candidates.build(mesh, V, 0.0)
    edges, tris = mesh.edges, mesh.faces
    for kind in ("fv_candidates", "ev_candidates", "ee_candidates", "vv_candidates"):
        for pair in getattr(candidates, kind):
            ids = [i for i in pair.vertex_ids(edges, tris) if i >= 0]
            if pair.compute_distance(V, edges, tris) <= _round_off_squared(V[ids]):
                hit(ids, touching)
    if surface_faces.size:  # a model edge through an obstacle triangle or the other way round
        broad = ipctk.HashGrid()  # (3D), or two segments crossing (2D)
        broad.build(V, edges, tris if tris.size else np.zeros((0, 3), dtype=np.int32), 0.0)
        if x.shape[1] == 3:
            for pair in broad.detect_edge_face_candidates():
                e, f = edges[pair.edge_id], tris[pair.face_id]
                if (e[0] < count) != (f[0] < count) and ipctk.is_edge_intersecting_triangle(
                        V[e[0]], V[e[1]], V[f[0]], V[f[1]], V[f[2]]):
                    hit(list(e) + list(f), crossing)
        else:
            for pair in broad.detect_edge_edge_candidates():
                a, b = edges[pair.edge0_id], edges[pair.edge1_id]
                if (a[0] < count) != (b[0] < count) and ipctk.segment_segment_intersect(
                        V[a[0]], V[a[1]], V[b[0]], V[b[1]]):
                    hit(list(a) + list(b), crossing)
    problems = []
    for k in range(int(owner.max(initial=-1)) + 1):
        name = field or f"obstacles[{k}]"
        where = f"obstacles[{k}]" if field else "the obstacle"
        if k in touching:
            problems.append(f"{name}: particle(s) {_listed(sorted(touching[k]))} start touching "
                            f"{where} (distance 0: the barrier is infinite there)")
        if k in crossing:
            problems.append(f"{name}: the surface elements of particle(s) "
                            f"{_listed(sorted(crossing[k]))} start through {where}")
        mine = faces[np.all(owner[faces] == k, axis=1)]
        if _is_closed(mine):
            inside = particles[np.abs(_winding_numbers(x[particles], vertices[mine])) >= 0.5]
            if inside.size:
                problems.append(f"{name}: particle(s) {_listed(inside)} start inside {where} (a "
                                "closed mesh around them: they could never leave)")
    return problems
