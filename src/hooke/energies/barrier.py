"""Log-barrier contact with half-spaces (planes with any normal), seed 004.

For particle i and plane k with unit normal n_k through the point o_k, the signed distance is
d = n_k·(x_i − o_k) and the barrier energy is

    b(d) = A_i·d̂·κ/2 · (s − 1)·ln s,   s = d/d̂,   for 0 < d < d̂ (0 beyond d̂, +∞ at d ≤ 0),

so b'(d) = A_i·κ/2·(ln s + (s − 1)/s) ≤ 0 (the normal force −b' pushes along n_k) and
b''(d) = A_i·κ·(d + d̂)/(2 d²) > 0: each particle's d×d Hessian block Σ_k b'' n_k n_kᵀ is already
positive semi-definite, so ``project_psd`` changes nothing. A_i = ``model.contact_area`` (0 for
pinned particles: they follow their prescription and take no part in contact).

Contract: a potential term (see :mod:`hooke.energies`; its module-level functions use the planes
at t = 0) with three optional hooks —
- ``max_step(model, x, p)``: continuous collision detection for the line search: 0.9 × the first
  time of impact α of x + α p with any plane (capped at 1), so no contact particle ever reaches a
  plane, not even inside a Newton iteration;
- ``at_time(model, t)``: the term with the planes placed at time t (a :class:`PlaneBarrier`);
  implicit steps use the planes at t + h, energies are reported with the planes at the frame time;
- ``start_guess(model, x, t, t_next)``: moves the Newton start into the domain of the planes at
  t_next by carrying the particles a moving plane pushes.
Loops are Numba-compiled over all particle–plane pairs at once. Contact needs an integrator that
uses all three hooks (``supports_contact``: ``implicit_euler``); the others refuse models with
planes, since without collision detection a step could cross a plane.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from .. import jit_cache  # noqa: F401  (a full disk under Numba's cache: no error)

from ..motion import displacements

NAME = "barrier"
PARTICLE_BLOCKS = True  # its Hessian is one d×d block per particle (hooke.contact_matrix)
CCD_FRACTION = 0.9  # of the first time of impact: never land exactly on a plane (b = ∞)


def active(model) -> bool:
    return model.n_planes > 0


# -- plane positions -------------------------------------------------------------------------
def plane_displacements(model, t: float) -> np.ndarray:
    """(q, d) displacement u(t) − u(0) of every plane (zero for fixed planes)."""
    return displacements(model.plane_motions, model.n_planes, model.dim, t)


def plane_offsets(model, t: float = 0.0) -> np.ndarray:
    """(q,) offsets c_k(t) = n_k·o_k(t): the plane is {x : n_k·x = c_k}, d = n_k·x − c_k."""
    points = model.plane_points
    if model.plane_motions:
        points = points + plane_displacements(model, t)
    return np.einsum("kd,kd->k", model.plane_normals, points)


# -- compiled kernels --------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _distance(x, i, normals, offsets, k):
    """Signed distance of particle i to plane k."""
    d = -offsets[k]
    for a in range(x.shape[1]):
        d += normals[k, a] * x[i, a]
    return d


@njit(cache=True)
def _distances(x, normals, offsets):
    """(n, q) signed distance of every particle to every plane."""
    out = np.empty((x.shape[0], normals.shape[0]))
    for i in range(x.shape[0]):
        for k in range(normals.shape[0]):
            out[i, k] = _distance(x, i, normals, offsets, k)
    return out


@njit(cache=True)
def _energy(x, normals, offsets, area, dhat, kappa):
    return pairs_energy(_distances(x, normals, offsets), area, dhat, kappa)


# -- shared by every particle–body barrier (planes here, spheres in .sphere_barrier), from the
# signed distances d (n, k) of the n particles to the k bodies ---------------------------------
@njit(cache=True)
def pairs_energy(d, area, dhat, kappa):
    """Σ b(d_ik) over the contact particles (area > 0) within d̂; +∞ if one is at d ≤ 0."""
    total = 0.0
    for i in range(d.shape[0]):
        if area[i] == 0.0:
            continue
        for k in range(d.shape[1]):
            if d[i, k] < dhat:
                if d[i, k] <= 0.0:
                    return np.inf
                total += barrier_value(d[i, k], area[i], dhat, kappa)
    return total


@njit(cache=True)
def pairs_forces(d, area, dhat, kappa, out):
    """out (n, k) = λ = −b'(d) ≥ 0 of every pair (0 beyond d̂ and for area 0)."""
    for i in range(d.shape[0]):
        for k in range(d.shape[1]):
            out[i, k] = 0.0
            if area[i] > 0.0 and d[i, k] < dhat:
                out[i, k] = -_derivative(d[i, k], area[i], dhat, kappa)


# The scalar barrier b(d) and its derivatives, for 0 < d < d̂: shared with the spheres'
# barrier (:mod:`.sphere_barrier`), whose distance is |x − c| − r instead of n·x − c.
@njit(cache=True)
def barrier_value(d, area, dhat, kappa):
    """b(d) = A·d̂·κ/2·(s − 1)·ln s, s = d/d̂, for 0 < d < d̂."""
    s = d / dhat
    return area * dhat * kappa * 0.5 * (s - 1.0) * math.log(s)


@njit(cache=True)
def _derivative(d, area, dhat, kappa):
    """b'(d) for 0 < d < d̂ (NaN at d ≤ 0: outside the domain)."""
    if d <= 0.0:
        return np.nan
    s = d / dhat
    return area * kappa * 0.5 * (math.log(s) + (s - 1.0) / s)


barrier_derivative = _derivative


@njit(cache=True)
def barrier_second(d, area, dhat, kappa):
    """b''(d) = A·κ·(d + d̂)/(2 d²) > 0 for 0 < d < d̂."""
    return area * kappa * (d + dhat) / (2.0 * d * d)


@njit(cache=True)
def _gradient(x, normals, offsets, area, dhat, kappa, out):
    for i in range(x.shape[0]):
        if area[i] == 0.0:
            continue
        for k in range(normals.shape[0]):
            d = _distance(x, i, normals, offsets, k)
            if d < dhat:
                db = _derivative(d, area[i], dhat, kappa)
                for a in range(x.shape[1]):
                    out[i, a] += db * normals[k, a]


@njit(cache=True)
def _hessian_blocks(x, normals, offsets, area, dhat, kappa, out):
    out[:] = 0.0
    for i in range(x.shape[0]):
        if area[i] == 0.0:
            continue
        for k in range(normals.shape[0]):
            d = _distance(x, i, normals, offsets, k)
            if d < dhat:
                ddb = barrier_second(d, area[i], dhat, kappa)
                for a in range(x.shape[1]):
                    for b in range(x.shape[1]):
                        out[i, a, b] += ddb * normals[k, a] * normals[k, b]


@njit(cache=True)
def _max_step(x, p, normals, offsets, area, fraction):
    alpha = 1.0
    for i in range(x.shape[0]):
        if area[i] == 0.0:
            continue
        for k in range(normals.shape[0]):
            d = _distance(x, i, normals, offsets, k)
            approach = 0.0
            for a in range(x.shape[1]):
                approach -= normals[k, a] * p[i, a]
            if approach > 0.0 and fraction * d < alpha * approach:
                alpha = fraction * d / approach
    return alpha


@njit(cache=True)
def _normal_forces(x, normals, offsets, area, dhat, kappa, out):
    pairs_forces(_distances(x, normals, offsets), area, dhat, kappa, out)


# -- the term at given plane offsets ------------------------------------------------------------
def _x(x):
    return np.ascontiguousarray(x, dtype=float)


class ParticleBarrier:
    """A barrier between each contact particle and k rigid bodies (planes here, spheres in
    :mod:`.sphere_barrier`) placed at one time: the form an implicit step uses. Subclasses give
    ``geometry(model)`` (two arrays describing the bodies, the second of length k) and the
    compiled kernels ``ENERGY``, ``GRADIENT``, ``HESSIAN`` (…, project, out), ``MAX_STEP``,
    ``FORCES``."""

    NAME = NAME
    PARTICLE_BLOCKS = PARTICLE_BLOCKS

    def _args(self, model):
        return (*self.geometry(model), model.contact_area, model.contact_dhat,
                model.contact_kappa)

    def value(self, model, x: np.ndarray) -> float:
        return float(self.ENERGY(_x(x), *self._args(model)))

    def gradient(self, model, x: np.ndarray) -> np.ndarray:
        out = np.zeros((model.n_particles, model.dim))
        self.GRADIENT(_x(x), *self._args(model), out)
        return out

    def local_hessians(self, model, x: np.ndarray, project_psd: bool = False) -> np.ndarray:
        """(n, d, d) Hessian block of each particle (zero away from every body)."""
        out = np.empty((model.n_particles, model.dim, model.dim))
        self.HESSIAN(_x(x), *self._args(model), project_psd, out)
        return out

    def hessian_structure(self, model):
        return hessian_structure(model)

    def hessian_values(self, model, x: np.ndarray, project_psd: bool = False) -> np.ndarray:
        return self.local_hessians(model, x, project_psd).reshape(-1)

    def max_step(self, model, x: np.ndarray, p: np.ndarray) -> float:
        return float(self.MAX_STEP(_x(x), _x(p), *self.geometry(model), model.contact_area,
                                   CCD_FRACTION))

    def normal_forces(self, model, x: np.ndarray) -> np.ndarray:
        """(n, k) normal force magnitudes λ = −b'(d) ≥ 0 of every particle–body pair [N]."""
        out = np.empty((model.n_particles, len(self.geometry(model)[1])))
        self.FORCES(_x(x), *self._args(model), out)
        return out


@njit(cache=True)
def _plane_hessian_blocks(x, normals, offsets, area, dhat, kappa, project, out):
    """Already PSD (b'' n nᵀ): ``project`` changes nothing."""
    _hessian_blocks(x, normals, offsets, area, dhat, kappa, out)


class PlaneBarrier(ParticleBarrier):
    """The barrier with the planes at fixed offsets (q,)."""

    ENERGY, GRADIENT, HESSIAN = (staticmethod(_energy), staticmethod(_gradient),
                                 staticmethod(_plane_hessian_blocks))
    MAX_STEP, FORCES = staticmethod(_max_step), staticmethod(_normal_forces)

    def __init__(self, offsets: np.ndarray):
        self.offsets = np.ascontiguousarray(offsets, dtype=float)

    def geometry(self, model):
        return model.plane_normals, self.offsets

    def distances(self, model, x: np.ndarray) -> np.ndarray:
        """(n, q) signed distances of every particle to every plane."""
        return np.asarray(x) @ model.plane_normals.T - self.offsets[None, :]


def at_time(model, t: float) -> PlaneBarrier:
    """The barrier with the planes at time t."""
    return PlaneBarrier(plane_offsets(model, t))


# -- the potential-term contract (planes at their t = 0 position) --------------------------------
def hessian_structure(model):
    """One d×d block per particle: rows i·d + a, columns i·d + b (a, b row-major)."""
    n, d = model.n_particles, model.dim
    dofs = (np.arange(n)[:, None] * d + np.arange(d)[None, :]).astype(np.int64)
    rows = np.repeat(dofs, d, axis=1)
    cols = np.tile(dofs, (1, d))
    return rows.reshape(-1), cols.reshape(-1)


def static_functions(static, hessian: str = "hessian_values"):
    """(value, gradient, Hessian, max_step) functions of the potential-term contract for a term
    held by an object ``static(model)`` (a time-dependent term: its bodies where they start);
    the Hessian function is the object's method named ``hessian`` (``hessian_values``, or
    ``hessian_triplets`` for a term whose pattern changes)."""
    def value(model, x: np.ndarray) -> float:
        return static(model).value(model, x)

    def gradient(model, x: np.ndarray) -> np.ndarray:
        return static(model).gradient(model, x)

    def hessian_function(model, x: np.ndarray, project_psd: bool = False):
        return getattr(static(model), hessian)(model, x, project_psd)

    def max_step(model, x: np.ndarray, p: np.ndarray) -> float:
        return static(model).max_step(model, x, p)

    hessian_function.__name__ = hessian
    return value, gradient, hessian_function, max_step


value, gradient, hessian_values, max_step = static_functions(lambda model: at_time(model, 0.0))


# -- helpers for moving planes, friction and reporting ---------------------------------------
def min_distance(model, x: np.ndarray, t: float = 0.0) -> float:
    """Smallest signed distance of any contact particle (area > 0) to any plane at time t [m]."""
    contact = model.contact_area > 0
    if not contact.any():
        return math.inf
    return float(PlaneBarrier(plane_offsets(model, t)).distances(model, x)[contact].min())


def contact_forces(model, x: np.ndarray, t: float = 0.0) -> np.ndarray:
    """(n, d) the barrier's force on each particle summed over the planes at time t, Σ_k λ_ik n_k
    = −∇b [N] (λ = −b'(d) ≥ 0; the contact integrators keep every d > 0)."""
    return -at_time(model, t).gradient(model, x)


def carried_past_precision(body: str, stuck: np.ndarray, step: float, y: np.ndarray,
                           t_next: float):
    """The :class:`SimulationError` of a lone moving ``body`` ("plane", "sphere") whose step
    carried particles ``stuck`` by ``step`` m to positions ``y`` too large to keep their gap: with
    nothing to squeeze them against, only round-off can have put them in contact."""
    from ..errors import SimulationError

    error = SimulationError(
        f"moving {body} 0 carries particle(s) {', '.join(map(str, stuck[:10]))} by {step:.3g} m "
        f"in the step to t = {t_next:.6g}, past what positions of |x| up to "
        f"{np.max(np.abs(y)):.3g} m resolve")
    error.advice = f"Give the {body} a slower motion."
    return error


def start_guess(model, x: np.ndarray, t: float, t_next: float) -> np.ndarray:
    """A Newton start for a step t → t_next inside the domain of the planes at t_next.

    A plane that moves by δ > 0 along its normal (towards the particles) carries every contact
    particle within d̂ + δ of it by δ n, so those particles keep their distance; particles farther
    away stay. Raises :class:`SimulationError` if the result still touches a plane (particles
    squeezed between planes closing faster than the gap).
    """
    from ..errors import SimulationError

    if not model.plane_motions:
        return x
    before, after = plane_offsets(model, t), plane_offsets(model, t_next)
    push = np.maximum(after - before, 0.0)
    distance = x @ model.plane_normals.T - before[None, :]
    contact = model.contact_area > 0
    y = x.copy()
    for k in np.flatnonzero(push > 0):
        carried = contact & (distance[:, k] < model.contact_dhat + push[k])
        y[carried] += push[k] * model.plane_normals[k]
    final = y @ model.plane_normals.T - after[None, :]
    stuck = np.flatnonzero(contact & np.any(final <= 0.0, axis=1))
    if stuck.size and len(model.plane_normals) == 1:  # nothing to squeeze against: round-off
        raise carried_past_precision("plane", stuck, push[0], y, t_next)
    if stuck.size:
        raise SimulationError(
            f"moving planes squeeze particle(s) {', '.join(map(str, stuck[:10]))} against another "
            f"plane at t = {t_next:.6g}: no configuration keeps them apart; try a smaller dt")
    return y
