"""Spring energy, in two forms selected by ``model.spring_energy``:

- ``hookean``:        E = ½ k (|d| − l0)²            (seeds 000, 001; l0 = 0 allowed: E = ½k|d|²)
- ``squared_length``: E = ½ k l0² (|d|²/l0² − 1)²    (the book behind seed 004)

with d = x_j − x_i. Both have a d×d Hessian w.r.t. d of the form A = a_par n nᵀ + a_perp (I − n nᵀ),
n = d/|d|, and the pair block is [[A, −A], [−A, A]] whose eigenvalues are 0 and 2·eig(A); so
projecting a spring's block to positive semi-definite is clamping a_par and a_perp at zero —
closed form, no eigen-solver. Loops are Numba-compiled (cache=True) over all springs at once.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from .. import jit_cache  # noqa: F401  (a full disk under Numba's cache: no error)

from ..linalg import block_structure, pair_block_values

NAME = "spring"


def active(model) -> bool:
    return model.n_springs > 0


@njit(cache=True)
def _energy(x, pairs, rest, stiffness, squared):
    total = 0.0
    for s in range(pairs.shape[0]):
        i, j = pairs[s, 0], pairs[s, 1]
        length2 = 0.0
        for a in range(x.shape[1]):
            diff = x[j, a] - x[i, a]
            length2 += diff * diff
        l0 = rest[s]
        if squared:
            strain = length2 / (l0 * l0) - 1.0
            total += 0.5 * stiffness[s] * l0 * l0 * strain * strain
        else:
            stretch = np.sqrt(length2) - l0
            total += 0.5 * stiffness[s] * stretch * stretch
    return total


@njit(cache=True)
def _force_factor(length2, l0, k, squared):
    """The scalar φ with ∂E/∂d = φ·d."""
    if squared:
        return 2.0 * k * (length2 / (l0 * l0) - 1.0)
    length = np.sqrt(length2)
    if l0 == 0.0:
        return k
    if length == 0.0:
        return 0.0  # the direction is undefined at a cusp; no preferred force
    return k * (length - l0) / length


@njit(cache=True)
def _gradient(x, pairs, rest, stiffness, squared, out):
    dim = x.shape[1]
    for s in range(pairs.shape[0]):
        i, j = pairs[s, 0], pairs[s, 1]
        length2 = 0.0
        for a in range(dim):
            diff = x[j, a] - x[i, a]
            length2 += diff * diff
        phi = _force_factor(length2, rest[s], stiffness[s], squared)
        for a in range(dim):
            g = phi * (x[j, a] - x[i, a])
            out[j, a] += g
            out[i, a] -= g


@njit(cache=True)
def _local_hessians(x, pairs, rest, stiffness, squared, project, out):
    dim = x.shape[1]
    d = np.empty(dim)
    for s in range(pairs.shape[0]):
        i, j = pairs[s, 0], pairs[s, 1]
        length2 = 0.0
        for a in range(dim):
            d[a] = x[j, a] - x[i, a]
            length2 += d[a] * d[a]
        length = np.sqrt(length2)
        k, l0 = stiffness[s], rest[s]
        if squared:
            ratio = length2 / (l0 * l0)
            a_perp = 2.0 * k * (ratio - 1.0)
            a_par = 2.0 * k * (3.0 * ratio - 1.0)
        elif l0 == 0.0 or length2 == 0.0:
            a_perp = k
            a_par = k
        else:
            a_perp = k * (1.0 - l0 / length)
            a_par = k
        if project:
            a_perp = max(a_perp, 0.0)
            a_par = max(a_par, 0.0)
        # n = d/|d| through 1/|d|, not 1/|d|²: that overflows once |d|² is subnormal (a spring
        # shorter than 1e-154 m, which a decaying zero-rest-length spring reaches) and 0·inf = NaN.
        inv_length = 1.0 / length if length2 > 0.0 else 0.0
        for a in range(dim):
            d[a] *= inv_length
        for a in range(dim):
            for b in range(dim):
                out[s, a, b] = (a_par - a_perp) * (d[a] * d[b]) + (a_perp if a == b else 0.0)


def _args(model):
    return (model.spring_indices, model.spring_rest_length, model.spring_stiffness,
            model.spring_energy == "squared_length")


def value(model, x: np.ndarray) -> float:
    return float(_energy(np.ascontiguousarray(x, dtype=float), *_args(model)))


def gradient(model, x: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x, dtype=float)
    _gradient(np.ascontiguousarray(x, dtype=float), *_args(model), out)
    return out


def local_hessians(model, x: np.ndarray, project_psd: bool = False,
                   stiffness: np.ndarray | None = None) -> np.ndarray:
    """(s, d, d) Hessians of each spring's energy w.r.t. its difference vector d; with
    ``stiffness``, for those stiffnesses instead of the model's (:mod:`hooke.adjoint` takes them
    at k = 1: the Hessian is linear in k)."""
    out = np.empty((model.n_springs, model.dim, model.dim))
    pairs, rest, own, squared = _args(model)
    _local_hessians(np.ascontiguousarray(x, dtype=float), pairs, rest,
                    own if stiffness is None else np.ascontiguousarray(stiffness, dtype=float),
                    squared, bool(project_psd), out)
    return out


def hessian_structure(model):
    return block_structure(model.spring_indices, model.dim)


def hessian_values(model, x: np.ndarray, project_psd: bool = False) -> np.ndarray:
    return pair_block_values(local_hessians(model, x, project_psd))


def lengths(model, x: np.ndarray) -> np.ndarray:
    """(s,) current spring lengths."""
    i, j = model.spring_indices.T
    return np.linalg.norm(x[j] - x[i], axis=1)


def force_magnitudes(model, x: np.ndarray) -> np.ndarray:
    """(s,) |∂E/∂d| of each spring [N]: the forces that balance each other inside a taut body
    (a string stretched between two pins), whose sum at a particle is round-off at rest."""
    i, j = model.spring_indices.T
    rest, k = model.spring_rest_length, model.spring_stiffness
    with np.errstate(over="ignore", invalid="ignore"):  # inf: positions past float64's range
        length = np.linalg.norm(x[j] - x[i], axis=1)
        if model.spring_energy == "squared_length":
            return 2.0 * k * np.abs(length * length / (rest * rest) - 1.0) * length
        return k * np.abs(length - rest)
