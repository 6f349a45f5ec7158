"""``implicit_euler`` with joints: the incremental potential minimised on the joints' manifold.

Each step solves

    min_y E(y)   subject to   g(y) = 0,

E the incremental potential of :mod:`.implicit` (inertia, h²·potentials at t + h — contact
barriers included —, lagged friction, h·damping) and g_k(y) = |y_j − y_i| − L_k the joints
(:mod:`hooke.constraints`). Its KKT conditions ∇E(y) + G(y)ᵀλ = 0, g(y) = 0 with λ = h²T are
backward Euler for M a = F − GᵀT with the joints as index-3 constraints (T the tensions [N]).

Newton–KKT (sequential quadratic programming): at an iterate y with tensions T,

    [ K + h² Σ_k max(T_k, 0) ∇²g_k   Gᵀ ] [ p  ]     [ ∇E ]
    [ G                              0  ] [ λ⁺ ] = − [ g  ],

K = M + h²∇²U + hD with every element block projected to PSD (``System.combined_matrix``), the
joints' curvature clamped the same way (:class:`hooke.saddle_point.BorderedMatrix`), so the
upper-left block is positive definite and p a descent direction of the merit function below;
then T = λ⁺/h². The first iteration starts from T = 0: its curvature term h²T/L is tiny
against the masses for any step the motion resolves ((ωh)² with ω² = T/(mL)), and the next
iterations have λ⁺, so nothing is carried from step to step (a resumed run needs no
checkpoint). The KKT matrix is solved by the integrator's ``solver`` (a direct one: CG and AMG,
which need a positive definite matrix, are replaced by "direct").

Line search: on the ℓ1 merit function φ(y) = E(y) + ν Σ_k |g_k(y)| with ν = 2 max|λ⁺| (never
lowered within a step), for which the KKT step is a descent direction whenever ν > max|λ⁺|
(Nocedal & Wright, Numerical Optimization, Thm 18.2): backtracking from the CCD cap
(``System.max_step``: the planes' and the surfaces' continuous collision detection) by halving
until φ does not increase (the shared :meth:`.implicit.ImplicitEuler._line_search`). Every trial
point lies on a segment the CCD cleared, so no particle reaches a plane and no surfaces
intersect, not even inside a Newton iteration; a trial outside the barrier's domain has φ = +∞
and is rejected. The constrained step leaves the manifold by O(|p|²/L); the next iteration
brings it back (Newton's quadratic convergence on g). No second-order correction: the Maratos
effect needs the constraints' curvature term to rival the objective's, ν|p|²/L against m|p|²,
i.e. (ωh)² ≈ 1 — steps that do not resolve the motion. ``step_energies`` holds φ at the start
and after each accepted iteration (each no larger than φ before it at that iteration's ν; ν may
grow between iterations).

Stopping: when the step's velocity ‖p‖∞/h < ``tol`` (implicit_euler's rule) *and* every joint is
within ``JOINT_TOL``·ℓ of its length (:data:`hooke.constraints.JOINT_TOL` = 1e-10, ℓ from
:func:`hooke.constraints.length_scale`), the α-methods' default ``tol``: the joints are kept to the tolerance
``newmark`` and ``generalized_alpha`` keep them to (or to position round-off, ``ROUND_OFF``·|y|∞,
where that is larger). When no step decreases φ, y is accepted if it is feasible and its step is
within ``tol`` or round-off; otherwise the step fails with the history of both residuals.

After the step: v⁺ = (y − x)/h with the pins' prescribed velocities, projected onto G(y) v = 0
(v − M⁻¹Gᵀ(G M⁻¹ Gᵀ)⁻¹G v, as the α-methods do): y is on the manifold but (y − x)/h has a
component O(h|v|²/L) across it, which would otherwise feed the next step's constraint residual.
The projection takes kinetic energy away (it is an M-orthogonal projection) on top of implicit
Euler's own damping; it changes v by O(h), so the method stays first order.
"""

from __future__ import annotations

import numpy as np

from ..constraints import JOINT_TOL, length_scale
from ..errors import SimulationError
from ..linalg import SparseSolver
from ..saddle_point import BorderedMatrix
from .implicit_compiled import step_norm

PENALTY_MARGIN = 2.0  # ν = PENALTY_MARGIN · max|λ⁺|: strictly above what descent needs


class ConstrainedNewton:
    """The Newton–KKT solve of one ``implicit_euler`` step with joints (module docstring)."""

    def __init__(self, integrator, round_off: float):
        self.integrator = integrator
        self.round_off = round_off
        system = integrator.system
        self.system = system
        self.joints = system.joints
        self.border = BorderedMatrix(system)
        method = integrator.options["solver"]
        self.solver = SparseSolver("direct" if method in ("cg", "amg") else method, indefinite=True)
        self.length = length_scale(system.model)
        self.tolerance = JOINT_TOL * self.length
        self.n_free = system.free_dofs.size

    def _lagrangian_gradient(self, grad: np.ndarray, y: np.ndarray, multiplier: np.ndarray):
        """∇E + Gᵀλ on the free DOFs, given ∇E there."""
        n = self.joints.geometry(y)[1]
        return grad + self.system.free_vector(self.joints.transpose_times(n, multiplier))

    def _failure(self, t: float, residuals, violations, y: np.ndarray, feasible: bool,
                 why: str = "") -> SimulationError:
        """The Newton failure at ``y``: tol named as the cause when the joints hold there
        (``feasible``) and the step is round-off (:meth:`ImplicitEuler.newton_advice`)."""
        it = self.integrator
        history = ", ".join(f"({r:.3e}, {g:.3e})" for r, g in zip(residuals[-6:], violations[-6:]))
        return it.newton_failure(len(residuals) - 1, t, f"{why + '; ' if why else ''}last "
                                 f"({it.residual_name}, max |g| [m]): {history}; tol = {it.tol:g}, "
                                 f"joints within {self.tolerance:.3g} m",
                                 it.newton_advice(residuals if feasible else [np.inf], y))

    def solve(self, y: np.ndarray, state, x_tilde: np.ndarray, terms) -> np.ndarray:
        """Newton–KKT from y (the Newton start) to the constrained minimiser of the step."""
        it, system, joints, h = self.integrator, self.system, self.joints, self.integrator.dt
        x_start = state.x
        damping_matrix = it._damping_matrix(x_start)
        damping_weight = h if damping_matrix is not None else 0.0
        last = {}  # E and g of the last merit evaluation: the accepted trial's, after a search

        def merit(trial: np.ndarray) -> float:
            last["energy"] = it.incremental_potential(trial, x_tilde, x_start, damping_matrix, terms)
            last["g"] = joints.values(trial)
            return last["energy"] + penalty * float(np.sum(np.abs(last["g"])))

        def residual(trial: np.ndarray, grad: np.ndarray | None = None) -> float:
            """‖∇E + Gᵀλ⁺‖ + ν|g|₁/ℓ: the KKT residual in the gradient's units."""
            if grad is None:
                grad = it._gradient(trial, x_tilde, x_start, damping_matrix, terms)
            lagrangian = self._lagrangian_gradient(grad, trial, multiplier)
            return (float(np.linalg.norm(lagrangian))
                    + penalty * float(np.sum(np.abs(joints.values(trial)))) / self.length)

        penalty = 0.0
        tension = np.zeros(joints.count)
        value = merit(y)
        energy, g = last["energy"], last["g"]
        it.step_energies = [value]
        residuals, violations = [], []
        for iteration in range(it.max_iterations + 1):
            matrix = system.combined_matrix(y, 1.0, h * h, damping_weight, project_psd=True,
                                            terms=terms)
            kkt = self.border.assemble(matrix, y, tension, h * h, project_psd=True)
            grad = it._gradient(y, x_tilde, x_start, damping_matrix, terms)
            solution = self.solver.solve(kkt, -np.concatenate([grad, g]))
            p_free, multiplier = solution[: self.n_free], solution[self.n_free:]
            step = step_norm(p_free, it.norm_group) / h
            violation = float(np.max(np.abs(g), initial=0.0))
            residuals.append(step)
            violations.append(violation)
            scale = float(np.max(np.abs(y), initial=0.0))
            feasible = violation <= max(self.tolerance, self.round_off * scale)
            if step < it.tol and feasible and iteration >= it.min_iterations:
                break
            if iteration == it.max_iterations:
                raise self._failure(state.t, residuals, violations, y, feasible)
            if not np.all(np.isfinite(solution)):  # a singular KKT matrix: name the joints
                raise joints.singular_error(joints.normal_matrix(joints.geometry(y)[1]), state.t)
            tension = multiplier / (h * h)
            penalty = max(penalty, PENALTY_MARGIN * float(np.max(np.abs(multiplier), initial=0.0)))
            value = energy + penalty * float(np.sum(np.abs(g)))
            p = system.scatter_free(np.zeros_like(y), p_free)
            found = it._line_search(
                y, p, value, residual(y, grad), merit, residual, terms,
                lambda: (it.incremental_potential(y, x_tilde, x_start, damping_matrix, terms,
                                                  magnitude=True)
                         + penalty * float(np.sum(np.abs(g)))))
            if found is None:
                # No decrease left: y is the constrained minimiser to working precision when it
                # is feasible and its step within tol or round-off; else the step failed.
                if feasible and (step < it.tol or np.max(np.abs(p_free), initial=0.0)
                                 <= self.round_off * scale):
                    break
                raise self._failure(state.t, residuals, violations, y, feasible, "the line search "
                                    "found no decrease")
            y, value, _ = found
            energy, g = last["energy"], last["g"]
            it.step_energies.append(value)
            it.stats["newton_iterations"] += 1
        return y

    def velocities(self, state, y: np.ndarray) -> np.ndarray:
        """v⁺ = (y − x)/h, pins at their prescribed velocity, projected onto G(y) v = 0."""
        h, t_next = self.integrator.dt, state.t + self.integrator.dt
        v = (y - state.x) / h
        self.system.apply_pins(y, v, t_next)
        return self.joints.project_velocities(y, v, t_next)
