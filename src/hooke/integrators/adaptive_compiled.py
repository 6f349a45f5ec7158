"""``rk45``'s adaptive steps compiled whole for small models (Numba, cache=True).

Contract:
- :func:`build` returns a :class:`CompiledDormandPrince` for a system whose forces are those of
  the fused spring/gravity kernels (:class:`hooke.kernels.SpringGather`, serial, in the model's
  own numbering, not summed in runs: the generic steps' sums for such a model round otherwise,
  and the choice then followed the thread count), with static pins only, and joints (at most
  :data:`hooke.constraints.DENSE_JOINTS`) kept by the exact tensions with stabilisation None,
  ``"correction"`` or ``"baumgarte"``; else None, and :class:`.adaptive.DormandPrince45` keeps its
  Python loop (projection moves the state after each step, a moving pin needs its motion in
  Python).
- :meth:`CompiledDormandPrince.run` writes the states at a block of frame times into (frames,
  n, d) arrays in one call, going on from the current step (or from a state and its first
  stage): each frame once a step reaches it, from that step's continuous extension
  (:func:`dense_output`, pins placed) or its end, as ``DormandPrince45.advance`` returns it; it
  returns when the block is written, or after STEPS_PER_CALL steps (PAUSED, to be gone on from),
  with the current step. It computes what the Python loop computes, operation for operation:
  the same kernels for the forces (:func:`hooke.kernels._accelerations_serial`) and the joints
  (:mod:`hooke.constraints`' helpers and the Cholesky of :mod:`hooke.dense`), the stage sums of
  :func:`.tableau.weighted_sum` element by element, and the error norm, controller and
  continuous extension through :func:`scaled_rms`, :func:`step_factor` and
  :func:`dense_output`, which the Python loop calls too. So both give the same bits, frame by
  frame or in blocks (tests/test_adaptive_compiled.py), and a checkpoint written by one resumes
  in the other. The call holds no GIL.
- On anything the Python loop would raise at (a non-finite tension right-hand side, a singular
  joint set, a step-size underflow) it stops before that step and says so; the caller then
  repeats that step with the Python loop, which raises the error with its message.

Why: each right-hand side of seed 003's double pendulum costs tens of µs of Python and NumPy
calls in the generic loop (19,190 of them in its 100 s run); compiled, the whole run takes
milliseconds (``hooke bench`` W8). At that scale what a call costs counts: the helpers that take
tuples of arrays are inlined (passing one increfs and decrefs every array in it), and the sums
index (n, d) arrays by row and column instead of reshaping them (CPU time of the 100 s run with
its frames, 38 → 25 ms). Its 10,000 frames are written in blocks, not one Python call
each (what a frame costs: ``hooke bench W8``).

Numba's cache does not notice edits to the helpers imported from :mod:`hooke.kernels`,
:mod:`hooke.constraints`, :mod:`hooke.dense` or :mod:`.compiled`: after changing them, touch this
file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit
from .. import jit_cache  # noqa: F401  (a full disk under Numba's cache: no error)

from ..constraints import DENSE_JOINTS, _correction, _geometry, _rates, _scatter, _tension_rhs
from ..dense import cholesky, cholesky_solve
from ..kernels import _accelerations_serial
from .compiled import all_finite
from .tableau import DORMAND_PRINCE, DORMAND_PRINCE_DENSE

OK, TENSION_RHS, SINGULAR, UNDERFLOW, PAUSED = 0, 1, 2, 3, 4
# The least step, relative to max(1, |t|): a shorter one is lost in t's round-off (UNDERFLOW)
UNDERFLOW_STEP = 1e-14
# Accepted steps per call at most: the call returns to Python now and then (Ctrl-C, and a Dask
# worker's other threads, which run meanwhile as the call holds no GIL), and goes on from there.
STEPS_PER_CALL = 20_000
NO_JOINTS, BARE, CORRECTION, BAUMGARTE = 0, 1, 2, 3
METHODS = {None: BARE, "correction": CORRECTION, "baumgarte": BAUMGARTE}

# The elementary controller for an error estimate of order 4 (SciPy's RK45 uses the same).
SAFETY, MIN_FACTOR, MAX_FACTOR, ERROR_EXPONENT = 0.9, 0.2, 10.0, -1.0 / 5.0


@njit(cache=True, error_model="numpy")
def step_factor(error_norm):
    """h⁺/h = clip(0.9 err^(−1/5), 0.2, 10), and 10 for a zero error."""
    if error_norm == 0.0:
        return MAX_FACTOR
    return min(max(SAFETY * error_norm ** ERROR_EXPONENT, MIN_FACTOR), MAX_FACTOR)


@njit(cache=True, error_model="numpy")
def scaled_rms(ex, ev, x0, x1, v0, v1, free, atol, rtol):
    """The RMS over the free DOFs (``free`` flat, C order) of the x-part ``ex`` and the v-part
    ``ev`` (n, d) in units of atol + rtol·max(|x0|, |x1|) (and of v0, v1), summed entry by entry,
    x part first. x1 and v1 may be x0 and v0 (the starting step's estimate)."""
    total = 0.0
    count = 0
    for part, a, b in ((ex, x0, x1), (ev, v0, v1)):
        columns = part.shape[1]
        for p in range(part.shape[0]):
            for c in range(columns):
                if free[p * columns + c]:
                    scaled = part[p, c] / (atol + rtol * max(abs(a[p, c]), abs(b[p, c])))
                    total += scaled * scaled
                    count += 1
    return math.sqrt(total / max(count, 1))


@njit(cache=True, error_model="numpy")
def _joint_accelerations(x, v, a, joints, work):
    """a += the joints' accelerations, as :meth:`hooke.constraints.JointForces.acceleration`
    with ``a`` the unconstrained ones; a status (OK, TENSION_RHS, SINGULAR)."""
    (i, j, rest, pair_k, pair_l, coefficient, inverse_mass, method, squared, alpha, beta,
     k_c, beta_c) = joints
    length, n, rhs, tension, rates, pull, normal, factor, first, force = work
    _geometry(x, i, j, length, n)
    _tension_rhs(v, a, length, n, i, j, squared, rhs)
    for k in range(rhs.size):
        if not math.isfinite(rhs[k]):
            return TENSION_RHS
    if alpha != 0.0 or method == CORRECTION:
        _rates(v, n, i, j, rates)
    if alpha != 0.0:
        for k in range(rhs.size):
            rhs[k] += 2.0 * alpha * rates[k]
    if beta != 0.0:
        for k in range(rhs.size):
            rhs[k] += beta * beta * (length[k] - rest[k])
    normal[:] = 0.0
    for q in range(pair_k.size):
        dot = 0.0
        for c in range(n.shape[1]):
            dot += n[pair_k[q], c] * n[pair_l[q], c]
        normal[pair_k[q], pair_l[q]] += coefficient[q] * dot
    if not cholesky(normal, factor, first):
        return SINGULAR
    cholesky_solve(factor, first, rhs, tension)
    for k in range(tension.size):
        if not math.isfinite(tension[k]):
            return SINGULAR
    force[:] = 0.0
    _scatter(n, tension, i, j, force)
    for p in range(force.shape[0]):
        for c in range(force.shape[1]):
            force[p, c] = -force[p, c]
    if method == CORRECTION:
        for k in range(pull.size):
            pull[k] = k_c * (length[k] - rest[k]) + beta_c * rates[k]
        _correction(n, pull, tension, i, j, force)
    for p in range(force.shape[0]):
        for c in range(force.shape[1]):
            a[p, c] += force[p, c] * inverse_mass[p]
    return OK


# Inlined into the step: a call that passes the tuples of arrays increfs and decrefs each of
# them, 320 of the 880 ns an evaluation of the pendulum's accelerations took.
@njit(inline="always", error_model="numpy")
def _acceleration(x, v, forces, joints, work, out):
    """out = the accelerations at (x, v) (:meth:`hooke.system.System.acceleration`); a status."""
    spring_bounds, particle_bounds, springs, indptr, other, factor, inverse_mass, gravity = forces
    _accelerations_serial(spring_bounds, particle_bounds, x, v, springs, indptr, other, factor,
                          inverse_mass, gravity, None, out)
    if joints[7] == NO_JOINTS:
        return OK
    return _joint_accelerations(x, v, out, joints, work)


# The sums below index (n, d) arrays by row and column: a reshape to one flat index cost more
# than the sums of a small model (113 against 52 ns a call for the pendulum's stage sum).
@njit(cache=True, error_model="numpy")
def _stage_sum(weights, count, k, h, y, out):
    """out = y + h · Σ_{s < count} w_s k_s, the sum stage by stage as :func:`.tableau.weighted_sum`."""
    for p in range(y.shape[0]):
        for c in range(y.shape[1]):
            total = 0.0
            for s in range(count):
                if weights[s] != 0.0:
                    total += weights[s] * k[s, p, c]
            out[p, c] = y[p, c] + h * total


@njit(cache=True, error_model="numpy")
def _weighted(weights, k, h, out):
    """out = h · Σ_s w_s k_s over every stage (the error estimate)."""
    for p in range(out.shape[0]):
        for c in range(out.shape[1]):
            total = 0.0
            for s in range(weights.size):
                if weights[s] != 0.0:
                    total += weights[s] * k[s, p, c]
            out[p, c] = h * total


@njit(inline="always", error_model="numpy")  # tuples of arrays: see _acceleration
def _accept(t, h, kx, kv, t_bound, max_step, atol, rtol, free, pinned, pinned_x0, tableau,
            forces, joints, work, step, stats):
    """One accepted step from (t, x0, v0) with first stage kx[0], kv[0] and trial step h, into
    x1, v1 and the stages; the trials it rejects shrink h. Returns (status, t1, the step's h,
    the next trial h); with another status than OK the step is not taken and counts nothing."""
    c, a, b, e, _ = tableau
    x0, v0, x1, v1, ex, ev, xs, vs = step
    stages = c.size
    hh = min(h, max_step)
    rejected = 0
    while True:
        if not hh > UNDERFLOW_STEP * max(1.0, abs(t)):  # NaN too: it would never shrink
            return UNDERFLOW, t, hh, h
        t1 = t_bound if t + hh >= t_bound else t + hh
        hh = t1 - t
        for s in range(1, stages - 1):
            _stage_sum(a[s], s, kx, hh, x0, xs)
            _stage_sum(a[s], s, kv, hh, v0, vs)
            kx[s] = vs
            status = _acceleration(xs, vs, forces, joints, work, kv[s])
            if status != OK:
                return status, t, hh, h
        _stage_sum(b, stages - 1, kx, hh, x0, x1)
        _stage_sum(b, stages - 1, kv, hh, v0, v1)
        _place_pins(pinned, pinned_x0, x1, v1)
        kx[stages - 1] = v1
        status = _acceleration(x1, v1, forces, joints, work, kv[stages - 1])
        if status != OK:
            return status, t, hh, h
        _weighted(e, kx, hh, ex)
        _weighted(e, kv, hh, ev)
        error_norm = np.inf
        if all_finite(x1, v1):
            error_norm = scaled_rms(ex, ev, x0, x1, v0, v1, free, atol, rtol)
            if not math.isfinite(error_norm):
                error_norm = np.inf
        factor = step_factor(error_norm)
        if error_norm < 1.0:
            break
        rejected += 1
        hh *= factor
    stats[0] += 1
    stats[1] += rejected
    stats[2] += (rejected + 1) * (stages - 1)
    return OK, t1, hh, hh * (min(factor, 1.0) if rejected else factor)


@njit(cache=True, error_model="numpy")
def _place_pins(pinned, pinned_x0, x, v):
    """Static pins in place, at rest (System.apply_pins)."""
    for q in range(pinned.size):
        x[pinned[q]] = pinned_x0[q]
        v[pinned[q]] = 0.0


@njit(inline="always", error_model="numpy")  # tuples of arrays: see _acceleration
def _write_frame(time, t, t1, hh, stepped, kx, kv, dense, pinned, pinned_x0, step, x_out, v_out):
    """x_out, v_out = the state at ``time`` ≤ t1 as ``DormandPrince45.advance`` returns it: the
    step's end at t1 (or, before any step, the start held there), else its continuous extension
    with the pins placed."""
    x0, v0, x1, v1, ex, ev, xs, vs = step
    x, v = x1, v1
    if stepped and time != t1:
        theta = (time - t) / hh
        dense_output(theta, hh, x0, x1, kx, dense, xs)
        dense_output(theta, hh, v0, v1, kv, dense, vs)
        _place_pins(pinned, pinned_x0, xs, vs)
        x, v = xs, vs
    for p in range(x_out.shape[0]):
        for c in range(x_out.shape[1]):
            x_out[p, c] = x[p, c]
            v_out[p, c] = v[p, c]


@njit(cache=True, error_model="numpy", nogil=True)
def _run(t, t1, hh, h, stepped, kx, kv, times, done, x_out, v_out, t_bound, max_step, atol,
         rtol, free, pinned, pinned_x0, tableau, forces, joints, work, step, stats):
    """The frames at ``times`` from ``done`` on, into x_out, v_out ((frames, n, d)), each once
    a step reaches it, stepping on from the current step (t to t1 of size hh, trial step h
    next): from (t, x0, v0) to (t1, x1, v1) with stages kx, kv when ``stepped``, else the start
    state held in x1, v1 at t1 = t with its first stage in kx[-1], kv[-1].

    Returns (status, frames done, t, t1, hh, h) with the current step as above: OK when every
    frame is written, PAUSED after STEPS_PER_CALL accepted steps (to be gone on from). With
    another status the step from (t, x0, v0), first stage kx[0], kv[0], failed and is not taken.
    ``stats`` (steps, rejected, evaluations) counts accepted steps only."""
    x0, v0, x1, v1, _, _, _, _ = step
    last = kx.shape[0] - 1
    accepted = 0
    while True:
        while done < times.size and times[done] <= t1:
            _write_frame(times[done], t, t1, hh, stepped, kx, kv, tableau[4], pinned, pinned_x0,
                         step, x_out[done], v_out[done])
            done += 1
        if done == times.size:
            return OK, done, t, t1, hh, h
        if accepted >= STEPS_PER_CALL:
            return PAUSED, done, t, t1, hh, h
        t = t1  # the next step starts from this one's end, its first stage the last (FSAL)
        x0[:] = x1
        v0[:] = v1
        kx[0] = kx[last]
        kv[0] = kv[last]
        status, t1, hh, h = _accept(t, h, kx, kv, t_bound, max_step, atol, rtol, free, pinned,
                                    pinned_x0, tableau, forces, joints, work, step, stats)
        if status != OK:
            return status, done, t, t, hh, h
        stepped = True
        accepted += 1


@njit(cache=True, error_model="numpy")
def dense_output(theta, h, y0, y1, k, weights, out):
    """out = the continuous extension at θ ∈ [0, 1] of a step of size h from y0 to y1 (n, d) with
    stages k (Dormand–Prince's, fourth order; ``weights`` :data:`.tableau.DORMAND_PRINCE_DENSE`),
    entry by entry in the order NumPy's array expression of it would take."""
    last = k.shape[0] - 1
    for p in range(y0.shape[0]):
        for c in range(y0.shape[1]):
            change = y1[p, c] - y0[p, c]
            r3 = h * k[0, p, c] - change
            r4 = change - h * k[last, p, c] - r3
            total = 0.0
            for s in range(weights.size):
                if weights[s] != 0.0:
                    total += weights[s] * k[s, p, c]
            r5 = h * total
            out[p, c] = y0[p, c] + theta * (change + (1.0 - theta) * (r3 + theta * (
                r4 + (1.0 - theta) * r5)))


def _padded(array: np.ndarray) -> np.ndarray:
    """``array`` (n, d) as a C-contiguous (n, 3) float array, zero-padded (the kernels' layout)."""
    out = np.zeros((array.shape[0], 3))
    out[:, : array.shape[1]] = array
    return out


def _load(padded: np.ndarray, array: np.ndarray) -> None:
    """padded (…, 3) = ``array`` (…, d), zero-padded."""
    d = array.shape[-1]
    padded[..., :d] = array
    padded[..., d:] = 0.0


@dataclass
class Outcome:
    """What :meth:`CompiledDormandPrince.run` did: ``frames`` written in all (with ``status``
    OK every one, PAUSED some, to be gone on from). ``step`` = (t, h, t1, x0, v0, x1, v1, kx, kv),
    :class:`.adaptive.AcceptedStep`'s fields in the model's (n, d) shape (copies): with OK or
    PAUSED the current step (None when the call took no step: it is the one it went on from);
    otherwise the step that failed
    starts at (t, x0, v0) with first stage kx[0], kv[0] (the rest is scratch). ``h_next``: the
    next trial step; ``stats``: (steps, rejected, evaluations) accepted."""

    status: int
    frames: int
    step: tuple | None
    h_next: float
    stats: tuple[int, int, int]


class CompiledDormandPrince:
    """The arrays :func:`_run` reads, built once per integrator (see :func:`build`)."""

    def __init__(self, system, stabilization):
        model, gather = system.model, system.gather
        n, m = model.n_particles, model.n_joints
        spring_bounds, particle_bounds = gather.bounds()
        self.forces = (spring_bounds, particle_bounds, gather.springs, gather.indptr,
                       gather.other, gather.factor, gather.inverse_mass, gather.gravity)
        if m:
            joints = system.joints
            baumgarte = stabilization.method == "baumgarte"
            self.joints = (joints.i, joints.j, joints.rest, joints._pair_k, joints._pair_l,
                           joints._pair_coefficient, joints.inverse_mass,
                           METHODS[stabilization.method], stabilization.method == "correction",
                           stabilization.baumgarte_alpha if baumgarte else 0.0,
                           stabilization.baumgarte_beta if baumgarte else 0.0,
                           stabilization.k_c, stabilization.beta_c)
        else:
            empty_int, empty = np.zeros(0, dtype=np.int64), np.zeros(0)
            self.joints = (empty_int, empty_int, empty, empty_int, empty_int, empty, empty,
                           NO_JOINTS, False, 0.0, 0.0, 0.0, 0.0)
        self.work = (np.empty(m), np.empty((m, 3)), np.empty(m), np.empty(m), np.empty(m),
                     np.empty(m), np.empty((m, m)), np.empty((m, m)),
                     np.empty(m, dtype=np.int64), np.empty((n, 3)))
        free = np.zeros((n, 3), dtype=np.bool_)
        free[:, : model.dim] = model.free[:, None]
        self.free = free.reshape(-1)
        self.pinned = np.ascontiguousarray(model.pinned_index, dtype=np.int64)
        self.pinned_x0 = _padded(model.x0[self.pinned])
        self.dim = model.dim
        tableau = DORMAND_PRINCE
        self.tableau = (tableau.c, np.ascontiguousarray(tableau.a),
                        np.ascontiguousarray(tableau.b[:-1]),
                        np.ascontiguousarray(tableau.b - tableau.b_embedded),
                        DORMAND_PRINCE_DENSE)
        # the current step (x0, v0, x1, v1, then scratch) and its stages, (n, 3) each
        self.step_arrays = tuple(np.zeros((n, 3)) for _ in range(8))
        self.kx, self.kv = np.zeros((tableau.stages, n, 3)), np.zeros((tableau.stages, n, 3))
        self.stats = np.zeros(3, dtype=np.int64)

    def run(self, step, start, first, h, times, done, x_out, v_out, t_bound, max_step, atol,
            rtol) -> Outcome:
        """Frames ``done`` on of ``times`` into x_out, v_out ((frames, n, d), C-contiguous), going
        on from ``step`` (an :class:`.adaptive.AcceptedStep`, the current one) or, when None,
        from the State ``start`` with first stage ``first`` = (k_x, k_v); see :class:`Outcome`."""
        x0, v0, x1, v1 = self.step_arrays[:4]
        if step is None:
            _load(x1, start.x)
            _load(v1, start.v)
            _load(self.kx[-1], first[0])
            _load(self.kv[-1], first[1])
            t, t1, h_step = start.t, start.t, 0.0
        else:
            for padded, array in ((x0, step.x0), (v0, step.v0), (x1, step.x1), (v1, step.v1),
                                  (self.kx, step.kx), (self.kv, step.kv)):
                _load(padded, array)
            t, t1, h_step = step.t, step.t1, step.h
        self.stats[:] = 0
        status, frames, t, t1, h_step, h_next = _run(
            float(t), float(t1), float(h_step), float(h), step is not None, self.kx, self.kv,
            times, done, x_out, v_out, float(t_bound), float(max_step), float(atol), float(rtol),
            self.free, self.pinned, self.pinned_x0, self.tableau, self.forces, self.joints,
            self.work, self.step_arrays, self.stats)
        d = self.dim
        moved = status not in (OK, PAUSED) or self.stats[0] > 0  # else the step is unchanged
        current = None if not moved else (
            t, h_step, t1, *(np.array(a[..., :d]) for a in (x0, v0, x1, v1, self.kx, self.kv)))
        return Outcome(status, int(frames), current, h_next, tuple(int(s) for s in self.stats))


def build(system, stabilization) -> CompiledDormandPrince | None:
    """The compiled steps for ``system`` (see the module docstring), or None."""
    gather = system.gather
    model = system.model
    # Not a model the gather sums in runs (kernels.SpringRuns, another order of the same sums):
    # the generic steps use them, these steps sum spring by spring, and which of the two ran
    # depended on the thread count below (one chunk), so 1 and 2 threads gave other bits.
    if (gather is None or gather.permutation is not None or gather.runs is not None
            or system.has_moving_pins or gather.bounds()[0].size != 2
            or model.n_joints > DENSE_JOINTS):
        return None
    if model.n_joints and stabilization.method not in METHODS:
        return None
    return CompiledDormandPrince(system, stabilization)
