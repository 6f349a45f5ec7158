"""Spring kernels for models whose springs form long runs: contiguous, vectorised (SIMD) loops.

Contract:
- A *run* is a set of springs (i₀ + m, i₀ + m + δ), m = 0 … L − 1: consecutive first ends at one
  fixed offset δ. Grids and regular lattices are a few long runs (the 100 × 100 cloth: 299 runs
  of 99 to 9,900 springs, one per row and direction); :func:`find_runs` finds them and
  :func:`worth_running` says whether they are long enough to pay (mean ≥ ``MIN_MEAN_LENGTH``).
- :class:`SpringRuns` computes what :class:`hooke.kernels.SpringGather`'s gather kernels compute
  (the accelerations, or one whole symplectic Euler update) for such a model, in two compiled
  passes over x and v held by component, rows (3, n): (0) x (and v when damped) copied into the
  rows; (1) chunked by particles, each run's springs with an end in the chunk, in blocks of
  ``BLOCK``: every spring's force on its first end ψ_s d_s (ψ_s by :mod:`hooke.spring_factor`:
  the gather kernels' operations) into a small buffer, then −ψ d added to the force rows at
  second ends and +ψ d at first ends; then the update of the chunk's particles. Along a run
  every read and write is contiguous in the rows, so Numba's LLVM vectorises the loops (4–8
  springs per instruction); the gather kernels' indexed reads of (n, 3) rows do not. The buffer
  stays in the L1 cache, where an array of every spring's ψ d (the pass between them before)
  went to memory and back. A spring with ends in two chunks is computed by both.
- Every particle's force is summed in run order whatever the chunks and blocks: the result is
  bit-identical for any thread count. It equals the gather kernels' to round-off (another
  summation order).
- Measured on the 100 × 100 cloth (one symplectic Euler update, medians of
  interleaved calls): 285 µs with the gather kernels on one thread; here 123 µs on one thread
  (rows 5 µs, forces 108 µs of which ψ d 60, update 24) and 84 µs on two, against 129 and 123 µs
  with the array of every ψ d.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange, types
from numba.extending import overload
from . import jit_cache  # noqa: F401  (a full disk under Numba's cache: no error)

from .spring_factor import (POSITIVE_REST, damping_term, general_factor, positive_rest_factor,
                            spring_form)

MIN_MEAN_LENGTH = 16  # shorter runs spend more in each loop's set-up than they save
BLOCK = 256  # springs per block of ψ d: 6 KiB, held in the L1 cache


def find_runs(pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(runs (R, 4) [first spring, length, first end i₀, offset δ], the springs' order): the
    springs (rows of ``pairs``) sorted by offset and first end, cut where either breaks the run."""
    first = pairs[:, 0].astype(np.int64)
    offset = pairs[:, 1].astype(np.int64) - first
    order = np.lexsort((first, offset))
    first, offset = first[order], offset[order]
    starts = np.flatnonzero(np.concatenate(
        [[True], (np.diff(first) != 1) | (np.diff(offset) != 0)])) if order.size else order
    lengths = np.diff(np.append(starts, order.size))
    runs = np.stack([starts, lengths, first[starts], offset[starts]], axis=1).astype(np.int64)
    return runs.reshape(-1, 4), order


def worth_running(runs: np.ndarray) -> bool:
    """Whether the runs are long enough for the run kernels to beat the gather kernels."""
    return runs.shape[0] > 0 and runs[:, 1].mean() >= MIN_MEAN_LENGTH


@njit(inline="always")
def _rows_range(lo, hi, a, rows):
    """rows[c, p] = a[p, c] for p in [lo, hi) and a's columns c."""
    if a.shape[1] == 3:  # unrolled: a loop over the columns ran at half the speed
        for p in range(lo, hi):
            rows[0, p], rows[1, p], rows[2, p] = a[p, 0], a[p, 1], a[p, 2]
    else:
        for p in range(lo, hi):
            for c in range(a.shape[1]):
                rows[c, p] = a[p, c]


@njit(inline="always")
def _clip(start, length, lo, hi):
    """[m_lo, m_hi): the springs m of a run (m < ``length``) whose end start + m is in [lo, hi);
    empty (m_lo ≥ m_hi) if none."""
    return max(lo - start, 0), min(hi - start, length)


def _window(values, start, count):
    """values[start:start + count] of a per-spring parameter, or the one number all springs
    share (a float: each kernel is compiled for the types it is given, so the loops read an
    array or a constant, with no run-time select, which kept them from vectorising)."""


@overload(_window, inline="always")
def _window_typed(values, start, count):
    if isinstance(values, types.Array):
        return lambda values, start, count: values[start:start + count]
    return lambda values, start, count: values


def _entry(values, m):
    """Entry m of a :func:`_window`."""


@overload(_entry, inline="always")
def _entry_typed(values, m):
    if isinstance(values, types.Array):
        return lambda values, m: values[m]
    return lambda values, m: values


@njit(inline="always")
def _pulls(s, i, j, count, xr, vr, rest, stiffness, damping, form, damped, pull):
    """pull[:, :count] = ψ d of the ``count`` springs from s on (first ends i…, second ends j…),
    the pull of each on its first end (``stiffness`` and ``damping`` per spring or one float for
    all). Springs of positive rest length take a branch-free loop that notes a zero-length
    spring (0/0 there); then, and for the other forms, the general loop runs: the same bits for a
    spring of positive length."""
    a0, a1, a2 = xr[0, i:i + count], xr[1, i:i + count], xr[2, i:i + count]
    b0, b1, b2 = xr[0, j:j + count], xr[1, j:j + count], xr[2, j:j + count]
    u0, u1, u2 = vr[0, i:i + count], vr[1, i:i + count], vr[2, i:i + count]
    w0, w1, w2 = vr[0, j:j + count], vr[1, j:j + count], vr[2, j:j + count]
    l0 = rest[s:s + count]
    p0, p1, p2 = pull[0], pull[1], pull[2]
    k, c = _window(stiffness, s, count), _window(damping, s, count)
    collapsed = form != POSITIVE_REST
    if not collapsed:
        for m in range(count):
            d0, d1, d2 = b0[m] - a0[m], b1[m] - a1[m], b2[m] - a2[m]
            length2 = d0 * d0 + d1 * d1 + d2 * d2
            value = positive_rest_factor(length2, _entry(k, m), l0[m])
            if damped:  # the same for every spring: the loop is compiled once with, once without
                value += damping_term((w0[m] - u0[m]) * d0 + (w1[m] - u1[m]) * d1
                                      + (w2[m] - u2[m]) * d2, length2, _entry(c, m))
            collapsed |= length2 == 0.0
            p0[m], p1[m], p2[m] = value * d0, value * d1, value * d2
    if not collapsed:
        return
    for m in range(count):
        d0, d1, d2 = b0[m] - a0[m], b1[m] - a1[m], b2[m] - a2[m]
        length2 = d0 * d0 + d1 * d1 + d2 * d2
        value = general_factor(length2, _entry(k, m), l0[m], form)
        if damped and length2 > 0.0:
            value += damping_term((w0[m] - u0[m]) * d0 + (w1[m] - u1[m]) * d1
                                  + (w2[m] - u2[m]) * d2, length2, _entry(c, m))
        p0[m], p1[m], p2[m] = value * d0, value * d1, value * d2


@njit(inline="always")
def _add_pulls(dim, pull, first, count, sign, f, p):
    """f[c, p:p + count] += sign · pull[c, first:first + count] for c < dim (one store stream
    per loop: vectorised)."""
    for c in range(dim):
        force, fp = pull[c, first:first + count], f[c, p:p + count]
        if sign > 0:
            for m in range(count):
                fp[m] += force[m]
        else:
            for m in range(count):
                fp[m] -= force[m]


@njit(inline="always")
def _forces_range(lo, hi, dim, runs, xr, vr, springs, f):
    """f[c, p] = Σ ±(ψ_s d_s)_c over the springs at p, for p in [lo, hi) and c < dim.

    Run by run, in blocks of ``BLOCK`` springs whose ψ d stay in the cache: the block's springs
    with an end in [lo, hi) are computed, then subtracted at their second ends and added at
    their first ends. A particle's two springs in a run (it is the first end of spring m and the
    second end of m − δ) are computed in one block or the second end's earlier (δ > 0), so each
    particle takes its run's −ψ d before its +ψ d whatever [lo, hi) and the blocks are (the
    other way round for δ < 0): the same bits for any chunks."""
    rest, stiffness, damping, form, damped = springs  # (inline functions take no *args)
    pull = np.empty((3, BLOCK))
    for c in range(dim):
        f[c, lo:hi] = 0.0
    for r in range(runs.shape[0]):
        s0, length, i0, offset = runs[r, 0], runs[r, 1], runs[r, 2], runs[r, 3]
        first_lo, first_hi = _clip(i0, length, lo, hi)  # springs whose first end is in range
        second_lo, second_hi = _clip(i0 + offset, length, lo, hi)
        if first_hi <= first_lo:
            first_lo = first_hi = second_lo
        if second_hi <= second_lo:
            second_lo = second_hi = first_lo
        stop = max(first_hi, second_hi)
        for b0 in range(min(first_lo, second_lo), stop, BLOCK):
            b1 = min(b0 + BLOCK, stop)
            add_lo, add_hi = max(b0, first_lo), min(b1, first_hi)
            sub_lo, sub_hi = max(b0, second_lo), min(b1, second_hi)
            if add_hi <= add_lo and sub_hi <= sub_lo:
                continue  # a block in the gap between the two ranges
            _pulls(s0 + b0, i0 + b0, i0 + offset + b0, b1 - b0, xr, vr, rest, stiffness, damping,
                   form, damped, pull)
            if offset < 0:
                _add_pulls(dim, pull, add_lo - b0, add_hi - add_lo, 1, f, i0 + add_lo)
            _add_pulls(dim, pull, sub_lo - b0, sub_hi - sub_lo, -1, f, i0 + offset + sub_lo)
            if offset > 0:
                _add_pulls(dim, pull, add_lo - b0, add_hi - add_lo, 1, f, i0 + add_lo)


@njit(inline="always")
def _update_particle(p, dim, x, v, f, w, gravity, h, out_a, out_b):
    """Particle p's part of :func:`_update_range` (``dim`` a literal 3 there: an unrolled loop)."""
    for c in range(dim):
        if h is None:  # pruned at compile time: one kernel per update
            out_a[p, c] = w * f[c, p] + gravity[c] if w != 0.0 else 0.0
        elif w == 0.0:
            out_a[p, c], out_b[p, c] = x[p, c], v[p, c]
        else:
            velocity = v[p, c] + h * (w * f[c, p] + gravity[c])
            out_b[p, c] = velocity
            out_a[p, c] = x[p, c] + h * velocity


@njit(inline="always")
def _update_range(lo, hi, x, v, f, inverse_mass, gravity, h, out_a, out_b):
    """For p in [lo, hi): with ``h`` None, out_a[p] = inverse_mass[p] f_p + gravity (0 where
    inverse_mass is 0); else the symplectic Euler update v⁺ = v + h a, x⁺ = x + h v⁺ into
    out_a = x⁺, out_b = v⁺ (pinned particles copied)."""
    dim = out_a.shape[1]
    for p in range(lo, hi):
        if dim == 3:  # unrolled: 2.5× faster than the loop over a run-time dim
            _update_particle(p, 3, x, v, f, inverse_mass[p], gravity, h, out_a, out_b)
        else:
            _update_particle(p, dim, x, v, f, inverse_mass[p], gravity, h, out_a, out_b)


# The serial entry point never touches Numba's thread pool (as in hooke.kernels).
@njit(cache=True, error_model="numpy")
def _serial(bounds, runs, x, v, xr, vr, springs, f, inverse_mass, gravity, h, out_a, out_b):
    n = x.shape[0]
    _rows_range(0, n, x, xr)
    if vr.shape[1] == n:
        _rows_range(0, n, v, vr)
    _forces_range(0, n, x.shape[1], runs, xr, vr, springs, f)
    _update_range(0, n, x, v, f, inverse_mass, gravity, h, out_a, out_b)


@njit(parallel=True, cache=True, error_model="numpy")
def _parallel(bounds, runs, x, v, xr, vr, springs, f, inverse_mass, gravity, h, out_a, out_b):
    n = x.shape[0]
    for chunk in prange(bounds.shape[0] - 1):
        lo, hi = bounds[chunk], bounds[chunk + 1]
        _rows_range(lo, hi, x, xr)
        if vr.shape[1] == n:
            _rows_range(lo, hi, v, vr)
    for chunk in prange(bounds.shape[0] - 1):
        lo, hi = bounds[chunk], bounds[chunk + 1]
        _forces_range(lo, hi, x.shape[1], runs, xr, vr, springs, f)
        _update_range(lo, hi, x, v, f, inverse_mass, gravity, h, out_a, out_b)


def _shared(values: np.ndarray) -> float | np.ndarray:
    """The one value every spring has (a float), or the values (a float array)."""
    values = np.ascontiguousarray(values, dtype=float)
    return float(values[0]) if values.size and np.all(values == values[0]) else values


class SpringRuns:
    """The run kernels bound to one model's springs (in the model's own particle numbering).

    ``springs``: the model's rest lengths, stiffnesses and damping coefficients in run order (a
    stiffness or damping shared by every spring as one float), the springs' form and whether
    any is damped."""

    def __init__(self, model, runs: np.ndarray, order: np.ndarray):
        n = model.n_particles
        self.runs = runs
        damping = _shared(model.spring_damping[order])
        damped = bool(np.any(damping != 0.0))
        self.springs = (np.ascontiguousarray(model.spring_rest_length[order], dtype=float),
                        _shared(model.spring_stiffness[order]), damping,
                        spring_form(model.spring_energy, model.spring_rest_length), damped)
        self._rows = np.zeros((3, n))
        # v's rows only when ψ reads them; an empty array otherwise (the kernels test its size)
        self._velocity_rows = np.zeros((3, n)) if damped else np.zeros((3, 0))
        self._forces = np.empty((3, n))
        self._bounds: dict[int, np.ndarray] = {}

    @property
    def nbytes(self) -> int:
        """Memory held by the runs, the sorted spring parameters and the scratch rows [bytes]."""
        arrays = [self.runs, self._rows, self._velocity_rows, self._forces]
        return sum(a.nbytes for a in arrays + [a for a in self.springs if isinstance(a, np.ndarray)])

    def bytes_per_step(self, x_nbytes: int) -> int:
        """Bytes one symplectic Euler update must move at least: the runs and the springs'
        parameters read once (damping only when damped), the rows and the force rows written and
        read once, x and v read and x⁺, v⁺ written (ψ d stays in the cache)."""
        rest, stiffness, damping, _, damped = self.springs
        read = self.runs.nbytes + rest.nbytes + np.asarray(stiffness).nbytes \
            + (np.asarray(damping).nbytes if damped else 0)
        written_and_read = self._rows.nbytes + self._velocity_rows.nbytes + self._forces.nbytes
        return read + 2 * written_and_read + 4 * x_nbytes

    def bounds(self, parallel: bool) -> np.ndarray:
        """The particle chunks' bounds: one chunk per Numba thread if ``parallel``."""
        chunks = numba.get_num_threads() if parallel else 1
        if chunks not in self._bounds:
            n = self._rows.shape[1]
            self._bounds[chunks] = np.linspace(0, n, chunks + 1).astype(np.int64)
        return self._bounds[chunks]

    def run(self, parallel: bool, x, v, inverse_mass, gravity, h, out_a, out_b) -> None:
        """The accelerations (``h`` None: into ``out_a``) or one symplectic Euler update (into
        ``out_a`` = x⁺, ``out_b`` = v⁺) of x, v ((n, d) C-contiguous float arrays)."""
        kernel = _parallel if parallel else _serial
        kernel(self.bounds(parallel), self.runs, x, v, self._rows, self._velocity_rows,
               self.springs, self._forces, inverse_mass, gravity, h, out_a, out_b)
