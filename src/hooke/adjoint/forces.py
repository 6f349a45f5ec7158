"""Vector–Jacobian products of the force F(x, v, t) = −∇U_spring(x) + M g − Σ_s c_s (Δv·n) n
− C (v − w(t)) (air drag towards the wind, :mod:`hooke.energies.drag`) and of the acceleration
a = M⁻¹F (free particles), shared by the explicit step, the α-methods' step and their consistent
start, and the air drag's share alone for the implicit steps and the compiled explicit one.

Contract: :func:`force_vjp` returns (∂(u·F)/∂x, ∂(u·F)/∂v) for a vector u on the particles and
adds ∂(u·F)/∂θ to ``grads`` (F's own dependence on the parameters: spring partials, ψ's ∂/∂c,
∂/∂m_i = u_i·g, ∂/∂g = Σ m_i u_i, and the air's below). :func:`acceleration_vjp` does the same
for λ·a with a = M⁻¹F on free particles (u = M⁻¹λ, and a's 1/m adds ∂/∂m_i = −u_i·F_i/m_i).
:func:`air_vjp` is the air drag's share of :func:`force_vjp`: ∂(u·F_air)/∂v = −C u (F_air does
not depend on x; the wind is a known function of t, so the time a step evaluates it at is all
it needs), ∂/∂c_i = −u_i·(v_i − w(t)), ∂/∂w = Σ c_i u_i (w: the steady wind, to which the air's
motion adds); a model with a drag array (even of zeros: the derivative at c = 0) gets them,
one without air nothing. :func:`air_acceleration_vjp` is its share of :func:`acceleration_vjp`.
:func:`damping_position_blocks` gives the blocks of −∂F_damping/∂x, which is not symmetric:
for spring s, B = c [n (PΔv)ᵀ + (Δv·n) P] / L on the pattern [[B, −B], [−B, B]].
"""

from __future__ import annotations

import numpy as np

from ..energies import damping, drag, spring
from .spring_terms import SpringGeometry, differences, scatter


def force_vjp(model, x: np.ndarray, v: np.ndarray, t: float, u: np.ndarray,
              grads: dict) -> tuple[np.ndarray, np.ndarray]:
    along_x, along_v = spring_force_vjp(model, x, v, u, grads)
    return along_x, along_v + air_vjp(model, v, t, u, grads)


def spring_force_vjp(model, x: np.ndarray, v: np.ndarray, u: np.ndarray,
                     grads: dict) -> tuple[np.ndarray, np.ndarray]:
    """:func:`force_vjp` without the air drag (springs, their dashpots and gravity)."""
    geometry = SpringGeometry(model, x)
    du, dv = differences(model, u), differences(model, v)
    by_k, by_l0 = geometry.gradient_partials()
    grads["stiffness"] -= np.einsum("sa,sa->s", du, by_k)
    grads["rest_length"] -= np.einsum("sa,sa->s", du, by_l0)
    by_c, by_d = geometry.damping_partials(du, dv)
    grads["damping"] -= by_c
    grads["mass"] += u @ model.gravity
    grads["gravity"] += model.mass @ u
    along_x = -scatter(model, geometry.hessian_times(du) + by_d)
    dashpots = (model.spring_damping * np.einsum("sa,sa->s", du, geometry.n))[:, None] * geometry.n
    return along_x, -scatter(model, dashpots)


def air_vjp(model, v: np.ndarray, t: float, u: np.ndarray, grads: dict):
    """∂(u·F_air)/∂v = −C u of the air drag at (v, t), its parameters' partials added to
    ``grads``; 0.0 without air (module docstring)."""
    if not model.drag.size:
        return 0.0
    grads["drag"] -= np.einsum("na,na->n", u, v - drag.wind(model, t))
    if model.wind.size:
        grads["wind"] += model.drag @ u
    return -model.drag[:, None] * u


def acceleration_vjp(system, x: np.ndarray, v: np.ndarray, t: float, lam_a: np.ndarray,
                     grads: dict) -> tuple[np.ndarray, np.ndarray]:
    model = system.model
    u = lam_a * system.inverse_mass  # inverse_mass is 0 on pinned particles
    along_x, along_v = spring_force_vjp(model, x, v, u, grads)
    force = -spring.gradient(model, x) + damping.force(model, x, v) + model.mass[:, None] * model.gravity
    grads["mass"] -= np.einsum("na,na->n", u, force) * system.inverse_mass[:, 0]
    return along_x, along_v + air_acceleration_vjp(system, v, t, lam_a, grads)


def air_acceleration_vjp(system, v: np.ndarray, t: float, lam_a: np.ndarray, grads: dict):
    """The air drag's share of :func:`acceleration_vjp`: ∂(λ·M⁻¹F_air)/∂v, with its partials
    (the 1/m one included); 0.0 without air."""
    model = system.model
    if not model.drag.size:
        return 0.0
    u = lam_a * system.inverse_mass
    by_mass = np.einsum("na,na->n", u, drag.force(model, v, t)) * system.inverse_mass[:, 0]
    grads["mass"] -= by_mass
    return air_vjp(model, v, t, u, grads)


def damping_position_blocks(geometry: SpringGeometry, dv: np.ndarray) -> np.ndarray:
    """(s, d, d) B = −∂f_j/∂d of every spring's damping force f_j = −c (Δv·n) n."""
    n, c = geometry.n, geometry.model.spring_damping
    vn = np.einsum("sa,sa->s", dv, n)
    normal_part = dv - vn[:, None] * n  # P Δv
    eye = np.eye(n.shape[1])[None]
    projector = eye - n[:, :, None] * n[:, None, :]
    scale = (c * geometry.inverse_length)[:, None, None]
    return scale * (n[:, :, None] * normal_part[:, None, :] + vn[:, None, None] * projector)
