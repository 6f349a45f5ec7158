"""implicit_euler specifics: equal to the linearised method on quadratic energies, converges to
round-off without stalling, and the book's stopping rule is available as min_iterations=0."""

from __future__ import annotations

import numpy as np
import pytest

import hooke
from hooke.integrators import implicit
from hooke.motion import ConstantVelocity


def swinging_spring(tol_free_rest: float = 1.0):
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    anchor = b.add_particle((0.0, 0.0), pinned=True)
    bob = b.add_particle((tol_free_rest, 0.2), mass=0.7, velocity=(0.0, 0.5))
    b.add_spring(anchor, bob, stiffness=300.0, rest_length=0.8, damping=0.5)
    return hooke.Scene(b.finalize(), integrator="implicit_euler", dt=0.01, t_end=1.0)


def test_quadratic_energy_newton_equals_linearised_step():
    # zero-rest-length spring + gravity: E is quadratic, one Newton step is the exact solve
    spring = hooke.scene("spring1d")
    exact = hooke.simulate(spring, integrator="implicit_euler", tol=1e-12, t_end=1.0)
    linear = hooke.simulate(spring, integrator="implicit_euler_linear", t_end=1.0)
    np.testing.assert_allclose(exact.x, linear.x, rtol=0, atol=1e-12)
    assert exact.stats["newton_iterations"] <= 2 * exact.stats["steps"]


def test_tight_tolerance_converges_without_stalling():
    scene = swinging_spring()
    result = hooke.simulate(scene, tol=1e-13)
    loose = hooke.simulate(scene, tol=1e-6)
    assert result.complete and np.all(np.isfinite(result.x))
    np.testing.assert_allclose(result.x, loose.x, atol=1e-5)  # tol = 1e-6 m/s over 100 steps of 0.01 s
    # backward Euler satisfies M (v⁺ − v) = h f(x⁺, v⁺) at the end of every step
    system = hooke.System(scene.model)
    for k in range(1, result.n_frames):
        x, v, v_old = result.x[k], result.v[k], result.v[k - 1]
        residual = scene.model.mass[1] * (v[1] - v_old[1]) - scene.dt * system.force(x, v)[1]
        # damping direction is lagged at the step start: allow that O(h·c·Δn) difference
        assert np.max(np.abs(residual)) < 5e-3


def test_book_rule_freezes_below_tol_and_default_does_not():
    chain = hooke.scene("chain")
    book = hooke.simulate(chain, integrator="implicit_euler", t_end=0.05, min_iterations=0)
    default = hooke.simulate(chain, integrator="implicit_euler", t_end=0.05)
    free = ~chain.model.pinned
    assert np.array_equal(book.x[-1][free], chain.model.x0[free])  # h·g < tol: never moves
    assert np.all(default.x[-1][free, 1] < chain.model.x0[free, 1])


def test_damper_to_a_moving_pin_drags_the_particle_as_backward_euler_says():
    """A particle tied by a pure damper (k = 0, c) to a pin moving at speed u: m v' = −c (v − u),
    whose backward Euler step is v⁺ = (m v + h c u)/(m + h c) exactly (the pin's velocity acts
    through the damping coupling)."""
    m, c, u, h, steps = 0.5, 2.0, 0.3, 0.01, 60
    for integrator in ("implicit_euler", "implicit_euler_linear"):
        b = hooke.ModelBuilder(dim=1, gravity=(0.0,))
        pin = b.add_particle((0.0,), mass=1.0, pinned=True,
                             motion=hooke.motion.ConstantVelocity((u,)))
        free = b.add_particle((1.0,), mass=m)
        b.add_spring(pin, free, stiffness=0.0, damping=c)
        scene = hooke.Scene(b.finalize(), integrator=integrator, dt=h, t_end=steps * h)
        options = {"tol": 1e-12} if integrator == "implicit_euler" else {}
        result = hooke.simulate(scene, **options)
        v = 0.0
        expected = [v]
        for _ in range(steps):
            v = (m * v + h * c * u) / (m + h * c)
            expected.append(v)
        np.testing.assert_allclose(result.v[:, free, 0], expected, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(result.x[:, pin, 0], u * result.t, rtol=1e-12)


def test_linearised_step_moves_a_sinusoid_pin_where_it_goes_as_backward_euler_does():
    """In 1D a spring is linear, so the linearised step is backward Euler itself: with a pin on
    a sinusoid, implicit_euler_linear must take implicit_euler's steps. It linearised about a
    pin moved by h·u̇(t + h) instead of its real x_p(t + h) − x_p(t): 4.8e-3 m off here, and a
    sinusoid of ω·h > π threw the free particle to 1e146 m."""
    b = hooke.ModelBuilder(dim=1)
    b.add_particle([0.0], pinned=True, motion=hooke.motion.Sinusoid(0.2, (1.0,), 20.0))
    b.add_particle([1.0], mass=0.5)
    b.add_spring(0, 1, stiffness=40.0, damping=0.3)
    scene = hooke.Scene(b.finalize(), dt=0.01, t_end=1.0)  # ω·h = 0.2: 31 samples per period
    linear = hooke.simulate(scene, integrator="implicit_euler_linear")
    exact = hooke.simulate(scene, integrator="implicit_euler", tol=1e-12)
    assert np.max(np.abs(exact.x[:, 1, 0] - 1.0)) > 0.1  # the free particle really swings
    np.testing.assert_allclose(linear.x, exact.x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(linear.v, exact.v, rtol=0, atol=1e-11)


def test_the_gradient_bounds_the_newton_step_on_springs():
    """On springs with dashpots H = M + h²∇²U (blocks projected to PSD) + h D ⪰ M: its smallest
    eigenvalue is at least the smallest mass, so ‖p‖₂ ≤ ‖g‖₂ / min M for p = −H⁻¹g, which lets
    implicit_euler stop without a factorisation (``_within_tol``). Unprojected, the crumpled
    sheets' compressed springs take H below M."""
    scene = hooke.scene("cloth2d", nx=6, ny=5)
    system = hooke.System(scene.model)
    h, smallest = 0.05, system.mass_free.min()
    rng = np.random.default_rng(1)
    for _ in range(5):
        x = scene.model.x0 + 0.3 * 0.05 * rng.normal(size=scene.model.x0.shape)
        projected = system.combined_matrix(x, 1.0, h * h, h, project_psd=True).toarray()
        raw = system.combined_matrix(x, 1.0, h * h, h, project_psd=False).toarray()
        assert np.linalg.eigvalsh(projected)[0] >= smallest * (1 - 1e-12)
        assert np.linalg.eigvalsh(raw)[0] < 0.9 * smallest
        g = rng.normal(size=projected.shape[0])
        p = np.linalg.solve(projected, g)
        assert np.linalg.norm(p) <= np.linalg.norm(g) / smallest


def test_a_step_known_converged_from_its_gradient_needs_no_last_factorisation(monkeypatch):
    """The damped sheet falling from rest on the generic Newton path: the last iteration's
    gradient proves the stopping rule, so each step solves once fewer; the steps, counts and
    energies are the same bits as with the rule's own solve."""
    from hooke.integrators import implicit

    monkeypatch.setattr(implicit, "COMPILED", False)
    scene = hooke.scene("cloth2d", nx=10, ny=8)

    def run(shortcut: bool):
        stepper = implicit.ImplicitEuler(hooke.System(scene.model), scene.dt)
        if not shortcut:
            monkeypatch.setattr(stepper, "_within_tol", lambda grad, terms, matrix=None: False)
        solves, solve = [], stepper.linear_solver.solve
        monkeypatch.setattr(stepper.linear_solver, "solve",
                            lambda matrix, rhs: (solves.append(1), solve(matrix, rhs))[1])
        state, energies = scene.state, []
        for _ in range(10):
            state = stepper.step(state)
            energies += stepper.step_energies
        return state, stepper.stats, energies, len(solves)

    fast, reference = run(True), run(False)
    assert fast[0].x.tobytes() == reference[0].x.tobytes()
    assert fast[0].v.tobytes() == reference[0].v.tobytes()
    assert fast[1] == reference[1] and fast[2] == reference[2]
    assert reference[3] == fast[1]["newton_iterations"] + 10  # a solve per iteration, one to stop
    assert fast[3] == fast[1]["newton_iterations"]  # the stopping solves are gone


def test_the_previous_factor_bounds_the_next_newton_step():
    """With H ⪰ M and H₀ any earlier iteration's matrix, p = −H⁻¹g differs from the lagged
    step q = −H₀⁻¹g by H⁻¹(H − H₀)q, so ‖p‖∞ ≤ ‖q‖∞ + ‖(H − H₀)q‖₂ / min M (the certificate of
    ``_within_tol`` with a matrix); q alone is not a bound (the last line)."""
    scene = hooke.scene("cloth2d", nx=6, ny=5)
    system = hooke.System(scene.model)
    h, smallest = 0.05, system.mass_free.min()
    rng = np.random.default_rng(2)
    below = 0
    for _ in range(10):
        x0 = scene.model.x0 + 0.3 * 0.05 * rng.normal(size=scene.model.x0.shape)
        x = x0 + 0.05 * 0.05 * rng.normal(size=x0.shape)
        old = system.combined_matrix(x0, 1.0, h * h, h, project_psd=True).toarray()
        new = system.combined_matrix(x, 1.0, h * h, h, project_psd=True).toarray()
        g = rng.normal(size=new.shape[0])
        p, q = np.linalg.solve(new, g), np.linalg.solve(old, g)
        bound = np.max(np.abs(q)) + np.linalg.norm((new - old) @ q) / smallest
        assert np.max(np.abs(p)) <= bound
        below += np.max(np.abs(p)) > np.max(np.abs(q))
    assert below > 0


def test_a_step_known_converged_from_the_previous_factor_needs_no_last_factorisation(monkeypatch):
    """A crumpled 12 × 12 cloth on the generic Newton path, where the gradient bound is too weak
    near the solution: a substitution with the previous iteration's factor proves the stopping
    rule instead, so every step factorises once per Newton iteration; the steps, counts and
    energies are the same bits as with the rule's own factorisation."""
    from hooke.integrators import implicit

    monkeypatch.setattr(implicit, "COMPILED", False)
    scene = hooke.scene("cloth", n=12)
    rng = np.random.default_rng(0)
    x = scene.model.x0 + 0.1 / 12 * rng.normal(size=scene.model.x0.shape)
    start = hooke.State(0.0, x, np.zeros_like(x))

    def run(shortcut: bool):
        stepper = implicit.ImplicitEuler(hooke.System(scene.model), scene.dt)
        if not shortcut:
            monkeypatch.setattr(stepper, "_within_tol", lambda grad, terms, matrix=None: False)
        calls = {"solve": 0, "resolve": 0}
        for name in calls:
            method = getattr(stepper.linear_solver, name)

            def counted(*args, method=method, name=name):
                calls[name] += 1
                return method(*args)

            monkeypatch.setattr(stepper.linear_solver, name, counted)
        state, energies = start, []
        for _ in range(5):
            state = stepper.step(state)
            energies += stepper.step_energies
        return state, stepper.stats, energies, calls

    fast, reference = run(True), run(False)
    assert fast[0].x.tobytes() == reference[0].x.tobytes()
    assert fast[0].v.tobytes() == reference[0].v.tobytes()
    assert fast[1] == reference[1] and fast[2] == reference[2]
    assert reference[3]["solve"] == fast[1]["newton_iterations"] + 5
    assert fast[3]["solve"] == fast[1]["newton_iterations"]
    assert fast[3]["resolve"] >= 2  # the gradient bound alone missed these steps' last solve


def dragged_hanging_spring() -> hooke.Scene:
    """A 0.5 kg bob on a damped spring (k = 40, c = 0.2) whose pin is dragged at (−5, 0.3) m/s
    under gravity: by t = 0.615 the weight's and the spring's parts of E (1.0e-4 and 9.6e-5 J
    after × h²) cancel to an E of −1.9e-7 J, whose round-off (64 ε |E| = 2.7e-21 J) was taken for
    the round-off of the parts (~5e-20 J, as measured between trials)."""
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    b.add_particle((0.0, 0.0), pinned=True, motion=ConstantVelocity((-5.0, 0.3)))
    b.add_particle((1.0, 0.0), mass=0.5)
    b.add_spring(0, 1, stiffness=40.0, damping=0.2)
    return hooke.Scene(b.finalize(), integrator="implicit_euler", dt=0.005, t_end=1.28)


@pytest.mark.parametrize("compiled", [False, True])
def test_a_tight_tol_converges_where_the_energys_parts_cancel(compiled, monkeypatch):
    """Before, step 124 stalled at ‖p‖/h = 1.284e-8 for 100 iterations (tol 1e-10): the line
    search took "no increase" of E at α = 1.9e-6, where y + αp == y, for ever. The noise of E is
    now judged by the sum of its parts' sizes, so the last Newton steps are taken on the
    gradient's decrease, and a trial that leaves y as it is counts as no step."""
    monkeypatch.setattr(implicit, "COMPILED", compiled)
    scene = dragged_hanging_spring()
    tight = hooke.simulate(scene, tol=1e-10)
    tighter = hooke.simulate(scene, tol=1e-12)
    assert tight.complete and tight.n_frames == tighter.n_frames == 257
    # each step within tol × h of its solution, 256 steps × 1e-10 m/s × 0.005 s = 1.3e-10 m,
    # carried along by the swing (measured 2.1e-10 m)
    assert np.max(np.abs(tight.x - tighter.x)) < 4 * 256 * 1e-10 * 0.005
    assert tight.stats["line_search_halvings"] == 0
