"""A stored run's attributes (``trajectory.h5``, :mod:`hooke.io.store`) read back and checked as
a scene file's fields are: :func:`run_settings` parses them to Python values and
:func:`_frames_written` the frame count, and a value no writer can have written is one line
naming the attribute and its value (:class:`HookeInputError`), never a JSON or type error from
deep inside.
"""

from __future__ import annotations

import json
import math
from typing import Any

import h5py
import numpy as np

from ..errors import HookeInputError, HookeInputErrors, format_value, is_count, is_number
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
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise HookeInputErrors([str(problem) for problem in problems])
    return settings
