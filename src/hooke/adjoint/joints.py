"""Derivatives of the joint terms the α-methods' adjoint needs (joints g_k = |d_k| − L_k).

Notation: G the joint Jacobian (G u)_k = n_k·Δu_k, W = M⁻¹ (0 on pinned particles),
S = G W Gᵀ, P_k = I − n_k n_kᵀ, ℓ_k = |d_k|. For m-vectors α and particle vectors β,
``bend(α, β)`` = ∂_x Σ_k α_k n_k·Δβ_k = Σ_k α_k P_k Δβ_k / ℓ_k on j (− on i): the derivative of
αᵀ G(x) β, from which every derivative of G, S and Gᵀ T below is made.

Velocity projection v_p = v − W Gᵀ p, p = S⁻¹ G v (after each α step). For λ = ∂L/∂v_p and
q = S⁻¹ G W λ:
    ∂/∂v = λ − Gᵀ q
    ∂/∂x = −[bend(p, Wλ) + bend(q, v) − bend(q, W Gᵀ p) − bend(p, W Gᵀ q)]
    ∂/∂m_i = [(Gᵀp)_i·λ_i − (Gᵀq)_i·(Gᵀp)_i] / m_i²
Consistent start a₀ = a_u − W Gᵀ T, S T = G a_u + κ, κ_k = (|w_k|² − (n_k·w_k)²)/ℓ_k, w = Δv
(g̈ = 0, :func:`hooke.constraints._tension_rhs`). For λ = ∂L/∂a₀ and q = S⁻¹ G W λ:
    ∂/∂a_u = λ − Gᵀ q
    ∂/∂x = −[bend(T, Wλ) + bend(q, a_u) + ∂_x(q·κ) − bend(q, W Gᵀ T) − bend(T, W Gᵀ q)]
    ∂/∂v = −∂_v(q·κ),   ∂/∂m_i = [(GᵀT)_i·λ_i − (Gᵀq)_i·(GᵀT)_i] / m_i²
with ∂κ_k/∂w = 2 P_k w / ℓ_k and ∂κ_k/∂d = (3 s² n − |w|² n − 2 s w)/ℓ², s = n·w.

Start put on the joints (:func:`hooke.constraints.start_on_joints`): x_p = x − W G₀ᵀ μ with
g(x_p) = 0 (the projection's steps keep the directions of x: G₀ = G(x)), then v_p, the velocity
projection of v at x_p. With G_p = G(x_p), C = G_p W G₀ᵀ, B₀ u = bend₀(μ, u) and, for λ = ∂L/∂x_p
(the velocity projection's ∂/∂x at x_p added), q = C⁻ᵀ G₀ W λ and ρ = λ − G_pᵀ q:
    ∂/∂x = ρ − bend₀(μ, Wρ),   ∂/∂L = q,   ∂/∂m_i = ρ_i·(G₀ᵀμ)_i / m_i²
(at a start on the joints μ = 0, G_p = G₀: ∂/∂x = λ − Gᵀ S⁻¹ G W λ, the linearised projection).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..constraints import JointSet
from ..errors import SimulationError


class JointGeometry:
    def __init__(self, joints: JointSet, x: np.ndarray):
        self.joints = joints
        self.length, self.n = joints.geometry(x)
        self.solve = joints.factor_normal(self.n)
        self.inverse_mass = joints.inverse_mass[:, None]

    def _delta(self, u: np.ndarray) -> np.ndarray:
        return u[self.joints.j] - u[self.joints.i]

    def times(self, u: np.ndarray) -> np.ndarray:
        """G u, (m,)."""
        return np.einsum("ka,ka->k", self._delta(u), self.n)

    def transpose_times(self, s: np.ndarray) -> np.ndarray:
        return self.joints.transpose_times(self.n, s)

    def _scatter(self, per_joint: np.ndarray) -> np.ndarray:
        out = np.zeros((self.joints.model.n_particles, self.joints.dim))
        np.add.at(out, self.joints.j, per_joint)
        np.subtract.at(out, self.joints.i, per_joint)
        return out

    def bend(self, alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
        """∂_x of αᵀ G(x) β."""
        delta = self._delta(beta)
        along = np.einsum("ka,ka->k", delta, self.n)
        projected = delta - along[:, None] * self.n
        return self._scatter((alpha / self.length)[:, None] * projected)

    def _mass_partial(self, lam, multipliers, q) -> np.ndarray:
        pull, back = self.transpose_times(multipliers), self.transpose_times(q)
        inverse = self.inverse_mass[:, 0]
        return (np.einsum("na,na->n", pull, lam) - np.einsum("na,na->n", back, pull)) * inverse ** 2

    def projection_vjp(self, v: np.ndarray, lam: np.ndarray):
        """(∂/∂v, ∂/∂x, ∂/∂m) of λ·v_p (see the module docstring)."""
        w_lam = self.inverse_mass * lam
        p, q = self.solve(self.times(v)), self.solve(self.times(w_lam))
        by_x = -(self.bend(p, w_lam) + self.bend(q, v)
                 - self.bend(q, self.inverse_mass * self.transpose_times(p))
                 - self.bend(p, self.inverse_mass * self.transpose_times(q)))
        return lam - self.transpose_times(q), by_x, self._mass_partial(lam, p, q)

    def start_vjp(self, v: np.ndarray, a_u: np.ndarray, lam: np.ndarray):
        """(∂/∂a_u, ∂/∂x, ∂/∂v, ∂/∂m) of λ·a₀ at the consistent start (module docstring)."""
        w = self._delta(v)
        s = np.einsum("ka,ka->k", w, self.n)
        speed2 = np.einsum("ka,ka->k", w, w)
        kappa = (speed2 - s * s) / self.length
        tension = self.solve(self.times(a_u) + kappa)
        w_lam = self.inverse_mass * lam
        q = self.solve(self.times(w_lam))
        by_d = ((3 * s * s - speed2)[:, None] * self.n - 2 * s[:, None] * w) / self.length[:, None] ** 2
        by_w = 2 * (w - s[:, None] * self.n) / self.length[:, None]
        by_x = -(self.bend(tension, w_lam) + self.bend(q, a_u) + self._scatter(q[:, None] * by_d)
                 - self.bend(q, self.inverse_mass * self.transpose_times(tension))
                 - self.bend(tension, self.inverse_mass * self.transpose_times(q)))
        by_v = -self._scatter(q[:, None] * by_w)
        return (lam - self.transpose_times(q), by_x, by_v,
                self._mass_partial(lam, tension, q))


def _full_jacobian(joints: JointSet, n: np.ndarray) -> sp.csr_matrix:
    """G (m × every DOF) at directions n."""
    rows, cols = joints.jacobian_structure
    return sp.csr_matrix((joints.jacobian_values(n), (rows, cols)),
                         shape=(joints.count, joints.model.n_dofs))


def start_projection_vjp(joints: JointSet, x: np.ndarray, x_p: np.ndarray, v: np.ndarray,
                         lam_x: np.ndarray, lam_v: np.ndarray):
    """(∂/∂x, ∂/∂v, ∂/∂L, ∂/∂m) of λx·x_p + λv·v_p, (x_p, v_p) the start (x, v) put on the
    joints (module docstring); (x_p = x where the start was on them)."""
    at_p, at_x = JointGeometry(joints, x_p), JointGeometry(joints, x)
    lam_v, by_x, by_m = at_p.projection_vjp(v, lam_v)
    lam = lam_x + by_x
    offset = x - x_p
    mu = at_x.solve(at_x.times(offset))
    pull = at_x.transpose_times(mu)
    if np.max(np.abs(offset - at_x.inverse_mass * pull)) > 1e-8 * np.max(np.abs(offset)):
        raise SimulationError("gradient: the start is so far off the joints that their "
                              "projection turned its directions on the way, which hooke.gradient "
                              "does not differentiate; give joint lengths nearer the distances")
    weights = np.repeat(at_x.inverse_mass[:, 0], joints.dim)
    g_x, g_p = _full_jacobian(joints, at_x.n), _full_jacobian(joints, at_p.n)
    transposed = (g_x @ sp.diags(weights) @ g_p.T).tocsc()
    q = np.atleast_1d(spla.spsolve(transposed, g_x @ (weights * lam.reshape(-1))))
    rho = lam - at_p.transpose_times(q)
    by_x = rho - at_x.bend(mu, at_x.inverse_mass * rho)
    by_m = by_m + np.einsum("na,na->n", rho, pull) * at_x.inverse_mass[:, 0] ** 2
    return by_x, lam_v, q, by_m
