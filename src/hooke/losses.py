"""Losses of a run's saved frames, with their exact gradients, for :func:`hooke.gradient`.

Contract of a loss (subclass :class:`Loss`): ``loss(result) -> float`` reads ``result.t``
(frames,), ``result.x`` and ``result.v`` (frames, n, d) and ``result.scene.model`` — a
:class:`hooke.Result` or the frames :func:`hooke.gradient` passes —; ``loss.gradient(result)``
returns (∂L/∂x, ∂L/∂v), each of the frames' shape; ``loss.param_gradient(result)`` returns the
partial derivatives of L with respect to the model's arrays that L reads directly (a dict keyed
by :data:`hooke.adjoint.params.ELEMENT_ARRAYS`' names; empty unless the loss reads the model).
A loss sees the saved frames only: frames every ``save_every`` steps, and the last step.

- :func:`tracking` ½ Σ_frames Σ_i w_i |x_i − x̂_i|² against observed positions x̂ (NaN where a
  particle is not observed), at every frame or at given times (each a saved frame's time);
- :func:`final_position` ½ Σ_i w_i |x_i(t_end) − target_i|²;
- :func:`energy_at` the kinetic, potential (springs, gravity, fixed contact planes' barrier) or
  total energy at a saved time, or ½ (E − target)².
"""

from __future__ import annotations

import numpy as np

from .energies import barrier, gravity, spring
from .checks import _numbers
from .errors import HookeInputError, is_number

# How close (relative to the frame interval) a requested time must be to a saved frame's.
TIME_TOLERANCE = 1e-6


class Loss:
    """The loss contract (see the module docstring); a subclass defines ``__call__`` and
    ``gradient``, and ``param_gradient`` when it reads the model."""

    def __call__(self, result) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def gradient(self, result) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - abstract
        """(∂L/∂x, ∂L/∂v) at the saved frames, each of the frames' shape."""
        raise NotImplementedError

    def param_gradient(self, result) -> dict[str, np.ndarray]:
        """Its derivatives by model parameters it reads directly, by name (none by default)."""
        return {}


def _reals(value, field: str, what: str) -> np.ndarray:
    """``value`` as a float array if it holds ints or floats only: a bool or a string is not a
    number (``energy_at(True)`` was the energy at t = 1 s, ``weights="2"`` a weight of 2)."""
    try:
        array = np.asarray(value)
    except ValueError:  # ragged
        raise HookeInputError(field, what, value) from None
    if array.dtype.kind not in "iuf":
        raise HookeInputError(field, what, value)
    return array.astype(float)


def _times(times, field: str = "times") -> np.ndarray:
    """``times`` as a 1-D array of finite times [s]."""
    array = np.atleast_1d(_reals(times, field, "must be finite times [s], a 1-D list"))
    if array.ndim != 1 or not np.all(np.isfinite(array)):
        raise HookeInputError(field, "must be finite times [s], a 1-D list", array)
    return array


def frame_index(times, frame_times: np.ndarray, field: str = "times") -> np.ndarray:
    """The saved frame of each of ``times``; one line naming a time off the frames or the run."""
    times = _times(times, field)
    spacing = float(np.min(np.diff(frame_times))) if frame_times.size > 1 else 1.0
    index = np.clip(np.searchsorted(frame_times, times), 0, frame_times.size - 1)
    before = np.clip(index - 1, 0, None)
    index = np.where(np.abs(frame_times[before] - times) < np.abs(frame_times[index] - times),
                     before, index)
    off = np.abs(frame_times[index] - times) > TIME_TOLERANCE * spacing
    if np.any(off):
        bad = float(times[np.argmax(off)])
        where = ("outside the run" if not frame_times[0] <= bad <= frame_times[-1]
                 else "not a saved frame's time")
        raise HookeInputError(field, f"{bad!r} is {where} (frames from {frame_times[0]:g} to "
                              f"{frame_times[-1]:g} s every {spacing:g} s)", bad)
    return index


def _weight_values(weights, field: str = "weights") -> np.ndarray:
    """``weights`` as an array of finite numbers >= 0 (of any shape, checked against the run's
    by :func:`_weights`)."""
    array = _reals(weights, field, "must be finite numbers >= 0")
    if not np.all(np.isfinite(array)) or np.any(array < 0):
        raise HookeInputError(field, "must be finite and >= 0", array)
    return array


def _weights(weights, shape: tuple[int, int], field: str = "weights") -> np.ndarray:
    """Weights broadcast to (frames, n): a number, one per particle or one per frame and particle."""
    if weights is None:
        return np.ones(shape)
    array = _weight_values(weights, field)
    try:
        return np.broadcast_to(array, shape)
    except ValueError:
        raise HookeInputError(field, f"must be a number or of shape ({shape[1]},) or {shape}",
                              array.shape) from None


class _PositionMisfit(Loss):
    """½ Σ w |x − x̂|² over chosen frames; NaN entries of x̂ are not observed (weight 0). The
    arguments' types and values are checked here, their shapes against the run's frames when
    the loss is evaluated."""

    def __init__(self, observed, weights, times, field: str):
        numbers = _numbers(observed)
        if numbers is None or np.any(np.isinf(numbers)):  # inf would count as "not observed"
            given = ("inf" if numbers is not None else observed if not isinstance(
                observed, np.ndarray) else f"an array of {observed.dtype} of shape {observed.shape}")
            raise HookeInputError(field, "must be positions: finite numbers, NaN where not "
                                  "observed", given)
        if numbers.ndim and not np.any(np.all(np.isfinite(numbers), axis=-1)):  # L = 0 always
            raise HookeInputError(field, "observes no particle (every row is NaN)", numbers.shape)
        self.observed = numbers
        self.weights = None if weights is None else _weight_values(weights)
        self.times = None if times is None else _times(times)
        self.field = field

    def _frames(self, result) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover - each misfit picks its frames

    def _residual(self, result):
        frames = self._frames(result)
        x = np.asarray(result.x, dtype=float)
        shape = (frames.size,) + x.shape[1:]
        if self.observed.shape != shape:
            raise HookeInputError(self.field, f"must have shape {shape} (frames, particles, dim) "
                                  "for this run", self.observed.shape)
        seen = np.all(np.isfinite(self.observed), axis=-1)
        weights = _weights(self.weights, shape[:2]) * seen
        if not np.any(weights > 0):  # the loss and its gradient were 0 whatever the run
            raise HookeInputError("weights", "are 0 at every observed particle: the loss "
                                  "observes nothing", self.weights)
        residual = np.where(seen[..., None], x[frames] - np.nan_to_num(self.observed), 0.0)
        return frames, weights, residual

    def __call__(self, result) -> float:
        _, weights, residual = self._residual(result)
        with np.errstate(over="ignore", invalid="ignore"):  # inf: refused below, no NumPy warning
            value = 0.5 * float(np.sum(weights[..., None] * residual ** 2))
        if not np.isfinite(value):
            bound = float(np.sqrt(np.finfo(float).max / max(residual.size, 1)))
            raise HookeInputError(self.field, "is so far from the run that the loss ½Σ w·|x − "
                                  f"observed|² overflows to inf (observed positions within about "
                                  f"{bound:.0e} m of the run's can be compared)",
                                  float(np.max(np.abs(np.nan_to_num(self.observed)))))
        return value

    def gradient(self, result):
        frames, weights, residual = self._residual(result)
        gx = np.zeros(np.shape(result.x))
        np.add.at(gx, frames, weights[..., None] * residual)
        return gx, np.zeros(np.shape(result.v))


class _Tracking(_PositionMisfit):
    def _frames(self, result):
        if self.times is None:
            return np.arange(np.shape(result.x)[0])
        return frame_index(self.times, np.asarray(result.t, dtype=float))


class _FinalPosition(_PositionMisfit):
    def _frames(self, result):
        return np.array([np.shape(result.x)[0] - 1])


def tracking(observed_x, weights=None, times=None) -> Loss:
    """½ Σ_frames Σ_i w_i |x_i − x̂_i|²: ``observed_x`` (frames, n, d) at every saved frame, or at
    ``times`` (one row per time, each a saved frame's time); NaN rows are particles not observed.
    ``weights``: a number, (n,) or (frames, n)."""
    return _Tracking(observed_x, weights, times, "observed_x")


def final_position(target, weights=None) -> Loss:
    """½ Σ_i w_i |x_i(t_end) − target_i|², ``target`` (n, d) (NaN rows: not counted)."""
    observed = _numbers(target)  # None (not numbers): the misfit refuses ``target`` itself
    if observed is not None and observed.ndim == 2:
        observed = observed[None]
    return _FinalPosition(target if observed is None else observed, weights, None, "target")


ENERGY_KINDS = ("kinetic", "potential", "total")


class _EnergyAt(Loss):
    """The energy at one saved time, or ½ (E − target)². Potential: springs, gravity and the
    barrier of fixed contact planes (the terms :func:`hooke.gradient` differentiates)."""

    POTENTIALS = (spring, gravity, barrier)

    def __init__(self, time: float, kind: str, target):
        if not isinstance(kind, str) or kind not in ENERGY_KINDS:  # an array: no NumPy error
            raise HookeInputError("kind", f"must be one of {', '.join(ENERGY_KINDS)}", kind)
        if target is not None and not (is_number(target) and np.isfinite(target)):
            raise HookeInputError("target", "must be a finite energy [J] or None", target)
        if not is_number(time) or not np.isfinite(time):  # checked against the frames later
            raise HookeInputError("time", "must be a finite time [s]", time)
        self.time, self.kind, self.target = time, kind, target

    def _at(self, result):
        frame = int(frame_index(self.time, np.asarray(result.t, dtype=float), "time")[0])
        model = result.scene.model
        x, v = np.asarray(result.x[frame], float), np.asarray(result.v[frame], float)
        energy = 0.0
        if self.kind != "potential":
            energy += 0.5 * float(np.sum(model.mass[:, None] * v * v))
        if self.kind != "kinetic":
            energy += sum(term.value(model, x) for term in self.POTENTIALS if term.active(model))
        # dL/dE: 1 for the energy itself, E − target for the squared misfit
        slope = 1.0 if self.target is None else energy - self.target
        return frame, model, x, v, energy, slope

    def __call__(self, result) -> float:
        energy = self._at(result)[4]
        if self.target is None:
            return energy
        misfit = energy - float(self.target)
        value = 0.5 * misfit * misfit  # inf, not Python's OverflowError of ** (issue 15)
        if not np.isfinite(value):
            raise HookeInputError("target", f"is so far from the run's energy ({energy:.4g} J at "
                                  f"t = {self.time} s) that the loss ½(E − target)² overflows to "
                                  "inf (targets within about 1e+154 J of it can be compared)",
                                  self.target)
        return value

    def gradient(self, result):
        frame, model, x, v, _, slope = self._at(result)
        gx, gv = np.zeros(np.shape(result.x)), np.zeros(np.shape(result.v))
        if self.kind != "potential":
            gv[frame] = slope * model.mass[:, None] * v
        if self.kind != "kinetic":
            gx[frame] = slope * sum(term.gradient(model, x) for term in self.POTENTIALS
                                    if term.active(model))
        return gx, gv

    def param_gradient(self, result):
        from .adjoint.spring_terms import SpringGeometry

        _, model, x, v, _, slope = self._at(result)
        out = {"mass": np.zeros(model.n_particles), "gravity": np.zeros(model.dim)}
        if self.kind != "potential":
            out["mass"] += slope * 0.5 * np.sum(v * v, axis=1)
        if self.kind != "kinetic":
            by_k, by_l0 = SpringGeometry(model, x).energy_partials()
            out["stiffness"], out["rest_length"] = slope * by_k, slope * by_l0
            out["mass"] -= slope * (x @ model.gravity)
            out["gravity"] -= slope * (model.mass @ x)
            if barrier.active(model):  # B is linear in κ
                out["kappa"] = slope * barrier.value(model, x) / model.contact_kappa
        return out


def energy_at(time: float, kind: str = "total", target: float | None = None) -> Loss:
    """The ``kind`` energy (kinetic, potential: springs + gravity, or total) [J] at the saved
    frame at ``time``; with ``target``, ½ (E − target)²."""
    return _EnergyAt(time, kind, target)
