"""Saved frames: what a run keeps of a saved step, and how it is computed.

Contract: a frame is the state (t, x, v) and what is derived from the state alone — the kinetic
energy and each potential term, their sums, the joints' exact tensions, the smallest contact
distance, the contact forces and the smallest distance between surfaces — keyed as in the trajectory store (:func:`frame_data`, the
reference). A run records only the state at a saved step (:meth:`FrameSeries.put_state`: three
copies into preallocated arrays; or an integrator writes a block of states there itself,
:meth:`FrameSeries.state_block`) and derives the rest for a block of frames at once
(:func:`derive_block`): NumPy over the block where its rounding is the frame-by-frame one (a sum
along a contiguous last axis, a stacked matrix product), compiled loops that call the same
compiled kernels frame after frame, and the frame-by-frame functions for everything else (a term
bound to time, moving planes or prescribed motions, a large joint set). Every derived value is
bit-identical to :func:`frame_data`'s (tests/test_frames.py), so saving frames in blocks changes
no stored number. A frame whose derivation fails (a singular joint set, a non-finite tension) is
found by the frame-by-frame path, which raises its :class:`~hooke.errors.SimulationError`; the
frames before it are kept.

Why: a frame derived on its own costs ten or more NumPy calls, 12 µs for spring1d and 35 µs for
the double pendulum (whose step costs 4 µs); in blocks it costs well under a microsecond
(``hooke bench W6`` measures it).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from . import jit_cache  # noqa: F401  (a full disk under Numba's cache: no error)

from .constraints import DENSE_JOINTS, _geometry, _normal_values, _tension_rhs
from .dense import cholesky, cholesky_solve
from .energies import barrier, contact, gravity, spring, surface_barrier
from .errors import SimulationError
from .kernels import _accelerations_serial
from .model import State
from .result import Result, frame_extras


def frame_steps(n_steps: int, save_every: int) -> np.ndarray:
    """The steps at which frames are saved: 0, every ``save_every`` steps and the last."""
    steps = np.arange(0, n_steps + 1, save_every)
    return steps if steps[-1] == n_steps else np.append(steps, n_steps)


def energy_terms(system, state: State) -> dict[str, float]:
    """The kinetic energy and each potential term [J]."""
    return {"kinetic": system.kinetic_energy(state.v), **system.potential_energies(state.x, state.t)}


def frame_data(system, state: State) -> dict[str, np.ndarray]:
    """Everything saved of one frame, keyed as in the trajectory store: the reference that
    :func:`derive_block` equals bit for bit."""
    model = system.model
    terms = energy_terms(system, state)
    kinetic = terms.pop("kinetic")
    potential = sum(terms.values())
    data = {"t": np.float64(state.t), "x": state.x, "v": state.v,
            "energy/kinetic": np.float64(kinetic), "energy/potential": np.float64(potential),
            "energy/total": np.float64(kinetic + potential)}
    data.update({f"energy/{key}": np.float64(value) for key, value in terms.items()})
    if system.joints is not None:
        data["joint_force"] = system.joint_tensions(state.x, state.v, state.t)
    if contact.active(model):
        data["contact_distance"] = np.float64(contact.min_distance(model, state.x, state.t))
        data["contact_force"] = contact.contact_forces(model, state.x, state.t)
    if surface_barrier.active(model):
        data["surface_distance"] = np.float64(surface_barrier.min_distance(model, state.x))
    return data


# -- blocks of frames ------------------------------------------------------------------------------
@njit(cache=True)
def _spring_energies(x, pairs, rest, stiffness, squared, out):
    for f in range(x.shape[0]):
        out[f] = spring._energy(x[f], pairs, rest, stiffness, squared)


@njit(cache=True)
def _barrier_energies(x, normals, offsets, area, dhat, kappa, out):
    for f in range(x.shape[0]):
        out[f] = barrier._energy(x[f], normals, offsets, area, dhat, kappa)


@njit(cache=True)
def _barrier_forces(x, normals, offsets, area, dhat, kappa, out):
    """out[f] = −∇b(x[f]) (``contact_forces``: the gradient into zeros, negated)."""
    for f in range(x.shape[0]):
        out[f] = 0.0
        barrier._gradient(x[f], normals, offsets, area, dhat, kappa, out[f])
        for i in range(out.shape[1]):
            for a in range(out.shape[2]):
                out[f, i, a] = -out[f, i, a]


@njit(cache=True, error_model="numpy")
def _tensions(x3, v3, x, v, spring_bounds, particle_bounds, springs, indptr, other, factor,
              inverse_mass, gravity_3, i, j, pair_k, pair_l, coefficient, slot, data, indices,
              column_start, out):
    """:meth:`JointSet.tensions` at the unconstrained accelerations of :class:`SpringGather`,
    frame after frame, with the same kernels in the same order (``System.joint_tensions`` for a
    model whose fused kernels run serially in its own numbering). Returns the number of frames
    done: the first frame whose tensions are not finite or whose G M⁻¹ Gᵀ is singular is left
    to the frame-by-frame path, which raises the error."""
    n, dim, count = x.shape[1], x.shape[2], i.size
    a3 = np.empty((n, 3))
    a = np.empty((n, dim))
    length, direction, rhs = np.empty(count), np.empty((count, dim)), np.empty(count)
    dense, lower = np.empty((count, count)), np.empty((count, count))
    first = np.empty(count, dtype=np.int64)
    for f in range(x.shape[0]):
        _accelerations_serial(spring_bounds, particle_bounds, x3[f], v3[f], springs, indptr,
                              other, factor, inverse_mass, gravity_3, None, a3)
        for p in range(n):
            for c in range(dim):
                a[p, c] = a3[p, c]
        _geometry(x[f], i, j, length, direction)
        _tension_rhs(v[f], a, length, direction, i, j, False, rhs)
        for k in range(count):
            if not np.isfinite(rhs[k]):
                return f
        _normal_values(direction, pair_k, pair_l, coefficient, slot, data)
        dense[:] = 0.0  # the sparse matrix's toarray(): its entries added to zeros
        for c in range(count):
            for e in range(column_start[c], column_start[c + 1]):
                dense[indices[e], c] += data[e]
        if not cholesky(dense, lower, first):
            return f
        cholesky_solve(lower, first, rhs, out[f])
        for k in range(count):
            if not np.isfinite(out[f, k]):
                return f
    return x.shape[0]


def _padded(a: np.ndarray) -> np.ndarray:
    """(F, n, d) as (F, n, 3), zero-padded: the fused kernels' layout (``SpringGather._three``)."""
    out = np.zeros(a.shape[:2] + (3,))
    out[:, :, : a.shape[2]] = a
    return out


def _compiled_tensions(system, x: np.ndarray, v: np.ndarray, out: np.ndarray) -> int:
    """Frames of ``out`` filled by :func:`_tensions` (0 where the model is not of its kind)."""
    joints, gather = system.joints, system.gather
    if (joints.count > DENSE_JOINTS or system.model.pinned_motions or gather is None
            or gather.permutation is not None or gather.runs is not None
            or gather.bounds()[0].size != 2):  # (runs: see adaptive_compiled.build)
        return 0
    spring_bounds, particle_bounds = gather.bounds()
    normal = joints._normal
    return _tensions(_padded(x), _padded(v), x, v, spring_bounds, particle_bounds, gather.springs,
                     gather.indptr, gather.other, gather.factor, gather.inverse_mass,
                     gather.gravity, joints.i, joints.j, joints._pair_k, joints._pair_l,
                     joints._pair_coefficient, joints._slot, normal.data, normal.indices,
                     normal.indptr, out)


def _term_values(system, term, t: np.ndarray, x: np.ndarray) -> np.ndarray:
    """(F,) the potential term's energy at every frame, as ``System.potential_energies``."""
    model = system.model
    out = np.empty(t.shape[0])
    if term is spring:
        _spring_energies(x, *spring._args(model), out)
    elif term is gravity:
        out[:] = -np.sum(model.mass * (x @ model.gravity), axis=1)
    elif term is barrier and not model.plane_motions:  # planes at rest: the same at every t
        _barrier_energies(x, *barrier.at_time(model, 0.0)._args(model), out)
    else:
        for f in range(t.shape[0]):
            bound = term.at_time(model, t[f]) if hasattr(term, "at_time") else term
            out[f] = bound.value(model, x[f])
    return out


def derive_block(system, t: np.ndarray, x: np.ndarray, v: np.ndarray) -> dict[str, np.ndarray]:
    """What :func:`frame_data` derives, for the frames (t, x, v) of a block ((F,), (F, n, d) ×
    2, C-contiguous floats), keyed as it is: (F,) energies, (F, joints) tensions, (F,) contact
    distances, (F, n, d) contact forces. Raises the first failing frame's SimulationError with
    the frame's index within the block as its ``frame`` attribute."""
    model, frames = system.model, t.shape[0]
    kinetic = 0.5 * np.sum((model.mass[None, :, None] * v * v).reshape(frames, -1), axis=1)
    terms = {}
    for term in system.terms:
        terms[term.NAME] = _term_values(system, term, t, x)
    potential = sum(terms.values(), np.zeros(frames))  # 0.0 + …, as frame_data's sum from 0
    data = {"energy/kinetic": kinetic, "energy/potential": potential,
            "energy/total": kinetic + potential}
    data.update({f"energy/{key}": value for key, value in terms.items()})
    if system.joints is not None:
        data["joint_force"] = forces = np.empty((frames, model.n_joints))
        for f in range(_compiled_tensions(system, x, v, forces), frames):
            try:
                forces[f] = system.joint_tensions(x[f], v[f], t[f])
            except SimulationError as error:
                error.frame = f
                raise
    if contact.active(model):
        data["contact_distance"], data["contact_force"] = _contact(model, t, x)
    if surface_barrier.active(model):  # ipctk's collision set per frame
        data["surface_distance"] = np.array([surface_barrier.min_distance(model, x[f])
                                             for f in range(frames)])
    return data


def _contact(model, t: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(F,) smallest distances and (F, n, d) contact forces (``contact.min_distance``,
    ``contact.contact_forces``): compiled over the block for planes at rest alone, frame by
    frame with moving planes, spheres or obstacles."""
    frames = t.shape[0]
    forces = np.empty(x.shape)
    if model.plane_motions or model.n_spheres or model.n_obstacles:
        distance = np.array([contact.min_distance(model, x[f], t[f]) for f in range(frames)])
        for f in range(frames):
            forces[f] = contact.contact_forces(model, x[f], t[f])
        return distance, forces
    fixed = barrier.at_time(model, 0.0)
    touching = model.contact_area > 0
    if touching.any():
        distances = x @ model.plane_normals.T - fixed.offsets[None, None, :]
        distance = distances[:, touching, :].reshape(frames, -1).min(axis=1)
    else:
        distance = np.full(frames, np.inf)
    _barrier_forces(x, *fixed._args(model), forces)
    return distance, forces


class FrameSeries:
    """A run's saved frames, allocated for ``n_frames`` from the first frame's shapes: states
    recorded one by one (``recorded`` of them), the rest derived in blocks (``derived``)."""

    def __init__(self, system, n_frames: int):
        self.system, self.n_frames = system, n_frames
        self.arrays: dict[str, np.ndarray] = {}
        self.recorded = self.derived = 0

    def _array(self, key: str, shape: tuple, dtype) -> np.ndarray:
        if key not in self.arrays:
            self.arrays[key] = np.empty((self.n_frames,) + shape, dtype=dtype)
        return self.arrays[key]

    def put_state(self, frame: int, state: State) -> None:
        """Record frame ``frame``'s state (its derived values come with :meth:`derive`)."""
        if not self.arrays:
            self._array("t", (), np.float64)
            self._array("x", np.shape(state.x), np.float64)
            self._array("v", np.shape(state.v), np.float64)
        arrays = self.arrays
        arrays["t"][frame] = state.t
        arrays["x"][frame] = state.x
        arrays["v"][frame] = state.v
        self.recorded = frame + 1

    def state_block(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """(x, v) of frames [start, stop): views to write their states into, recorded with
        :meth:`put_times`."""
        shape = self.system.model.x0.shape
        return (self._array("x", shape, np.float64)[start:stop],
                self._array("v", shape, np.float64)[start:stop])

    def put_times(self, start: int, t: np.ndarray) -> None:
        """Record the frames from ``start`` whose states are written (:meth:`state_block`) at
        times ``t``."""
        self._array("t", (), np.float64)[start:start + t.size] = t
        self.recorded = start + t.size

    def put_block(self, start: int, data: dict[str, np.ndarray]) -> None:
        """Frames from ``start`` (the next to derive) given whole: every key of
        :func:`frame_data`, as (F, …) arrays (a resumed run's stored frames)."""
        for key, value in data.items():
            value = np.asarray(value)
            self._array(key, value.shape[1:], value.dtype)[start:start + value.shape[0]] = value
        self.recorded = self.derived = start + len(data["t"])

    def put(self, frame: int, data: dict[str, np.ndarray]) -> None:
        """One frame given whole (:func:`frame_data`; the state a stopped run ends with)."""
        self.put_block(frame, {key: np.asarray(value)[None] for key, value in data.items()})

    def derive(self, upto: int | None = None) -> None:
        """Derive the recorded frames up to ``upto`` (all when None). A frame that fails raises
        its SimulationError; the frames before it are derived, the ones from it are dropped."""
        start, upto = self.derived, self.recorded if upto is None else upto
        if upto <= start:
            return
        a = self.arrays
        try:
            block = derive_block(self.system, a["t"][start:upto], a["x"][start:upto],
                                 a["v"][start:upto])
        except SimulationError as error:
            failed = start + getattr(error, "frame", 0)
            self.derive(failed)
            self.recorded = failed
            raise
        for key, value in block.items():
            self._array(key, value.shape[1:], value.dtype)[start:upto] = value
        self.derived = upto

    def block(self, start: int, stop: int) -> dict[str, np.ndarray]:
        """Derived frames [start, stop), keyed as in the store."""
        return {key: array[start:stop] for key, array in self.arrays.items()}

    def result(self, frames: int, **fields) -> Result:
        cut = self.block(0, frames)
        if "t" not in cut:  # the first frame failed (e.g. a singular joint set at the start)
            model = fields["scene"].model
            cut = {"t": np.empty(0), "x": np.empty((0, model.n_particles, model.dim)),
                   "v": np.empty((0, model.n_particles, model.dim))}
        energy = {key.split("/", 1)[1]: value for key, value in cut.items() if key.startswith("energy/")}
        extras = frame_extras(cut, frames, cut["x"].shape[-1])
        return Result(t=cut["t"], x=cut["x"], v=cut["v"], energy=energy, **extras, **fields)
