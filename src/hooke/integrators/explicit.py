"""Explicit one-step methods on the first-order system s = (x, v), ṡ = (v, a(x, v)).

``explicit_euler``, ``rk2`` (seed 000's midpoint rule) and ``rk4`` are Runge–Kutta tableaus run by
one routine; ``symplectic_euler`` updates v first and moves x with the new velocity (seed 000),
in one fused compiled pass when the model's terms allow it (:attr:`hooke.System.gather`).
On models with joints all of them integrate M a = F − Gᵀ T with the exact tensions and the
stabilisation chosen by their options (see :mod:`hooke.constraints`).
"""

from __future__ import annotations

import numpy as np

from ..constraints import STABILIZATION_DEFAULTS
from ..model import State
from .base import ConstraintForces, Integrator, register
from .tableau import EULER, MIDPOINT, RK4, ButcherTableau, weighted_sum


def runge_kutta_stages(system, t: float, x: np.ndarray, v: np.ndarray, h: float,
                       tableau: ButcherTableau, first_stage=None, count: int | None = None):
    """Stage derivatives (k_x, k_v), each (stages, n, d), of one explicit RK step of size h;
    only the first ``count`` stages are computed when it is given (the rest left unset)."""
    stages = tableau.stages
    kx = np.empty((stages,) + x.shape)
    kv = np.empty((stages,) + v.shape)
    for s in range(stages if count is None else count):
        if s == 0 and first_stage is not None:
            kx[0], kv[0] = first_stage
            continue
        xs, vs = x, v
        if s > 0:
            weights = tableau.a[s, :s]
            xs = x + h * weighted_sum(weights, kx)
            vs = v + h * weighted_sum(weights, kv)
        kx[s] = vs
        kv[s] = system.acceleration(xs, vs, t + tableau.c[s] * h)
    return kx, kv


class ExplicitRungeKutta(ConstraintForces, Integrator):
    tableau: ButcherTableau
    defaults = dict(STABILIZATION_DEFAULTS)

    def check_options(self) -> None:
        self.configure_joints()

    def step(self, state: State) -> State:
        h = self.dt
        kx, kv = runge_kutta_stages(self.system, state.t, state.x, state.v, h, self.tableau)
        x = state.x + h * weighted_sum(self.tableau.b, kx)
        v = state.v + h * weighted_sum(self.tableau.b, kv)
        self.stats["steps"] += 1
        return self.new_state(state.t + h, x, v)


@register
class ExplicitEuler(ExplicitRungeKutta):
    name = "explicit_euler"
    order = 1
    summary = "forward Euler: x⁺ = x + h v, v⁺ = v + h a(x, v); gains energy by (1 + ω²h²) per step"
    tableau = EULER


@register
class RungeKutta2(ExplicitRungeKutta):
    name = "rk2"
    order = 2
    summary = "midpoint rule (seed 000's Runge-Kutta 2): force evaluated at x + ½ h v"
    tableau = MIDPOINT


@register
class RungeKutta4(ExplicitRungeKutta):
    name = "rk4"
    order = 4
    summary = "classical fourth-order Runge-Kutta"
    tableau = RK4


@register
class SymplecticEuler(ConstraintForces, Integrator):
    name = "symplectic_euler"
    order = 1
    summary = "semi-implicit Euler: v⁺ = v + h a(x, v), x⁺ = x + h v⁺; energy stays bounded"
    defaults = dict(STABILIZATION_DEFAULTS)

    def check_options(self) -> None:
        self.configure_joints()

    def step(self, state: State) -> State:
        h = self.dt
        gather = self.system.gather if self.system.joint_forces is None else None
        if gather is not None:  # the whole update in one fused pass (hooke.kernels)
            x, v = gather.symplectic_euler(np.ascontiguousarray(state.x, dtype=float),
                                           np.ascontiguousarray(state.v, dtype=float), h)
        else:
            v = state.v + h * self.system.acceleration(state.x, state.v, state.t)
            x = state.x + h * v
        self.stats["steps"] += 1
        return self.new_state(state.t + h, x, v)
