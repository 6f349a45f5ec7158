"""A stored run's attributes (``trajectory.h5``, :mod:`hooke.io.store`) read back and checked as
a scene file's fields are: :func:`run_settings` parses them to Python values and
:func:`_frames_written` the frame count, and a value no writer can have written is one line
naming the attribute and its value (:class:`HookeInputError`), never a JSON or type error from
deep inside. :func:`check_model` checks the stored model the same way (dim, shapes, finite
values, indices in range) against the frames read with it.
"""

from __future__ import annotations

import json
import math
from typing import Any

import h5py
import numpy as np

from ..errors import HookeInputError, format_value, is_count, is_number, raise_all
from ..scene_setup import MAX_STEPS


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _edited(path, name: str, value, expected: str) -> HookeInputError:
    return HookeInputError("path", f"attribute {name} = {format_value(_plain(value))} is not "
                           f"{expected} (the file was edited or damaged)", str(path))


def _frames_written(handle: h5py.File, path) -> int:
    """``frames_written``: a count from 1 (a run takes its file's name only with its first
    frame) to what every frame dataset holds."""
    lengths = []
    handle["frames"].visititems(lambda _, item: lengths.append(item.shape[0])
                                if isinstance(item, h5py.Dataset) else None)
    stored = min(lengths)
    value = _plain(handle.attrs.get("frames_written", stored))
    if not is_count(value) or not 1 <= value <= stored:
        raise _edited(path, "frames_written", value, f"a frame count from 1 to the {stored} "
                      "frames stored")
    return int(value)


def _json_object(value) -> dict | None:
    try:
        parsed = json.loads(value) if isinstance(value, str) else None
    except (ValueError, RecursionError):  # RecursionError: [[[[… nested past the limit
        return None
    return parsed if isinstance(parsed, dict) else None


def _positive(value) -> float | None:
    return float(value) if is_number(value) and math.isfinite(value) and value > 0 else None


def _known_integrator(value) -> str | None:
    from ..integrators import names

    return value if isinstance(value, str) and value in names() else None


SETTINGS = {  # attribute: (parse to the Python value or None when invalid, what it must be)
    "hooke_version": (lambda v: v if isinstance(v, str) else None, "a string"),
    "scene_name": (lambda v: v if isinstance(v, str) else None, "a string"),
    "scene_source": (lambda v: v if isinstance(v, str) else None, "a string"),
    "scene_folder": (lambda v: v if isinstance(v, str) else None, "a string"),
    "parameters": (_json_object, "a JSON object"),
    "integrator": (_known_integrator, "a known integrator"),
    "dt": (_positive, "a finite number > 0"),
    "t_end": (_positive, "a finite number > 0"),
    "save_every": (lambda v: int(v) if is_count(v) and 1 <= v <= MAX_STEPS else None,
                   f"an integer from 1 to {MAX_STEPS:.0e}"),
    "options": (_json_object, "a JSON object"),
    "complete": (lambda v: v if isinstance(v, bool) else None, "true or false"),
    "stats": (_json_object, "a JSON object"),
    "max_energy_growth": (lambda v: v if (_positive(v) or 0) > 1 else None, "a number > 1"),
    "failure": (lambda v: v if isinstance(v, str) else None, "a string"),
}


def run_settings(attrs, path) -> dict[str, Any]:
    """A stored run's attributes as Python values (``parameters``, ``options`` and ``stats``
    parsed from JSON), each checked as a scene file's field is: a value a writer cannot have
    written is one line naming the attribute and its value (all such lines at once), never a
    JSON or type error from deep inside. Optional attributes that are absent are left out."""
    settings, problems = {}, []
    for name, (parse, expected) in SETTINGS.items():
        if name not in attrs:
            continue
        value = _plain(attrs[name])
        settings[name] = parse(value)
        if settings[name] is None:
            problems.append(_edited(path, name, value, expected))
    raise_all(problems)
    return settings


def _model_shapes(model) -> dict[str, tuple]:
    """The shape each stored model array must have, from its counts (n particles, s springs, m
    joints, dim d)."""
    n, s, m, d = model.mass.shape[0], model.spring_indices.shape[0], model.joint_indices.shape[0], model.dim
    return {"mass": (n,), "pinned": (n,), "gravity": (d,), "x0": (n, d), "v0": (n, d),
            "spring_indices": (s, 2), "spring_rest_length": (s,), "spring_stiffness": (s,),
            "spring_damping": (s,), "joint_indices": (m, 2), "joint_length": (m,),
            "contact_area": (n,)}


def check_model(model, path, frames: dict[str, Any]) -> None:
    """A stored model as its writer left it: dim 1, 2 or 3, arrays of consistent shapes, finite,
    masses > 0, spring and joint indices in range; and its ``frames`` (t, x, v) float64 of the
    model's shape, t increasing — an edited file is one line naming the array."""
    def corrupted(name, what):
        return HookeInputError("path", f"is corrupted: model/{name} {what}", str(path))

    if not (isinstance(model.dim, int) and not isinstance(model.dim, bool) and 1 <= model.dim <= 3):
        raise corrupted("dim", f"= {format_value(model.dim)} is not 1, 2 or 3")
    if model.mass.ndim != 1 or model.spring_indices.ndim != 2 or model.joint_indices.ndim != 2:
        raise corrupted("mass", "or its spring and joint indices have the wrong number of axes")
    for name, shape in _model_shapes(model).items():
        array = getattr(model, name)
        if array.shape != shape:
            raise corrupted(name, f"has shape {array.shape}, not {shape}")
        if array.dtype.kind not in "biuf" or (array.dtype.kind == "f" and not np.all(np.isfinite(array))):
            raise corrupted(name, "holds values that are not finite numbers")
    if not np.all(model.mass > 0):
        raise corrupted("mass", "holds a mass <= 0")
    for name, size in (("drag", model.mass.shape[0]), ("wind", model.dim)):  # (0,): no air drag
        array = getattr(model, name)
        if array.shape not in ((0,), (size,)) or array.dtype.kind != "f" \
                or not np.all(np.isfinite(array)):
            raise corrupted(name, f"is not (0,) or ({size},) finite numbers")
    if np.any(model.drag < 0):
        raise corrupted("drag", "holds a drag coefficient < 0")
    for name in ("spring_indices", "joint_indices"):
        indices = getattr(model, name)
        if indices.size and not 0 <= indices.min() <= indices.max() < model.mass.shape[0]:
            raise corrupted(name, f"holds a particle index outside [0, {model.mass.shape[0]})")
    for key in ("x", "v"):
        if frames[key].shape[1:] != model.x0.shape:
            raise HookeInputError("path", f"is corrupted: frames/{key} holds frames of shape "
                                  f"{frames[key].shape[1:]}, its model's particles are "
                                  f"{model.x0.shape}", str(path))
    for key in ("t", "x", "v"):  # integers would be read as a state, rounded (and resumed from)
        if frames[key].dtype != np.float64:
            raise HookeInputError("path", f"is corrupted: frames/{key} holds {frames[key].dtype} "
                                  "values, not the float64 hooke writes", str(path))
    t = frames["t"]
    back = np.flatnonzero(np.diff(t) <= 0)
    if back.size:
        raise HookeInputError("path", f"is corrupted: frames/t goes from {t[back[0]]:g} s to "
                              f"{t[back[0] + 1]:g} s (hooke saves frames forward in time)", str(path))
