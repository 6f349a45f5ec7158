"""Log-barrier contact with obstacle meshes (triangles in 3D, polylines in 2D), computed by
ipctk: the barrier between surfaces (:mod:`.surface_barrier`) on model–obstacle pairs.

The collision mesh (:func:`hooke.obstacles.collision_mesh`) holds the model's contact particles
(every surface vertex, and each particle of contact area A > 0 on no surface as a single point)
with the surfaces' edges and triangles, then the obstacles' vertices, edges and triangles, which
are not DOFs: they sit where their motion puts them. Only pairs of a model element and an
obstacle element are in contact (ipctk's vertex-patch filter), point–segment in 2D, point–
triangle and edge–edge in 3D (with an obstacle's vertices and edges against the model's
triangles and edges too), with whatever ``self_contact`` says: obstacle contact is always on;
self-contact adds the model–model pairs as its own term. The energy of a pair closer than d̂ is
IPC's w·κ/8·d̂·g(d/d̂) of :mod:`.surface_barrier` (same d̂, κ), with weights w = 2A: A the
contact area of the model particle (the mean over an edge's two; for a pair whose point or edge
is the obstacle's, the mean area of the model's contact particles), so that near contact a
particle is pushed with A·κ·d̂/(2d), as by a plane or sphere.

Contract: a potential term with a changing pattern (``hessian_triplets``, PSD-projected per
pair) and the planes' hooks: ``at_time(model, t)`` places the obstacles at t (implicit steps use
t + h); ``max_step`` is ipctk's additive CCD at 0.9 of the first impact with the obstacles where
they are; ``start_guess`` carries the free particles of the model's elements within d̂ + |δ|
of an obstacle that moves by δ over the step by δ, then checks by CCD that the whole move
(model elements to the start guess, obstacles from t to t + h) is free of impact, else raises
:class:`SimulationError`.
Friction with obstacles is :mod:`.obstacle_friction`. Only ``implicit_euler`` (generic path)
uses these hooks; the others refuse models with obstacles (``Integrator.CAPABILITIES``).
"""

from __future__ import annotations

import math

import numpy as np

from ..obstacles import collision_mesh, contact_particles, obstacle_vertices
from .barrier import carried_past_precision, static_functions
from .surface_barrier import IpcContact, per_model

NAME = "obstacle_barrier"


def active(model) -> bool:
    return model.n_obstacles > 0 and contact_particles(model.surface_faces,
                                                       model.contact_area).size > 0


class ObstacleContact(IpcContact):
    """A model's obstacles and contact particles in ipctk's terms (:func:`of`), with the
    obstacles at one time (``bound``)."""

    NAME = NAME

    def __init__(self, model):
        faces = model.surface_faces.reshape(-1, model.dim)  # (0, dim) without surfaces
        mesh, particles = collision_mesh(faces, model.contact_area, model.x0,
                                         model.obstacle_vertices, model.obstacle_faces)
        super().__init__(model, mesh, particles, obstacle_vertices(model))
        self.owner = model.obstacle_of_vertex


of = per_model(ObstacleContact)  # the model's ObstacleContact, obstacles at t = 0


def at_time(model, t: float) -> IpcContact:
    """The term with the obstacles at time t."""
    return of(model).bound(obstacle_vertices(model, t))


# value, gradient, the Hessian's triplets and CCD (max_step) with the obstacles at t = 0
value, gradient, hessian_triplets, max_step = static_functions(of, "hessian_triplets")


def min_distance(model, x: np.ndarray, t: float = 0.0) -> float:
    """The smallest distance between a model element and an obstacle, among the pairs closer
    than d̂ at time t [m]; +inf when none is."""
    return at_time(model, t).min_distance(model, x)


def contact_forces(model, x: np.ndarray, t: float = 0.0) -> np.ndarray:
    """(n, d) the obstacles' barrier force on each particle at time t, −∇ [N]."""
    return -at_time(model, t).gradient(model, x)


def start_guess(model, x: np.ndarray, t: float, t_next: float) -> np.ndarray:
    """A Newton start for a step t → t_next inside the domain of the obstacles at t_next (see
    the module docstring)."""
    from ..errors import SimulationError
    from ..motion import displacements

    if not model.obstacle_motions:
        return x
    shift = (displacements(model.obstacle_motions, model.n_obstacles, model.dim, t_next)
             - displacements(model.obstacle_motions, model.n_obstacles, model.dim, t))
    if not np.any(shift):
        return x
    before, after = at_time(model, t), at_time(model, t_next)
    start = before.positions(x)
    reach = model.contact_dhat + float(np.linalg.norm(shift, axis=1).max())
    near = before.ipctk.NormalCollisions()
    near.build(before.mesh, start, reach)
    count = before.particles.size
    carried = np.full(count, -1)  # the obstacle carrying each contact particle
    edges, faces = before.mesh.edges, before.mesh.faces
    for k in range(len(near)):  # by index: iterating ipctk's collection runs past its end
        ids = [int(i) for i in near[k].vertex_ids(edges, faces) if i >= 0]
        obstacle = [int(before.owner[i - count]) for i in ids if i >= count][0]
        carried[[i for i in ids if i < count]] = obstacle
    y = np.array(x, dtype=float, copy=True)
    moving = (carried >= 0) & ~model.pinned[before.particles]  # pins stay on their path
    y[before.particles[moving]] += shift[carried[moving]]
    if moving.any() and np.finfo(float).eps * np.max(np.abs(y)) >= model.contact_dhat:
        # carried so far that one ulp of the positions spans the whole barrier zone d̂: Newton
        # could only fail ("did not converge … try a smaller dt", which cannot help)
        raise carried_past_precision("obstacle", before.particles[moving],
                                     max(math.hypot(*row) for row in shift), y, t_next)
    free = after.ipctk.compute_collision_free_stepsize(before.mesh, start, after.positions(y),
                                                        narrow_phase_ccd=before.ccd)
    if free < 1.0:
        raise SimulationError(
            f"moving obstacles squeeze the model's contact particles between them at t = "
            f"{t_next:.6g}: the carried start guess collides; try a smaller dt")
    return y
