"""Scene builders: the Python half of built-in scenes whose structure needs code.

Contract: a builder is a function with keyword-only, annotated parameters and no defaults (the
values live in the scene's TOML file, one source of truth), registered with ``@builder``. It
returns ``(model, analytic)`` where ``analytic`` is None or a function t (frames,) → x (frames, n, d).
Parameters are validated from the annotations by pydantic before the call.
"""

from __future__ import annotations

import inspect
from importlib import resources
from typing import Annotated, Any, Callable

import numpy as np
from pydantic import ConfigDict, Field, ValidationError, create_model

from ..builder import ModelBuilder
from ..errors import HookeInputError

Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Finite = Annotated[float, Field(allow_inf_nan=False)]
Count = Annotated[int, Field(ge=1)]

_BUILDERS: dict[str, Callable] = {}
_SCHEMAS: dict[str, Any] = {}


def builder(function: Callable) -> Callable:
    signature = inspect.signature(function)
    fields = {name: (p.annotation, ...) for name, p in signature.parameters.items()}
    _SCHEMAS[function.__name__] = create_model(
        f"{function.__name__}_parameters", __config__=ConfigDict(extra="forbid"), **fields)
    _BUILDERS[function.__name__] = function
    return function


def parameter_names(name: str) -> list[str]:
    return list(_SCHEMAS[name].model_fields)


def run_builder(name: str, parameters: dict[str, Any]):
    from ..io.scene_file import validation_errors

    if name not in _BUILDERS:
        raise HookeInputError("builder", f"unknown scene builder (known: {', '.join(_BUILDERS)})", name)
    try:
        checked = _SCHEMAS[name].model_validate(parameters)
    except ValidationError as error:
        raise validation_errors(error, prefix="parameters") from None
    return _BUILDERS[name](**checked.model_dump())


def _harmonic(x0: float, v0: float, omega: float):
    def analytic(t):
        t = np.asarray(t, dtype=float)
        x = np.zeros((t.size, 2, 1))
        x[:, 1, 0] = x0 * np.cos(omega * t) + v0 / omega * np.sin(omega * t)
        return x
    return analytic


@builder
def harmonic(*, x0: Finite, v0: Finite, stiffness: Positive, mass: Positive):
    """Seed 000's 1D system: a particle on a zero-rest-length spring to a fixed particle at 0,
    f = −k x; analytic x(t) = x0 cos(ωt) + (v0/ω) sin(ωt), ω = √(k/m)."""
    b = ModelBuilder(dim=1)
    anchor = b.add_particle([0.0], mass=1.0, pinned=True, name="anchor")
    bob = b.add_particle([x0], mass=mass, velocity=[v0], name="mass")
    b.add_spring(anchor, bob, stiffness=stiffness, rest_length=0.0)
    return b.finalize(), _harmonic(x0, v0, float(np.sqrt(stiffness / mass)))


@builder
def cloth2d(*, nx: Count, ny: Count, spacing: Positive, mass: Positive, stiffness: NonNegative,
            damping: NonNegative, gravity: Finite):
    """A vertical nx × ny sheet in the xy plane (structural and both diagonal springs) hanging
    from its two top corners."""
    b = ModelBuilder(dim=2, gravity=(0.0, gravity))
    ids = b.grid(nx, ny, spacing=spacing, origin=(-(nx - 1) * spacing / 2, -(ny - 1) * spacing),
                 mass=mass, stiffness=stiffness, damping=damping)
    b.pin(int(ids[0, -1]))
    b.pin(int(ids[-1, -1]))
    return b.finalize(), None


@builder
def chain(*, n: Count, length: Positive, mass: Positive, stiffness: NonNegative,
          damping: NonNegative, gravity: Finite):
    """A chain of n particles (each of ``mass``) on springs from a pinned support at the origin,
    released from the horizontal, in the xy plane."""
    b = ModelBuilder(dim=2, gravity=(0.0, gravity))
    previous = b.add_particle((0.0, 0.0), mass=mass, pinned=True, name="support")
    segment = length / n
    for k in range(1, n + 1):
        current = b.add_particle((k * segment, 0.0), mass=mass)
        b.add_spring(previous, current, stiffness=stiffness, damping=damping)
        previous = current
    return b.finalize(), None


@builder
def tet_mesh(*, mesh: str, mass: Positive, stiffness: NonNegative, damping: NonNegative,
             gravity: list[Finite], fix_tolerance: NonNegative, scale: Positive):
    """Seed 001's soft body: the tetrahedral mesh ``mesh`` (a file shipped in hooke/scenes/meshes
    or a path meshio reads), tet edges as springs, vertices within ``fix_tolerance`` of the lowest
    y fixed."""
    b = ModelBuilder(dim=3, gravity=gravity)
    packaged = resources.files("hooke.scenes") / "meshes" / mesh
    path = str(packaged) if packaged.is_file() else mesh
    import meshio

    try:
        data = meshio.read(path)
    except Exception as error:  # meshio raises many types for unreadable files
        raise HookeInputError("parameters.mesh", f"cannot be read ({error})", mesh) from None
    data.points = np.asarray(data.points, dtype=float) * scale
    ids = b.from_mesh(data, mass=mass, stiffness=stiffness, damping=damping)
    y = np.asarray(data.points)[:, 1]
    for i in ids[np.abs(y - y.min()) <= fix_tolerance]:
        b.pin(int(i))
    return b.finalize(), None
