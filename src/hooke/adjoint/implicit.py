"""Adjoints of the implicit Euler steps.

``implicit_euler_linear``: A(x) v⁺ = b(x, v) on the free DOFs, A = M + h D(x) + h² H(x),
b = M v − h ∇U(x), x⁺ = x + h v⁺. With μ = λv⁺ + h λx⁺ (free rows) and A w = μ (A symmetric),
dL = wᵀ(db − dA v⁺):
    λx = λx⁺ − h H w − h ∂_x ψ(w, v⁺) − h² ∂_x(wᵀ H(x) v⁺)       λv = M w
    ∂/∂k = −h Δw·∂g/∂k − h² ∂(ΔwᵀAΔv⁺)/∂k   (l0 alike)         ∂/∂c = −h ψ(w, v⁺)/c
    ∂/∂m_i = w_i·(v_i − v⁺_i + h g)                              ∂/∂g = h Σ m_i w_i
(∂_x(wᵀHv⁺): the third derivative of the spring energy, :meth:`SpringGeometry.hessian_derivative`.)
Air drag (:mod:`hooke.energies.drag`) is in A (its C in D) and b (the wind's push h C w(t⁺),
t⁺ = t + h): its share of wᵀ(db − dA v⁺) is h w·dF_air(v⁺, t⁺), so :func:`.forces.air_vjp`
with u = h w gives its parameters (A's solve has taken its state part already).

``implicit_euler``: y = x⁺ solves G(y) = M(y − x − h v) + h² ∇U(y) + h D(x)(y − x) = 0, and
v⁺ = (y − x)/h. The implicit function theorem: with Gᵧ = M + h² H(y) + h D(x) (unprojected, so
this is the gradient of the exact backward-Euler step: Newton's ``tol`` must be tight for it to
match the computed trajectory) and Gᵧ w = λx⁺ + λv⁺/h (free rows), dL = −wᵀ dG − (λv⁺/h)·dx:
    λx = −λv⁺/h + M w + h D(x) w − h ∂_x ψ(w, y − x)             λv = h M w
    ∂/∂k = −h² Δw·∂g/∂k(y)   (l0 alike)   ∂/∂c = −h ψ(w, y − x)/c
    ∂/∂m_i = −w_i·(y_i − x_i − h v_i − h² g)                     ∂/∂g = h² Σ m_i w_i
and the pinned rows of y (at x0) receive −h² H(y) w − h D(x) w. Air drag's share of G is
h C (y − x) − h² C w(t⁺) = −h² F_air(v⁺, t⁺): its C is in Gᵧ's D, and with u = h² w
:func:`.forces.air_vjp` gives its parameters and ∂/∂v⁺, of which λx takes −1/h (v⁺ = (y − x)/h):
the h C w of λx's D(x) w above. With fixed frictionless
contact planes the barrier B is one more potential in U (H(y) includes its Hessian, unprojected:
it is PSD already), and ∂/∂κ = −h² w·∇B(y)/κ (B is linear in κ). The CCD line search only
chooses how Newton gets to y, not y, so it has no part in the gradient.

``implicit_euler_linear``'s spring terms run compiled (:func:`.compiled.linear_implicit_terms`);
``COMPILED = False`` keeps them in NumPy (:meth:`LinearlyImplicitEulerAdjoint.spring_terms`).
"""

from __future__ import annotations

import numpy as np

from ..energies import barrier
from ..linalg import SparseSolver
from .base import AdjointStep, adjoint_of
from .compiled import linear_implicit_terms
from .forces import air_vjp
from .spring_terms import SpringGeometry, differences, scatter

COMPILED = True  # False: implicit_euler_linear's spring terms in NumPy (the reference)


class ImplicitAdjoint(AdjointStep):
    def __init__(self, system, stepper):
        super().__init__(system, stepper)
        self.solver = SparseSolver(self.options["solver"])

    def solve(self, matrix, rhs: np.ndarray) -> np.ndarray:
        """The (n, d) solution of matrix · w = rhs's free rows, zero on pinned particles."""
        system = self.system
        free = self.solver.solve(matrix, system.free_vector(rhs))
        return system.scatter_free(np.zeros_like(rhs), free)

    def damping_times(self, geometry: SpringGeometry, w: np.ndarray) -> np.ndarray:
        """(n, d) D w on every particle."""
        along = self.model.spring_damping * np.einsum("sa,sa->s", differences(self.model, w),
                                                      geometry.n)
        return scatter(self.model, along[:, None] * geometry.n)


@adjoint_of
class LinearlyImplicitEulerAdjoint(ImplicitAdjoint):
    integrator = "implicit_euler_linear"

    def reverse(self, start, end, lam_x, lam_v, grads, carried):
        model, system, h, x, v, v_next = self.model, self.system, self.h, start.x, start.v, end.v
        matrix = system.combined_matrix(x, 1.0, h * h, h)
        w = self.solve(matrix, (lam_v + h * lam_x) * self.free)
        if COMPILED:
            new_x = linear_implicit_terms(model, x, w, v_next, h, grads, np.array(lam_x, float))
        else:
            new_x = lam_x - self.spring_terms(x, w, v_next, grads)
        grads["mass"] += np.einsum("na,na->n", w, v - v_next + h * model.gravity)
        grads["gravity"] += h * np.sum(model.mass[:, None] * w, axis=0)
        air_vjp(model, v_next, end.t, h * w, grads)  # its −C h w is in the matrix's solve
        return new_x, model.mass[:, None] * w

    def spring_terms(self, x, w, v_next, grads) -> np.ndarray:
        """NumPy's h A Δw + h ∂_x ψ(w, v⁺) + h² ∂_x(wᵀ H v⁺) on the particles, the parameters'
        terms added to ``grads``: the reference :mod:`.compiled` matches."""
        model, h = self.model, self.h
        geometry = SpringGeometry(model, x)
        dw, dv_next = differences(model, w), differences(model, v_next)
        by_k, by_l0 = geometry.gradient_partials()
        hessian_k, hessian_l0 = geometry.hessian_partials(dw, dv_next)
        grads["stiffness"] -= h * np.einsum("sa,sa->s", dw, by_k) + h * h * hessian_k
        grads["rest_length"] -= h * np.einsum("sa,sa->s", dw, by_l0) + h * h * hessian_l0
        by_c, by_d = geometry.damping_partials(dw, dv_next)
        grads["damping"] -= h * by_c
        return scatter(model, h * geometry.hessian_times(dw) + h * by_d
                       + h * h * geometry.hessian_derivative(dw, dv_next))


@adjoint_of
class ImplicitEulerAdjoint(ImplicitAdjoint):
    integrator = "implicit_euler"
    supports_planes = True

    def reverse(self, start, end, lam_x, lam_v, grads, carried):
        model, system, h, x, v, y = self.model, self.system, self.h, start.x, start.v, end.x
        matrix = system.combined_matrix(y, 1.0, h * h, 0.0)
        if system.has_velocity_forces:  # D is lagged at the step start: D(x), not D(y)
            matrix = matrix + h * system.combined_matrix(x, 0.0, 0.0, 1.0)
        w = self.solve(matrix, (lam_x + lam_v / h) * self.free)
        at_x, at_y = SpringGeometry(model, x), SpringGeometry(model, y)
        dw = differences(model, w)
        by_k, by_l0 = at_y.gradient_partials()
        grads["stiffness"] -= h * h * np.einsum("sa,sa->s", dw, by_k)
        grads["rest_length"] -= h * h * np.einsum("sa,sa->s", dw, by_l0)
        by_c, by_d = at_x.damping_partials(dw, differences(model, y - x))
        grads["damping"] -= h * by_c
        dashpots = self.damping_times(at_x, w)
        pinned = 1.0 - self.free
        grads["pins"] -= pinned * (h * h * scatter(model, at_y.hessian_times(dw)) + h * dashpots)
        momentum = model.mass[:, None] * w
        air = air_vjp(model, end.v, end.t, h * h * w, grads)
        new_x = (-(lam_v / h) * self.free + momentum + h * dashpots - h * scatter(model, by_d)
                 - air / h)
        grads["mass"] -= np.einsum("na,na->n", w, y - x - h * v - h * h * model.gravity)
        grads["gravity"] += h * h * np.sum(momentum, axis=0)
        if model.n_planes:
            grads["kappa"] -= h * h * np.sum(w * barrier.gradient(model, y)) / model.contact_kappa
        return new_x, h * momentum
