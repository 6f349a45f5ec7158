"""``rk45``: Dormand–Prince 5(4) with error control and dense output (seed 003's ``solve_ivp``).

Steps are accepted when the scaled RMS error ‖e / (atol + rtol·max(|s|, |s⁺|))‖ < 1, over the
free DOFs of (x, v); the step-size controller is h⁺ = h·clip(0.9 err^(−1/5), 0.2, 10), no growth
right after a rejection (:func:`.adaptive_compiled.step_factor`), and a step that would pass ``t_bound`` (the run's
end) is cut to end there. The first trial step is ``first_step`` [s], or with "auto" (the
default) Hairer, Nørsett & Wanner's starting-step estimate (Solving ODEs I, II.4), capped by
``max_step`` and the time left — the same rules as SciPy's ``solve_ivp(method="RK45")``, so both
take the same steps on the same problem up to round-off in the right-hand side.

With ``adaptive=True`` (the default) the steps do not depend on the output times: ``dt`` is only
the output interval. ``advance`` steps until its last step reaches ``t_target`` and returns the
state there from that step's continuous extension (:data:`.tableau.DORMAND_PRINCE_DENSE`, fourth
order), with pinned particles placed exactly and, for ``stabilization="projection"``, projected
onto the joints. The integration itself always continues from the end of its last accepted step;
a state passed to ``advance`` that is not the last one it returned starts it afresh from that
state. ``checkpoint`` saves that last step's start and end time (t, t1, x, v), so that a resumed
run recomputes it and continues bit for bit. With ``adaptive=False`` it takes fixed steps of
``dt`` (a plain fifth-order method).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..constraints import STABILIZATION_DEFAULTS, Stabilization, length_scale
from ..errors import HookeInputError
from ..model import State
from . import adaptive_compiled
from .base import ConstraintForces, Integrator, StepFailed, is_finite, register
from ..limits import MAX_STEPS
from .compiled import has_only_terms
from .explicit import runge_kutta_stages
from .tableau import DORMAND_PRINCE, DORMAND_PRINCE_DENSE, weighted_sum


PACE_WINDOW = adaptive_compiled.STEPS_PER_CALL  # accepted steps over which the pace is judged
# The tightest tolerances float64 honours (SciPy's solve_ivp raises a smaller rtol to 100 ε)
MIN_RTOL = 100 * np.finfo(float).eps
MIN_ATOL = np.finfo(float).tiny


def absolute_tolerance_bound(model) -> float:
    """The least ``atol`` that controls no digit of a run: the model's size (the extent of its
    start positions, its largest coordinate, its longest joint), or 1 [m] for a smaller one."""
    x0 = np.asarray(model.x0, dtype=float)
    size = max(length_scale(model), float(np.max(np.abs(x0))) if x0.size else 0.0)
    return max(size, 1.0)


@dataclass
class AcceptedStep:
    """One step from (t, x0, v0) to (t1 = t + h, x1, v1) with its stages (7, n, d); ``end``, set
    once it is accepted, is the state the integration continues from (x1, v1 projected onto the
    joints if that is chosen)."""

    t: float
    h: float
    t1: float
    x0: np.ndarray
    v0: np.ndarray
    x1: np.ndarray
    v1: np.ndarray
    kx: np.ndarray
    kv: np.ndarray
    end: State | None = None

    def interpolate(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(x, v) at t ∈ [self.t, self.t + h] from the continuous extension
        (:func:`.adaptive_compiled.dense_output`)."""
        theta = (t - self.t) / self.h
        out = []
        for y0, y1, k in ((self.x0, self.x1, self.kx), (self.v0, self.v1, self.kv)):
            y = np.empty_like(y0, dtype=float)
            adaptive_compiled.dense_output(theta, self.h, np.ascontiguousarray(y0, dtype=float),
                                           np.ascontiguousarray(y1, dtype=float),
                                           np.ascontiguousarray(k, dtype=float),
                                           DORMAND_PRINCE_DENSE, y)
            out.append(y)
        return tuple(out)


@register
class DormandPrince45(ConstraintForces, Integrator):
    name = "rk45"
    order = 5
    summary = "adaptive Dormand-Prince 5(4) with rtol/atol error control and dense output"
    adaptive = True
    defaults = {"rtol": 1e-6, "atol": 1e-9, "adaptive": True, "max_step": np.inf,
                "first_step": "auto", **STABILIZATION_DEFAULTS}
    tableau = DORMAND_PRINCE

    @classmethod
    def inert_reason(cls, options: dict, key: str) -> str | None:
        """With fixed steps of dt (``adaptive=False``) no error is controlled and no step
        chosen: rtol, atol, max_step and first_step take no part."""
        if options.get("adaptive") is False and key in ("rtol", "atol", "max_step", "first_step"):
            return "adaptive = false (fixed steps of dt)"
        return super().inert_reason(options, key)

    def check_options(self) -> None:
        self.rtol = self.tolerance_option("rtol", MIN_RTOL, "100 machine epsilons: a step's "
                                          "round-off alone is larger")
        if self.rtol >= 1:  # (SciPy accepts it; a mistyped 1e-5 is the likelier intent)
            raise HookeInputError("rtol", f"must be below 1 for integrator '{self.name}' (a "
                                  "relative error of 100 % controls no digit of the solution)",
                                  self.options["rtol"])
        self.atol = self.tolerance_option("atol", MIN_ATOL, "the smallest normal float64: the "
                                          "error scales divide by it")
        most = absolute_tolerance_bound(self.system.model)
        if self.atol >= most:  # 1e308 accepted every step: a run of no accuracy at all
            raise HookeInputError("atol", f"must be below {most:.3g} for integrator '{self.name}' "
                                  "here (the model's size in m, or 1: an absolute error as large "
                                  "as the model controls no digit of its positions)",
                                  self.options["atol"])
        self.max_step = self.positive_option("max_step", allow_inf=True)
        if not isinstance(self.options["adaptive"], bool):
            raise HookeInputError("adaptive", "must be true or false", self.options["adaptive"])
        first = self.options["first_step"]
        self.h = None  # the next trial step; None: estimated at the first step
        if not (isinstance(first, str) and first == "auto"):
            try:
                self.h = min(self.positive_option("first_step"), self.max_step)
            except HookeInputError:
                raise HookeInputError("first_step", f'must be "auto" or a number > 0 for '
                                      f"integrator '{self.name}'", first) from None
        self.configure_joints()
        stabilization = Stabilization.from_options(self.options, self.name)
        self._terms = tuple(self.system.terms)
        model = self.system.model
        self._free_dofs = np.repeat(model.free, model.dim)  # flat, as x.reshape(-1)
        self._compiled = (adaptive_compiled.build(self.system, stabilization)
                          if self.options["adaptive"] else None)

    def motion_samples_per_dt(self) -> int | None:
        """None with adaptive steps: the error control places them where the motion needs
        (dt only sets the frames); fixed steps of dt sample it once per step."""
        return None if self.options["adaptive"] else 1

    def check_span(self, t_start: float, t_end: float) -> None:
        """Refuse a ``max_step`` too small to reach ``t_end`` from ``t_start`` in MAX_STEPS
        steps, and a ``max_step`` or ``first_step`` that underflows (a step lost in the
        round-off of t): the run stopped there blaming the model's stiffness or the tolerances
        (max_step 1e-300 took 20 s to say "step size underflow … the tolerances cannot be met",
        1e-9 over 10 s "too stiff for rk45: take an implicit integrator")."""
        if not self.options["adaptive"]:
            return  # fixed steps of dt: max_step and first_step take no part
        span = t_end - t_start
        if self.max_step < span / MAX_STEPS:
            raise HookeInputError("max_step", f"must be at least {span / MAX_STEPS:.3g} s for "
                                  f"integrator '{self.name}' here (steps of at most max_step "
                                  f"would take more than the {MAX_STEPS:.0e} a run may have to "
                                  f"cover its {span:.6g} s)", self.options["max_step"])
        for key, step, t in (("max_step", self.max_step, t_end), ("first_step", self.h, t_start)):
            least = adaptive_compiled.UNDERFLOW_STEP * max(1.0, abs(t))
            if step is not None and not step > least:
                raise HookeInputError(key, f"must be above {least:.3g} s for integrator "
                                      f"'{self.name}' here (a step that short is lost in the "
                                      f"round-off of t = {t:.6g} s)", self.options[key])

    def __init__(self, system, dt, /, **options):
        super().__init__(system, dt, **options)
        self.stats.update(rejected=0, evaluations=0)
        self._step: AcceptedStep | None = None  # the last accepted step
        self._fsal = None  # (k_x, k_v) at the end of the last step: first-same-as-last
        self._frame: State | None = None  # the last state advance returned
        self._restored_t: float | None = None  # the time of the frame a resumed run stopped at
        self._pace: tuple[int, float] | None = None  # (steps, t) where the pace window began

    def checkpoint(self) -> dict:
        """The next trial step ``h`` and, once ``advance`` has interpolated a frame, the step it
        came from: its start and end time, x and v at its start, and the frame's time (NaN times
        and zero arrays before that, so the keys and shapes never change)."""
        step = self._step if self._frame is not None else None  # None: no step or fixed steps
        zeros = np.zeros_like(self.system.model.x0)
        return {**super().checkpoint(), "h": np.nan if self.h is None else self.h,
                "step_t": np.nan if step is None else step.t,
                "step_t1": np.nan if step is None else step.t1,
                "step_x": zeros if step is None else step.x0,
                "step_v": zeros if step is None else step.v0,
                "frame_t": np.nan if step is None else self._frame.t}

    def restore(self, checkpoint: dict) -> None:
        super().restore(checkpoint)
        if not np.isnan(checkpoint["h"]):
            self.h = float(checkpoint["h"])
        if not np.isnan(checkpoint["step_t"]):  # recompute the step the frame was interpolated from
            start = State(float(checkpoint["step_t"]), np.array(checkpoint["step_x"], dtype=float),
                          np.array(checkpoint["step_v"], dtype=float))
            first = self._derivative(start.t, start.x, start.v)
            step, _ = self._attempt(start, float(checkpoint["step_t1"]), first)
            self._finish(step)
            self._frame = None
            self._restored_t = float(checkpoint["frame_t"])

    # -- one step ---------------------------------------------------------------------------
    def _derivative(self, t: float, x: np.ndarray, v: np.ndarray):
        return v, self.system.acceleration(x, v, t)

    def _attempt(self, state: State, t1: float, first, h: float | None = None):
        """(the step from ``state`` to t1, of size h = t1 − t unless given, its error estimate
        (e_x, e_v))."""
        tableau = self.tableau
        h = t1 - state.t if h is None else h
        kx, kv = runge_kutta_stages(self.system, state.t, state.x, state.v, h, tableau, first,
                                    count=tableau.stages - 1)
        b = tableau.b[:-1]  # the 7th stage has weight 0: it is f at the new state (FSAL)
        x1 = state.x + h * weighted_sum(b, kx)
        v1 = state.v + h * weighted_sum(b, kv)
        self.system.apply_pins(x1, v1, t1)
        kx[-1], kv[-1] = self._derivative(t1, x1, v1)
        e = tableau.b - tableau.b_embedded
        error = (h * weighted_sum(e, kx), h * weighted_sum(e, kv))
        return AcceptedStep(state.t, h, t1, state.x, state.v, x1, v1, kx, kv), error

    def _finish(self, step: AcceptedStep) -> None:
        """Make ``step`` the last accepted one: its end state and the FSAL stage."""
        step.end = self.new_state(step.t1, step.x1, step.v1, pins_placed=True)  # by _attempt
        self._step = step
        # FSAL: the 7th stage is f at the new state, unless a projection moved that state.
        self._fsal = (step.kx[-1], step.kv[-1]) if step.end.x is step.x1 else None

    def _scaled_rms(self, parts, x0, x1, v0, v1) -> float:
        """The RMS over the free DOFs of ``parts`` (an x-like and a v-like array) in units of
        atol + rtol·max(|x0|, |x1|) (and v0, v1): :func:`.adaptive_compiled.scaled_rms`, which
        the compiled steps call too."""
        ex, ev, x0, x1, v0, v1 = (np.ascontiguousarray(a, dtype=float)
                                  for a in (*parts, x0, x1, v0, v1))
        return adaptive_compiled.scaled_rms(ex, ev, x0, x1, v0, v1, self._free_dofs, self.atol,
                                            self.rtol)

    def _error_norm(self, step: AcceptedStep, error) -> float:
        norm = self._scaled_rms(error, step.x0, step.x1, step.v0, step.v1)
        return norm if np.isfinite(norm) else np.inf

    def _initial_step(self, state: State, first) -> float:
        """Hairer, Nørsett & Wanner's estimate from f at the start and after a tiny Euler step."""
        def rms(parts) -> float:
            return self._scaled_rms(parts, state.x, state.x, state.v, state.v)

        d0, d1 = rms((state.x, state.v)), rms(first)
        h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
        if not 0 < h0 < np.inf:  # an overflowing norm (atol 1e-300 where a DOF is 0): the
            h0 = 1e-6            # error control finds the step from there
        probe = self._derivative(state.t + h0, state.x + h0 * first[0], state.v + h0 * first[1])
        self.stats["evaluations"] += 1
        d2 = rms([p - f for p, f in zip(probe, first)]) / h0
        if max(d1, d2) <= 1e-15:
            h1 = max(1e-6, 1e-3 * h0)
        else:
            h1 = (0.01 / max(d1, d2)) ** -adaptive_compiled.ERROR_EXPONENT
        if h1 == 0:  # the norms overflowed (as above): start from h0
            h1 = h0
        return min(100.0 * h0, h1, self.max_step, self.t_bound - state.t)

    def _accept_next(self) -> None:
        """Take one accepted adaptive step from the end of the last one (or the start); one that
        raises or cannot be made finite is a :class:`StepFailed` from there."""
        state = self._step.end if self._step is not None else self._start
        self.guarded(lambda: self._step_from(state), state)
        self._check_pace()

    def _check_pace(self) -> None:
        """Stop a run whose steps have shrunk so far that reaching ``t_bound`` would take more
        than the MAX_STEPS a run may have (a stiff model: 1e-13 s steps for hours, printing
        nothing), judged by the mean step over each window of PACE_WINDOW accepted steps, so
        that one short step (a kink, a contact) is no reason."""
        steps, t = self.stats["steps"], self._step.end.t
        if self._pace is None or steps < self._pace[0]:
            self._pace = (steps, t)
        if steps - self._pace[0] < PACE_WINDOW or not np.isfinite(self.t_bound):
            return
        mean = (t - self._pace[1]) / (steps - self._pace[0])
        self._pace = (steps, t)
        remaining = (self.t_bound - t) / mean if mean > 0 else np.inf
        if steps + remaining > MAX_STEPS:
            raise StepFailed(f"rk45: its steps have shrunk to {mean:.3g} s on average at t = "
                             f"{t:.6g}: reaching t_end = {self.t_bound:.6g} would take about "
                             f"{steps + remaining:.3g} steps, more than the {MAX_STEPS:.0e} a run "
                             "may have (the model is too stiff for rk45 here: take an implicit "
                             "integrator or xpbd)", self._step.end)

    def _first_stage(self, state: State, fsal):
        """f at ``state``: the FSAL stage when there is one, else evaluated (and counted)."""
        if fsal is not None:
            return fsal
        self.stats["evaluations"] += 1
        return self._derivative(state.t, state.x, state.v)

    def _step_from(self, state: State) -> None:
        first = self._first_stage(state, self._fsal)
        if self.h is None:
            self.h = self._initial_step(state, first)
        h = min(self.h, self.max_step)
        rejected, bad = False, None
        while True:
            # NaN too: it would never shrink
            if not h > adaptive_compiled.UNDERFLOW_STEP * max(1.0, abs(state.t)):
                raise StepFailed(f"rk45: step size underflow (h = {h:.3e}) at t = {state.t:.6g}; "
                                 + ("the trial steps give non-finite states" if bad is not None
                                    else "the tolerances cannot be met"), state, bad)
            t1 = self.t_bound if state.t + h >= self.t_bound else state.t + h  # cut at the end
            step, error = self._attempt(state, t1, first)
            h = step.h
            self.stats["evaluations"] += self.tableau.stages - 1
            trial = State(t1, step.x1, step.v1)
            bad = None if is_finite(trial) else trial
            error_norm = self._error_norm(step, error) if bad is None else np.inf
            factor = adaptive_compiled.step_factor(error_norm)
            if error_norm < 1.0:
                break
            self.stats["rejected"] += 1
            rejected = True
            h *= factor
        self.stats["steps"] += 1
        self.h = h * (min(factor, 1.0) if rejected else factor)
        self._finish(step)

    def _compiled_frames(self, times: np.ndarray, done: int, x_out: np.ndarray,
                         v_out: np.ndarray) -> int:
        """Frames ``done`` on written by one :mod:`.adaptive_compiled` call (they stop after
        STEPS_PER_CALL steps); where it stops before a step, that step is repeated here (which
        raises its error). Returns the frames written in all."""
        step = self._step
        start = step.end if step is not None else self._start
        first = None
        if step is None:
            first = self.guarded(lambda: self._first_stage(start, self._fsal), start)
            if self.h is None:
                self.h = self.guarded(lambda: self._initial_step(start, first), start)
        outcome = self._compiled.run(step, start, first, self.h, times, done, x_out, v_out,
                                     self.t_bound, self.max_step, self.atol, self.rtol)
        for key, count in zip(("steps", "rejected", "evaluations"), outcome.stats):
            self.stats[key] += count
        self.h = outcome.h_next
        if outcome.step is None:
            return outcome.frames
        step = AcceptedStep(*outcome.step)
        if outcome.status in (adaptive_compiled.OK, adaptive_compiled.PAUSED):
            self._finish(step)
            return outcome.frames
        self._step, self._start = None, State(step.t, step.x0, step.v0)
        self._fsal = (step.kx[0], step.kv[0])
        self._accept_next()
        return outcome.frames

    def _own(self, state: State) -> None:
        """Start afresh from ``state`` unless it is the last frame returned (or, after a
        restore, the frame the run stopped at)."""
        ours = (state.x is self._frame.x if self._frame is not None
                else self._step is not None and state.t == self._restored_t)
        if not ours:
            self._step, self._fsal, self._start = None, None, state

    # -- the contract -----------------------------------------------------------------------
    def step(self, state: State) -> State:
        """One fixed step of ``dt`` (``adaptive=False``)."""
        same = self._step is not None and state.x is self._step.end.x
        first = self._first_stage(state, self._fsal if same else None)
        self._finish(self._attempt(state, state.t + self.dt, first, self.dt)[0])
        self.stats["evaluations"] += self.tableau.stages - 1
        self.stats["steps"] += 1
        return self._step.end

    def frames_in_blocks(self) -> bool:
        """Whether :meth:`advance_frames` computes its frames compiled: the adaptive steps of
        a system :mod:`.adaptive_compiled` takes (see :func:`.adaptive_compiled.build`)."""
        return (self._compiled is not None and self.options["adaptive"]
                and has_only_terms(self.system, self._terms))

    def advance_frames(self, state: State, times: np.ndarray, x_out: np.ndarray,
                       v_out: np.ndarray) -> State:
        """The states at ``times`` (increasing, C-contiguous floats) into x_out, v_out ((frames,
        n, d), C-contiguous), as :meth:`advance` to each time in turn returns them bit for bit,
        in compiled calls (:meth:`frames_in_blocks` must be True); returns the last one. A
        :class:`StepFailed` carries the number of frames written before it as ``frames``."""
        self._own(state)
        done = 0
        try:
            while done < times.size:
                done = self._compiled_frames(times, done, x_out, v_out)
                if self._step is not None:
                    self._check_pace()
        except StepFailed as failure:
            failure.frames = done
            raise
        self._frame = State(float(times[-1]), x_out[-1], v_out[-1])
        return self._frame

    def advance(self, state: State, t_target: float, n_steps: int) -> State:
        if not self.options["adaptive"]:
            return super().advance(state, t_target, n_steps)
        if self.frames_in_blocks():
            shape = (1,) + np.shape(state.x)
            return self.advance_frames(state, np.array([float(t_target)]), np.empty(shape),
                                       np.empty(shape))
        self._own(state)
        while (self._step.end.t if self._step is not None else state.t) < t_target:
            self._accept_next()
        step = self._step
        if step is None or t_target == step.end.t:
            frame = State(float(t_target), state.x, state.v) if step is None else step.end
        else:
            frame = self.new_state(float(t_target), *step.interpolate(t_target))
        self._frame = frame
        return frame
