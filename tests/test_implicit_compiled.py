"""The compiled Newton solve of ``implicit_euler`` (hooke.integrators.implicit_compiled) against
the generic one.

Both paths minimise the same incremental potential with the same Newton, CCD and line-search
rules; spring, barrier and friction terms are the same compiled code and the Hessian is summed in
the same order, so they differ only in the linear solve's round-off and in the order of a few
sums. Stepped side by side, every step takes the same Newton iterations and halvings, and the
potentials after each iteration, positions and velocities agree to 1e-12 relative to their
largest values in the run (measured: ≤ 4e-13, ≤ 3e-14, ≤ 4e-13).
"""

from __future__ import annotations

import numpy as np
import pytest

import hooke
from hooke import dense
from hooke.energies import barrier
from hooke.errors import SimulationError
from hooke.integrators import get as get_integrator
from hooke.integrators import implicit, implicit_compiled
from hooke.integrators.base import StepFailed
from hooke.motion import ConstantVelocity
from hooke.system import System

from conftest import relative_difference


def damped_net() -> hooke.Scene:
    """A damped 2D 4 × 3 net of Hookean springs standing on a frictional ground, its top row
    pinned and dragged sideways and down for 1 s towards a wall that moves in from the right:
    moving pins, spring damping (over all DOFs, since pins move), friction and a moving plane."""
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    drag = ConstantVelocity((0.3, -0.1), duration=1.0)
    ids = {(i, j): b.add_particle((0.2 * i, 0.2 * j), mass=0.1,
                                  motion=drag if j == 2 else None)
           for i in range(4) for j in range(3)}
    for (i, j), p in ids.items():
        for di, dj in ((1, 0), (0, 1), (1, 1), (1, -1)):
            q = ids.get((i + di, j + dj))
            if q is not None:
                b.add_spring(p, q, stiffness=500.0, damping=2.0)
    b.add_plane((0.0, 1.0), (0.0, -0.005), friction=0.3)
    b.add_plane((-1.0, 0.0), (1.0, 0.0), motion=ConstantVelocity((-0.15, 0.0), duration=2.0))
    b.set_contact(dhat=0.01, kappa=1e4, area=0.2)
    return hooke.Scene(b.finalize(), integrator="implicit_euler", dt=0.01, t_end=3.0)


CASES = {  # scene, steps, integrator options
    "square_drop": (hooke.scene("square_drop"), 300, {}),
    "square_slope": (hooke.scene("square_slope"), 300, {}),
    "square_compress": (hooke.scene("square_compress"), 300, {}),
    "square_press": (hooke.scene("square_press"), 200, {}),
    # 3D, Hookean springs, friction; the scene file's CG replaced by the direct solve
    "cloth_drop 6 × 6": (hooke.scene("cloth_drop", nx=6, nz=6), 60, {"solver": "direct"}),
    # 3D with spring damping and friction
    "soft3d_drop 3³": (hooke.scene("soft3d_drop", nx=3, ny=3, nz=3), 60, {}),
    "damped net": (damped_net(), 300, {}),
}


def stepper(scene, compiled, monkeypatch, **options):
    monkeypatch.setattr(implicit, "COMPILED", compiled)
    options = {**scene.options, **options}
    return get_integrator("implicit_euler")(System(scene.model), scene.dt, **options)


@pytest.mark.parametrize("case", CASES)
def test_compiled_newton_agrees_with_the_generic_one_step_by_step(case, monkeypatch):
    scene, steps, options = CASES[case]
    generic = stepper(scene, False, monkeypatch, **options)
    compiled = stepper(scene, True, monkeypatch, **options)
    assert compiled.compiled and not generic.compiled
    a = b = scene.state
    x, y, u, w, gaps, energies = [], [], [], [], [], []
    for _ in range(steps):
        a, b = generic.step(a), compiled.step(b)
        assert compiled.stats == generic.stats  # Newton iterations and halvings, step by step
        assert len(compiled.step_energies) == len(generic.step_energies)
        energies += zip(generic.step_energies, compiled.step_energies)
        gaps.append(barrier.min_distance(scene.model, a.x, a.t))
        x.append(a.x), y.append(b.x), u.append(a.v), w.append(b.v)
        # pinned particles are placed exactly by both
        np.testing.assert_array_equal(b.x[scene.model.pinned], a.x[scene.model.pinned])
    energies = np.array(energies)
    assert relative_difference(energies[:, 1], energies[:, 0]) <= 1e-12
    assert relative_difference(np.array(y), np.array(x)) <= 1e-12
    assert relative_difference(np.array(w), np.array(u)) <= 1e-12
    # the cases exercise what they are for: Newton iterating, inside the barrier's range
    assert generic.stats["newton_iterations"] > steps / 3
    assert 0.0 < min(gaps) < scene.model.contact_dhat


def test_damped_net_touches_both_planes_and_drags_its_pins(monkeypatch):
    """The damped net case is a contact case: it reaches the ground's barrier (d < d̂) and is
    pushed by the moving wall, its pins follow their motion exactly."""
    scene = damped_net()
    result = hooke.simulate(scene, t_end=2.0, save_every=10)
    assert result.contact_distance.min() < scene.model.contact_dhat
    wall = 1.0 - 0.15 * np.minimum(result.t, 2.0)  # the wall's position
    free = ~scene.model.pinned
    assert 0.0 < np.min(wall[:, None] - result.x[:, free, 0]) < scene.model.contact_dhat
    top = scene.model.pinned
    np.testing.assert_allclose(result.x[-1, top], scene.model.x0[top] + (0.3, -0.1), atol=1e-12)


@pytest.mark.parametrize("name", ["square_drop", "square_slope", "square_compress",
                                  "square_press", "soft3d_drop"])
def test_simulate_takes_the_compiled_path_on_the_contact_scenes_it_covers(name, monkeypatch):
    """One compiled Newton solve per step, by one kernel (soft3d_drop: 648 free DOFs, within
    the limit)."""
    calls = []
    solve = implicit_compiled.CompiledNewton.solve

    def spy(self, *args):
        calls.append(self)
        return solve(self, *args)

    monkeypatch.setattr(implicit_compiled.CompiledNewton, "solve", spy)
    result = hooke.simulate(hooke.scene(name), t_end=0.1, save_every=5)
    assert result.stats["steps"] == len(calls) == 10 and len(set(map(id, calls))) == 1


def test_models_it_does_not_cover_take_the_generic_path(monkeypatch):
    def compiled(scene, **options):
        return get_integrator("implicit_euler")(System(scene.model), scene.dt,
                                                **{**scene.options, **options}).compiled

    cloth = hooke.scene("cloth_drop")  # 1200 free DOFs
    assert cloth.model.n_dofs > implicit_compiled.MAX_FREE_DOFS
    assert not compiled(cloth, solver="direct")
    small = hooke.scene("cloth_drop", nx=6, nz=6)
    assert compiled(small, solver="auto") and compiled(small, solver="direct")
    assert not compiled(small)  # the scene file asks for CG
    assert not compiled(small, solver="superlu")
    monkeypatch.setattr(implicit, "COMPILED", False)
    assert not compiled(hooke.scene("square_drop"))


def test_a_term_added_later_switches_to_the_generic_path():
    """The viewer's cursor spring is another potential term: from then on the generic path
    steps (and the step is the same as the generic path's with that term)."""
    scene = hooke.scene("square_drop")
    system = System(scene.model)
    stepper = get_integrator("implicit_euler")(system, scene.dt, **scene.options)
    state = stepper.step(scene.state)
    assert stepper.compiled
    system.terms.append(system.terms[1])  # any other term object; here gravity again: g doubled
    assert not stepper.compiled
    doubled = stepper.step(state)
    # Free fall under 2g with backward Euler: v⁺ = v + 2 h g.
    np.testing.assert_allclose(doubled.v, state.v + 2 * scene.dt * scene.model.gravity, atol=1e-12)


def failure(scene, compiled, monkeypatch, state=None, **options) -> str:
    """The reason of the StepFailed that stepping ``scene`` raises."""
    step = stepper(scene, compiled, monkeypatch, **options)
    assert step.compiled == compiled
    state = state or scene.state
    with pytest.raises(StepFailed) as info:
        for _ in range(1000):
            state = step.checked_step(state)
    return info.value.reason


def test_newton_failure_reports_the_same_history_on_both_paths(monkeypatch):
    """max_iterations = 3 is too few at square_drop's landing (the step from t = 0.31 takes 5)."""
    scene = hooke.scene("square_drop")
    messages = [failure(scene, compiled, monkeypatch, max_iterations=3)
                for compiled in (False, True)]
    assert messages[0] == messages[1]
    assert messages[0].startswith("implicit_euler: Newton did not converge in 3 iterations at "
                                  "t = 0.31 (the largest Σ|p_i|/h over particles, last: "
                                  "3.139e+00, 1.928e+00, ")


def test_non_finite_input_is_refused_with_the_generic_paths_error(monkeypatch):
    """A NaN velocity makes the gradient NaN: the generic path's dense solve (SciPy) refuses it,
    and the compiled path says the same."""
    scene = hooke.scene("square_drop")
    v = scene.state.v.copy()
    v[3, 1] = np.nan
    state = hooke.State(0.0, scene.state.x, v)
    messages = [failure(scene, compiled, monkeypatch, state) for compiled in (False, True)]
    assert messages == ["implicit_euler: ValueError: array must not contain infs or NaNs"] * 2


def test_a_line_search_without_decrease_fails_with_newtons_message(monkeypatch):
    """spring1d (m = 0.5, k = 5, x0 = 2, h = 0.005) with the kernel's mass matrix negated (a
    fault injected into the Hessian only): −M + h²k is negative, so the Cholesky factorisation
    fails, the LU fallback gives the ascent direction p = h²k x0 / (m − h²k), and no step along it
    decreases E. The first residual is |p|/h = 0.05 / 0.499875 m/s."""
    scene = hooke.scene("spring1d")
    step = stepper(scene, True, monkeypatch)
    kernel = step._kernel
    np.testing.assert_array_equal(kernel.model[3], scene.model.mass)  # the field negated next
    kernel.model = kernel.model[:3] + (-kernel.model[3],) + kernel.model[4:]
    with pytest.raises(SimulationError) as info:
        step.step(scene.state)
    assert str(info.value) == (
        "implicit_euler: Newton did not converge in its first iteration at t = 0 (the line search found "
        f"no decrease; ‖p‖∞/h, last: {0.05 / 0.499875:.3e}; tol = 0.01); try a smaller dt")


@pytest.mark.parametrize("kind", ["positive definite", "indefinite", "singular"])
def test_dense_solve_cholesky_within_the_envelope_and_lu_fallback(kind):
    """A symmetric matrix with leading zeros in its rows (an envelope): Cholesky where it is
    positive definite, LU with partial pivoting otherwise; a singular one gives non-finite
    values, as LAPACK's getrs does."""
    rng = np.random.default_rng(4)
    size = 12
    a = rng.standard_normal((size, size)) * (np.abs(np.subtract.outer(np.arange(size),
                                                                      np.arange(size))) <= 3)
    matrix = a + a.T if kind == "indefinite" else a @ a.T + np.eye(size)
    if kind == "singular":
        matrix[5, :] = matrix[:, 5] = 0.0  # an exactly zero row and column
    rhs = rng.standard_normal(size)
    factor, index, out = np.empty((size, size)), np.empty(size, dtype=np.int64), np.empty(size)
    dense.symmetric_solve(matrix, rhs, factor, index, out)
    if kind == "singular":
        assert not np.all(np.isfinite(out))
        return
    assert dense.cholesky(matrix, factor, index) == (kind == "positive definite")
    np.testing.assert_allclose(out, np.linalg.solve(matrix, rhs), rtol=1e-10)
