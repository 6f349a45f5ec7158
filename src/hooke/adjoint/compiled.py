"""Compiled (Numba) reverse steps: ``symplectic_euler``'s whole step, and the spring terms of
``implicit_euler_linear``'s (:func:`linear_implicit_terms`).

Contract: :class:`SymplecticEulerVJP` is bound to one model (and reuses its scratch buffers from
call to call). ``reverse(x, v, lam_x, lam_v, h, grads)`` is the adjoint step of
:mod:`.explicit` from the step's start (x, v) and the adjoints of its end: with
μ = (λv⁺ + h λx⁺) on free particles and λ = h μ on the acceleration a = M⁻¹F(x, v) of
F = −∇U_spring(x) − Σ_s c_s (Δv·n) n + M g (no air drag: :mod:`.explicit` adds its share), it
returns (λx⁺ + ∂(λ·a)/∂x, μ + ∂(λ·a)/∂v) as new arrays and adds ∂(λ·a)/∂θ to ``grads``
(stiffness, rest_length, damping, mass, gravity): the same sums as NumPy's
:func:`hooke.adjoint.forces.acceleration_vjp` (the reference it is tested against), with the
per-spring terms of :mod:`hooke.adjoint.spring_terms` written out:

    u = M⁻¹λ,  Δu = u_j − u_i,  Δv = v_j − v_i,  un = Δu·n,  vn = Δv·n,
    ∂/∂k_s  −= Δu·∂g/∂k        ∂/∂l0_s −= Δu·∂g/∂l0        ∂/∂c_s −= un vn,
    ∂/∂x_j  −= A Δu + c [vn (Δu − un n) + un (Δv − vn n)] / L   (and += at i),
    ∂/∂v_j  −= c un n                                            (and += at i),
    ∂/∂m_p  += u_p·g − (u_p·F_p)/m_p,     ∂/∂g += Σ_p m_p u_p,

with A = a_⊥ I + (a_∥ − a_⊥) n nᵀ, the spring's Hessian as :mod:`hooke.energies.spring` has it.
Two passes, as :mod:`hooke.kernels`' forward step: one over the springs (their partials, and
five factors per spring), then one over the particles gathering from their springs through the
incidence lists (no two threads write one row; a particle's sum runs in a fixed order, so only
∂/∂g, summed by chunks, depends on the thread count, to round-off); on Numba's threads in chunks
from ``PARALLEL_MIN_SPRINGS`` springs up, on the calling thread below.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange
from .. import jit_cache  # noqa: F401  (a full disk under Numba's cache: no error)

from ..kernels import PARALLEL_MIN_SPRINGS, incidence


@njit(cache=True, error_model="numpy")
def _springs_range(first, last, rows, pairs, stiffness, rest, damping, squared, grad_k,
                   grad_l0, grad_c, per_spring):
    """Springs first … last − 1: their parameter partials, and in ``per_spring`` the factors
    their ends need."""
    for s in range(first, last):
        i, j = pairs[s, 0], pairs[s, 1]
        d0, d1, d2 = rows[j, 0] - rows[i, 0], rows[j, 1] - rows[i, 1], rows[j, 2] - rows[i, 2]
        u0, u1, u2 = rows[j, 6] - rows[i, 6], rows[j, 7] - rows[i, 7], rows[j, 8] - rows[i, 8]
        w0, w1, w2 = rows[j, 3] - rows[i, 3], rows[j, 4] - rows[i, 4], rows[j, 5] - rows[i, 5]
        length2 = d0 * d0 + d1 * d1 + d2 * d2
        inv_length = 1.0 / np.sqrt(length2) if length2 > 0.0 else 0.0
        ud = u0 * d0 + u1 * d1 + u2 * d2
        un = ud * inv_length
        vn = (w0 * d0 + w1 * d1 + w2 * d2) * inv_length
        k, l0, c = stiffness[s], rest[s], damping[s]
        if squared:
            ratio = length2 / (l0 * l0)
            phi = 2.0 * k * (ratio - 1.0)  # ∂E/∂d = φ d
            grad_k[s] -= 2.0 * (ratio - 1.0) * ud
            grad_l0[s] += 4.0 * k * length2 * ud / (l0 * l0 * l0)
            a_perp = phi
            a_par = 2.0 * k * (3.0 * ratio - 1.0)
        else:
            stretch = 1.0 - l0 * inv_length if length2 > 0.0 else 0.0
            phi = k if l0 == 0.0 else k * stretch
            grad_k[s] -= stretch * ud
            grad_l0[s] += k * un
            a_perp = k if (l0 == 0.0 or length2 == 0.0) else k * stretch
            a_par = k
        grad_c[s] -= un * vn
        # What its ends receive, as factors of Δu, Δv and d taken from that end towards the
        # other (every term is odd in those, so the signs at i and j come out by themselves):
        # the ∂/∂x term A Δu + c [vn (Δu − un n) + un (Δv − vn n)] / L, the ∂/∂v term c un n,
        # and the force on the end, φ d + c vn n (spring and damping).
        scale = c * inv_length
        per_spring[s, 0] = a_perp + scale * vn
        per_spring[s, 1] = scale * un
        per_spring[s, 2] = ((a_par - a_perp) * un - 2.0 * scale * un * vn) * inv_length
        per_spring[s, 3] = scale * un
        per_spring[s, 4] = phi + scale * vn


@njit(cache=True, error_model="numpy")
def _particles_range(first, last, indptr, other, spring_of, per_spring, rows, mu, lam_x,
                     inverse_mass, mass, gravity, grad_m, out_x,
                     out_v) -> tuple[float, float, float]:
    """Particles first … last − 1: their sums over their springs, the adjoints of the step's
    start and ∂/∂m; returns their Σ m_p u_p (for ∂/∂g)."""
    dim = out_x.shape[1]
    g0 = g1 = g2 = 0.0
    for p in range(first, last):
        ax0 = ax1 = ax2 = av0 = av1 = av2 = 0.0
        f0, f1, f2 = mass[p] * gravity[0], mass[p] * gravity[1], mass[p] * gravity[2]
        for slot in range(indptr[p], indptr[p + 1]):
            q, s = other[slot], spring_of[slot]
            d0, d1, d2 = rows[q, 0] - rows[p, 0], rows[q, 1] - rows[p, 1], rows[q, 2] - rows[p, 2]
            a, b, c = per_spring[s, 0], per_spring[s, 1], per_spring[s, 2]
            ax0 += a * (rows[q, 6] - rows[p, 6]) + b * (rows[q, 3] - rows[p, 3]) + c * d0
            ax1 += a * (rows[q, 7] - rows[p, 7]) + b * (rows[q, 4] - rows[p, 4]) + c * d1
            ax2 += a * (rows[q, 8] - rows[p, 8]) + b * (rows[q, 5] - rows[p, 5]) + c * d2
            drag, pull = per_spring[s, 3], per_spring[s, 4]
            av0 += drag * d0
            av1 += drag * d1
            av2 += drag * d2
            f0 += pull * d0
            f1 += pull * d1
            f2 += pull * d2
        out_x[p, 0], out_v[p, 0] = lam_x[p, 0] + ax0, mu[p, 0] + av0
        if dim > 1:
            out_x[p, 1], out_v[p, 1] = lam_x[p, 1] + ax1, mu[p, 1] + av1
        if dim > 2:
            out_x[p, 2], out_v[p, 2] = lam_x[p, 2] + ax2, mu[p, 2] + av2
        by_gravity = rows[p, 6] * gravity[0] + rows[p, 7] * gravity[1] + rows[p, 8] * gravity[2]
        by_force = rows[p, 6] * f0 + rows[p, 7] * f1 + rows[p, 8] * f2
        grad_m[p] += by_gravity - by_force * inverse_mass[p]
        g0 += mass[p] * rows[p, 6]
        g1 += mass[p] * rows[p, 7]
        g2 += mass[p] * rows[p, 8]
    return g0, g1, g2


@njit(cache=True, error_model="numpy")
def _start_range(first, last, x, v, lam_x, lam_v, h, free, inverse_mass, rows, mu):
    """Particles first … last − 1: the rows (x, v, u = h M⁻¹μ, each padded to 3), and
    μ = (λv⁺ + h λx⁺) on free particles."""
    for p in range(first, last):
        for a in range(x.shape[1]):
            rows[p, a] = x[p, a]
            rows[p, 3 + a] = v[p, a]
            mu[p, a] = (lam_v[p, a] + h * lam_x[p, a]) * free[p]
            rows[p, 6 + a] = h * mu[p, a] * inverse_mass[p]


# The serial entry point never touches Numba's thread pool; both run the three passes in turn.
@njit(cache=True, error_model="numpy")
def _reverse_serial(spring_bounds, particle_bounds, x, v, lam_x, lam_v, h, pairs, stiffness,
                    rest, damping, squared, indptr, other, spring_of, free, inverse_mass, mass,
                    gravity, grad_k, grad_l0, grad_c, grad_m, rows, mu, per_spring, out_x, out_v,
                    by_gravity):
    n = x.shape[0]
    _start_range(0, n, x, v, lam_x, lam_v, h, free, inverse_mass, rows, mu)
    _springs_range(0, pairs.shape[0], rows, pairs, stiffness, rest, damping, squared, grad_k,
                   grad_l0, grad_c, per_spring)
    by_gravity[0] = _particles_range(0, n, indptr, other, spring_of, per_spring, rows, mu, lam_x,
                                     inverse_mass, mass, gravity, grad_m, out_x, out_v)


@njit(parallel=True, cache=True, error_model="numpy")
def _reverse_parallel(spring_bounds, particle_bounds, x, v, lam_x, lam_v, h, pairs, stiffness,
                      rest, damping, squared, indptr, other, spring_of, free, inverse_mass, mass,
                      gravity, grad_k, grad_l0, grad_c, grad_m, rows, mu, per_spring, out_x,
                      out_v, by_gravity):
    chunks = particle_bounds.shape[0] - 1
    for chunk in prange(chunks):
        _start_range(particle_bounds[chunk], particle_bounds[chunk + 1], x, v, lam_x, lam_v, h,
                     free, inverse_mass, rows, mu)
    for chunk in prange(chunks):
        _springs_range(spring_bounds[chunk], spring_bounds[chunk + 1], rows, pairs, stiffness,
                       rest, damping, squared, grad_k, grad_l0, grad_c, per_spring)
    for chunk in prange(chunks):
        by_gravity[chunk] = _particles_range(
            particle_bounds[chunk], particle_bounds[chunk + 1], indptr, other, spring_of,
            per_spring, rows, mu, lam_x, inverse_mass, mass, gravity, grad_m, out_x, out_v)


class SymplecticEulerVJP:
    """The compiled adjoint of one model's symplectic Euler step (module docstring)."""

    def __init__(self, system):
        model = self.model = system.model
        self.pairs = np.ascontiguousarray(model.spring_indices, dtype=np.int64)
        self.squared = model.spring_energy == "squared_length"
        indptr, other, first, second = incidence(self.pairs, model.n_particles)
        spring_of = np.empty(other.size, dtype=np.int64)  # the spring of each slot
        spring_of[first] = spring_of[second] = np.arange(model.n_springs)
        self.incidence = indptr, other.astype(np.int64), spring_of
        self.free = (~model.pinned).astype(float)
        self.inverse_mass = np.ascontiguousarray(system.inverse_mass[:, 0], dtype=float)
        self.mass = np.ascontiguousarray(model.mass, dtype=float)
        self.gravity = np.zeros(3)
        self.gravity[:model.dim] = model.gravity
        self.springs = tuple(np.ascontiguousarray(a, dtype=float) for a in (
            model.spring_stiffness, model.spring_rest_length, model.spring_damping))
        # a row per particle: x, v and u, each padded to 3 (the padding stays zero), read
        # together by every spring at the particle; and μ
        self.buffers = np.zeros((model.n_particles, 9)), np.zeros((model.n_particles, 3))
        self.per_spring = np.zeros((model.n_springs, 5))
        self._bounds = {}

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(spring chunk bounds, particle chunk bounds), a chunk per Numba thread."""
        chunks = numba.get_num_threads() if self.model.n_springs >= PARALLEL_MIN_SPRINGS else 1
        if chunks not in self._bounds:
            self._bounds[chunks] = tuple(
                np.linspace(0, count, chunks + 1).astype(np.int64)
                for count in (self.model.n_springs, self.model.n_particles))
        return self._bounds[chunks]

    def reverse(self, x, v, lam_x, lam_v, h: float, grads) -> tuple[np.ndarray, np.ndarray]:
        spring_bounds, particle_bounds = self.bounds()
        out_x, out_v = np.empty_like(lam_x, dtype=float), np.empty_like(lam_v, dtype=float)
        by_gravity = np.zeros((spring_bounds.size - 1, 3))
        kernel = _reverse_parallel if spring_bounds.size > 2 else _reverse_serial
        contiguous = [np.ascontiguousarray(a, dtype=float) for a in (x, v, lam_x, lam_v)]
        kernel(spring_bounds, particle_bounds, *contiguous, float(h), self.pairs, *self.springs,
               self.squared, *self.incidence, self.free, self.inverse_mass, self.mass,
               self.gravity, grads["stiffness"], grads["rest_length"], grads["damping"],
               grads["mass"], *self.buffers, self.per_spring, out_x, out_v, by_gravity)
        grads["gravity"] += by_gravity.sum(axis=0)[:self.model.dim]
        return out_x, out_v


@njit(cache=True, error_model="numpy")
def _linear_implicit_terms(x, w, v_next, pairs, stiffness, rest, damping, squared, h, grad_k,
                           grad_l0, grad_c, along_x):
    """The springs' part of the linearly implicit Euler adjoint (:mod:`.implicit`): adds to
    the parameters' gradients and subtracts h A Δw + h ∂_x ψ(w, v⁺) + h² ∂_x(wᵀ H v⁺) from
    ``along_x`` (any dim; serial, since the step's solve dominates it)."""
    dim = x.shape[1]
    d = np.empty(dim)
    n = np.empty(dim)
    dw = np.empty(dim)
    dv = np.empty(dim)
    for s in range(pairs.shape[0]):
        i, j = pairs[s, 0], pairs[s, 1]
        length2 = wd = vd = wv = 0.0
        for a in range(dim):
            d[a] = x[j, a] - x[i, a]
            dw[a] = w[j, a] - w[i, a]
            dv[a] = v_next[j, a] - v_next[i, a]
            length2 += d[a] * d[a]
            wd += dw[a] * d[a]
            vd += dv[a] * d[a]
            wv += dw[a] * dv[a]
        inv_length = 1.0 / np.sqrt(length2) if length2 > 0.0 else 0.0
        for a in range(dim):
            n[a] = d[a] * inv_length
        wn, vn = wd * inv_length, vd * inv_length
        k, l0, c = stiffness[s], rest[s], damping[s]
        if squared:
            ratio = length2 / (l0 * l0)
            perp, par = 2.0 * (ratio - 1.0), 2.0 * (3.0 * ratio - 1.0)  # A at k = 1
            by_k = perp * wd  # Δw·∂g/∂k
            by_l0 = -4.0 * k * length2 * wd / (l0 * l0 * l0)
            hessian_l0 = -4.0 * k * (length2 * wv + 2.0 * wd * vd) / (l0 * l0 * l0)
            # ∂(ΔwᵀAΔv)/∂d = 4k/l0² [(Δw·Δv) d + (Δv·d) Δw + (Δw·d) Δv], as factors of d, Δw, Δv
            third_d, third_w, third_v = 4.0 * k / (l0 * l0) * wv, 4.0 * k / (l0 * l0) * vd, \
                4.0 * k / (l0 * l0) * wd
        else:
            stretch = 1.0 - l0 * inv_length if length2 > 0.0 else 0.0
            perp = 1.0 if (l0 == 0.0 or length2 == 0.0) else stretch
            par = 1.0
            by_k = stretch * wd
            by_l0 = -k * wn
            hessian_l0 = -k * (wv - wn * vn) * inv_length
            # k l0/L² [(Δw·Δv) n + (Δv·n) Δw + (Δw·n) Δv − 3 (Δw·n)(Δv·n) n]
            scale = k * l0 * inv_length * inv_length
            third_d = scale * (wv - 3.0 * wn * vn) * inv_length
            third_w, third_v = scale * vn, scale * wn
        hessian_k = perp * wv + (par - perp) * wn * vn
        grad_k[s] -= h * by_k + h * h * hessian_k
        grad_l0[s] -= h * by_l0 + h * h * hessian_l0
        grad_c[s] -= h * wn * vn
        # h (A Δw + c [vn (Δw − wn n) + wn (Δv − vn n)] / L) + h² ∂(ΔwᵀAΔv)/∂d
        damp = c * inv_length
        for a in range(dim):
            t = (h * (k * (perp * dw[a] + (par - perp) * wn * n[a])
                      + damp * (vn * (dw[a] - wn * n[a]) + wn * (dv[a] - vn * n[a])))
                 + h * h * (third_d * d[a] + third_w * dw[a] + third_v * dv[a]))
            along_x[j, a] -= t
            along_x[i, a] += t


def linear_implicit_terms(model, x, w, v_next, h: float, grads: dict,
                          along_x: np.ndarray) -> np.ndarray:
    """``along_x`` less the springs' terms of the linearly implicit Euler adjoint (in place)."""
    _linear_implicit_terms(np.ascontiguousarray(x, dtype=float),
                           np.ascontiguousarray(w, dtype=float),
                           np.ascontiguousarray(v_next, dtype=float), model.spring_indices,
                           model.spring_stiffness, model.spring_rest_length,
                           model.spring_damping, model.spring_energy == "squared_length",
                           float(h), grads["stiffness"], grads["rest_length"],
                           grads["damping"], along_x)
    return along_x
