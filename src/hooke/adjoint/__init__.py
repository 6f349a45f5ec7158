"""Exact gradients of a simulation by the discrete adjoint (issue 18).

``hooke.gradient(scene, loss, params, integrator=None, dt=None, t_end=None, **options)`` returns
the loss of a run's saved frames and its gradient with respect to model parameters
(:mod:`.params`), by a reverse sweep over the steps (:mod:`.reverse`) with checkpointing
(:mod:`.checkpoint`). One module per integrator family's reverse step (:mod:`.explicit`:
symplectic Euler; :mod:`.implicit`: linearly implicit and Newton implicit Euler, the latter with
frictionless fixed contact planes; :mod:`.alpha`: Newmark and generalized-α, with joints), the
force's vector–Jacobian products in :mod:`.forces` (air drag's, towards a steady or gusting
wind, among them), the spring and damping derivatives beyond
value, gradient and Hessian in :mod:`.spring_terms`, the joints' in :mod:`.joints`, losses in
:mod:`hooke.losses`.
"""

from .reverse import gradient

__all__ = ["gradient"]
