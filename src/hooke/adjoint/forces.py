"""Vector–Jacobian products of the force F(x, v) = −∇U_spring(x) + M g − Σ_s c_s (Δv·n) n and of
the acceleration a = M⁻¹F (free particles), shared by the explicit step, the α-methods' step and
their consistent start.

Contract: :func:`force_vjp` returns (∂(u·F)/∂x, ∂(u·F)/∂v) for a vector u on the particles and
adds ∂(u·F)/∂θ to ``grads`` (F's own dependence on the parameters: spring partials, ψ's ∂/∂c,
∂/∂m_i = u_i·g, ∂/∂g = Σ m_i u_i). :func:`acceleration_vjp` does the same for λ·a with
a = M⁻¹F on free particles (u = M⁻¹λ, and a's 1/m adds ∂/∂m_i = −u_i·F_i/m_i).
:func:`damping_position_blocks` gives the blocks of −∂F_damping/∂x, which is not symmetric:
for spring s, B = c [n (PΔv)ᵀ + (Δv·n) P] / L on the pattern [[B, −B], [−B, B]].
"""

from __future__ import annotations

import numpy as np

from ..energies import damping, spring
from .spring_terms import SpringGeometry, differences, scatter


def force_vjp(model, x: np.ndarray, v: np.ndarray, u: np.ndarray, grads: dict,
              geometry: SpringGeometry | None = None) -> tuple[np.ndarray, np.ndarray]:
    geometry = SpringGeometry(model, x) if geometry is None else geometry
    du, dv = differences(model, u), differences(model, v)
    by_k, by_l0 = geometry.gradient_partials()
    grads["stiffness"] -= np.einsum("sa,sa->s", du, by_k)
    grads["rest_length"] -= np.einsum("sa,sa->s", du, by_l0)
    by_c, by_d = geometry.damping_partials(du, dv)
    grads["damping"] -= by_c
    grads["mass"] += u @ model.gravity
    grads["gravity"] += model.mass @ u
    along_x = -scatter(model, geometry.hessian_times(du) + by_d)
    drag = (model.spring_damping * np.einsum("sa,sa->s", du, geometry.n))[:, None] * geometry.n
    return along_x, -scatter(model, drag)


def acceleration_vjp(system, x: np.ndarray, v: np.ndarray, lam_a: np.ndarray,
                     grads: dict) -> tuple[np.ndarray, np.ndarray]:
    model = system.model
    u = lam_a * system.inverse_mass  # inverse_mass is 0 on pinned particles
    along_x, along_v = force_vjp(model, x, v, u, grads)
    force = -spring.gradient(model, x) + damping.force(model, x, v) + model.mass[:, None] * model.gravity
    grads["mass"] -= np.einsum("na,na->n", u, force) * system.inverse_mass[:, 0]
    return along_x, along_v


def damping_position_blocks(geometry: SpringGeometry, dv: np.ndarray) -> np.ndarray:
    """(s, d, d) B = −∂f_j/∂d of every spring's damping force f_j = −c (Δv·n) n."""
    n, c = geometry.n, geometry.model.spring_damping
    vn = np.einsum("sa,sa->s", dv, n)
    normal_part = dv - vn[:, None] * n  # P Δv
    eye = np.eye(n.shape[1])[None]
    projector = eye - n[:, :, None] * n[:, None, :]
    scale = (c * geometry.inverse_length)[:, None, None]
    return scale * (n[:, :, None] * normal_part[:, None, :] + vn[:, None, None] * projector)
