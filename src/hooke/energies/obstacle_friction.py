"""Lagged, smoothed Coulomb friction with obstacle meshes (μ per obstacle), computed by ipctk:
IPC's friction (:mod:`.ipc_friction`) on the pairs of :mod:`.obstacle_barrier`.

A step term (``hooke.energies.STEP_TERMS``) whose Hessian pattern changes with the pairs
(``VARYING_PATTERN``: its prepared object has ``hessian_triplets``). The pairs and their normal
forces are those at the step start (xⁿ, obstacles at t); the relative displacement of a pair's
closest points runs from there to the model at x and the obstacle at t + h, so a moving obstacle
drags friction along. μ of a pair is obstacle k's.
"""

from __future__ import annotations

import numpy as np

from ..obstacles import obstacle_vertices
from . import obstacle_barrier
from .ipc_friction import lagged

NAME = "obstacle_friction"
VARYING_PATTERN = True  # no fixed Hessian pattern: the prepared term gives hessian_triplets


def active(model) -> bool:
    return bool(np.any(model.obstacle_friction > 0)) and obstacle_barrier.active(model)


def prepare(model, start, h: float):
    """The friction term of the implicit step from ``start`` (a State) to start.t + h: the
    model's vertices carry μ = 0 and obstacle k's 2μ_k, so that a pair's mean is μ_k."""
    now = obstacle_barrier.at_time(model, start.t)
    mu = np.concatenate([np.zeros(now.particles.size), 2.0 * model.obstacle_friction[now.owner]])
    return lagged(NAME, model, now, start.x, mu, h,
                  over_step=now.bound(obstacle_vertices(model, start.t + h)))
