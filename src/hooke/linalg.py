"""Sparse assembly on a fixed pattern and the linear-solver choice.

Contract:
- Every Hessian-like term describes its sparsity once per model as triplet ``(rows, cols)`` in
  the flattened DOF numbering (particle p, axis a → p·d + a) and gives per-step ``values`` in
  the same order. :class:`FixedPatternAssembler` turns a list of such structures into one CSR
  pattern, restricted to the free DOFs, computed once; ``assemble`` then costs one ``bincount``.
- :class:`SparseSolver` solves with a sequence of matrices on one pattern, by a direct factor
  (``DenseFactor`` up to ``DENSE_LIMIT`` unknowns; above, the fastest sparse factor installed,
  ``DIRECT_SOLVERS``: MKL PARDISO (pypardiso) and CHOLMOD (scikit-sparse) analyse the pattern
  once and reuse it, SciPy's SuperLU factorises each matrix afresh); or by CG, or CG
  preconditioned by smoothed-aggregation algebraic multigrid (pyamg) for systems a
  factorisation fills in too much (``"amg"``, which ``"auto"`` chooses by
  :meth:`SparseSolver._auto_method`).
- :func:`factorize` factorises one SPD matrix once and returns its solve (several right-hand
  sides at once): the constant matrix of ``fast_mass_spring``.
The order of ``DIRECT_SOLVERS`` is measured (W3 of benchmarks/bench.py, the 30k-DOF cloth
Hessian, factorisation + solve with the analysis reused): PARDISO 37–63 ms, CHOLMOD supernodal
88–123 ms (with OpenBLAS), SuperLU 234–260 ms. CHOLMOD runs simplicial below
``SUPERNODAL_MIN_DOFS`` unknowns and supernodal (BLAS-3 on dense blocks) above: on a 10k-unknown
cloth Laplacian simplicial factorises in 16 ms against 52 ms, on the 30k-DOF cloth Hessian
supernodal takes 153 ms against 275 ms.
"""

from __future__ import annotations

import ctypes
import importlib
import os
import weakref
from typing import Sequence

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg as spla


class OptionalModule:
    """An optional solver's module (scikit-sparse's CHOLMOD, pypardiso), imported when first
    needed: importing pypardiso loads MKL (0.35 s), which a run without a large sparse solve
    never needs. ``bool()`` says whether it imports here; ``load()`` gives it (None if not)."""

    def __init__(self, name: str):
        self.name = name
        self._module = None
        self._tried = False

    def load(self):
        if not self._tried:
            self._tried = True
            try:
                self._module = importlib.import_module(self.name)
            except ImportError:  # pragma: no cover - depends on the machine
                self._module = None
        return self._module

    def __bool__(self) -> bool:
        return self.load() is not None


# CHOLMOD: scikit-sparse only builds where SuiteSparse headers exist. MKL PARDISO: pip only, the
# fastest direct solver measured here.
CHOLMOD = OptionalModule("sksparse.cholmod")
PARDISO = OptionalModule("pypardiso")

DENSE_LIMIT = 200
SUPERNODAL_MIN_DOFS = 20_000
# "auto" (see SparseSolver): direct below AUTO_MIN_DOFS and AMG-CG from AMG_MIN_DOFS unknowns;
# between, AMG-CG when the factor would hold more than MAX_FILL_RATIO times the matrix's
# nonzeros (PARDISO predicts it in its analysis) or, where no prediction is at hand, when the
# matrix is volumetric (VOLUMETRIC_ROW_NNZ nonzeros per row or more: a 3D tetrahedral mesh has
# 38–43, a 3D cloth 27, a 2D one 18) or, with SuperLU, from SUPERLU_AMG_MIN_DOFS unknowns.
AUTO_MIN_DOFS = 20_000
AMG_MIN_DOFS = 1_500_000
MAX_FILL_RATIO = 25.0
VOLUMETRIC_ROW_NNZ = 36
SUPERLU_AMG_MIN_DOFS = 50_000


def _volumetric(matrix: sp.spmatrix) -> bool:
    return matrix.nnz >= VOLUMETRIC_ROW_NNZ * matrix.shape[0]


def _cholmod_mode(matrix: sp.spmatrix) -> str:
    """Supernodal (BLAS-3 on dense blocks) for large or volumetric matrices, whose factors are
    dense enough for it; simplicial for small sparse ones (a 10k-node scalar Laplacian: 16 ms
    against 52 ms). A 16³ lattice's 11,520-unknown matrix: 947 ms simplicial, 115 ms supernodal."""
    large = matrix.shape[0] >= SUPERNODAL_MIN_DOFS or _volumetric(matrix)
    return "supernodal" if large else "simplicial"


def factorize(matrix: sp.spmatrix):
    """A function b ↦ A⁻¹b (b of shape (n,) or (n, k)) for a symmetric positive definite A,
    factorised once: dense Cholesky up to ``DENSE_LIMIT`` unknowns, CHOLMOD when scikit-sparse
    imports, else SuperLU (symmetric mode, MMD_AT_PLUS_A ordering). Not PARDISO: pypardiso's
    solve re-hashes the matrix on every call (46 ms against CHOLMOD's 0.44 ms for a 10k-node
    Laplacian with 3 right-hand sides)."""
    size = matrix.shape[0]
    if size == 0:
        return lambda rhs: np.zeros_like(rhs, dtype=float)
    if size <= DENSE_LIMIT:
        factor = DenseFactor()
    elif CHOLMOD:
        factor = CholmodFactor()
    else:
        factor = SuperLUFactor(positive_definite=True)
    factor.factorize(matrix)
    return factor.solve


class DirectFactor:
    """The contract of every direct factor: ``factorize(A)`` for each new matrix of one sparsity
    pattern (the pattern's analysis is done on the first call and reused), then ``solve(b)``
    for b of shape (n,) or (n, k); ``name`` says which solver it is."""

    name = ""

    def fill_ratio(self, matrix: sp.spmatrix) -> float | None:
        """The factor's nonzeros over the matrix's upper triangle's, when this solver predicts
        it from its analysis alone (the analysis is then kept for ``factorize``); else None."""
        return None


class DenseFactor(DirectFactor):
    """Dense Cholesky, LU where the matrix is indefinite: faster than any sparse factorisation
    up to ``DENSE_LIMIT`` unknowns (square_drop's 50 DOFs: 0.28 → 0.18 ms per step). With
    ``indefinite`` (a saddle-point matrix, never positive definite) LU at once: a Cholesky
    attempt failing at the zero block cost 40 % of the LU's time (jointed_chain's 120 unknowns)."""

    name = "dense"

    def __init__(self, indefinite: bool = False):
        self._indefinite = indefinite

    def factorize(self, matrix: sp.spmatrix) -> None:
        dense = matrix.toarray()
        self._cholesky = self._lu = None
        if not self._indefinite:
            try:
                self._cholesky = scipy.linalg.cho_factor(dense)
                return
            except np.linalg.LinAlgError:
                pass
        self._lu = scipy.linalg.lu_factor(dense)

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        if self._cholesky is not None:
            return scipy.linalg.cho_solve(self._cholesky, rhs)
        return scipy.linalg.lu_solve(self._lu, rhs)


class SuperLUFactor(DirectFactor):
    """SciPy's SuperLU in symmetric mode with the MMD_AT_PLUS_A ordering (about 2× faster than
    its default ordering on these matrices). SuperLU keeps no analysis between matrices. With
    ``positive_definite`` the diagonal is always the pivot; otherwise a pivot may leave the
    diagonal when it is under 1% of its column (indefinite Hessians)."""

    name = "superlu"

    def __init__(self, positive_definite: bool = False):
        self._threshold = 0.0 if positive_definite else 0.01

    def factorize(self, matrix: sp.spmatrix) -> None:
        self._lu = spla.splu(sp.csc_matrix(matrix), permc_spec="MMD_AT_PLUS_A",
                             diag_pivot_thresh=self._threshold, options={"SymmetricMode": True})

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        return self._lu.solve(rhs)


class CholmodFactor(DirectFactor):
    """CHOLMOD (scikit-sparse): simplicial or supernodal (:func:`_cholmod_mode`), its symbolic
    analysis computed on the first matrix and reused. A matrix that is not
    positive definite is factorised by SuperLU instead (its LU pivots)."""

    name = "cholmod"

    def __init__(self):
        self._symbolic = None

    def factorize(self, matrix: sp.spmatrix) -> None:
        matrix = sp.csc_matrix(matrix)
        if self._symbolic is None:
            self._symbolic = CHOLMOD.load().analyze(matrix, mode=_cholmod_mode(matrix))
        try:
            self._solve = self._symbolic.cholesky(matrix)
        except CHOLMOD.load().CholmodNotPositiveDefiniteError:
            fallback = SuperLUFactor()
            fallback.factorize(matrix)
            self._solve = fallback.solve

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        return self._solve(rhs)


class PardisoFactor(DirectFactor):
    """MKL PARDISO (pypardiso) for symmetric matrices, the upper triangle passed: positive
    definite (mtype 2, Cholesky: the implicit integrators' matrices with a projected Hessian)
    until a factorisation meets a pivot that is not positive, then symmetric indefinite for good
    (mtype −2, Bunch–Kaufman pivoting; the analysis redone). The analysis (ordering, symbolic
    factorisation, phase 11) runs once for the pattern, then numeric factorisation (phase 22) per matrix and
    forward/backward substitution (phase 33) per right-hand side. pypardiso's public ``solve``
    re-runs the analysis whenever the values change (427 ms against 63 ms on W3's matrix), so
    its ctypes call is used with the phases set explicitly.

    Every call runs on one thread (MKL's thread-local setting, restored after): with two, the
    factorisation's sums run in an order that changes from call to call and with the thread
    count (12 factorisations of one 4,752-unknown lattice matrix gave 2 different solutions;
    MKL_NUM_THREADS=1 and 2 always differed), so runs were not reproducible. On the shared
    2-core machine one thread was not slower (factorisation + solve, medians of 6, against two
    threads): lattice 20³, 22,800 unknowns, 0.50–0.53 s against 0.55–0.58 s; the 29,994-DOF
    cloth 74–76 ms against 123–127 ms (load 1.5 from other work)."""

    name = "pardiso"

    POSITIVE_DEFINITE, INDEFINITE = 2, -2  # PARDISO's mtype
    NOT_POSITIVE = -4  # PARDISO's error for a pivot that is zero (or, with mtype 2, negative)

    def __init__(self, indefinite: bool = False):
        self._solver = None
        self._upper = None  # positions of the upper triangle in the fixed pattern
        # a saddle-point matrix is never positive definite: mtype 2 would refuse it in the
        # analysis already (error -3 where its constraint block has no diagonal)
        self.mtype = self.INDEFINITE if indefinite else self.POSITIVE_DEFINITE

    def _upper_triangle(self, matrix: sp.spmatrix) -> sp.csr_matrix:
        matrix = sp.csr_matrix(matrix)
        if self._upper is None:
            rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
            # positions, not a mask: taking them cost 0.24 ms on W3's 799,110 entries, the mask 3.7
            keep = np.flatnonzero(matrix.indices >= rows)
            indptr = np.zeros(matrix.shape[0] + 1, dtype=np.int64)
            np.cumsum(np.bincount(rows[keep], minlength=matrix.shape[0]), out=indptr[1:])
            self._upper = (keep, matrix.indices[keep], indptr)
        keep, indices, indptr = self._upper
        return sp.csr_matrix((matrix.data.take(keep), indices, indptr), shape=matrix.shape)

    def _analyse(self, upper: sp.csr_matrix) -> None:
        if self._solver is None:
            self._solver = PARDISO.load().PyPardisoSolver(mtype=self.mtype)
            # pypardiso looks for MKL in every new solver (find_library, then a recursive glob
            # of sys.prefix: 1.8 s each here) unless PYPARDISO_MKL_RT names it; a contact model
            # gets a new solver whenever its pattern changes (cloth_sphere: 419 in 60 steps)
            os.environ.setdefault("PYPARDISO_MKL_RT", self._solver.libmkl._name)
            self._threads = self._solver.libmkl.MKL_Set_Num_Threads_Local
            self._threads.argtypes, self._threads.restype = [ctypes.c_int], ctypes.c_int
            self._call(11, upper, np.zeros(upper.shape[0]))
            # Iterative refinement only where pivots were perturbed (iparm(8) = 0, honoured once
            # iparm(1) = 1 says the defaults phase 11 filled in are set): MKL's default did two
            # refinement steps in every solve (iparm(7) = 2), each a matrix product and a
            # substitution, on W3's Cholesky factor with no perturbed pivot; without them the
            # solve took 10.5 ms instead of 23.7 (medians of 7) and the residual stayed at 5e-15.
            self._solver.iparm[0], self._solver.iparm[7] = 1, 0
            # MKL's memory is not Python's: freed with this factor, or when the mtype changes
            self._release = weakref.finalize(self, self._solver.free_memory, True)

    def _call(self, phase: int, matrix: sp.csr_matrix, rhs: np.ndarray) -> np.ndarray:
        """PARDISO's ``phase`` on one thread (see the class's note)."""
        self._solver.set_phase(phase)
        previous = self._threads(1)
        try:
            return self._solver._call_pardiso(matrix, rhs)
        finally:
            self._threads(previous)

    def fill_ratio(self, matrix: sp.spmatrix) -> float:
        upper = self._upper_triangle(matrix)
        self._analyse(upper)
        return float(self._solver.iparm[17]) / max(upper.nnz, 1)  # iparm(18): nonzeros in L

    def factorize(self, matrix: sp.spmatrix) -> None:
        self._matrix = self._upper_triangle(matrix)
        self._analyse(self._matrix)
        try:
            self._call(22, self._matrix, np.zeros(matrix.shape[0]))
        except PARDISO.load().pardiso_wrapper.PyPardisoError as error:
            if self.mtype != self.POSITIVE_DEFINITE or f"code {self.NOT_POSITIVE}." not in str(error):
                raise
            self._release()
            self._solver, self.mtype = None, self.INDEFINITE
            self.factorize(matrix)

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        return self._call(33, self._matrix, np.ascontiguousarray(rhs, dtype=float))


# The sparse direct solvers by name, fastest first (W3, the 30k-DOF cloth Hessian, factorisation
# + solve: PARDISO 63 ms, CHOLMOD supernodal 88, SuperLU 234), with whether each is installed.
# (Whether one is installed is an OptionalModule: true or false once asked, imported then.)
DIRECT_SOLVERS = {"pardiso": (PardisoFactor, PARDISO),
                  "cholmod": (CholmodFactor, CHOLMOD),
                  "superlu": (SuperLUFactor, True)}
INSTALL_HINT = {"pardiso": "pip install pypardiso (or hooke[fast])",
                "cholmod": "apt-get install libsuitesparse-dev, then pip install "
                           "'scikit-sparse<0.5' (or hooke[fast])"}


def installed_direct_solvers() -> list[str]:
    """Names of the sparse direct solvers that import here, fastest first."""
    return [name for name, (_, installed) in DIRECT_SOLVERS.items() if installed]


def block_structure(pairs: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Triplet rows/cols of the (2d × 2d) blocks coupling particle pairs (i, j).

    Entry order per pair: block (a, b) for a, b in (i, j), then row axis, then column axis —
    the order of ``pair_block_values``.
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    axes = np.arange(dim)
    rows, cols = [], []
    for a in range(2):
        for b in range(2):
            r = pairs[:, a, None, None] * dim + axes[None, :, None]
            c = pairs[:, b, None, None] * dim + axes[None, None, :]
            r, c = np.broadcast_arrays(r, c)
            rows.append(r)
            cols.append(c)
    return np.stack(rows, 1).reshape(-1), np.stack(cols, 1).reshape(-1)


def pair_block_values(local: np.ndarray) -> np.ndarray:
    """Values for ``block_structure`` from per-pair d×d matrices A: the blocks [[A, −A], [−A, A]]."""
    return np.stack([local, -local, -local, local], axis=1).reshape(-1)


def diagonal_structure(n_dofs: int) -> tuple[np.ndarray, np.ndarray]:
    index = np.arange(n_dofs, dtype=np.int64)
    return index, index


class FixedPatternAssembler:
    """Sums several triplet structures into one CSR matrix over the selected DOFs.

    ``keep`` holds the DOFs that stay (the free ones); entries in a removed row or column are
    dropped, which is exactly P A Pᵀ with seed 001's selection matrix P.
    """

    def __init__(self, structures: Sequence[tuple[np.ndarray, np.ndarray]], n_dofs: int,
                 keep: np.ndarray | None = None):
        rows = np.concatenate([np.asarray(r, dtype=np.int64) for r, _ in structures])
        cols = np.concatenate([np.asarray(c, dtype=np.int64) for _, c in structures])
        self.sizes = [len(r) for r, _ in structures]
        new_index = np.full(n_dofs, -1, dtype=np.int64)
        keep = np.arange(n_dofs) if keep is None else np.asarray(keep, dtype=np.int64)
        new_index[keep] = np.arange(keep.size)
        rows, cols = new_index[rows], new_index[cols]
        self._mask = (rows >= 0) & (cols >= 0)
        self.size = int(keep.size)
        keys = rows[self._mask] * self.size + cols[self._mask]
        unique, self._slot = np.unique(keys, return_inverse=True)
        self.nnz = unique.size
        self._indices = (unique % self.size).astype(np.int32)
        self._indptr = np.searchsorted(unique // self.size, np.arange(self.size + 1)).astype(np.int32)

    def assemble(self, values: Sequence[np.ndarray], weights: Sequence[float] | None = None) -> sp.csr_matrix:
        """CSR matrix Σ weights[k]·values[k] on the fixed pattern."""
        return self.matrix(self.data(values, weights))

    def data(self, values: Sequence[np.ndarray], weights: Sequence[float] | None = None) -> np.ndarray:
        """The (nnz,) values of :meth:`assemble`'s matrix, in the order of ``pattern``."""
        if weights is not None:
            values = [w * np.asarray(v) for w, v in zip(weights, values)]
        return np.bincount(self._slot, weights=np.concatenate(values)[self._mask], minlength=self.nnz)

    @property
    def pattern(self) -> tuple[np.ndarray, np.ndarray]:
        """(indptr, indices) of the CSR pattern."""
        return self._indptr, self._indices

    def matrix(self, data: np.ndarray) -> sp.csr_matrix:
        """The CSR matrix with these values (nnz,) on the fixed pattern."""
        return sp.csr_matrix((data, self._indices, self._indptr), shape=(self.size, self.size))


class BlockPattern:
    """The CSR pattern of M + ∇²U_springs + D on the free DOFs, built from the spring graph
    directly (no triplets): d×d blocks for every free particle (diagonal) and every spring with
    two free ends, columns sorted — the same pattern :class:`FixedPatternAssembler` makes from
    the triplets, at a fraction of the memory and time (4 million springs: seconds instead of
    sorting 290 million triplets).

    Block layout: block row f (free particle f) holds ``nb = bindptr[f+1] − bindptr[f]`` blocks
    with global block ids bindptr[f] … in column order; entry (a, b) of block id e in row f is
    ``data[d²·bindptr[f] + a·nb·d + (e − bindptr[f])·d + b]``. ``spring_blocks`` (s, 4) holds the
    block ids of each spring's (i, i), (i, j), (j, i), (j, j) blocks, −1 where an end is pinned.
    """

    def __init__(self, pairs: np.ndarray, pinned: np.ndarray, dim: int):
        n = pinned.shape[0]
        free = np.flatnonzero(~pinned)
        self.dim = dim
        self.free_index = np.full(n, -1, dtype=np.int64)
        self.free_index[free] = np.arange(free.size)
        nf = free.size
        fi, fj = self.free_index[pairs[:, 0]], self.free_index[pairs[:, 1]]
        both = (fi >= 0) & (fj >= 0)
        keys = np.concatenate([np.arange(nf, dtype=np.int64) * (nf + 1),
                               fi[both] * nf + fj[both], fj[both] * nf + fi[both]])
        keys.sort()
        keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if keys.size else keys
        rows, cols = keys // max(nf, 1), keys % max(nf, 1)
        self.bindptr = np.zeros(nf + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=nf), out=self.bindptr[1:])

        def block_id(a, b):
            ids = np.searchsorted(keys, np.where((a >= 0) & (b >= 0), a * nf + b, 0))
            return np.where((a >= 0) & (b >= 0), ids, -1)

        self.spring_blocks = np.stack([block_id(fi, fi), block_id(fi, fj), block_id(fj, fi),
                                       block_id(fj, fj)], axis=1)
        self._keys, self._nf = keys, nf
        counts = np.diff(self.bindptr)  # blocks per block row
        self.size = nf * dim
        self.nnz = keys.size * dim * dim
        index_type = np.int32 if max(self.nnz, self.size) < 2**31 else np.int64
        row_length = np.repeat(counts * dim, dim)
        self.indptr = np.zeros(self.size + 1, dtype=index_type)
        np.cumsum(row_length, out=self.indptr[1:])
        # Columns: block row f repeats its block columns (each expanded to d) for each of d rows.
        block_columns = (cols[:, None] * dim + np.arange(dim)).astype(index_type)  # (nnzb, d)
        row_of_block = np.repeat(np.arange(nf), counts)
        self.indices = np.empty(self.nnz, dtype=index_type)
        within = np.arange(keys.size) - self.bindptr[row_of_block]
        for a in range(dim):
            start = dim * dim * self.bindptr[row_of_block] + a * counts[row_of_block] * dim
            positions = (start + within * dim)[:, None] + np.arange(dim)
            self.indices[positions.ravel()] = block_columns.ravel()
        diagonal = np.searchsorted(keys, np.arange(nf, dtype=np.int64) * (nf + 1))
        axes = np.arange(dim)
        self.diagonal_slots = (dim * dim * self.bindptr[:-1, None] + axes * (counts[:, None] * dim)
                               + (diagonal - self.bindptr[:-1])[:, None] * dim + axes).ravel()

    def matrix(self, data: np.ndarray) -> sp.csr_matrix:
        """The CSR matrix with these values (nnz,) on this pattern."""
        return sp.csr_matrix((data, self.indices, self.indptr), shape=(self.size, self.size))

    def slots(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Positions in ``data`` of the entries (rows, cols), given in flattened model DOFs:
        −1 where the row or column is a pinned particle's (the entry is dropped, as P A Pᵀ),
        −2 where the pattern has no block for the pair of particles."""
        d, nf = self.dim, max(self._nf, 1)
        f, g = self.free_index[rows // d], self.free_index[cols // d]
        free = (f >= 0) & (g >= 0)
        key = np.where(free, f * nf + g, 0)
        block = np.minimum(np.searchsorted(self._keys, key), max(self._keys.size - 1, 0))
        found = free & (self._keys[block] == key) if self._keys.size else np.zeros_like(free)
        f = np.where(free, f, 0)
        first = self.bindptr[f]
        slot = (d * d * first + (rows % d) * (self.bindptr[f + 1] - first) * d
                + (block - first) * d + cols % d)
        return np.where(found, slot, np.where(free, -2, -1))


def triplets_to_csr(rows, cols, values, n: int) -> sp.csr_matrix:
    return sp.coo_matrix((values, (rows, cols)), shape=(n, n)).tocsr()


class SparseSolver:
    """Solves A y = b for a sequence of symmetric matrices that share one sparsity pattern.

    ``method="direct"``: :class:`DenseFactor` up to ``DENSE_LIMIT`` unknowns, above it the
    fastest sparse direct solver installed (``DIRECT_SOLVERS``: MKL PARDISO, CHOLMOD, SuperLU;
    the first two analyse the pattern once and reuse it; ``indefinite``: the matrices are
    saddle-point matrices, and the dense factor goes to LU at once). ``"pardiso"``, ``"cholmod"``,
    ``"superlu"`` force one of those at any size (an error if it is not installed).
    ``method="cg"``: conjugate gradients with a Jacobi preconditioner to relative residual
    ``cg_rtol``, falling back to the direct solve if CG fails (A indefinite). Measured on
    soft3d's 2,049-DOF implicit matrix here (its mesh before issue 17): SuperLU symmetric 22 ms, SuperLU default mode
    43 ms, CHOLMOD (reference BLAS) 27–37 ms, CG 4 ms. ``method="amg"``: CG with a
    smoothed-aggregation AMG preconditioner (pyamg) to ``cg_rtol``, falling back to the direct
    solve if it fails; memory grows linearly with the unknowns, where a factorisation's fill-in
    grows faster. ``method="auto"``: "direct" or "amg", decided on the first matrix by
    :meth:`_auto_method` from its size and the factor's predicted fill (module constants).
    Measured on the 1000 × 1000 cloth (3M DOFs, one implicit_euler_linear step): PARDISO 17 s
    per step after a 42 s first step, 9.5 GB peak; AMG-CG 13–17 s per step, 4.9 GB peak.

    ``name`` is the solver doing the work (after the first solve for "auto" and "direct").
    A matrix whose pattern differs from the previous one's (a contact term's active set changed,
    see :mod:`hooke.energies`) gets a fresh direct factor: PARDISO's and CHOLMOD's analyses hold
    for one pattern only.
    """

    METHODS = ("direct", "cg", "amg", "auto", *DIRECT_SOLVERS)

    def __init__(self, method: str = "auto", cg_rtol: float = 1e-10, indefinite: bool = False):
        from .errors import HookeInputError

        if method not in self.METHODS:
            raise HookeInputError("solver", f"must be one of {', '.join(self.METHODS)}", method)
        if method in DIRECT_SOLVERS and not DIRECT_SOLVERS[method][1]:
            raise HookeInputError("solver", f"'{method}' is not installed here "
                                  f"({INSTALL_HINT[method]})", method)
        if method == "amg":
            _import_pyamg()
        self.method = method
        self.cg_rtol = cg_rtol
        self.indefinite = indefinite
        self._factor = None
        self._pattern = None  # (indptr, indices) of the last matrix factorised
        self._factorised = None  # the matrix the direct factor holds, if the last solve used it

    @property
    def name(self) -> str:
        """The method, or for "direct" (and "auto" once it chose it) the factor doing the work."""
        if self.method == "direct" and self._factor is not None:
            return self._factor.name
        return self.method

    def solve(self, matrix: sp.spmatrix, rhs: np.ndarray) -> np.ndarray:
        self._factorised = None
        if matrix.shape[0] == 0:
            return np.zeros_like(rhs)
        # SciPy's own words for it (a step failure); CHOLMOD given a NaN aborted the process
        # with "double free or corruption" (the viewer's cloth_sphere at height 1e300, issue 15).
        if not (np.isfinite(sp.csr_matrix(matrix).data).all() and np.isfinite(rhs).all()):
            raise ValueError("array must not contain infs or NaNs")
        if self.method == "auto":
            self.method = self._auto_method(matrix)
        if self.method == "amg":
            y = self._amg(matrix, rhs)
            if y is not None:
                return y
        if self.method == "cg":
            diagonal = matrix.diagonal()
            if np.all(diagonal > 0):
                preconditioner = sp.diags(1.0 / diagonal)
                y, info = spla.cg(matrix, rhs, rtol=self.cg_rtol, atol=0.0, M=preconditioner,
                                  maxiter=10 * matrix.shape[0])
                if info == 0:
                    return y
        if not self._same_pattern(matrix):
            self._factor = None
        factor = self.direct_factor(matrix.shape[0])
        factor.factorize(matrix)
        self._factorised = matrix
        return factor.solve(rhs)

    def resolve(self, matrix: sp.spmatrix,
                rhs: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray] | None:
        """(A, A⁻¹ rhs) for the matrix A of the last :meth:`solve`, by its factor (no new
        factorisation: a substitution), when A has ``matrix``'s CSR pattern (their data then
        align); None when it has not or that solve did not factorise (CG, AMG)."""
        last = self._factorised
        if last is None or not _equal_patterns(_csr_pattern(last), _csr_pattern(matrix)):
            return None
        return sp.csr_matrix(last), self._factor.solve(rhs)

    def _same_pattern(self, matrix: sp.spmatrix) -> bool:
        """Whether ``matrix`` has the last factorised matrix's pattern (then remembered)."""
        last, self._pattern = self._pattern, _csr_pattern(matrix)
        return last is None or _equal_patterns(self._pattern, last)

    def _auto_method(self, matrix: sp.spmatrix) -> str:
        """"amg" or "direct" for this pattern (module constants, measured on implicit Euler
        matrices, time per solve: direct / AMG-CG). A 25³ lattice (45k unknowns, fill ratio
        28): PARDISO 0.8 s, CHOLMOD 1.0, SuperLU 12.9 / AMG 0.35 s; 20³ (23k, 22): PARDISO 0.24,
        SuperLU 2.9 / 0.31; 40³ (187k, 50): PARDISO 13 s and 2.4 GB / 1.8 s and 0.8 GB; a
        159² cloth (76k, 9.1): PARDISO 0.15, CHOLMOD 0.39, SuperLU 1.1 / 0.34; 501² (753k,
        11.4): PARDISO 2.4 s / 3.5 s."""
        size = matrix.shape[0]
        if not _pyamg_available() or size < AUTO_MIN_DOFS:
            return "direct"
        if size >= AMG_MIN_DOFS:
            return "amg"
        factor = self.direct_factor(size)
        fill = factor.fill_ratio(matrix)
        if fill is not None:
            amg = fill > MAX_FILL_RATIO
        else:
            amg = _volumetric(matrix) or (factor.name == "superlu"
                                          and size >= SUPERLU_AMG_MIN_DOFS)
        if amg:
            self._factor = None  # an analysis kept for nothing would hold its memory
        return "amg" if amg else "direct"

    def direct_factor(self, size: int):
        """The direct factor this solver uses for matrices of ``size`` unknowns (made once)."""
        if self._factor is None:
            if self.method in DIRECT_SOLVERS:
                name = self.method
            elif size <= DENSE_LIMIT:
                self._factor = DenseFactor(self.indefinite)
                return self._factor
            else:
                # CHOLMOD factorises positive definite matrices only (it would fall back to
                # SuperLU every time): a saddle-point matrix goes to the next one
                name = next(name for name in installed_direct_solvers()
                            if not (self.indefinite and name == "cholmod"))
            factor = DIRECT_SOLVERS[name][0]
            self._factor = factor(self.indefinite) if factor is PardisoFactor else factor()
        return self._factor

    def _amg(self, matrix: sp.spmatrix, rhs: np.ndarray) -> np.ndarray | None:
        """CG preconditioned by a smoothed-aggregation AMG V-cycle (the hierarchy is rebuilt for
        each matrix: its values change every step); None when it does not converge.

        pyamg estimates spectral radii from a start vector of NumPy's global random generator,
        so the hierarchy, and the run, changed from run to run (three runs of a 14³ lattice,
        three different v): it is built with that generator seeded, its state restored after."""
        pyamg = _import_pyamg()
        matrix = sp.csr_matrix(matrix)
        state = np.random.get_state()
        np.random.seed(0)
        try:
            hierarchy = pyamg.smoothed_aggregation_solver(matrix, symmetry="symmetric",
                                                          max_coarse=500)
        finally:
            np.random.set_state(state)
        residuals: list[float] = []
        y = hierarchy.solve(rhs, tol=self.cg_rtol, accel="cg", maxiter=200,
                            residuals=residuals)
        if residuals and residuals[-1] <= self.cg_rtol * max(residuals[0], np.finfo(float).tiny):
            return y
        return None


def _csr_pattern(matrix: sp.spmatrix) -> tuple[np.ndarray, np.ndarray]:
    matrix = sp.csr_matrix(matrix)
    return matrix.indptr, matrix.indices


def _equal_patterns(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> bool:
    """Whether two (indptr, indices) describe one pattern (the same arrays, or equal ones)."""
    return all(u is v or np.array_equal(u, v) for u, v in zip(a, b))


def _pyamg_available() -> bool:
    try:
        import pyamg  # noqa: F401
    except ImportError:  # pragma: no cover - pyamg is a core dependency
        return False
    return True


def _import_pyamg():
    try:
        import pyamg
    except ImportError:  # pragma: no cover - pyamg is a core dependency
        from .errors import HookeInputError

        raise HookeInputError("solver", "'amg' needs pyamg (pip install pyamg)", "amg") from None
    return pyamg
