"""Energy terms of a mass-spring system.

Contract of a potential term (a module with these names):

- ``NAME``: the key of this term in ``Result.energy``;
- ``active(model) -> bool``: whether the model has this term at all;
- ``value(model, x) -> float``: the energy [J] at positions x (n, d);
- ``gradient(model, x) -> (n, d)``: its gradient (minus the force) [N];
- ``hessian_structure(model) -> (rows, cols)``: fixed triplet pattern in flattened DOFs;
- ``hessian_values(model, x, project_psd=False) -> (len(rows),)``: the Hessian's entries in that
  pattern; with ``project_psd`` each element's block is clamped to positive semi-definite.

A term whose active set changes with x (contact between surfaces: which pairs are within d̂)
has no fixed pattern: instead of ``hessian_structure``/``hessian_values`` it defines

- ``hessian_triplets(model, x, project_psd=False) -> (rows, cols, values)``: the Hessian at x as
  triplets in flattened DOFs (duplicates summed), a new pattern at every evaluation;

:func:`has_fixed_pattern` tells the two kinds apart; assembly (:class:`hooke.system.System`) puts
the fixed terms on its precomputed pattern and adds the others' triplets per evaluation.
``hessian(term, model, x)`` builds the sparse matrix of either kind for checks and analysis.
Optional hooks of a potential term (the contact barriers with planes, spheres and obstacles have
them):

- ``max_step(model, x, p) -> float``: largest α ≤ 1 keeping x + α p in the term's domain
  (continuous collision detection; the implicit line search starts there);
- ``at_time(model, t)``: the term at time t, an object with the same functions (moving planes);
- ``start_guess(model, x, t, t_next) -> x``: a Newton start inside the domain at t_next.

Step terms (``STEP_TERMS``) are dissipative terms of the implicit incremental potential whose
value depends on the step start (lagged friction, the wind's push on air drag): ``NAME``,
``active(model)``, a fixed
``hessian_structure(model)`` (or ``VARYING_PATTERN = True``: friction with obstacles and
between surfaces), and
``prepare(model, start, h)`` returning, for the step from the State ``start`` to start.t + h, an
object with the potential-term functions ``value``, ``gradient``, ``hessian_structure``,
``hessian_values`` (or ``hessian_triplets``). They are weighted by h² like potentials
and never reported as energies. ``System.step_terms`` collects both kinds for one step.

Velocity-dependent forces live in :mod:`hooke.energies.damping` (spring damping) and
:mod:`hooke.energies.drag` (air drag towards a wind, which is also the wind's step term); the
kinetic energy and the mass matrix in :mod:`hooke.energies.kinetic`.
"""

from __future__ import annotations

import scipy.sparse as sp

from ..linalg import triplets_to_csr
from . import (barrier, drag, friction, gravity, obstacle_barrier, obstacle_friction,
               sphere_barrier, spring, surface_barrier, surface_friction)

POTENTIAL_TERMS = (spring, gravity, barrier, sphere_barrier, surface_barrier, obstacle_barrier)
STEP_TERMS = (friction, obstacle_friction, surface_friction, drag)


def potential_terms(model) -> list:
    """The potential terms present in ``model``, in a fixed order."""
    return [term for term in POTENTIAL_TERMS if term.active(model)]


def step_terms(model) -> list:
    """The step terms (lagged friction, wind) present in ``model``, in a fixed order."""
    return [term for term in STEP_TERMS if term.active(model)]


def has_fixed_pattern(term) -> bool:
    """Whether the term's Hessian has one pattern per model (else: ``hessian_triplets``, or
    for a step term's module ``VARYING_PATTERN``)."""
    return not (hasattr(term, "hessian_triplets") or getattr(term, "VARYING_PATTERN", False))


def hessian(term, model, x, project_psd: bool = False) -> sp.csr_matrix:
    """The Hessian of ``term`` at x as a sparse (n·d, n·d) matrix, of either kind of term."""
    if not has_fixed_pattern(term):
        return triplets_to_csr(*term.hessian_triplets(model, x, project_psd), model.n_dofs)
    rows, cols = term.hessian_structure(model)
    return triplets_to_csr(rows, cols, term.hessian_values(model, x, project_psd), model.n_dofs)
