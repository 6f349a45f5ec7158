"""Lagged, smoothed Coulomb friction on the pairs of an ipctk barrier (IPC's friction), shared by
the friction with obstacle meshes (:mod:`.obstacle_friction`) and between surfaces
(:mod:`.surface_friction`).

At the step start ipctk's ``TangentialCollisions`` fixes, for every pair closer than d̂, the
normal force λ of the barrier there, the tangent basis T and the closest points; over the step
the relative displacement u of the pair's closest points gives

    D(x) = Σ μ λ f0(|Tᵀu|),   f0 IPC's smoothed |·| with ε = ε_v·h (as the planes'),

added with weight h² to the incremental potential: a sliding force μλ above the speed ε_v,
viscous below. A pair's μ is the mean of its two sides' (ipctk blends the μ of each side's
vertices); ipctk's PSD projection clamps each pair's Hessian block.

Contract: :func:`lagged` builds the term for one step from an :class:`IpcContact` at the step
start, the vertices' μ (V,) and the contact as it is over the step (its fixed vertices where
they are at the step's end); the object has ``value``, ``gradient`` and ``hessian_triplets``.
"""

from __future__ import annotations

import numpy as np


class LaggedFriction:
    """Friction for one step: ``contact`` over the step, ``start`` the mesh's vertices at the
    step start, ``pairs`` ipctk's TangentialCollisions, ``potential`` its FrictionPotential."""

    def __init__(self, name: str, contact, start: np.ndarray, pairs, potential):
        self.NAME = name
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


def lagged(name: str, model, now, x_start: np.ndarray, mu: np.ndarray, h: float,
           over_step=None) -> LaggedFriction:
    """The friction term ``name`` of the implicit step of length h from positions ``x_start``:
    ``now`` the contact at the step start, ``mu`` (V,) each mesh vertex's μ, ``over_step`` the
    contact during the step (default ``now``)."""
    vertices = now.positions(x_start)
    mu = np.ascontiguousarray(mu, dtype=float).reshape(-1, 1)
    pairs = now.ipctk.TangentialCollisions()
    pairs.build(now.mesh, vertices, now.collisions(vertices), now.potential, mu, mu)
    return LaggedFriction(name, now if over_step is None else over_step, vertices, pairs,
                          now.ipctk.FrictionPotential(model.contact_epsv * h))
