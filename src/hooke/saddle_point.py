"""The saddle-point matrix of a system with joints, on one fixed sparsity pattern.

    A = [[a·M + b·(∇²U(x) + Σ_k T_k ∇²g_k(x)) + c·D(x),  Gᵀ],
         [G,                                               0 ]]

over the free DOFs followed by one row per joint (tensions T, constraint Jacobian G; D = −∂f/∂v
with air drag's diagonal C, :meth:`hooke.system.System.diagonal`). Newton
steps of the Newmark family (a = 1, b = β', c = γ') and the linearisation of modal analysis
(a = shift, b = 1, c = 0) assemble it here; without joints it is the plain combined matrix.

:class:`BorderedMatrix` borders a free-DOF matrix K assembled elsewhere (``System.combined_matrix``:
any potential and step terms, PSD-projected, a pattern that may change with contact) with the
same joint blocks, [[K + b·Σ_k T_k ∇²g_k, Gᵀ], [G, 0]]: the Newton–KKT matrix of ``implicit_euler``
with joints (:mod:`hooke.integrators.implicit_joints`). With ``project_psd`` each joint's block
T_k ∇²g_k = (T_k/|d_k|)(I − n_k n_kᵀ) is clamped to PSD (T_k < 0, a joint in compression,
contributes nothing), as every element block of a projected Hessian. Its pattern depends only on
K's: explicit zeros are kept (an entry of G that happens to be 0 stays in the pattern), so a
direct solver's analysis stays valid between calls.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .energies import damping
from .linalg import FixedPatternAssembler, diagonal_structure


def _joint_structures(system) -> list:
    """Triplet structures of Σ T ∇²g (DOF × DOF), G (joint rows after the DOFs) and Gᵀ."""
    n_dofs = system.model.n_dofs
    rows, cols = system.joints.jacobian_structure
    return [system.joints.geometric_hessian_structure(), (rows + n_dofs, cols), (cols, rows + n_dofs)]


def _joint_values(joints, x: np.ndarray, tension: np.ndarray) -> list:
    """Values for :func:`_joint_structures` at x with tensions T."""
    jacobian = joints.jacobian_values(joints.geometry(x)[1])
    return [joints.geometric_hessian_values(x, tension), jacobian, jacobian]


def _kept(model) -> np.ndarray:
    """The rows that stay: the free DOFs, then every joint's."""
    return np.concatenate([model.free_dofs, model.n_dofs + np.arange(model.n_joints)])


class SaddlePointMatrix:
    def __init__(self, system):
        self.system = system
        model = system.model
        n_dofs, m = model.n_dofs, model.n_joints
        structures = [diagonal_structure(n_dofs)]
        structures += [term.hessian_structure(model) for term in system.terms]
        structures.append(damping.jacobian_structure(model))
        if m:
            structures += _joint_structures(system)
        self.assembler = FixedPatternAssembler(structures, n_dofs + m, _kept(model))
        self._no_damping = np.zeros(self.assembler.sizes[len(system.terms) + 1])

    def assemble(self, x: np.ndarray, tension: np.ndarray, mass_weight: float,
                 hessian_weight: float, damping_weight: float) -> sp.csc_matrix:
        system, model = self.system, self.system.model
        values = [system.diagonal(mass_weight, damping_weight)]  # M and air drag's C
        values += [term.hessian_values(model, x) for term in system.terms]
        weights = [1.0] + [hessian_weight] * len(system.terms)
        damped = system.has_damping and damping_weight != 0.0
        values.append(damping.jacobian_values(model, x) if damped else self._no_damping)
        weights.append(damping_weight)
        if model.n_joints:
            values += _joint_values(system.joints, x, tension)
            weights += [hessian_weight, 1.0, 1.0]
        return self.assembler.assemble(values, weights).tocsc()


class BorderedMatrix:
    """[[K + b·Σ_k T_k ∇²g_k, Gᵀ], [G, 0]] for a given free-DOF matrix K (module docstring)."""

    def __init__(self, system):
        self.system = system
        model = system.model
        self.assembler = FixedPatternAssembler(_joint_structures(system),
                                               model.n_dofs + model.n_joints, _kept(model))
        self._merge = None  # K's pattern and where its entries and the border's go (_merged)

    def _merged(self, matrix: sp.csr_matrix):
        """(K's indptr, indices, slots of K's then the border's entries, indptr, indices) of
        the union of K's pattern and the border's, computed again only when K's changes."""
        merge = self._merge
        if merge is not None and all(new is old or np.array_equal(new, old) for new, old in
                                     zip((matrix.indptr, matrix.indices), merge[:2])):
            return merge
        size = self.assembler.size

        def keys(indptr, indices):
            rows = np.repeat(np.arange(indptr.size - 1, dtype=np.int64), np.diff(indptr))
            return rows * size + indices

        unique, slots = np.unique(np.concatenate([keys(matrix.indptr, matrix.indices),
                                                  keys(*self.assembler.pattern)]),
                                  return_inverse=True)
        indptr = np.searchsorted(unique // size, np.arange(size + 1)).astype(np.int32)
        self._merge = (matrix.indptr.copy(), matrix.indices.copy(), slots, indptr,
                       (unique % size).astype(np.int32))
        return self._merge

    def assemble(self, matrix: sp.spmatrix, x: np.ndarray, tension: np.ndarray,
                 hessian_weight: float, project_psd: bool = False) -> sp.csr_matrix:
        if project_psd:
            tension = np.maximum(tension, 0.0)
        border = self.assembler.data(_joint_values(self.system.joints, x, tension),
                                     [hessian_weight, 1.0, 1.0])
        matrix = sp.csr_matrix(matrix)
        _, _, slots, indptr, indices = self._merged(matrix)
        # Summed into the union pattern with every entry kept, zeros too (a CSR sum drops them).
        data = np.bincount(slots, weights=np.concatenate([matrix.data, border]),
                           minlength=indices.size)
        size = self.assembler.size
        return sp.csr_matrix((data, indices, indptr), shape=(size, size))
