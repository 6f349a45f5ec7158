"""``xpbd``: extended position-based dynamics (Macklin, Müller and Chentanez 2016) with compliance.

Each spring is a compliant constraint C_s(x) with stiffness k through its compliance α = 1/k, so
that ½ α⁻¹ C² is the spring's energy: C = |d| − l0 for the Hookean form (∇C = n on particle j,
−n on i), C = (|d|² − l0²)/l0 for the squared-length form (∇C = 2d/l0). A step of h is
``substeps`` substeps of hs = h/substeps, each:

    v̂ = (v + hs (g + a_other(x) + c w/m)) / (1 + hs c/m),  x̂ = x + hs v̂
                                        (prediction; pins placed at t + hs)
    λ = 0; ``iterations`` sweeps over the springs: for each spring
        Δλ = −(κ C + λ + σ ∇C·(x − x_start)) / ((κ + σ) Σ w |∇C|² + 1),   x_p += w_p ∇C_p Δλ
    v = v̂ + (x − x̂)/hs

with κ = k hs² = 1/α̃, w = 1/m (0 for pinned particles) and σ = c hs / |∇C|², which is the XPBD
damping γ = α̃ β̃/hs multiplied through by κ for β = c/|∇C|² (so the damping force is
−c ((v_j − v_i)·n) n as in :mod:`hooke.energies.damping`). Written with κ instead of α̃ the update
is defined for k = 0 too (a pure damper). Other potential terms than springs and gravity (the
viewer's cursor spring) act as explicit forces in the prediction; air drag −c (v − w) with the
wind w at t + hs (:mod:`hooke.energies.drag`) is implicit there, exactly as implicit Euler takes
a particle's own linear drag, so it never destabilises a step. The velocity is v̂ plus the
constraint correction, so a particle no constraint touches moves exactly as predicted
(ballistically, or slowed by its drag).

With one iteration per substep and a constraint linear along its direction (the 1D spring) a
substep is exactly implicit Euler; in general XPBD converges to implicit Euler as iterations grow
and is first order in time (``order = 1``). It conserves linear momentum (each correction is
mass-weighted and opposite) and is unconditionally stable; stiffness is underresolved with few
iterations, the known XPBD trade.

Gauss–Seidel order: springs are greedily coloured once so that no two springs of one colour share
a particle; colours are swept in turn and the springs of one colour are projected in parallel
(Numba threads, no atomics) when the model has at least ``PARALLEL_MIN_SPRINGS`` springs.
The result is the same for any thread count. Limits: no contact planes, no joints.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange
from .. import jit_cache  # noqa: F401  (a full disk under Numba's cache: no error)

from ..energies import drag, gravity, spring
from ..errors import HookeInputError
from ..model import State
from .base import MAX_COUNT_OPTION, Integrator, register

MAX_COLOURS = 63  # colours tracked in one 64-bit mask per particle; the rest go serially last
# A parallel sweep launches Numba's threads once per colour and iteration (~100 launches per
# step on a cloth): only worth it when each colour holds tens of thousands of springs.
PARALLEL_MIN_SPRINGS = 200_000


@njit(cache=True, error_model="numpy")
def greedy_colouring(pairs, n_particles):
    """Colour of each spring (the smallest not used at either end), MAX_COLOURS for springs
    that found none below it (they are projected one by one after the coloured ones)."""
    used = np.zeros(n_particles, dtype=np.uint64)
    colour = np.empty(pairs.shape[0], dtype=np.int64)
    for s in range(pairs.shape[0]):
        i, j = pairs[s, 0], pairs[s, 1]
        taken = used[i] | used[j]
        c = 0
        while c < MAX_COLOURS and (taken >> np.uint64(c)) & np.uint64(1):
            c += 1
        colour[s] = c
        if c < MAX_COLOURS:
            used[i] |= np.uint64(1) << np.uint64(c)
            used[j] |= np.uint64(1) << np.uint64(c)
    return colour


@njit(inline="always")
def _project(s, x, x_start, lam, pairs, rest, kappa, sigma_base, inverse_mass, squared):
    """One XPBD update of spring s (see the module docstring)."""
    dim = x.shape[1]
    i, j = pairs[s, 0], pairs[s, 1]
    wi, wj = inverse_mass[i], inverse_mass[j]
    if wi + wj == 0.0:
        return
    length2 = 0.0
    for a in range(dim):
        diff = x[j, a] - x[i, a]
        length2 += diff * diff
    if length2 == 0.0:
        return  # no direction
    l0 = rest[s]
    if squared:
        constraint = (length2 - l0 * l0) / l0
        factor = 2.0 / l0  # ∇C_j = factor · d
    else:
        length = np.sqrt(length2)
        constraint = length - l0
        factor = 1.0 / length
    grad2 = factor * factor * length2
    sigma = sigma_base[s] / grad2
    rate = 0.0  # ∇C·(x − x_start)
    for a in range(dim):
        diff = x[j, a] - x[i, a]
        rate += factor * diff * ((x[j, a] - x_start[j, a]) - (x[i, a] - x_start[i, a]))
    k = kappa[s]
    delta = -(k * constraint + lam[s] + sigma * rate) / ((k + sigma) * (wi + wj) * grad2 + 1.0)
    lam[s] += delta
    for a in range(dim):
        step = factor * (x[j, a] - x[i, a]) * delta
        x[j, a] += wj * step
        x[i, a] -= wi * step


@njit(cache=True, error_model="numpy")
def _sweeps_serial(order, x, x_start, lam, pairs, rest, kappa, sigma_base, inverse_mass,
                   squared, iterations):
    for _ in range(iterations):
        for position in range(order.shape[0]):
            _project(order[position], x, x_start, lam, pairs, rest, kappa, sigma_base,
                     inverse_mass, squared)


@njit(parallel=True, cache=True, error_model="numpy")
def _sweeps_parallel(order, colour_start, x, x_start, lam, pairs, rest, kappa, sigma_base,
                     inverse_mass, squared, iterations):
    coloured = colour_start.shape[0] - 2  # the last group holds the springs without a colour
    for _ in range(iterations):
        for c in range(coloured):
            if colour_start[c + 1] == colour_start[c]:
                continue
            for position in prange(colour_start[c], colour_start[c + 1]):
                _project(order[position], x, x_start, lam, pairs, rest, kappa, sigma_base,
                         inverse_mass, squared)
        for position in range(colour_start[coloured], colour_start[coloured + 1]):
            _project(order[position], x, x_start, lam, pairs, rest, kappa, sigma_base,
                     inverse_mass, squared)


@register
class XPBD(Integrator):
    name = "xpbd"
    order = 1
    summary = ("extended position-based dynamics: springs as compliant constraints (α = 1/k), "
               "`substeps` × `iterations` Gauss-Seidel sweeps")
    defaults = {"iterations": 10, "substeps": 1}

    def check_options(self) -> None:
        for key in ("iterations", "substeps"):
            value = self.options[key]
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise HookeInputError(key, "must be an integer >= 1", value)
        self.iterations = int(self.options["iterations"])
        self.substeps = int(self.options["substeps"])
        sweeps = self.substeps * self.iterations  # the work per step, bounded as one count is
        if sweeps > MAX_COUNT_OPTION:
            raise HookeInputError("substeps × iterations", f"must be at most {MAX_COUNT_OPTION} "
                                  "Gauss-Seidel sweeps per step (for more, take a smaller dt)",
                                  sweeps)
        model = self.system.model
        self.hs = self.dt / self.substeps
        self.inverse_mass = np.where(model.pinned, 0.0, 1.0 / model.mass)
        self.drag_rate = (drag.coefficients(model) * self.inverse_mass)[:, None]  # c/m [1/s]
        self.kappa = model.spring_stiffness * self.hs * self.hs
        self.sigma_base = model.spring_damping * self.hs
        self.squared = model.spring_energy == "squared_length"
        colour = greedy_colouring(model.spring_indices, model.n_particles)
        # Within a colour, springs sorted by first endpoint (locality); colours in turn.
        self.order = np.lexsort((model.spring_indices[:, 0], colour))
        counts = np.bincount(colour, minlength=64)
        self.colour_start = np.zeros(65, dtype=np.int64)
        np.cumsum(counts, out=self.colour_start[1:])
        self.parallel = model.n_springs >= PARALLEL_MIN_SPRINGS

    def motion_samples_per_dt(self) -> int:
        return self.substeps  # each substep places the pins and takes the wind at its time

    def _constraints(self, x: np.ndarray, x_start: np.ndarray) -> None:
        model = self.system.model
        lam = np.zeros(model.n_springs)
        args = (x, x_start, lam, model.spring_indices, model.spring_rest_length, self.kappa,
                self.sigma_base, self.inverse_mass, self.squared, self.iterations)
        if self.parallel:
            _sweeps_parallel(self.order, self.colour_start, *args)
        else:
            _sweeps_serial(self.order, *args)

    def step(self, state: State) -> State:
        system, model, hs = self.system, self.system.model, self.hs
        others = [term for term in system.terms if term not in (spring, gravity)]
        free = self.inverse_mass[:, None] > 0
        x, v, t = state.x, state.v, state.t
        for _ in range(self.substeps):
            accel = np.where(free, model.gravity, 0.0)
            for term in others:
                accel -= term.gradient(model, x) * self.inverse_mass[:, None]
            t += hs
            accel += self.drag_rate * drag.wind(model, t)  # 0 without drag: c = 0
            v_hat = (v + hs * accel) / (1.0 + hs * self.drag_rate)
            x_hat = x + hs * v_hat
            system.apply_pins(x_hat, v_hat, t)
            x_new = x_hat.copy()
            if model.n_springs:
                self._constraints(x_new, x)
            v = v_hat + (x_new - x_hat) / hs
            x = x_new
        self.stats["steps"] += 1
        return self.new_state(state.t + self.dt, x, v)
