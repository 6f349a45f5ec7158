"""Log-barrier contact with spheres (circles in 2D): the planes' barrier on the distance to a
sphere (:mod:`hooke.obstacles`).

For particle i and sphere k with centre c_k(t) and radius r_k, the signed distance is
d = |x_i − c_k| − r_k and the energy is the planes' b(d) = A_i·d̂·κ/2·(s − 1)·ln s, s = d/d̂
(:func:`hooke.energies.barrier.barrier_value`: the same d̂, κ and contact area A_i, 0 for pinned
particles). With n = (x − c)/|x − c| and ρ = |x − c| the gradient is b'(d) n and the Hessian

    b''(d) n nᵀ + b'(d)/ρ · (I − n nᵀ),

whose tangential eigenvalue b'/ρ is ≤ 0 (b' ≤ 0 within d̂: the sphere's surface curves away), so
``project_psd`` clamps it to 0 and keeps b'' n nᵀ.

Contract: a potential term with the planes' hooks (:mod:`hooke.energies.barrier`; module-level
functions use the spheres at t = 0): ``at_time(model, t)`` binds the spheres' positions at t,
``max_step(model, x, p)`` is continuous collision detection — 0.9 of the first root α of
|x + αp − c|² = r² over every particle and sphere, capped at 1 — so no particle reaches a sphere,
not even inside a Newton iteration; ``start_guess`` carries the particles within d̂ + |δ| of a
sphere that moves by δ over the step (their distance to it is kept; any other particle is then
still ≥ d̂ away). Friction on spheres (μ per sphere) is the planes' lagged friction
(:mod:`hooke.energies.friction`) with the normal n at the step start. Only ``implicit_euler``
uses these hooks; the others refuse models with spheres (``Integrator.CAPABILITIES``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from .. import jit_cache  # noqa: F401  (a full disk under Numba's cache: no error)

from ..obstacles import sphere_centers
from .barrier import (ParticleBarrier, barrier_derivative, barrier_second, carried_past_precision,
                      hessian_structure, pairs_energy, pairs_forces, static_functions)

NAME = "sphere_barrier"
PARTICLE_BLOCKS = True  # one d×d block per particle, as the planes'

# hessian_structure (imported above: one d×d block per particle) is the planes' pattern.


def active(model) -> bool:
    return model.n_spheres > 0


@njit(cache=True)
def _geometry(x, centers, radii):
    """(d, ρ, n): the signed distances |x_i − c_k| − r_k (n, k), the distances to the centres
    |x_i − c_k| and the unit normals (x_i − c_k)/ρ (n, k, dim) of every particle–sphere pair."""
    count, dim = x.shape[0], x.shape[1]
    rho = np.empty((count, radii.shape[0]))
    normal = np.empty((count, radii.shape[0], dim))
    for i in range(count):
        for k in range(radii.shape[0]):
            length2 = 0.0
            for a in range(dim):
                normal[i, k, a] = x[i, a] - centers[k, a]
                length2 += normal[i, k, a] ** 2
            rho[i, k] = math.sqrt(length2)
            normal[i, k] /= rho[i, k]
    return rho - radii.reshape(1, -1), rho, normal


@njit(cache=True)
def _energy(x, centers, radii, area, dhat, kappa):
    return pairs_energy(_geometry(x, centers, radii)[0], area, dhat, kappa)


@njit(cache=True)
def _normal_forces(x, centers, radii, area, dhat, kappa, out):
    pairs_forces(_geometry(x, centers, radii)[0], area, dhat, kappa, out)


@njit(cache=True)
def _gradient(x, centers, radii, area, dhat, kappa, out):
    d, _, normal = _geometry(x, centers, radii)
    for i in range(x.shape[0]):
        for k in range(radii.shape[0]):
            if area[i] > 0.0 and d[i, k] < dhat:
                out[i] += barrier_derivative(d[i, k], area[i], dhat, kappa) * normal[i, k]


@njit(cache=True)
def _hessian_blocks(x, centers, radii, area, dhat, kappa, project, out):
    out[:] = 0.0
    d, rho, normal = _geometry(x, centers, radii)
    for i in range(x.shape[0]):
        for k in range(radii.shape[0]):
            if area[i] == 0.0 or d[i, k] >= dhat:
                continue
            # t I + (b'' − t) n nᵀ with the tangential eigenvalue t = b'/ρ ≤ 0, which the PSD
            # projection drops
            tangential = 0.0 if project else \
                barrier_derivative(d[i, k], area[i], dhat, kappa) / rho[i, k]
            along = barrier_second(d[i, k], area[i], dhat, kappa) - tangential
            out[i] += along * np.outer(normal[i, k], normal[i, k])
            for a in range(x.shape[1]):
                out[i, a, a] += tangential


@njit(cache=True)
def _max_step(x, p, centers, radii, area, fraction):
    alpha = 1.0
    _, rho, normal = _geometry(x, centers, radii)
    for i in range(x.shape[0]):
        for k in range(radii.shape[0]):
            if area[i] == 0.0:
                continue
            # |x + αp − c|² = r²: a α² + 2b α + c = 0 with c = ρ² − r² > 0 outside
            a = np.dot(p[i], p[i])
            b = rho[i, k] * np.dot(normal[i, k], p[i])
            c = (rho[i, k] - radii[k]) * (rho[i, k] + radii[k])
            disc = b * b - a * c
            if b >= 0.0 or disc < 0.0:
                continue  # moving away from the centre, or the line misses the sphere
            impact = c / (-b + math.sqrt(disc))  # the smaller root, without cancellation
            alpha = min(alpha, fraction * impact)
    return alpha


class SphereBarrier(ParticleBarrier):
    """The barrier with the spheres' centres at fixed positions (k, d)."""

    NAME = NAME
    ENERGY, GRADIENT, HESSIAN = (staticmethod(_energy), staticmethod(_gradient),
                                 staticmethod(_hessian_blocks))
    MAX_STEP, FORCES = staticmethod(_max_step), staticmethod(_normal_forces)

    def __init__(self, centers: np.ndarray):
        self.centers = np.ascontiguousarray(centers, dtype=float)

    def geometry(self, model):
        return self.centers, model.sphere_radii

    def distances(self, model, x: np.ndarray) -> np.ndarray:
        """(n, k) signed distances |x − c| − r of every particle to every sphere."""
        return (np.linalg.norm(np.asarray(x)[:, None, :] - self.centers[None], axis=2)
                - model.sphere_radii[None, :])


def at_time(model, t: float) -> SphereBarrier:
    """The barrier with the spheres at time t."""
    return SphereBarrier(sphere_centers(model, t))


value, gradient, hessian_values, max_step = static_functions(lambda model: at_time(model, 0.0))


# -- helpers for moving spheres, friction and reporting ----------------------------------------
def normals(model, x: np.ndarray, t: float) -> np.ndarray:
    """(n, k, d) outward unit normals (x − c)/|x − c| at every particle for the spheres at t."""
    rel = np.asarray(x)[:, None, :] - sphere_centers(model, t)[None]
    return rel / np.linalg.norm(rel, axis=2, keepdims=True)


def min_distance(model, x: np.ndarray, t: float = 0.0) -> float:
    """Smallest signed distance of any contact particle (area > 0) to any sphere at t [m]."""
    contact = model.contact_area > 0
    if not contact.any() or not model.n_spheres:
        return math.inf
    return float(at_time(model, t).distances(model, x)[contact].min())


def contact_forces(model, x: np.ndarray, t: float = 0.0) -> np.ndarray:
    """(n, d) the spheres' barrier force on each particle, −∇b [N]."""
    return -at_time(model, t).gradient(model, x)


def start_guess(model, x: np.ndarray, t: float, t_next: float) -> np.ndarray:
    """A Newton start for a step t → t_next inside the domain of the spheres at t_next: a sphere
    whose centre moves by δ carries every contact particle within d̂ + |δ| of it by δ. Raises
    :class:`SimulationError` if a particle still starts inside a sphere (squeezed between two)."""
    from ..errors import SimulationError

    if not model.sphere_motions:
        return x
    before, after = sphere_centers(model, t), sphere_centers(model, t_next)
    shift = after - before
    distance = SphereBarrier(before).distances(model, x)
    contact = model.contact_area > 0
    y = x.copy()
    for k in np.flatnonzero(np.any(shift != 0.0, axis=1)):
        carried = contact & (distance[:, k] < model.contact_dhat + np.linalg.norm(shift[k]))
        y[carried] += shift[k]
    stuck = np.flatnonzero(contact & np.any(SphereBarrier(after).distances(model, y) <= 0.0,
                                            axis=1))
    if stuck.size and model.n_spheres == 1:  # nothing to squeeze against: round-off
        raise carried_past_precision("sphere", stuck, math.hypot(*shift[0]), y, t_next)
    if stuck.size:
        raise SimulationError(
            f"moving spheres squeeze particle(s) {', '.join(map(str, stuck[:10]))} against another "
            f"sphere at t = {t_next:.6g}: no configuration keeps them apart; try a smaller dt")
    return y

