"""Dense factorisations compiled with a fixed order of operations (Numba, cache=True, no BLAS).

Contract: :func:`cholesky` factorises a symmetric positive definite matrix within its envelope
(each row from its first non-zero: nothing fills in before it), :func:`cholesky_solve` solves
with it, :func:`lu_solve` solves any square matrix by LU with partial pivoting, and
:func:`symmetric_solve` takes Cholesky where it succeeds and LU otherwise. They work in place on
caller-owned arrays, for the compiled steps (:mod:`hooke.integrators.implicit_compiled`) and the
joints' small normal matrices (:mod:`hooke.constraints`).

Why not LAPACK: its factorisations call the BLAS, whose kernels OpenBLAS picks by CPU (AVX-512,
AVX2 …) and which round differently; a chaotic motion turns that into different trajectories on
different machines (seed 003's pendulum study: max ΔL 2.8e-2 against 4.0e-2 at β_c = 0.2 from
the same code). These loops round the same on every CPU.
"""

from __future__ import annotations

import math

from numba import njit
from . import jit_cache  # noqa: F401  (a full disk under Numba's cache: no error)


@njit(cache=True, error_model="numpy")
def cholesky(matrix, factor, first):
    """factor = L with L Lᵀ = matrix (lower triangle), row i computed from column first[i], its
    first non-zero (nothing fills in before it). False when a pivot is not positive."""
    size = matrix.shape[0]
    for i in range(size):
        start = i
        for j in range(i):
            if matrix[i, j] != 0.0:
                start = j
                break
        first[i] = start
        for j in range(start, i + 1):
            total = matrix[i, j]
            for k in range(max(start, first[j]), j):
                total -= factor[i, k] * factor[j, k]
            if j < i:
                factor[i, j] = total / factor[j, j]
            elif total > 0.0:
                factor[i, i] = math.sqrt(total)
            else:
                return False
    return True


@njit(cache=True, error_model="numpy")
def cholesky_solve(factor, first, rhs, out):
    """out = (L Lᵀ)⁻¹ rhs."""
    size = factor.shape[0]
    for i in range(size):
        total = rhs[i]
        for k in range(first[i], i):
            total -= factor[i, k] * out[k]
        out[i] = total / factor[i, i]
    for i in range(size - 1, -1, -1):
        out[i] /= factor[i, i]
        value = out[i]
        for k in range(first[i], i):
            out[k] -= factor[i, k] * value


@njit(cache=True, error_model="numpy")
def lu_solve(matrix, factor, pivots, rhs, out):
    """out = matrix⁻¹ rhs by LU with partial pivoting (LAPACK ``getrf``/``getrs``: a column
    without a non-zero pivot is left as it is, and the solve then gives inf or NaN)."""
    size = matrix.shape[0]
    factor[:] = matrix
    for j in range(size):
        p = j
        for i in range(j + 1, size):
            if abs(factor[i, j]) > abs(factor[p, j]):
                p = i
        pivots[j] = p
        if p != j:
            for c in range(size):
                factor[j, c], factor[p, c] = factor[p, c], factor[j, c]
        if factor[j, j] != 0.0:
            for i in range(j + 1, size):
                factor[i, j] /= factor[j, j]
                for c in range(j + 1, size):
                    factor[i, c] -= factor[i, j] * factor[j, c]
    out[:] = rhs
    for j in range(size):  # whole rows were swapped: P first, then L
        out[j], out[pivots[j]] = out[pivots[j]], out[j]
    for j in range(size):
        for i in range(j + 1, size):
            out[i] -= factor[i, j] * out[j]
    for i in range(size - 1, -1, -1):
        for c in range(i + 1, size):
            out[i] -= factor[i, c] * out[c]
        out[i] /= factor[i, i]


@njit(cache=True, error_model="numpy")
def symmetric_solve(matrix, rhs, factor, index, out):
    """out = matrix⁻¹ rhs for a symmetric matrix: Cholesky, LU where it is not positive definite
    (:class:`hooke.linalg.DenseFactor`); ``index`` holds the rows' first columns, or the pivots."""
    if cholesky(matrix, factor, index):
        cholesky_solve(factor, index, rhs, out)
    else:
        lu_solve(matrix, factor, index, rhs, out)
