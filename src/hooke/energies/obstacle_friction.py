"""Lagged, smoothed Coulomb friction with obstacle meshes (μ per obstacle), computed by ipctk:
the planes' friction (:mod:`.friction`) on the pairs of :mod:`.obstacle_barrier`.

A step term (``hooke.energies.STEP_TERMS``) whose Hessian pattern changes with the pairs
(``VARYING_PATTERN``: its prepared object has ``hessian_triplets``). At the step start (xⁿ,
obstacles at t) ipctk's ``TangentialCollisions`` fixes, for every pair closer than d̂, the normal
force λ of the obstacle barrier there, the tangent basis and the closest points; over the step
the relative displacement u of the pair's closest points (model elements from xⁿ to x,
obstacle from t to t + h: a moving obstacle drags friction along) gives

    D(x) = Σ μ λ f0(|Tᵀu|),   f0 IPC's smoothed |·| with ε = ε_v·h (as the planes'),

added with weight h² to the incremental potential: a sliding force μλ above the speed ε_v,
viscous below. μ of a pair is obstacle k's: ipctk blends the two sides' per-vertex μ by their
mean, so the model's vertices carry μ = 0 and obstacle k's vertices 2μ_k. ipctk's PSD projection
clamps each pair's Hessian block.
"""

from __future__ import annotations

import numpy as np

from ..obstacles import obstacle_vertices
from . import obstacle_barrier

NAME = "obstacle_friction"
VARYING_PATTERN = True  # no fixed Hessian pattern: the prepared term gives hessian_triplets


def active(model) -> bool:
    return bool(np.any(model.obstacle_friction > 0)) and obstacle_barrier.active(model)


class LaggedObstacleFriction:
    """Friction for one step: ``contact`` with the obstacles at t + h, ``start`` the mesh's
    vertices at the step start, ``pairs`` ipctk's TangentialCollisions, ``potential`` its
    FrictionPotential(ε_v·h)."""

    NAME = NAME

    def __init__(self, contact, start: np.ndarray, pairs, potential):
        self.contact, self.start, self.pairs, self.potential = contact, start, pairs, potential

    def _displacements(self, x: np.ndarray) -> np.ndarray:
        return np.asfortranarray(self.contact.positions(x) - self.start)

    def value(self, model, x: np.ndarray) -> float:
        return float(self.potential(self.pairs, self.contact.mesh, self._displacements(x)))

    def gradient(self, model, x: np.ndarray) -> np.ndarray:
        return self.contact.model_vector(model, self.potential.gradient(
            self.pairs, self.contact.mesh, self._displacements(x)))

    def hessian_triplets(self, model, x: np.ndarray, project_psd: bool = False):
        method = self.contact.ipctk.PSDProjectionMethod
        return self.contact.model_triplets(self.potential.hessian(
            self.pairs, self.contact.mesh, self._displacements(x),
            method.CLAMP if project_psd else method.NONE))


def prepare(model, start, h: float) -> LaggedObstacleFriction:
    """The friction term of the implicit step from ``start`` (a State) to start.t + h."""
    now = obstacle_barrier.at_time(model, start.t)
    ipctk = now.ipctk
    vertices = now.positions(start.x)
    mu = np.concatenate([np.zeros(now.particles.size),
                         2.0 * model.obstacle_friction[now.owner]]).reshape(-1, 1)
    pairs = ipctk.TangentialCollisions()
    pairs.build(now.mesh, vertices, now.collisions(vertices), now.potential, mu, mu)
    return LaggedObstacleFriction(now.bound(obstacle_vertices(model, start.t + h)), vertices,
                                  pairs, ipctk.FrictionPotential(model.contact_epsv * h))
