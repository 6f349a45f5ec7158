"""The Newmark-family step of :mod:`.newmark` compiled whole, for small models (Numba, cache=True).

Contract:
- :meth:`CompiledAlpha.build` returns a kernel for a system whose forces are only springs (both
  energy forms, spring damping), gravity and air drag towards a steady wind (−c_i (v_i − w),
  :mod:`hooke.energies.drag`; its −∂f/∂v = C enters the matrix as γ'C, as in the generic
  step), with or without joints, without contact or moving pins, when a banded LU of its
  saddle-point matrix is cheap (``MAX_BAND_WORK``); else None, and
  :class:`.newmark.AlphaMethod` keeps its generic sparse path. A wind that varies in time (the
  air's ``motion``) takes the generic path: w(t) is a Python callable the kernel cannot call.
- :meth:`CompiledAlpha.run` takes many steps in one call with the generic step's formulas, Newton
  convergence test, simplified-Newton refactor rule and velocity projection (solved here with the
  band LU of [M, Gᵀ; G, 0]; module docstring of :mod:`.newmark`), and
  counts steps, Newton iterations and factorisations alike. Only the summation order of the
  forces and the LU (banded partial pivoting here, SuperLU there) differ, so the two paths agree
  to round-off (tests/test_newmark_compiled.py: within 1e-10 relative over 3000 steps of the
  seed 002 scenes, 2000 of the crane in its wind) unless round-off tips a refactor decision or
  the motion amplifies it (the jointed chain's whip), as two runs with different LU libraries
  would. It stops at the first step whose Newton iteration fails, whose matrix is exactly
  singular or whose accepted state is not finite and says which (``FAILED``, ``SINGULAR``,
  ``NON_FINITE``: its arrays then still hold the last finite state); the caller raises the
  errors.
- :meth:`CompiledAlpha.run_frames` does the same for a block of frames in one call: each
  frame's steps as one :meth:`CompiledAlpha.run` call would take them, its state written into
  (frames, n, d) arrays; it stops at a failing step as ``run`` does, naming the frame.
- Unknowns are the free DOFs then the joints' tensions (N of them), renumbered once by reverse
  Cuthill–McKee so that the matrix is banded, half-bandwidth b: b = 6 for a 3D chain of any
  length; top N = 21, b = 11; pendulum N = 8, b = 6. The factorisation is LAPACK's ``gbtf2``
  (partial pivoting in band storage, ≈ 2·N·b² multiply-adds), kept across steps as SuperLU's is.

Why: the generic step costs 40–60 µs of Python and SciPy calls per Newton iteration whatever the
model's size. ``benchmarks/bench_joints.py``, steps/s, median of 3 runs (2 shared cores), generic
→ compiled: top 5.0k → 136k, crane 8.2k → 191k, double pendulum 6.4k → 352k, chain n=80 0.83k →
13k (seed 002's C++: 3.5k, 3.6k, 22.6k, 15.3); a run's setup (~1.4 ms) is much of the first three.
One ``advance(state, t + h, 1)`` call (the viewer) costs 13 µs instead of 250 µs on the pendulum.
Band vs SuperLU, µs per step (generic/compiled): damped 3D spring grids 10×10 278/127, 20×20
655/692 (N·(b + 1)² = 4.7e6), 30×30 965/1551 (2.3e7); a 20×20 grid with 380 joints 7381/2163
(1.1e7): hence ``MAX_BAND_WORK``.

Numba's cache does not notice edits to the helpers imported from :mod:`hooke.energies.spring` and
:mod:`hooke.constraints` (it checks this file only): after changing them, touch this file. The
agreement tests (tests/test_newmark_compiled.py) fail on a stale cache.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse.csgraph as csgraph
from numba import njit
from .. import jit_cache  # noqa: F401  (a full disk under Numba's cache: no error)

from ..constraints import _geometry, _scatter
from ..energies import drag as air_drag
from ..energies import gravity, spring
from ..energies.spring import _force_factor, _local_hessians
from ..saddle_point import SaddlePointMatrix
from .compiled import has_only_terms, max_abs

# Above this N·(b + 1)², SuperLU's fill-reducing ordering beats the band (measured: see above).
MAX_BAND_WORK = 1.5e7

OK, FAILED, SINGULAR, NON_FINITE = 0, 1, 2, 3


@njit(cache=True)
def _forces(x, v, pairs, rest, stiffness, damping, squared, mass, gravity_vector, drag, wind,
            out):
    """out = spring + damping + gravity forces (the ψ form of :mod:`hooke.kernels`) + air drag
    −c_p (v_p − w) (``drag`` all zeros without it)."""
    n, dim = x.shape
    out[:] = 0.0
    for s in range(pairs.shape[0]):
        i, j = pairs[s, 0], pairs[s, 1]
        length2 = 0.0
        along = 0.0
        for c in range(dim):
            diff = x[j, c] - x[i, c]
            length2 += diff * diff
            along += (v[j, c] - v[i, c]) * diff
        psi = _force_factor(length2, rest[s], stiffness[s], squared)
        if damping[s] != 0.0 and length2 > 0.0:
            psi += damping[s] * along / length2
        for c in range(dim):
            f = psi * (x[j, c] - x[i, c])
            out[i, c] += f
            out[j, c] -= f
    for p in range(n):
        for c in range(dim):
            out[p, c] += mass[p] * gravity_vector[c] - drag[p] * (v[p, c] - wind[c])


@njit(cache=True)
def _add(band, offset, position, u, w, value):
    """A[u, w] += value in band storage (unknowns u, w; their band positions in ``position``)."""
    if u >= 0 and w >= 0:
        band[offset + position[u] - position[w], position[w]] += value


@njit(cache=True)
def _assemble_mass_jacobian(mass, joint_i, joint_j, normal, unknown, position, offset, n_free,
                            band):
    """[M, Gᵀ; G, 0] into ``band`` (the velocity projection's matrix, and the Newton matrix's
    first part); ``unknown[particle·d + axis]`` is the unknown of a DOF (−1 when pinned)."""
    dim = normal.shape[1]
    band[:] = 0.0
    for p in range(mass.shape[0]):
        for c in range(dim):
            u = unknown[p * dim + c]
            _add(band, offset, position, u, u, mass[p])
    for k in range(joint_i.shape[0]):
        row = n_free + k
        for a in range(dim):
            ia, ja = unknown[joint_i[k] * dim + a], unknown[joint_j[k] * dim + a]
            _add(band, offset, position, row, ia, -normal[k, a])
            _add(band, offset, position, ia, row, -normal[k, a])
            _add(band, offset, position, row, ja, normal[k, a])
            _add(band, offset, position, ja, row, normal[k, a])


@njit(cache=True)
def _assemble(x, tension, mass, pairs, rest, stiffness, damping, drag, squared, joint_i,
              joint_j, length, normal, unknown, position, offset, n_free, beta_p, gamma_p, local,
              band):
    """The saddle-point matrix of :mod:`hooke.saddle_point` (a = 1, b = β', c = γ') into ``band``."""
    dim = x.shape[1]
    _assemble_mass_jacobian(mass, joint_i, joint_j, normal, unknown, position, offset, n_free,
                            band)
    for p in range(drag.shape[0]):  # γ' C: air drag's −∂f/∂v (not in the projection's matrix)
        if drag[p] != 0.0:
            for c in range(dim):
                u = unknown[p * dim + c]
                _add(band, offset, position, u, u, gamma_p * drag[p])
    _local_hessians(x, pairs, rest, stiffness, squared, False, local)
    n = np.empty(dim)
    for s in range(pairs.shape[0]):
        i, j = pairs[s, 0], pairs[s, 1]
        length2 = 0.0
        for c in range(dim):
            n[c] = x[j, c] - x[i, c]
            length2 += n[c] * n[c]
        # γ' c n nᵀ through n = d/|d|: 1/|d|² overflows for a spring shorter than 1e-154 m
        inv_length = 1.0 / np.sqrt(length2) if length2 > 0.0 else 0.0
        for c in range(dim):
            n[c] *= inv_length
        weight = gamma_p * damping[s]
        for a in range(dim):
            for b in range(dim):
                value = beta_p * local[s, a, b] + weight * n[a] * n[b]
                ia, ib = unknown[i * dim + a], unknown[i * dim + b]
                ja, jb = unknown[j * dim + a], unknown[j * dim + b]
                _add(band, offset, position, ia, ib, value)
                _add(band, offset, position, ja, jb, value)
                _add(band, offset, position, ia, jb, -value)
                _add(band, offset, position, ja, ib, -value)
    for k in range(joint_i.shape[0]):
        i, j = joint_i[k], joint_j[k]
        weight = beta_p * tension[k] / length[k]
        for a in range(dim):
            ia, ja = unknown[i * dim + a], unknown[j * dim + a]
            for b in range(dim):
                value = weight * ((1.0 if a == b else 0.0) - normal[k, a] * normal[k, b])
                ib, jb = unknown[i * dim + b], unknown[j * dim + b]
                _add(band, offset, position, ia, ib, value)
                _add(band, offset, position, ja, jb, value)
                _add(band, offset, position, ia, jb, -value)
                _add(band, offset, position, ja, ib, -value)


@njit(cache=True)
def _factor(x, tension, length, normal, mass, pairs, rest, stiffness, damping, drag, squared,
            joint_i, joint_j, unknown, position, lower, upper, n_free, beta_p, gamma_p, local,
            band, pivots, factor_x, factor_tension):
    """Assemble and factorise the matrix at (x, T), remembering that point: a resumed run
    refactorises there (:func:`_refactor`) and goes on bit-identically. False when singular."""
    _assemble(x, tension, mass, pairs, rest, stiffness, damping, drag, squared, joint_i, joint_j,
              length, normal, unknown, position, lower + upper, n_free, beta_p, gamma_p, local,
              band)
    factor_x[:] = x
    factor_tension[:] = tension
    return _band_factor(band, lower, upper, pivots)


@njit(cache=True)
def _refactor(x, tension, mass, pairs, rest, stiffness, damping, drag, squared, joint_i,
              joint_j, unknown, position, lower, upper, n_free, beta_p, gamma_p, band, pivots,
              factor_x, factor_tension):
    """:func:`_factor` at a stored point (the joint geometry recomputed as the step does)."""
    m, dim = joint_i.size, x.shape[1]
    length, normal = np.empty(m), np.empty((m, dim))
    if m:
        _geometry(x, joint_i, joint_j, length, normal)
    local = np.empty((pairs.shape[0], dim, dim))
    return _factor(x, tension, length, normal, mass, pairs, rest, stiffness, damping, drag,
                   squared, joint_i, joint_j, unknown, position, lower, upper, n_free, beta_p,
                   gamma_p, local, band, pivots, factor_x, factor_tension)


@njit(cache=True)
def _band_factor(band, lower, upper, pivots):
    """LU with partial pivoting of the band matrix in place (LAPACK ``gbtf2``); A[i, j] is
    band[lower + upper + i − j, j], with ``lower`` extra rows on top for the fill of row swaps.
    False when a pivot column is exactly zero (the matrix is singular)."""
    size = band.shape[1]
    offset = lower + upper
    last = 0  # the last column that row swaps have reached
    for j in range(size):
        below = min(lower, size - 1 - j)
        p = 0
        largest = abs(band[offset, j])
        for i in range(1, below + 1):
            if abs(band[offset + i, j]) > largest:
                largest = abs(band[offset + i, j])
                p = i
        pivots[j] = j + p
        if largest == 0.0:
            return False
        last = max(last, min(j + upper + p, size - 1))
        if p != 0:
            for c in range(j, last + 1):
                swap = band[offset + j - c, c]
                band[offset + j - c, c] = band[offset + j + p - c, c]
                band[offset + j + p - c, c] = swap
        for i in range(1, below + 1):
            band[offset + i, j] /= band[offset, j]
        for c in range(j + 1, last + 1):
            u = band[offset + j - c, c]
            if u != 0.0:
                for i in range(1, below + 1):
                    band[offset + j + i - c, c] -= band[offset + i, j] * u
    return True


@njit(cache=True)
def _band_solve(band, lower, upper, pivots, b):
    """Solve A y = b in place with the factors of :func:`_band_factor`."""
    size = band.shape[1]
    offset = lower + upper
    for j in range(size):
        p = pivots[j]
        if p != j:
            b[j], b[p] = b[p], b[j]
        for i in range(1, min(lower, size - 1 - j) + 1):
            b[j + i] -= band[offset + i, j] * b[j]
    for j in range(size - 1, -1, -1):
        b[j] /= band[offset, j]
        for i in range(max(0, j - offset), j):
            b[i] -= band[offset + i - j, j] * b[j]


@njit(cache=True)
def _alpha_steps(n_steps, t, x, v, a, at, tension, xn, vn, an, atn, tn, history, counts,
                 mass, pinned, x0, pairs, rest, stiffness, damping, squared, gravity_vector,
                 drag, wind, joint_i, joint_j, joint_rest, free, unknown, position, lower, upper,
                 coefficients, max_iterations, full_newton_after, band, pivots, factored,
                 factor_x, factor_tension, projection, projection_pivots):
    """Up to ``n_steps`` steps from (t, x, v, a, ã, T), updated in place (the step of
    :meth:`.newmark.AlphaMethod.step`). Returns (status, steps taken, Newton history length,
    t at the start of the failing step, at the end of the non-finite one, or t reached); the
    failing iterate stays in x⁺, v⁺ (x, v keep the last finite state)."""
    (h, alpha_m, alpha_f, beta, gamma, beta_p, refactor_rate, tol, length_scale, gamma_p,
     round_off, stalled_rate) = coefficients
    n, dim = x.shape
    n_free, m = free.size, joint_i.size
    force, pull = np.empty((n, dim)), np.empty((n, dim))
    local = np.empty((pairs.shape[0], dim, dim))
    length, normal = np.empty(m), np.empty((m, dim))
    r, g = np.empty(n_free), np.empty(m)
    delta, solution = np.empty(n_free + m), np.empty(n_free + m)
    # Flat views: free[u] is the index of free DOF u in them.
    an_flat, force_flat, pull_flat = an.reshape(-1), force.reshape(-1), pull.reshape(-1)
    vn_flat = vn.reshape(-1)
    at_weight = (1.0 - alpha_f) / (1.0 - alpha_m)
    tol_length = tol * length_scale
    for step in range(n_steps):
        t1 = t + h
        at_shift = (alpha_f * a - alpha_m * at) / (1.0 - alpha_m)
        x_base = x + h * v + h * h * (0.5 - beta) * at
        v_base = v + h * (1.0 - gamma) * at
        an[:] = a  # predictor: the last acceleration; pinned particles do not move
        for p in range(n):
            if pinned[p]:
                an[p] = 0.0
        tn[:] = tension
        last_move = last_r = np.inf
        converged = False
        for iteration in range(max_iterations + 1):
            atn[:] = at_weight * an + at_shift
            for p in range(n):
                for c in range(dim):
                    xn[p, c] = x0[p, c] if pinned[p] else x_base[p, c] + h * h * beta * atn[p, c]
                    vn[p, c] = 0.0 if pinned[p] else v_base[p, c] + h * gamma * atn[p, c]
            _forces(xn, vn, pairs, rest, stiffness, damping, squared, mass, gravity_vector, drag,
                    wind, force)
            scale = 0.0
            for u in range(n_free):
                inertia = mass[free[u] // dim] * an_flat[free[u]]
                r[u] = inertia - force_flat[free[u]]
                scale = max(scale, abs(force_flat[free[u]]), abs(inertia))
            if m:
                _geometry(xn, joint_i, joint_j, length, normal)
                pull[:] = 0.0
                _scatter(normal, tn, joint_i, joint_j, pull)
                for u in range(n_free):
                    r[u] += pull_flat[free[u]]
                    scale = max(scale, abs(pull_flat[free[u]]))
                for k in range(m):
                    g[k] = length[k] - joint_rest[k]
            r_norm, g_norm = max_abs(r, n_free), max_abs(g, m)
            history[iteration, 0], history[iteration, 1] = r_norm, g_norm
            floor = round_off * max_abs(xn.reshape(-1), n * dim)
            stalled = last_move <= floor and r_norm >= stalled_rate * last_r
            converged = g_norm <= max(tol_length, floor) and (r_norm <= tol * scale or stalled)
            if converged or iteration == max_iterations or not np.isfinite(r_norm + g_norm):
                break
            if not factored[0]:
                if not _factor(xn, tn, length, normal, mass, pairs, rest, stiffness, damping,
                               drag, squared, joint_i, joint_j, unknown, position, lower, upper,
                               n_free, beta_p, gamma_p, local, band, pivots, factor_x,
                               factor_tension):
                    return SINGULAR, step, iteration + 1, t1
                factored[0] = True
                counts[2] += 1
            for u in range(n_free):
                solution[position[u]] = -r[u]
            for k in range(m):
                solution[position[n_free + k]] = -(g[k] / beta_p)
            _band_solve(band, lower, upper, pivots, solution)
            for u in range(n_free + m):
                delta[u] = solution[position[u]]
            if not np.all(np.isfinite(delta)):
                break
            move = beta_p * max_abs(delta, n_free)
            if move > refactor_rate * last_move or iteration >= full_newton_after:
                factored[0] = False  # the stale Jacobian contracts too slowly: refactor next time
            for u in range(n_free):
                an_flat[free[u]] += delta[u]
            for k in range(m):
                tn[k] += delta[n_free + k]
            last_move, last_r = move, r_norm
            counts[1] += 1
        if not converged:
            factored[0] = False
            return FAILED, step, iteration + 1, t
        if m:  # v⁺ onto G v = 0: [M, Gᵀ; G, 0] [Δv; μ] = [0; −G v⁺] (normal at x⁺ from above)
            _assemble_mass_jacobian(mass, joint_i, joint_j, normal, unknown, position,
                                    lower + upper, n_free, projection)
            if not _band_factor(projection, lower, upper, projection_pivots):
                return SINGULAR, step, iteration + 1, t1
            solution[:] = 0.0
            for k in range(m):
                rate = 0.0
                for c in range(dim):
                    rate += (vn[joint_j[k], c] - vn[joint_i[k], c]) * normal[k, c]
                solution[position[n_free + k]] = -rate
            _band_solve(projection, lower, upper, projection_pivots, solution)
            for u in range(n_free):
                vn_flat[free[u]] += solution[position[u]]
        if not (np.all(np.isfinite(xn)) and np.all(np.isfinite(vn))):
            return NON_FINITE, step, 0, t1
        x[:] = xn
        v[:] = vn
        a[:] = an
        at[:] = atn
        tension[:] = tn
        t = t1
        counts[0] += 1
    return OK, n_steps, 0, t


@njit(cache=True)
def _alpha_frames(times, steps, frame, t, x, v, a, at, tension, x_out, v_out, *rest):
    """Frames ``frame`` on of a block: for each frame f, ``steps[f]`` steps of
    :func:`_alpha_steps` (``rest``: its arguments after ``tension``) from the previous frame's
    time (``t`` for the first), then the state into x_out[f], v_out[f] — what one
    :func:`_alpha_steps` call per frame computes, bit for bit. Returns (status, the frame
    reached, its steps taken, Newton history length, t as :func:`_alpha_steps` returns it):
    OK with every frame written, else the frame whose step failed (those before it written)."""
    for f in range(frame, times.size):
        start = t if f == frame else times[f - 1]
        status, done, n_history, t = _alpha_steps(steps[f], start, x, v, a, at, tension, *rest)
        if status != OK:
            return status, f, done, n_history, t
        x_out[f] = x
        v_out[f] = v
    return OK, times.size, 0, 0, t


class CompiledAlpha:
    """The compiled step bound to one integrator's system and coefficients."""

    def __init__(self, integrator, position: np.ndarray, half_bandwidth: int,
                 refactor_rate: float, full_newton_after: int, round_off: float,
                 stalled_rate: float):
        system, model = integrator.system, integrator.system.model
        self.terms = tuple(system.terms)  # the kernel computes exactly these
        self.coefficients = (integrator.dt, integrator.alpha_m, integrator.alpha_f,
                             integrator.beta, integrator.gamma, integrator.beta_prime,
                             refactor_rate, integrator.tol, integrator.length_scale,
                             integrator.gamma_prime, round_off, stalled_rate)
        self.limits = (int(integrator.max_iterations), int(full_newton_after))
        size = position.size
        self.lower = self.upper = half_bandwidth
        self.position = position  # of each unknown in the banded order
        self.unknown = np.full(model.n_dofs, -1, dtype=np.int64)
        self.unknown[system.free_dofs] = np.arange(system.free_dofs.size)
        squared = model.spring_energy == "squared_length"
        joints = model.joint_indices
        self.model_arrays = (
            model.mass, model.pinned, model.x0, model.spring_indices, model.spring_rest_length,
            model.spring_stiffness, model.spring_damping, squared, model.gravity,
            air_drag.coefficients(model), air_drag.wind(model, 0.0),
            np.ascontiguousarray(joints[:, 0]), np.ascontiguousarray(joints[:, 1]),
            model.joint_length, system.free_dofs, self.unknown, self.position, self.lower,
            self.upper)
        self.band = np.zeros((2 * self.lower + self.upper + 1, size))
        self.pivots = np.zeros(size, dtype=np.int64)
        self.projection = np.zeros_like(self.band)  # [M, Gᵀ; G, 0] of the velocity projection
        self.projection_pivots = np.zeros(size, dtype=np.int64)
        self.factored = np.zeros(1, dtype=np.bool_)
        # (x, T) where ``band`` was last factorised: what a checkpoint needs to rebuild it
        self.factor_x = np.zeros_like(model.x0)
        self.factor_tension = np.zeros(model.n_joints)
        self.history = np.empty((integrator.max_iterations + 1, 2))
        self.counts = np.zeros(3, dtype=np.int64)  # steps, Newton iterations, factorisations
        self.iterate = tuple(np.empty_like(model.x0) for _ in range(4))  # x⁺, v⁺, a⁺, ã⁺
        self.iterate_tension = np.empty(model.n_joints)
        # _alpha_steps' arguments after the state (a, ã, T): the same arrays every call
        self.arguments = (*self.iterate, self.iterate_tension, self.history, self.counts,
                          *self.model_arrays, self.coefficients, *self.limits, self.band,
                          self.pivots, self.factored, self.factor_x, self.factor_tension,
                          self.projection, self.projection_pivots)

    @classmethod
    def build(cls, integrator, refactor_rate: float, full_newton_after: int, round_off: float,
              stalled_rate: float) -> "CompiledAlpha | None":
        """The kernel for this integrator's model, or None when it needs the generic path."""
        system, model = integrator.system, integrator.system.model
        if (model.pinned_motions or model.wind_motion is not None
                or not all(term in (spring, gravity) for term in system.terms)
                or system.free_dofs.size + model.n_joints == 0):
            return None
        pattern = SaddlePointMatrix(system).assembler
        pattern = pattern.matrix(np.ones(pattern.nnz))
        order = csgraph.reverse_cuthill_mckee(pattern.tocsr(), symmetric_mode=True)
        position = np.empty(order.size, dtype=np.int64)
        position[order] = np.arange(order.size)
        rows, cols = pattern.nonzero()
        half_bandwidth = int(np.max(np.abs(position[rows] - position[cols]), initial=0))
        if order.size * (half_bandwidth + 1) ** 2 > MAX_BAND_WORK:
            return None
        return cls(integrator, position, half_bandwidth, refactor_rate, full_newton_after,
                   round_off, stalled_rate)

    def usable(self, system) -> bool:
        """False once a term was added to the system (the viewer's cursor spring)."""
        return has_only_terms(system, self.terms)

    def run(self, n_steps, t, x, v, a, at, tension):
        """Steps from the arrays given (updated in place): (status, steps taken, t, the Newton
        history of a failing step); counts in ``counts`` (see :func:`_alpha_steps`)."""
        self.counts[:] = 0
        status, done, n_history, t = _alpha_steps(n_steps, t, x, v, a, at, tension,
                                                  *self.arguments)
        return status, done, t, self.history[:n_history]

    def run_frames(self, times, steps, frame, t, x, v, a, at, tension, x_out, v_out):
        """Frames ``frame`` on of a block (:func:`_alpha_frames`; the state arrays updated in
        place as :meth:`run` does): (status, the frame reached, its steps taken, t, the Newton
        history of a failing step); counts in ``counts``."""
        self.counts[:] = 0
        status, frame, done, n_history, t = _alpha_frames(times, steps, frame, t, x, v, a, at,
                                                          tension, x_out, v_out, *self.arguments)
        return status, frame, done, t, self.history[:n_history]

    def refactor(self, x: np.ndarray, tension: np.ndarray) -> bool:
        """Factorise the matrix at (x, T) as a step would (a resumed run's checkpoint)."""
        (mass, _, _, pairs, rest, stiffness, damping, squared, _, drag_coefficients, _, joint_i,
         joint_j, _, free, unknown, position, lower, upper) = self.model_arrays
        beta_p, gamma_p = self.coefficients[5], self.coefficients[9]
        self.factored[0] = _refactor(
            np.ascontiguousarray(x, dtype=float), np.ascontiguousarray(tension, dtype=float), mass,
            pairs, rest, stiffness, damping, drag_coefficients, squared, joint_i, joint_j, unknown,
            position, lower, upper, free.size, beta_p, gamma_p, self.band, self.pivots,
            self.factor_x, self.factor_tension)
        return bool(self.factored[0])
