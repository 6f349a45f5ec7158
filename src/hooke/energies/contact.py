"""What a saved frame records about contact with rigid bodies — planes, spheres and obstacle
meshes (:mod:`.barrier`, :mod:`.sphere_barrier`, :mod:`.obstacle_barrier`): the smallest distance
of the model to any of them, and the barriers' force on each particle.

Contract: ``active(model)`` whether the model has any such body for its contact particles;
``min_distance(model, x, t)`` the smallest distance at time t [m] — signed and exact to planes
and spheres, and to obstacles among the pairs closer than d̂ (+inf when no body is near);
``contact_forces(model, x, t)`` (n, d) the sum of the barriers' forces −∇b [N].
"""

from __future__ import annotations

import math

import numpy as np

from . import barrier, obstacle_barrier, sphere_barrier

TERMS = (barrier, sphere_barrier, obstacle_barrier)


def active(model) -> bool:
    return any(term.active(model) for term in TERMS)


def min_distance(model, x: np.ndarray, t: float = 0.0) -> float:
    return min((term.min_distance(model, x, t) for term in TERMS if term.active(model)),
               default=math.inf)


def contact_forces(model, x: np.ndarray, t: float = 0.0) -> np.ndarray:
    forces = [term.contact_forces(model, x, t) for term in TERMS if term.active(model)]
    if not forces:
        return np.zeros((model.n_particles, model.dim))
    return sum(forces[1:], forces[0])  # one body kind: its forces as they are (−0.0 kept)
