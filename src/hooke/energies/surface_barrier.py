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

Broad phase: ipctk's LBVH for the pairs and for CCD. Measured on cloth_sphere n = 80 draped
(process time, 2,476 pairs): building the pairs 22 ms with LBVH against 41 ms with ipctk's
default (a hash grid), CCD 15 ms against 27 ms.

:func:`collision_clock` measures the time spent in collision detection (building the pairs:
broad and narrow phase, and CCD) for ``hooke bench contact``; outside it the timers cost nothing.
"""

from __future__ import annotations

import contextlib
import copy
import time
import weakref

import numpy as np

from ..surfaces import collision_mesh, load_ipctk
from .barrier import static_functions

NAME = "surface_barrier"
CCD_FRACTION = 0.9  # of the first time of impact, as the planes' CCD
# A trial step longer than this many times the surface's extent (or d̂) is cut to that length
# before the CCD, which returns the fraction of the cut step: ipctk's broad phase over a sweep
# of 4e294 m (a gravity of 1e300 on chain_pile) ran for minutes. No real step is that long; a
# step that is not finite (a damping of 1e300 on cloth_fold) allows no motion at all.
CCD_REACH = 10.0
STIFFNESS_SCALE = 1.0 / 8.0  # ipctk stiffness = κ/8: the book's close-range force law (above)


def active(model) -> bool:
    return model.n_contact_faces > 0


class CollisionClock:
    """Seconds and calls spent building pairs (``build``) and in CCD (``ccd``)."""

    def __init__(self):
        self.seconds = {"build": 0.0, "ccd": 0.0}
        self.calls = {"build": 0, "ccd": 0}

    @property
    def total(self) -> float:
        return sum(self.seconds.values())

    def add(self, kind: str, start: float) -> None:
        self.seconds[kind] += time.perf_counter() - start
        self.calls[kind] += 1


_clock: CollisionClock | None = None  # set inside collision_clock() only


@contextlib.contextmanager
def collision_clock():
    """``with collision_clock() as clock:`` times every pair building and CCD of ipctk contact
    (surfaces and obstacles) inside the block."""
    global _clock
    previous, _clock = _clock, CollisionClock()
    try:
        yield _clock
    finally:
        _clock = previous


class IpcContact:
    """ipctk's barrier over a collision mesh whose first vertices are the particles
    ``particles`` (in that order) and whose others, not particles, sit at ``fixed`` (obstacle
    vertices, :mod:`.obstacle_barrier`; none here). ``dofs``: the flattened model DOF of each
    particle DOF of the mesh (vertex-major, as ipctk orders them); entries of ipctk's gradients
    and Hessians on the fixed vertices are dropped. The pairs of the last positions are kept
    (:meth:`collisions`): a Newton iteration asks for the value, gradient and Hessian at the same
    positions, and the broad phase is the dearest part."""

    def __init__(self, model, mesh, particles: np.ndarray, fixed: np.ndarray | None = None):
        self.ipctk = ipctk = load_ipctk()
        self.mesh, self.particles = mesh, particles
        d = model.dim
        self.dofs = (particles[:, None] * d + np.arange(d)).reshape(-1)
        self.fixed = np.empty((0, d)) if fixed is None else fixed
        self.dhat = model.contact_dhat
        self.potential = ipctk.BarrierPotential(self.dhat, STIFFNESS_SCALE * model.contact_kappa,
                                                use_physical_barrier=True)
        self.ccd = ipctk.AdditiveCCD(conservative_rescaling=CCD_FRACTION)
        self.broad_phase = ipctk.LBVH()
        self._last: list = [None, None]  # positions, their collisions (shared by bound copies)

    def bound(self, fixed: np.ndarray) -> "IpcContact":
        """The same contact (mesh, cache) with the fixed vertices at ``fixed``."""
        other = copy.copy(self)
        other.fixed = fixed
        return other

    def positions(self, x: np.ndarray) -> np.ndarray:
        return np.asfortranarray(np.concatenate([np.asarray(x, dtype=float)[self.particles],
                                                 self.fixed]))

    def collisions(self, vertices: np.ndarray):
        """The pairs closer than d̂ at these vertex positions (broad and narrow phase)."""
        last, built = self._last
        if built is not None and np.array_equal(last, vertices):
            return built
        start = time.perf_counter() if _clock is not None else 0.0
        collisions = self.ipctk.NormalCollisions()
        collisions.use_area_weighting = True
        collisions.build(self.mesh, vertices, self.dhat, broad_phase=self.broad_phase)
        self._last[:] = [vertices.copy(), collisions]
        if _clock is not None:
            _clock.add("build", start)
        return collisions

    # -- from the mesh's vectors and matrices to the model's DOFs -------------------------------
    def model_vector(self, model, values: np.ndarray) -> np.ndarray:
        """(n, d) the particles' entries of a vector over the mesh's DOFs (0 elsewhere)."""
        out = np.zeros(model.n_dofs)
        out[self.dofs] = values[:self.dofs.size]
        return out.reshape(model.n_particles, model.dim)

    def model_triplets(self, matrix):
        """(rows, cols, values) in model DOFs of a sparse matrix over the mesh's DOFs."""
        local = matrix.tocoo()
        keep = (local.row < self.dofs.size) & (local.col < self.dofs.size)
        return self.dofs[local.row[keep]], self.dofs[local.col[keep]], local.data[keep]

    # -- the term at model positions x ----------------------------------------------------------
    def value(self, model, x: np.ndarray) -> float:
        vertices = self.positions(x)
        return float(self.potential(self.collisions(vertices), self.mesh, vertices))

    def gradient(self, model, x: np.ndarray) -> np.ndarray:
        vertices = self.positions(x)
        return self.model_vector(model, self.potential.gradient(self.collisions(vertices),
                                                                self.mesh, vertices))

    def hessian_triplets(self, model, x: np.ndarray, project_psd: bool = False):
        """(rows, cols, values) of the Hessian at x in flattened model DOFs (active pairs; each
        pair's block clamped to PSD before the fixed vertices' rows and columns are dropped:
        a principal submatrix of a PSD matrix is PSD)."""
        vertices = self.positions(x)
        method = self.ipctk.PSDProjectionMethod
        return self.model_triplets(self.potential.hessian(
            self.collisions(vertices), self.mesh, vertices,
            method.CLAMP if project_psd else method.NONE))

    def max_step(self, model, x: np.ndarray, p: np.ndarray) -> float:
        """Largest α ≤ 1 for which x + α p keeps every pair apart (fixed vertices still): 0.9 of
        the first time of impact (ipctk's conservative additive CCD), over at most CCD_REACH
        times the surface's extent; 0 for a step that is not finite."""
        clock_start = time.perf_counter() if _clock is not None else 0.0
        start, end = self.positions(x), self.positions(np.asarray(x) + np.asarray(p))
        with np.errstate(over="ignore", invalid="ignore"):
            reach = CCD_REACH * max(float(np.ptp(start, axis=0).max(initial=0.0)), self.dhat)
            longest = float(np.abs(end - start).max(initial=0.0))
        if not np.isfinite(longest):  # a step with NaN or inf in it (ipctk's CCD hangs on one)
            return 0.0
        cut = reach / longest if longest > reach else 1.0
        if cut < 1.0:
            end = start + cut * (end - start)
        alpha = cut * min(1.0, float(self.ipctk.compute_collision_free_stepsize(
            self.mesh, start, end, broad_phase=self.broad_phase, narrow_phase_ccd=self.ccd)))
        if _clock is not None:
            _clock.add("ccd", clock_start)
        return alpha

    def min_distance(self, model, x: np.ndarray) -> float:
        """The smallest distance of a pair closer than d̂ [m]; +inf when none is."""
        vertices = self.positions(x)
        squared = self.collisions(vertices).compute_minimum_distance(self.mesh, vertices)
        return float(np.sqrt(squared))


class SurfaceContact(IpcContact):
    """A model's surfaces in ipctk's terms, built once per model (:func:`of`): the collision
    mesh over the surface vertices at rest (x0)."""

    NAME = NAME

    def __init__(self, model):
        mesh, vertices = collision_mesh(model.surface_faces, model.x0)
        super().__init__(model, mesh, vertices)


def per_model(build):
    """``of(model)``: ``build(model)``, made on first use and kept while the model lives."""
    cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

    def of(model):
        contact = cache.get(model)
        if contact is None:
            contact = cache[model] = build(model)
        return contact

    return of


of = per_model(SurfaceContact)  # the model's SurfaceContact


# value, gradient, the Hessian's triplets and CCD (max_step) at model positions x
value, gradient, hessian_triplets, max_step = static_functions(of, "hessian_triplets")


def min_distance(model, x: np.ndarray) -> float:
    """The smallest distance between two surface elements that share no particle, among the
    pairs closer than d̂ [m]; +inf when none is."""
    return of(model).min_distance(model, x)


def contact_forces(model, x: np.ndarray) -> np.ndarray:
    """(n, d) the barrier's force on each particle, −∇ [N]."""
    return -gradient(model, x)
