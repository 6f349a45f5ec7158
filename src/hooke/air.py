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

from .checks import _checked_motion, _numbers, _vector
from .errors import HookeInputError


def check_drag(drag, n: int | None = None) -> float | np.ndarray:
    """The drag coefficient c [N·s/m]: one number >= 0, or one per particle (``n`` of them,
    when known)."""
    values = _numbers(drag)
    if values is None:
        raise HookeInputError("air.drag", "must be a number or one number per particle", drag)
    if values.ndim > 1 or not np.all(np.isfinite(values)) or np.any(values < 0):
        raise HookeInputError("air.drag", "must be finite and >= 0, one number or one per "
                              "particle", drag)
    if values.ndim == 0:
        return float(values)
    if n is not None and values.shape != (n,):
        raise HookeInputError("air.drag", f"must have one value per particle ({n})", drag)
    return values.copy()


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
