"""Validation primitives shared by the builder, the obstacles and scene builders: numbers,
vectors, counts and motions checked as strictly as scene files check them.

Contract: each function returns the checked value in its plain NumPy or Python form, or raises
:class:`HookeInputError` naming ``field`` and the value; none changes its input.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import HookeInputError, _numbers, _strict_array, is_count, is_number  # noqa: F401
from .motion import checked


def _vector(value, dim: int, field: str, squared: bool = False) -> np.ndarray:
    """``value`` as ``dim`` finite numbers; ``squared``: also its squared length (positions
    and velocities are squared by the energies and lengths)."""
    array = _numbers(value)
    if array is None or array.ndim > 1:  # [[2, 0]] is not the point (2, 0)
        raise HookeInputError(field, "must be a flat sequence of numbers", value)
    array = array.reshape(-1)
    if array.shape != (dim,):
        raise HookeInputError(field, f"must have {dim} component(s) for dim={dim}", value)
    if not np.all(np.isfinite(array)):
        raise HookeInputError(field, "must be finite", value)
    with np.errstate(over="ignore"):
        if squared and not math.isfinite(float(array @ array)):
            raise HookeInputError(field, "is too large (its squared length overflows to inf)", value)
    return array


def _checked_motion(motion, dim: int, field: str):
    """``motion`` as a :class:`~hooke.motion.CheckedMotion` named ``field``, tried at t = 0 so
    that a motion wrong from the start is refused where it is given."""
    motion = checked(motion, dim, field)
    motion(0.0)
    return motion


def per_particle(value, field: str, n: int | None = None) -> float | np.ndarray:
    """``value`` as one number >= 0, or one per particle (``n`` of them, when known): a contact
    area, a drag coefficient."""
    values = _numbers(value)
    if values is None:
        raise HookeInputError(field, "must be a number or one number per particle", value)
    if values.ndim > 1 or not np.all(np.isfinite(values)) or np.any(values < 0):
        raise HookeInputError(field, "must be finite and >= 0, one number or one per particle",
                              value)
    if values.ndim == 0:
        return float(values)
    if n is not None and values.shape != (n,):
        raise HookeInputError(field, f"must have one value per particle ({n})", value)
    return values.copy()


def _number(value, field: str, *, positive: bool = False, nonnegative: bool = False) -> float:
    if not is_number(value):
        raise HookeInputError(field, "must be a number", value)
    number = float(value)
    if not math.isfinite(number):
        raise HookeInputError(field, "must be finite", value)
    if positive and number <= 0:
        raise HookeInputError(field, "must be > 0", value)
    if nonnegative and number < 0:
        raise HookeInputError(field, "must be >= 0", value)
    return number


def _count(value, field: str) -> int:
    if not is_count(value) or value < 1:
        raise HookeInputError(field, "must be an integer >= 1", value)
    return int(value)

