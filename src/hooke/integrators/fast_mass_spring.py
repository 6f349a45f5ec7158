"""``fast_mass_spring``: implicit Euler for mass-spring systems by the local/global method of
Liu, Bargteil, O'Brien and Kavan (2013), with a constant, prefactored system matrix.

Implicit Euler minimises E(y) = ½ (y − x̃)ᵀM(y − x̃) + h²U(y) + ½ h (y − x)ᵀD(y − x), x̃ = x + h v
(the same incremental potential as ``implicit_euler``, damping D lagged at the step start). For a
Hookean spring ½k(|d| − l0)² = min over |p| = l0 of ½k|d − p|², so E is the minimum over the
auxiliary spring vectors p_s of a quadratic in y. Each iteration alternates
- local: p_s = l0 (y_j − y_i)/|y_j − y_i| (the best p for the current y), one pass over springs;
- global: the best y for those p, a linear solve with the constant matrix
      A = M + h² L_k + h L_c     (L_w = Σ_s w_s (e_i − e_j)(e_i − e_j)ᵀ, scalar, per particle),
  factorised once per integrator (:func:`hooke.linalg.factorize`) and solved for all d axes at
  once. The damping term is majorised by its isotropic bound ½h(y − y_k)ᵀL_c(y − y_k) around the
  current iterate y_k (c n nᵀ ≤ c I per spring), which keeps A constant. Air drag
  (:mod:`hooke.energies.drag`) adds its exact share ½ h (y − x − h w)ᵀC(y − x − h w): h C to A
  (constant, diagonal) and the wind's push h² C w(t + h) to the right-hand side.
Every iteration decreases E (block coordinate descent on a majoriser), so the result converges to
``implicit_euler``'s as ``iterations`` grows; with zero rest lengths one iteration is exact.
Unknowns are the displacements u = y − x (no cancellation in v = u/h). Other potential terms than
springs and gravity (the viewer's cursor spring) enter explicitly at the current iterate. Pinned
particles are eliminated; moving ones enter through A's coupling block.

Masses: the iteration is slowest where a spring turns rather than stretches (a stiff pendulum's
swing): A holds h²k there, the energy almost nothing. A particle moving alone in its weakest
direction is moved by each pass only the share 1 − ρ of the rest of its way, with
ρ = (S − λ_min(W)) / (m + h·c_drag + S), S = h²Σk + hΣc over its springs and W = Σ (h²k + hc) n nᵀ
(:func:`lag`; Σk over springs with a rest length: a zero-rest-length spring's local step is
exact), taken at the initial positions. ``iterations`` passes leave ρ^iterations of each step's
motion undone: a pendulum of m = 1e-3·h²k swung 0.0045 rad where implicit Euler swings 0.45
(issue 15). So by default (``iterations`` "auto") a run takes ``DEFAULT_ITERATIONS`` = 10 passes,
or as many as bring every free particle's ρ^iterations to ``UNDONE`` = 0.1 (:func:`iterations_needed`;
soft3d at its dt takes 20) up to ``MOST_AUTOMATIC``; a model that needs more, or an explicit
``iterations`` that leaves more undone, is refused (:func:`check_iterations`), naming the
iterations and the dt that would do. For a
pendulum (λ_min(W) = 0) ρ^10 ≤ 0.1 is m ≥ 0.26·h²k, far stricter than the
round-off bound of every implicit step (:mod:`.resolution`); a particle whose springs span every
direction (a 2D lattice, a tet mesh) has λ_min(W) > 0 and needs fewer passes. It is a bound on
a particle moving alone: collective motion (a cloth's sag) usually converges faster.

Limits: Hookean springs only (``squared_length`` has no such split), no contact planes (use
``implicit_euler``), no joints. First order in time (``order = 1``): it is implicit Euler up to
the iteration error, which shrinks with h.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit
from .. import jit_cache  # noqa: F401  (a full disk under Numba's cache: no error)

from ..energies import damping, drag, gravity, spring
from ..errors import HookeInputError
from ..linalg import factorize
from ..model import State
from .base import MAX_COUNT_OPTION, Integrator, register


def laplacian(pairs: np.ndarray, weights: np.ndarray, n: int) -> sp.csr_matrix:
    """Scalar weighted graph Laplacian Σ_s w_s (e_i − e_j)(e_i − e_j)ᵀ, (n, n)."""
    i, j = pairs[:, 0], pairs[:, 1]
    rows = np.concatenate([i, j, i, j])
    cols = np.concatenate([i, j, j, i])
    values = np.concatenate([weights, weights, -weights, -weights])
    return sp.csr_matrix((values, (rows, cols)), shape=(n, n))


@njit(cache=True, error_model="numpy")
def _spring_rhs(x, u, n_start, pairs, rest, stiffness, damping_c, h, out):
    """out += Gᵀ r with, per spring, r_s = −h² k (x_j − x_i − p) + h c (Δu − (n·Δu) n): the
    local step p = l0 d/|d| at d = y_j − y_i, y = x + u (its part of the global right-hand side;
    the part in the unknown u is h² L_k u on the left), and the damping majoriser's correction
    h (L_c − D) u with n the directions at the step start."""
    dim = x.shape[1]
    d = np.empty(dim)
    du = np.empty(dim)
    for s in range(pairs.shape[0]):
        i, j = pairs[s, 0], pairs[s, 1]
        length2 = 0.0
        for a in range(dim):
            du[a] = u[j, a] - u[i, a]
            d[a] = x[j, a] - x[i, a] + du[a]
            length2 += d[a] * d[a]
        # p = l0 d/|d|; at |d| = 0 its direction is undefined and p = 0 is taken.
        scale = rest[s] / np.sqrt(length2) if length2 > 0.0 else 0.0
        c = damping_c[s]
        normal_speed = 0.0
        if c != 0.0:
            for a in range(dim):
                normal_speed += n_start[s, a] * du[a]
        for a in range(dim):
            r = -h * h * stiffness[s] * (x[j, a] - x[i, a] - scale * d[a])
            if c != 0.0:
                r += h * c * (du[a] - normal_speed * n_start[s, a])
            out[j, a] += r
            out[i, a] -= r


UNDONE = 0.1  # the most of a step's motion the iterations may leave undone in any direction
DEFAULT_ITERATIONS = 10  # the fewest passes a run takes when it does not say
MOST_AUTOMATIC = 100  # beyond this many passes a step costs more than implicit_euler's Newton


def spring_holds(model) -> tuple[np.ndarray, ...]:
    """Per particle, over its springs at the initial positions: Σk, Σc (n,) and Σk n nᵀ,
    Σc n nᵀ (n, d, d). A spring of zero rest length adds no stiffness (its local step is exact:
    nothing lags), its damping counts (lagged all the same)."""
    k = np.where(model.spring_rest_length > 0, model.spring_stiffness, 0.0)
    c = model.spring_damping
    n = damping.directions(model, model.x0)
    outer = n[:, :, None] * n[:, None, :]
    ends = model.spring_indices.T.reshape(-1)

    def per_particle(values: np.ndarray) -> np.ndarray:  # (s, …) summed at both ends
        flat = np.tile(values.reshape(len(values), -1), (2, 1))
        sums = [np.bincount(ends, weights=column, minlength=model.n_particles) for column in flat.T]
        return np.stack(sums, axis=-1).reshape((model.n_particles,) + values.shape[1:])
    return (per_particle(k), per_particle(c), per_particle(k[:, None, None] * outer),
            per_particle(c[:, None, None] * outer))


def lag(inertia: np.ndarray, holds: tuple[np.ndarray, ...], h: float) -> np.ndarray:
    """ρ per particle (module docstring): the largest share of a step's remaining motion one
    local/global pass leaves undone when the particle moves alone. The pass solves with
    A = m + h·c_drag + h²Σk + hΣc (``inertia`` = m + h·c_drag); the energy's Hessian there is
    m + h·c_drag + W, W = Σ (h²k + hc) n nᵀ, so ρ = (A − inertia − λ_min(W)) / A: the direction
    its springs hold least (a pendulum's swing, where λ_min(W) = 0)."""
    k_sum, c_sum, k_outer, c_outer = holds
    share = h * h * k_sum + h * c_sum
    held = np.linalg.eigvalsh(h * h * k_outer + h * c_outer)[:, 0]
    return np.maximum(share - held, 0.0) / (inertia + share)


def _free_lags(model, dt: float):
    """(free particles, their springs' holds, their drag coefficients, ρ of each)."""
    free = np.flatnonzero(~model.pinned)
    holds = tuple(part[free] for part in spring_holds(model))
    c_drag = drag.coefficients(model)[free]
    return free, holds, c_drag, lag(model.mass[free] + dt * c_drag, holds, dt)


def _passes_for(rho: float) -> int:
    """The fewest passes n with ρ^n ≤ UNDONE (beyond any allowed count when ρ ≥ 1)."""
    if rho <= 0.0:
        return 1
    return int(np.ceil(np.log(UNDONE) / np.log(rho))) if rho < 1 else MAX_COUNT_OPTION + 1


def iterations_needed(model, dt: float) -> int:
    """The passes a run takes by default: ``DEFAULT_ITERATIONS``, or the fewest that leave
    every free particle at most ``UNDONE`` of each step undone, whichever is more."""
    if not model.n_springs or not np.any(~model.pinned):
        return DEFAULT_ITERATIONS
    rho = float(np.max(_free_lags(model, dt)[3]))
    return max(DEFAULT_ITERATIONS, _passes_for(rho))


def check_iterations(model, dt: float, iterations: int) -> None:
    """Refuse a free particle whose motion ``iterations`` local/global passes leave more than
    ``UNDONE`` undone (module docstring): ρ^iterations > UNDONE, ρ from :func:`lag`."""
    if not model.n_springs or not np.any(~model.pinned):
        return
    free, holds, c_drag, rho = _free_lags(model, dt)
    with np.errstate(divide="ignore"):
        undone = np.exp(iterations * np.log(rho))
    if not np.any(undone > UNDONE):
        return
    worst = int(np.argmax(undone))
    i, rho = int(free[worst]), float(rho[worst])
    need = _passes_for(rho)
    # ρ grows with dt: the largest dt that passes, by bisection of log dt
    mine = tuple(part[worst:worst + 1] for part in holds)
    low, high = np.log(dt) - 60.0, np.log(dt)
    for _ in range(60):
        middle = 0.5 * (low + high)
        h = np.exp(middle)
        passes = lag(model.mass[i] + h * c_drag[worst:worst + 1], mine, h)[0] ** iterations <= UNDONE
        low, high = (middle, high) if passes else (low, middle)
    offer = f"iterations >= {need}, " if need <= MAX_COUNT_OPTION else ""
    raise HookeInputError(
        f"particles[{i}].mass",
        f"is too light for fast_mass_spring's {iterations} local/global iterations at dt = {dt:g} "
        f"s: in its slowest direction they leave ρ^{iterations} = {undone[worst]:.3g} of each "
        f"step's motion undone (ρ = {rho:.6g}, the share of m + h²Σk + hΣc its springs do not "
        f"hold there), more than {UNDONE:g}; take {offer}dt <= {np.exp(low):.3g} s, or "
        "implicit_euler", float(model.mass[i]))


@register
class FastMassSpring(Integrator):
    name = "fast_mass_spring"
    stiffness_in_step_matrix = True
    order = 1
    summary = ("Liu et al. 2013 local/global implicit Euler: a constant prefactored matrix "
               "M + h²L, `iterations` local/global passes per step")
    defaults = {"iterations": "auto"}  # DEFAULT_ITERATIONS or as many as the model needs

    def check_options(self) -> None:
        iterations = self.options["iterations"]
        model = self.system.model
        needed = None  # the passes "auto" found the model needs: enough unless above the cap
        if iterations == "auto":
            needed = iterations_needed(model, self.dt)
            iterations = min(needed, MOST_AUTOMATIC)
        elif (isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer))
                or not 1 <= iterations <= MAX_COUNT_OPTION):
            raise HookeInputError("iterations", "must be an integer from 1 to "
                                  f"{MAX_COUNT_OPTION}, or \"auto\" (as many as the model needs)",
                                  iterations)
        self.iterations = int(iterations)
        if model.spring_energy != "hookean":
            raise HookeInputError("spring_energy", "fast_mass_spring needs Hookean springs (the "
                                  "squared_length energy has no local/global split); use "
                                  "implicit_euler", model.spring_energy)
        if needed is None or needed > MOST_AUTOMATIC:
            check_iterations(model, self.dt, self.iterations)
        self._prepare()

    def _prepare(self) -> None:
        model, h = self.system.model, self.dt
        n = model.n_particles
        pairs = model.spring_indices
        matrix = (sp.diags(model.mass + h * drag.coefficients(model))
                  + h * h * laplacian(pairs, model.spring_stiffness, n)
                  + h * laplacian(pairs, model.spring_damping, n)).tocsr()
        self.free = np.flatnonzero(~model.pinned)
        self.pinned = np.flatnonzero(model.pinned)
        self.solve = factorize(matrix[self.free][:, self.free])
        self.coupling = matrix[self.free][:, self.pinned].tocsr() if model.pinned_motions else None
        self.gravity_step = h * h * model.gravity

    def step(self, state: State) -> State:
        system, model, h = self.system, self.system.model, self.dt
        x = np.ascontiguousarray(state.x, dtype=float)
        u_tilde = h * state.v
        x_pins, _ = system.apply_pins(state.x.copy(), state.v.copy(), state.t + h)
        u = u_tilde.copy()
        u[self.pinned] = x_pins[self.pinned] - x[self.pinned]
        inertia = model.mass[:, None] * (u_tilde + self.gravity_step)
        if system.has_drag:  # the wind's push h² C w(t + h); the drag's h C u is in the matrix
            inertia += h * h * drag.coefficients(model)[:, None] * drag.wind(model, state.t + h)
        # Spring directions at the step start, for the lagged damping (never read without it).
        n_start = damping.directions(model, x) if system.has_damping else np.zeros((0, model.dim))
        others = [term for term in system.terms if term not in (spring, gravity)]
        pinned_part = None
        if self.coupling is not None:
            pinned_part = self.coupling @ u[self.pinned]
        for _ in range(self.iterations):
            rhs = inertia.copy()
            if model.n_springs:
                _spring_rhs(x, u, n_start, model.spring_indices, model.spring_rest_length,
                            model.spring_stiffness, model.spring_damping, h, rhs)
            for term in others:
                rhs -= h * h * term.gradient(model, x + u)
            rhs_free = rhs[self.free]
            if pinned_part is not None:
                rhs_free -= pinned_part
            u[self.free] = self.solve(rhs_free)
        self.stats["steps"] += 1
        return self.new_state(state.t + h, x + u, u / h)
