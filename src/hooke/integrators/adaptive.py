"""``rk45``: Dormand–Prince 5(4) with error control (the method of seed 003's ``solve_ivp``).

Steps are accepted when the scaled RMS error ‖e / (atol + rtol·max(|s|, |s⁺|))‖ ≤ 1, over the
free DOFs of (x, v). The step-size controller is a separate object. With ``adaptive=False`` it takes
fixed steps of ``dt`` (then it is a plain fifth-order method); otherwise ``dt`` is only the first
trial step and the output interval, and ``advance`` lands exactly on each output time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import HookeInputError
from ..model import State
from ..constraints import STABILIZATION_DEFAULTS
from .base import STEP_ERRORS, ConstraintForces, Integrator, StepFailed, is_finite, register
from .explicit import runge_kutta_stages
from .tableau import DORMAND_PRINCE


@dataclass
class StepSizeController:
    """Elementary controller h⁺ = h · clip(safety · err^(−1/(q+1)), min_factor, max_factor)."""

    error_order: int = 4
    safety: float = 0.9
    min_factor: float = 0.2
    max_factor: float = 10.0

    def factor(self, error_norm: float) -> float:
        if error_norm == 0.0:
            return self.max_factor
        raw = self.safety * error_norm ** (-1.0 / (self.error_order + 1))
        return float(np.clip(raw, self.min_factor, self.max_factor))


@register
class DormandPrince45(ConstraintForces, Integrator):
    name = "rk45"
    order = 5
    summary = "adaptive Dormand-Prince 5(4) with rtol/atol error control"
    adaptive = True
    defaults = {"rtol": 1e-6, "atol": 1e-9, "adaptive": True, "max_step": np.inf,
                **STABILIZATION_DEFAULTS}
    tableau = DORMAND_PRINCE

    def check_options(self) -> None:
        self.rtol = self.positive_option("rtol")
        self.atol = self.positive_option("atol")
        self.max_step = self.positive_option("max_step", allow_inf=True)
        if not isinstance(self.options["adaptive"], bool):
            raise HookeInputError("adaptive", "must be true or false", self.options["adaptive"])
        self.controller = StepSizeController()
        self.h = min(self.dt, self.max_step)
        self.configure_joints()

    def __init__(self, system, dt, **options):
        super().__init__(system, dt, **options)
        self.stats.update(rejected=0, evaluations=0)
        self._fsal = None  # (x array, (k_x, k_v) there) of the last accepted step: first-same-as-last

    def checkpoint(self) -> dict:
        return {**super().checkpoint(), "h": self.h}

    def restore(self, checkpoint: dict) -> None:
        super().restore(checkpoint)
        self.h = float(checkpoint.get("h", self.h))

    def _attempt(self, state: State, h: float):
        first = self._fsal[1] if self._fsal is not None and self._fsal[0] is state.x else None
        kx, kv = runge_kutta_stages(self.system, state.t, state.x, state.v, h, self.tableau, first)
        self.stats["evaluations"] += self.tableau.stages - (first is not None)
        b, e = self.tableau.b, self.tableau.b - self.tableau.b_embedded
        x = state.x + h * np.tensordot(b, kx, axes=1)
        v = state.v + h * np.tensordot(b, kv, axes=1)
        error = (h * np.tensordot(e, kx, axes=1), h * np.tensordot(e, kv, axes=1))
        new = self.new_state(state.t + h, x, v)
        # FSAL: the 7th stage is f at the new state, unless a projection moved that state.
        last_stage = (kx[-1], kv[-1]) if new.x is x else None
        return new, error, last_stage

    def _error_norm(self, old: State, new: State, error) -> float:
        free = self.system.model.free
        total, count = 0.0, 0
        for before, after, err in ((old.x, new.x, error[0]), (old.v, new.v, error[1])):
            scale = self.atol + self.rtol * np.maximum(np.abs(before[free]), np.abs(after[free]))
            total += float(np.sum((err[free] / scale) ** 2))
            count += err[free].size
        return np.sqrt(total / max(count, 1))

    def step(self, state: State) -> State:
        new, _, last = self._attempt(state, self.dt)
        self._fsal = (new.x, last)
        self.stats["steps"] += 1
        return new

    def advance(self, state: State, t_target: float, n_steps: int) -> State:
        if not self.options["adaptive"]:
            return super().advance(state, t_target, n_steps)
        t = state.t
        new = None
        while t < t_target:
            remaining = t_target - t
            h = min(self.h, remaining)
            if h <= 1e-14 * max(1.0, abs(t)):
                bad = new if new is not None and not is_finite(new) else None
                raise StepFailed(f"rk45: step size underflow (h = {h:.3e}) at t = {t:.6g}; " + (
                    "the trial steps give non-finite states" if bad is not None
                    else "the tolerances cannot be met"), state, bad)
            try:
                new, error, last = self._attempt(state, h)
            except STEP_ERRORS as failure:
                if isinstance(failure, HookeInputError):
                    raise
                raise self.failed(failure, state) from failure
            error_norm = self._error_norm(state, new, error)
            if not (np.isfinite(error_norm) and is_finite(new)):
                error_norm = np.inf
            factor = self.controller.factor(error_norm)
            if error_norm <= 1.0:
                self.stats["steps"] += 1
                self._fsal = (new.x, last)
                state, t = new, new.t
                # A step clipped to hit an output time says nothing about the size to try next.
                clipped = h < self.h
                self.h = min(max(self.h, h * factor) if clipped else h * factor, self.max_step)
            else:
                self.stats["rejected"] += 1
                self.h = h * min(factor, 0.9)
        return State(float(t_target), state.x, state.v)
