"""Kinetic energy ½ vᵀMv and the (diagonal, sparse) mass matrix M (seed 001)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

NAME = "kinetic"


def value(model, v: np.ndarray) -> float:
    return 0.5 * float(np.sum(model.mass[:, None] * v * v))


def gradient(model, v: np.ndarray) -> np.ndarray:
    """∂T/∂v = M v (the momentum), shape (n, d)."""
    return model.mass[:, None] * v


def mass_diagonal(model) -> np.ndarray:
    """(n·d,) diagonal of M in the flattened DOF numbering."""
    return np.repeat(model.mass, model.dim)


def mass_matrix(model) -> sp.csr_matrix:
    return sp.diags(mass_diagonal(model)).tocsr()
