"""fast_mass_spring and xpbd against implicit Euler; their colouring and refusals; the solver
back-ends of :mod:`hooke.linalg` (factorize, AMG, auto)."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import scipy.sparse as sp

import hooke
from hooke import linalg
from hooke.integrators import get as get_integrator, xpbd
from hooke.system import System
from hooke.integrators.fast_mass_spring import laplacian
from hooke.motion import Sinusoid


def _final(scene, integrator, t_end, **options):
    return hooke.simulate(scene, integrator=integrator, dt=scene.dt, t_end=t_end, **options).x[-1]


@pytest.mark.parametrize("damping", [0.0, 10.0])
def test_fast_mass_spring_converges_to_implicit_euler(damping):
    """From 4 iterations: fewer may leave more than a tenth of a step undone on this cloth (1
    leaves up to 38 % at an edge particle, see the bound below) and are refused."""
    scene = hooke.scene("cloth2d", nx=10, ny=8, damping=damping)
    reference = _final(scene, "implicit_euler", 0.02, tol=1e-12)
    errors = [np.max(np.abs(_final(scene, "fast_mass_spring", 0.02, iterations=k) - reference))
              for k in (4, 8, 16, 64, 256)]
    assert all(b < a for a, b in zip(errors[:3], errors[1:4]))  # monotone until round-off
    assert errors[0] > 1e-6 and errors[-1] < 1e-12


def test_fast_mass_spring_zero_rest_length_is_exact_in_one_iteration():
    scene = hooke.scene("spring1d")
    one = _final(scene, "fast_mass_spring", 1.0, iterations=1)
    exact = _final(scene, "implicit_euler_linear", 1.0)
    np.testing.assert_allclose(one, exact, rtol=0, atol=1e-13)


def test_fast_mass_spring_follows_moving_pins():
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    top = b.add_particle((0.0, 0.0), pinned=True,
                         motion=Sinusoid(0.2, (1.0, 0.0), 5.0))
    bob = b.add_particle((0.0, -1.0), mass=0.5)
    # Undamped: implicit_euler lags its damping on the free DOFs only (a moving pin's velocity
    # does not enter it), fast_mass_spring damps the relative velocity.
    b.add_spring(top, bob, stiffness=200.0, damping=0.0)
    scene = hooke.Scene(b.finalize(), dt=0.002, t_end=0.4)
    reference = _final(scene, "implicit_euler", 0.4, tol=1e-12)
    result = _final(scene, "fast_mass_spring", 0.4, iterations=100)
    np.testing.assert_allclose(result, reference, rtol=0, atol=1e-10)


PENDULUM_DT, PENDULUM_K = 0.01, 1e4  # h²k = 1 kg: a bob of m kg has m / (h²k) = m


def stiff_pendulum(mass: float) -> hooke.Scene:
    """A bob on a stiff spring at its rest length 1 m, level with its pin, falling under gravity:
    the slowest direction of the local/global iteration is the swing, whose share of each step
    the iteration leaves undone is (1 + m/(h²k))^-iterations (about: the spring stretches)."""
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    b.add_particle((0.0, 0.0), pinned=True)
    b.add_particle((1.0, 0.0), mass=mass)
    b.add_spring(0, 1, stiffness=PENDULUM_K, rest_length=1.0)
    return hooke.Scene(b.finalize(), dt=PENDULUM_DT, t_end=0.3)


def swing(scene, integrator, **options) -> float:
    x = _final(scene, integrator, 0.3, **options)
    return float(np.arctan2(x[1, 1], x[1, 0]))


@pytest.mark.parametrize("ratio", [0.3, 1.0])
def test_fast_mass_spring_lags_implicit_euler_by_its_contraction(ratio):
    """The closed form the bound below rests on: the swing after 0.3 s is short of implicit
    Euler's by ρ^10, ρ = h²k/(m + h²k) = 1/(1 + m/(h²k)) (0.073 at m/(h²k) = 0.3, 9.8e-4 at 1):
    the spring, along the bob's path's normal, does not hold the swing at all."""
    scene = stiff_pendulum(ratio)
    reference = swing(scene, "implicit_euler", tol=1e-10)
    shortfall = abs(swing(scene, "fast_mass_spring") - reference) / abs(reference)
    assert shortfall == pytest.approx((1.0 + ratio) ** -10, rel=0.1)


def test_fast_mass_spring_refuses_a_bob_its_iterations_cannot_move():
    """Issue 15: a bob of m = 1e-3 h²k (far above the round-off bound 1000·ε·h²k = 2.2e-13 kg)
    swung 0.0045 rad where implicit Euler swings 0.45 rad in 0.3 s: the 10 iterations left
    (1 + 1e-3)^-10 = 99 % of each step undone. It is refused, with the iterations and the dt
    that would move it, which do."""
    need = int(np.ceil(np.log(10.0) / np.log1p(1e-3)))
    dt_max = np.sqrt(1e-3 / (PENDULUM_K * (10.0 ** 0.1 - 1.0)))
    with pytest.raises(hooke.HookeInputError) as info:
        hooke.simulate(stiff_pendulum(1e-3), integrator="fast_mass_spring", iterations=10)
    assert str(info.value) == (
        "particles[1].mass: is too light for fast_mass_spring's 10 local/global iterations at "
        "dt = 0.01 s: in its slowest direction they leave ρ^10 = 0.99 of each step's motion "
        f"undone (ρ = {1 / 1.001:.6g}, the share of m + h²Σk + hΣc its springs do not hold "
        f"there), more than 0.1; take iterations >= {need}, dt <= {dt_max:.3g} s, or "
        "implicit_euler, got 0.001")
    reference = swing(stiff_pendulum(1e-3), "implicit_euler", tol=1e-10)
    swung = swing(stiff_pendulum(1e-3), "fast_mass_spring", iterations=need)
    assert abs(swung / reference - 1) < 0.1
    with pytest.raises(hooke.HookeInputError, match=r"fast_mass_spring's 100 local/global "
                       rf"iterations .*take iterations >= {need}, "):
        hooke.simulate(stiff_pendulum(1e-3), integrator="fast_mass_spring")  # more than it takes


def test_by_default_fast_mass_spring_takes_the_passes_the_model_needs():
    """Without ``iterations`` a run takes 10 passes, or the fewest with ρ^n ≤ 0.1 where that is
    more: a bob of m/(h²k) = 0.1 needs n = ⌈ln 10 / ln 1.1⌉ = 25 and then swings within 10 %
    of implicit Euler, where 10 passes would leave (1.1)^-10 = 39 % of each step undone."""
    scene = stiff_pendulum(0.1)
    integrator = get_integrator("fast_mass_spring")(System(scene.model), scene.dt)
    assert integrator.iterations == int(np.ceil(np.log(10.0) / np.log(1.1))) == 25
    reference = swing(scene, "implicit_euler", tol=1e-10)
    assert abs(swing(scene, "fast_mass_spring") / reference - 1) < 0.1
    easy = hooke.scene("cloth2d")
    assert get_integrator("fast_mass_spring")(System(easy.model), easy.dt).iterations == 10


def test_the_fast_mass_spring_bound_is_sharp():
    """ρ^10 = (1 + q)^-10 = 0.1 at q = m/(h²k) = 10^0.1 − 1 = 0.2589: a bob just below is
    refused, just above swings within 10 % of implicit Euler; where more than 10,000 iterations
    would be needed the message offers only a dt."""
    bound = 10.0 ** 0.1 - 1.0
    with pytest.raises(hooke.HookeInputError, match=r"^particles\[1\]\.mass: is too light"):
        hooke.simulate(stiff_pendulum(0.99 * bound), integrator="fast_mass_spring", iterations=10)
    scene = stiff_pendulum(1.01 * bound)
    shortfall = abs(swing(scene, "fast_mass_spring", iterations=10)
                    / swing(scene, "implicit_euler", tol=1e-10) - 1)
    assert shortfall < 0.1
    with pytest.raises(hooke.HookeInputError) as info:
        hooke.simulate(stiff_pendulum(1e-8), integrator="fast_mass_spring", iterations=10)
    assert "; take dt <= " in str(info.value) and "iterations >=" not in str(info.value)


def test_zero_rest_lengths_and_drag_count_as_they_act_on_the_iteration():
    """A zero-rest-length spring is solved in one iteration (spring1d: m/(h²k) = 0.5/1.25e-4
    is fine anyway, so take k = 4e6: m/(h²k) = 5e-3) and is not counted; air drag's h·c is in
    the matrix exactly, so it counts with the mass."""
    stiff = hooke.scene("spring1d", stiffness=4e6)
    one = _final(stiff, "fast_mass_spring", 0.05, iterations=1)
    np.testing.assert_allclose(one, _final(stiff, "implicit_euler_linear", 0.05), rtol=0, atol=1e-13)
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    b.add_particle((0.0, 0.0), pinned=True)
    b.add_particle((1.0, 0.0), mass=0.1)
    b.add_spring(0, 1, stiffness=PENDULUM_K, rest_length=1.0)
    b.set_air(drag=20.0)  # m + h·c = 0.3 kg: (1 + 0.3)^-10 = 0.073
    hooke.simulate(hooke.Scene(b.finalize(), dt=PENDULUM_DT, t_end=0.02),
                   integrator="fast_mass_spring")


@pytest.mark.parametrize("damping", [0.0, 10.0])
def test_xpbd_approaches_implicit_euler_with_iterations(damping):
    """XPBD's iteration drops the geometric-stiffness term (Macklin et al. 2016, eq. 11), so its
    fixed point matches implicit Euler only to O(h²·change of ∇C); it gets there in a few
    iterations and stays."""
    scene = hooke.scene("cloth2d", nx=10, ny=8, damping=damping)
    reference = _final(scene, "implicit_euler", 0.005, tol=1e-12)
    errors = [np.max(np.abs(_final(scene, "xpbd", 0.005, iterations=k) - reference))
              for k in (1, 10, 100)]
    assert errors[1] < 0.05 * errors[0] and errors[2] < 1e-7


def test_xpbd_substeps_converge_to_the_exact_solution():
    scene = hooke.scene("spring1d")
    errors = []
    for substeps in (1, 4, 16):
        result = hooke.simulate(scene, integrator="xpbd", dt=0.01, t_end=1.0, substeps=substeps)
        errors.append(np.max(np.abs(result.x - result.analytic())))
    assert errors[0] / errors[1] == pytest.approx(4.0, rel=0.1)
    assert errors[1] / errors[2] == pytest.approx(4.0, rel=0.1)


def test_colouring_separates_springs_sharing_a_particle():
    model = hooke.scene("lattice", nx=4, ny=5, nz=3).model
    colour = xpbd.greedy_colouring(model.spring_indices, model.n_particles)
    assert colour.max() < xpbd.MAX_COLOURS
    for c in np.unique(colour):
        ends = model.spring_indices[colour == c].ravel()
        assert np.unique(ends).size == ends.size


def test_xpbd_parallel_sweeps_are_identical_for_one_and_two_threads(monkeypatch):
    monkeypatch.setattr(xpbd, "PARALLEL_MIN_SPRINGS", 100)
    scene = hooke.scene("cloth", n=20)
    before = numba.get_num_threads()
    results = []
    try:
        for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(threads)
            results.append(_final(scene, "xpbd", 5 * scene.dt))
    finally:
        numba.set_num_threads(before)
    for other in results[1:]:
        np.testing.assert_array_equal(results[0], other)


def test_fast_mass_spring_refuses_the_squared_length_energy():
    b = hooke.ModelBuilder(dim=2, spring_energy="squared_length")
    b.add_particle((0.0, 0.0), pinned=True)
    b.add_particle((1.0, 0.0))
    b.add_spring(0, 1, stiffness=10.0)
    with pytest.raises(hooke.HookeInputError, match="spring_energy"):
        hooke.simulate(hooke.Scene(b.finalize()), integrator="fast_mass_spring", t_end=0.01)


@pytest.mark.parametrize("n", [12, 40])  # dense (≤ 200 unknowns) and sparse factorisations
def test_factorize_solves_several_right_hand_sides(n):
    model = hooke.scene("cloth", n=n).model
    matrix = (sp.diags(model.mass) + 1e-4 * laplacian(model.spring_indices,
                                                      model.spring_stiffness, n * n)).tocsr()
    rhs = np.random.default_rng(0).normal(size=(n * n, 3))
    y = linalg.factorize(matrix)(rhs)
    np.testing.assert_allclose(matrix @ y, rhs, rtol=0, atol=1e-10 * np.abs(rhs).max())


def test_amg_and_auto_solvers_match_the_direct_solve():
    scene = hooke.scene("lattice", nx=8, ny=8, nz=8)
    system = hooke.System(scene.model)
    matrix = system.combined_matrix(scene.model.x0, 1.0, scene.dt ** 2, scene.dt)
    rhs = np.random.default_rng(1).normal(size=matrix.shape[0])
    direct = linalg.SparseSolver("direct").solve(matrix, rhs)
    for method in ("amg", "auto"):
        solver = linalg.SparseSolver(method)
        np.testing.assert_allclose(solver.solve(matrix, rhs), direct, rtol=0,
                                   atol=1e-8 * np.abs(direct).max())
    assert solver.method == "direct"  # auto: far below AMG_MIN_DOFS
    result = hooke.simulate(scene, integrator="implicit_euler_linear", t_end=3 * scene.dt,
                            solver="amg")
    reference = hooke.simulate(scene, integrator="implicit_euler_linear", t_end=3 * scene.dt)
    np.testing.assert_allclose(result.x, reference.x, rtol=0, atol=1e-9)
