"""Implicit Euler, linearised (seed 001) and fully nonlinear (seed 004's incremental potential).

``implicit_euler_linear``: one linear solve per step,
    (M + h D + h² ∇²U(x)) v⁺ = M v + h f(x, v) + h D v,   x⁺ = x + h v⁺,
i.e. seed 001's (M − h²K) v⁺ = M v + h f with the damping Jacobian D added; on the 1D spring it is
exactly seed 000's "Implicit Euler". Air drag (:mod:`hooke.energies.drag`) is part of D (its C)
and of f, with its wind taken at t + h: the drag −C (v⁺ − w(t + h)) is implicit.

``implicit_euler``: backward Euler solved exactly (to ``tol``) as the minimisation of
    E(y) = ½ (y − x̃)ᵀ M (y − x̃) + h² U(y) + ½ h (y − x)ᵀ D (y − x),   x̃ = x + h v,
by Newton's method with every element's Hessian block projected to PSD, a backtracking line
search that never increases E (its first trial step capped by ``System.max_step``: continuous
collision detection with the contact planes), and the stopping rule ‖p‖∞ / h < tol checked before
each iteration (on springs and gravity, where a bound on p proves the rule, with no new
factorisation: from the gradient alone, or near convergence by a substitution with the previous
iteration's factor: :meth:`ImplicitEuler._within_tol`). v⁺ = (y − x) / h. U is taken over
``System.step_terms``: the potentials at t + h (moving planes there) plus the step's lagged
friction and the wind's push (air drag: its C is part of D, :mod:`hooke.energies.drag`); Newton
starts at ``System.newton_start`` (pins and moving planes at t + h). ``step_energies`` holds E at
the start and after each
accepted Newton iteration of the last step (non-increasing).

``tol`` is an absolute velocity tolerance [m/s] (the book's rule, default 1e-2) on ‖p‖, the
largest entry of p (``norm="max"``) or, as the book's ``numpy.linalg.norm(p, inf)`` of the
(particles, dim) array, its largest row sum Σ_a |p_ia| (``norm="row_sum"``: the square scenes use
it; with the largest entry, square_drop takes 384 Newton iterations instead of the book's 387 and
parts from the book's run by 1e-3 m from step 57 on). Newton starts at y = x and takes at least
``min_iterations`` = 1 iteration, so slow motions (|v| < tol) are not frozen; ``min_iterations=0``
is the book's rule exactly (checked before the first iteration), which the contact scenes use to
reproduce it.

Why a per-step tolerance keeps the order here (unlike the one the α-methods had, see
:mod:`.newmark`): the first Newton iteration is taken in full wherever the line search does not
cut it, and from y = x it is the linearly implicit step with the PSD-projected Hessian, itself a
first-order method — its distance to the backward-Euler solution is O(h³) per step (O(h⁴) without
projection). Later iterations only bring y closer, so ‖p‖/h < tol never lets an error through
that grows as the step shrinks. The book's ``min_iterations=0`` has no such first iteration: it
accepts y = x outright when ‖p‖/h < tol before any step, so under refinement a body at rest stops
moving once h·|a| < tol (the square under gravity alone for h < tol/g ≈ 1.02e-3 s). When the line search finds no decrease of E above
its round-off (64 ε × the sum of the sizes of E's parts, which may cancel: a weight against the
springs), steps are judged by the gradient norm (energy differences there are noise); a trial
that leaves y as it is counts as no step; when no step qualifies and the Newton step is within tol or round-off (‖p‖∞ ≤ 64 ε ‖y‖∞), y is the
minimiser to working precision and the iteration stops; otherwise (E not finite, say) the step
fails with the residual history, as when ``max_iterations`` is reached.
Both take ``solver="auto"`` (default: a direct solve, or AMG-preconditioned CG where a
factorisation would fill in too much: ``hooke.linalg.SparseSolver._auto_method``), ``"direct"``,
``"cg"``, ``"amg"``, or one direct
solver by name: ``"pardiso"``, ``"cholmod"``, ``"superlu"`` (see :class:`hooke.linalg.SparseSolver`).

With joints, ``implicit_euler`` minimises the same E subject to the joints, g(y) = 0, by a
Newton–KKT iteration on the saddle-point system with an ℓ1 merit-function line search that keeps
the CCD cap, holds the joints to the α-methods' tolerance and projects v⁺ onto G v = 0
(:mod:`.implicit_joints`; always the generic path).

``implicit_euler`` on models of springs, gravity, contact planes and lagged friction with fixed or
moving pins, up to ``implicit_compiled.MAX_FREE_DOFS`` free DOFs and a direct solver ("auto",
"direct"), runs this same Newton solve compiled, one call per step (:mod:`.implicit_compiled`:
the same iterations, errors, ``stats`` and ``step_energies``; 2–12× faster on the contact
scenes it covers); ``COMPILED = False`` forces the generic path.
"""

from __future__ import annotations

import math

import numpy as np

from ..energies import drag
from ..errors import HookeInputError, SimulationError
from ..linalg import SparseSolver
from ..model import State
from .base import MAX_COUNT_OPTION, Integrator, register, state_on_joints
from .implicit_joints import ConstrainedNewton
from .implicit_compiled import (NO_DECREASE, NON_FINITE_SYSTEM, NOT_CONVERGED, CompiledNewton,
                                step_norm)


@register
class LinearlyImplicitEuler(Integrator):
    name = "implicit_euler_linear"
    stiffness_in_step_matrix = True
    order = 1
    summary = "linearly implicit Euler (seed 001): one sparse solve of (M − h²K) v⁺ = M v + h f"
    defaults = {"solver": "auto"}

    def check_options(self) -> None:
        self.linear_solver = SparseSolver(self.options["solver"])

    def step(self, state: State) -> State:
        system, h = self.system, self.dt
        matrix = system.combined_matrix(state.x, 1.0, h * h, h)
        # h f(x, v) + h D v = −h ∇U(x) + h C w: the damping and drag forces are exactly −D v at
        # these positions but for the wind's push C w, taken at t + h with the drag's −C v⁺.
        force = -system.potential_gradient(state.x)
        if system.has_drag:
            force += drag.coefficients(system.model)[:, None] * drag.wind(system.model, state.t + h)
        rhs = system.mass_free * system.free_vector(state.v) + h * system.free_vector(force)
        x_pins, v_pins = system.apply_pins(state.x.copy(), np.zeros_like(state.v), state.t + h)
        if system.has_moving_pins:
            # Known pinned velocities move to the right-hand side, b_f −= A_fp v̄_p, as the pins'
            # own step x_p(t + h) − x_p(t) = h v̄_p (0 on the free rows): the step is linearised
            # about where the pins go. With u̇(t + h) there, a displacement h·u̇ the pins never
            # make, a sinusoid of ω·h > π (A·ω·h against at most 2A) threw the free particles to
            # 1e146 m; the velocity they end the step with stays u̇(t + h) (new_state).
            pin_step = (x_pins - state.x) / h
            full = system.combined_matrix_full(state.x, 1.0, h * h, h)
            rhs -= system.free_vector((full @ pin_step.reshape(-1)).reshape(pin_step.shape))
        v = system.scatter_free(v_pins, self.linear_solver.solve(matrix, rhs))
        x = state.x + h * v
        self.stats["steps"] += 1
        return self.new_state(state.t + h, x, v)


ROUND_OFF = 64 * np.finfo(float).eps  # relative size of the noise in a computed energy
# A Newton solve that runs out of iterations counts as converging linearly when each of its last
# LINEAR_RUN residuals is at most LINEAR_RATIO times the one before.
LINEAR_RUN, LINEAR_RATIO = 6, 0.99


def linear_rate(residuals) -> float | None:
    """The largest ratio of successive residuals over the last ``LINEAR_RUN``, where every one
    is at most ``LINEAR_RATIO`` (a steady linear convergence), else None."""
    if len(residuals) <= LINEAR_RUN:
        return None
    tail = np.asarray(residuals[-LINEAR_RUN - 1:], dtype=float)
    if not np.all(np.isfinite(tail)) or np.any(tail[:-1] <= 0):
        return None
    rate = float(np.max(tail[1:] / tail[:-1]))
    return rate if rate <= LINEAR_RATIO else None


def inner(a: np.ndarray, b: np.ndarray) -> float:
    """a·b without BLAS: NumPy's ``a @ b`` and ``np.dot`` of two vectors of 19,200 entries (a
    cloth_sphere n = 80 step) call a threaded BLAS ddot that took 1.6–6.7 ms on the loaded
    2-core machine, against 10–20 µs for this sum; every energy evaluation took two of them."""
    return float(np.sum(a * b))


def norm(a: np.ndarray) -> float:
    """|a|₂ without BLAS (:func:`inner`)."""
    return float(np.sqrt(inner(a, a)))


# A bound on the Newton step certifies the stopping rule below CERTAIN × tol: the rule's own solve
# differs from the exact step by round-off, relatively far below 10 %.
CERTAIN = 0.9
# The lagged-factor certificate (ImplicitEuler._within_tol with a matrix) costs a substitution (a
# seventh of a factorisation and solve on W3), so it is tried only after a full step shorter than
# NEAR × tol, where Newton's quadratic convergence often makes the next one pass. Steps (× 1/h,
# tol 0.01) on the crumpled W3 cloth: 2.98, 0.101, 0.0059 (certified after 0.101); on a crumpled
# 12 × 12 cloth: 33.3, 0.536, 0.0079 (certified after 0.536) and 19.4, 0.450, 0.0103 (tried, not).
NEAR = 100.0
COMPILED = True  # False: always the generic path (the reference the compiled one matches)
NO_DECREASE_REASON = "the line search found no decrease"
NON_FINITE_ARRAY = "array must not contain infs or NaNs"  # SciPy's words, as on the generic path


@register
class ImplicitEuler(Integrator):
    name = "implicit_euler"
    stiffness_in_step_matrix = True
    order = 1
    supports_contact = True
    supports_joints = True
    summary = "backward Euler by Newton on the incremental potential, PSD-projected, with line search"
    defaults = {"tol": 1e-2, "norm": "max", "max_iterations": 100, "min_iterations": 1,
                "solver": "auto"}
    NORMS = ("max", "row_sum")

    @classmethod
    def least_tol(cls, model, dt: float) -> float:
        """ε·|x0|∞/dt: tol × dt is the longest Newton step accepted, and no step of positions of
        size |x0|∞ can be shown shorter than their spacing in float64, whatever the
        iterations."""
        return np.finfo(float).eps * float(np.max(np.abs(model.x0), initial=0.0)) / dt

    def check_options(self) -> None:
        scale = float(np.max(np.abs(self.system.model.x0), initial=0.0))
        self.tol = self.tolerance_option("tol", self.least_tol(self.system.model, self.dt),
                                         f"tol × dt, the Newton step it accepts, cannot be "
                                         f"shown below the round-off ε·|x|∞ of positions of "
                                         f"{scale:.3g} m at dt = {self.dt:g} s")
        norm = self.options["norm"]
        if norm not in self.NORMS:
            raise HookeInputError("norm", f"must be one of {', '.join(self.NORMS)} for integrator "
                                  "'implicit_euler'", norm)
        self.norm_group = self.system.dim if norm == "row_sum" else 1
        self.residual_name = "‖p‖∞/h" if norm == "max" else "the largest Σ|p_i|/h over particles"
        self.max_iterations = int(self.positive_option("max_iterations"))
        minimum = self.options["min_iterations"]
        if minimum not in (0, 1) or isinstance(minimum, bool):
            raise HookeInputError("min_iterations", "must be 0 (the book's rule) or 1", minimum)
        self.min_iterations = int(minimum)
        self.linear_solver = SparseSolver(self.options["solver"])

    def __init__(self, system, dt, /, **options):
        super().__init__(system, dt, **options)
        self.stats.update(newton_iterations=0, line_search_halvings=0)
        self.step_energies: list[float] = []
        self._kernel = CompiledNewton.build(self, ROUND_OFF) if COMPILED else None
        # Joints: Newton–KKT on the joints' manifold (:mod:`.implicit_joints`), always generic.
        self._joints = (ConstrainedNewton(self, ROUND_OFF) if system.joints is not None
                        else None)

    def consistent_start(self, state: State) -> State:
        """``state`` put on the joints where they do not hold to the step's joint tolerance
        (:func:`state_on_joints`): the first step would close the gap in one dt. Not where the
        projection, blind to contact, would leave a contact term's domain (a particle through
        a plane: the CCD cap of its move below 1): there the first step closes the gap, its
        Newton iterations capped as every step's are."""
        if self._joints is None:
            return state
        projected = state_on_joints(self.system.joints, state, self._joints.tolerance)
        if projected is not state and self.system.max_step(
                state.x, projected.x - state.x, self.system.terms_at(state.t)) < 1.0:
            return state
        return projected

    def incremental_potential(self, y: np.ndarray, x_tilde: np.ndarray, x_start: np.ndarray,
                              damping_matrix, terms=None, magnitude: bool = False) -> float:
        """E(y); with ``magnitude``, the sum of its parts' absolute values (each term of U on its
        own), the scale of E's round-off: the parts may cancel (a weight against the springs'
        energy) to an E far smaller than the noise in each of them."""
        system, h = self.system, self.dt
        dy = system.free_vector(y - x_tilde)
        value = 0.5 * inner(dy, system.mass_free * dy)
        if magnitude:
            value += h * h * sum(abs(term.value(system.model, y))
                                 for term in (system.terms if terms is None else terms))
        else:
            value += h * h * system.potential_energy(y, terms)
        if damping_matrix is not None:
            dx = self._damping_vector(y - x_start)
            value += 0.5 * h * inner(dx, damping_matrix @ dx)
        return value

    def _damping_matrix(self, x_start: np.ndarray):
        """D (spring damping and air drag's C) with its directions lagged at the step start
        (constant during the solve): on all DOFs when pins move, since a moving pin drags its
        neighbours through D's pin–free coupling; on the free DOFs otherwise (the pins'
        displacement is then zero). The wind's push is a step term (:mod:`..energies.drag`)."""
        system = self.system
        if not system.has_velocity_forces:
            return None
        if system.has_moving_pins:
            return system.combined_matrix_full(x_start, 0.0, 0.0, 1.0)
        return system.combined_matrix(x_start, 0.0, 0.0, 1.0)

    def _damping_vector(self, displacement: np.ndarray) -> np.ndarray:
        """The displacement on the DOFs of :meth:`_damping_matrix`."""
        if self.system.has_moving_pins:
            return displacement.reshape(-1)
        return self.system.free_vector(displacement)

    def _gradient(self, y, x_tilde, x_start, damping_matrix, terms=None) -> np.ndarray:
        system, h = self.system, self.dt
        grad = system.mass_free * system.free_vector(y - x_tilde)
        grad += h * h * system.free_vector(system.potential_gradient(y, terms))
        if damping_matrix is not None:
            drag = damping_matrix @ self._damping_vector(y - x_start)
            grad += h * (drag[system.free_dofs] if system.has_moving_pins else drag)
        return grad

    def _line_search(self, y, p, value, residual_norm, merit, residual, terms, magnitude):
        """Backtrack from the CCD-capped step until ``merit`` (E, or with joints E + ν|g|₁)
        does not increase. Within round-off of it (|Δ| ≤ ROUND_OFF × ``magnitude()``, the
        merit's scale at y, where differences carry no information) a step is taken when it
        reduces ``residual`` (a gradient norm) below ``residual_norm`` instead. A trial that
        leaves y as it is (α·p below the positions' spacing) is no step: it would pass as "no
        increase" for ever. (trial, its merit, its multiple of p), or None when no step
        qualifies."""
        alpha = self.system.max_step(y, p, terms)
        noise = None
        while alpha >= 1e-12:
            trial = y + alpha * p
            if np.array_equal(trial, y):
                return None
            trial_value = merit(trial)
            if trial_value <= value:
                return trial, trial_value, alpha
            if noise is None:
                noise = ROUND_OFF * magnitude()
            if trial_value - value <= noise and residual(trial) < residual_norm:
                return trial, trial_value, alpha
            alpha *= 0.5
            self.stats["line_search_halvings"] += 1
        return None

    def _not_converged(self, t: float, residuals: list[float], y: np.ndarray,
                       why: str = "") -> SimulationError:
        history = ", ".join(f"{r:.3e}" for r in residuals[-8:])
        return self.newton_failure(len(residuals) - 1, t, f"{why + '; ' if why else ''}"
                                   f"{self.residual_name}, last: {history}; tol = {self.tol:g}",
                                   self.newton_advice(residuals, y, ran_out=not why))

    def newton_advice(self, residuals, y: np.ndarray, ran_out: bool = False) -> str | None:
        """What to change when Newton stopped at ``residuals[-1]`` (the rule's ‖p‖/h) at ``y``:
        tol when that is round-off of the positions there (``ROUND_OFF``·|y|∞/h; they may have
        grown far past the |x0|∞ :meth:`check_options` holds tol to), which a smaller dt only
        raises; max_iterations when it ``ran_out`` of them while still converging at a steady
        linear rate (:func:`linear_rate`: a PSD-projected contact Hessian is not the exact one,
        and cloth_drop at tol 1e-9 went ×0.83 an iteration to 1.4e-9 in 100 iterations, where
        200 finished the run); else None (a smaller dt)."""
        residual = residuals[-1]
        floor = ROUND_OFF * float(np.max(np.abs(y), initial=0.0)) / self.dt
        if residual <= floor:
            return (f"Raise tol to at least {floor:.3g}: the last residual is round-off of the "
                    f"positions (|y|∞ = {np.max(np.abs(y)):.3g} m at dt = {self.dt:g} s), "
                    "which a smaller dt only raises.")
        rate = linear_rate(residuals)
        if ran_out and rate is not None:
            needed = self.max_iterations + math.ceil(math.log(self.tol / residual) / math.log(rate))
            if needed <= MAX_COUNT_OPTION:
                return (f"Raise max_iterations (now {self.max_iterations}; this step needs "
                        f"about {needed}) or tol: Newton was still converging, linearly "
                        f"(×{rate:.2f} an iteration at most over its last {LINEAR_RUN}).")
        return None

    @property
    def compiled(self) -> bool:
        """Whether the next step's Newton solve runs compiled (:mod:`.implicit_compiled`)."""
        return self._kernel is not None and self._kernel.usable(self.system)

    def step(self, state: State) -> State:
        system, h = self.system, self.dt
        x_tilde = state.x + h * state.v
        terms = system.step_terms(state, h)
        y = system.newton_start(state, h)
        if self._joints is not None:
            y = self._joints.solve(y, state, x_tilde, terms)
            v = self._joints.velocities(state, y)
        else:
            y = (self._newton_compiled if self.compiled else self._newton)(y, state, x_tilde, terms)
            v = (y - state.x) / h
        self.stats["steps"] += 1
        return self.new_state(state.t + h, y, v)

    def _newton_compiled(self, y, state, x_tilde, terms) -> np.ndarray:
        """:meth:`_newton` by :mod:`.implicit_compiled`, raising the same errors."""
        status, residuals, energies, iterations, halvings = self._kernel.solve(
            y, state.x, x_tilde, terms)
        self.step_energies = energies.tolist()
        self.stats["newton_iterations"] += iterations
        self.stats["line_search_halvings"] += halvings
        if status == NON_FINITE_SYSTEM:
            raise ValueError(NON_FINITE_ARRAY)
        if status == NOT_CONVERGED:
            raise self._not_converged(state.t, residuals.tolist(), y)
        if status == NO_DECREASE:
            raise self._not_converged(state.t, residuals.tolist(), y, NO_DECREASE_REASON)
        return y

    def _within_tol(self, grad: np.ndarray, terms, matrix=None) -> bool:
        """Whether the Newton step p = −H⁻¹g at this gradient certainly passes the stopping rule,
        known without factorising H. On springs and gravity H ⪰ M
        (:meth:`System.springs_and_gravity`), so ‖H⁻¹r‖₂ ≤ ‖r‖₂ / min M for any r, and the
        rule's norm of a vector is at most √group times its 2-norm. Without ``matrix``, before
        H is assembled: ‖p‖₂ ≤ ‖g‖₂ / min M. With ``matrix`` (H at y) and the solver holding
        the factor of an earlier iteration's H₀: q = −H₀⁻¹g by one substitution, and
        p = q − H⁻¹(H − H₀)q, so the rule's norm of p is at most q's plus
        √group ‖(H − H₀)q‖₂ / min M. Below ``CERTAIN`` × tol (a margin for the solve's
        round-off), the rule's own solve would stop here too, at the same y."""
        system = self.system
        if not system.springs_and_gravity(terms) or not grad.size:
            return False
        scale = np.sqrt(self.norm_group) / system.mass_free.min()
        if matrix is None:
            return scale * norm(grad) / self.dt < CERTAIN * self.tol
        lagged = self.linear_solver.resolve(matrix, grad)
        if lagged is None:
            return False
        old, q = lagged
        change = matrix.copy()
        change.data = matrix.data - old.data
        bound = step_norm(q, self.norm_group) + scale * norm(change @ q)
        return bound / self.dt < CERTAIN * self.tol

    def _newton(self, y, state, x_tilde, terms) -> np.ndarray:
        """Newton's iteration from y to the minimiser of the step's incremental potential."""
        system, h = self.system, self.dt
        x_start = state.x
        damping_matrix = self._damping_matrix(x_start)
        energy = self.incremental_potential(y, x_tilde, x_start, damping_matrix, terms)
        self.step_energies = [energy]
        residuals = []
        near = False  # whether the last step, taken in full, was short enough to try H₀'s factor
        for iteration in range(self.max_iterations + 1):
            grad = self._gradient(y, x_tilde, x_start, damping_matrix, terms)
            may_stop = iteration >= self.min_iterations
            if may_stop and self._within_tol(grad, terms):
                break
            matrix = system.combined_matrix(y, 1.0, h * h, h if damping_matrix is not None else 0.0,
                                            project_psd=True, terms=terms)
            if may_stop and near and self._within_tol(grad, terms, matrix):
                break
            p_free = -self.linear_solver.solve(matrix, grad)
            residual = step_norm(p_free, self.norm_group) / h
            residuals.append(residual)
            if residual < self.tol and may_stop:
                break
            if iteration == self.max_iterations:
                raise self._not_converged(state.t, residuals, y)
            p = system.scatter_free(np.zeros_like(y), p_free)
            found = self._line_search(
                y, p, energy, norm(grad),
                lambda trial: self.incremental_potential(trial, x_tilde, x_start, damping_matrix,
                                                         terms),
                lambda trial: norm(self._gradient(trial, x_tilde, x_start, damping_matrix,
                                                  terms)),
                terms,
                lambda: self.incremental_potential(y, x_tilde, x_start, damping_matrix, terms,
                                                   magnitude=True))
            if found is None:
                # No decrease left: y is the minimiser to working precision when the Newton step
                # is within tol or round-off; else (E not finite, say) the step failed.
                if (residual < self.tol
                        or np.max(np.abs(p_free), initial=0.0) <= ROUND_OFF * np.max(np.abs(y))):
                    break
                raise self._not_converged(state.t, residuals, y, NO_DECREASE_REASON)
            y, energy, alpha = found
            near = alpha == 1.0 and residual < NEAR * self.tol
            self.step_energies.append(energy)
            self.stats["newton_iterations"] += 1
        return y
