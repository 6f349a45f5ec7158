"""Air drag towards a wind (:mod:`hooke.energies.drag`) against closed forms, finite differences
and energy balance; its builder, scene-file and store round trip; its refusals (hooke.gradient
through it: tests/test_adjoint_air.py).

Closed forms for one particle of mass m with drag c (k = c/m) in a steady wind w under gravity g:
v(t) = v∞ + (v0 − v∞) e^{−kt}, v∞ = w + g/k (terminal velocity m g/c when w = 0). The order of
convergence of every integrator with a gusting wind is in tests/test_integrators.py.
"""

from __future__ import annotations

from dataclasses import replace

import h5py
import numpy as np
import pytest

import hooke
from hooke.air import with_air
from hooke.energies import drag
from hooke.errors import HookeInputError
from hooke.integrators.implicit import ImplicitEuler
from hooke.io.store import input_hash, read_trajectory
from hooke.motion import ConstantVelocity, Sinusoid
from hooke.saddle_point import SaddlePointMatrix
from hooke.system import System

from conftest import run_cli, seed_crane

MASS, C, G = 2.0, 0.5, 9.81


def falling(dim=1, wind=None, motion=None):
    builder = hooke.ModelBuilder(dim=dim, gravity=[-G] + [0.0] * (dim - 1))
    builder.add_particle([0.0] * dim, mass=MASS)
    builder.set_air(C, wind=wind, motion=motion)
    return builder.finalize()


def test_a_falling_particle_reaches_terminal_velocity_m_g_over_c():
    result = hooke.simulate(hooke.Scene(falling(), integrator="rk4", dt=0.01, t_end=60.0),
                            save_every=100)
    k = C / MASS
    expected = -(MASS * G / C) * (1.0 - np.exp(-k * result.t))
    np.testing.assert_allclose(result.v[:, 0, 0], expected, rtol=0, atol=1e-9)
    assert result.v[-1, 0, 0] == pytest.approx(-MASS * G / C, rel=1e-6)  # e^{−15} of the way left


def test_a_particle_at_rest_in_a_wind_takes_the_wind_s_velocity():
    """Without gravity v(t) = w (1 − e^{−kt}) (rk4); the four first-order implicit methods all
    take drag as backward Euler does, v⁺ = (v + h k w)/(1 + h k), to round-off."""
    b = hooke.ModelBuilder(dim=2)
    b.add_particle([0.0, 0.0], mass=MASS)
    b.set_air(C, wind=[3.0, -1.0])
    model = b.finalize()
    w, k, h = np.array([3.0, -1.0]), C / MASS, 0.05
    result = hooke.simulate(hooke.Scene(model, integrator="rk4", dt=0.001, t_end=20.0), save_every=500)
    np.testing.assert_allclose(result.v[:, 0], w * (1 - np.exp(-k * result.t))[:, None], atol=1e-11)
    recurrence = [np.zeros(2)]
    for _ in range(40):
        recurrence.append((recurrence[-1] + h * k * w) / (1 + h * k))
    for name in ("implicit_euler", "implicit_euler_linear", "fast_mass_spring", "xpbd"):
        options = {"tol": 1e-12} if name == "implicit_euler" else {}
        run = hooke.simulate(hooke.Scene(model, integrator=name, dt=h, t_end=2.0), **options)
        np.testing.assert_allclose(run.v[:, 0], recurrence, rtol=0, atol=1e-12, err_msg=name)


def spring_model(wind=(0.0, 0.0), motion=None, pin_moves=False, damping=0.3):
    """Three particles in 2D on a pinned support, a spring with ``damping`` and an undamped
    spring, drag on two."""
    b = hooke.ModelBuilder(dim=2, gravity=[0.0, -9.81])
    b.add_particle([0.0, 0.0], motion=Sinusoid(0.05, (1.0, 0.0), 2.0) if pin_moves else None,
                   pinned=True)
    b.add_particle([1.0, 0.0], mass=0.5, velocity=[0.3, -0.2])
    b.add_particle([2.0, 0.1], mass=0.7, velocity=[-0.1, 0.4])
    b.add_spring(0, 1, stiffness=50.0, damping=damping)
    b.add_spring(1, 2, stiffness=80.0)
    b.set_air([0.0, 0.4, 0.2], wind=wind, motion=motion)
    return b.finalize()


def test_drag_without_wind_dissipates_energy_at_the_rate_sum_c_v_squared():
    """dE/dt = −Σ c_i |v_i|² (= −2Ψ) when only drag dissipates: E(T) − E(0) equals minus its
    integral (Simpson's rule over rk4's frames)."""
    b = hooke.ModelBuilder(dim=2, gravity=[0.0, -9.81])
    b.add_particle([0.0, 0.0], pinned=True)
    b.add_particle([1.0, 0.0], mass=0.5)
    b.add_particle([2.0, 0.1], mass=0.7)
    b.add_spring(0, 1, stiffness=50.0)
    b.add_spring(1, 2, stiffness=80.0)
    b.set_air([0.0, 0.4, 0.2])
    model = b.finalize()
    result = hooke.simulate(hooke.Scene(model, integrator="rk4", dt=1e-3, t_end=2.0))
    rate = np.array([2.0 * drag.dissipation(model, v, t) for v, t in zip(result.v, result.t)])
    np.testing.assert_allclose(rate, np.sum(model.drag[:, None] * result.v ** 2, axis=(1, 2)))
    h = result.t[1] - result.t[0]
    lost = h / 3.0 * (rate[0] + rate[-1] + 4 * rate[1:-1:2].sum() + 2 * rate[2:-1:2].sum())
    change = result.energy["total"][-1] - result.energy["total"][0]
    assert lost > 1.0  # the drag takes a good part of the 10 J of motion
    assert change == pytest.approx(-lost, rel=1e-8)


def central_jacobian(function, v, eps=1e-6):
    """−∂f/∂v by central differences, (n·d, n·d)."""
    columns = []
    for q in range(v.size):
        step = np.zeros(v.size)
        step[q] = eps
        plus = function(v + step.reshape(v.shape)).reshape(-1)
        minus = function(v - step.reshape(v.shape)).reshape(-1)
        columns.append(-(plus - minus) / (2 * eps))
    return np.array(columns).T


def test_the_velocity_jacobian_of_every_assembly_path_is_minus_df_dv():
    """D = −∂f/∂v (dashpots and drag's C) of combined_matrix (in-place kernel and generic path),
    combined_matrix_full and the α-methods' saddle-point matrix, against central differences of
    System.force at a random state and time."""
    rng = np.random.default_rng(5)
    # without wind springs and gravity take the in-place kernel (hooke.kernels.spring_matrix);
    # the wind's step term sends implicit_euler's matrices down the generic path
    for model, in_place in ((spring_model(), True),
                            (spring_model(wind=(1.0, 0.5), motion=Sinusoid(0.3, (1.0, 0.0), 4.0)),
                             False)):
        system = System(model)
        assert system.springs_and_gravity(system.step_terms(model.initial_state(), 0.01)) is in_place
        x = model.x0 + 0.1 * rng.standard_normal(model.x0.shape)
        v = rng.standard_normal(model.x0.shape)
        full = central_jacobian(lambda u: system.force(x, u, 0.7), v)
        free = np.ix_(system.free_dofs, system.free_dofs)
        for matrix in (system.combined_matrix(x, 0.0, 0.0, 1.0),
                       system.generic_combined_matrix(x, 0.0, 0.0, 1.0),
                       SaddlePointMatrix(system).assemble(x, np.zeros(0), 0.0, 0.0, 1.0)):
            np.testing.assert_allclose(matrix.toarray(), full[free], atol=1e-8)
        np.testing.assert_allclose(system.combined_matrix_full(x, 0.0, 0.0, 1.0).toarray(), full,
                                   atol=1e-8)
        # drag's share alone: C = diag(c_i) per DOF
        without = central_jacobian(lambda u: system.force(x, u, 0.7) - drag.force(model, u, 0.7), v)
        np.testing.assert_allclose(full - without, np.diag(np.repeat(model.drag, 2)), atol=1e-8)


def test_implicit_euler_minimises_an_incremental_potential_whose_gradient_is_its_own():
    """With drag, a gusting wind and a moving pin: the gradient ``implicit_euler`` uses is the
    central difference of its incremental potential, and the step it takes satisfies backward
    Euler, M (v⁺ − v) = h f(x⁺, v⁺, t + h), to the Newton tolerance (drag is the only
    dissipation here: spring damping's directions are lagged at the step start by design)."""
    model = spring_model(wind=(1.0, 0.5), motion=Sinusoid(0.3, (1.0, 0.0), 4.0), pin_moves=True,
                         damping=0.0)
    system, h = System(model), 0.02
    integrator = ImplicitEuler(system, h, tol=1e-12)
    start = hooke.State(0.3, model.x0.copy(), model.v0.copy())
    system.apply_pins(start.x, start.v, start.t)
    terms = system.step_terms(start, h)
    assert any(term.NAME == "wind" for term in terms)
    x_tilde = start.x + h * start.v
    damping_matrix = integrator._damping_matrix(start.x)
    rng = np.random.default_rng(2)
    y = system.newton_start(start, h) + system.scatter_free(
        np.zeros_like(start.x), 0.01 * rng.standard_normal(system.free_dofs.size))
    gradient = integrator._gradient(y, x_tilde, start.x, damping_matrix, terms)
    numeric = []
    for q in system.free_dofs:
        step = np.zeros(y.size)
        step[q] = 1e-6
        plus, minus = (integrator.incremental_potential(y + s * step.reshape(y.shape), x_tilde,
                                                        start.x, damping_matrix, terms)
                       for s in (1, -1))
        numeric.append((plus - minus) / 2e-6)
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-9)
    new = integrator.step(start)
    residual = (model.mass[:, None] * (new.v - start.v) - h * system.force(new.x, new.v, new.t))
    assert np.max(np.abs(system.free_vector(residual))) < 1e-9


def test_the_wind_is_the_steady_wind_plus_the_air_motion_s_velocity():
    model = falling(dim=2, wind=[1.0, 0.0], motion=Sinusoid(0.2, (0.0, 1.0), 3.0))
    for t in (0.0, 0.4, 1.1):
        np.testing.assert_allclose(drag.wind(model, t), [1.0, 0.6 * np.cos(3.0 * t)])
    gust = falling(dim=2, motion=ConstantVelocity((2.0, 0.0), duration=1.0))
    np.testing.assert_allclose(drag.wind(gust, 0.5), [2.0, 0.0])
    np.testing.assert_allclose(drag.wind(gust, 1.5), [0.0, 0.0])  # the gust is over
    np.testing.assert_allclose(drag.force(gust, np.array([[1.0, 1.0]]), 0.5), [[0.5, -0.5]])


def test_the_crane_s_real_wind_has_the_seed_s_equilibrium_and_modes():
    """The crane's drag c_i = 0.01 m_i towards 10 m/s pushes as the seed's tilted gravity
    (0.1 m/s² along y) does at rest: the same equilibrium and frequencies as the seed's system;
    crane_wind's gust (10 + 3 sin t m/s) has the crane's mean wind: the same again."""
    seed, crane, gusting = (hooke.modes(scene, k=5)
                            for scene in (seed_crane(), "crane", "crane_wind"))
    for windy in (crane, gusting):
        np.testing.assert_allclose(windy.equilibrium, seed.equilibrium, atol=1e-10)
        np.testing.assert_allclose(windy.frequencies, seed.frequencies, rtol=1e-9)
    assert crane.equilibrium[7, 1] > 4.0  # the boom turns downwind (+y), the load with it
    for name in ("crane", "crane_wind"):
        model = hooke.scene(name).model
        np.testing.assert_array_equal(model.gravity, [0.0, 0.0, -9.81])
        np.testing.assert_allclose(model.drag * 10.0, 0.1 * model.mass * model.free)
    gust = hooke.scene("crane_wind").model
    for t in (0.0, 0.7, 2.0, 4.5):
        np.testing.assert_allclose(drag.wind(gust, t), [0.0, 10.0 + 3.0 * np.sin(t), 0.0],
                                   atol=1e-12)


def test_builder_and_scene_file_refuse_bad_air_in_one_line_each(tmp_path):
    b = hooke.ModelBuilder(dim=2)
    b.add_particle([0.0, 0.0])
    for arguments, message in (
            ({"drag": -1.0}, "air.drag: must be finite and >= 0, one number or one per particle, got -1.0"),
            ({"drag": "x"}, "air.drag: must be a number or one number per particle, got 'x'"),
            ({"drag": 0.1, "wind": [1.0]}, "air.wind: must have 2 component(s) for dim=2, got [1.0]"),
            ({"drag": 0.1, "motion": 3}, "motion: must be a callable of time t, got 3")):
        with pytest.raises(HookeInputError) as error:
            b.set_air(**arguments)
        assert str(error.value) == message
    b.set_air([0.1, 0.2])
    with pytest.raises(HookeInputError, match=r"^air.drag: must have one value per particle \(1\)"):
        b.finalize()
    scene = tmp_path / "air.toml"
    scene.write_text('dim = 2\n[[particles]]\nx = [0.0, 0.0]\n[air]\ndrag = [0.1, 0.2]\n'
                     'wind = [1.0, 2.0, 3.0]\nmotion = { type = "sinusoid", amplitude = 0.1, '
                     'direction = [1.0], omega = 2.0 }\n')
    done = run_cli("run", str(scene), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: air.drag: must have one value per particle (1), got [0.1, 0.2]",
        "error: air.wind: must have 2 component(s) for dim=2, got [1.0, 2.0, 3.0]",
        "error: air.motion.direction: must have 2 component(s) for dim=2, got [1.0]"]


def test_air_round_trips_through_a_scene_file_and_the_store(tmp_path):
    scene = tmp_path / "windy.toml"
    scene.write_text('dim = 2\ngravity = [0.0, -9.81]\n[[particles]]\nx = [0.0, 0.0]\npinned = true\n'
                     '[[particles]]\nx = [1.0, 0.0]\nmass = 0.5\n[[springs]]\ni = 0\nj = 1\n'
                     'stiffness = 100.0\n[air]\ndrag = [0.0, 0.2]\nwind = [0.0, 2.0]\nmotion = '
                     '{ type = "sinusoid", amplitude = 0.1, direction = [0.0, 1.0], omega = 3.0 }\n'
                     '[run]\nintegrator = "implicit_euler"\ndt = 0.01\nt_end = 0.1\n')
    loaded = hooke.load(scene)
    assert loaded.model.wind_motion.motion == Sinusoid(0.1, (0.0, 1.0), 3.0)  # checked as air.motion
    assert loaded.model.wind_motion.field == "air.motion"
    result = hooke.simulate(loaded, store=tmp_path / "run.h5")
    stored = read_trajectory(tmp_path / "run.h5")["model"]
    np.testing.assert_array_equal(stored.drag, [0.0, 0.2])
    np.testing.assert_array_equal(stored.wind, [0.0, 2.0])
    reopened = hooke.open(tmp_path / "run.h5")  # rebuilt from the stored text: the gust comes back
    assert reopened.scene.model.wind_motion == loaded.model.wind_motion
    np.testing.assert_array_equal(reopened.x, result.x)


def test_the_input_hash_covers_drag_and_files_without_air_read_as_none(tmp_path):
    base = hooke.Scene(spring_model(), integrator="rk4", dt=0.01, t_end=0.02)
    settings = {"integrator": "rk4"}
    stronger = replace(base, model=with_air(base.model, [0.0, 0.5, 0.2]))
    calm = replace(base, model=replace(base.model, drag=np.empty(0), wind=np.empty(0)))
    assert len({input_hash(s, settings) for s in (base, stronger, calm)}) == 3
    plain = hooke.scene("spring1d")
    hooke.simulate(plain, t_end=0.02, store=tmp_path / "run.h5")
    with h5py.File(tmp_path / "run.h5", "a") as handle:  # as a file written before air existed
        assert handle["model/drag"].shape == (0,)
        del handle["model/drag"], handle["model/wind"]
    model = read_trajectory(tmp_path / "run.h5")["model"]
    assert model.drag.shape == (0,) and not model.has_drag


def test_a_corrupted_stored_drag_is_one_line(tmp_path):
    hooke.simulate(hooke.Scene(spring_model(), integrator="rk4", dt=0.01, t_end=0.02),
                   store=tmp_path / "run.h5")
    with h5py.File(tmp_path / "run.h5", "a") as handle:
        del handle["model/drag"]
        handle["model/drag"] = np.array([0.0, -1.0, 0.2])
    with pytest.raises(HookeInputError, match="is corrupted: model/drag holds a drag coefficient < 0"):
        read_trajectory(tmp_path / "run.h5")


def test_the_readme_example_blows_the_mass_downwind():
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = re.search(r"### Air drag and wind\n.*?```python\n(.*?)```", text, re.S).group(1)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    result = namespace["result"]
    assert result.complete and result.n_frames == 201
    # the breeze along x pushes the hanging mass downwind; the 0.5 s gust along y, then over,
    # leaves it swinging otherwise than the breeze alone
    assert result.x[-1, 1, 0] > 0.01
    calm = replace(result.scene.model, wind_motion=None)
    breeze = hooke.simulate(hooke.Scene(calm, integrator="implicit_euler", dt=0.01, t_end=2.0))
    assert np.max(np.abs(breeze.x[:, 1, 1] - result.x[:, 1, 1])) > 0.01
    np.testing.assert_allclose(drag.wind(result.scene.model, 0.25), [2.0, 3.0])
    np.testing.assert_allclose(drag.wind(result.scene.model, 0.75), [2.0, 0.0])


@pytest.mark.parametrize("name,scene_name", [("symplectic_euler", "crane"), ("rk45", "crane"),
                                             ("generalized_alpha", "crane"),
                                             ("implicit_euler", "square_drop")])
def test_drag_sends_compiled_integrators_down_their_generic_path_and_zero_drag_does_not(
        name, scene_name):
    """The fused and compiled fast paths take no air drag, but the α-methods' compiled step
    takes a steady wind (tests/test_newmark_compiled.py compares it with the generic step): with
    drag an integrator runs its generic path, the α-methods only when the wind varies in time
    (the α-methods' and implicit Euler's generic runs then agree with the same model's with
    COMPILED off, bit for bit); a drag of 0 everywhere is no drag: the compiled run, exactly."""
    import hooke.integrators.implicit as implicit_module
    import hooke.integrators.newmark as newmark_module

    # rk45 compiles joints with the correction force, not with its default projection
    options = {"stabilization": "correction"} if name == "rk45" else {}

    def runs_compiled(scene) -> bool:
        integrator = hooke.get_integrator(name)(System(scene.model), scene.dt, **(
            scene.options if name == scene.integrator else options))
        if name == "symplectic_euler":
            return integrator.system.gather is not None
        if name == "rk45":
            return integrator.frames_in_blocks()
        return integrator.compiled

    plain = seed_crane() if scene_name == "crane" else hooke.scene(scene_name)  # no air
    axis = np.eye(plain.model.dim)
    wind, drag_coefficients = axis[0] * 5.0, 0.01 * plain.model.mass
    still = replace(plain, model=with_air(plain.model, 0.0, wind))
    windy = replace(plain, model=with_air(plain.model, drag_coefficients, wind))
    gusting = replace(plain, model=with_air(plain.model, drag_coefficients, wind,
                                            Sinusoid(0.5, axis[1], 2.0)))
    assert runs_compiled(plain) and runs_compiled(still) and not runs_compiled(gusting)
    assert runs_compiled(windy) == (name == "generalized_alpha")
    settings = dict(integrator=name, t_end=0.2, **options)
    np.testing.assert_array_equal(hooke.simulate(still, **settings).x,
                                  hooke.simulate(plain, **settings).x)
    if name in ("implicit_euler", "generalized_alpha"):
        module = implicit_module if name == "implicit_euler" else newmark_module
        generic_path = gusting if name == "generalized_alpha" else windy
        fast = hooke.simulate(generic_path, **settings).x
        try:
            module.COMPILED = False
            generic = hooke.simulate(generic_path, **settings).x
        finally:
            module.COMPILED = True
        np.testing.assert_array_equal(fast, generic)
