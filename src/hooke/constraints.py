"""Joints: rigid distance constraints, their exact tensions and the ways to keep them satisfied.

A joint k between particles i and j holds g_k(x) = |x_j − x_i| − L_k = 0.

Conventions (every function here and every integrator follows them):
- d_k = x_j − x_i, n_k = d_k / |d_k|; ∇g_k is −n_k on particle i and +n_k on particle j.
- The multipliers are *tensions* T [N]: the joint force is −Gᵀ T (−T n on j, +T n on i), so
  M a = F − Gᵀ T and T > 0 when the joint pulls its ends together (a mass hanging at rest from a
  support has T = m|g|). In the Lagrange form M a = F + Gᵀ λ this is λ = −T.
- G is the Jacobian on the free DOFs (pinned particles are eliminated, as everywhere in hooke);
  pinned particles enter through their prescribed position, velocity and acceleration
  (seed 003's moving support ``box(t)``).

Exact tension (seed 003, index-1 form). With the unconstrained accelerations a_u (F/m for free
particles, the prescribed acceleration for pinned ones), g̈ = G_full a + c with the centripetal
term c_k = (|w_k|² − (n_k·w_k)²) / |d_k|, w_k = v_j − v_i. Asking g̈ = −2α ġ − β² g gives

    (G M⁻¹ Gᵀ) T = G_full a_u + c + 2α ġ + β² g,

a sparse symmetric positive definite system on a pattern fixed per model (joints that share a
free particle), factorised with SuperLU; α = β = 0 except for Baumgarte stabilisation.

Stabilisations for integrators of the unconstrained ODE (:class:`JointForces`), chosen by the
integrator option ``stabilization``:
- ``"correction"`` (seed 003): seed 003's tensions, and on top of them each joint adds
  s_k = k_c (|d_k| − L_k) + β_c ġ_k along n_k, pulling its ends together when s_k > 0, and the
  force on each end particle p is weighted by α_p = Σ |T_l| over the joints l that touch p
  (for the double pendulum α₁ = |T₀₁| + |T₁₂|, α₂ = |T₁₂|, exactly the seed's weights). Units:
  k_c [1/m], β_c [s/m], so that α_p s_k is a force. Seed 003 differentiates |d|² = L² twice,
  which puts |w|²/|d| in place of c_k: the same tensions on the joints' manifold, but off it
  g̈ = −ġ²/|d| instead of 0. That changes how the lengths drift, and with it the study's
  curves (with c_k, max ΔL at β_c = 0.1 is 1.7e-2 instead of the seed's 7.9e-2, and the β_c
  sweep is no longer ordered), so "correction" uses the seed's form and reproduces its numbers
  (:mod:`hooke.studies`).
- ``"baumgarte"``: the tensions enforce g̈ + 2α ġ + β² g = 0 (``baumgarte_alpha`` α [1/s],
  ``baumgarte_beta`` β [1/s]); α = β is critically damped with time constant 1/β.
- ``"projection"`` (the default): exact tensions, and after every step the positions are
  projected onto g = 0 along M⁻¹ Gᵀ (mass-weighted closest point, SHAKE style, a quasi-Newton
  iteration with the Jacobian at the unprojected point, refreshed and damped where that stops
  decreasing |g|), then the velocities onto ġ = 0
  (RATTLE style). Both projections conserve linear momentum.
- ``None`` (or ``"none"``): the bare exact-tension forces; the lengths drift.

A joint set whose G M⁻¹ Gᵀ is singular (redundant joints, a joint between two pinned particles)
is a :class:`HookeInputError` naming the joints (:func:`check_joint_set`, run by
``ModelBuilder.finalize``); if it happens during a run it is a :class:`SimulationError`. So are
lengths that cannot all hold at once (:func:`check_joint_lengths`: 1, 1 and 5 on a triangle).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numba import njit
from . import jit_cache  # noqa: F401  (a full disk under Numba's cache: no error)

from .errors import HookeInputError, SimulationError, is_number
from .dense import cholesky, cholesky_solve
from .linalg import block_structure, pair_block_values

STABILIZATIONS = ("projection", "correction", "baumgarte", None)

# Options every integrator of the unconstrained ODE accepts (seed 003's k_c = 0.03, β_c = 0.2).
STABILIZATION_DEFAULTS = {"stabilization": "projection", "k_c": 0.03, "beta_c": 0.2,
                          "baumgarte_alpha": 10.0, "baumgarte_beta": 10.0}
# each gain → the stabilisation that uses it (the others take no part)
STABILIZATION_GAINS = {"k_c": "correction", "beta_c": "correction",
                       "baumgarte_alpha": "baumgarte", "baumgarte_beta": "baumgarte"}

@njit(cache=True)
def _geometry(x, i, j, length, n):
    for k in range(i.size):
        total = 0.0
        for a in range(x.shape[1]):
            n[k, a] = x[j[k], a] - x[i[k], a]
            total += n[k, a] * n[k, a]
        length[k] = np.sqrt(total)
        for a in range(x.shape[1]):
            n[k, a] /= length[k]


@njit(cache=True)
def _rates(v, n, i, j, out):
    for k in range(i.size):
        total = 0.0
        for a in range(v.shape[1]):
            total += (v[j[k], a] - v[i[k], a]) * n[k, a]
        out[k] = total


@njit(cache=True)
def _tension_rhs(v, a_free, length, n, i, j, squared, out):
    """G_full a_u + c: relative unconstrained acceleration along n plus the centripetal term
    (|w|² − (n·w)²)/|d| of g̈, or |w|²/|d| when ``squared`` (seed 003's |d|² = L²)."""
    for k in range(i.size):
        along = 0.0
        speed2 = 0.0
        acc = 0.0
        for a in range(v.shape[1]):
            w = v[j[k], a] - v[i[k], a]
            along += w * n[k, a]
            speed2 += w * w
            acc += (a_free[j[k], a] - a_free[i[k], a]) * n[k, a]
        out[k] = acc + (speed2 if squared else speed2 - along * along) / length[k]


@njit(cache=True)
def _scatter(n, s, i, j, out):
    """out += Gᵀ s: +s n on j, −s n on i."""
    for k in range(i.size):
        for a in range(n.shape[1]):
            out[j[k], a] += s[k] * n[k, a]
            out[i[k], a] -= s[k] * n[k, a]


@njit(cache=True)
def _normal_values(n, pair_k, pair_l, coefficient, slot, out):
    out[:] = 0.0
    for q in range(pair_k.size):
        dot = 0.0
        for a in range(n.shape[1]):
            dot += n[pair_k[q], a] * n[pair_l[q], a]
        out[slot[q]] += coefficient[q] * dot


@njit(cache=True)
def _correction(n, pull, tension, i, j, out):
    """Seed 003's correction: +α_i s n on i, −α_j s n on j, α_p = Σ |T| of joints touching p."""
    weight = np.zeros(out.shape[0])
    for k in range(i.size):
        weight[i[k]] += abs(tension[k])
        weight[j[k]] += abs(tension[k])
    for k in range(i.size):
        for a in range(n.shape[1]):
            out[i[k], a] += weight[i[k]] * pull[k] * n[k, a]
            out[j[k], a] -= weight[j[k]] * pull[k] * n[k, a]


# Up to this many joints G M⁻¹ Gᵀ is solved densely (:meth:`JointSet.factor_normal`); its
# envelope is narrow for chains (the n = 80 chain: 0.34 ms per rk4 step against 1.06 with
# SuperLU); a fully coupled set of 128 would cost ~0.7 ms per factorisation.
DENSE_JOINTS = 128
_SINGULAR_PIVOT = 1e-10  # relative size of an LU pivot below which G M⁻¹ Gᵀ counts as singular
_FLOAT_END = 1e-290  # an entry of G M⁻¹ Gᵀ this small has 18 orders left before underflow
_DENSE_DIAGNOSIS_LIMIT = 2000  # up to this many joints, a singular set is named joint by joint
_HALVINGS = 20  # a projection step shrunk to 2⁻²⁰ that still does not decrease max |g| is a stall
_SLOW, _FAR = 0.5, 1e3  # a projection step that leaves more than half of max |g| while
# it is 1000 tolerances or more takes the directions at its point again


class JointSet:
    """The joints of a model: geometry, Jacobian, the matrix G M⁻¹ Gᵀ and exact tensions.

    Built once per model; every method takes positions (n, d) (and velocities) and allocates
    nothing model-sized beyond its outputs.
    """

    def __init__(self, model):
        self.model = model
        self.count = model.n_joints
        self.i = np.ascontiguousarray(model.joint_indices[:, 0])
        self.j = np.ascontiguousarray(model.joint_indices[:, 1])
        self.rest = model.joint_length
        self.dim = model.dim
        self.inverse_mass = np.where(model.pinned, 0.0, 1.0 / model.mass)
        self._jacobian_pattern()
        self._normal_pattern()

    # -- geometry --------------------------------------------------------------------------
    def geometry(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lengths (m,), unit directions n (m, d) from i to j)."""
        length, n = np.empty(self.count), np.empty((self.count, self.dim))
        _geometry(np.ascontiguousarray(x, dtype=float), self.i, self.j, length, n)
        return length, n

    def values(self, x: np.ndarray) -> np.ndarray:
        """g (m,): length minus rest length [m]."""
        return self.geometry(x)[0] - self.rest

    def rates(self, v: np.ndarray, n: np.ndarray) -> np.ndarray:
        """ġ (m,) = n·(v_j − v_i) [m/s]."""
        out = np.empty(self.count)
        _rates(np.ascontiguousarray(v, dtype=float), n, self.i, self.j, out)
        return out

    def transpose_times(self, n: np.ndarray, s: np.ndarray) -> np.ndarray:
        """Gᵀ s as an (n_particles, d) array: +s n on j, −s n on i (all particles)."""
        out = np.zeros((self.model.n_particles, self.dim))
        _scatter(n, np.asarray(s, dtype=float), self.i, self.j, out)
        return out

    # -- the Jacobian on the free DOFs -----------------------------------------------------
    def _jacobian_pattern(self) -> None:
        d, model = self.dim, self.model
        axes = np.arange(d)
        # Entry order: joint k, then end (i, j), then axis — the order of jacobian_values.
        rows = np.repeat(np.arange(self.count), 2 * d)
        cols = np.stack([self.i[:, None] * d + axes, self.j[:, None] * d + axes], axis=1).reshape(-1)
        self.jacobian_structure = (rows, cols)
        free_index = np.full(model.n_dofs, -1, dtype=np.int64)
        free_index[model.free_dofs] = np.arange(model.free_dofs.size)
        self._jacobian_keep = free_index[cols] >= 0
        self._jacobian_rows = rows[self._jacobian_keep]
        self._jacobian_cols = free_index[cols][self._jacobian_keep]
        self.n_free = int(model.free_dofs.size)

    def jacobian_values(self, n: np.ndarray) -> np.ndarray:
        """Entries of G in ``jacobian_structure`` order (all DOFs): −n for i, +n for j."""
        return np.stack([-n, n], axis=1).reshape(-1)

    def jacobian(self, x: np.ndarray) -> sp.csr_matrix:
        """G (m × free DOFs), sparse."""
        _, n = self.geometry(x)
        values = self.jacobian_values(n)[self._jacobian_keep]
        return sp.csr_matrix((values, (self._jacobian_rows, self._jacobian_cols)),
                             shape=(self.count, self.n_free))

    def geometric_hessian_structure(self):
        return block_structure(self.model.joint_indices, self.dim)

    def geometric_hessian_values(self, x: np.ndarray, tension: np.ndarray) -> np.ndarray:
        """Entries of Σ_k T_k ∇²g_k (the derivative of Gᵀ T w.r.t. x) on its pair pattern."""
        length, n = self.geometry(x)
        local = (tension / length)[:, None, None] * (np.eye(self.dim) - n[:, :, None] * n[:, None, :])
        return pair_block_values(local)

    # -- the normal matrix A = G M⁻¹ Gᵀ ------------------------------------------------------
    def _normal_pattern(self) -> None:
        """A_kl = Σ_p s_kp s_lp / m_p (n_k·n_l) over free particles p shared by joints k and l."""
        incident: dict[int, list[tuple[int, float]]] = {}
        for k in range(self.count):
            for p, sign in ((int(self.i[k]), -1.0), (int(self.j[k]), 1.0)):
                if self.inverse_mass[p] > 0:
                    incident.setdefault(p, []).append((k, sign))
        ks, ls, coefficients = [], [], []
        for p, ends in incident.items():
            for k, sk in ends:
                for l, sl in ends:
                    ks.append(k)
                    ls.append(l)
                    coefficients.append(sk * sl * self.inverse_mass[p])
        self._pair_k = np.array(ks, dtype=np.int64)
        self._pair_l = np.array(ls, dtype=np.int64)
        self._pair_coefficient = np.array(coefficients, dtype=float)
        keys = self._pair_l * self.count + self._pair_k  # column-major: CSC of a symmetric matrix
        # Every joint gets a diagonal slot, even one with both ends pinned (then A_kk = 0).
        keys = np.concatenate([keys, np.arange(self.count) * (self.count + 1)])
        unique, slot = np.unique(keys, return_inverse=True)
        self._slot = slot[: self._pair_k.size]
        self._nnz = unique.size
        indices = (unique % max(self.count, 1)).astype(np.int32)
        indptr = np.searchsorted(unique // max(self.count, 1), np.arange(self.count + 1)).astype(np.int32)
        self._normal = sp.csc_matrix((np.zeros(self._nnz), indices, indptr),
                                     shape=(self.count, self.count))

    def normal_matrix(self, n: np.ndarray) -> sp.csc_matrix:
        """A = G M⁻¹ Gᵀ at directions n (one shared matrix object, refilled in place)."""
        _normal_values(n, self._pair_k, self._pair_l, self._pair_coefficient, self._slot,
                       self._normal.data)
        return self._normal

    def factor_normal(self, n: np.ndarray, t: float | None = None):
        """A solve function for G M⁻¹ Gᵀ at directions n; a singular matrix raises naming joints.
        Up to ``DENSE_JOINTS`` joints a compiled Cholesky (:mod:`hooke.dense`: the same rounding
        on every CPU, and faster than SuperLU's setup at these sizes), above it SuperLU."""
        matrix = self.normal_matrix(n)
        if self.count <= DENSE_JOINTS:
            dense = matrix.toarray()
            factor, first = np.empty_like(dense), np.empty(self.count, dtype=np.int64)
            if not cholesky(dense, factor, first):
                raise self.singular_error(matrix, t)

            def solve(rhs: np.ndarray) -> np.ndarray:
                out = np.empty(self.count)
                cholesky_solve(factor, first, np.ascontiguousarray(rhs, dtype=float), out)
                return out
            return solve
        try:
            lu = spla.splu(matrix, permc_spec="MMD_AT_PLUS_A")
        except RuntimeError:  # SuperLU: "Factor is exactly singular"
            raise self.singular_error(matrix, t) from None
        return lu.solve

    def singular_error(self, matrix, t):
        joints = singular_joints(matrix)
        entries = np.abs(matrix.data[matrix.data != 0])
        pairs = (", ".join(f"{k} ({self.i[k]}–{self.j[k]})" for k in joints) if joints else
                 f"which of the {self.count} could not be told")
        problem = ("the joint set is singular (redundant joints, or a joint whose ends are both "
                   f"pinned): joints {pairs}")
        if not joints and entries.size and entries.min() < _FLOAT_END:  # 1/m of m = 1e308 kg
            ends = np.concatenate([self.i, self.j])
            problem = (f"G M⁻¹ Gᵀ, whose entries 1/m reach {entries.min():.3g}, is at the end "
                       "of float64's range, where it cannot be factorised: the joints' "
                       f"particles' masses, up to {np.max(self.model.mass[ends]):.3g} kg, are "
                       "too large to divide by")
        if t is None:
            return HookeInputError("joints", problem, joints)
        return SimulationError(f"joints: at t = {t:.6g} {problem}")

    # -- exact tensions --------------------------------------------------------------------
    def tensions(self, x: np.ndarray, v: np.ndarray, a_free: np.ndarray, t: float = 0.0,
                 alpha: float = 0.0, beta: float = 0.0, geometry=None,
                 squared: bool = False) -> np.ndarray:
        """Exact tensions T (m,) [N] given the unconstrained accelerations ``a_free`` (n, d)
        (F/m for free particles, prescribed for pinned ones); α, β add Baumgarte's terms;
        ``squared``: from the twice-differentiated |d|² = L² instead of g (module docstring)."""
        length, n = self.geometry(x) if geometry is None else geometry
        v = np.ascontiguousarray(v, dtype=float)
        rhs = np.empty(self.count)
        _tension_rhs(v, np.ascontiguousarray(a_free, dtype=float), length, n, self.i, self.j,
                     squared, rhs)
        if not np.all(np.isfinite(rhs)):
            raise SimulationError(f"joints: the state became non-finite by t = {t:.6g} (try a "
                                  "smaller dt, an adaptive integrator or smaller stabilisation gains)")
        if alpha:
            rhs += 2.0 * alpha * self.rates(v, n)
        if beta:
            rhs += beta * beta * (length - self.rest)
        if not np.all(np.isfinite(rhs)):  # a finite state: the gains overflowed, no singular set
            raise SimulationError(f"joints: the Baumgarte terms overflow at t = {t:.6g} "
                                  f"(baumgarte_alpha = {alpha:g}, baumgarte_beta = {beta:g}): "
                                  "choose smaller stabilisation gains")
        tension = self.factor_normal(n, t)(rhs)
        if not np.all(np.isfinite(tension)):
            raise self.singular_error(self.normal_matrix(n), t)
        return tension

    # -- projection onto the constraints ---------------------------------------------------
    def project(self, x: np.ndarray, v: np.ndarray, t: float, max_iterations: int = 50):
        """New (x, v) with g(x) = 0 and ġ = 0 (to round-off): mass-weighted projections.

        The directions stay those of the unprojected point while full steps decrease max |g|
        (one factorisation per step); where one does not (a start far from the constraints, as
        joint lengths that differ from the initial distances), they are refreshed there and the
        step halved until max |g| decreases (:meth:`descend`)."""
        tolerance = _projection_tolerance(self, x)
        _, n = self.geometry(x)
        solve, fresh = self.factor_normal(n, t), True
        g = self.values(x)
        history = [float(np.max(np.abs(g)))]
        while history[-1] > tolerance and len(history) <= max_iterations:
            step = self.descend(x, g, n, solve, _HALVINGS if fresh else 0)
            if step is None and not fresh:
                _, n = self.geometry(x)
                solve = self.factor_normal(n, t)
                step = self.descend(x, g, n, solve, _HALVINGS)
            if step is None:
                break
            (x, g), fresh = step, False
            history.append(float(np.max(np.abs(g))))
            if history[-1] > _SLOW * history[-2] and history[-1] > _FAR * tolerance:
                # directions so far from the point's that the steps only creep (a sagging
                # chain between two pins, 0.6 per step, ran out of iterations at 4e-13):
                # take them here, a Newton step
                _, n = self.geometry(x)
                solve, fresh = self.factor_normal(n, t), True
        if history[-1] <= tolerance:
            return x, self.project_velocities(x, v, t)
        raise SimulationError(
            f"joints: the position projection did not converge at t = {t:.6g} "
            f"(max |g| over the last iterations: {', '.join(f'{r:.3e}' for r in history[-5:])})")

    def descend(self, x: np.ndarray, g: np.ndarray, n: np.ndarray, solve, halvings: int):
        """(x', g(x')) for the first of the steps x − s M⁻¹ Gᵀ A⁻¹ g, s = 1, ½, … (``halvings``
        halvings), whose max |g| is below that at x; None if none is. G and A = G M⁻¹ Gᵀ are
        taken at directions ``n``, ``solve`` solves with A (pinned particles stay)."""
        step = self.inverse_mass[:, None] * self.transpose_times(n, solve(g))
        worst = np.max(np.abs(g))
        for k in range(halvings + 1):
            trial = x - 0.5 ** k * step
            try:
                trial_g = self.values(trial)
            except ZeroDivisionError:  # ends that meet (a length of 1e-300): the compiled
                continue                # geometry raises; no decrease either
            if np.max(np.abs(trial_g)) < worst:  # NaN (coinciding ends) is no decrease
                return trial, trial_g
        return None

    def project_velocities(self, x: np.ndarray, v: np.ndarray, t: float) -> np.ndarray:
        """v with ġ = G v = 0 (to round-off): v − M⁻¹ Gᵀ (G M⁻¹ Gᵀ)⁻¹ G v (RATTLE style)."""
        _, n = self.geometry(x)
        mu = self.factor_normal(n, t)(self.rates(v, n))
        return v - self.inverse_mass[:, None] * self.transpose_times(n, mu)


def singular_joints(matrix: sp.spmatrix) -> list[int]:
    """Joints in the null space of a singular G M⁻¹ Gᵀ (dense eigen-decomposition: only ever run
    on the error path); empty when there are too many joints to diagnose."""
    size = matrix.shape[0]
    if size > _DENSE_DIAGNOSIS_LIMIT:
        return []
    dense = matrix.toarray()
    broken = ~np.isfinite(dense).all(axis=1)
    if broken.any():  # a joint whose ends meet has no direction: singular by itself
        return [int(k) for k in np.flatnonzero(broken)]
    values, vectors = np.linalg.eigh(dense)
    scale = max(float(np.max(np.abs(values))), np.finfo(float).tiny)
    null = vectors[:, np.abs(values) <= _SINGULAR_PIVOT * scale]
    if null.size == 0:
        return []
    weight = np.max(np.abs(null), axis=1)
    return [int(k) for k in np.flatnonzero(weight > 1e-6)]


# The α-methods' default Newton tolerance (``newmark`` and ``generalized_alpha`` keep their joints
# within JOINT_TOL·ℓ, :func:`length_scale`); ``implicit_euler`` keeps its joints to the same.
JOINT_TOL = 1e-10
# Of the largest speed: the most a joint's rate ġ may be at a run's start before "projection"
# projects the start velocities (a projected state's ġ is round-off, ~1e-16 of it).
START_RATE_TOL = 1e-10


def length_scale(model) -> float:
    """ℓ [m], the scale of the joints' tolerance tol·ℓ: the model's extent at rest or its
    longest joint, whichever is larger."""
    extent = float(np.max(np.ptp(model.x0, axis=0))) if model.n_particles > 1 else 0.0
    rest = float(np.max(model.joint_length)) if model.n_joints else 0.0
    return max(extent, rest, 1e-300)


def check_joint_set(model) -> None:
    """Raise HookeInputError naming the joints if G M⁻¹ Gᵀ is singular at the initial positions,
    or if the joints' lengths cannot all hold there (:func:`check_joint_lengths`)."""
    if model.n_joints == 0:
        return
    joints = JointSet(model)
    matrix = _singular_normal_matrix(joints, model.x0)
    if matrix is not None:
        raise joints.singular_error(matrix, None)
    check_joint_lengths(joints, model.x0)


def _singular_normal_matrix(joints: JointSet, x: np.ndarray) -> sp.csc_matrix | None:
    """G M⁻¹ Gᵀ at ``x`` if it is singular (an LU pivot below ``_SINGULAR_PIVOT``), else None."""
    matrix = joints.normal_matrix(joints.geometry(x)[1])
    try:
        lu = spla.splu(matrix, permc_spec="MMD_AT_PLUS_A")
    except RuntimeError:
        return matrix
    pivots = np.abs(lu.U.diagonal())
    return matrix if pivots.min() <= _SINGULAR_PIVOT * max(pivots.max(), np.finfo(float).tiny) else None


def check_joint_lengths(joints: JointSet, x0: np.ndarray, max_iterations: int = 100) -> None:
    """Raise HookeInputError naming the joints if no positions near ``x0`` give every joint its
    length (say 1, 1 and 5 on a triangle), or only positions where the joints are singular (1, 1
    and 2: the triangle folded flat): every integrator would fail at its first step, where "try a
    smaller dt" cannot help.

    Lengths taken from the positions (the default) hold at once. Others are checked by Newton's
    method on g(x) = 0 with the projection's mass-weighted least-norm step (pinned particles
    stay), halving a step until max |g| decreases, to the projection's tolerance: it converges
    where the lengths can hold (quadratically, or linearly towards a singular solution), and
    stalls where they cannot.
    """
    tolerance = _projection_tolerance(joints, x0)
    x, g = x0, joints.values(x0)
    if np.max(np.abs(g)) <= tolerance:
        return
    for _ in range(max_iterations):
        _, n = joints.geometry(x)
        try:
            step = joints.descend(x, g, n, joints.factor_normal(n), _HALVINGS)
        except HookeInputError:  # singular on the way: a stall
            break
        if step is None:
            break
        x, g = step
        if np.max(np.abs(g)) <= tolerance:
            matrix = _singular_normal_matrix(joints, x)
            if matrix is None:
                return
            bad = singular_joints(matrix)
            raise HookeInputError("joints", "their lengths hold only where the joints are "
                                  "singular (a triangle folded flat, e.g. lengths 1, 1 and 2): "
                                  f"joints {_joint_list(joints, bad, x0)}", bad)
    bad = [int(k) for k in np.flatnonzero(np.abs(g) > tolerance)]
    raise HookeInputError("joints", "their lengths cannot all hold (no positions near the initial "
                          "ones satisfy them; Newton's projection stalls at max |distance − "
                          f"length| = {np.max(np.abs(g)):.3g}): joints "
                          f"{_joint_list(joints, bad, x0)}", bad)


def start_off_joints(model) -> str:
    """How far ``model``'s start is off its joints, for ``hooke check``: "" where they hold (to
    the projection's tolerance), else the largest |distance − length| and its joint. A
    projecting integrator puts such a start on the joints first (:func:`start_on_joints`),
    however far: a length of 1e10 m given for a distance of 1 m moves the bob 1e10 m, which the
    user should see before running."""
    if model.n_joints == 0:
        return ""
    joints = JointSet(model)
    g = np.abs(joints.values(model.x0))
    if np.max(g) <= _projection_tolerance(joints, model.x0):
        return ""
    k = int(np.argmax(g))
    return (f"its start is off its joints by up to {g[k]:.3g} m (joint "
            f"{_joint_list(joints, [k], model.x0)})")


def _joint_list(joints: JointSet, ks: list[int], x0: np.ndarray, shown: int = 6) -> str:
    """``k (i–j: length L, distance d)`` for the first ``shown`` joints ``ks`` at ``x0``."""
    distance = joints.geometry(x0)[0]  # not L + g: 1 m beside a length of 1e155 m is no 0
    listed = ", ".join(f"{k} ({joints.i[k]}–{joints.j[k]}: length {joints.rest[k]:.6g}, "
                       f"distance {distance[k]:.6g})" for k in ks[:shown])
    return listed + (f" and {len(ks) - shown} more" if len(ks) > shown else "")


def _projection_tolerance(joints: JointSet, x: np.ndarray) -> float:
    """max |g| at which :meth:`JointSet.project` counts the joints as holding."""
    return 1e-12 * float(np.max(joints.rest)) + 1e-15 * float(np.max(np.abs(x)))


def start_on_joints(joints: JointSet, x: np.ndarray, v: np.ndarray, t: float,
                    tolerance: float | None = None):
    """The (x, v) a run's first step starts from where the integrator holds its joints: (x, v)
    themselves (the same objects) where they hold at x to ``tolerance`` [m] (max |g|; None: to
    the projection's, as the projecting integrators keep them) and v
    changes no joint's length (|ġ| within ``START_RATE_TOL`` of the largest speed), else (x, v)
    projected at t (:meth:`JointSet.project`), as rigid links would at once. Left to the first
    step, a start off the joints (lengths given other than the distances, or velocities along
    a link) ran a step of dt with the violation first, and the run's error then had a term of
    lower order: rk4 converged at first order from stretching velocities; newmark,
    generalized_alpha and implicit_euler, whose first step closed a 0.1 m gap in one dt, did
    not converge at all (4e-2, 3e-2 and 4e-3 m off at every dt)."""
    if tolerance is None:
        tolerance = 2.0 * _projection_tolerance(joints, x)
    speed = float(np.max(np.abs(v), initial=0.0))
    if (np.max(np.abs(joints.values(x)), initial=0.0) <= tolerance
            and np.all(np.abs(joints.rates(v, joints.geometry(x)[1])) <= START_RATE_TOL * speed)):
        return x, v
    return joints.project(np.array(x, dtype=float), v, t)


@dataclass(frozen=True)
class Stabilization:
    """How an integrator of the unconstrained ODE keeps joints satisfied (see module doc)."""

    method: str | None = "projection"
    k_c: float = 0.03
    beta_c: float = 0.2
    baumgarte_alpha: float = 10.0
    baumgarte_beta: float = 10.0

    @classmethod
    def from_options(cls, options: dict, integrator: str) -> "Stabilization":
        method = options["stabilization"]
        if method == "none":
            method = None
        if method not in STABILIZATIONS:
            raise HookeInputError("stabilization", f"must be one of projection, correction, "
                                  f"baumgarte or none for integrator '{integrator}'", method)
        gains = {}
        for key in ("k_c", "beta_c", "baumgarte_alpha", "baumgarte_beta"):
            value = options[key]
            if not is_number(value) or not np.isfinite(value) or value < 0:
                raise HookeInputError(key, f"must be a finite number >= 0 for integrator "
                                      f"'{integrator}'", value)
            gains[key] = float(value)
        return cls(method, **gains)


class JointForces:
    """The joints' forces for an integrator of the unconstrained ODE, per its stabilisation."""

    def __init__(self, joints: JointSet, stabilization: Stabilization):
        self.joints = joints
        self.stabilization = stabilization
        self.projects = stabilization.method == "projection"

    def acceleration(self, x: np.ndarray, v: np.ndarray, t: float, a_free: np.ndarray) -> np.ndarray:
        """(n, d) accelerations the joints add to ``a_free`` (zero on pinned particles)."""
        joints, s = self.joints, self.stabilization
        geometry = joints.geometry(x)
        baumgarte = s.method == "baumgarte"
        tension = joints.tensions(x, v, a_free, t, s.baumgarte_alpha if baumgarte else 0.0,
                                  s.baumgarte_beta if baumgarte else 0.0, geometry,
                                  squared=s.method == "correction")
        length, n = geometry
        force = -joints.transpose_times(n, tension)
        if s.method == "correction":
            pull = s.k_c * (length - joints.rest) + s.beta_c * joints.rates(v, n)
            _correction(n, pull, tension, joints.i, joints.j, force)
        return force * joints.inverse_mass[:, None]

    def finish_step(self, x: np.ndarray, v: np.ndarray, t: float):
        """The state an integrator returns: projected onto the constraints for "projection"."""
        if self.projects:
            return self.joints.project(x, v, t)
        return x, v
