"""Air drag and wind on a model (:mod:`hooke.energies.drag`): the checks shared by
:meth:`hooke.ModelBuilder.set_air` and a scene file's ``[air]`` table, and :func:`with_air`,
which puts them on a model a builder function made.

Contract: each function raises :class:`hooke.errors.HookeInputError` naming the field
(``air.drag``, ``air.wind``, ``air.motion``) and its value; :func:`air_fields` returns the
Model's ``drag`` (n,), ``wind`` (d,) and ``wind_motion``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .checks import _checked_motion, _vector, per_particle


def check_drag(drag, n: int | None = None) -> float | np.ndarray:
    """The drag coefficient c [N·s/m]: one number >= 0, or one per particle (``n`` of them,
    when known)."""
    return per_particle(drag, "air.drag", n)


def air_fields(dim: int, n: int, drag, wind=None, motion=None) -> dict:
    """The Model's air fields for ``n`` particles in ``dim`` dimensions: drag c_i, the steady
    wind (default 0) and the air's motion (a :mod:`hooke.motion` motion or a callable of t
    giving the air's displacement), whose velocity adds to the wind."""
    coefficients = np.array(np.broadcast_to(check_drag(drag, n), (n,)), dtype=float)
    steady = np.zeros(dim) if wind is None else _vector(wind, dim, "air.wind", squared=True)
    moving = None if motion is None else _checked_motion(motion, dim, "air.motion")
    return dict(drag=coefficients, wind=steady, wind_motion=moving)


def with_air(model, drag, wind=None, motion=None):
    """A copy of ``model`` with air drag and wind (:func:`air_fields`)."""
    return replace(model, **air_fields(model.dim, model.n_particles, drag, wind, motion))
