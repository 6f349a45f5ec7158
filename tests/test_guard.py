"""The blow-up guard (every step checked; exact step, time and worst particle; the last finite
state written) and reproducible output files (byte-identical across runs and thread counts)."""

from __future__ import annotations

import dataclasses
import json
import re
import warnings

import h5py
import numpy as np
import pytest

import hooke
from hooke.integrators.base import ConstraintForces
from hooke.io.store import read_trajectory
from hooke.system import System

from conftest import fixed_step_options, integrator_class, run_cli as cli

ADVICE = "Try a smaller dt or an implicit integrator (implicit_euler, implicit_euler_linear)."


def quietly(function, *args, **kwargs):
    """Call with every RuntimeWarning (overflow, invalid value) turned into an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        return function(*args, **kwargs)


def stiff_spring(dt: float, t_end: float):
    """x'' = −ω²x with ω = 100 (k = 1e4, m = 1, zero rest length) from x = 1, v = 0."""
    b = hooke.ModelBuilder(dim=1)
    b.add_particle([0.0], pinned=True)
    b.add_particle([1.0], mass=1.0)
    b.add_spring(0, 1, stiffness=1e4, rest_length=0.0)
    return hooke.Scene(b.finalize(), dt=dt, t_end=t_end)


def step_directly(scene, name, n_steps, **options):
    """The integrator's own steps, without simulate's guard: (states, failed) where states ends
    with the last finite state and failed says whether the next step failed or was non-finite."""
    stepper = hooke.get_integrator(name)(System(scene.model), scene.dt, **options)
    states = [scene.state]
    with np.errstate(all="ignore"):
        for _ in range(n_steps):
            try:
                new = stepper.step(states[-1])
            except (hooke.SimulationError, ValueError):
                return states, True
            if not (np.isfinite(new.x).all() and np.isfinite(new.v).all()):
                return states, True
            states.append(new)
    return states, False


def assert_last_frame_is(result, state):
    assert np.isfinite(result.x).all() and np.isfinite(result.v).all()
    np.testing.assert_array_equal(result.x[-1], state.x)
    np.testing.assert_array_equal(result.v[-1], state.v)


# -- the exact step, off the save grid ------------------------------------------------------------

STIFF_SCENE = """
name = "stiff"
builder = "harmonic"
[parameters]
x0 = 1.0
v0 = 0.0
stiffness = 1.0e4
mass = 1.0
[run]
integrator = "explicit_euler"
dt = 0.1
t_end = 100.0
"""


def test_blow_up_is_stopped_at_its_exact_step_and_the_last_finite_state_is_written(tmp_path):
    """Explicit Euler, ω h = 10: the state grows by √101 per step until it overflows. With a
    frame every 50 steps the guard still names the first non-finite step and writes the step
    before it, off the save grid, to the Result and to the store."""
    (tmp_path / "stiff.toml").write_text(STIFF_SCENE)
    scene = hooke.load(tmp_path / "stiff.toml")
    states, failed = step_directly(scene, "explicit_euler", 1000)
    k = len(states)  # the first non-finite step
    assert failed and 300 < k < 320
    last = states[-1]
    with pytest.raises(hooke.SimulationError) as info:
        quietly(hooke.simulate, scene, save_every=50, store=tmp_path / "run.h5")
    message = str(info.value)
    kept = k // 50 + 1 + (((k - 1) % 50) != 0)  # 0, 50, …, and step k − 1 unless on the grid
    assert message == (
        f"the state became non-finite at step {k} (t = {k * 0.1:.6g}); worst particle 1 "
        f"(non-finite; at t = {(k - 1) * 0.1:.6g}: |x|∞ = {abs(last.x[1, 0]):.3g} m, "
        f"|v|∞ = {abs(last.v[1, 0]):.3g} m/s); {kept} frame(s) kept, the last at "
        f"t = {(k - 1) * 0.1:.6g}. {ADVICE}")
    partial = info.value.result
    assert not partial.complete and partial.n_frames == kept
    np.testing.assert_allclose(partial.t, np.append(np.arange(0, k - 1, 50), k - 1) * 0.1,
                               rtol=1e-15)
    assert_last_frame_is(partial, last)
    stored = read_trajectory(tmp_path / "run.h5")
    np.testing.assert_array_equal(stored["x"], partial.x)
    np.testing.assert_array_equal(stored["t"], partial.t)
    assert stored["attrs"]["failure"] == message and not stored["attrs"]["complete"]
    with pytest.raises(hooke.HookeInputError, match="^path: holds a run the blow-up guard stopped"):
        hooke.resume(tmp_path / "run.h5")


# -- every integrator ------------------------------------------------------------------------------

DT, T_NAN = 0.01, 0.4075  # the motion is NaN from inside step 41, (0.40, 0.41]


def nan_driven_chain():
    """A chain hanging from a driver pinned at (10, 12) whose prescribed motion turns NaN at
    T_NAN: the driver has the largest |x|∞ (12 m), so it is the worst particle whether the state
    goes non-finite (it is non-finite first) or the step's solver refuses the NaN. The builder
    checks every motion's values (a NaN is then an error naming the motion,
    tests/test_strict_inputs.py): the raw motion is put into the model past that check, as the
    NaN of any other input that got through would reach the guard."""
    def motion(t):
        value = np.nan if t >= T_NAN else 0.0
        return np.full(2, value), np.full(2, value), np.full(2, value)
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    b.add_particle((10.0, 12.0), mass=1.0, motion=motion)
    for k in range(1, 4):
        b.add_particle((10.0, 12.0 - k), mass=0.5)
        b.add_spring(k - 1, k, stiffness=200.0)
    model = dataclasses.replace(b.finalize(), pinned_motions=((0, motion),))
    return hooke.Scene(model, dt=DT, t_end=1.0)


def test_a_non_finite_motion_stops_every_integrator_at_its_step(integrator, tmp_path):
    scene = nan_driven_chain()
    options = fixed_step_options(integrator)
    with pytest.raises(hooke.SimulationError) as info:
        quietly(hooke.simulate, scene, integrator=integrator, save_every=7,
                store=tmp_path / "run.h5", **options)
    what, rest = str(info.value).split("; worst particle 0 (", 1)
    if what == "the state became non-finite at step 41 (t = 0.41)":
        rest = rest.removeprefix("non-finite; ")
    else:  # the step's solver refused the NaN
        assert what.startswith(f"step 41 (t = 0.41) failed: {integrator}: "), what
    worst, advice = rest.split(". Try a smaller dt or ")
    assert worst == "at t = 0.4: |x|∞ = 12 m, |v|∞ = 0 m/s); 7 frame(s) kept, the last at t = 0.4"
    suggested = advice.split("implicit integrator (")[1].removesuffix(").").split(", ")
    assert suggested and integrator not in suggested
    assert set(suggested) <= {"implicit_euler", "implicit_euler_linear"}
    partial = info.value.result
    np.testing.assert_allclose(partial.t, [0.0, 0.07, 0.14, 0.21, 0.28, 0.35, 0.4], rtol=1e-14)
    reference = hooke.simulate(scene, integrator=integrator, t_end=0.4, save_every=40, **options)
    assert reference.complete
    assert_last_frame_is(partial, last_state(reference))
    stored = read_trajectory(tmp_path / "run.h5")
    np.testing.assert_array_equal(stored["x"], partial.x)
    np.testing.assert_array_equal(stored["v"], partial.v)


def last_state(result):
    return hooke.State(float(result.t[-1]), result.x[-1], result.v[-1])


def test_stiff_spring_blows_up_exactly_the_explicit_integrators(integrator):
    """ω h = 5 is past the stability limit of every explicit method (2 for symplectic Euler,
    2.8 for RK4, 3.3 for Dormand–Prince): those (the integrators of the unconstrained ODE,
    ``ConstraintForces``) go non-finite within 600 steps, at the step where their own steps do;
    the implicit ones stay finite and never gain energy."""
    scene = stiff_spring(dt=0.05, t_end=30.0)
    options = fixed_step_options(integrator)
    states, failed = step_directly(scene, integrator, 600, **options)
    explicit = issubclass(integrator_class(integrator), ConstraintForces)
    assert failed == explicit
    if not explicit:
        result = quietly(hooke.simulate, scene, integrator=integrator, save_every=50, **options)
        assert result.complete and np.isfinite(result.x).all()
        energy = result.energy["total"]
        assert np.max(energy) <= energy[0] * (1 + 1e-6)
        return
    k = len(states)
    with pytest.raises(hooke.SimulationError) as info:
        quietly(hooke.simulate, scene, integrator=integrator, save_every=50, **options)
    message = str(info.value)
    assert message.startswith(f"the state became non-finite at step {k} (t = {k * 0.05:.6g}); "
                              "worst particle 1 (non-finite; ") and message.endswith(ADVICE)
    partial = info.value.result
    assert_last_frame_is(partial, states[-1])
    grid = partial.energy["total"][:-1]  # the frames every 50 steps: the energy grows
    grid = grid[np.isfinite(grid)]  # (till ½v² overflows)
    assert grid.size >= 3 and np.all(grid[1:] > grid[:-1])


def test_adaptive_rk45_reports_its_step_size_underflow_at_the_non_finite_time():
    """Adaptive steps shrink towards T_NAN until they underflow; the last accepted state, just
    before T_NAN, is written."""
    with pytest.raises(hooke.SimulationError) as info:
        quietly(hooke.simulate, nan_driven_chain(), integrator="rk45", save_every=7)
    assert str(info.value).startswith(
        "step 41 (t = 0.41) failed: rk45: step size underflow (h = ")
    assert "; the trial steps give non-finite states; worst particle 0 (non-finite; at t = " \
        "0.4075: |x|∞ = 12 m, |v|∞ = 0 m/s); 7 frame(s) kept, the last at t = 0.4075." \
        in str(info.value)
    partial = info.value.result
    assert T_NAN - 1e-12 < partial.t[-1] < T_NAN and np.isfinite(partial.x).all()


# -- the energy guard and Newton failures ----------------------------------------------------------

def test_energy_guard_names_the_exact_step_and_writes_its_state():
    """Explicit Euler multiplies the oscillator's energy by 1 + ω²h² = 1.25 per step:
    50 → 50·1.25⁴ = 122.07 J > 100 J at step 4, off the save grid of 3; the state there is
    (x, v) = (−0.4375 m, −15 m/s), kinetic energy 112.5 J."""
    scene = hooke.scene("oscillator")
    with pytest.raises(hooke.SimulationError) as info:
        hooke.simulate(scene, integrator="explicit_euler", dt=0.05, t_end=10.0, save_every=3,
                       max_energy_growth=2.0)
    assert str(info.value) == (
        "the total energy grew from 50 J to 122.07 J (more than the allowed factor 2 of the "
        "energy scale 50 J) at step 4 (t = 0.2); most energetic particle 1 (kinetic energy "
        f"112.5 J); 3 frame(s) kept, the last at t = 0.2. {ADVICE}")
    partial = info.value.result
    np.testing.assert_allclose(partial.t, [0.0, 0.15, 0.2], rtol=1e-15)
    np.testing.assert_allclose(partial.energy["total"], 50.0 * 1.25 ** np.array([0, 3, 4]))
    np.testing.assert_allclose(partial.x[-1, 1], [-0.4375], rtol=1e-14)
    np.testing.assert_allclose(partial.v[-1, 1], [-15.0], rtol=1e-14)
    assert not partial.complete
    bounded = hooke.simulate(scene, integrator="symplectic_euler", dt=0.05, t_end=10.0,
                             max_energy_growth=1.5)
    assert bounded.complete
    with pytest.raises(hooke.HookeInputError, match="max_energy_growth"):
        hooke.simulate(scene, max_energy_growth=0.5)


def test_an_energy_that_overflows_while_the_state_stays_finite_fails_the_run(tmp_path):
    """spring1d with k = 5e6 (m = 0.5, x0 = 2: E0 = 1e7 J) under explicit Euler at h = 0.01:
    the energy grows by 1 + ω²h² = 1001 per step, past the largest float at the first n with
    1e7·1001ⁿ > 1.8e308 (n = 101), while x and v stay finite up to t = 1.5 (|v| ~ 1e228 m/s).
    It was a complete run with an infinite energy (a sweep's row "ok", energy_error inf)."""
    n = int(np.ceil(np.log(np.finfo(float).max / 1e7) / np.log(1001.0)))
    assert n == 101
    with pytest.raises(hooke.SimulationError) as info:
        quietly(hooke.simulate, hooke.scene("spring1d", stiffness=5e6), integrator="explicit_euler",
                dt=0.01, t_end=1.5, store=tmp_path / "run.h5")
    message = str(info.value)
    assert message.startswith(f"the total energy overflowed to inf J at step {n} "
                              f"(t = {n * 0.01:.6g}); most energetic particle 1 (kinetic "
                              "energy inf J); 151 frame(s) kept, the last at t = 1.5. "), message
    assert message.endswith(ADVICE) and "\n" not in message
    partial = info.value.result
    assert not partial.complete and partial.n_frames == 151
    assert np.isfinite(partial.x).all() and np.isfinite(partial.v).all()
    total = partial.energy["total"]
    assert np.isfinite(total[:n]).all() and np.isinf(total[n])
    np.testing.assert_allclose(total[:n], 1e7 * 1001.0 ** np.arange(n), rtol=1e-12)
    stored = read_trajectory(tmp_path / "run.h5")
    assert stored["attrs"]["failure"] == message and not stored["attrs"]["complete"]
    np.testing.assert_array_equal(stored["x"], partial.x)


def swinging_spring(stiffness: float) -> hooke.Scene:
    """A pendulum spring at rest length, hanging, the mass moving sideways at 1 m/s."""
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    b.add_particle((0.0, 0.0), pinned=True)
    b.add_particle((0.0, -1.0), mass=1.0, velocity=(1.0, 0.0))
    b.add_spring(0, 1, stiffness=stiffness)
    return hooke.Scene(b.finalize(), integrator="implicit_euler", dt=0.01, t_end=1.0)


def test_newton_failure_in_implicit_euler_reports_its_residual_history():
    """A pendulum spring at rest length, hanging, the mass moving sideways at 1 m/s: Newton's
    first step from y = x is p = (h v_x, h²mg/(m + h²k)), so ‖p‖∞/h = 1 m/s exactly; a tolerance
    of 1e-10 (the spring stiff enough to keep it from round-off) cannot be met in 2 iterations."""
    scene = swinging_spring(stiffness=1e4)
    with pytest.raises(hooke.SimulationError) as info:
        hooke.simulate(scene, tol=1e-10, max_iterations=2)
    message = str(info.value)
    prefix = ("step 1 (t = 0.01) failed: implicit_euler: Newton did not converge in 2 iterations "
              "at t = 0 (‖p‖∞/h, last: 1.000e+00, ")
    assert message.startswith(prefix), message
    history, rest = message[len(prefix) - len("1.000e+00, "):].split("; tol = 1e-10); ", 1)
    residuals = [float(r) for r in history.split(", ")]
    assert len(residuals) == 3 and 0 < residuals[2] < residuals[1] < residuals[0]
    assert residuals[2] <= 10 * residuals[1] ** 2  # Newton's quadratic convergence
    assert rest == ("try a smaller dt; worst particle 1 (at t = 0: |x|∞ = 1 m, |v|∞ = 1 m/s); "
                    "1 frame(s) kept, the last at t = 0. Try a smaller dt or another implicit "
                    "integrator (implicit_euler_linear).")
    assert_last_frame_is(info.value.result, scene.state)


@pytest.mark.parametrize("compiled", [True, False])
def test_newton_stopped_at_round_off_names_tol_not_dt(monkeypatch, compiled):
    """Issue 15: a Newton failure whose last residual is round-off of the positions said "try a
    smaller dt", which only raises it (tol = 1e-300 ran into it; now refused up front, but
    positions may grow past the start's scale, or tol sit a few round-offs above it). The
    pendulum of the test above at its softer spring reaches 4.8e-14 m/s, round-off of |x| = 1 m
    at dt = 0.01 s, in 2 iterations, above tol = 3e-14."""
    from hooke.integrators import implicit

    monkeypatch.setattr(implicit, "COMPILED", compiled)
    scene = swinging_spring(stiffness=100.0)
    with pytest.raises(hooke.SimulationError) as info:
        hooke.simulate(scene, tol=3e-14, max_iterations=2)
    message = str(info.value)
    assert "implicit_euler: Newton did not converge in 2 iterations" in message, message
    assert "ry a smaller dt" not in message, message  # (try, Try)
    assert message.endswith("1 frame(s) kept, the last at t = 0. Raise tol to at least 1.42e-12: "
                            "the last residual is round-off of the positions (|y|∞ = 1 m at dt "
                            "= 0.01 s), which a smaller dt only raises."), message


def test_newton_that_runs_out_while_converging_linearly_names_max_iterations():
    """Stop 33: cloth_drop at tol 1e-9 ran out of its 100 iterations at step 26 while its
    PSD-projected contact Hessian converged linearly (×0.83 an iteration, 5.2e-9 … 1.4e-9), and
    said "try a smaller dt" twice; the count its rate needs finishes the step."""
    from hooke.integrators.implicit import linear_rate

    scene = hooke.scene("cloth_drop")
    with pytest.raises(hooke.SimulationError) as info:
        hooke.simulate(scene, t_end=0.26, tol=1e-9)
    message = str(info.value)
    assert "ry a smaller dt" not in message, message
    found = re.search(r"Raise max_iterations \(now 100; this step needs about (\d+)\) or tol: "
                      r"Newton was still converging, linearly \(×0\.8\d an iteration at most "
                      r"over its last 6\)\.$", message)
    assert found, message
    result = hooke.simulate(scene, t_end=0.26, tol=1e-9, max_iterations=int(found.group(1)))
    assert result.complete and result.t[-1] == pytest.approx(0.26)
    assert linear_rate([1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625]) == 0.5
    assert linear_rate([1.0, 0.5, 0.25, 0.3, 0.0625, 0.03125, 0.015625]) is None  # not steady
    assert linear_rate([0.5, 0.25, 0.125]) is None  # too few to tell


@pytest.mark.parametrize("parameter", ["mass", "damping"])
def test_a_step_whose_numbers_overflow_names_the_models_scale_not_dt(parameter):
    """Issue 15 (the viewer's red-team pass): cloth_drop with a mass or damping of 1e308 failed
    at step 1 with SciPy's words ("ValueError: array must not contain infs or NaNs") and "Try a
    smaller dt", which cannot help; now the overflow, the model's largest numbers and the
    advice that can."""
    scene = hooke.scene("cloth_drop", **{parameter: 1e308})
    with pytest.raises(hooke.SimulationError) as info:
        hooke.simulate(scene, t_end=3 * scene.dt)
    largest = {"mass": "mass 1e+308 kg, stiffness 500 N/m, damping 0 N·s/m",
               "damping": "mass 0.01 kg, stiffness 500 N/m, damping 1e+308 N·s/m"}[parameter]
    message = str(info.value)
    assert message.startswith("step 1 (t = 0.01) failed: implicit_euler: a number inside the "
                              "step overflowed to inf or NaN from a finite state (largest "
                              f"{largest}); worst particle ")
    assert message.endswith("; 1 frame(s) kept, the last at t = 0. Give the model numbers of a "
                            "smaller scale (other units).")
    assert np.all(np.isfinite(info.value.result.x))

def test_a_step_that_blows_up_inside_says_so_not_only_in_pythons_words():
    """Issue 15 (red-team pass, stop 28): a press driven at 1e300 m/s failed with "ValueError:
    array must not contain infs or NaNs", and a joint whose two ends met in a blown-up explicit
    step with "ZeroDivisionError: division by zero", words that say nothing of what happened;
    now the step says a number inside it became inf or NaN (a blow-up), keeps the error's own
    words in brackets, and the advice stays the one that can help. From a state that is not
    finite itself, the error's words are left alone."""
    built = hooke.scene("square_press", speed=1e300)
    with pytest.raises(hooke.SimulationError) as info:
        hooke.simulate(built, t_end=20 * built.dt)
    message = str(info.value)
    assert "\n" not in message and ". Try a smaller dt or " in message
    assert ("implicit_euler: a number inside the step became inf or NaN: the motion blew up "
            "(ValueError: array must not contain infs or NaNs)") in message
    assert np.all(np.isfinite(info.value.result.x))
    chain = hooke.scene("jointed_chain")
    stepper = hooke.get_integrator("explicit_euler")(hooke.System(chain.model), 0.5)
    assert stepper.failed(ZeroDivisionError("division by zero"), chain.state).reason == (
        "explicit_euler: a number inside the step became inf or NaN: the motion blew up "
        "(ZeroDivisionError: division by zero)")
    v = chain.state.v.copy()
    v[1, 0] = np.nan
    unfinite = hooke.State(chain.state.t, chain.state.x, v)
    assert stepper.failed(ZeroDivisionError("division by zero"), unfinite).reason == (
        "explicit_euler: ZeroDivisionError: division by zero")


def test_a_line_search_without_decrease_is_a_newton_failure_not_a_silent_step(monkeypatch):
    """An incremental potential that evaluates to NaN gives the line search no decrease. That
    used to end Newton after 0 iterations and return the start point as the step; now it is
    reported. spring1d's first residual is h k x0 / (m + h²k) = 0.05 / 0.500125 m/s. The generic
    path, whose potential can be patched (the compiled one: tests/test_implicit_compiled.py)."""
    from hooke.integrators import implicit

    monkeypatch.setattr(implicit, "COMPILED", False)
    monkeypatch.setattr(implicit.ImplicitEuler, "incremental_potential",
                        lambda *args, **kwargs: np.nan)
    with pytest.raises(hooke.SimulationError) as info:
        hooke.simulate(hooke.scene("spring1d"), integrator="implicit_euler", t_end=0.1)
    assert str(info.value).startswith(
        "step 1 (t = 0.005) failed: implicit_euler: Newton did not converge in its first "
        "iteration at "
        f"t = 0 (the line search found no decrease; ‖p‖∞/h, last: {0.05 / 0.500125:.3e}; "
        "tol = 0.01); try a smaller dt; worst particle 1 ")


# -- the command line ------------------------------------------------------------------------------

def test_cli_blow_up_prints_no_warnings_and_writes_strict_json(tmp_path):
    (tmp_path / "stiff.toml").write_text(STIFF_SCENE)
    states, _ = step_directly(hooke.load(tmp_path / "stiff.toml"), "explicit_euler", 1000)
    k = len(states)
    done = cli("run", str(tmp_path / "stiff.toml"), "--save-every", "50", "--out",
               str(tmp_path / "out"))
    assert done.returncode == 1
    assert "Warning" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"error: the state became non-finite at step {k} "
                                  f"(t = {k * 0.1:.6g}); worst particle 1"), done.stderr

    def no_constants(name):
        raise AssertionError(f"summary.json holds {name}")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(),
                         parse_constant=no_constants)
    with np.errstate(over="ignore"):  # ½v² of the last finite state overflows: null in JSON
        assert np.isinf(0.5 * states[-1].v[1, 0] ** 2)
    assert summary["energy_initial_J"] == 5000.0
    for key in ("energy_final_J", "energy_change_J", "energy_change_relative", "energy_scale_J",
                "energy_relative_to"):
        assert summary[key] is None, key
    assert summary["frames"] == (k - 1) // 50 + 2 and summary["complete"] is False
    assert "5000 → not finite J" in done.stdout and "nan" not in done.stdout


# -- reproducible files ----------------------------------------------------------------------------

def cloth_scene(n: int, t_end: float) -> str:
    """The built-in cloth scene file with n particles per side, run for t_end."""
    from importlib.resources import files

    text = (files("hooke.scenes") / "cloth.toml").read_text()
    text = text.replace("\nn = 100 ", f"\nn = {n} ").replace("\nt_end = 0.5", f"\nt_end = {t_end}")
    assert f"n = {n} " in text and f"t_end = {t_end}" in text
    return text


def test_cli_runs_write_identical_bytes_across_runs_and_thread_counts(tmp_path):
    """A 64 × 64 cloth (16,002 springs: the parallel kernels) for 5 steps, with 1 and 2 Numba
    threads and SOURCE_DATE_EPOCH set: trajectory.h5 is the same file byte for byte, and
    summary.json differs only in wall_time_s."""
    scene = tmp_path / "cloth64.toml"
    scene.write_text(cloth_scene(64, 1e-3))
    for threads in ("1", "2"):
        done = cli("run", str(scene), "--out", str(tmp_path / threads),
                   env={"SOURCE_DATE_EPOCH": "1700000000", "NUMBA_NUM_THREADS": threads})
        assert done.returncode == 0, done.stderr
    one, two = tmp_path / "1", tmp_path / "2"
    assert (one / "trajectory.h5").read_bytes() == (two / "trajectory.h5").read_bytes()
    with h5py.File(one / "trajectory.h5") as handle:
        assert handle.attrs["created"] == "2023-11-14T22:13:20+00:00"
        assert handle["model/spring_indices"].shape == (16002, 2)
        assert handle["frames/x"].shape == (6, 4096, 3)
    summaries = [json.loads((out / "summary.json").read_text()) for out in (one, two)]
    assert summaries[0].pop("wall_time_s") >= 0 and summaries[1].pop("wall_time_s") >= 0
    assert summaries[0] == summaries[1]


def test_without_source_date_epoch_only_created_differs(tmp_path, monkeypatch):
    scene = hooke.scene("chain")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    hooke.simulate(scene, t_end=0.05, store=tmp_path / "epoch.h5")
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    hooke.simulate(scene, t_end=0.05, store=tmp_path / "now.h5")
    a, b = read_trajectory(tmp_path / "epoch.h5"), read_trajectory(tmp_path / "now.h5")
    assert a["attrs"]["created"] == "1970-01-01T00:00:00+00:00" != b["attrs"]["created"]
    assert {key for key in a["attrs"] if not np.array_equal(a["attrs"][key], b["attrs"][key])} \
        == {"created"}
    for key in ("t", "x", "v"):
        np.testing.assert_array_equal(a[key], b[key])


def test_a_bad_source_date_epoch_is_a_clear_error(tmp_path, monkeypatch):
    """(Set before the process starts, NumPy's f2py, which SciPy imports, already refuses it.)"""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with pytest.raises(hooke.HookeInputError) as info:
        hooke.simulate(hooke.scene("spring1d"), t_end=0.01, store=tmp_path / "run.h5")
    assert str(info.value) == ("SOURCE_DATE_EPOCH: must be an integer number of seconds since "
                               "1970-01-01 UTC, got 'yesterday'")


NOT_AN_INTEGER = "must be an integer number of seconds since 1970-01-01 UTC"
TOO_LARGE = "must be within a signed 64-bit number of seconds (|value| < 2**63)"


@pytest.mark.parametrize("epoch, problem", [("abc", NOT_AN_INTEGER), ("1.5", NOT_AN_INTEGER),
                                            (" 5", NOT_AN_INTEGER),
                                            ("99999999999999999999", TOO_LARGE)])
def test_a_bad_source_date_epoch_never_gives_a_traceback(tmp_path, epoch, problem):
    """NumPy's f2py, which SciPy imports with hooke, reads SOURCE_DATE_EPOCH itself and raised a
    raw ValueError or OverflowError before hooke could check it: every command runs (hooke list
    does not use it) or, where a trajectory is written, refuses it in one line before touching
    the output."""
    done = cli("list", env={"SOURCE_DATE_EPOCH": epoch})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    done = cli("run", "spring1d", "--out", str(tmp_path), env={"SOURCE_DATE_EPOCH": epoch})
    assert done.returncode == 2 and done.stderr.splitlines() == [
        f"error: SOURCE_DATE_EPOCH: {problem}, got {epoch!r}"]
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("epoch, date", [("253402300799", "9999-12-31T23:59:59+00:00"),
                                         ("253402300800", "10000-01-01T00:00:00+00:00"),
                                         ("0", "1970-01-01T00:00:00+00:00"),
                                         ("-1", "1969-12-31T23:59:59+00:00")])
def test_source_date_epoch_past_the_year_9999_is_a_valid_date(tmp_path, epoch, date):
    done = cli("run", "spring1d", "--t-end", "0.1", "--out", str(tmp_path),
               env={"SOURCE_DATE_EPOCH": epoch})
    assert done.returncode == 0, done.stderr
    assert read_trajectory(tmp_path / "trajectory.h5", frames=0)["attrs"]["created"] == date
