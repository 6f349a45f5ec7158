"""Adjoint of the α-methods (``newmark``, ``generalized_alpha``), with joints.

A step maps (x, v, a, ã) to (x⁺, v⁺, a⁺, ã⁺) (see :mod:`hooke.integrators.newmark`):
    s = (α_f a − α_m ã)/(1 − α_m),  ã⁺ = s + c a⁺,  c = (1 − α_f)/(1 − α_m),
    x⁺ = x_b + h²β ã⁺,  x_b = x + h v + h² (½ − β) ã,
    v⁺ = v_b + h γ ã⁺,  v_b = v + h (1 − γ) ã,
    R(a⁺) = M a⁺ − F(x⁺, v⁺) + G(x⁺)ᵀ T⁺ = 0 on the free rows, g(x⁺) = 0 for the joints
    (Newton's solution: the implicit function theorem, so the gradient is that of the exact
    step; ``tol`` 1e-10 by default), then v⁺ projected to G v⁺ = 0 (:mod:`.joints`).
With J = ∂R/∂a⁺ = M + c (h²β K + h γ D) (K = −∂F/∂x, not symmetric with damping; D = −∂F/∂v,
air drag's C included: F's wind is w(t⁺), a known function of time, :mod:`.forces`),
ρ = λa⁺ + c (h²β λx⁺ + h γ λv⁺ + λã⁺) and Jᵀ μ = ρ:
    Λx_b = λx⁺ − Kᵀ μ,  Λv_b = λv⁺ − Dᵀ μ,  Λs = h²β Λx_b + h γ Λv_b + λã⁺,
    λx = Λx_b,  λv = h Λx_b + Λv_b,
    λã = h² (½ − β) Λx_b + h (1 − γ) Λv_b − α_m/(1 − α_m) Λs,  λa = α_f/(1 − α_m) Λs,
    ∂/∂θ = ∂(μ·F)/∂θ − μ·(∂M/∂θ) a⁺,
and the pinned rows of −Kᵀμ go to x0 (x⁺ has its pins there). With joints the solve is the
transposed saddle point [[Jᵀ + c h²β Σ T_k ∇²g_k, c h²β Gᵀ], [G, 0]] [μ; ν] = [ρ; 0]; then
Λx_b also loses ∂_x(μ·GᵀT) + Gᵀν, ∂/∂L_k = ν_k, and λx⁺, λv⁺ first pass back through the
velocity projection. λa and λã live in this object between steps; at step 0 the consistent start
a₀ = ã₀ (M⁻¹F, less the joints' exact pull) passes λa + λã to the initial state and the
parameters, and then to the state given through its projection onto the joints
(:func:`.joints.start_projection_vjp`, always: a start on the joints perturbed is projected). A step the integrator split in two (Newton failing at dt) is
no longer one step of this map: such a run is refused.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..errors import SimulationError
from ..linalg import block_structure, pair_block_values, triplets_to_csr
from .base import AdjointStep, adjoint_of
from .forces import acceleration_vjp, damping_position_blocks, force_vjp
from .joints import JointGeometry, start_projection_vjp
from .spring_terms import SpringGeometry, differences


class AlphaAdjoint(AdjointStep):
    supports_joints = True

    def __init__(self, system, stepper):
        super().__init__(system, stepper)
        self.stepper = stepper
        self.joints = system.joints
        self.alpha_m, self.alpha_f = stepper.alpha_m, stepper.alpha_f
        self.beta, self.gamma = stepper.beta, stepper.gamma
        self.c = (1.0 - self.alpha_f) / (1.0 - self.alpha_m)
        self.lam_a = np.zeros_like(self.model.x0, dtype=float)
        self.lam_at = np.zeros_like(self.lam_a)

    def _consistent(self, state) -> np.ndarray:
        """a₀ at a state the integrator did not produce: M⁻¹F, less the joints' pull."""
        a = self.system.unconstrained_acceleration(state.x, state.v, state.t)
        if self.joints is not None:
            _, n = self.joints.geometry(state.x)
            tension = self.joints.tensions(state.x, state.v, a, state.t)
            a = a - self.system.inverse_mass * self.joints.transpose_times(n, tension)
        return a

    def _accelerations(self, state, checkpoint):
        """(a, ã) at ``state``: the integrator's memory, or the consistent start."""
        if checkpoint.get("remembered"):
            return checkpoint["acceleration"], checkpoint["acceleration_tilde"]
        a = self._consistent(state)
        return a, a

    def _jacobian(self, x, v, tension):
        """The transposed Newton matrix on the free DOFs (and the joints) at (x⁺, v⁺)."""
        system, model, h, c = self.system, self.model, self.h, self.c
        weight = c * h * h * self.beta
        matrix = system.combined_matrix(x, 1.0, weight, c * h * self.gamma)
        free = system.free_dofs
        if system.has_damping:
            geometry = SpringGeometry(model, x)
            blocks = damping_position_blocks(geometry, differences(model, v))
            rows, cols = block_structure(model.spring_indices, model.dim)
            full = triplets_to_csr(rows, cols, pair_block_values(blocks), model.n_dofs)
            matrix = matrix + weight * full[free][:, free]
        if self.joints is None:
            return matrix.T.tocsc()
        rows, cols = self.joints.geometric_hessian_structure()
        bending = triplets_to_csr(rows, cols, self.joints.geometric_hessian_values(x, tension),
                                  model.n_dofs)[free][:, free]
        jacobian = self.joints.jacobian(x)
        return sp.bmat([[(matrix + weight * bending).T, weight * jacobian.T],
                        [jacobian, None]], format="csc")

    def reverse(self, start, end, lam_x, lam_v, grads, carried):
        if self.stepper.stats.get("split_steps"):
            raise SimulationError(f"{self.integrator}: the run split a step (Newton failed at "
                                  "dt), which hooke.gradient does not differentiate; try a "
                                  "smaller dt")
        system, model, h, c = self.system, self.model, self.h, self.c
        beta, gamma, free = self.beta, self.gamma, self.free
        _, at_old = self._accelerations(start, carried[0])
        a_new, at_new = carried[1]["acceleration"], carried[1]["acceleration_tilde"]
        tension = carried[1]["step_tension"]
        x1 = end.x
        # v⁺ before the joints' velocity projection (what the Newton residual saw)
        v1 = (start.v + h * (1.0 - gamma) * at_old + h * gamma * at_new) * free
        lam_x = lam_x.copy()
        if self.joints is not None:
            geometry = JointGeometry(self.joints, x1)
            lam_v, by_x, by_m = geometry.projection_vjp(v1, lam_v)
            lam_v = lam_v * free
            lam_x += by_x
            grads["mass"] += by_m
        rho = (self.lam_a + c * (h * h * beta * lam_x + h * gamma * lam_v + self.lam_at)) * free
        rhs = system.free_vector(rho)
        count = 0 if self.joints is None else self.joints.count
        solution = np.atleast_1d(spla.spsolve(self._jacobian(x1, v1, tension),
                                              np.concatenate([rhs, np.zeros(count)])))
        mu = system.scatter_free(np.zeros_like(rho), solution[:rhs.size])
        along_x, along_v = force_vjp(model, x1, v1, end.t, mu, grads)  # −Kᵀμ, −Dᵀμ
        grads["mass"] -= np.einsum("na,na->n", mu, a_new)
        total_x = lam_x + along_x
        if self.joints is not None:
            nu = solution[rhs.size:]
            total_x -= geometry.bend(tension, mu) + geometry.transpose_times(nu)
            grads["joint_length"] += nu
        grads["pins"] += (1.0 - free) * total_x
        base_x, base_v = total_x * free, (lam_v + along_v) * free
        shift = h * h * beta * base_x + h * gamma * base_v + self.lam_at
        self.lam_at = (h * h * (0.5 - beta) * base_x + h * (1.0 - gamma) * base_v
                       - self.alpha_m / (1.0 - self.alpha_m) * shift) * free
        self.lam_a = self.alpha_f / (1.0 - self.alpha_m) * shift * free
        return base_x, h * base_x + base_v

    def finish(self, start, lam_x, lam_v, grads, carried):
        lam = self.lam_a + self.lam_at  # a₀ = ã₀
        lam_x, lam_v = lam_x.copy(), lam_v.copy()
        if self.joints is not None:
            a_u = self.system.unconstrained_acceleration(start.x, start.v, start.t)
            lam, by_x, by_v, by_m = JointGeometry(self.joints, start.x).start_vjp(start.v, a_u,
                                                                                    lam)
            lam_x += by_x
            lam_v += by_v
            grads["mass"] += by_m
        along_x, along_v = acceleration_vjp(self.system, start.x, start.v, start.t,
                                            lam * self.free, grads)
        return lam_x + along_x, lam_v + along_v


    def begin(self, given, start, lam_x, lam_v, grads):
        """Through the start put on the joints (a start on them too: the linearised projection
        gives the derivatives of starts perturbed off them, as finite differences see)."""
        if self.joints is None:
            return lam_x, lam_v
        lam_x, lam_v, by_length, by_mass = start_projection_vjp(self.joints, given.x, start.x,
                                                                given.v, lam_x, lam_v)
        grads["joint_length"] += by_length
        grads["mass"] += by_mass
        return lam_x, lam_v


@adjoint_of
class NewmarkAdjoint(AlphaAdjoint):
    integrator = "newmark"


@adjoint_of
class GeneralizedAlphaAdjoint(AlphaAdjoint):
    integrator = "generalized_alpha"
