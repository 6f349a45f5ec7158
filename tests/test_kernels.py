"""The fused force kernels (:mod:`hooke.kernels`) against the generic term-by-term path, and
their determinism across thread counts."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import hooke
from hooke import kernels
from hooke.system import System

from conftest import random_network


def _scale(f):
    return 1e-12 * (1.0 + np.max(np.abs(f)))


@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("spring_energy", ["hookean", "squared_length"])
def test_fused_force_equals_gradient_plus_damping(rng, dim, spring_energy):
    model = random_network(rng, dim, n=9, n_springs=20, spring_energy=spring_energy,
                           zero_rest=2 if spring_energy == "hookean" else 0, damping=1.0,
                           gravity=rng.normal(size=dim), velocities=1.0, pinned=(3,))
    system = System(model)
    assert system.gather is not None
    x = model.x0 + 0.1 * rng.normal(size=model.x0.shape)
    v = rng.normal(size=x.shape)
    generic = system.generic_force(x, v)
    np.testing.assert_allclose(system.force(x, v), generic, rtol=0, atol=_scale(generic))
    accel = system.acceleration(x, v)
    expected = generic * system.inverse_mass
    np.testing.assert_allclose(accel, expected, rtol=0, atol=_scale(expected))
    assert np.all(accel[3] == 0.0)


def test_fused_symplectic_euler_equals_generic_update(rng):
    model = random_network(rng, 3, n=12, n_springs=30, damping=1.0, gravity=(0, -9.81, 0),
                           velocities=1.0, pinned=(0,))
    system = System(model)
    state = model.initial_state()
    h = 1e-3
    x, v = system.gather.symplectic_euler(state.x, state.v, h)
    v_ref = state.v + h * (system.generic_force(state.x, state.v) * system.inverse_mass)
    x_ref = state.x + h * v_ref
    np.testing.assert_allclose(v, v_ref, rtol=0, atol=1e-12 * (1 + np.abs(v_ref).max()))
    np.testing.assert_allclose(x, x_ref, rtol=0, atol=1e-12 * (1 + np.abs(x_ref).max()))
    np.testing.assert_array_equal(x[0], state.x[0])


def test_degenerate_springs_match_generic_path():
    """A zero-length Hookean spring with l0 > 0 has no direction (no force, no damping), a
    zero-rest-length one pulls like k·d: the fused path does the same as the generic one."""
    b = hooke.ModelBuilder(dim=2)
    a = b.add_particle((0.0, 0.0), mass=1.0)
    c = b.add_particle((0.0, 0.0), mass=2.0, velocity=(1.0, 0.0))
    d = b.add_particle((1.0, 1.0), mass=1.0)
    b.add_spring(a, c, stiffness=10.0, rest_length=0.5)
    b.add_spring(a, d, stiffness=10.0, rest_length=0.0)
    model = b.finalize()
    system = System(model)
    x, v = model.x0, model.v0
    np.testing.assert_allclose(system.force(x, v), system.generic_force(x, v), atol=1e-14)


def test_other_terms_select_the_generic_path():
    scene = hooke.scene("square_drop")  # contact: a barrier term
    assert System(scene.model).gather is None
    system = System(hooke.scene("cloth2d").model)
    assert system.gather is not None
    system.terms.append(system.terms[0])  # any extra term (the viewer adds a cursor spring)
    assert system.gather is None


def test_bit_identical_for_one_and_two_threads():
    scene = hooke.scene("cloth", n=80)  # 25k springs: above the parallel threshold
    model = scene.model
    assert model.n_springs >= kernels.PARALLEL_MIN_SPRINGS
    system = System(model)
    rng = np.random.default_rng(3)
    x = model.x0 + 1e-3 * rng.normal(size=model.x0.shape)
    v = rng.normal(size=x.shape)
    before = numba.get_num_threads()
    try:
        results = {}
        for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(threads)
            assert all(len(b) == threads + 1 for b in system.gather.bounds())
            results[threads] = (system.acceleration(x, v),
                                *system.gather.symplectic_euler(x, v, scene.dt))
    finally:
        numba.set_num_threads(before)
    first = results[1]
    for other in results.values():
        for a, b in zip(first, other):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("spring_energy", ["hookean", "squared_length"])
@pytest.mark.parametrize("project_psd", [False, True])
def test_in_place_csr_matrix_equals_triplet_assembly(rng, dim, spring_energy, project_psd):
    """System.combined_matrix writes the spring and damping blocks into the CSR data directly;
    it equals the term-by-term triplet + bincount assembly on the same pattern."""
    model = random_network(rng, dim, n=9, n_springs=20, spring_energy=spring_energy,
                           rest_scale=(0.5, 1.5), damping=1.0, gravity=rng.normal(size=dim),
                           pinned=(0, 4))
    system = System(model)
    x = model.x0 + 0.2 * rng.normal(size=model.x0.shape)
    fast = system.combined_matrix(x, 1.3, 0.01, 0.1, project_psd=project_psd)
    generic = system.generic_combined_matrix(x, 1.3, 0.01, 0.1, project_psd=project_psd)
    assert fast.shape == generic.shape == (7 * dim, 7 * dim)
    np.testing.assert_array_equal(fast.indices, generic.indices)
    np.testing.assert_allclose(fast.toarray(), generic.toarray(), rtol=0,
                               atol=1e-12 * np.abs(generic.toarray()).max())
