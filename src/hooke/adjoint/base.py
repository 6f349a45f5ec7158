"""The reverse-step contract of the discrete adjoint, and the registry of integrators that have one.

Contract: an adjoint step class is registered under its integrator's name (``@adjoint_of``) and
made with the forward run's ``System`` and integrator (for dt and options). ``reverse(start, end,
lam_x, lam_v, grads, carried)`` takes the states before and after one forward step (and the
integrator's checkpoints there, ``carried``: what else the step reads and gives, such as the
α-methods' accelerations, whose adjoints the step object keeps between calls) and the adjoints
(∂L/∂x, ∂L/∂v) of ``end`` — with the entries of pinned particles already taken out, since a step
overwrites them — and returns the adjoints of ``start`` (every particle: pinned ones included,
whose positions are the model's x0). It adds the step's contribution to the per-element parameter
gradients in ``grads`` (:data:`hooke.adjoint.params.ELEMENT_ARRAYS`' keys, plus ``"pins"``: the
adjoint of the positions ``end``'s pinned particles were put at, for steps whose result reads
them). Never modifies its inputs other than ``grads``. The sweep calls the steps last to first,
then ``finish(start, lam_x, lam_v, grads, carried)`` at step 0 for what the integrator derives
from the state its first step starts from (the α-methods' consistent acceleration), and
``begin(given, start, lam_x, lam_v, grads)`` for the integrator's ``consistent_start``, which
made that state from the one given (the α-methods' start put on the joints); by default nothing.

Models the adjoint does not cover are refused by :func:`check_model` with one line naming what the
model has: contact surfaces, prescribed motions, moving planes and friction everywhere (air drag
is covered, its wind steady or varying in time: a known function of t); fixed
frictionless contact planes and joints where the step class does not declare
``supports_planes`` or ``supports_joints``.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..errors import HookeInputError
from ..model import State

_ADJOINTS: dict[str, type["AdjointStep"]] = {}


class AdjointStep:
    integrator: ClassVar[str]
    supports_planes: ClassVar[bool] = False  # fixed, frictionless contact planes
    supports_joints: ClassVar[bool] = False

    def __init__(self, system, stepper):
        self.system = system
        self.model = system.model
        self.h = stepper.dt
        self.options = stepper.options
        # (n, 1) 1 for free particles, 0 for pinned: what a step's output rows depend on.
        self.free = (~self.model.pinned).astype(float)[:, None]

    def reverse(self, start: State, end: State, lam_x: np.ndarray, lam_v: np.ndarray,
                grads: dict, carried) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
        raise NotImplementedError

    def finish(self, start: State, lam_x: np.ndarray, lam_v: np.ndarray, grads: dict,
               carried) -> tuple[np.ndarray, np.ndarray]:
        return lam_x, lam_v

    def begin(self, given: State, start: State, lam_x: np.ndarray, lam_v: np.ndarray,
              grads: dict) -> tuple[np.ndarray, np.ndarray]:
        return lam_x, lam_v


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


# (whether the Model has it, what it is called in the refusal)
UNSUPPORTED = ((lambda model: model.n_surface_faces, "contact surfaces"),
               (lambda model: model.n_spheres, "spheres"),  # only the planes' barrier has an
               (lambda model: model.n_obstacles, "obstacle meshes"),  # adjoint
               (lambda model: model.pinned_motions, "prescribed motions"),
               (lambda model: model.plane_motions, "moving contact planes"),
               (lambda model: np.any(model.plane_friction > 0), "friction"))


def check_model(model, step: type[AdjointStep]) -> None:
    """Refuse what ``step``'s adjoint does not differentiate, in one line."""
    found = [what for has, what in UNSUPPORTED if has(model)]
    if model.n_planes and not step.supports_planes:
        found.append("contact planes")
    if model.n_joints and not step.supports_joints:
        found.append("joints")
    if found:
        def able(flag):
            return ", ".join(name for name, cls in sorted(_ADJOINTS.items()) if getattr(cls, flag))

        raise HookeInputError("scene", f"has {found[0]}, which hooke.gradient does not "
                              f"differentiate with '{step.integrator}' (it covers springs, "
                              f"damping, gravity, air drag in any wind, and fixed pins; "
                              f"frictionless fixed contact planes with "
                              f"{able('supports_planes')}; joints with "
                              f"{able('supports_joints')})", found[0])
