"""The fused force kernels (:mod:`hooke.kernels`) against the generic term-by-term path, and
their determinism across thread counts, particle renumbering, and the on-disk compile cache."""

from __future__ import annotations

import subprocess
import sys

import numba
import numpy as np
import pytest

import hooke
from hooke import kernels
from hooke.array_models import renumbered
from hooke.integrators import get as get_integrator
from hooke.kernels import SpringGather
from hooke.system import System

from conftest import random_network


def _scale(f):
    return 1e-12 * (1.0 + np.max(np.abs(f)))


def _shuffled(model, seed=0):
    """(``model`` with its particles renumbered and its springs in random order, the rank)."""
    rng = np.random.default_rng(seed)
    rank = rng.permutation(model.n_particles)
    return renumbered(model, rank, rng.permutation(model.n_springs)), rank


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


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_renumbered_kernels_equal_generic_path(rng, dim):
    """Forced inner renumbering: forces, accelerations and the fused step come back in the
    model's own numbering and equal the generic path to round-off (pinned particles too)."""
    model = random_network(rng, dim, n=15, n_springs=40, damping=1.0,
                           gravity=rng.normal(size=dim), velocities=1.0, pinned=(2, 9))
    system = System(model)
    gather = SpringGather(model, renumber=True)
    assert sorted(gather.permutation) == list(range(model.n_particles))
    x = model.x0 + 0.1 * rng.normal(size=model.x0.shape)
    v = rng.normal(size=x.shape)
    generic = system.generic_force(x, v)
    np.testing.assert_allclose(gather.forces(x, v), generic, rtol=0, atol=_scale(generic))
    expected = generic * system.inverse_mass
    np.testing.assert_allclose(gather.accelerations(x, v), expected, rtol=0,
                               atol=_scale(expected))
    h = 1e-3
    x_new, v_new = gather.symplectic_euler(x, v, h)
    v_ref = v + h * expected
    x_ref = np.where(model.pinned[:, None], x, x + h * v_ref)
    v_ref[model.pinned] = v[model.pinned]
    np.testing.assert_allclose(v_new, v_ref, rtol=0, atol=_scale(v_ref))
    np.testing.assert_allclose(x_new, x_ref, rtol=0, atol=_scale(x_ref))


def test_renumbering_is_chosen_for_a_large_shuffled_cloth_only():
    """The metric: the natural grid order is kept (its mean spring span, ~0.75 n, is below
    LOCAL_SPAN); a randomly renumbered cloth gets an inner reverse Cuthill–McKee order once it
    no longer fits in cache, and keeps its order below that."""
    natural = hooke.scene("cloth", n=300).model
    assert natural.n_particles > kernels.IN_CACHE_PARTICLES
    assert System(natural).gather.permutation is None
    shuffled, rank = _shuffled(natural)
    gather = System(shuffled).gather
    assert gather.span > kernels.LOCAL_SPAN
    assert gather.permutation is not None
    assert gather.inner_span * kernels.RENUMBER_GAIN <= gather.span
    assert gather.inner_span < 2 * 300
    small = System(_shuffled(hooke.scene("cloth", n=120).model)[0]).gather
    assert small.span > kernels.LOCAL_SPAN and small.permutation is None


def test_banded_orders_skip_the_reverse_cuthill_mckee_trial():
    """A large model numbered in bands (span well under n / BANDED_FRACTION, as a lattice
    numbered layer by layer) is kept without computing RCM; a scattered one is tried."""
    n = 10 * kernels.IN_CACHE_PARTICLES
    assert not kernels.renumbering_worth_trying(n / (2 * kernels.BANDED_FRACTION), n)
    assert not kernels.renumbering_worth_trying(kernels.LOCAL_SPAN, n)
    assert kernels.renumbering_worth_trying(n / 3, n)
    assert not kernels.renumbering_worth_trying(n / 3, kernels.IN_CACHE_PARTICLES)


def test_shuffled_cloth_steps_like_the_natural_one():
    """Stepping the shuffled cloth (renumbered inside) gives the natural cloth's trajectory in
    the shuffled numbering, to round-off: users see their own particle indices."""
    scene = hooke.scene("cloth", n=300)
    shuffled, rank = _shuffled(scene.model)
    v0 = np.random.default_rng(5).normal(size=scene.model.x0.shape)  # springs at work
    v0[scene.model.pinned] = 0.0
    v0_shuffled = np.empty_like(v0)
    v0_shuffled[rank] = v0
    states = []
    for model, v in ((scene.model, v0), (shuffled, v0_shuffled)):
        system = System(model)
        stepper = get_integrator("symplectic_euler")(system, scene.dt)
        state = model.initial_state().replace(v=v)
        for _ in range(20):
            state = stepper.step(state)
        states.append(state)
    assert system.gather.permutation is not None
    natural, mixed = states
    np.testing.assert_allclose(mixed.x[rank], natural.x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(mixed.v[rank], natural.v, rtol=0,
                               atol=1e-11 * np.abs(natural.v).max())
    np.testing.assert_array_equal(mixed.x[rank][scene.model.pinned],
                                  scene.model.x0[scene.model.pinned])


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


def test_a_collapsed_spring_among_positive_rest_lengths_matches_the_generic_path():
    """Every rest length positive: pass 1's branch-free loop; one spring of zero length (its
    ends coincide, moving apart) has no direction, so the general loop redoes the pass: no
    force and no damping from it, finite, as the generic path."""
    b = hooke.ModelBuilder(dim=3)
    a = b.add_particle((0.0, 0.0, 0.0), mass=1.0)
    c = b.add_particle((0.5, 0.0, 0.0), mass=2.0, velocity=(1.0, 0.0, 0.0))
    d = b.add_particle((1.0, 1.0, 0.0), mass=1.0)
    b.add_spring(a, c, stiffness=10.0, rest_length=0.5, damping=0.3)
    b.add_spring(a, d, stiffness=20.0, rest_length=0.7, damping=0.3)
    model = b.finalize()
    system = System(model)
    assert system.gather.springs[5] == kernels.POSITIVE_REST
    x = model.x0.copy()
    x[c] = x[a]  # the first spring collapsed
    force = system.force(x, model.v0)
    assert np.all(np.isfinite(force))
    np.testing.assert_allclose(force, system.generic_force(x, model.v0), atol=1e-14)
    np.testing.assert_allclose(force[c], model.mass[c] * model.gravity, atol=1e-14)


@pytest.mark.parametrize("damped", [False, True])
def test_the_branch_free_loop_gives_the_general_loops_bits(damped):
    """For springs of positive length, pass 1's fast loop (POSITIVE_REST) and its general loop
    (LENGTH) compute ψ by the same operations: the same bits, per-spring stiffness and damping
    included."""
    scene = hooke.scene("cloth", n=12)
    gather = SpringGather(scene.model)
    first, second, rest, _, _, form, slot_first, slot_second = gather.springs
    assert form == kernels.POSITIVE_REST
    rng = np.random.default_rng(5)
    count = first.size
    stiffness = rng.uniform(50.0, 150.0, count)
    damping = rng.uniform(0.1, 1.0, count) if damped else np.zeros(1)
    x = gather._three(scene.model.x0 + 1e-3 * rng.normal(size=scene.model.x0.shape))
    v = rng.normal(size=x.shape)
    results = []
    for code in (kernels.POSITIVE_REST, kernels.LENGTH):
        factor = np.full(2 * count, np.nan)
        kernels._spring_factors_range(0, count, x, v, first, second, rest, stiffness, damping,
                                      code, slot_first, slot_second, factor)
        results.append(factor)
    assert np.all(np.isfinite(results[0]))
    np.testing.assert_array_equal(results[0], results[1])


def test_spring_forms():
    assert kernels.spring_form("squared_length", np.ones(3)) == kernels.SQUARED
    assert kernels.spring_form("length", np.array([1.0, 0.0])) == kernels.LENGTH
    assert kernels.spring_form("length", np.array([1.0, 2.0])) == kernels.POSITIVE_REST


def test_other_terms_select_the_generic_path():
    scene = hooke.scene("square_drop")  # contact: a barrier term
    assert System(scene.model).gather is None
    system = System(hooke.scene("cloth2d").model)
    assert system.gather is not None
    system.terms.append(system.terms[0])  # any extra term (the viewer adds a cursor spring)
    assert system.gather is None


@pytest.mark.parametrize("renumber", [False, True])
def test_bit_identical_for_one_and_two_threads(renumber):
    """Natural order, and a shuffled cloth in its inner renumbering (the particle chunks of the
    scatter into the inner copies and of pass 2's output rows differ with the thread count)."""
    scene = hooke.scene("cloth", n=80)  # 25k springs: above the parallel threshold
    model = _shuffled(scene.model)[0] if renumber else scene.model
    assert model.n_springs >= kernels.PARALLEL_MIN_SPRINGS
    gather = SpringGather(model, renumber=renumber)
    assert (gather.permutation is not None) == renumber
    rng = np.random.default_rng(3)
    x = model.x0 + 1e-3 * rng.normal(size=model.x0.shape)
    v = rng.normal(size=x.shape)
    before = numba.get_num_threads()
    try:
        results = {}
        for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(threads)
            assert all(len(b) == threads + 1 for b in gather.bounds())
            results[threads] = (gather.accelerations(x, v),
                                *gather.symplectic_euler(x, v, scene.dt))
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


CACHE_PROBE = """
import numpy as np
import hooke
from hooke import kernels
scene = hooke.scene("cloth", n=10)
hooke.System(scene.model).gather.symplectic_euler(scene.model.x0, np.zeros_like(scene.model.x0),
                                                  scene.dt)
stats = kernels._symplectic_euler_serial.stats
print(sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))
"""


def test_compiled_kernels_are_cached_across_processes():
    """``cache=True``: the second process loads the fused step from Numba's on-disk cache
    instead of compiling it (what makes a second run start fast)."""
    counts = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", CACHE_PROBE], capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        counts.append(tuple(int(c) for c in done.stdout.split()))
    hits, misses = counts[1]
    assert (hits, misses) == (1, 0), counts
