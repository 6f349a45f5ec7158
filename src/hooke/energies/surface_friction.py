"""Lagged, smoothed Coulomb friction between surfaces (μ per surface), computed by ipctk: IPC's
friction (:mod:`.ipc_friction`) on the pairs of :mod:`.surface_barrier` — the phys-sim-book's
self-friction.

A step term (``hooke.energies.STEP_TERMS``) whose Hessian pattern changes with the pairs
(``VARYING_PATTERN``), present with self-contact when a surface has μ > 0
(``Model.surface_friction``, ``ModelBuilder.add_surface(faces, friction=μ)``). A pair of
elements of surfaces a and b has μ = (μ_a + μ_b)/2 (ipctk's mean of the two sides), so within a
surface and between surfaces of the same μ it is that μ. A particle on several surfaces (where
two share a particle) carries the largest of their μ.
"""

from __future__ import annotations

import numpy as np

from . import surface_barrier
from .ipc_friction import lagged

NAME = "surface_friction"
VARYING_PATTERN = True  # no fixed Hessian pattern: the prepared term gives hessian_triplets


def active(model) -> bool:
    return surface_barrier.active(model) and bool(np.any(model.surface_friction > 0))


def vertex_friction(model, particles: np.ndarray) -> np.ndarray:
    """(V,) μ of each collision-mesh vertex (the particles ``particles``): the largest μ of the
    surfaces its particle is on."""
    per_particle = np.zeros(model.n_particles)
    mu = model.surface_friction[model.surface_of_face]
    for corner in model.surface_faces.T:
        np.maximum.at(per_particle, corner, mu)
    return per_particle[particles]


def prepare(model, start, h: float):
    """The friction term of the implicit step from ``start`` (a State) to start.t + h."""
    now = surface_barrier.of(model)
    return lagged(NAME, model, now, start.x, vertex_friction(model, now.particles), h)
