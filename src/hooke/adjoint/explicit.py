"""Adjoint of ``symplectic_euler``: v⁺ = v + h a(x, v), x⁺ = x + h v⁺ (free particles).

With μ = λv⁺ + h λx⁺ (the adjoint of v⁺, free rows), the step's λ·a term has λ = h μ:
    λx = λx⁺ + ∂(h μ·a)/∂x,    λv = μ + ∂(h μ·a)/∂v,
and the parameters get ∂(h μ·a)/∂θ: the whole step compiled in :mod:`.compiled`, or with
``COMPILED = False`` by NumPy's :func:`.forces.acceleration_vjp` (the reference it matches). The
compiled step has no air drag: its share, per particle and linear in v, is added by
:func:`.forces.air_acceleration_vjp` (a is taken at the step's start, t, wind w(t) included).
"""

from __future__ import annotations

from .base import AdjointStep, adjoint_of
from .compiled import SymplecticEulerVJP
from .forces import acceleration_vjp, air_acceleration_vjp

COMPILED = True  # False: the NumPy path (the reference the compiled one matches)


@adjoint_of
class SymplecticEulerAdjoint(AdjointStep):
    integrator = "symplectic_euler"

    def __init__(self, system, stepper):
        super().__init__(system, stepper)
        self.compiled = SymplecticEulerVJP(system) if COMPILED else None

    def reverse(self, start, end, lam_x, lam_v, grads, carried):
        mu = (lam_v + self.h * lam_x) * self.free
        if self.compiled is not None:
            new_x, new_v = self.compiled.reverse(start.x, start.v, lam_x, lam_v, self.h, grads)
            return new_x, new_v + air_acceleration_vjp(self.system, start.v, start.t,
                                                       self.h * mu, grads)
        along_x, along_v = acceleration_vjp(self.system, start.x, start.v, start.t, self.h * mu,
                                            grads)
        return lam_x + along_x, mu + along_v
