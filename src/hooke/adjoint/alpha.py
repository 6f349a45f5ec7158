"""Adjoint of the α-methods (``newmark``, ``generalized_alpha``) on models without joints.

A step maps (x, v, a, ã) to (x⁺, v⁺, a⁺, ã⁺) (see :mod:`hooke.integrators.newmark`):
    s = (α_f a − α_m ã)/(1 − α_m),  ã⁺ = s + c a⁺,  c = (1 − α_f)/(1 − α_m),
    x⁺ = x_b + h²β ã⁺,  x_b = x + h v + h² (½ − β) ã,
    v⁺ = v_b + h γ ã⁺,  v_b = v + h (1 − γ) ã,
    R(a⁺) = M a⁺ − F(x⁺, v⁺) = 0 on the free rows (Newton's solution: the implicit function
    theorem, so the gradient is that of the exact step; ``tol`` 1e-10 by default).
With J = ∂R/∂a⁺ = M + c (h²β K + h γ D) (K = −∂F/∂x, not symmetric with damping; D = −∂F/∂v),
ρ = λa⁺ + c (h²β λx⁺ + h γ λv⁺ + λã⁺) and Jᵀ μ = ρ:
    Λx_b = λx⁺ − Kᵀ μ,  Λv_b = λv⁺ − Dᵀ μ,  Λs = h²β Λx_b + h γ Λv_b + λã⁺,
    λx = Λx_b,  λv = h Λx_b + Λv_b,
    λã = h² (½ − β) Λx_b + h (1 − γ) Λv_b − α_m/(1 − α_m) Λs,  λa = α_f/(1 − α_m) Λs,
    ∂/∂θ = ∂(μ·F)/∂θ − μ·(∂M/∂θ) a⁺,
and the pinned rows of −Kᵀμ go to x0 (x⁺ has its pins there). λa and λã live in this object
between steps; at step 0, a₀ = ã₀ = M⁻¹F(x₀, v₀) (the consistent start) passes λa + λã to the
initial state and the parameters. A step the integrator split in two (Newton failing at dt) is
no longer one step of this map: such a run is refused.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse.linalg as spla

from ..errors import SimulationError
from ..linalg import block_structure, pair_block_values, triplets_to_csr
from .base import AdjointStep, adjoint_of
from .forces import acceleration_vjp, damping_position_blocks, force_vjp
from .spring_terms import SpringGeometry, differences


class AlphaAdjoint(AdjointStep):
    def __init__(self, system, stepper):
        super().__init__(system, stepper)
        self.stepper = stepper
        self.alpha_m, self.alpha_f = stepper.alpha_m, stepper.alpha_f
        self.beta, self.gamma = stepper.beta, stepper.gamma
        self.c = (1.0 - self.alpha_f) / (1.0 - self.alpha_m)
        self.lam_a = np.zeros_like(self.model.x0, dtype=float)
        self.lam_at = np.zeros_like(self.lam_a)

    def _accelerations(self, state, checkpoint):
        """(a, ã) at ``state``: the integrator's memory, or the consistent start."""
        if checkpoint.get("remembered"):
            return checkpoint["acceleration"], checkpoint["acceleration_tilde"]
        a = self.system.unconstrained_acceleration(state.x, state.v, state.t)
        return a, a

    def _jacobian(self, x, v) -> "np.ndarray":
        """J on the free DOFs at (x⁺, v⁺), as a sparse matrix."""
        system, model, h, c = self.system, self.model, self.h, self.c
        matrix = system.combined_matrix(x, 1.0, c * h * h * self.beta, c * h * self.gamma)
        if system.has_damping:
            geometry = SpringGeometry(model, x)
            blocks = damping_position_blocks(geometry, differences(model, v))
            rows, cols = block_structure(model.spring_indices, model.dim)
            full = triplets_to_csr(rows, cols, pair_block_values(blocks), model.n_dofs)
            free = system.free_dofs
            matrix = matrix + c * h * h * self.beta * full[free][:, free]
        return matrix

    def reverse(self, start, end, lam_x, lam_v, grads, carried):
        if self.stepper.stats.get("split_steps"):
            raise SimulationError(f"{self.integrator}: the run split a step (Newton failed at "
                                  "dt), which hooke.gradient does not differentiate; try a "
                                  "smaller dt")
        system, model, h, c = self.system, self.model, self.h, self.c
        beta, gamma, free = self.beta, self.gamma, self.free
        a_new = carried[1]["acceleration"]
        rho = (self.lam_a + c * (h * h * beta * lam_x + h * gamma * lam_v + self.lam_at)) * free
        solution = spla.spsolve(self._jacobian(end.x, end.v).T.tocsc(), system.free_vector(rho))
        mu = system.scatter_free(np.zeros_like(rho), np.atleast_1d(solution))
        along_x, along_v = force_vjp(model, end.x, end.v, mu, grads)  # −Kᵀμ, −Dᵀμ
        grads["mass"] -= np.einsum("na,na->n", mu, a_new)
        grads["pins"] += (1.0 - free) * along_x
        base_x, base_v = (lam_x + along_x) * free, (lam_v + along_v) * free
        shift = h * h * beta * base_x + h * gamma * base_v + self.lam_at
        self.lam_at = (h * h * (0.5 - beta) * base_x + h * (1.0 - gamma) * base_v
                       - self.alpha_m / (1.0 - self.alpha_m) * shift) * free
        self.lam_a = self.alpha_f / (1.0 - self.alpha_m) * shift * free
        return base_x, h * base_x + base_v

    def finish(self, start, lam_x, lam_v, grads, carried):
        along_x, along_v = acceleration_vjp(self.system, start.x, start.v,
                                            self.lam_a + self.lam_at, grads)
        return lam_x + along_x, lam_v + along_v


@adjoint_of
class NewmarkAdjoint(AlphaAdjoint):
    integrator = "newmark"


@adjoint_of
class GeneralizedAlphaAdjoint(AlphaAdjoint):
    integrator = "generalized_alpha"
