"""Adjoint of ``symplectic_euler``: v⁺ = v + h M⁻¹ f(x, v), x⁺ = x + h v⁺ (free particles).

With μ = λv⁺ + h λx⁺ (the adjoint of v⁺, free rows) and u = h M⁻¹ μ (the adjoint of the force):
    λx = λx⁺ + ∂(uᵀf)/∂x = λx⁺ − H u + ∂_x[−Σ ψ(u, v)]
    λv = μ + ∂(uᵀf)/∂v   = μ − D u
with f = −∇U_spring + M g − Σ_s c_s (Δv·n) n, ψ the damping contraction of
:mod:`.spring_terms`. Parameters: ∂(uᵀf)/∂k = −Δu·∂g/∂k, ∂/∂l0 = −Δu·∂g/∂l0, ∂/∂c = −ψ/c,
∂/∂m_i = −u_i·(f_i − m_i g)/m_i (a = f/m + g), ∂/∂g = Σ m_i u_i.
"""

from __future__ import annotations

import numpy as np

from ..energies import damping, spring
from .base import AdjointStep, adjoint_of
from .spring_terms import SpringGeometry, differences, scatter


@adjoint_of
class SymplecticEulerAdjoint(AdjointStep):
    integrator = "symplectic_euler"

    def reverse(self, start, end, lam_x, lam_v, grads):
        model, h, x, v = self.model, self.h, start.x, start.v
        mu = (lam_v + h * lam_x) * self.free
        u = h * mu * self.system.inverse_mass  # inverse_mass is 0 on pinned particles
        geometry = SpringGeometry(model, x)
        du, dv = differences(model, u), differences(model, v)
        by_k, by_l0 = geometry.gradient_partials()
        grads["stiffness"] -= np.einsum("sa,sa->s", du, by_k)
        grads["rest_length"] -= np.einsum("sa,sa->s", du, by_l0)
        by_c, by_d = geometry.damping_partials(du, dv)
        grads["damping"] -= by_c
        new_x = lam_x - scatter(model, geometry.hessian_times(du)) - scatter(model, by_d)
        drag = (model.spring_damping * np.einsum("sa,sa->s", du, geometry.n))[:, None] * geometry.n
        new_v = mu - scatter(model, drag)
        other = -spring.gradient(model, x) + damping.force(model, x, v)  # f − M g
        grads["mass"] -= np.einsum("na,na->n", u, other) * self.system.inverse_mass[:, 0]
        grads["gravity"] += np.sum(model.mass[:, None] * u, axis=0)
        return new_x, new_v
