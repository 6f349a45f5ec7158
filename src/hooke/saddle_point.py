"""The saddle-point matrix of a system with joints, on one fixed sparsity pattern.

    A = [[a·M + b·(∇²U(x) + Σ_k T_k ∇²g_k(x)) + c·D(x),  Gᵀ],
         [G,                                               0 ]]

over the free DOFs followed by one row per joint (tensions T, constraint Jacobian G). Newton
steps of the Newmark family (a = 1, b = β', c = γ') and the linearisation of modal analysis
(a = shift, b = 1, c = 0) assemble it here; without joints it is the plain combined matrix.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .energies import damping, kinetic
from .linalg import FixedPatternAssembler, diagonal_structure


class SaddlePointMatrix:
    def __init__(self, system):
        self.system = system
        model = system.model
        n_dofs, m = model.n_dofs, model.n_joints
        structures = [diagonal_structure(n_dofs)]
        structures += [term.hessian_structure(model) for term in system.terms]
        structures.append(damping.jacobian_structure(model))
        if m:
            rows, cols = system.joints.jacobian_structure
            structures += [system.joints.geometric_hessian_structure(), (rows + n_dofs, cols),
                           (cols, rows + n_dofs)]
        keep = np.concatenate([model.free_dofs, n_dofs + np.arange(m)])
        self.assembler = FixedPatternAssembler(structures, n_dofs + m, keep)
        self.mass = kinetic.mass_diagonal(model)
        self._no_damping = np.zeros(self.assembler.sizes[len(system.terms) + 1])

    def assemble(self, x: np.ndarray, tension: np.ndarray, mass_weight: float,
                 hessian_weight: float, damping_weight: float) -> sp.csc_matrix:
        system, model = self.system, self.system.model
        values = [self.mass] + [term.hessian_values(model, x) for term in system.terms]
        weights = [mass_weight] + [hessian_weight] * len(system.terms)
        damped = system.has_damping and damping_weight != 0.0
        values.append(damping.jacobian_values(model, x) if damped else self._no_damping)
        weights.append(damping_weight)
        if model.n_joints:
            joints = system.joints
            jacobian = joints.jacobian_values(joints.geometry(x)[1])
            values += [joints.geometric_hessian_values(x, tension), jacobian, jacobian]
            weights += [hessian_weight, 1.0, 1.0]
        return self.assembler.assemble(values, weights).tocsc()
