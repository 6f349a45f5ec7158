"""The unknowns of a fit: named model parameters as one vector z, in log space where positive.

Contract: ``params`` takes :func:`hooke.gradient`'s forms (:mod:`hooke.adjoint.params`): a name or
a list of names (one unknown per element) or a mapping name → ``"each"`` | ``"shared"`` (one
unknown for the whole array, every element scaled together; its value is the array's mean, which
for a uniform array — every spring's k — is the value itself) | a list of element indices (those
elements only, the others held: ``{"mass": [2]}``; particles for x0 and v0). Positive quantities (stiffness,
damping, rest_length, mass, joint_length, kappa, drag) are fitted as z = ln θ: they stay positive,
and a step in z is a relative change, which suits values that span decades; gravity, x0, v0 and
wind are fitted as they are. Per element, the masses, drag coefficients and initial velocities of
pinned particles are left out: no motion depends on them (a list of indices picking one is
refused).

``initial``: name → the value to start from (a number, or an array of the parameter's shape for
``"each"``); otherwise the scene's values. ``bounds``: name → (low, high) in the parameter's
units (None: unbounded on that side), for the shared value or for every element. A start of 0
for a log-space unknown, a start a scene file would refuse (x0, v0 or wind whose squared length
overflows), bounds that are not a pair with low < high (low > 0 in log space) or a start outside
them: one line naming the field and the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..adjoint import params as parameters
from ..checks import _numbers, _vector
from ..errors import HookeInputError, is_number

POSITIVE = ("stiffness", "damping", "rest_length", "mass", "joint_length", "kappa", "drag")
# Vectors the energies square: a scene file refuses one whose squared length overflows
# (hooke.checks._vector, as ModelBuilder.set_air for the wind), and so does a start, or its run
# would fail at its first step with "try a smaller dt". The others' scene-file checks (finite;
# > 0 or >= 0) are those above: finite, and > 0 in log space.
SQUARED = ("x0", "v0", "wind")


@dataclass(frozen=True)
class Unknown:
    name: str            # the parameter
    index: int | None    # the flat element of its array; None: the shared value
    label: str           # "stiffness", "mass[2]", "gravity[1]"
    log: bool            # fitted as ln θ


def _check_mapping(value, field: str, fitted: dict) -> dict:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise HookeInputError(field, "must be a mapping parameter name → value", value)
    for name in value:
        if name not in fitted:
            raise HookeInputError(field, f"names a parameter that is not fitted (fitted: "
                                  f"{', '.join(fitted)})", name)
    return dict(value)


def _start_array(scene, name: str, mode: str, value) -> np.ndarray:
    """The parameter's array with ``initial``'s value applied (the scene's without one)."""
    array = parameters.current(scene, name)
    if value is None:
        return array
    field = f"initial.{name}"
    given = _numbers(value)  # strict: "8", True and 10**400 are no start
    if given is None or not np.all(np.isfinite(given)):
        raise HookeInputError(field, "must be a finite number or array", value)
    if name in POSITIVE and np.any(given <= 0):
        raise HookeInputError(field, "must be > 0 (fitted in log space)", value)
    if mode == "shared":
        if given.ndim:
            raise HookeInputError(field, "must be one number (the shared value)", value)
        mean = float(np.mean(array)) if array.size else 0.0
        return array * (float(given) / mean) if mean > 0 else np.full(array.shape, float(given))
    try:
        start = np.broadcast_to(given, array.shape).astype(float)
    except ValueError:
        raise HookeInputError(field, f"must be a number or of shape {array.shape}",
                              given.shape) from None
    if name in SQUARED:
        for k, row in enumerate(start.reshape(-1, start.shape[-1])):
            _vector(row.tolist(), row.size, field if start.ndim == 1 else f"{field}[{k}]",
                    squared=True)
    return start


def _bounds_pair(value, name: str) -> tuple[float, float]:
    field = f"bounds.{name}"
    if (isinstance(value, (str, bytes)) or not hasattr(value, "__len__")
            or getattr(value, "ndim", 1) == 0 or len(value) != 2):  # a 0-d array has no len()
        raise HookeInputError(field, "must be a pair (low, high), None for no bound", value)
    no_low = 0.0 if name in POSITIVE else -np.inf  # fitted in log space: no bound is 0
    low, high = (no_low if value[0] is None else value[0], np.inf if value[1] is None else value[1])
    if not (is_number(low) and is_number(high)) or np.isnan(low) or np.isnan(high) or low >= high:
        raise HookeInputError(field, "must be numbers with low < high", value)
    if name in POSITIVE and low < 0:
        raise HookeInputError(field, "low must be >= 0 (the parameter is positive)", value)
    return float(low), float(high)


def _element_choices(params):
    """``params`` with each list of element indices (``{"mass": [2]}``) read as ``"each"``, and
    those lists by name."""
    if not isinstance(params, Mapping):
        return params, {}
    chosen = {name: mode for name, mode in params.items()
              if not isinstance(mode, str) and mode is not None}
    return {name: "each" if name in chosen else mode for name, mode in params.items()}, chosen


def _chosen_rows(indices, shape: tuple, name: str) -> np.ndarray:
    """The mask of the rows (elements; particles for x0 and v0) ``indices`` picks."""
    rows = shape[0] if shape else 0
    try:
        picked = np.asarray(indices)
        ok = picked.ndim == 1 and picked.size > 0 and picked.dtype.kind in "iu" and (
            np.all((picked >= 0) & (picked < rows)))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise HookeInputError(f"params.{name}", "must be 'each', 'shared' or a list of element "
                              f"indices from 0 to {rows - 1}", indices)
    values, counts = np.unique(picked, return_counts=True)
    if np.any(counts > 1):  # the second mention was dropped in silence: one unknown, not two
        raise HookeInputError(f"params.{name}", f"picks element {values[counts > 1][0]} more "
                              "than once", indices)
    keep = np.zeros(shape, dtype=bool)
    keep[picked] = True
    return keep


def _elements(name: str, array: np.ndarray, chosen, pinned: np.ndarray) -> list[tuple]:
    """(flat index, label, start value) of each element fitted per element: the ``chosen`` rows,
    or every element but pinned particles' masses, drag coefficients and initial velocities."""
    if chosen is not None:
        keep = _chosen_rows(chosen, array.shape, name)
        held = np.flatnonzero(pinned & np.any(keep.reshape(len(pinned), -1), axis=1)) if name in (
            "mass", "drag", "v0") else []
        if len(held):  # a fit of it moves nothing: σ = inf, or a state its pin refuses
            raise HookeInputError(f"params.{name}", f"picks pinned particle "
                                  f"{', '.join(map(str, held))}, whose {name} is not fitted (no "
                                  "motion depends on it)", chosen)
    elif name in ("mass", "drag"):
        keep = ~pinned
    elif name == "v0":
        keep = np.broadcast_to(~pinned[:, None], array.shape)
    else:
        keep = np.ones(array.shape, dtype=bool)

    def label(i: int) -> str:
        return f"{name}[{', '.join(map(str, np.unravel_index(i, array.shape)))}]" if array.ndim else name

    return [(int(i), label(int(i)), float(array.flat[i])) for i in np.flatnonzero(keep)]


class Unknowns:
    """The vector z of a fit and the scene at any z."""

    def __init__(self, scene, params, initial=None, bounds=None):
        params, chosen = _element_choices(params)
        self.parsed = parameters.parse(params, scene.model)
        initial = _check_mapping(initial, "initial", self.parsed)
        bounds = _check_mapping(bounds, "bounds", self.parsed)
        pinned = scene.model.pinned
        self.arrays: dict[str, np.ndarray] = {}  # the start's arrays
        self.shapes: dict[str, np.ndarray] = {}  # shared: array / its mean
        self.list: list[Unknown] = []
        start, low, high = [], [], []
        for name, mode in self.parsed.items():
            array = _start_array(scene, name, mode, initial.get(name))
            self.arrays[name] = array
            log = name in POSITIVE
            pair = _bounds_pair(bounds[name], name) if name in bounds else (-np.inf, np.inf)
            if mode == "shared":
                mean = float(np.mean(array))
                self.shapes[name] = array / mean if mean > 0 else np.ones(array.shape)
                elements = [(None, name, mean)]
            else:
                elements = _elements(name, array, chosen.get(name), pinned)
            for index, label, value in elements:
                if log and value <= 0:
                    raise HookeInputError(f"params.{name}", f"{label} starts at {value:g}, which log "
                                          f"space cannot leave: give a start > 0 (initial={{'{name}'"
                                          f": …}}, on the command line --initial {name}=…)", value)
                if not pair[0] <= value <= pair[1]:
                    raise HookeInputError(f"bounds.{name}", f"does not hold the start {label} = "
                                          f"{value:g}", list(pair))
                self.list.append(Unknown(name, index, label, log))
                start.append(np.log(value) if log else value)
                low.append(np.log(pair[0]) if log and pair[0] > 0 else (-np.inf if log else pair[0]))
                high.append(np.log(pair[1]) if log else pair[1])
        if not self.list:
            raise HookeInputError("params", "leaves nothing to fit (the masses, drag coefficients "
                                  "and initial velocities of pinned particles are not fitted)",
                                  params)
        self.scene = scene
        self.z0 = np.array(start)
        self.bounds = (np.array(low), np.array(high))

    @property
    def labels(self) -> list[str]:
        return [unknown.label for unknown in self.list]

    @property
    def log(self) -> np.ndarray:
        return np.array([unknown.log for unknown in self.list])

    def physical(self, z: np.ndarray) -> np.ndarray:
        """The unknowns' values in their units."""
        return np.where(self.log, np.exp(np.where(self.log, z, 0.0)), z)

    def values(self, z: np.ndarray) -> dict[str, np.ndarray]:
        """name → the parameter's array at z."""
        theta = self.physical(z)
        out = {name: array.copy() for name, array in self.arrays.items()}
        for unknown, value in zip(self.list, theta):
            if unknown.index is None:
                out[unknown.name] = value * self.shapes[unknown.name]
            else:
                out[unknown.name].flat[unknown.index] = value
        return out

    def scene_at(self, z: np.ndarray):
        return parameters.with_values(self.scene, self.values(z))

    def chain(self, z: np.ndarray, grads: dict) -> np.ndarray:
        """dL/dz from :func:`hooke.gradient`'s result at ``scene_at(z)`` for ``self.parsed``: a
        shared gradient is already dL/d(ln of the common factor); an element's is ∂L/∂θ, times θ
        in log space."""
        theta = self.physical(z)
        out = np.empty(z.size)
        for k, unknown in enumerate(self.list):
            grad = grads[unknown.name]
            if unknown.index is None:
                out[k] = float(grad)
            else:
                out[k] = np.ravel(grad)[unknown.index] * (theta[k] if unknown.log else 1.0)
        return out

    def report(self, vector: np.ndarray) -> dict[str, float | np.ndarray]:
        """Per-unknown numbers (values or uncertainties) → name → a float (shared, or one
        element) or the array of the fitted elements (NaN where not fitted)."""
        out: dict = {}
        for name, mode in self.parsed.items():
            picked = [(u.index, value) for u, value in zip(self.list, vector) if u.name == name]
            if mode == "shared" or self.arrays[name].ndim == 0:
                out[name] = float(picked[0][1])
            else:
                array = np.full(self.arrays[name].shape, np.nan)
                for index, value in picked:
                    array.flat[index] = value
                out[name] = array
        return out
