"""Derivatives of the spring and damping terms that the adjoint steps need beyond value, gradient
and Hessian: partials with respect to the parameters, and the Hessian's derivative contracted
with two vectors. Every function works on all springs at once and returns per-spring arrays.

Notation per spring s (endpoints i, j): d = x_j − x_i, L = |d|, n = d/L, P = I − n nᵀ, stiffness
k, rest length l0, damping c; for vectors u, w on the particles Δu = u_j − u_i. g = ∂E/∂d and
A = ∂²E/∂d² (the local Hessian of :func:`hooke.energies.spring.local_hessians`).

Hookean E = ½ k (L − l0)²  (g = k (1 − l0/L) d,  A = k I − k l0 P / L):
    ∂g/∂k  = (1 − l0/L) d                    ∂g/∂l0 = −k n
    ∂(uᵀAw)/∂k  = uᵀAw / k                   ∂(uᵀAw)/∂l0 = −k uᵀPw / L
    ∂(uᵀAw)/∂d  = k l0 / L² [(u·w) n + (w·n) u + (u·n) w − 3 (u·n)(w·n) n]
  (with l0 = 0, A = k I: the last two vanish; at L = 0 every term with n is taken as 0, as the
  energy module does.)
Squared length E = ½ k l0² (L²/l0² − 1)²  (ρ = L²/l0², g = 2k (ρ − 1) d,
A = 2k [(ρ − 1) I + 2 d dᵀ / l0²]):
    ∂g/∂k  = 2 (ρ − 1) d                     ∂g/∂l0 = −4k L² d / l0³
    ∂(uᵀAw)/∂k  = uᵀAw / k                   ∂(uᵀAw)/∂l0 = −4k [L² (u·w) + 2 (u·d)(w·d)] / l0³
    ∂(uᵀAw)/∂d  = 4k / l0² [(u·w) d + (w·d) u + (u·d) w]
Damping, per spring ψ(u, w) = c (Δu·n)(Δw·n) (= ΔuᵀD_sΔw, D's block c n nᵀ):
    ∂ψ/∂c = (Δu·n)(Δw·n)                     ∂ψ/∂d = c [(Δw·n) P Δu + (Δu·n) P Δw] / L
The damping force on j is −c (Δv·n) n, so its contraction with u is −ψ(u, v).
"""

from __future__ import annotations

import numpy as np

from ..energies import spring


def differences(model, a: np.ndarray) -> np.ndarray:
    """(s, d) a_j − a_i of every spring."""
    i, j = model.spring_indices.T
    return a[j] - a[i]


def scatter(model, per_spring: np.ndarray) -> np.ndarray:
    """(n, d) Σ over springs of +per_spring at j and −per_spring at i: the gradient with respect
    to the particles of a function of the springs' d."""
    i, j = model.spring_indices.T
    out = np.zeros((model.n_particles, model.dim))
    for axis in range(model.dim):
        out[:, axis] += np.bincount(j, per_spring[:, axis], minlength=model.n_particles)
        out[:, axis] -= np.bincount(i, per_spring[:, axis], minlength=model.n_particles)
    return out


class SpringGeometry:
    """The springs' d, L, n at positions x, computed once for the contractions below."""

    def __init__(self, model, x: np.ndarray):
        self.model = model
        self.x = x
        self.d = differences(model, x)
        self.length = np.linalg.norm(self.d, axis=1)
        positive = self.length > 0
        self.inverse_length = np.divide(1.0, self.length, out=np.zeros_like(self.length),
                                        where=positive)
        self.n = self.d * self.inverse_length[:, None]
        self.k = model.spring_stiffness
        self.l0 = model.spring_rest_length
        self.squared = model.spring_energy == "squared_length"
        # A is linear in k in every branch of the energy module: A = k · A(k = 1).
        self.unit_hessians = spring.local_hessians(model, x, stiffness=np.ones(model.n_springs))

    def energy_partials(self) -> tuple[np.ndarray, np.ndarray]:
        """(∂E/∂k, ∂E/∂l0), each (s,): E/k, and −k (L − l0) (Hookean) or −k (L⁴ − l0⁴)/l0³
        (squared length)."""
        length, l0 = self.length, self.l0
        if self.squared:
            return (0.5 * (length ** 2 - l0 ** 2) ** 2 / l0 ** 2,
                    -self.k * (length ** 4 - l0 ** 4) / l0 ** 3)
        return 0.5 * (length - l0) ** 2, -self.k * (length - l0)

    def gradient_partials(self) -> tuple[np.ndarray, np.ndarray]:
        """(∂g/∂k, ∂g/∂l0), each (s, d)."""
        d, k, l0 = self.d, self.k[:, None], self.l0[:, None]
        if self.squared:
            ratio = (self.length ** 2)[:, None] / l0 ** 2
            return 2.0 * (ratio - 1.0) * d, -4.0 * k * (self.length ** 2)[:, None] * d / l0 ** 3
        stretch = np.where(self.length > 0, 1.0 - self.l0 * self.inverse_length, 0.0)
        return stretch[:, None] * d, -k * self.n

    def hessian_times(self, du: np.ndarray) -> np.ndarray:
        """(s, d) A Δu per spring."""
        return self.k[:, None] * np.einsum("sab,sb->sa", self.unit_hessians, du)

    def hessian_partials(self, du: np.ndarray, dw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(∂(ΔuᵀAΔw)/∂k, ∂(ΔuᵀAΔw)/∂l0), each (s,)."""
        uw = np.einsum("sa,sa->s", du, dw)
        by_k = np.einsum("sa,sab,sb->s", du, self.unit_hessians, dw)
        if self.squared:
            ud, wd = np.einsum("sa,sa->s", du, self.d), np.einsum("sa,sa->s", dw, self.d)
            return by_k, -4.0 * self.k * (self.length ** 2 * uw + 2.0 * ud * wd) / self.l0 ** 3
        un, wn = np.einsum("sa,sa->s", du, self.n), np.einsum("sa,sa->s", dw, self.n)
        return by_k, -self.k * (uw - un * wn) * self.inverse_length

    def hessian_derivative(self, du: np.ndarray, dw: np.ndarray) -> np.ndarray:
        """(s, d) ∂(ΔuᵀAΔw)/∂d: the third derivative of E contracted twice."""
        uw = np.einsum("sa,sa->s", du, dw)[:, None]
        if self.squared:
            ud = np.einsum("sa,sa->s", du, self.d)[:, None]
            wd = np.einsum("sa,sa->s", dw, self.d)[:, None]
            return (4.0 * self.k / self.l0 ** 2)[:, None] * (uw * self.d + wd * du + ud * dw)
        un = np.einsum("sa,sa->s", du, self.n)[:, None]
        wn = np.einsum("sa,sa->s", dw, self.n)[:, None]
        scale = (self.k * self.l0 * self.inverse_length ** 2)[:, None]
        return scale * (uw * self.n + wn * du + un * dw - 3.0 * un * wn * self.n)

    def damping_partials(self, du: np.ndarray, dw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(∂ψ/∂c (s,), ∂ψ/∂d (s, d)) of ψ = c (Δu·n)(Δw·n)."""
        un = np.einsum("sa,sa->s", du, self.n)
        wn = np.einsum("sa,sa->s", dw, self.n)
        c = self.model.spring_damping
        project_u = du - un[:, None] * self.n
        project_w = dw - wn[:, None] * self.n
        by_d = (c * self.inverse_length)[:, None] * (wn[:, None] * project_u + un[:, None] * project_w)
        return un * wn, by_d
