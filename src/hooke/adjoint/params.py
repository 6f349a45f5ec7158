"""The parameters ``hooke.gradient`` differentiates with respect to, and scenes with new values.

Contract: ``params`` is a name, a sequence of names, or a mapping name → ``"each"`` (a gradient
per element, the default for a sequence) or ``"shared"`` (one factor α scaling every element of
the array, θ = α·θ_scene, differentiated at α = 1: dL/dα = Σ θ_e ∂L/∂θ_e). Names and the arrays
they stand for:

    stiffness    (s,)   model.spring_stiffness          "each" or "shared"
    damping      (s,)   model.spring_damping            "each" or "shared"
    rest_length  (s,)   model.spring_rest_length        "each" or "shared"
    mass         (n,)   model.mass                      "each" or "shared"
    gravity      (d,)   model.gravity                   "each"
    x0           (n, d) the initial positions (scene.state.x and model.x0, where pins stay)
    v0           (n, d) the initial velocities (scene.state.v and model.v0)
    kappa        ()     model.contact_kappa, the barrier stiffness (a float gradient)
    joint_length (m,)   model.joint_length              "each" or "shared"
    drag         (n,)   model.drag, air drag c_i        "each" or "shared"
    wind         (d,)   model.wind, the steady wind     "each"

``drag`` and ``wind`` need air on the model (``ModelBuilder.set_air``, a scene's ``[air]``; a
drag of 0 is air whose derivative is still defined); the wind's time-varying part (its
``motion``) is no parameter. A name the scene lacks (no springs for ``stiffness``, no air for
``drag``), an unknown name or mode: one line naming the parameter and its value.
:func:`with_values` gives the scene with parameters set (the finite difference checks use it; a
fit will).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from ..errors import HookeInputError
from ..model import State

# name → the Model attribute holding it (x0, v0: the initial state as well)
ELEMENT_ARRAYS = {"stiffness": "spring_stiffness", "damping": "spring_damping",
                  "rest_length": "spring_rest_length", "mass": "mass", "gravity": "gravity",
                  "x0": "x0", "v0": "v0", "kappa": "contact_kappa", "joint_length": "joint_length",
                  "drag": "drag", "wind": "wind"}
SHAREABLE = ("stiffness", "damping", "rest_length", "mass", "joint_length", "drag")
MODES = ("each", "shared")


def parse(params, model) -> dict[str, str]:
    """``params`` as an ordered mapping name → mode, checked against ``model``."""
    if isinstance(params, str):
        params = [params]
    if isinstance(params, Mapping):
        items = list(params.items())
    else:
        try:
            items = [(name, "each") for name in params]
        except TypeError:
            raise HookeInputError("params", "must be a name, a list of names or a mapping name → "
                                  "'each' | 'shared'", params) from None
    if not items:
        raise HookeInputError("params", "names no parameter (known: "
                              f"{', '.join(ELEMENT_ARRAYS)})", params)
    parsed = {}
    for name, mode in items:
        if not isinstance(name, str) or name not in ELEMENT_ARRAYS:  # [1]: unhashable
            raise HookeInputError("params", f"unknown parameter (known: {', '.join(ELEMENT_ARRAYS)})",
                                  name)
        if name in parsed:  # a list's second mention was dropped in silence
            raise HookeInputError("params", "names a parameter more than once", name)
        if not isinstance(mode, str) or mode not in MODES or (  # an array: no raw NumPy error
                mode == "shared" and name not in SHAREABLE):
            allowed = "'each' or 'shared'" if name in SHAREABLE else "'each'"
            raise HookeInputError(f"params.{name}", f"must be {allowed}", mode)
        if name in ("stiffness", "damping", "rest_length") and model.n_springs == 0:
            raise HookeInputError("params", "the scene has no springs to take it from", name)
        if name == "kappa" and model.n_planes == 0:
            raise HookeInputError("params", "the scene has no contact planes to take it from", name)
        if name == "joint_length" and model.n_joints == 0:
            raise HookeInputError("params", "the scene has no joints to take it from", name)
        if name in ("drag", "wind") and not getattr(model, name).size:
            raise HookeInputError("params", "the scene has no air (drag and wind) to take it "
                                  "from", name)
        parsed[name] = mode
    return parsed


def current(scene, name: str) -> np.ndarray:
    """The scene's array for parameter ``name`` (a copy)."""
    if name == "x0":
        return np.array(scene.state.x, dtype=float)
    if name == "v0":
        return np.array(scene.state.v, dtype=float)
    return np.array(getattr(scene.model, ELEMENT_ARRAYS[name]), dtype=float)


def reduce(scene, parsed: dict[str, str], element_grads: dict[str, np.ndarray]) -> dict:
    """Per-element gradients → the requested ones (a float for a shared factor)."""
    out = {}
    for name, mode in parsed.items():
        grad = element_grads[name]
        if mode == "shared":
            out[name] = float(np.sum(current(scene, name) * grad))
        else:
            out[name] = float(grad) if np.ndim(grad) == 0 else grad
    return out


def with_values(scene, values: dict):
    """A copy of ``scene`` with parameters set: name → array (each) or factor (shared, a float
    scaling the scene's array)."""
    model, state = scene.model, scene.state
    changes = {}
    x, v = state.x, state.v
    for name, value in values.items():
        base = current(scene, name)
        array = base * float(value) if np.ndim(value) == 0 and base.ndim else np.asarray(
            value, dtype=float)
        if array.shape != base.shape:
            raise HookeInputError(f"values.{name}", f"must have shape {base.shape}", array.shape)
        if name == "x0":
            x = array
            changes["x0"] = array.copy()
        elif name == "v0":
            v = array
            changes["v0"] = array.copy()
        else:
            changes[ELEMENT_ARRAYS[name]] = float(array) if array.ndim == 0 else array
    new_model = dataclasses.replace(model, **changes)
    return dataclasses.replace(scene, model=new_model, state=State(state.t, x.copy(), v.copy()))
