"""``newmark`` and ``generalized_alpha``: implicit second-order methods, joints as index-3 constraints.

Each step solves for the acceleration a⁺ and the joint tensions T⁺ at t⁺ = t + h:

    M a⁺ = F(x⁺, v⁺) − G(x⁺)ᵀ T⁺,   g(x⁺) = 0                     (equilibrium and joints at t⁺)
    (1 − α_m) ã⁺ + α_m ã = (1 − α_f) a⁺ + α_f a                    (acceleration-like variable ã)
    x⁺ = x + h v + h² ((½ − β) ã + β ã⁺),   v⁺ = v + h ((1 − γ) ã + γ ã⁺)

This is Arnold & Brüls' (2007) form of the generalized-α method of Chung & Hulbert (1993): for
linear systems it is the same method as Chung & Hulbert's M a_{n+1−α_m} = F_{n+1−α_f} (seed 002's
form), and it is the standard way to add index-3 constraints (the tensions are the true ones at
t⁺). Parameters from the high-frequency spectral radius ρ∞ ∈ [0, 1] (Chung & Hulbert's eq. 25
and 17; seed 002's formulas are exactly these):

    α_m = (2ρ∞ − 1)/(ρ∞ + 1),  α_f = ρ∞/(ρ∞ + 1),  γ = ½ − α_m + α_f,  β = ¼ (1 − α_m + α_f)².

ρ∞ = 1 is non-dissipative (α_m = α_f = ½, γ = ½, β = ¼); smaller ρ∞ damps the frequencies that
the step cannot resolve (ω h ≫ 1) by ρ∞ per step while staying second-order accurate.
``newmark`` is α_m = α_f = 0 (ã = a) with its own β, γ (default ¼, ½: the trapezoidal rule,
second order; other γ give first order). The start uses the consistent a₀ (exact tensions,
:mod:`hooke.constraints`) and ã₀ = a₀.

Solve: Newton on (a⁺, T⁺) with the sparse symmetric saddle-point matrix (free DOFs + joints)

    [ M + β' (∇²U + Σ T_k ∇²g_k) + γ' D   Gᵀ ] [Δa]     [ r      ]
    [ G                                    0  ] [ΔT] = − [ g / β' ],

β' = h²β(1 − α_f)/(1 − α_m), γ' = hγ(1 − α_f)/(1 − α_m), r = M a⁺ − F + Gᵀ T⁺, assembled on a
fixed pattern and factorised by SuperLU. The factorisation is reused across iterations and steps
while each Newton correction is at most 1/5 of the previous one (simplified Newton), and
refreshed otherwise and at every iteration after the 8th. Since a step's result depends on the
Jacobian it starts with, the checkpoint of a resumed run holds the point (x, T) of the last
factorisation with (a, ã, T) at the last state, and :meth:`AlphaMethod.restore` refactorises
there: the continuation is bit-identical.
Converged when |g|∞ ≤ tol·ℓ and |r|∞ ≤ tol·f, with ℓ the model's length scale and f the largest
force term: the residual bounds the error of a⁺ relative to the accelerations, which the
velocities integrate, so the Newton error adds at most ~tol·|a|·t to the velocities whatever the
step. (The rule used to accept a position change ≤ tol·ℓ instead: that lets an acceleration error
tol·ℓ/(h²β) through every step, which grows as the step shrinks — the top at dt = 1.25e-4 was
off by 3e-3 m after 2 s and its energy drifted 13 %, worse than at 1e-3.) Where round-off keeps
|r| above tol·f (positions carry ε|x| of noise, a stiff spring turns it into force), the iteration
stops once it has stalled: its last correction moved the positions by at most ``ROUND_OFF``·|x|∞
(a few units in the last place) and no longer halved |r|; |g| gets the same floor. The velocities are then projected onto the
hidden constraint G v⁺ = 0 (v⁺ − M⁻¹Gᵀ(G M⁻¹ Gᵀ)⁻¹G v⁺, RATTLE style): index-3 positions leave
ġ free, and in fast motion it runs away — on the hanging chain (scene ``jointed_chain``,
n = 40, dt = 1e-3) max |ġ| grew from 2e-3 m/s at t = 1.34 s to 3 m/s at 1.46 s
as the free end whipped, and no step size (down to dt/256) then let Newton converge. A step whose
Newton iteration still fails is taken as two steps of dt/2 (the α-method allows a change of step
size; ã carries over), each split again if needed, ``MAX_HALVINGS`` deep (the n = 80 chain needs
it once, near t = 1.39 s where its end link's tension peaks at 2.3 kN); counted in
``split_steps``. A split starts with fresh factorisations, so it does not depend on earlier ones
(nor does a resumed run). Failure at the smallest step raises :class:`StepFailed` with the
residual history; a singular joint set names the joints.

Models of springs, gravity, joints and air drag towards a steady wind (not one varying in time)
small enough for a banded LU take this same step compiled, many steps per call
(:mod:`.newmark_compiled`, 10–30× faster on the seed 002 scenes): ``step`` and ``advance``
choose it on the first step; ``COMPILED = False`` forces the generic path. With it, ``advance_frames`` takes a block of frames in one kernel call (the frames
of one ``advance`` per frame, bit for bit): called once per frame, the kernel's Python around it
cost 12 µs a frame on the pendulum (``hooke bench W6``), three times a step.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse.linalg as spla

from ..constraints import JOINT_TOL, length_scale
from ..errors import HookeInputError, SimulationError, is_number
from ..model import State
from ..saddle_point import SaddlePointMatrix
from .base import NON_FINITE, Integrator, StepFailed, register, state_on_joints
from .newmark_compiled import FAILED, OK, SINGULAR, CompiledAlpha


REFACTOR_RATE = 0.2  # refactor when a Newton correction is not this much smaller than the last
FULL_NEWTON_AFTER = 8  # iterations after which every iteration refactors (plain Newton)
MAX_HALVINGS = 8  # a step whose Newton iteration fails is split in two, down to dt/2⁸
ROUND_OFF = 16 * np.finfo(float).eps  # a position correction this small (× |x|∞) is round-off
STALLED = 0.5  # ... when it no longer halves the residual either: Newton has stalled
COMPILED = True  # False: always the generic sparse path (the reference the compiled one matches)
RESTORED = object()  # stands for "the state a resumed run continues from" in AlphaMethod._memory


class AlphaMethod(Integrator):
    """The shared step of ``newmark`` and ``generalized_alpha`` (see the module docstring)."""

    order = 2
    supports_joints = True
    stiffness_in_step_matrix = True
    solver_defaults = {"tol": JOINT_TOL, "max_iterations": 25}

    def __init__(self, system, dt, /, **options):
        super().__init__(system, dt, **options)
        self.stats.update(newton_iterations=0, factorizations=0, split_steps=0)
        self.tensions = np.zeros(system.model.n_joints)  # T⁺ of the last step [N]
        self.halvings = 0  # how often the user's dt was halved to give this integrator's
        self._half = None  # the same method at dt/2, for the steps that must be split
        self._memory = None  # (x of the last returned state or RESTORED, a, ã, T) there
        self._lu = None
        self._factor_point = (np.zeros_like(system.model.x0), np.zeros(system.model.n_joints))  # at _lu
        self._matrix = None  # SaddlePointMatrix, built on the first step
        # CompiledAlpha (built on the first step), or False for the generic path.
        self._compiled = None if COMPILED else False
        model = system.model
        h = self.dt
        ratio = (1.0 - self.alpha_f) / (1.0 - self.alpha_m)
        self.beta_prime = h * h * self.beta * ratio
        self.gamma_prime = h * self.gamma * ratio
        self.mass = model.mass[:, None]
        self.length_scale = length_scale(model)
        self._static = model.pinned.copy()  # pinned particles without a prescribed motion
        self._static[[i for i, _ in model.pinned_motions]] = False

    def check_solver_options(self) -> None:
        self.tol = self.positive_option("tol")
        if self.tol >= 1:  # the predictor passed as converged: no Newton iteration at all
            raise HookeInputError("tol", f"must be below 1 for integrator '{self.name}' (a "
                                  "residual relative to the largest force: at 1 the predictor "
                                  "passes unsolved)", self.options["tol"])
        iterations = self.options["max_iterations"]
        if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
            raise HookeInputError("max_iterations", f"must be an integer >= 1 for integrator "
                                  f"'{self.name}'", iterations)
        self.max_iterations = int(iterations)

    # -- the saddle-point matrix -----------------------------------------------------------
    def _factorize(self, x: np.ndarray, tension: np.ndarray, t: float) -> None:
        if self._matrix is None:
            self._matrix = SaddlePointMatrix(self.system)
        matrix = self._matrix.assemble(x, tension, 1.0, self.beta_prime, self.gamma_prime)
        try:
            self._lu = spla.splu(matrix, permc_spec="MMD_AT_PLUS_A")
        except RuntimeError:  # SuperLU: exactly singular
            raise self._singular(x, t) from None
        self._factor_point = (x.copy(), tension.copy())
        self.stats["factorizations"] += 1

    def _singular(self, x: np.ndarray, t: float) -> SimulationError:
        joints = self.system.joints
        if joints is not None:
            return joints.singular_error(joints.normal_matrix(joints.geometry(x)[1]), t)
        return SimulationError(f"{self.name}: the step matrix is singular at t = {t:.6g}; "
                               "try a smaller dt")

    def _not_converged(self, t: float, history) -> SimulationError:
        shown = ", ".join(f"({r:.2e}, {c:.2e})" for r, c in history[-6:])
        split = (f"with the step split {self.halvings} times down to h = {self.dt:.3g} s; "
                 if self.halvings else "")
        return self.newton_failure(len(history) - 1, t, f"{split}last residuals (|r|∞ [N], "
                                   f"|g|∞ [m]): {shown}; tol = {self.tol:g}")

    def _split(self, state: State, a, at, tension, history) -> State:
        """The step from ``state`` (a, ã, T there) whose Newton iteration failed, taken as two
        steps of dt/2 (each split again if it fails, ``MAX_HALVINGS`` deep); not when the
        residual is not finite (a NaN in the data, not a step too long for Newton)."""
        if self.halvings >= MAX_HALVINGS or not np.all(np.isfinite(history[-1])):
            raise StepFailed(str(self._not_converged(state.t, history)), state)
        if self._half is None:
            self._half = type(self)(self.system, 0.5 * self.dt, **self.options)
            self._half.halvings = self.halvings + 1
        half = self._half
        half._lu = None  # no factorisation carried over from an earlier split
        kernel = half._kernel()
        if kernel is not None:
            kernel.factored[0] = False
        before = dict(half.stats)
        half._memory = (state.x, a, at, tension)
        new = half.advance(state, state.t + self.dt, 2)
        for key in ("newton_iterations", "factorizations", "split_steps"):  # nested splits too
            self.stats[key] += half.stats[key] - before[key]
        self.stats["steps"] += 1
        self.stats["split_steps"] += 1
        self.tensions = half.tensions
        self._memory = half._memory
        return new

    def consistent_start(self, state: State) -> State:
        """``state`` put on the joints where they do not hold to tol·ℓ (:func:`state_on_joints`):
        the first step would close the gap in one dt."""
        return state_on_joints(self.system.joints, state, self.tol * self.length_scale)

    # -- one step ---------------------------------------------------------------------------
    def _start(self, state: State):
        """(a, ã, T) at a state this integrator did not produce: the consistent acceleration."""
        system = self.system
        a = system.unconstrained_acceleration(state.x, state.v, state.t)
        tension = np.zeros(system.model.n_joints)
        if system.joints is not None:
            tension = system.joints.tensions(state.x, state.v, a, state.t)
            a = a - system.inverse_mass * system.joints.transpose_times(
                system.joints.geometry(state.x)[1], tension)
        return a, a.copy(), tension

    def _recall(self, state: State):
        """(a, ã, T) at ``state``: remembered when this integrator returned it (or restored for
        the state a resumed run continues from), else consistent."""
        if self._memory is not None and (self._memory[0] is state.x or self._memory[0] is RESTORED):
            return self._memory[1:]
        return self._start(state)

    # -- checkpoint (see hooke.integrators.base) --------------------------------------------
    def checkpoint(self) -> dict:
        """(a, ã, T) at the last state returned and the point (x, T) where the Jacobian that the
        simplified Newton reuses was factorised (``factored`` 0: none to reuse)."""
        model = self.system.model
        memory = self._memory or (None, np.zeros_like(model.x0), np.zeros_like(model.x0),
                                  np.zeros(model.n_joints))
        kernel = self._kernel()
        if kernel is not None:
            factored, point = bool(kernel.factored[0]), (kernel.factor_x, kernel.factor_tension)
        else:
            factored, point = self._lu is not None, self._factor_point
        return {**super().checkpoint(), "remembered": int(self._memory is not None),
                "acceleration": memory[1], "acceleration_tilde": memory[2],
                "step_tension": memory[3], "factored": int(factored), "factor_x": point[0],
                "factor_tension": point[1]}

    def restore(self, checkpoint: dict) -> None:
        if checkpoint.get("remembered"):
            memory = [np.array(checkpoint[key], dtype=float) for key in
                      ("acceleration", "acceleration_tilde", "step_tension")]
            self._memory = (RESTORED, *memory)
            self.tensions = memory[2].copy()
        if checkpoint.get("factored"):
            x, tension = (np.array(checkpoint[key], dtype=float) for key in ("factor_x", "factor_tension"))
            kernel = self._kernel()
            if kernel is not None:
                kernel.refactor(x, tension)
            else:
                self._factorize(x, tension, np.nan)
        super().restore(checkpoint)  # after refactoring: the counters are the stored ones

    def _kernel(self) -> CompiledAlpha | None:
        if self._compiled is None:
            self._compiled = CompiledAlpha.build(self, REFACTOR_RATE, FULL_NEWTON_AFTER, ROUND_OFF,
                                                STALLED) or False
        if self._compiled and self._compiled.usable(self.system):
            return self._compiled
        return None

    @property
    def compiled(self) -> bool:
        """Whether the next step runs compiled (:mod:`.newmark_compiled`)."""
        return self._kernel() is not None

    def advance(self, state: State, t_target: float, n_steps: int) -> State:
        kernel = self._kernel()
        if kernel is None:
            return super().advance(state, t_target, n_steps)
        shape = (1,) + np.shape(state.x)
        return self._compiled_frames(kernel, state, np.array([float(t_target)]),
                                     np.array([n_steps], dtype=np.int64), np.empty(shape),
                                     np.empty(shape))

    def frames_in_blocks(self) -> bool:
        """Whether :meth:`advance_frames` computes its frames compiled (:mod:`.newmark_compiled`)."""
        return self._kernel() is not None

    def advance_frames(self, state: State, times: np.ndarray, x_out: np.ndarray,
                       v_out: np.ndarray) -> State:
        """The states at ``times`` (increasing) into x_out, v_out ((frames, n, d)), as
        :meth:`advance` to each time in turn returns them bit for bit, in compiled calls
        (:meth:`frames_in_blocks` must be True); a frame's steps are its time's distance from
        the previous one in ``dt``, rounded. Returns the last frame's state; a
        :class:`StepFailed` carries the number of frames written before it as ``frames``."""
        previous = np.concatenate(([state.t], times[:-1]))
        steps = np.rint((times - previous) / self.dt).astype(np.int64)
        return self._compiled_frames(self._kernel(), state, np.ascontiguousarray(times, dtype=float),
                                     steps, x_out, v_out)

    def _compiled_frames(self, kernel: CompiledAlpha, state: State, times: np.ndarray,
                         steps: np.ndarray, x_out: np.ndarray, v_out: np.ndarray) -> State:
        """``steps[f]`` steps to each frame f in turn, its state into x_out[f], v_out[f], in
        as few kernel calls as its Newton failures allow (each failing step is split here,
        then the kernel goes on); ``steps`` is used up. Returns the last frame's state."""
        if self._lu is not None:  # the generic path stepped last: the band factor is older
            self._lu = None
            kernel.factored[0] = False
        frame = 0
        try:
            while frame < times.size:
                a, at, tension = (array.copy() for array in self._recall(state))
                x, v = state.x.copy(), state.v.copy()
                first = frame
                status, frame, done, t, history = kernel.run_frames(
                    times, steps, frame, state.t, x, v, a, at, tension, x_out, v_out)
                for key, count in zip(("steps", "newton_iterations", "factorizations"),
                                      kernel.counts):
                    self.stats[key] += int(count)
                if done or frame > first:
                    self.tensions = tension
                if status == OK:
                    state = State(float(times[-1]), x_out[-1], v_out[-1])
                    self._memory = (state.x, a, at, tension)
                    break
                begin = state.t if frame == first else float(times[frame - 1])
                reached = State(begin + done * self.dt, x, v)  # the last finite state
                if status != FAILED:
                    self._raise(kernel, status, reached, t)
                state = self._split(reached, a, at, tension, history)  # x, v, a, ã, T are at t
                steps[frame] -= done + 1
                if steps[frame] == 0:
                    state = State(float(times[frame]), state.x, state.v)
                    x_out[frame], v_out[frame] = state.x, state.v
                    frame += 1
        except StepFailed as failure:
            failure.frames = frame
            raise
        return state

    def _raise(self, kernel: CompiledAlpha, status: int, reached: State, t: float) -> None:
        """The StepFailed of a kernel that stopped at a singular matrix or a non-finite state."""
        if status == SINGULAR:
            raise StepFailed(str(self._singular(kernel.iterate[0], t)), reached)
        bad = State(t, kernel.iterate[0].copy(), kernel.iterate[1].copy())
        raise StepFailed(NON_FINITE, reached, bad)

    def step(self, state: State) -> State:
        kernel = self._kernel()
        if kernel is not None:
            return self.advance(state, state.t + self.dt, 1)
        system, h = self.system, self.dt
        joints, free = system.joints, system.free_dofs
        a_old, at_old, tension_old = self._recall(state)
        t1 = state.t + h
        x_base = state.x + h * state.v + h * h * (0.5 - self.beta) * at_old
        v_base = state.v + h * (1.0 - self.gamma) * at_old
        at_weight = (1.0 - self.alpha_f) / (1.0 - self.alpha_m)
        at_shift = (self.alpha_f * a_old - self.alpha_m * at_old) / (1.0 - self.alpha_m)

        a = a_old.copy()  # predictor: the last acceleration; pinned rows are prescribed
        a[self._static] = 0.0
        for i, motion in system.model.pinned_motions:
            a[i] = motion(t1)[2]
        tension = tension_old.copy()
        n_free = free.size
        tol_length = self.tol * self.length_scale
        last_move = last_r = np.inf
        history = []
        for iteration in range(self.max_iterations + 1):
            at = at_weight * a + at_shift
            x = x_base + h * h * self.beta * at
            v = v_base + h * self.gamma * at
            system.apply_pins(x, v, t1)
            force = system.force(x, v, t1).reshape(-1)[free]
            inertia = (self.mass * a).reshape(-1)[free]
            r = inertia - force
            scale = max(np.max(np.abs(force), initial=0.0), np.max(np.abs(inertia), initial=0.0))
            g = np.empty(0)
            if joints is not None:
                length, n = joints.geometry(x)
                pull = joints.transpose_times(n, tension).reshape(-1)[free]
                r += pull
                scale = max(scale, np.max(np.abs(pull), initial=0.0))
                g = length - joints.rest
            r_norm = float(np.max(np.abs(r), initial=0.0))
            g_norm = float(np.max(np.abs(g), initial=0.0))
            history.append((r_norm, g_norm))
            floor = ROUND_OFF * float(np.max(np.abs(x), initial=0.0))
            stalled = last_move <= floor and r_norm >= STALLED * last_r
            converged = g_norm <= max(tol_length, floor) and (r_norm <= self.tol * scale or stalled)
            if converged or iteration == self.max_iterations or not np.isfinite(r_norm + g_norm):
                break
            if self._lu is None:
                self._factorize(x, tension, t1)
            delta = self._lu.solve(-np.concatenate([r, g / self.beta_prime]))
            if not np.all(np.isfinite(delta)):
                break
            move = self.beta_prime * float(np.max(np.abs(delta[:n_free]), initial=0.0))
            if move > REFACTOR_RATE * last_move or iteration >= FULL_NEWTON_AFTER:
                self._lu = None  # stale Jacobian contracts too slowly: refactor next iteration
            a.reshape(-1)[free] += delta[:n_free]
            tension += delta[n_free:]
            last_move, last_r = move, r_norm
            self.stats["newton_iterations"] += 1
        if not converged:
            self._lu = None
            return self._split(state, a_old, at_old, tension_old, history)
        self.tensions = tension
        self.stats["steps"] += 1
        if joints is not None:
            v = joints.project_velocities(x, v, t1)
        new = self.new_state(t1, x, v)
        self._memory = (new.x, a, at, tension)
        return new


@register
class Newmark(AlphaMethod):
    name = "newmark"
    summary = "Newmark (default β = ¼, γ = ½: trapezoidal, second order), joints as index-3 constraints"
    defaults = {"beta": 0.25, "gamma": 0.5, **AlphaMethod.solver_defaults}
    alpha_m = 0.0
    alpha_f = 0.0

    def check_options(self) -> None:
        # The family's domain in the literature (Hughes, The Finite Element Method, ch. 9):
        # γ < ½ damps negatively, so the energy grows every step whatever h; γ > 1 is beyond the
        # damped members anyone uses. β > 0 because the step divides by it (β = 0 is the
        # explicit central difference, another method); the largest β in use is the maximally
        # dissipative (γ + ½)²/4 ≤ 9/16 at γ = 1, and a larger one adds only period error, so
        # β ≤ 1 leaves room and refuses absurd values such as 1e300.
        beta, gamma = self.options["beta"], self.options["gamma"]
        if not is_number(beta) or not 0.0 < beta <= 1.0:  # NaN fails the comparison too
            raise HookeInputError("beta", "must be a number in (0, 1] for integrator 'newmark' "
                                  "(¼: trapezoidal, ⅙: linear acceleration)", beta)
        if not is_number(gamma) or not 0.5 <= gamma <= 1.0:
            raise HookeInputError("gamma", "must be a number in [0.5, 1] for integrator 'newmark' "
                                  "(below ½ the energy grows every step; ½: second order)", gamma)
        if self.system.model.n_joints and 2.0 * beta < gamma:
            # below γ/2 the family is stable only for h·ω under a bound, and a joint is a spring
            # of infinite ω: jointed_chain failed at β = 0.24 by step 221, at 1/6 by step 28, each
            # as "Newton did not converge", for which a smaller dt cannot help
            raise HookeInputError("beta", f"must be at least γ/2 = {gamma / 2:g} for integrator "
                                  "'newmark' on a model with joints (below it the method is only "
                                  "conditionally stable, and a joint's frequency is infinite)",
                                  beta)
        self.beta, self.gamma = float(beta), float(gamma)
        self.check_solver_options()


@register
class GeneralizedAlpha(AlphaMethod):
    name = "generalized_alpha"
    summary = "generalized-α (Chung & Hulbert 1993), high-frequency damping ρ∞, joints as constraints"
    defaults = {"rho_inf": 0.8, **AlphaMethod.solver_defaults}

    def check_options(self) -> None:
        rho = self.options["rho_inf"]
        if not is_number(rho) or not np.isfinite(rho) or not 0.0 <= rho <= 1.0:
            raise HookeInputError("rho_inf", "must be a number in [0, 1] for integrator "
                                  "'generalized_alpha'", rho)
        rho = float(rho)
        self.alpha_m = (2.0 * rho - 1.0) / (rho + 1.0)
        self.alpha_f = rho / (rho + 1.0)
        self.gamma = 0.5 - self.alpha_m + self.alpha_f
        self.beta = 0.25 * (1.0 - self.alpha_m + self.alpha_f) ** 2
        self.check_solver_options()
