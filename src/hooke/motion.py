"""Prescribed motions of pinned particles (seed 003's moving support ``box(t)``, a moving ceiling).

Contract: a motion is a callable ``motion(t) -> (u, du, ddu)``, each shape (d,): the displacement
of a reference point and its first two time derivatives. A pinned particle with a motion sits at
x0 + u(t) − u(0) with velocity du(t); integrators place it there exactly at every step and
use ddu(t) wherever an acceleration is needed.

Every motion a model holds is a :class:`CheckedMotion`: the builder wraps it with the field its
owner has in scene files (``particles[3].motion``, ``planes[0].motion``), and a value that is not
finite, or not of shape (d,), at any t is then one :class:`HookeInputError` naming that field and
t — never a NaN trajectory, nor a plane that quietly stops acting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .errors import HookeInputError, _numbers, is_number


def _finite_vector(value, field: str) -> np.ndarray:
    """``value`` as finite numbers, as strictly as scene files take them: "1", a dict, 1 + 2j
    or 10**400 is no number (np.asarray(dtype=float) took the string and raised on the rest)."""
    array = _numbers(value)
    if array is None or array.ndim > 1:
        raise HookeInputError(field, "must be a flat sequence of numbers", value)
    array = array.reshape(-1)
    if not np.all(np.isfinite(array)):
        raise HookeInputError(field, "must be finite", value)
    return array


def _finite_number(value, field: str) -> float:
    if not is_number(value) or not math.isfinite(value):  # [] and [1.0] are no amplitude
        raise HookeInputError(field, "must be a finite number", value)
    return float(value)


@dataclass(frozen=True)
class Sinusoid:
    """u(t) = amplitude · sin(omega·t + phase) · direction."""

    amplitude: float
    direction: tuple[float, ...]
    omega: float
    phase: float = 0.0

    def __post_init__(self):
        direction = _finite_vector(self.direction, "motion.direction")
        largest = np.max(np.abs(direction), initial=0.0)
        if largest == 0:
            raise HookeInputError("motion.direction", "must be a non-zero vector", self.direction)
        direction = direction / largest  # first: |(1e308, 1e308)|² is inf, which made it (0, 0)
        object.__setattr__(self, "direction", tuple(direction / np.linalg.norm(direction)))
        for name in ("amplitude", "omega", "phase"):
            object.__setattr__(self, name, _finite_number(getattr(self, name), f"motion.{name}"))
        with np.errstate(over="ignore"):  # the acceleration a·ω² (a Python float ** overflows)
            peak = np.float64(abs(self.amplitude)) * np.float64(self.omega) ** 2
        if not np.isfinite(peak):
            raise HookeInputError("motion.omega", "gives an acceleration amplitude·omega² past the "
                                  f"largest float (amplitude = {self.amplitude:g})", self.omega)

    def __call__(self, t: float):
        e = np.asarray(self.direction)
        angle = self.omega * t + self.phase
        return (self.amplitude * np.sin(angle) * e,
                self.amplitude * self.omega * np.cos(angle) * e,
                -self.amplitude * self.omega ** 2 * np.sin(angle) * e)


@dataclass(frozen=True)
class ConstantVelocity:
    """u(t) = velocity · min(t, duration) (for example a ceiling pressing down, then holding)."""

    velocity: tuple[float, ...]
    duration: float = float("inf")

    def __post_init__(self):
        object.__setattr__(self, "velocity", tuple(_finite_vector(self.velocity, "motion.velocity")))
        if not is_number(self.duration) or not self.duration > 0:  # inf: for ever (the default)
            raise HookeInputError("motion.duration", "must be a number > 0", self.duration)

    def __call__(self, t: float):
        v = np.asarray(self.velocity)
        if t >= self.duration:
            return v * self.duration, np.zeros_like(v), np.zeros_like(v)
        return v * t, v, np.zeros_like(v)


def _real_numbers(value) -> np.ndarray:
    """``value`` as a float array; complex numbers are refused (TypeError), where NumPy's cast
    kept their real part with only a ComplexWarning: a motion f(t) = 0.1·(t − 1)**0.5 moved
    its pin by the real part of an imaginary displacement."""
    if np.asarray(value).dtype.kind == "c":
        raise TypeError("complex values are no displacements, got "
                        f"{complex(np.asarray(value).ravel()[0])}")
    return np.asarray(value, dtype=float)


@dataclass(frozen=True)
class FunctionMotion:
    """A user function of time: ``f(t)`` returns the displacement u(t), or a tuple (u, du, ddu).

    When only u is returned, du and ddu come from central differences with step ``h``; where f
    has no finite value at t − h (a motion of t ≥ 0 at t = 0, such as 0.1·t**1.5), from
    one-sided differences forward of t, of the same order in h.
    """

    function: Callable
    h: float = 1e-5

    def __call__(self, t: float):
        value = self.function(t)
        # three numbers are a 3D u, (0, 0, 0.1·t), not (u, du, ddu) of shape () each
        if isinstance(value, tuple) and len(value) == 3 and not all(map(is_number, value)):
            return tuple(_real_numbers(part) for part in value)
        u = _real_numbers(value)
        after = _real_numbers(self.function(t + self.h))
        before = self._value_or_none(t - self.h)
        if before is None or before.shape != u.shape:
            further = _real_numbers(self.function(t + 2 * self.h))
            return (u, (4 * after - 3 * u - further) / (2 * self.h),
                    (further - 2 * after + u) / self.h ** 2)
        return u, (after - before) / (2 * self.h), (after - 2 * u + before) / self.h ** 2

    def _value_or_none(self, t: float):
        """f(t) as finite numbers, None where f is not defined (it raises, or is not finite)."""
        try:
            with np.errstate(all="ignore"):
                value = _real_numbers(self.function(t))
        except (TypeError, ValueError, ArithmeticError):
            return None
        return value if np.all(np.isfinite(value)) else None


@dataclass(frozen=True)
class CheckedMotion:
    """``motion`` (any callable of t giving (u, du, ddu)) whose every value is checked: d finite
    numbers each, else HookeInputError naming ``field`` and t."""

    motion: Callable
    field: str
    dim: int

    def __call__(self, t: float):
        try:
            with np.errstate(all="ignore"):  # what overflows is refused below, by name
                parts = self.motion(t)
        except (TypeError, ValueError) as error:  # e.g. a function's value that is not numbers
            raise HookeInputError(self.field, f"could not be evaluated at t = {float(t)!r} "
                                  f"({error})", show_value=False) from None
        if isinstance(parts, tuple) and len(parts) == 3:
            try:
                checked = tuple(_real_numbers(part) for part in parts)
            except (TypeError, ValueError):
                checked = ()
            # one pass over the few numbers in Python: a third of np.isfinite's cost per part
            if checked and all(part.shape == (self.dim,) for part in checked) and all(
                    map(math.isfinite, checked[0].tolist() + checked[1].tolist()
                        + checked[2].tolist())):
                return checked
        self._refuse(parts, float(t))

    def _refuse(self, parts, t: float) -> None:
        """The HookeInputError of ``parts``, a value of the motion at t that is not three finite
        d-vectors."""
        if not (isinstance(parts, tuple) and len(parts) == 3):
            raise HookeInputError(self.field, f"must return a tuple (u, du, ddu) at t = {t!r}",
                                  type(parts).__name__)
        for label, part in zip(("u", "du", "ddu"), parts):
            try:
                array = np.asarray(part, dtype=float)
            except (TypeError, ValueError):
                array = None
            if array is None or array.shape != (self.dim,):
                raise HookeInputError(self.field, f"must return {label} of shape ({self.dim},) "
                                      f"at t = {t!r}", np.shape(part) if array is not None else part)
            if not np.all(np.isfinite(array)):
                raise HookeInputError(self.field, f"returned a non-finite {label} at t = {t!r}",
                                      array)


def checked(motion, dim: int, field: str) -> CheckedMotion:
    """``motion`` (a motion object, a callable of t, or a CheckedMotion of another owner) checked
    at every call and named ``field``."""
    if isinstance(motion, CheckedMotion):
        motion = motion.motion
    return CheckedMotion(as_motion(motion), field, dim)


def displacements(motions, count: int, dim: int, t: float) -> np.ndarray:
    """(count, dim) displacement u(t) − u(0) of each of ``count`` moving bodies (planes, spheres,
    obstacles) from their (index, motion) pairs; zero for bodies without a motion."""
    out = np.zeros((count, dim))
    for k, motion in motions:
        out[k] = np.asarray(motion(t)[0]) - np.asarray(motion(0.0)[0])
    return out


def as_motion(motion) -> Callable:
    """Accept a motion object or any callable of t."""
    if isinstance(motion, (Sinusoid, ConstantVelocity, FunctionMotion)):
        return motion
    if callable(motion):
        return FunctionMotion(motion)
    raise HookeInputError("motion", "must be a callable of time t", motion)
