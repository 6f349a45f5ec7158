"""Energy terms of a mass-spring system.

Contract of a potential term (a module with these names):
- ``NAME``: the key of this term in ``Result.energy``;
- ``active(model) -> bool``: whether the model has this term at all;
- ``value(model, x) -> float``: the energy [J] at positions x (n, d);
- ``gradient(model, x) -> (n, d)``: its gradient (minus the force) [N];
- ``hessian_structure(model) -> (rows, cols)``: fixed triplet pattern in flattened DOFs;
- ``hessian_values(model, x, project_psd=False) -> (len(rows),)``: the Hessian's entries in that
  pattern; with ``project_psd`` each element's block is clamped to positive semi-definite.
``hessian(term, model, x)`` builds the sparse matrix from these for checks and analysis.

Velocity-dependent forces (spring damping) live in :mod:`hooke.energies.damping`; the kinetic
energy and the mass matrix in :mod:`hooke.energies.kinetic`.
"""

from __future__ import annotations

import scipy.sparse as sp

from ..linalg import triplets_to_csr
from . import gravity, spring

POTENTIAL_TERMS = (spring, gravity)


def potential_terms(model) -> list:
    """The potential terms present in ``model``, in a fixed order."""
    return [term for term in POTENTIAL_TERMS if term.active(model)]


def hessian(term, model, x, project_psd: bool = False) -> sp.csr_matrix:
    rows, cols = term.hessian_structure(model)
    return triplets_to_csr(rows, cols, term.hessian_values(model, x, project_psd), model.n_dofs)
