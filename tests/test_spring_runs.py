"""The run kernels (:mod:`hooke.spring_runs`): their runs of a grid counted independently, their
results against the gather kernels of :mod:`hooke.kernels` for every spring form, dimension and
parameter layout, their determinism across thread counts, and when :class:`SpringGather` takes
them."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from hooke import spring_runs
from hooke.array_models import model_from_arrays, renumbered
from hooke.kernels import PARALLEL_MIN_SPRINGS, SpringGather
from hooke.system import System

N = 40  # a 40 × 40 grid: 6,162 springs, above PARALLEL_MIN_SPRINGS


def grid(dim=3, n=N, *, energy="hookean", damping=0.0, rest=None, stiffness=100.0, rng=None,
         pinned=(0,), reversed_ends=False):
    """An n × n grid of structural and shear springs (the cloth's), in the plane of its first two
    axes (1D: the particles of each row on one line, so the shear springs join particles of
    different rows at the same x), with its rows numbered one after the other;
    ``reversed_ends``: the springs across rows and along diagonals listed from their
    higher-numbered end (runs of negative offset: −n − 1 (short), then −n, longer than a
    block)."""
    index = np.arange(n * n).reshape(n, n)
    pairs = np.concatenate([
        np.stack([index[:, :-1].ravel(), index[:, 1:].ravel()], 1),    # along a row
        np.stack([index[:-1, :].ravel(), index[1:, :].ravel()], 1),    # across rows
        np.stack([index[:-1, :-1].ravel(), index[1:, 1:].ravel()], 1),  # diagonals
        np.stack([index[:-1, 1:].ravel(), index[1:, :-1].ravel()], 1)])  # anti-diagonals
    if reversed_ends:
        across = slice(n * (n - 1), 2 * n * (n - 1) + (n - 1) ** 2)  # across rows, diagonals
        pairs[across] = pairs[across, ::-1]
    points = np.zeros((n * n, dim))
    points[:, 0] = np.tile(np.arange(n), n) * 0.1
    if dim > 1:
        points[:, 1] = np.repeat(np.arange(n), n) * 0.1
    if dim == 1:  # distinct positions along the line for the rows' particles
        points[:, 0] += np.repeat(np.arange(n), n) * 0.01
    mask = np.zeros(n * n, dtype=bool)
    mask[list(pinned)] = True
    gravity = np.zeros(dim)
    gravity[-1] = -9.81
    return model_from_arrays(dim, points, 1e-3, pairs, stiffness, rest_length=rest,
                             damping=damping, pinned=mask, gravity=gravity, spring_energy=energy)


def moved_state(model, rng, scale=0.02):
    x = model.x0 + scale * rng.normal(size=model.x0.shape)
    v = rng.normal(size=model.x0.shape)
    return x, v


def gather_kernels(model) -> SpringGather:
    gather = SpringGather(model)
    gather.runs = None  # the adjacency gather kernels on the same model
    return gather


def test_a_grid_is_three_n_minus_one_runs_covering_every_spring_once():
    """n runs along the rows (each row's n − 1 springs), one run across the rows (first ends
    0 … n(n−1) − 1 at offset n), and n − 1 runs per diagonal direction (one per row pair)."""
    model = grid()
    runs, order = spring_runs.find_runs(model.spring_indices)
    assert runs.shape == (3 * N - 1, 4)
    assert sorted(runs[:, 1].tolist()) == sorted([N - 1] * (3 * N - 2) + [N * (N - 1)])
    assert np.array_equal(np.sort(order), np.arange(model.n_springs))
    pairs = model.spring_indices[order]
    for s0, length, i0, offset in runs:
        m = np.arange(length)
        assert np.array_equal(pairs[s0 + m, 0], i0 + m)
        assert np.array_equal(pairs[s0 + m, 1], i0 + m + offset)
    assert runs[:, 1].sum() == model.n_springs


def test_runs_are_taken_for_a_large_grid_only():
    model = grid()
    assert model.n_springs >= PARALLEL_MIN_SPRINGS
    assert SpringGather(model).runs is not None
    small = grid(n=12)  # 506 springs: the serial gather kernels
    assert SpringGather(small).runs is None
    rng = np.random.default_rng(1)  # a random numbering: runs of about one spring
    shuffled = renumbered(model, rng.permutation(model.n_particles))
    runs, _ = spring_runs.find_runs(shuffled.spring_indices)
    assert runs[:, 1].mean() < spring_runs.MIN_MEAN_LENGTH
    assert SpringGather(shuffled).runs is None


CASES = {
    "undamped": {},
    "damped": {"damping": 0.05},
    "per-spring parameters": "random",
    "zero rest lengths": "zero_rest",
    "squared form": {"energy": "squared_length"},
    "negative offsets": {"reversed_ends": True, "damping": 0.05},
}


def _model(case, dim, rng):
    spec = CASES[case]
    if spec == "random":
        s = grid(dim).n_springs
        return grid(dim, stiffness=rng.uniform(50, 150, s), damping=rng.uniform(0, 0.1, s),
                    rest=rng.uniform(0.05, 0.15, s))
    if spec == "zero_rest":
        s = grid(dim).n_springs
        rest = np.full(s, 0.1)
        rest[::7] = 0.0
        return grid(dim, rest=rest, damping=0.02)
    return grid(dim, **spec)


@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("case", list(CASES))
def test_run_kernels_equal_the_gather_kernels(case, dim, rng):
    """Forces, accelerations and the symplectic Euler update: to round-off (another summation
    order), for every form, parameter layout and dimension; pinned particles exactly."""
    model = _model(case, dim, rng)
    runs, gather = SpringGather(model), gather_kernels(model)
    assert runs.runs is not None
    x, v = moved_state(model, rng)
    forces = gather.forces(x, v)
    scale = 1e-12 * (1.0 + np.abs(forces).max())
    np.testing.assert_allclose(runs.forces(x, v), forces, rtol=0, atol=scale)
    accelerations = gather.accelerations(x, v)
    mine = runs.accelerations(x, v)
    np.testing.assert_allclose(mine, accelerations, rtol=0,
                               atol=1e-12 * (1.0 + np.abs(accelerations).max()))
    assert np.all(mine[0] == 0.0)
    h = 1e-4
    (x1, v1), (x2, v2) = runs.symplectic_euler(x, v, h), gather.symplectic_euler(x, v, h)
    assert x1.shape == x.shape and v1.shape == v.shape
    np.testing.assert_allclose(v1, v2, rtol=0, atol=h * 1e-12 * (1.0 + np.abs(accelerations).max()))
    np.testing.assert_allclose(x1, x2, rtol=0, atol=1e-15 * (1.0 + np.abs(x).max()))
    assert np.array_equal(x1[0], x[0]) and np.array_equal(v1[0], v[0])


def test_a_collapsed_spring_takes_the_general_loop(rng):
    """Two particles at one point (a spring of zero length): the direction is undefined and the
    spring exerts no force (as the generic path), where the branch-free loop would give 0/0."""
    model = grid(damping=0.05)
    x, v = moved_state(model, rng)
    x[1] = x[0]  # spring (0, 1) collapses
    mine, theirs = SpringGather(model).forces(x, v), gather_kernels(model).forces(x, v)
    assert np.all(np.isfinite(mine))
    np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-12 * (1 + np.abs(theirs).max()))
    generic = System(model).generic_force(x, v)
    np.testing.assert_allclose(mine, generic, rtol=0, atol=1e-12 * (1 + np.abs(generic).max()))


@pytest.mark.parametrize("case", ["undamped", "damped"])
def test_bit_identical_for_one_and_two_threads(case, rng):
    """Each particle's force is summed in run order whatever the chunks."""
    model = _model(case, 3, rng)
    x, v = moved_state(model, rng)
    results = []
    threads = numba.get_num_threads()
    try:
        for count in (1, 2):
            numba.set_num_threads(min(count, numba.config.NUMBA_NUM_THREADS))
            gather = SpringGather(model)
            out_x, out_v = np.empty_like(x), np.empty_like(v)
            gather.runs.run(count > 1, x, v, gather.inverse_mass, gather.gravity, 1e-4, out_x,
                            out_v)
            results.append((out_x, out_v, gather.accelerations(x, v)))
    finally:
        numba.set_num_threads(threads)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("case", ["damped", "negative offsets"])
def test_bit_identical_for_any_chunks(case, rng):
    """Chunks of any sizes (one particle, fewer particles than a run's offset, so that a run's
    first and second ends in a chunk are two separate ranges of springs) give the serial
    kernel's bits: each particle takes its runs' contributions in one order whatever the
    chunks and blocks."""
    model = _model(case, 3, rng)
    gather = SpringGather(model)
    runs = gather.runs
    assert np.any(runs.runs[:, 3] < 0) == (case == "negative offsets")
    x, v = moved_state(model, rng)
    n = model.n_particles
    serial = np.empty_like(x), np.empty_like(v)
    runs.run(False, x, v, gather.inverse_mass, gather.gravity, 1e-4, *serial)
    for bounds in ([0, 1, 2, 17, 18, 57, 300, 301, 1000, n - 1, n],
                   np.linspace(0, n, 11).astype(np.int64)):
        chunked = np.empty_like(x), np.empty_like(v)
        spring_runs._parallel(np.asarray(bounds, dtype=np.int64), runs.runs, x, v, runs._rows,
                              runs._velocity_rows, runs.springs, runs._forces,
                              gather.inverse_mass, gather.gravity, 1e-4, *chunked)
        for a, b in zip(serial, chunked):
            np.testing.assert_array_equal(a, b)
