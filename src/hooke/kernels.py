"""Fused spring kernels of the explicit hot path: elastic force, damping and gravity.

Contract:
- :class:`SpringGather` is built once per model (``System.gather``) and evaluates the total
  force of the spring and gravity terms, the accelerations, or one whole symplectic Euler update,
  in two compiled passes (Numba, ``cache=True``). Its results equal the generic path
  (``spring.gradient`` + ``damping.force`` + gravity) to round-off (a different summation order).
- Formulation, with d = x_j − x_i and ∂E_s/∂d = φ_s d for both spring forms of
  :mod:`hooke.energies.spring`: the force of spring s on i is ψ_s d and on j is −ψ_s d, with
  ψ_s = φ_s + c_s (Δv·d)/|d|² (Δv = v_j − v_i: the damping of :mod:`hooke.energies.damping`).
  Pass 1 runs over the springs (sorted by first end) and computes each ψ_s once (the sqrt and
  divisions), writing it into both of the spring's slots of a CSR adjacency particle → incident
  springs. Pass 2 is a per-particle *gather*: f_p = Σ ψ (x_q − x_p) over p's slots, in the
  order of q, fused with the integration update. No atomics and no colouring: every ψ_s and
  every particle is written by exactly one thread, so the result is bit-identical for any
  thread count. Measured on the 100 × 100 cloth (2 threads): 7.3k steps/s for the kernels
  against 5.2k when each end evaluated its springs itself (each spring computed twice).
- Parallelism: springs and particles are split into contiguous chunks (equal spring counts;
  equal adjacency lengths), one per Numba thread, when the model has at least
  ``PARALLEL_MIN_SPRINGS`` springs; below that the serially compiled kernels run on the calling
  thread (a parallel launch costs tens of µs on 2 cores, and milliseconds when another process
  holds the other core: more than a small model's whole step). Above it, the accelerations and
  the symplectic Euler update choose at each call between all threads and the calling thread
  alone from their measured call times (:mod:`hooke.thread_choice`: with the other core busy,
  one thread is ~2× faster): the same bits either way.
- Runs: a model of at least ``PARALLEL_MIN_SPRINGS`` springs in its own order whose springs
  form long runs (consecutive first ends at one offset: grids, regular lattices) takes the run
  kernels of :mod:`hooke.spring_runs` for the accelerations and the symplectic Euler update
  instead (vectorised loops: 1.9× faster on the 100 × 100 cloth, one thread); the compiled
  integrators' inlined accelerations stay on the gather kernels.
- The kernels work on (n, 3) arrays: 1D and 2D models are zero-padded on the way in and cut on
  the way out (a copy of x and v per call, small next to the spring loop); with the dimension
  fixed at compile time the loops run 10% faster than with run-time checks of d. A renumbered
  model (below) permutes x and v in that same copy.
- Compiled with ``error_model="numpy"``: Python's error model puts a zero-division check (and
  exception path) on every division, which made the loop 2.5× slower; the divisions here are
  guarded (zero-length springs are handled before dividing).
- :func:`spring_matrix` writes the springs' Hessian and damping blocks straight into the data
  array of a fixed block CSR pattern (``System.combined_matrix`` for spring-only models).
- Locality: springs are taken in order of their first end and the adjacency is sorted by
  particle and, within a particle, by the other end, so both passes stream through memory when
  a spring's two ends are close in the numbering. That holds for a grid or a well-numbered mesh,
  not for a mesh or script that numbers particles in any order: random access into x and v
  then dominates once they leave the cache. So :class:`SpringGather` measures the mean spring
  span |i − j| once per model and keeps the user's order (:func:`renumbering_worth_trying`)
  when the model has at most ``IN_CACHE_PARTICLES`` particles (x and v stay in cache whatever
  the order), when the span is at most ``LOCAL_SPAN`` (the rows around a particle stay in
  cache; the n × n cloth has 0.75 n), or when it is at most n / ``BANDED_FRACTION`` (a banded
  order such as a lattice numbered layer by layer, whose front reverse Cuthill–McKee cannot
  shrink: on a 90³ lattice, 5M springs, computing RCM only to reject it cost 6 s); and when
  reverse Cuthill–McKee (:func:`locality_permutation`) does not shrink it ``RENUMBER_GAIN``-fold.
  Otherwise the springs and the adjacency are stored in the RCM numbering, the input copy
  scatters x and v into it (sequential reads, random writes: faster than a gather) and pass 2
  writes x⁺, v⁺ straight to the model's rows, so callers only ever see their own numbering.
  Measured on the 1000 × 1000 cloth (4M springs, x = 24 MB; 1 / 2 threads, the range of
  medians over four sessions on a shared 2-core machine): natural order 18–30 / 34–38 steps/s;
  randomly renumbered, in the user's order 2.5–3.5 / 4.4–7.7 (6–10× slower), renumbered
  inside 12–19 / 20–33 (RCM span 999 against 333,333); what is left of the gap is the random
  writes of every row of x and v into the inner copies and back out, each step. On the
  100 × 100 cloth (x = 240 KB, in cache) a random order cost 0–14% and renumbering it did not
  pay, and its span, 3,311, is under LOCAL_SPAN. Renumbering the natural cloths made them up
  to 25% slower on one thread (the extra copy). A parameter that is the same for every spring
  (typical: stiffness, damping) is stored once.
"""

from __future__ import annotations

import sys
import time

import numba
import numpy as np
from numba import njit, prange
from . import jit_cache  # noqa: F401  (a full disk under Numba's cache: no error)

from .energies import spring
from .spring_factor import (LENGTH, POSITIVE_REST, SQUARED, damping_term, general_factor,
                            positive_rest_factor, spring_form)
from .spring_runs import SpringRuns, find_runs, worth_running
from .thread_choice import ThreadChoice

PARALLEL_MIN_SPRINGS = 4000
# Renumbering (see "Locality" above): the user's order is kept for models of at most
# IN_CACHE_PARTICLES particles (x and v: 3 MB), when its mean spring span |i − j| is at most
# LOCAL_SPAN particles (2 × 4096 rows of x and v: 400 KB, an L2 cache) or n / BANDED_FRACTION
# (a random order has n / 3), or when reverse Cuthill–McKee does not shrink it RENUMBER_GAIN-fold.
IN_CACHE_PARTICLES = 65536
LOCAL_SPAN = 4096
BANDED_FRACTION = 64
RENUMBER_GAIN = 2.0
POOL_SIZE = 6  # output arrays kept for reuse: x⁺ and v⁺ of the last few steps


def _compact(values: np.ndarray) -> np.ndarray:
    """``values`` itself, or a length-1 array when every entry is the same (the kernels read
    entry 0 then)."""
    values = np.ascontiguousarray(values, dtype=float)
    if values.size and np.all(values == values[0]):
        return values[:1].copy()
    return values


@njit(inline="always")
def _difference(x, i, j):
    """d = x_j − x_i and |d|²."""
    d0 = x[j, 0] - x[i, 0]
    d1 = x[j, 1] - x[i, 1]
    d2 = x[j, 2] - x[i, 2]
    return d0, d1, d2, d0 * d0 + d1 * d1 + d2 * d2


@njit(inline="always")
def _damping_factor(v, i, j, d0, d1, d2, length2, c):
    """c (Δv·d)/|d|²: the damping part of ψ."""
    return damping_term((v[j, 0] - v[i, 0]) * d0 + (v[j, 1] - v[i, 1]) * d1
                        + (v[j, 2] - v[i, 2]) * d2, length2, c)


@njit(cache=True, error_model="numpy")
def _spring_factors_range(lo, hi, x, v, first, second, rest, stiffness, damping, form,
                          slot_first, slot_second, factor):
    """ψ_s for springs s in [lo, hi), written to factor[slot_first[s]] and factor[slot_second[s]].

    With every rest length positive (``form`` POSITIVE_REST) a first loop computes ψ with no
    per-spring branch (the branches of the general loop cost 20% of this pass on the 100 × 100
    cloth) and notes a spring of zero length, whose ψ it gets wrong (0/0); only then does the
    general loop, which every other form takes, compute the range again. Both give the same
    bits for a spring of positive length."""
    per_k = stiffness.shape[0] > 1
    per_c = damping.shape[0] > 1
    k_all, c_all = stiffness[0], damping[0]
    damped = per_c or c_all != 0.0
    if form == POSITIVE_REST:
        collapsed = False
        for s in range(lo, hi):
            i, j = first[s], second[s]
            d0, d1, d2, length2 = _difference(x, i, j)
            psi = positive_rest_factor(length2, stiffness[s] if per_k else k_all, rest[s])
            if damped:  # the same for every spring: the loop is compiled once with, once without
                psi += _damping_factor(v, i, j, d0, d1, d2, length2,
                                       damping[s] if per_c else c_all)
            collapsed |= length2 == 0.0
            factor[slot_first[s]] = psi
            factor[slot_second[s]] = psi
        if not collapsed:
            return
    for s in range(lo, hi):
        i, j = first[s], second[s]
        d0, d1, d2, length2 = _difference(x, i, j)
        psi = general_factor(length2, stiffness[s] if per_k else k_all, rest[s], form)
        if damped and length2 > 0.0:
            psi += _damping_factor(v, i, j, d0, d1, d2, length2, damping[s] if per_c else c_all)
        factor[slot_first[s]] = psi
        factor[slot_second[s]] = psi


@njit(inline="always")
def _gathered_force(p, x, indptr, other, factor):
    """Σ ψ (x_q − x_p) over particle p's adjacency slots."""
    f0 = 0.0
    f1 = 0.0
    f2 = 0.0
    xp0, xp1, xp2 = x[p, 0], x[p, 1], x[p, 2]
    for e in range(indptr[p], indptr[p + 1]):
        q = other[e]
        psi = factor[e]
        f0 += psi * (x[q, 0] - xp0)
        f1 += psi * (x[q, 1] - xp1)
        f2 += psi * (x[q, 2] - xp2)
    return f0, f1, f2


@njit(cache=True, error_model="numpy")
def _accelerations_range(lo, hi, x, indptr, other, factor, inverse_mass, gravity, rows, out):
    """out[r] = inverse_mass[p]·f_p + gravity for p in [lo, hi), 0 where inverse_mass[p] = 0;
    r = rows[p] (the model's index of inner particle p), or p itself when ``rows`` is None."""
    for p in range(lo, hi):
        if rows is None:  # pruned at compile time: the natural order's kernel has no branch
            r = p
        else:
            r = rows[p]
        w = inverse_mass[p]
        if w == 0.0:
            out[r, 0] = out[r, 1] = out[r, 2] = 0.0
            continue
        f0, f1, f2 = _gathered_force(p, x, indptr, other, factor)
        out[r, 0] = w * f0 + gravity[0]
        out[r, 1] = w * f1 + gravity[1]
        out[r, 2] = w * f2 + gravity[2]


@njit(cache=True, error_model="numpy")
def _symplectic_euler_range(lo, hi, x, v, indptr, other, factor, inverse_mass, gravity, h,
                            rows, x_out, v_out):
    """v⁺ = v + h a(x, v), x⁺ = x + h v⁺ for free p in [lo, hi); pinned ones are copied. Written
    to row rows[p] of x_out, v_out (p itself when ``rows`` is None)."""
    for p in range(lo, hi):
        if rows is None:
            r = p
        else:
            r = rows[p]
        w = inverse_mass[p]
        if w == 0.0:
            for a in range(3):
                x_out[r, a] = x[p, a]
                v_out[r, a] = v[p, a]
            continue
        f0, f1, f2 = _gathered_force(p, x, indptr, other, factor)
        velocity = v[p, 0] + h * (w * f0 + gravity[0])
        v_out[r, 0] = velocity
        x_out[r, 0] = x[p, 0] + h * velocity
        velocity = v[p, 1] + h * (w * f1 + gravity[1])
        v_out[r, 1] = velocity
        x_out[r, 1] = x[p, 1] + h * velocity
        velocity = v[p, 2] + h * (w * f2 + gravity[2])
        v_out[r, 2] = velocity
        x_out[r, 2] = x[p, 2] + h * velocity


@njit(cache=True, error_model="numpy")
def _permute_in_range(lo, hi, x, v, rank, x_inner, v_inner):
    """x_inner[rank[u], :d] = x[u] and the same for v, for the model's particles u in [lo, hi)
    (d = x's columns; the padding columns of the inner arrays stay zero). A scatter: the
    reads stream and the random writes do not stall, where a gather waits on random reads
    (1.5–2× slower on the shuffled 1000 × 1000 cloth)."""
    d = x.shape[1]
    for u in range(lo, hi):
        r = rank[u]
        if d == 3:  # unrolled per dimension: a loop over d ran at half the speed
            x_inner[r, 0], x_inner[r, 1], x_inner[r, 2] = x[u, 0], x[u, 1], x[u, 2]
            v_inner[r, 0], v_inner[r, 1], v_inner[r, 2] = v[u, 0], v[u, 1], v[u, 2]
        elif d == 2:
            x_inner[r, 0], x_inner[r, 1] = x[u, 0], x[u, 1]
            v_inner[r, 0], v_inner[r, 1] = v[u, 0], v[u, 1]
        else:
            x_inner[r, 0] = x[u, 0]
            v_inner[r, 0] = v[u, 0]


@njit(cache=True, error_model="numpy")
def _permute_in_serial(bounds, x, v, rank, x_inner, v_inner):
    _permute_in_range(bounds[0], bounds[-1], x, v, rank, x_inner, v_inner)


@njit(parallel=True, cache=True, error_model="numpy")
def _permute_in_parallel(bounds, x, v, rank, x_inner, v_inner):
    for chunk in prange(bounds.shape[0] - 1):  # rank is one-to-one: no row written twice
        _permute_in_range(bounds[chunk], bounds[chunk + 1], x, v, rank, x_inner, v_inner)


# The serial entry points never touch Numba's thread pool. Each runs pass 1 then pass 2. The
# accelerations are inlined into the compiled steps that call them per stage (rk45's, the
# frames' tensions): a call passing the ``springs`` tuple costs its arrays' reference counting,
# 60 of the 106 ns an evaluation took for seed 003's pendulum.
@njit(cache=True, error_model="numpy", inline="always")
def _accelerations_serial(spring_bounds, particle_bounds, x, v, springs, indptr, other, factor,
                          inverse_mass, gravity, rows, out):
    _spring_factors_range(spring_bounds[0], spring_bounds[-1], x, v, *springs, factor)
    _accelerations_range(particle_bounds[0], particle_bounds[-1], x, indptr, other, factor,
                         inverse_mass, gravity, rows, out)


@njit(parallel=True, cache=True, error_model="numpy")
def _accelerations_parallel(spring_bounds, particle_bounds, x, v, springs, indptr, other,
                            factor, inverse_mass, gravity, rows, out):
    for chunk in prange(spring_bounds.shape[0] - 1):
        _spring_factors_range(spring_bounds[chunk], spring_bounds[chunk + 1], x, v, *springs,
                              factor)
    for chunk in prange(particle_bounds.shape[0] - 1):
        _accelerations_range(particle_bounds[chunk], particle_bounds[chunk + 1], x, indptr,
                             other, factor, inverse_mass, gravity, rows, out)


@njit(cache=True, error_model="numpy")
def _symplectic_euler_serial(spring_bounds, particle_bounds, x, v, springs, indptr, other,
                             factor, inverse_mass, gravity, h, rows, x_out, v_out):
    _spring_factors_range(spring_bounds[0], spring_bounds[-1], x, v, *springs, factor)
    _symplectic_euler_range(particle_bounds[0], particle_bounds[-1], x, v, indptr, other, factor,
                            inverse_mass, gravity, h, rows, x_out, v_out)


@njit(parallel=True, cache=True, error_model="numpy")
def _symplectic_euler_parallel(spring_bounds, particle_bounds, x, v, springs, indptr, other,
                               factor, inverse_mass, gravity, h, rows, x_out, v_out):
    for chunk in prange(spring_bounds.shape[0] - 1):
        _spring_factors_range(spring_bounds[chunk], spring_bounds[chunk + 1], x, v, *springs,
                              factor)
    for chunk in prange(particle_bounds.shape[0] - 1):
        _symplectic_euler_range(particle_bounds[chunk], particle_bounds[chunk + 1], x, v, indptr,
                                other, factor, inverse_mass, gravity, h, rows, x_out, v_out)


def mean_span(pairs: np.ndarray) -> float:
    """Mean |i − j| over the springs (i, j): how far apart in memory a spring's two ends are."""
    return float(np.abs(pairs[:, 0] - pairs[:, 1]).mean()) if pairs.shape[0] else 0.0


def renumbering_worth_trying(span: float, n_particles: int) -> bool:
    """Whether a model of ``n_particles`` whose mean spring span is ``span`` is scattered
    enough in memory for an inner renumbering to pay (see "Locality" in the module docstring)."""
    return (n_particles > IN_CACHE_PARTICLES and span > LOCAL_SPAN
            and span > n_particles / BANDED_FRACTION)


def locality_permutation(pairs: np.ndarray, n_particles: int) -> np.ndarray:
    """The reverse Cuthill–McKee order of the spring graph: entry p is the particle to put at
    position p (a bandwidth of about one front: ~n for an n × n grid, whatever its numbering)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    ends = np.concatenate([pairs[:, 0], pairs[:, 1]])
    others = np.concatenate([pairs[:, 1], pairs[:, 0]])
    graph = csr_matrix((np.ones(ends.size, dtype=np.int8), (ends, others)),
                       shape=(n_particles, n_particles))
    return reverse_cuthill_mckee(graph, symmetric_mode=True).astype(np.int64)


def incidence(pairs: np.ndarray, n_particles: int):
    """CSR adjacency particle → incident springs, sorted by particle and then by the other end:
    (indptr (n+1,), other end (2s,), slot of each spring's first end (s,), of its second (s,))."""
    s = pairs.shape[0]
    ends = np.concatenate([pairs[:, 0], pairs[:, 1]])
    others = np.concatenate([pairs[:, 1], pairs[:, 0]])
    order = np.lexsort((others, ends))
    indptr = np.zeros(n_particles + 1, dtype=np.int64)
    np.cumsum(np.bincount(ends, minlength=n_particles), out=indptr[1:])
    slot = np.empty(2 * s, dtype=np.int64)
    slot[order] = np.arange(2 * s)
    return indptr, others[order], slot[:s], slot[s:]


class SpringGather:
    """The fused force kernels bound to one model's springs, masses and gravity.

    ``renumber``: None (default) lets the ordering metric decide whether the kernels work in an
    inner particle numbering (see the module docstring); True or False forces it. Inputs and
    outputs are always in the model's own numbering.

    Attributes: ``permutation`` (n,) — the model's index of inner particle p — or None when the
    model's own order is used; ``span`` and ``inner_span`` — the mean spring span |i − j| in the
    model's numbering and in the one the kernels use."""

    def __init__(self, model, renumber: bool | None = None):
        self.model = model
        n, s = model.n_particles, model.n_springs
        # Unsigned indices: Numba adds a negative-index wraparound to every lookup through a
        # signed one, which cost 15% of pass 1 and 10% of pass 2 (100 x 100 cloth, one thread).
        # (uint64 mixed with int64 arithmetic is float64 in Numba: only uint32 where it fits.)
        index_type = np.uint32 if max(n, 2 * s) < 2**32 else np.int64
        pairs = model.spring_indices
        self.span = self.inner_span = mean_span(pairs)
        self.permutation = None
        if renumber or (renumber is None and renumbering_worth_trying(self.span, n)):
            permutation = locality_permutation(pairs, n)
            rank = np.empty(n, dtype=np.int64)
            rank[permutation] = np.arange(n)
            inner_span = mean_span(rank[pairs])
            if renumber or inner_span * RENUMBER_GAIN <= self.span:
                self.permutation, self.inner_span = permutation, inner_span
                pairs = rank[pairs]
        order = np.argsort(pairs[:, 0], kind="stable")  # springs by first end
        pairs = pairs[order]
        indptr, other, slot_first, slot_second = incidence(pairs, n)
        self.indptr = indptr.astype(np.uint64)  # only ever a range's bounds: see index_type
        self.other = other.astype(index_type)
        self.springs = (pairs[:, 0].astype(index_type), pairs[:, 1].astype(index_type),
                        np.ascontiguousarray(model.spring_rest_length[order]),
                        _compact(model.spring_stiffness[order]),
                        _compact(model.spring_damping[order]),
                        spring_form(model.spring_energy, model.spring_rest_length),
                        slot_first.astype(index_type), slot_second.astype(index_type))
        self.factor = np.empty(2 * s)  # ψ in adjacency order, rewritten by every pass 1
        self.inverse_mass = np.where(model.pinned, 0.0, 1.0 / model.mass)
        if self.permutation is None:
            self._rows = None  # pass 2 writes row p itself
            self._inner = None
        else:
            self._rows = self.permutation.astype(index_type)
            self._rank = rank.astype(index_type)  # inner index of the model's particle u
            self.inverse_mass = self.inverse_mass[self.permutation]
            self._inner = (np.zeros((n, 3)), np.zeros((n, 3)))  # x, v in inner order (scratch)
        self.gravity = np.zeros(3)
        self.gravity[: model.dim] = model.gravity
        self._ones = np.ones(n)
        self._no_gravity = np.zeros(3)
        self._bounds: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._pool: list[np.ndarray] = []
        self.threads = ThreadChoice() if s >= PARALLEL_MIN_SPRINGS else None
        self.runs = None  # the run kernels, for a large model in its own order made of long runs
        if self.permutation is None and s >= PARALLEL_MIN_SPRINGS:
            runs, run_order = find_runs(model.spring_indices)
            if worth_running(runs):
                self.runs = SpringRuns(model, runs, run_order)

    @property
    def nbytes(self) -> int:
        """Memory held by the adjacency, the sorted springs and ψ (and, renumbered, the
        permutation and the inner copies of x and v) [bytes]."""
        arrays = [self.indptr, self.other, self.factor, self.inverse_mass]
        arrays += [] if self.permutation is None else [self._rows, self._rank]
        arrays += [a for a in self.springs if isinstance(a, np.ndarray)]
        arrays += list(self._inner or ())
        return sum(a.nbytes for a in arrays) + (self.runs.nbytes if self.runs else 0)

    def bytes_per_step(self, x_nbytes: int) -> int:
        """Bytes one fused symplectic Euler step must move at least: every array above read
        once, ψ written once more, x and v read and x⁺, v⁺ written (and, renumbered, the inner
        copies of x and v written once more); with the run kernels, theirs
        (:meth:`hooke.spring_runs.SpringRuns.bytes_per_step`)."""
        if self.runs is not None:
            return self.runs.bytes_per_step(x_nbytes)
        inner = sum(a.nbytes for a in self._inner) if self._inner else 0
        return self.nbytes + self.factor.nbytes + inner + 4 * x_nbytes

    def bounds(self, parallel: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(spring chunk bounds, particle chunk bounds) for the current Numba thread count (one
        chunk if not ``parallel``)."""
        parallel = parallel and self.model.n_springs >= PARALLEL_MIN_SPRINGS
        chunks = numba.get_num_threads() if parallel else 1
        if chunks not in self._bounds:
            springs = np.linspace(0, self.model.n_springs, chunks + 1).astype(np.int64)
            targets = np.linspace(0, self.indptr[-1], chunks + 1)
            particles = np.searchsorted(self.indptr, targets).astype(np.int64)
            particles[0], particles[-1] = 0, self.model.n_particles
            self._bounds[chunks] = (springs, particles)
        return self._bounds[chunks]

    def _three(self, a: np.ndarray) -> np.ndarray:
        """``a`` (n, d) as a C-contiguous float (n, 3) array (zero-padded for d < 3)."""
        if a.shape[1] == 3:
            return np.ascontiguousarray(a, dtype=float)
        out = np.zeros((a.shape[0], 3))
        out[:, : a.shape[1]] = a
        return out

    def _unused_buffer(self, shape) -> np.ndarray:
        """A float array of ``shape`` that nothing outside this pool references any more (the
        arrays of States the caller has dropped), or a new one added to the pool. Reusing them
        saves the page faults of fresh large allocations: 25% of a 100 × 100 cloth step."""
        for array in self._pool:
            # References: the pool, the loop variable and getrefcount's argument. Views, States
            # and results that still hold the array all add to the count.
            if sys.getrefcount(array) == 3 and array.shape == shape:
                return array
        array = np.empty(shape)
        if len(self._pool) < POOL_SIZE:
            self._pool.append(array)
        return array

    def _inputs(self, x, v, particle_bounds):
        """x and v as the kernels read them: (n, 3) C-contiguous, in the inner numbering. The
        permutation is applied by the copy that pads 1D/2D arrays anyway (one pass)."""
        if self._inner is None:
            return self._three(x), self._three(v)
        x_inner, v_inner = self._inner
        x, v = np.ascontiguousarray(x, dtype=float), np.ascontiguousarray(v, dtype=float)
        permute = _permute_in_parallel if particle_bounds.size > 2 else _permute_in_serial
        permute(particle_bounds, x, v, self._rank, x_inner, v_inner)  # any split of [0, n)
        return x_inner, v_inner

    def _timed(self, parallel_kernel, serial_kernel, x, v, *arguments):
        """Run the kernel's parallel or serial form as :attr:`threads` chooses (timing it), on
        x and v made ready for it."""
        parallel = self.threads is not None and self.threads.parallel()
        started = time.perf_counter()
        spring_bounds, particle_bounds = self.bounds(parallel)
        x, v = self._inputs(x, v, particle_bounds)
        kernel = parallel_kernel if spring_bounds.size > 2 else serial_kernel
        kernel(spring_bounds, particle_bounds, x, v, self.springs, self.indptr, self.other,
               self.factor, *arguments)
        if self.threads is not None:
            self.threads.record(time.perf_counter() - started)

    def _timed_runs(self, x, v, *arguments):
        """:meth:`SpringRuns.run` in the form :attr:`threads` chooses, timing it."""
        parallel = self.threads.parallel() and numba.get_num_threads() > 1
        started = time.perf_counter()
        self.runs.run(parallel, np.ascontiguousarray(x, dtype=float),
                      np.ascontiguousarray(v, dtype=float), *arguments)
        self.threads.record(time.perf_counter() - started)

    def _accelerations(self, x, v, inverse_mass, gravity):
        dim = x.shape[1]
        if self.runs is not None:
            out = np.empty((x.shape[0], dim))
            self._timed_runs(x, v, inverse_mass, gravity, None, out, out)
            return out
        out = np.empty((x.shape[0], 3))
        self._timed(_accelerations_parallel, _accelerations_serial, x, v, inverse_mass, gravity,
                    self._rows, out)
        return out if dim == 3 else np.ascontiguousarray(out[:, :dim])

    def forces(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        """(n, d) spring + damping + gravity forces on every particle (pinned included)."""
        out = self._accelerations(x, v, self._ones, self._no_gravity)
        out += self.model.mass[:, None] * self.model.gravity
        return out

    def accelerations(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        """(n, d) force / mass + gravity for free particles, 0 for pinned ones."""
        return self._accelerations(x, v, self.inverse_mass, self.gravity)

    def symplectic_euler(self, x: np.ndarray, v: np.ndarray, h: float):
        """(x⁺, v⁺) of one symplectic Euler step; pinned particles are copied unchanged."""
        dim = x.shape[1]
        if self.runs is not None:
            x_out = self._unused_buffer(x.shape)
            v_out = self._unused_buffer(x.shape)
            self._timed_runs(x, v, self.inverse_mass, self.gravity, float(h), x_out, v_out)
            return x_out, v_out
        x_out = self._unused_buffer((x.shape[0], 3))
        v_out = self._unused_buffer((x.shape[0], 3))
        self._timed(_symplectic_euler_parallel, _symplectic_euler_serial, x, v, self.inverse_mass,
                    self.gravity, float(h), self._rows, x_out, v_out)
        if dim < 3:
            return np.ascontiguousarray(x_out[:, :dim]), np.ascontiguousarray(v_out[:, :dim])
        return x_out, v_out


@njit(cache=True, error_model="numpy")
def _scatter_spring_blocks(local, x, pairs, damping, hessian_weight, damping_weight, bindptr,
                           free_index, spring_blocks, data):
    """data += the pair blocks [[B, −B], [−B, B]] of B = hessian_weight·A_s +
    damping_weight·c_s n nᵀ per spring (A_s its local Hessian, n its direction), at the block
    positions of :class:`hooke.linalg.BlockPattern`; blocks with a pinned end (id −1) are
    skipped. Serial: springs sharing a particle write the same entries."""
    dim = x.shape[1]
    block = np.empty((dim, dim))
    d = np.empty(dim)
    for s in range(pairs.shape[0]):
        i, j = pairs[s, 0], pairs[s, 1]
        length2 = 0.0
        for a in range(dim):
            d[a] = x[j, a] - x[i, a]
            length2 += d[a] * d[a]
        # c n nᵀ through n = d/|d| (as spring._local_hessians): 1/|d|² overflows for |d| < 1e-154
        inv_length = 1.0 / np.sqrt(length2) if length2 > 0.0 else 0.0
        c = damping_weight * damping[s]
        for a in range(dim):
            d[a] *= inv_length
        for a in range(dim):
            for b in range(dim):
                block[a, b] = hessian_weight * local[s, a, b] + c * d[a] * d[b]
        for q in range(4):  # blocks (i, i), (i, j), (j, i), (j, j)
            e = spring_blocks[s, q]
            if e < 0:
                continue
            f = free_index[i] if q < 2 else free_index[j]
            first = bindptr[f]
            row_stride = (bindptr[f + 1] - first) * dim
            base = dim * dim * first + (e - first) * dim
            sign = 1.0 if q == 0 or q == 3 else -1.0
            for a in range(dim):
                for b in range(dim):
                    data[base + a * row_stride + b] += sign * block[a, b]


def spring_matrix(model, pattern, x, mass_weight, hessian_weight, damping_weight,
                  project_psd=False):
    """mass_weight·M + hessian_weight·∇²U_springs(x) + damping_weight·D(x) (the dashpots and
    air drag's diagonal) on the free DOFs, its
    values written in place into the data array of ``pattern`` (a
    :class:`hooke.linalg.BlockPattern`): no triplets, no sort, no bincount per step."""
    return pattern.matrix(spring_matrix_data(model, pattern, x, mass_weight, hessian_weight,
                                             damping_weight, project_psd))


def spring_matrix_data(model, pattern, x, mass_weight, hessian_weight, damping_weight,
                       project_psd=False):
    """The (nnz,) data array of :func:`spring_matrix` (a pattern whose pairs begin with the
    springs may hold more blocks: they stay 0)."""
    data = np.zeros(pattern.nnz)
    diagonal = mass_weight * model.mass[~model.pinned]
    if model.has_drag:  # air drag's share of D is the diagonal C (hooke.energies.drag)
        diagonal = diagonal + damping_weight * model.drag[~model.pinned]
    data[pattern.diagonal_slots] = np.repeat(diagonal, model.dim)
    x = np.ascontiguousarray(x, dtype=float)
    local = spring.local_hessians(model, x, project_psd)
    _scatter_spring_blocks(local, x, model.spring_indices, model.spring_damping,
                           float(hessian_weight), float(damping_weight), pattern.bindptr,
                           pattern.free_index, pattern.spring_blocks, data)
    return data
