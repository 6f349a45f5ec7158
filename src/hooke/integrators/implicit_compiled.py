"""The Newton solve of one ``implicit_euler`` step (:mod:`.implicit`) compiled whole, for small
models (Numba, cache=True).

Contract:
- :meth:`CompiledNewton.build` returns a kernel for a system whose potential terms are springs
  (both energy forms, with spring damping), gravity and contact planes, whose step term is at most
  lagged friction, without air drag, with fixed or moving pins, at most ``MAX_FREE_DOFS`` free
  DOFs and a direct solver (``solver`` "auto" or "direct"); else None, and :class:`.implicit.ImplicitEuler` keeps
  its generic path (joints, large models, CG, any other term such as the viewer's cursor spring).
- :meth:`CompiledNewton.solve` runs the whole Newton loop of one step in one call: the same
  incremental potential, gradient and PSD-projected Hessian (dense, the same closed-form spring
  clamp: the energy modules' own kernels), the same stopping rule ‖p‖∞/h < tol after
  ``min_iterations``, CCD cap (``System.max_step``) and backtracking line search with the
  ``ROUND_OFF`` rule. What depends on time or on the step start is computed in Python by the same
  code as the generic path and passed in: the Newton start (pins and moving planes at t + h), the
  planes' offsets at t + h and lagged friction's pairs, normal forces and anchors.
  It returns a status, the residual history ‖p‖∞/h, the potential at the start and after each
  accepted iteration, and the iterations and line-search halvings taken; the caller raises the
  generic path's errors (``NOT_CONVERGED``, ``NO_DECREASE``: Newton's messages;
  ``NON_FINITE_SYSTEM``: a non-finite matrix or gradient, SciPy's ``ValueError`` there).
- The unknowns are the free DOFs, particle by particle in reverse Cuthill–McKee order of the
  spring graph; the linear solve is a dense Cholesky factorisation that skips each row's leading
  zeros (its envelope, narrow in that order: Cholesky fills nothing outside it), with LU and
  partial pivoting where the matrix is not positive definite (as
  :class:`hooke.linalg.DenseFactor`). The Hessian is summed in the order of
  ``System.generic_combined_matrix`` and spring, barrier and friction terms are the same compiled
  code, so the two paths differ only in the solve's round-off and the order of a few sums
  (kinetic and damping energy, gravity): over the agreement tests' runs
  (tests/test_implicit_compiled.py) every step takes the same Newton iterations and halvings, and
  positions differ by ≤ 3e-14, velocities and potentials by ≤ 4e-13 relative.

Why: the generic step costs about 300 Python calls per Newton iteration (assembly through
:class:`hooke.system.System`, SciPy's wrappers, the energy terms) whatever the model's size.
``benchmarks/bench_contact.py``, µs per step, generic → compiled (2 cores shared: other processes
used 62% of the CPU): square_drop 466 → 39 (the book's algorithm in its Python style: 10,800, so
207×), square_slope 880 → 142, square_compress 689 → 167, square_press 607 → 271, soft3d_drop
(648 free DOFs) 53,448 → 4,690. On the square scenes the compiled solve takes 20–30 µs of that;
the rest is the Python that prepares each step (pins and planes at t + h, friction's inputs).
``MAX_FREE_DOFS``: on 3D cloths (cloth_drop) and tetrahedral blocks (soft3d_drop) of other sizes,
µs per step generic/compiled with one BLAS thread, the compiled step wins up to 1029 free DOFs
(cloth 588: 9,444/3,921; block 648: 13,855/5,584; block 1029: 30,935/19,186) and loses from 1200
(cloth 1200: 21,136/32,084; block 1536: 55,929/75,848); 700 keeps a margin, and the two dense
work arrays at 7.8 MB.

Numba's cache does not notice edits to the helpers imported from :mod:`hooke.energies`,
:mod:`.base` and :mod:`.newmark_compiled` (it checks this file only): after changing them, touch
this file. The agreement tests fail on a stale cache.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from .. import jit_cache  # noqa: F401  (a full disk under Numba's cache: no error)

from ..energies import barrier, friction, gravity, spring
from ..energies.barrier import CCD_FRACTION, PlaneBarrier
from ..energies.friction import LaggedFriction
from ..dense import symmetric_solve
from ..kernels import locality_permutation
from .compiled import all_finite, has_only_terms, max_abs

# Measured: from about 1000 free DOFs on the generic sparse path is faster (see above).
MAX_FREE_DOFS = 700

OK, NOT_CONVERGED, NO_DECREASE, NON_FINITE_SYSTEM = 0, 1, 2, 3


@njit(cache=True, error_model="numpy")
def _directions(x, pairs, out):
    """out[s] = the unit direction of spring s at x, 0 for a zero-length spring (as
    :func:`hooke.energies.damping.directions`)."""
    for s in range(pairs.shape[0]):
        d = out[s]
        length2 = 0.0
        for a in range(d.size):
            d[a] = x[pairs[s, 1], a] - x[pairs[s, 0], a]
            length2 += d[a] * d[a]
        if length2 > 0.0:
            d /= math.sqrt(length2)


@njit(cache=True)
def _damped_stretch(y, x_start, damped, lagged, s, i, j):
    """(y − x_start) projected on spring s's lagged direction, the j end minus the i end; only
    ``damped`` particles' displacements count (the DOFs of the generic damping matrix)."""
    along = 0.0
    for a in range(y.shape[1]):
        dj = y[j, a] - x_start[j, a] if damped[j] else 0.0
        di = y[i, a] - x_start[i, a] if damped[i] else 0.0
        along += lagged[s, a] * (dj - di)
    return along


@njit(cache=True, error_model="numpy")
def _potential(y, h, model, step, magnitude=False):
    """The incremental potential E(y) (module docstring of :mod:`.implicit`), its terms summed in
    the generic order: ½ dyᵀM dy + h²(spring + gravity + barrier + friction) + ½ h dxᵀD dx. With
    ``magnitude``, the sum of the parts' absolute values, as the generic path's."""
    (free, _, mass_free, mass, gravity_vector, pairs, rest, stiffness, squared, damping,
     has_damping, damped, normals, area, dhat, kappa) = model
    x_tilde, x_start, lagged, offsets, nodes, pair_normals, weights, anchors, eps = step
    y_flat, tilde_flat = y.reshape(-1), x_tilde.reshape(-1)
    kinetic = 0.0
    for u in range(free.size):
        dy = y_flat[free[u]] - tilde_flat[free[u]]
        kinetic += dy * (mass_free[u] * dy)
    weight = 0.0
    for p in range(y.shape[0]):
        height = 0.0
        for a in range(y.shape[1]):
            height += y[p, a] * gravity_vector[a]
        weight += mass[p] * height
    parts = (spring._energy(y, pairs, rest, stiffness, squared), -weight,
             barrier._energy(y, normals, offsets, area, dhat, kappa),
             friction._value(y, nodes, pair_normals, weights, anchors, eps))
    potential = 0.0
    for part in parts:
        potential += abs(part) if magnitude else part
    value = 0.5 * kinetic + h * h * potential
    if has_damping:
        dissipation = 0.0
        for s in range(pairs.shape[0]):
            along = _damped_stretch(y, x_start, damped, lagged, s, pairs[s, 0], pairs[s, 1])
            dissipation += damping[s] * along * along
        value += 0.5 * h * dissipation
    return value


@njit(cache=True, error_model="numpy")
def _gradient(y, h, model, step, potential_grad, scratch, out):
    """out = ∇E(y) on the free DOFs (the generic order: each term into zeros, then added)."""
    (free, _, mass_free, mass, gravity_vector, pairs, rest, stiffness, squared, damping,
     has_damping, damped, normals, area, dhat, kappa) = model
    x_tilde, x_start, lagged, offsets, nodes, pair_normals, weights, anchors, eps = step
    n, dim = y.shape
    potential_grad[:] = 0.0
    spring._gradient(y, pairs, rest, stiffness, squared, potential_grad)
    for p in range(n):
        for a in range(dim):
            potential_grad[p, a] += -mass[p] * gravity_vector[a]
    scratch[:] = 0.0
    barrier._gradient(y, normals, offsets, area, dhat, kappa, scratch)
    potential_grad += scratch
    if nodes.size:
        scratch[:] = 0.0
        friction._gradient(y, nodes, pair_normals, weights, anchors, eps, scratch)
        potential_grad += scratch
    y_flat, tilde_flat, grad_flat = y.reshape(-1), x_tilde.reshape(-1), potential_grad.reshape(-1)
    h2 = h * h
    for u in range(free.size):
        out[u] = mass_free[u] * (y_flat[free[u]] - tilde_flat[free[u]]) + h2 * grad_flat[free[u]]
    if has_damping:
        scratch[:] = 0.0  # D (y − x_start), D = Σ c n nᵀ with n lagged
        for s in range(pairs.shape[0]):
            i, j = pairs[s, 0], pairs[s, 1]
            drag = damping[s] * _damped_stretch(y, x_start, damped, lagged, s, i, j)
            for a in range(dim):
                scratch[j, a] += drag * lagged[s, a]
                scratch[i, a] -= drag * lagged[s, a]
        drag_flat = scratch.reshape(-1)
        for u in range(free.size):
            out[u] += h * drag_flat[free[u]]


@njit(cache=True)
def _add_pair_block(matrix, unknown, dim, i, j, a, b, value):
    """The pair block [[A, −A], [−A, A]]'s entries (a, b) into the free DOFs' matrix."""
    ia, ib = unknown[i * dim + a], unknown[i * dim + b]
    ja, jb = unknown[j * dim + a], unknown[j * dim + b]
    if ia >= 0 and ib >= 0:
        matrix[ia, ib] += value
    if ia >= 0 and jb >= 0:
        matrix[ia, jb] -= value
    if ja >= 0 and ib >= 0:
        matrix[ja, ib] -= value
    if ja >= 0 and jb >= 0:
        matrix[ja, jb] += value


@njit(cache=True)
def _add_particle_blocks(matrix, unknown, weight, blocks):
    """weight × each particle's d×d block (n, d, d) into the free DOFs' matrix."""
    n, dim = blocks.shape[0], blocks.shape[1]
    for p in range(n):
        for a in range(dim):
            ia = unknown[p * dim + a]
            if ia < 0:
                continue
            for b in range(dim):
                ib = unknown[p * dim + b]
                if ib >= 0:
                    matrix[ia, ib] += weight * blocks[p, a, b]


@njit(cache=True, error_model="numpy")
def _hessian(y, h, model, step, local, blocks, directions, matrix):
    """M + h²(∇²springs projected to PSD + ∇²barrier + ∇²friction) + h D(y) on the free DOFs,
    each entry summed in the order of the generic assembly (``System.generic_combined_matrix``:
    mass, then term by term, springs in order, then damping)."""
    (_, unknown, _, mass, _, pairs, rest, stiffness, squared, damping, has_damping, _, normals,
     area, dhat, kappa) = model
    _, _, _, offsets, nodes, pair_normals, weights, anchors, eps = step
    n, dim = y.shape
    h2 = h * h
    matrix[:] = 0.0
    for p in range(n):
        for a in range(dim):
            u = unknown[p * dim + a]
            if u >= 0:
                matrix[u, u] += mass[p]
    spring._local_hessians(y, pairs, rest, stiffness, squared, True, local)
    for s in range(pairs.shape[0]):
        for a in range(dim):
            for b in range(dim):
                _add_pair_block(matrix, unknown, dim, pairs[s, 0], pairs[s, 1], a, b,
                                h2 * local[s, a, b])
    if normals.shape[0]:
        barrier._hessian_blocks(y, normals, offsets, area, dhat, kappa, blocks)
        _add_particle_blocks(matrix, unknown, h2, blocks)
    if nodes.size:
        friction._hessian_blocks(y, nodes, pair_normals, weights, anchors, eps, blocks)
        _add_particle_blocks(matrix, unknown, h2, blocks)
    if has_damping:  # at y, as the generic matrix (the energy lags D at the step start)
        _directions(y, pairs, directions)
        for s in range(pairs.shape[0]):
            for a in range(dim):
                for b in range(dim):
                    _add_pair_block(matrix, unknown, dim, pairs[s, 0], pairs[s, 1], a, b,
                                    h * (damping[s] * directions[s, a] * directions[s, b]))


@njit(cache=True)
def step_norm(p_free, group):
    """The size of a Newton step for the stopping rule: the largest |entry| for group 1, NumPy's
    ``norm(p, inf)`` of the (particles, dim) array — its largest row sum, the book's — for
    group = dim (the free DOFs come particle by particle, a particle's ``dim`` together)."""
    largest = 0.0
    for start in range(0, p_free.size, group):
        total = 0.0
        for q in range(start, start + group):
            total += abs(p_free[q])
        if total != total:
            return np.nan
        largest = max(largest, total)
    return largest


@njit(cache=True, error_model="numpy")
def _newton(y, x_start, x_tilde, offsets, nodes, pair_normals, weights, anchors, eps, model, h,
            tol, group, min_iterations, max_iterations, round_off, fraction, residuals,
            energies, counts, matrix, factor):
    """The Newton loop of :meth:`.implicit.ImplicitEuler.step` from y (updated in place to the
    result). Returns (status, residuals recorded, energies recorded); counts = (accepted
    iterations, line-search halvings). ``matrix`` and ``factor`` are (free DOFs)² work arrays,
    kept by the caller: allocating them costs more than a step from a few hundred DOFs on."""
    free, pairs, normals, area = model[0], model[5], model[12], model[13]
    n, dim = y.shape
    n_free = free.size
    lagged = np.empty((pairs.shape[0], dim))
    _directions(x_start, pairs, lagged)
    step = (x_tilde, x_start, lagged, offsets, nodes, pair_normals, weights, anchors, eps)
    first = np.empty(n_free, dtype=np.int64)
    grad, p_free, trial_grad = np.empty(n_free), np.empty(n_free), np.empty(n_free)
    p, trial = np.zeros((n, dim)), np.empty((n, dim))
    local, directions = np.empty((pairs.shape[0], dim, dim)), np.empty((pairs.shape[0], dim))
    blocks = np.empty((n, dim, dim))
    potential_grad, scratch = np.empty((n, dim)), np.empty((n, dim))
    p_flat = p.reshape(-1)
    counts[:] = 0
    energy = _potential(y, h, model, step)
    energies[0] = energy
    n_energies = 1
    for iteration in range(max_iterations + 1):
        _hessian(y, h, model, step, local, blocks, directions, matrix)
        _gradient(y, h, model, step, potential_grad, scratch, grad)
        if not all_finite(matrix, grad):
            return NON_FINITE_SYSTEM, iteration, n_energies
        symmetric_solve(matrix, grad, factor, first, p_free)
        for u in range(n_free):
            p_free[u] = -p_free[u]
        step_size = max_abs(p_free, n_free)
        residual = step_norm(p_free, group) / h
        residuals[iteration] = residual
        if residual < tol and iteration >= min_iterations:
            return OK, iteration + 1, n_energies
        if iteration == max_iterations:
            break
        for u in range(n_free):
            p_flat[free[u]] = p_free[u]
        # The line search of ImplicitEuler._line_search.
        alpha = min(1.0, barrier._max_step(y, p, normals, offsets, area, fraction))
        grad_norm = math.sqrt(np.sum(grad * grad))
        found = False
        noise = -1.0  # the energy's round-off at y, computed when first needed
        while alpha >= 1e-12:
            moved = False
            for q in range(n):
                for a in range(dim):
                    trial[q, a] = y[q, a] + alpha * p[q, a]
                    moved = moved or trial[q, a] != y[q, a]
            if not moved:
                break
            trial_energy = _potential(trial, h, model, step)
            if trial_energy <= energy:
                found = True
            else:
                if noise < 0.0:
                    noise = round_off * _potential(y, h, model, step, True)
                if trial_energy - energy <= noise:
                    _gradient(trial, h, model, step, potential_grad, scratch, trial_grad)
                    found = math.sqrt(np.sum(trial_grad * trial_grad)) < grad_norm
            if found:
                break
            alpha *= 0.5
            counts[1] += 1
        if not found:
            # No decrease left: y is the minimiser to working precision when the Newton step is
            # within tol or round-off; else the step failed.
            if residual < tol or step_size <= round_off * max_abs(y.reshape(-1), y.size):
                return OK, iteration + 1, n_energies
            return NO_DECREASE, iteration + 1, n_energies
        y[:] = trial
        energy = trial_energy
        energies[n_energies] = energy
        n_energies += 1
        counts[0] += 1
    return NOT_CONVERGED, max_iterations + 1, n_energies


class CompiledNewton:
    """The compiled Newton solve bound to one ``implicit_euler`` integrator's system and options."""

    def __init__(self, integrator, round_off: float):
        system, model = integrator.system, integrator.system.model
        self.terms = tuple(system.terms)  # the kernel computes exactly these
        dim = model.dim
        # The unknowns: the free DOFs, particle by particle in reverse Cuthill–McKee order of the
        # spring graph, so that the Cholesky factor's envelope is narrow whatever the numbering.
        pairs = model.spring_indices
        order = locality_permutation(pairs, model.n_particles)
        dofs = (order[:, None] * dim + np.arange(dim)).reshape(-1)
        free = dofs[~model.pinned[order].repeat(dim)]
        unknown = np.full(model.n_dofs, -1, dtype=np.int64)
        unknown[free] = np.arange(free.size)
        # The damping energy's DOFs: all of them when pins move (they drag their neighbours).
        damped = ~model.pinned | system.has_moving_pins
        planes = model.n_planes > 0
        self.model = (
            free, unknown, model.mass[free // dim], model.mass, model.gravity, pairs,
            model.spring_rest_length, model.spring_stiffness,
            model.spring_energy == "squared_length", model.spring_damping, system.has_damping,
            damped, model.plane_normals if planes else np.zeros((0, dim)),
            model.contact_area if planes else np.zeros(model.n_particles),
            float(model.contact_dhat), float(model.contact_kappa))
        self.no_planes = np.zeros(0)
        self.no_friction = (np.zeros(0, dtype=np.int64), np.zeros((0, dim)), np.zeros(0),
                            np.zeros((0, dim)), 1.0)
        self.settings = (integrator.dt, integrator.tol, integrator.norm_group,
                         integrator.min_iterations,
                         integrator.max_iterations, round_off, CCD_FRACTION)
        self.residuals = np.empty(integrator.max_iterations + 1)
        self.energies = np.empty(integrator.max_iterations + 2)
        self.counts = np.zeros(2, dtype=np.int64)  # accepted iterations, line-search halvings
        size = free.size
        self.work = (np.empty((size, size)), np.empty((size, size)))

    @classmethod
    def build(cls, integrator, round_off: float) -> "CompiledNewton | None":
        """The kernel for this integrator's model, or None when it needs the generic path."""
        system = integrator.system
        if (integrator.options["solver"] not in ("auto", "direct") or system.joints is not None
                or system.has_drag
                or not 0 < system.free_dofs.size <= MAX_FREE_DOFS
                or not all(term in (spring, gravity, barrier) for term in system.terms)
                or not all(term is friction for term in system.lagged_terms)):
            return None
        return cls(integrator, round_off)

    def usable(self, system) -> bool:
        """False once a term was added to the system (the viewer's cursor spring)."""
        return has_only_terms(system, self.terms)

    def solve(self, y: np.ndarray, x_start: np.ndarray, x_tilde: np.ndarray, terms):
        """Newton from y (updated in place) for the step's ``terms`` (``System.step_terms``):
        (status, residual history, energies, accepted iterations, halvings)."""
        offsets, lagged = self.no_planes, self.no_friction
        for term in terms:
            if isinstance(term, PlaneBarrier):
                offsets = term.offsets
            elif isinstance(term, LaggedFriction):
                lagged = (term.nodes, term.normals, term.weights, term.anchors, term.eps)
        status, n_residuals, n_energies = _newton(
            y, np.ascontiguousarray(x_start, dtype=float), x_tilde, offsets, *lagged, self.model,
            *self.settings, self.residuals, self.energies, self.counts, *self.work)
        return (status, self.residuals[:n_residuals], self.energies[:n_energies],
                int(self.counts[0]), int(self.counts[1]))
