"""Linear damping along each spring: f_j = −c ((v_j − v_i)·n) n, f_i = −f_j, n = (x_j − x_i)/|x_j − x_i|.

It is the force of the dissipation potential Ψ(v) = ½ Σ c ((v_j − v_i)·n)² (f = −∂Ψ/∂v) with n held
at the current positions, so ∂f/∂v = −D with D built from the blocks c n nᵀ on the spring pattern.
Implicit integrators use D (and Ψ for the incremental potential) with n lagged at the step start.
"""

from __future__ import annotations

import numpy as np

from ..linalg import block_structure, pair_block_values


def directions(model, x):
    """(s, d) unit spring directions (x_j − x_i)/|x_j − x_i|, 0 for a zero-length spring."""
    i, j = model.spring_indices.T
    d = x[j] - x[i]
    length = np.linalg.norm(d, axis=1, keepdims=True)
    return np.divide(d, length, out=np.zeros_like(d), where=length > 0)


def relative_normal_speed(model, x: np.ndarray, v: np.ndarray, n: np.ndarray | None = None) -> np.ndarray:
    i, j = model.spring_indices.T
    n = directions(model, x) if n is None else n
    return np.einsum("sa,sa->s", v[j] - v[i], n)


def force(model, x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(n, d) damping forces at positions x and velocities v."""
    out = np.zeros_like(v, dtype=float)
    if not model.has_damping:
        return out
    n = directions(model, x)
    f = -(model.spring_damping * relative_normal_speed(model, x, v, n))[:, None] * n
    i, j = model.spring_indices.T
    for axis in range(model.dim):
        out[:, axis] += np.bincount(j, f[:, axis], minlength=model.n_particles)
        out[:, axis] -= np.bincount(i, f[:, axis], minlength=model.n_particles)
    return out


def dissipation(model, x: np.ndarray, v: np.ndarray) -> float:
    """Ψ(v) = ½ Σ c ((v_j − v_i)·n)² with n from positions x."""
    return 0.5 * float(np.sum(model.spring_damping * relative_normal_speed(model, x, v) ** 2))


def jacobian_structure(model):
    return block_structure(model.spring_indices, model.dim)


def jacobian_values(model, x: np.ndarray) -> np.ndarray:
    """Entries of D = −∂f/∂v (positive semi-definite) on ``jacobian_structure``."""
    n = directions(model, x)
    local = model.spring_damping[:, None, None] * n[:, :, None] * n[:, None, :]
    return pair_block_values(local)
