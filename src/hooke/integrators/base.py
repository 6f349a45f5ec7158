"""The step contract every integrator follows, and the registry that lists them.

Contract:
- An integrator is a class with ``name`` (its one-word handle), ``order`` (its global order of
  accuracy with fixed steps on smooth problems; the convergence tests assert it), ``defaults``
  (its options and their default values) and ``step(state) -> State`` which returns the state at
  ``state.t + dt``; it never modifies its input and never moves a pinned particle.
- ``advance(state, t_target, n_steps)`` reaches ``t_target``: fixed-step integrators take
  ``n_steps`` steps of ``dt``; adaptive ones choose their own steps and land exactly on ``t_target``.
- ``stats`` counts what a run did (``steps``, and ``rejected`` or ``newton_iterations`` where they
  apply); ``checkpoint()``/``restore()`` carry what a resumed run needs besides the state.
- ``@register`` enrolls a class in the registry; every generic test is parametrised over it.
- Joints: an integrator declares ``supports_joints``; one that does not refuses a model with
  joints. Integrators of the unconstrained ODE (explicit, Runge–Kutta) inherit
  :class:`ConstraintForces`: the joints act through ``System.acceleration`` with the stabilisation
  chosen by their options (``stabilization``, ``k_c``, ``beta_c``, ``baumgarte_alpha``,
  ``baumgarte_beta``; see :mod:`hooke.constraints`). These options are accepted and validated
  for models without joints too, where they do nothing, so one set of options can drive a study
  over several scenes.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import numpy as np

from ..constraints import JointForces, Stabilization
from ..errors import HookeInputError, HookeInputErrors
from ..model import State

_REGISTRY: dict[str, type["Integrator"]] = {}


class Integrator:
    name: ClassVar[str]
    order: ClassVar[int]
    summary: ClassVar[str] = ""
    adaptive: ClassVar[bool] = False
    defaults: ClassVar[dict[str, Any]] = {}
    supports_joints: ClassVar[bool] = False

    def __init__(self, system, dt: float, **options: Any):
        if system.model.n_joints and not self.supports_joints:
            able = ", ".join(name for name, cls in _REGISTRY.items() if cls.supports_joints)
            raise HookeInputError("integrator", f"'{self.name}' does not handle joints "
                                  f"(integrators that do: {able})", self.name)
        known = ", ".join(sorted(self.defaults)) or "none"
        problems = [HookeInputError(key, f"is not an option of integrator '{self.name}' (its "
                                    f"options: {known})", options.pop(key))
                    for key in sorted(set(options) - set(self.defaults))]
        self.system = system
        self.dt = float(dt)
        self.options = {**self.defaults, **options}
        try:  # the known options' values, reported together with the unknown options
            self.check_options()
        except HookeInputError as error:
            problems.append(error)
        if len(problems) == 1:
            raise problems[0]
        if problems:
            raise HookeInputErrors([str(problem) for problem in problems])
        self.stats: dict[str, int] = {"steps": 0}

    def check_options(self) -> None:
        """Validate ``self.options``; raise HookeInputError naming the option."""

    def positive_option(self, key: str, allow_inf: bool = False) -> float:
        value = self.options[key]
        if (isinstance(value, bool) or not isinstance(value, (int, float)) or np.isnan(value)
                or (np.isinf(value) and not allow_inf) or value <= 0):
            raise HookeInputError(key, f"must be a number > 0 for integrator '{self.name}'", value)
        return float(value)

    def checkpoint(self) -> dict[str, Any]:
        """What a resumed run needs besides the state to continue exactly (HDF5-attribute values)."""
        return {"stats": json.dumps(self.stats)}

    def restore(self, checkpoint: dict[str, Any]) -> None:
        if "stats" in checkpoint:
            self.stats.update(json.loads(checkpoint["stats"]))

    def step(self, state: State) -> State:  # pragma: no cover - abstract
        raise NotImplementedError

    def advance(self, state: State, t_target: float, n_steps: int) -> State:
        for _ in range(n_steps):
            state = self.step(state)
        return State(float(t_target), state.x, state.v)

    def new_state(self, t: float, x: np.ndarray, v: np.ndarray) -> State:
        """The state at t with pinned particles placed exactly (no round-off from stage sums)."""
        self.system.apply_pins(x, v, t)
        if self.system.joint_forces is not None:
            x, v = self.system.joint_forces.finish_step(x, v, t)
        return State(t, x, v)


class ConstraintForces:
    """Mixin for integrators of the unconstrained ODE: joints act as constraint forces.

    A class using it adds ``STABILIZATION_DEFAULTS`` to its ``defaults`` and calls
    :meth:`configure_joints` from ``check_options``.
    """

    supports_joints: ClassVar[bool] = True

    def configure_joints(self) -> None:
        stabilization = Stabilization.from_options(self.options, self.name)
        if self.system.joints is not None:
            self.system.joint_forces = JointForces(self.system.joints, stabilization)


def register(cls: type[Integrator]) -> type[Integrator]:
    if cls.name in _REGISTRY:
        raise ValueError(f"integrator {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def get(name: str) -> type[Integrator]:
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise HookeInputError("integrator", f"unknown integrator (known: {', '.join(_REGISTRY)})",
                              name) from None


def names() -> list[str]:
    return list(_REGISTRY)
