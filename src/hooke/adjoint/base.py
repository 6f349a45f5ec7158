"""The reverse-step contract of the discrete adjoint, and the registry of integrators that have one.

Contract: an adjoint step class is registered under its integrator's name (``@adjoint_of``) and
made with the forward run's ``System`` and integrator (for dt and options). ``reverse(start, end,
lam_x, lam_v, grads)`` takes the states before and after one forward step and the adjoints
(∂L/∂x, ∂L/∂v) of ``end`` — with the entries of pinned particles already taken out, since a step
overwrites them — and returns the adjoints of ``start`` (every particle: pinned ones included,
whose positions are the model's x0). It adds the step's contribution to the per-element parameter
gradients in ``grads`` (:data:`hooke.adjoint.params.ELEMENT_ARRAYS`' keys, plus ``"pins"``: the
adjoint of the positions ``end``'s pinned particles were put at, for steps whose result reads
them). Never modifies its inputs other than ``grads``.

Models the adjoint does not cover (joints, contact planes, surfaces, prescribed motions) are
refused by :func:`check_model` with one line naming what the model has.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..errors import HookeInputError
from ..model import State

_ADJOINTS: dict[str, type["AdjointStep"]] = {}


class AdjointStep:
    integrator: ClassVar[str]

    def __init__(self, system, stepper):
        self.system = system
        self.model = system.model
        self.h = stepper.dt
        self.options = stepper.options
        # (n, 1) 1 for free particles, 0 for pinned: what a step's output rows depend on.
        self.free = (~self.model.pinned).astype(float)[:, None]

    def reverse(self, start: State, end: State, lam_x: np.ndarray, lam_v: np.ndarray,
                grads: dict) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - abstract
        raise NotImplementedError


def adjoint_of(cls: type[AdjointStep]) -> type[AdjointStep]:
    _ADJOINTS[cls.integrator] = cls
    return cls


def get(name: str) -> type[AdjointStep]:
    """The adjoint step of integrator ``name``; a one-line error naming those that have one."""
    if name not in _ADJOINTS:
        raise HookeInputError("integrator", "has no adjoint for hooke.gradient (integrators with "
                              f"one: {', '.join(sorted(_ADJOINTS))})", name)
    return _ADJOINTS[name]


def names() -> list[str]:
    return sorted(_ADJOINTS)


# (the Model's count or flag, what it is called in the refusal)
UNSUPPORTED = (("n_joints", "joints"), ("n_planes", "contact planes"),
               ("n_surface_faces", "contact surfaces"), ("pinned_motions", "prescribed motions"))


def check_model(model) -> None:
    for attribute, what in UNSUPPORTED:
        count = getattr(model, attribute)
        if (len(count) if isinstance(count, tuple) else count):
            raise HookeInputError("scene", f"has {what}, which hooke.gradient does not "
                                  "differentiate yet (springs, damping, gravity and fixed pins "
                                  "only)", what)
