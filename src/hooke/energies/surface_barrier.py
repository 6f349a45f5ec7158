"""Log-barrier contact between surfaces (IPC): point–segment in 2D, point–triangle and
edge–edge in 3D, within a surface and between surfaces, computed by ipctk.

The elements are the faces of ``Model.surface_faces`` (:mod:`hooke.surfaces`) and their edges
and vertices; pairs that share a particle are never in contact. For each pair closer than d̂
(unsigned distance d, so a cloth repels from both sides) the energy is

    w · κ/8 · d̂ · g(d/d̂),   g(s) = −(s² − 1)² ln s²   (0 for s ≥ 1, +∞ at s = 0),

IPC's clamped log barrier in squared distances (ipctk's ``BarrierPotential`` with
``use_physical_barrier``: stiffness κ/8, energy in J like the planes'), with the same d̂ and κ
as the planes (``Model.contact_dhat``, ``contact_kappa``). Its weight w is the convergent
formulation's area weighting (ipctk ``use_area_weighting``), from the rest shape ``Model.x0``:
in 2D w = ½ A_v for a vertex–segment pair, A_v the vertex's share of its surface (half the
lengths of the segments meeting at it), the ½ because a contact is seen from both bodies — so a
boundary vertex of the ``squares_self_contact`` squares has A_v = 0.225 m, w = ½ · 0.225 m, the
phys-sim-book's ½·A per point–edge pair; in 3D ¼ A_v for vertex–triangle pairs (A_v a third of
the adjacent triangles' area) and ¼ (A_a + A_b) for edge–edge pairs (A_e: a third of each
adjacent triangle's area), the vertex–triangle and edge–edge parts together integrating the
contact once. Pairs whose closest points are two vertices are counted once, not once per
segment meeting there.
Why κ/8: near contact g behaves as −2 ln s, so the force law w·κ·d̂/(4d) as d → 0 is the book's
point–edge barrier's (w·κ/8·d̂·(s² − 1) ln s²); IPC's g is smoother at d̂ (C², the book's C¹).
The weights do not change as the surfaces deform.

Contract: a potential term (:mod:`hooke.energies`) whose active set changes with x, so it has no
fixed Hessian pattern: ``hessian_triplets(model, x, project_psd)`` gives (rows, cols, values) in
flattened model DOFs for the pairs active at x, each pair's 2d×2d, 3d×3d or 4d×4d block clamped
to PSD with ``project_psd`` (ipctk's per-collision eigenvalue clamp). ``max_step(model, x, p)`` is
continuous collision detection (ipctk's additive CCD, 0.9 of the first time of impact of any
vertex–edge, vertex–triangle or edge–edge pair along x + α p, capped at 1), so the implicit line
search never lets two surfaces intersect, not even inside a Newton iteration. Only
``implicit_euler`` (generic path) uses these hooks; every other integrator refuses models with
self-contact (``Integrator.CAPABILITIES``).
"""

from __future__ import annotations

import weakref

import numpy as np

from ..surfaces import collision_mesh

NAME = "surface_barrier"
CCD_FRACTION = 0.9  # of the first time of impact, as the planes' CCD
STIFFNESS_SCALE = 1.0 / 8.0  # ipctk stiffness = κ/8: the book's close-range force law (above)


def active(model) -> bool:
    return model.n_contact_faces > 0


class SurfaceContact:
    """A model's surfaces in ipctk's terms, built once per model (:func:`of`).

    ``mesh``: the ipctk CollisionMesh over the surface vertices at rest (x0); ``vertices``:
    (V,) the particle index of each of its vertices; ``dofs``: (V·d,) the flattened model DOF of
    each of its DOFs (vertex-major, as ipctk orders them).
    """

    def __init__(self, model):
        import ipctk

        self.ipctk = ipctk
        self.mesh, self.vertices = collision_mesh(model.surface_faces, model.x0)
        d = model.dim
        self.dofs = (self.vertices[:, None] * d + np.arange(d)).reshape(-1)
        self.dhat = model.contact_dhat
        self.potential = ipctk.BarrierPotential(self.dhat, STIFFNESS_SCALE * model.contact_kappa,
                                                use_physical_barrier=True)
        self.ccd = ipctk.AdditiveCCD(conservative_rescaling=CCD_FRACTION)

    def positions(self, x: np.ndarray) -> np.ndarray:
        return np.asfortranarray(np.asarray(x, dtype=float)[self.vertices])

    def collisions(self, vertices: np.ndarray):
        """The pairs closer than d̂ at these vertex positions (broad and narrow phase)."""
        collisions = self.ipctk.NormalCollisions()
        collisions.use_area_weighting = True
        collisions.build(self.mesh, vertices, self.dhat)
        return collisions


_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def of(model) -> SurfaceContact:
    """The model's :class:`SurfaceContact` (built on first use, kept while the model lives)."""
    contact = _CACHE.get(model)
    if contact is None:
        contact = _CACHE[model] = SurfaceContact(model)
    return contact


def value(model, x: np.ndarray) -> float:
    contact = of(model)
    vertices = contact.positions(x)
    return float(contact.potential(contact.collisions(vertices), contact.mesh, vertices))


def gradient(model, x: np.ndarray) -> np.ndarray:
    contact = of(model)
    vertices = contact.positions(x)
    out = np.zeros(model.n_dofs)
    out[contact.dofs] = contact.potential.gradient(contact.collisions(vertices), contact.mesh,
                                                   vertices)
    return out.reshape(model.n_particles, model.dim)


def hessian_triplets(model, x: np.ndarray, project_psd: bool = False):
    """(rows, cols, values) of the Hessian at x in flattened model DOFs (only active pairs)."""
    contact = of(model)
    vertices = contact.positions(x)
    method = contact.ipctk.PSDProjectionMethod
    local = contact.potential.hessian(contact.collisions(vertices), contact.mesh, vertices,
                                      method.CLAMP if project_psd else method.NONE).tocoo()
    return contact.dofs[local.row], contact.dofs[local.col], local.data


def max_step(model, x: np.ndarray, p: np.ndarray) -> float:
    """Largest α ≤ 1 for which x + α p keeps every pair of surface elements apart: 0.9 of the
    first time of impact (ipctk's conservative additive CCD)."""
    contact = of(model)
    start = contact.positions(x)
    end = contact.positions(np.asarray(x) + np.asarray(p))
    return min(1.0, float(contact.ipctk.compute_collision_free_stepsize(
        contact.mesh, start, end, narrow_phase_ccd=contact.ccd)))


def min_distance(model, x: np.ndarray) -> float:
    """The smallest distance between two surface elements that share no particle, among the
    pairs closer than d̂ [m]; +inf when none is."""
    contact = of(model)
    vertices = contact.positions(x)
    squared = contact.collisions(vertices).compute_minimum_distance(contact.mesh, vertices)
    return float(np.sqrt(squared))


def contact_forces(model, x: np.ndarray) -> np.ndarray:
    """(n, d) the barrier's force on each particle, −∇ [N]."""
    return -gradient(model, x)
