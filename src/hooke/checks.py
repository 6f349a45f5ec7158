"""Validation primitives shared by the builder, the obstacles and scene builders: numbers,
vectors, counts and motions checked as strictly as scene files check them.

Contract: each function returns the checked value in its plain NumPy or Python form, or raises
:class:`HookeInputError` naming ``field`` and the value; none changes its input.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import HookeInputError, is_count, is_number
from .motion import checked


def _strict_array(value, kinds: str, accepts) -> np.ndarray | None:
    """``value`` (an array, or a number or nested sequence of them) as an array when every entry
    is of NumPy dtype kinds ``kinds`` or passes ``accepts``, else None: the API is as strict as
    scene files, so "1" and True are not numbers, nor 2.5 an index. A masked entry of a NumPy
    masked array is no number: NaN where floats are taken, else the array is refused."""
    if isinstance(value, np.ma.MaskedArray):  # its arithmetic returns masked arrays: unwrap
        if not np.ma.is_masked(value):
            value = value.data
        elif value.dtype.kind in "iuf" and "f" in kinds:
            value = value.astype(float).filled(np.nan)
        else:
            return None
    if isinstance(value, np.ndarray) and value.dtype.kind in kinds:
        return value
    try:
        items = np.asarray(value, dtype=object)
    except (TypeError, ValueError):
        return None
    return items if all(accepts(item) for item in items.reshape(-1)) else None


def _numbers(value) -> np.ndarray | None:
    array = _strict_array(value, "iuf", is_number)
    return None if array is None else array.astype(float)


def _vector(value, dim: int, field: str, squared: bool = False) -> np.ndarray:
    """``value`` as ``dim`` finite numbers; ``squared``: also its squared length (positions,
    velocities and plane normals are squared by the energies, lengths and normalisation)."""
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

