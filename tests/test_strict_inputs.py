"""Strict inputs, clear errors (issue 15): bad input is one line naming the field or argument and
the value (API: HookeInputError; CLI: that line on stderr, exit 2, no traceback), never a silent
wrong result, a NaN or a hang. These cases are the ones tests/test_bad_input.py did not reach:
prescribed motions that turn non-finite during a run, the start time of a state, tolerances
float64 cannot honour, the plotting and movie arguments, and the wording of a few messages."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import numpy as np
import pytest

import hooke
from hooke.errors import format_value
from hooke.motion import FunctionMotion

from conftest import run_cli, run_main


def one_line(call, field: str) -> str:
    """Run ``call``; it must raise a one-line HookeInputError starting with ``field: ``."""
    with pytest.raises(hooke.HookeInputError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{field}: "), message
    return message


# -- 1. prescribed motions that turn non-finite ----------------------------------------------------

T_BAD = 0.05  # the motions below are NaN from this time on


def nan_from_t_bad(t):
    value = 0.0 if t < T_BAD else np.nan
    return np.full(2, value), np.zeros(2), np.zeros(2)


def falling_onto(plane_motion=None, pin_motion=None) -> hooke.Scene:
    """A particle falling towards a plane (with ``plane_motion``) or hanging from a pinned
    particle 1 (with ``pin_motion``)."""
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    b.add_particle((0.0, 1.0), mass=1.0)
    if plane_motion is not None:
        b.add_plane((0.0, 1.0), (0.0, 0.0), motion=plane_motion)
        return hooke.Scene(b.finalize(), integrator="implicit_euler", dt=0.01, t_end=0.1)
    b.add_particle((0.0, 2.0), pinned=True, motion=pin_motion)
    b.add_spring(0, 1, stiffness=10.0)
    return hooke.Scene(b.finalize(), integrator="rk4", dt=0.01, t_end=0.1)


def test_a_plane_whose_motion_turns_nan_is_named_with_the_time(tmp_path):
    """It was a silent wrong result: the plane stopped acting and the run completed."""
    message = one_line(lambda: hooke.simulate(falling_onto(plane_motion=nan_from_t_bad),
                                              store=tmp_path / "run.h5"), "planes[0].motion")
    assert message.startswith("planes[0].motion: returned a non-finite u at t = 0.05"), message
    assert message.endswith("got [nan, nan]"), message
    assert not hooke.open(tmp_path / "run.h5").complete  # the store was closed, as failed


def test_a_pinned_particle_whose_motion_turns_nan_is_named_as_in_scene_files():
    """It was "the state became non-finite … Try a smaller dt": the motion was not named."""
    with pytest.raises(hooke.HookeInputError) as info:
        hooke.simulate(falling_onto(pin_motion=nan_from_t_bad))
    message = str(info.value)
    assert message.startswith("particles[1].motion: returned a non-finite u at t = 0.05"), message
    partial = info.value.result  # the frames before it are kept
    assert partial.t[-1] < T_BAD and np.isfinite(partial.x).all()


def test_a_motion_of_the_wrong_shape_later_on_is_named():
    def grows(t):
        n = 2 if t < T_BAD else 3
        return np.zeros(n), np.zeros(n), np.zeros(n)
    message = one_line(lambda: hooke.simulate(falling_onto(pin_motion=grows)), "particles[1].motion")
    assert "must return u of shape (2,) at t = 0.05" in message and message.endswith("got (3,)")


def test_a_motion_whose_value_is_not_numbers_is_named():
    def words(t):
        return ["up", "down"], np.zeros(2), np.zeros(2)
    message = one_line(lambda: hooke.simulate(falling_onto(pin_motion=words)), "particles[1].motion")
    assert "could not be evaluated at t = 0.0 (could not convert string to float: 'up')" in message


def scene_file(tmp_path, integrator: str, second: str = "", options: str = "",
               first: str = "pinned = true") -> Path:
    """A 2D scene file of two particles (``first`` and ``second``: their extra lines) on a
    spring, run by ``integrator`` with ``options`` (lines of [run.options])."""
    path = tmp_path / "scene.toml"
    path.write_text(textwrap.dedent(f"""
        dim = 2
        [run]
        integrator = "{integrator}"
        dt = 0.01
        t_end = 0.1
        [run.options]
        {options}
        [[particles]]
        x = [0.0, 0.0]
        {first}
        [[particles]]
        x = [1.0, 0.0]
        {second}
        [[springs]]
        i = 0
        j = 1
        stiffness = 10.0
    """))
    return path


def test_a_scene_files_pinned_motion_has_the_scene_files_field_name(tmp_path):
    path = scene_file(tmp_path, "rk4", first="", second='motion = { type = "sinusoid", '
                      'amplitude = 0.1, direction = [1.0, 0.0], omega = 1e150 }')
    scene = hooke.load(path)
    (index, motion), = scene.model.pinned_motions
    assert (index, motion.field) == (1, "particles[1].motion")
    # omega·t overflows to inf once t > 1.8e158: sin(inf) is NaN
    message = one_line(lambda: motion(1e160), "particles[1].motion")
    assert "non-finite u at t = 1e+160" in message


# -- 2. the start time of a state ------------------------------------------------------------------

def spring_with_start(t, dt=0.001, t_end=0.01) -> hooke.Scene:
    model = hooke.scene("spring1d").model
    return hooke.Scene(model, integrator="rk4", dt=dt, t_end=t_end,
                       state=hooke.State(t, model.x0.copy(), model.v0.copy()))


@pytest.mark.parametrize("t, problem", [
    (float("nan"), "must be finite, got nan"), (float("inf"), "must be finite, got inf"),
    (True, "must be a number, got True"), ("0", "must be a number, got '0'")])
def test_a_start_time_that_is_not_a_finite_number_is_refused(t, problem):
    assert one_line(lambda: spring_with_start(t), "state.t") == f"state.t: {problem}"


def test_max_frames_given_with_save_every_is_refused_not_dropped(tmp_path, monkeypatch, capsys):
    """simulate(save_every=1, max_frames=5) kept 101 frames of 100 steps: max_frames was
    dropped in silence. `hooke run --save-every N` (which passes its frame budget only without
    it) keeps its N."""
    scene = hooke.scene("spring1d")
    message = one_line(lambda: hooke.simulate(scene, dt=0.01, t_end=1.0, save_every=1,
                                              max_frames=5), "max_frames")
    assert message == ("max_frames: cannot be given with save_every, which sets the frames "
                       "itself: give one of them, got 5")
    assert hooke.simulate(scene, dt=0.01, t_end=1.0, max_frames=5).n_frames == 6
    code, _ = run_main(monkeypatch, capsys, "run", "spring1d", "-q", "--dt", "0.01", "--t-end",
                       "1", "--save-every", "50", "--out", str(tmp_path))
    assert code in (0, None) and hooke.open(tmp_path / "trajectory.h5").n_frames == 3


def test_a_start_time_too_large_for_its_steps_is_refused():
    """At t = 1e300, t + dt == t: the run would stand still (it silently did)."""
    message = one_line(lambda: spring_with_start(1e300), "state.t")
    assert "steps of dt = 0.001" in message and message.endswith("got 1e+300")
    scene = spring_with_start(1e6)  # a step keeps dt to 1e-7 of itself: fine
    assert hooke.simulate(scene).t[-1] == pytest.approx(1e6 + 0.01, abs=1e-9)
    # a smaller dt given to simulate is checked too
    one_line(lambda: hooke.simulate(scene, dt=1e-9, t_end=1e-8), "state.t")
    # stop 29 (red-team pass): a run to the last float64 blamed state.t (0) with "times near it
    # are inf s apart"; one past it (t = 1e308, t_end = 1e308: an end of inf) was not refused here
    largest = np.finfo(float).max
    spring = hooke.scene("spring1d")
    message = one_line(lambda: hooke.simulate(spring, dt=largest, t_end=largest), "t_end")
    assert "to the end of float64 (|t| + t_end = 1.79769e+308 s)" in message
    far = spring_with_start(1e308, dt=1e308, t_end=1e308)
    message = one_line(lambda: hooke.simulate(far), "t_end")
    assert "from t = 1e+308 s to the end of float64 (|t| + t_end = inf s)" in message


@pytest.mark.parametrize("call, field", [
    (lambda system, x, v: system.force(x[:2], v), "x"),  # heap corruption in the fused kernel
    (lambda system, x, v: system.acceleration(x, v[:2]), "v"),  # read past the end: taken
    (lambda system, x, v: system.potential_energy(x.ravel()), "x"),  # a Numba TypingError
    (lambda system, x, v: system.potential_gradient("x"), "x"),
    (lambda system, x, v: system.kinetic_energy(v[:2]), "v"),  # a broadcasting ValueError
    (lambda system, x, v: system.potential_energies(x + 0j), "x"),
    (lambda system, x, v: system.generic_force(x, None), "v")])
def test_a_system_refuses_positions_of_the_wrong_shape(call, field):
    """System's compiled spring kernels index x and v by the springs' particles unchecked: a
    chain's force at a (2, 2) x (of its 4 particles) read and wrote past the array's end, which
    glibc found later as "corrupted size vs. prev_size", and its acceleration at a (2, 2) v was
    returned. A shape other than (particles, dim), or no numbers, is one line naming it."""
    scene = hooke.scene("chain", n=3)
    system = hooke.System(scene.model)
    x, v = scene.model.x0.copy(), np.ones_like(scene.model.x0)
    message = one_line(lambda: call(system, x, v), field)
    assert message.startswith(f"{field}: must be an array of numbers of shape (4, 2) (particles, "
                              "dim)"), message
    np.testing.assert_array_equal(system.force(x.tolist(), v), system.force(x, v))
    assert one_line(lambda: hooke.System(scene), "model").endswith("got 'Scene'")


@pytest.mark.parametrize("change, field, value", [
    (dict(spring_indices=np.array([[0, 50], [1, 2], [2, 3]])), "spring_indices", "[0, 50]"),
    (dict(spring_indices=np.array([[0.0, 1.0], [1.0, 2.0], [2.0, 3.0]])), "spring_indices",
     "'float64'"),
    (dict(spring_stiffness=np.ones(1)), "spring_stiffness", "(1,)"),
    (dict(mass=-np.ones(4)), "mass[0]", "-1.0"),
    (dict(mass=[1.0] * 4), "mass", "[1.0, 1.0, 1.0, 1.0]"),
    (dict(x0=np.zeros((2, 2))), "x0", "(2, 2)"),
    (dict(joint_length=np.ones(2)), "joint_length", "(2,)"),
    # with contact: a face of surface 99 of 2 read a friction past the array's end, and ran
    (dict(surface_of_face=np.full(16, 99)), "surface_of_face", "(16,)"),
    (dict(plane_friction=np.zeros(0)), "plane_friction", "(0,)"),  # ran as well
    (dict(contact_area=np.ones(3)), "contact_area", "(3,)"),  # a broadcasting ValueError
    # red-team pass (redF): these ran, the barrier's d̂ of −1 or NaN unnoticed, and d̂ = 1e300
    # failed at step 1 as "the motion blew up … try a smaller dt"
    (dict(contact_dhat=-1.0), "contact_dhat", "-1.0"), (dict(contact_dhat=np.nan), "contact_dhat",
                                                        "nan"),
    (dict(contact_dhat=1e300), "contact_dhat", "1e+300"),
    (dict(contact_kappa=0.0), "contact_kappa", "0.0"),
    (dict(contact_epsv="1e-3"), "contact_epsv", "'1e-3'"),
    # stop 31: these values ran (a normal of length 2 doubles every distance to its plane)
    (dict(drag=np.full(4, np.nan)), "drag[0]", "nan"), (dict(wind=np.array([np.inf, 0.0])),
                                                        "wind[0]", "inf"),
    (dict(contact_area=np.full(18, np.nan)), "contact_area[0]", "nan"),
    (dict(plane_normals=np.array([[0.0, 2.0]]), plane_points=np.zeros((1, 2)),
          plane_friction=np.zeros(1)), "plane_normals[0]", "[0.0, 2.0]"),
    (dict(plane_normals=np.array([[0.0, 1.0]]), plane_points=np.zeros((1, 2)),
          plane_friction=-np.ones(1)), "plane_friction[0]", "-1.0"),
    (dict(spring_energy="cubic"), "spring_energy", "'cubic'")])
def test_a_model_made_directly_is_checked_as_the_builder_checks(change, field, value):
    """hooke.Model(...) (or dataclasses.replace of one) checked nothing: a spring to particle
    50 of 4 failed inside a step ("provided out is the wrong size for the accumulation"), float
    indices were a Numba TypingError, a short stiffness array an IndexError, a list
    "'list' object has no attribute 'setflags'", and negative masses ran."""
    import dataclasses

    contact = (field in ("surface_of_face", "plane_friction", "contact_area[0]")
               or field.startswith("contact_"))
    model = (hooke.scene("squares_self_contact") if contact else hooke.scene("chain", n=3)).model
    message = one_line(lambda: dataclasses.replace(model, **change), field)
    assert message.endswith(f"got {value}"), message


@pytest.mark.parametrize("t", ["1", True, float("nan"), -math.inf, None])
def test_an_initial_state_takes_a_finite_number_as_its_time(t):
    """model.initial_state(t="1") was a State at t = 1.0 (float() read the string), and t=nan
    a State whose run then failed on its time."""
    model = hooke.scene("spring1d").model
    assert one_line(lambda: model.initial_state(t), "t").endswith(f"got {t!r}")
    assert model.initial_state(np.float64(2.5)).t == 2.5


def test_a_state_that_is_not_a_state_is_refused():
    model = hooke.scene("spring1d").model
    message = one_line(lambda: hooke.Scene(model, state=(0.0, model.x0, model.v0)), "state")
    assert message.endswith("got 'tuple'")


# -- 3. tolerances float64 cannot honour -----------------------------------------------------------

def rk45(**options):
    return hooke.simulate(hooke.scene("oscillator"), integrator="rk45", t_end=0.1, **options)


@pytest.mark.parametrize("options, field, bound", [
    (dict(rtol=1e-300, atol=1e-300), "rtol", "2.22e-14"),  # it hung: a NaN step size
    (dict(rtol=1e-15), "rtol", "2.22e-14"),
    (dict(atol=1e-320), "atol", "2.23e-308")])  # a subnormal: ZeroDivisionError in the start
def test_rk45_refuses_tolerances_below_what_float64_honours(options, field, bound):
    message = one_line(lambda: rk45(**options), field)
    assert f"must be at least {bound}" in message
    assert message.endswith(f"got {options[field]!r}")


@pytest.mark.parametrize("rtol", [1.0, 5.0, 1e300])
def test_rk45_refuses_a_relative_tolerance_of_one_or_more(rtol):
    """rtol = 5 (a mistyped 1e-5, say) ran and accepted steps whose error is several times the
    solution itself, as SciPy's solve_ivp does: no digit of the result was controlled."""
    message = one_line(lambda: rk45(rtol=rtol), "rtol")
    assert message == (f"rtol: must be below 1 for integrator 'rk45' (a relative error of 100 % "
                       f"controls no digit of the solution), got {rtol!r}")
    assert rk45(rtol=0.5).complete  # loose, but a tolerance


@pytest.mark.parametrize("scene, atol, bound", [("oscillator", 1e308, "1"), ("spring1d", 2.0, "2"),
                                                ("chain", 1e10, "1")])
def test_rk45_refuses_an_absolute_tolerance_as_large_as_the_model(scene, atol, bound):
    """redL: atol = 1e308 ran, every step accepted whatever its error: a run of no accuracy at
    all. An atol of the model's size (spring1d: 2 m) or more, or of 1 m for a smaller model,
    is refused as rtol >= 1 is."""
    message = one_line(lambda: hooke.simulate(hooke.scene(scene), integrator="rk45", t_end=0.1,
                                              atol=atol), "atol")
    assert message == (f"atol: must be below {bound} for integrator 'rk45' here (the model's size "
                       "in m, or 1: an absolute error as large as the model controls no digit of "
                       f"its positions), got {atol!r}")
    assert rk45(atol=0.5).complete  # loose, but a tolerance


@pytest.mark.parametrize("integrator, options, key, reason", [
    ("symplectic_euler", dict(stabilization="projection", k_c=5.0), "k_c",
     "stabilization = 'projection' (a gain of stabilization 'correction')"),
    ("rk4", dict(stabilization="baumgarte", beta_c=1.0), "beta_c",
     "stabilization = 'baumgarte' (a gain of stabilization 'correction')"),
    ("rk45", dict(stabilization="correction", baumgarte_alpha=3.0), "baumgarte_alpha",
     "stabilization = 'correction' (a gain of stabilization 'baumgarte')"),
    ("rk45", dict(adaptive=False, atol=1e-3), "atol", "adaptive = false (fixed steps of dt)"),
    ("rk45", dict(adaptive=False, first_step=1e-3), "first_step",
     "adaptive = false (fixed steps of dt)")])
def test_an_option_that_has_no_effect_in_its_configuration_is_refused(integrator, options, key,
                                                                     reason):
    """redL: -O k_c=5 with stabilization "projection" (or rk45's rtol with adaptive=false) ran
    exactly as without it, in silence: the user's setting did nothing."""
    pendulum = hooke.scene("pendulum")
    message = one_line(lambda: hooke.simulate(pendulum, integrator=integrator, t_end=0.01,
                                              **options), key)
    assert message == (f"{key}: has no effect in integrator '{integrator}' with {reason}; leave "
                       f"it out, got {options[key]!r}")


def test_a_scenes_own_option_made_inert_by_one_given_is_dropped_and_defaults_pass():
    """pendulum's own rtol = atol = 1e-4 take no part with adaptive=false: they are dropped, not
    blamed on the user; a gain given at its default changes nothing and passes (a stored run's
    options hold every default)."""
    run = hooke.simulate(hooke.scene("pendulum"), t_end=0.01, adaptive=False)
    assert run.options["rtol"] == 1e-6 and run.options["adaptive"] is False
    run = hooke.simulate(hooke.scene("spring1d"), t_end=0.01, k_c=0.03, baumgarte_beta=10.0)
    assert run.options["stabilization"] == "projection" and run.complete


def test_a_scene_files_own_inert_option_is_refused_by_check(tmp_path):
    path = tmp_path / "inert.toml"
    path.write_text('dim = 1\n[[particles]]\nx = [0.0]\n[run]\nintegrator = "rk4"\n'
                    'dt = 0.01\nt_end = 0.1\n[run.options]\nk_c = 5.0\n')
    done = run_cli("check", str(path))
    assert done.returncode == 2 and done.stderr == (
        "error: k_c: has no effect in integrator 'rk4' with stabilization = 'projection' (a gain "
        "of stabilization 'correction'); leave it out, got 5.0\n")


@pytest.mark.parametrize("integrator", ["newmark", "generalized_alpha"])
@pytest.mark.parametrize("tol", [1.0, 2.5, 1e308])
def test_an_alpha_methods_tol_of_one_or_more_is_refused(integrator, tol):
    """Their tol bounds the residual relative to the largest force: at tol >= 1 the predictor
    passed, no Newton iteration was taken (0 in the stats) and a 6-link chain ended 1.04 m
    from its converged run, in silence."""
    chain = hooke.scene("chain", n=6)
    message = one_line(lambda: hooke.simulate(chain, integrator=integrator, dt=0.01, t_end=0.5,
                                              tol=tol), "tol")
    assert message.startswith(f"tol: must be below 1 for integrator '{integrator}'")
    assert message.endswith(f"got {tol!r}")
    run = hooke.simulate(chain, integrator=integrator, dt=0.01, t_end=0.5, tol=0.5)
    assert run.stats["newton_iterations"] > 0


def test_rk45_at_its_tightest_tolerances_finishes():
    result = rk45(rtol=2.3e-14, atol=1e-300)
    assert result.complete and np.isfinite(result.x).all()


@pytest.mark.parametrize("key, value, t_end, reason", [
    # 20 s to "step size underflow … the tolerances cannot be met"
    ("max_step", 1e-300, 0.1, "must be at least 1e-09 s for integrator 'rk45' here (steps of at "
                              "most max_step would take more than the 1e+08 a run may have to "
                              "cover its 0.1 s)"),
    # 1e10 steps: "the model is too stiff for rk45 here: take an implicit integrator"
    ("max_step", 1e-9, 10.0, "must be at least 1e-07 s for integrator 'rk45' here (steps of at "
                             "most max_step would take more than the 1e+08 a run may have to "
                             "cover its 10 s)"),
    ("max_step", 1e-17, 1e-9, "must be above 1e-14 s for integrator 'rk45' here (a step that "
                              "short is lost in the round-off of t = 1e-09 s)"),
    ("first_step", 1e-20, 0.1, "must be above 1e-14 s for integrator 'rk45' here (a step that "
                               "short is lost in the round-off of t = 0 s)")])
def test_rk45_refuses_steps_that_cannot_finish_the_run(key, value, t_end, reason):
    """A max_step that cannot reach t_end in the steps a run may have, or a step lost in the
    round-off of t, was blamed on the model's stiffness or on the tolerances once the run had
    started; it is refused up front."""
    message = one_line(lambda: hooke.simulate(hooke.scene("oscillator"), integrator="rk45",
                                              t_end=t_end, dt=min(0.01, t_end), **{key: value}),
                       key)
    assert message == f"{key}: {reason}, got {value!r}"
    assert hooke.simulate(hooke.scene("oscillator"), integrator="rk45", t_end=0.1,
                          first_step=1e-13).complete  # above the underflow: taken
    one_line(lambda: hooke.simulate(hooke.scene("oscillator"), integrator="rk45", t_end=0.1,
                                    max_step=1e-300, adaptive=False), "max_step")  # unused: refused


def test_implicit_euler_refuses_a_tolerance_below_the_positions_round_off():
    """tol = 1e-300 m/s ran 100 Newton iterations at ‖p‖∞/h = 8.6e-16 (round-off of positions
    of 1 m at dt = 0.01 s) to fail with "try a smaller dt", which makes it worse."""
    scene = hooke.scene("oscillator")  # |x0|∞ = 1 m, dt = 0.01 s
    message = one_line(lambda: hooke.simulate(scene, integrator="implicit_euler", t_end=0.1,
                                              tol=1e-300), "tol")
    assert message == ("tol: must be at least 2.22e-14 for integrator 'implicit_euler' (tol × dt, "
                       "the Newton step it accepts, cannot be shown below the round-off ε·|x|∞ "
                       "of positions of 1 m at dt = 0.01 s), got 1e-300")
    assert hooke.simulate(scene, integrator="implicit_euler", t_end=0.1, tol=3e-14).complete


def test_rk45_step_sizes_that_are_not_numbers_end_in_one_message(monkeypatch):
    """Whatever made the trial step NaN (it was the starting estimate of 1e-300 tolerances),
    the step loops end with a step size underflow instead of looping forever."""
    from hooke.integrators import adaptive

    monkeypatch.setattr(adaptive.DormandPrince45, "_initial_step", lambda *args: float("nan"))
    for compiled in (True, False):
        if not compiled:
            monkeypatch.setattr(adaptive.adaptive_compiled, "build", lambda *args: None)
        with pytest.raises(hooke.SimulationError, match="rk45: step size underflow .h = nan"):
            rk45()


# -- 4. plotting and movie arguments, before any drawing -------------------------------------------

@pytest.fixture(scope="module")
def spring_run():
    return hooke.simulate(hooke.scene("spring1d"), t_end=0.1)


def plot_cases(tmp_path):
    from hooke.viz import plots

    return [
        (lambda r: plots.energy_plot(r, 3), "path", "must be a path", "3"),
        (lambda r: plots.energy_plot(r, tmp_path), "path", "is a directory", f"'{tmp_path}'"),
        (lambda r: plots.energy_plot(r, tmp_path / "e.txt"), "path", "must end in one of .",
         f"'{tmp_path / 'e.txt'}'"),
        (lambda r: plots.energy_plot("run"), "result", "must be a hooke.Result", "'str'"),
        (lambda r: plots.snapshot_plot(r, n_snapshots=2.0), "n_snapshots", "must be an integer >= 1", "2.0"),
        (lambda r: plots.snapshot_plot(r, n_snapshots=0), "n_snapshots", "must be an integer >= 1", "0"),
        (lambda r: plots.phase_plot(r, particle=5), "particle", "must be a particle index from 0 to 1", "5"),
        (lambda r: plots.phase_plot(r, particle=True), "particle", "must be a particle index", "True"),
        (lambda r: plots.analytic_plot(r, axis=1), "axis", "must be an axis from 0 to 0", "1"),
        # a ValueError of Matplotlib's ("x and y can be no greater than 2D")
        (lambda r: plots.phase_plot(r, axis=None), "axis", "must be an axis from 0 to 0", "None"),
        (lambda r: plots.mode_shapes_plot("spring1d", None), "scene", "must be a hooke.Scene", "'str'"),
        # issue 15 (third red-team pass): another scene's modes were an IndexError
        (lambda r: plots.mode_shapes_plot(hooke.scene("chain"), hooke.modes("spring1d")), "modes",
         "are not this scene's (its equilibrium has shape (11, 2)): hooke.modes(scene)", "(2, 1)"),
    ]


def test_a_snapshot_count_past_the_frames_draws_every_frame(spring_run):
    """n_snapshots=10**400 was NumPy's "ValueError: Maximum allowed size exceeded"."""
    from hooke.viz import plots

    for count in (10**400, spring_run.n_frames, 10**6):
        assert len(plots.snapshot_plot(spring_run, n_snapshots=count).axes) == spring_run.n_frames


def test_plot_arguments_are_checked_before_drawing(spring_run, tmp_path):
    for call, field, problem, value in plot_cases(tmp_path):
        message = one_line(lambda: call(spring_run), field)
        assert message.startswith(f"{field}: {problem}") and message.endswith(f"got {value}"), message
    assert list(tmp_path.iterdir()) == []  # nothing was written


@pytest.mark.parametrize("arguments, field, value", [
    (dict(path=7), "path", "7"), (dict(fps=0), "fps", "0"), (dict(fps=True), "fps", "True"),
    (dict(duration=float("nan")), "duration", "nan"), (dict(duration=-1), "duration", "-1"),
    (dict(path="movie.txt"), "path", "'movie.txt'"), (dict(result=3.0), "result", "'float'"),
    (dict(dpi=0), "dpi", "0"), (dict(progress="yes"), "progress", "'yes'"),
    # FreeType's "RuntimeError: FT_Set_Char_Size … invalid ppem value" after the checks
    (dict(dpi=1), "dpi", "1"), (dict(dpi=np.int64(5)), "dpi", "np.int64(5)"),
    # a movie shorter than its two frames: it was written lasting 2/30 s and exited 0
    (dict(duration=1e-308), "duration", "1e-308"), (dict(duration=0.04), "duration", "0.04")])
def test_animate_arguments_are_checked_before_drawing(spring_run, tmp_path, arguments, field, value):
    from hooke.viz.animate import animate

    call = {"result": spring_run, "path": tmp_path / "movie.gif", **arguments}
    if isinstance(call["path"], str):
        call["path"] = str(tmp_path / call["path"])
        value = repr(call["path"])
    message = one_line(lambda: animate(**call), field)
    assert message.endswith(f"got {value}"), message
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("max_iterations", [0, -1, True, 2.5, "9", None, 10_001, 10**400])
def test_rest_energy_equilibrium_and_fit_take_a_count_of_iterations(max_iterations):
    """Issue 15 (third red-team pass): rest_energy(max_iterations=0) was "Newton did not converge
    in 0 iterations (… over the last iterations: ; force scale 1.000e-300 N)", 2.5 a TypeError.
    redL: 10**6 was taken, and a Newton that never converges (a particle on a spring of 1e-12
    N/m under gravity: 3 ms an iteration) ran for 50 minutes before saying so; hooke.fit took
    10**9 (a run and its gradient an iteration)."""
    from hooke.analysis import equilibrium, rest_energy

    def fit(scene, max_iterations):
        return hooke.fit(hooke.scene(scene), np.zeros((2, 2, 1)), ["stiffness"], times=[0, 0.1],
                         max_iterations=max_iterations)

    for call in (rest_energy, equilibrium, fit):
        message = one_line(lambda: call("spring1d", max_iterations=max_iterations), "max_iterations")
        assert message == ("max_iterations: must be an integer from 1 to 10000, got "
                           f"{format_value(max_iterations)}")


def test_animate_into_a_directory_names_the_path(spring_run, tmp_path):
    from hooke.viz.animate import animate

    (tmp_path / "movie.gif").mkdir()
    message = one_line(lambda: animate(spring_run, tmp_path / "movie.gif"), "path")
    assert "is a directory" in message


def test_the_cli_names_the_movie_flags(tmp_path):
    run = run_cli("run", "spring1d", "--t-end", "0.1", "--out", str(tmp_path / "run"), "-q")
    assert run.returncode == 0, run.stderr
    for flags, expected in ((("--fps", "0"), "error: --fps: must be a number > 0, got 0.0"),
                            (("--out", str(tmp_path / "m.txt")), "error: --out: must end in one of "
                                                                  ".mp4, .gif"),
                            (("--fps", "nan"), "error: --fps: must be a number > 0, got nan")):
        done = run_cli("animate", str(tmp_path / "run"), *flags)
        lines = done.stderr.splitlines()
        assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith(expected), done.stderr


# -- 6. wording --------------------------------------------------------------------------------------

@pytest.mark.parametrize("flags, expected", [
    (("--allow-host", "a b"), "--allow-host: must be a host name (at most 253 characters"),
    (("--allow-host", ""), "--allow-host: must not be empty"),
    (("--observed", "/no/such.h5"), "--observed: no such file of observed motion"),
    (("--port", "70000"), "--port: must be an integer in 0..65535"),
    (("--host", "bad..host"), "--host: is not an address or a name that resolves")])
def test_serve_names_its_flags_with_their_dashes(monkeypatch, capsys, flags, expected):
    code, lines = run_main(monkeypatch, capsys, "serve", *flags)
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"error: {expected}"), lines


# -- 5. hooke check: every problem of a file at once -----------------------------------------------

def test_check_reports_the_models_and_the_run_options_problems_together(tmp_path, monkeypatch,
                                                                          capsys):
    path = scene_file(tmp_path, "implicit_euler", second="mass = -0.5",
                      options="tol = -1.0\n        bogus = 3")
    code, lines = run_main(monkeypatch, capsys, "check", str(path))
    assert code == 2 and sorted(lines) == sorted([
        "error: particles[1].mass: Input should be greater than 0, got -0.5",
        "error: bogus: is not an option of integrator 'implicit_euler' (its options: "
        "max_iterations, min_iterations, norm, solver, tol), got 3",
        "error: tol: must be a number > 0 for integrator 'implicit_euler', got -1.0"]), lines
    with pytest.raises(hooke.HookeInputError) as info:  # the API's load says the same
        hooke.load(path)
    assert len(str(info.value).splitlines()) == 3


def test_a_files_run_options_are_judged_only_by_their_own_fields(tmp_path):
    """The options are tried on a stand-in model when the file's own cannot be built: only what
    the options themselves get wrong is reported, nothing about the stand-in."""
    from hooke.io.run_options import option_problems

    assert option_problems({"run": {"integrator": "rk45", "options": {"rtol": 1e-3}}}) == []
    assert option_problems({"run": {"integrator": "nope", "options": {"rtol": 0}}}) == []
    assert option_problems({"run": {"options": {"k_c": -1}}}) == [
        "k_c: must be a finite number >= 0 for integrator 'symplectic_euler', got -1"]
    assert option_problems({"run": {"options": "tol=1"}}) == []


def test_an_empty_path_is_shown_as_given(tmp_path):
    scene = hooke.scene("spring1d")
    for call, field in ((lambda: hooke.open(""), "path"), (lambda: hooke.load(""), "path"),
                        (lambda: hooke.simulate(scene, t_end=0.01, store=""), "store")):
        assert one_line(call, field) == (f"{field}: must not be empty (for the current directory "
                                         "give '.'), got ''")


def test_a_path_with_a_nul_byte_is_named(tmp_path):
    """Every path argument of the API raised ValueError "embedded null byte" from deep inside
    os.stat (the red-team pass after issue 15); now bad input naming it."""
    from hooke.io.export import export_frames, write_xdmf
    from hooke.viz import plots
    from hooke.viz.animate import animate

    scene = hooke.scene("spring1d")
    run = hooke.simulate(scene, t_end=0.01, store=tmp_path / "run.h5")
    bad = str(tmp_path / "a\0b.h5")
    for call, field, value in (
            (lambda: hooke.open(bad), "path", bad), (lambda: hooke.load(bad), "path", bad),
            (lambda: hooke.resume(bad), "path", bad),
            (lambda: hooke.simulate(scene, t_end=0.01, store=bad), "store", bad),
            (lambda: plots.energy_plot(run, bad), "path", bad),
            (lambda: animate(run, bad), "path", bad), (lambda: write_xdmf(bad), "path", bad),
            (lambda: export_frames(tmp_path / "run.h5", bad), "out_dir", bad)):
        assert one_line(call, field) == f"{field}: must not contain a NUL byte, got {value!r}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.h5"]


def test_a_movie_without_a_path_and_a_sidecar_check_that_is_no_bool_are_named(tmp_path):
    """Issue 15 (redH): animate(result, None) raised a raw AttributeError ('NoneType' object has
    no attribute 'suffix'), the None that the plots take for "no file"; write_xdmf(path,
    verify=[]) or verify="no" was read by its truth, so an empty list skipped the checksums the
    sidecar is written after, and "no" checked them."""
    from hooke.io.export import write_xdmf
    from hooke.viz.animate import animate

    run = hooke.simulate(hooke.scene("spring1d"), t_end=0.01, store=tmp_path / "run.h5")
    assert one_line(lambda: animate(run, None), "path") == (
        "path: must be a movie file (.mp4 or .gif), got None")
    for bad in ([], "no", 1, np.array(True)):
        assert one_line(lambda: write_xdmf(tmp_path / "run.h5", verify=bad), "verify") == (
            f"verify: must be True or False, got {format_value(bad)}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.h5"]
    assert write_xdmf(tmp_path / "run.h5", verify=np.False_).name == "run.xdmf"


def test_a_path_like_whose_fspath_is_not_a_str_is_named(tmp_path):
    """Issue 15 (confirmation pass, stop 28): an os.PathLike whose __fspath__ returns an int
    raised a raw TypeError from os.fspath ('expected ….__fspath__() to return str or bytes'),
    one returning bytes a raw TypeError from pathlib; both are bad input naming the field."""
    class Odd:
        def __init__(self, value):
            self.value = value

        def __fspath__(self):
            return self.value

        def __repr__(self):
            return f"Odd({self.value!r})"

    scene = hooke.scene("spring1d")
    for value in (3, b"run.h5"):
        for call, field in ((lambda: hooke.open(Odd(value)), "path"),
                            (lambda: hooke.load(Odd(value)), "path"),
                            (lambda: hooke.simulate(scene, t_end=0.01, store=Odd(value)),
                             "store")):
            assert one_line(call, field) == (f"{field}: must be a path (a str or a pathlib.Path)"
                                             f", got Odd({value!r})")
    assert list(tmp_path.iterdir()) == []


def test_export_frames_checks_its_arguments_before_writing(tmp_path):
    """Issue 15 (third red-team pass): formats="obj" was read letter by letter ("unknown export
    format … got 'o'"), formats=[] wrote nothing and returned [], formats=None, out_dir=5,
    progress=5 and folders=5 raised TypeError or AttributeError (progress=5 after a file was
    written)."""
    from hooke.io.export import export_frames

    path = tmp_path / "run.h5"
    hooke.simulate(hooke.scene("cloth2d", nx=3, ny=3), t_end=0.01, store=path)
    out = tmp_path / "out"
    for call, field, problem, value in (
            (lambda: export_frames(path, out, formats=[]), "formats",
             "must name at least one format (known: vtu, obj, ply)", "[]"),
            (lambda: export_frames(path, out, formats=None), "formats",
             "must be a format name or a list of them (known: vtu, obj, ply)", "None"),
            (lambda: export_frames(path, 5), "out_dir", "must be a path (a str or a pathlib.Path)", "5"),
            (lambda: export_frames(path, out, progress=5), "progress",
             "must be None or a function progress(done, total)", "5"),
            (lambda: export_frames(path, out, folders=5), "folders",
             "must be None or a mapping format → directory", "5")):
        assert one_line(call, field) == f"{field}: {problem}, got {value}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.h5"]
    written = export_frames(path, out, formats="obj")  # one format by name, as in a tuple
    assert written == export_frames(path, out, formats=("obj",))


@pytest.mark.parametrize("args, expected", [
    (("check", ""), "FILE"), (("run", "spring1d", "--out", ""), "--out"),
    (("run", "spring1d", "-q", "--out="), "--out"), (("plot", ""), "DIR")])
def test_the_cli_refuses_an_empty_argument_naming_it(monkeypatch, capsys, tmp_path, args, expected):
    """Typer read '' as the path '.': `hooke run spring1d --out ''` wrote into the current
    directory, `hooke check ''` said "got '.'"."""
    monkeypatch.chdir(tmp_path)
    code, lines = run_main(monkeypatch, capsys, *args)
    assert code == 2 and lines == [f"error: {expected}: must not be empty, got ''"], lines
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, expected", [
    (("run", "spring1d", "--dt", "0.1", "--dt", "0.01"),
     "--dt: takes one value, given twice (--dt '0.1', then --dt '0.01'), got '0.01'"),
    (("run", "spring1d", "--out=a", "-q", "-ob"),
     "--out: takes one value, given twice (--out 'a', then -o 'b'), got 'b'"),
    (("modes", "chain", "-k", "3", "-k", "4"), "-k: takes one value, given twice (-k '3', then "
     "-k '4'), got '4'"),
    (("sweep", "spring1d", "-p", "a=1", "--random", "3", "--random=4"),
     "--random: takes one value, given twice (--random '3', then --random '4'), got '4'")])
def test_the_cli_refuses_a_single_value_option_given_twice(monkeypatch, capsys, tmp_path, args,
                                                           expected):
    """redL: Click kept the last of `--dt 0.1 --dt 0.01` in silence (the run took 0.01); an
    option that takes one value given twice is now refused, naming both, before any work."""
    monkeypatch.chdir(tmp_path)
    code, lines = run_main(monkeypatch, capsys, *args)
    assert (code, lines) == (2, [f"error: {expected}"])
    assert list(tmp_path.iterdir()) == []


def test_repeatable_options_and_flags_may_still_be_given_twice(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    code, lines = run_main(monkeypatch, capsys, "run", "spring1d", "-q", "--quiet", "--t-end",
                           "0.01", "-O", "k_c=0.03", "--option", "beta_c=0.2", "--out", "o")
    assert code in (0, None) and lines == []
    assert (tmp_path / "o" / "trajectory.h5").is_file()


@pytest.mark.parametrize("args, expected", [
    (("run", "spring1d", "--dt", "\u0661\u0662"), "--dt: must be a number, got '\u0661\u0662'"),
    (("run", "spring1d", "--t-end", "\uff10.\uff11"), "--t-end: must be a number, got '\uff10.\uff11'"),
    (("run", "spring1d", "--t-end", "true"), "--t-end: must be a number, got 'true'"),
    # stop 33: Python's float() took "0_0.1" (a leading zero TOML does not allow) as 0.1
    (("run", "spring1d", "--t-end", "0_0.1"), "--t-end: must be a number, got '0_0.1'"),
    (("run", "spring1d", "-O", "k_c=0_0.5"),
     "k_c: must be a finite number >= 0 for integrator 'symplectic_euler', got '0_0.5'"),
    (("run", "spring1d", "--t-end", "1e400"),
     "--t-end: is past the largest float (1.798e+308), got '1e400'"),
    (("run", "spring1d", "-O", "k_c=\u0661"),
     "k_c: must be a finite number >= 0 for integrator 'symplectic_euler', got '\u0661'")])
def test_float_flags_read_numbers_as_the_scene_files_and_option_do(monkeypatch, capsys, tmp_path,
                                                                   args, expected):
    """redL: float() read Arabic-Indic "١٢" and fullwidth "０.１" as 12 and 0.1 (a run of dt = 12
    went ahead), which no scene file holds as a number; --dt and -O read a value alike now."""
    monkeypatch.chdir(tmp_path)
    code, lines = run_main(monkeypatch, capsys, *args, "-q", "--out", "o")
    assert (code, lines) == (2, [f"error: {expected}"])


def test_float_flags_take_tomls_numbers(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    code, lines = run_main(monkeypatch, capsys, "run", "spring1d", "--dt", "1_0e-3", "--t-end",
                           "0x1", "-q", "--out", "o")
    assert code in (0, None) and lines == []
    assert hooke.open(tmp_path / "o" / "trajectory.h5").dt == 0.01 and \
        hooke.open(tmp_path / "o" / "trajectory.h5").t[-1] == 1.0


def test_an_empty_mesh_file_says_it_has_no_points(tmp_path):
    empty = tmp_path / "empty.obj"
    empty.write_text("# nothing\n")
    message = one_line(lambda: hooke.ModelBuilder(dim=3).from_mesh(empty), "mesh")
    assert message == f"mesh: has no points (an empty mesh file), got '{empty}'"
    one_line(lambda: hooke.ModelBuilder(dim=3).add_obstacle(empty), "obstacles[0].mesh")


def test_a_mesh_files_reason_is_meshios_not_a_numpy_warning(tmp_path):
    # a PLY header promising vertices that are not there: the reason given was NumPy's
    # "…/site-packages/meshio/ply/_ply.py:188: UserWarning: genfromtxt: Empty input file …"
    ply = tmp_path / "short.ply"
    ply.write_text("ply\nformat ascii 1.0\nelement vertex 5\nproperty float x\nend_header\n")
    scene = tmp_path / "scene.toml"
    scene.write_text('dim = 3\n[[particles]]\nx = [5.0, 5.0, 5.0]\n'
                     '[[obstacles]]\nmesh = "short.ply"\n')
    done = run_cli("check", str(scene))  # a process of its own: pytest records warnings
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("error: obstacles[0].mesh: cannot be read as a mesh (")
    assert "Warning" not in done.stderr and "site-packages" not in done.stderr, done.stderr


@pytest.mark.parametrize("face_line, index", [("f 0 1 2", 0), ("f 1 2 -1", -1)])
def test_an_obj_face_index_below_1_is_named_with_its_face(tmp_path, face_line, index):
    """OBJ indices start at 1: meshio read 0 as -1 (the last vertex, or "out of range [0, 3),
    got [-1, 0, 1]"), and the relative -1 as -2."""
    path = tmp_path / "ramp.obj"
    path.write_text(f"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nf 2 3 4\n{face_line}\n")
    for call, field in ((lambda: hooke.ModelBuilder(dim=3).from_mesh(path), "mesh"),
                        (lambda: hooke.ModelBuilder(dim=3).add_obstacle(path), "obstacles[0].mesh")):
        message = one_line(call, field)
        assert message == (f"{field}: face 1 (counting from 0) of {path} has vertex index "
                           f"{index}; OBJ vertex "
                           f"indices start at 1 (relative negative ones are not read), got {index}")


def test_resuming_a_file_whose_scene_source_was_edited_says_so(tmp_path):
    import h5py

    scene_file = tmp_path / "scene.toml"
    scene_file.write_text(textwrap.dedent("""
        dim = 1
        [run]
        dt = 0.01
        t_end = 0.5
        [[particles]]
        x = [0.0]
        pinned = true
        [[particles]]
        x = [1.0]
        [[springs]]
        i = 0
        j = 1
        stiffness = 10.0
    """))
    path = tmp_path / "run.h5"

    def stop(done, total):
        if done >= total // 2:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        hooke.simulate(hooke.load(scene_file), save_every=5, store=path, progress=stop)
    with h5py.File(path, "r+") as handle:
        source = handle.attrs["scene_source"]
        handle.attrs["scene_source"] = source.replace("stiffness = 10.0", "stiffness = 12.0")
    message = one_line(lambda: hooke.resume(path), "path")
    assert message == ("path: its scene_source attribute was edited (it builds another model "
                       "than the one stored, spring_stiffness differs): it cannot be continued "
                       f"exactly, got '{path}'")


# -- hostile values found in a pass over the API ---------------------------------------------------

def two_particle_builder() -> hooke.ModelBuilder:
    b = hooke.ModelBuilder(dim=2)
    b.add_particle((0.0, 0.0), pinned=True)
    return b


@pytest.mark.parametrize("call, field, value", [
    # a nested position was flattened: [[2, 0]] taken as (2, 0), [[1], [2]] too
    (lambda: two_particle_builder().add_particle([[2.0, 0.0]]), "particles[1].x", "[[2.0, 0.0]]"),
    (lambda: two_particle_builder().add_particle((2.0, 0.0), velocity=[[0.0], [1.0]]),
     "particles[1].v", "[[0.0], [1.0]]"),
    (lambda: two_particle_builder().add_particle((2.0, 0.0), name=3), "particles[1].name", "3"),
])
def test_builder_refuses_what_it_accepted_silently(call, field, value):
    assert one_line(call, field).endswith(f"got {value}")


@pytest.mark.parametrize("keywords, field, value", [
    (dict(options=[1]), "options", "[1]"),  # simulate then failed with a TypeError
    (dict(options={1: 2}), "options", "{1: 2}"),
    (dict(name=3), "name", "3"), (dict(description=None), "description", "None"),
    # each ran, and the stored file was then refused as "edited or damaged" by hooke.open
    (dict(source=5), "source", "5"), (dict(parameters=5), "parameters", "5"),
    (dict(parameters={1: 2}), "parameters", "{1: 2}"),
    # a TypeError "'int' object is not callable" from Result.analytic
    (dict(analytic_solution=5), "analytic_solution", "5"),
    (dict(save_every_given="yes"), "save_every_given", "'yes'")])
def test_scene_refuses_settings_of_the_wrong_type(keywords, field, value):
    model = hooke.scene("spring1d").model
    assert one_line(lambda: hooke.Scene(model, **keywords), field).endswith(f"got {value}")


@pytest.mark.parametrize("keywords, field, value", [
    (dict(dt=np.array(0.005)), "dt", "array(0.005)"),
    (dict(save_every=np.array(2)), "save_every", "array(2)")])
def test_a_0d_array_refused_as_a_number_is_shown_as_an_array(keywords, field, value):
    """Issue 15 (red-team pass, stop 28): a NumPy 0-d array where a number goes was refused as
    "dt: must be a number, got 0.005", which reads as if 0.005 were not a number. Now the
    value is shown as what it is."""
    call = lambda: hooke.simulate(hooke.scene("spring1d"), t_end=0.05, **keywords)  # noqa: E731
    assert one_line(call, field).endswith(f"got {value}")


def test_scene_refuses_a_state_of_strings_by_name():
    """It was a TypeError from np.isfinite."""
    model = hooke.scene("spring1d").model
    state = hooke.State(0.0, np.array([["a"], ["b"]]), model.v0.copy())
    assert one_line(lambda: hooke.Scene(model, state=state), "state.x").startswith(
        "state.x: must be an array of numbers")


def test_analytic_refuses_non_finite_times():
    scene = hooke.scene("spring1d")
    one_line(lambda: scene.analytic(float("nan")), "t")
    one_line(lambda: scene.analytic([0.0, float("inf")]), "t")
    np.testing.assert_allclose(scene.analytic([0.0])[0, 1], [2.0])


@pytest.mark.parametrize("keywords, field, value", [
    (dict(tol=float("nan")), "tol", "nan"),  # it was "Newton did not converge"
    (dict(tol=0.0), "tol", "0.0"), (dict(dense=1), "dense", "1")])
def test_modes_refuses_bad_settings(keywords, field, value):
    assert one_line(lambda: hooke.modes("spring1d", **keywords), field).endswith(f"got {value}")


@pytest.mark.parametrize("tol", [1.0, 2.5, 1e308])
def test_a_tolerance_of_one_or_more_is_refused_not_met_by_the_start(tol):
    """The residual is relative to the largest force, so tol >= 1 returned the start unsolved:
    a chain's modes at tol=1 were all 0 Hz (0.563 Hz at the default)."""
    chain = hooke.scene("chain", n=4)
    assert one_line(lambda: hooke.modes(chain, tol=tol), "tol").endswith(f"got {tol!r}")
    assert one_line(lambda: hooke.analysis.equilibrium(chain, tol=tol),
                    "tol").endswith(f"got {tol!r}")


@pytest.mark.parametrize("keywords, field", [
    (dict(random=2.0), "random"), (dict(random=True), "random"),
    (dict(save_every=True), "save_every"), (dict(summary_only=1), "summary_only")])
def test_sweep_settings_are_strict(tmp_path, keywords, field):
    message = one_line(lambda: hooke.sweep("spring1d", {"stiffness": [1.0, 2.0]},
                                           out=tmp_path / "sweep", **keywords), field)
    assert message.endswith(f"got {keywords[field]!r}")
    assert not (tmp_path / "sweep").exists() or not any((tmp_path / "sweep").iterdir())


@pytest.mark.parametrize("flags, expected", [
    (("--dt", "nan"), "--dt: must be a finite number > 0, got nan"),
    (("--integrator", "warp"), "--integrator: unknown integrator"),
    (("--save-every", "0"), "--save-every: must be an integer >= 1, got 0"),
    (("--max-energy-growth", "0.5"), "--max-energy-growth: must be > 1, got 0.5"),
    (("--dt", "0.3"), "t_end: must be a whole number of steps of dt = 0.3")])  # t_end's fault
def test_run_names_its_setting_flags(monkeypatch, capsys, tmp_path, flags, expected):
    code, lines = run_main(monkeypatch, capsys, "run", "spring1d", "-q", "--out",
                           str(tmp_path / "out"), *flags)
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"error: {expected}"), lines


@pytest.mark.parametrize("args", [
    ("run", "spring1d", "--save-every", "2.0"), ("modes", "chain", "-k", "3.0"),
    ("sweep", "spring1d", "-p", "stiffness=1:2", "--random", "2.0"),
    ("sweep", "spring1d", "-p", "stiffness=1,2", "--seed", "1.0"),
    ("sweep", "spring1d", "-p", "stiffness=1,2", "--retries", "0.0"),
    ("sweep", "spring1d", "-p", "stiffness=1,2", "--save-every", "1.0"),
    ("fit", "spring1d", "--observed", "o.csv", "-p", "stiffness", "--max-iterations", "2.0"),
    ("verify", "--energy-steps", "10.0"), ("serve", "--port", "8000.0"),
    ("bench", "--repeats", "1.0"), ("bench", "--rounds", "٣")])
def test_a_count_flag_refuses_a_float_as_the_api_does(monkeypatch, capsys, tmp_path, args):
    """Typer's coercion read "2.0" as 2 (and refused "2.5" in pydantic's words): a float is not
    a count, as simulate(save_every=2.0) and -O substeps=2.0 say."""
    monkeypatch.chdir(tmp_path)
    code, lines = run_main(monkeypatch, capsys, *args)
    assert (code, lines) == (2, [f"error: {args[-2]}: must be an integer, got {args[-1]!r}"])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("k", ["0", "-3"])
def test_modes_names_its_k_flag(monkeypatch, capsys, tmp_path, k):
    # it said "k: must be an integer >= 1" (the API's name) where the parser says "-k: …"
    code, lines = run_main(monkeypatch, capsys, "modes", "spring1d", "-k", k, "--out",
                           str(tmp_path / "modes"))
    assert (code, lines) == (2, [f"error: -k: must be an integer >= 1, got {k}"])


def test_a_mass_whose_inverse_overflows_is_refused_where_it_is_given(tmp_path, monkeypatch, capsys):
    """mass = 1e-320 (subnormal) passed `hooke check`; its inverse is inf, so the run printed
    NumPy's overflow warning and then "non-finite at step 1 … try a smaller dt", which cannot
    help. The smallest mass with a finite inverse is still taken."""
    builder = hooke.ModelBuilder(dim=1)
    builder.add_particle([0.0], mass=1.0 / np.finfo(float).max)
    assert one_line(lambda: builder.add_particle([1.0], mass=1e-320), "particles[1].mass") == (
        "particles[1].mass: is too small (1/mass overflows to inf), got 1e-320")
    path = tmp_path / "tiny.toml"
    path.write_text("dim = 1\n[[particles]]\nx = [0.0]\nmass = 5e-324\n")
    code, lines = run_main(monkeypatch, capsys, "check", str(path))
    assert (code, lines) == (2, ["error: particles[0].mass: is too small (1/mass overflows to inf), "
                                 "got 5e-324"])


HUGE = 10 ** 400  # a Python int no float holds: float() of it was an OverflowError


@pytest.mark.parametrize("call, field", [
    (lambda: two_particle_builder().add_particle((HUGE, 0.0)), "particles[1].x"),
    (lambda: two_particle_builder().add_particle((1.0, 0.0), mass=HUGE), "particles[1].mass"),
    (lambda: two_particle_builder().add_particle((1.0, 0.0), velocity=(0, -HUGE)),
     "particles[1].v"),
    (lambda: hooke.simulate(hooke.scene("spring1d"), dt=HUGE), "dt"),
    (lambda: hooke.simulate(hooke.scene("spring1d"), t_end=HUGE), "t_end"),
    (lambda: hooke.simulate(hooke.scene("spring1d"), max_energy_growth=HUGE),
     "max_energy_growth"),
])
def test_an_int_too_large_for_a_float_is_named(call, field):
    assert "1000000000" in one_line(call, field)


def test_a_spring_of_an_int_too_large_for_a_float_is_named():
    b = two_particle_builder()
    b.add_particle((1.0, 0.0))
    for keyword in ("stiffness", "rest_length", "damping"):
        values = {"stiffness": 1.0, keyword: HUGE}
        one_line(lambda: b.add_spring(0, 1, **values), f"springs[0].{keyword}")


def test_a_store_whose_folder_cannot_be_made_is_named(tmp_path):
    message = one_line(lambda: hooke.simulate(hooke.scene("spring1d"), t_end=0.1,
                                              store="/proc/no-such/run.h5"), "store")
    assert message.endswith("got '/proc/no-such'")


@pytest.mark.parametrize("call, field, size", [
    (lambda: hooke.ModelBuilder(dim=2).grid(HUGE, 3), "nx × ny", "3e+400 particles"),
    (lambda: hooke.ModelBuilder(dim=3).lattice(2, HUGE, 2), "nx × ny × nz", "4e+400 particles")])
def test_a_grid_of_an_int_too_large_for_a_float_is_refused_by_its_size(call, field, size):
    # check_model_size's float(particles) was an OverflowError
    assert f"the model would have {size}" in one_line(call, field)


@pytest.mark.parametrize("command", ["run", "modes"])
def test_a_scene_name_too_long_for_a_file_name_is_named(monkeypatch, capsys, tmp_path, command):
    # Path.exists raised OSError "File name too long": "unexpected OSError … (a bug in hooke)"
    name = "a" * 5000
    code, lines = run_main(monkeypatch, capsys, command, name, "--out", str(tmp_path / "out"))
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("error: SCENE_OR_FILE: is neither a built-in scene (chain, "), lines


def test_study_data_named_too_long_for_a_file_name_is_named(monkeypatch, capsys, tmp_path):
    # Path.is_dir raised OSError "File name too long": "unexpected OSError … (a bug in hooke)"
    data = tmp_path / ("a" * 5000)
    code, lines = run_main(monkeypatch, capsys, "study", "pendulum-correction", "--data",
                           str(data), "--out", str(tmp_path / "out"))
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"error: --data: cannot be written (File name too long), got "
                               f"'{tmp_path}/aaaa"), lines


def test_a_store_named_too_long_for_a_file_name_is_named(tmp_path):
    # Path.is_dir raised OSError "File name too long" out of hooke.simulate
    store = tmp_path / ("a" * 5000 + ".h5")
    message = one_line(lambda: hooke.simulate(hooke.scene("spring1d"), t_end=0.1, store=store),
                       "store")
    assert message.startswith(f"store: cannot be written (File name too long), got '{tmp_path}/aaa")


@pytest.mark.parametrize("option", ["rtol=inf", "atol=inf"])
def test_an_infinite_tolerance_is_refused_as_not_finite(tmp_path, monkeypatch, capsys, option):
    """`-O rtol=inf` was refused as "must be a number > 0 … got inf", which inf is; the line
    now says what is wrong with it (confirmation pass)."""
    code, lines = run_main(monkeypatch, capsys, "run", "spring1d", "-i", "rk45", "-O", option,
                           "--out", str(tmp_path / "never-made"))
    key = option.split("=")[0]
    assert code == 2 and lines == [
        f"error: {key}: must be a finite number > 0 for integrator 'rk45', got inf"], lines
    assert not (tmp_path / "never-made" / "trajectory.h5").exists()


# -- a fresh red-team pass over the API (stop 28) --------------------------------------------------

@pytest.mark.parametrize("integrator, option", [
    ("generalized_alpha", "rho_inf"), ("rk4", "k_c"), ("rk4", "beta_c"),
    ("explicit_euler", "baumgarte_alpha"), ("rk45", "baumgarte_beta")])
def test_joint_gains_and_rho_inf_take_any_number_and_name_a_huge_int(integrator, option):
    """Issue 15 (red-team pass, stop 28): `rho_inf` and the joints' stabilisation gains were
    checked with isinstance(value, (int, float)) and np.isfinite, so 10**400 was a raw TypeError
    ("ufunc 'isfinite' not supported") and np.float32(0.5), which every other option takes, was
    refused as not a number."""
    scene = hooke.scene("spring1d")
    method = {"k_c": "correction", "beta_c": "correction", "baumgarte_alpha": "baumgarte",
              "baumgarte_beta": "baumgarte"}  # the gain's own (elsewhere it has no effect)
    options = {"stabilization": method[option]} if option in method else {}
    message = one_line(lambda: hooke.simulate(scene, integrator=integrator, t_end=0.1,
                                              **options, **{option: HUGE}), option)
    assert message.endswith(f"got {HUGE}")
    result = hooke.simulate(scene, integrator=integrator, t_end=0.1, **options,
                            **{option: np.float32(0.5)})
    assert result.options[option] == 0.5 and np.all(np.isfinite(result.x))


def test_a_run_given_numpy_scalar_options_is_stored_with_numbers_and_resumes(tmp_path):
    """Issue 15 (red-team pass, stop 28): options given as NumPy scalars (tol=np.float32(0.01),
    max_iterations=np.int64(7)), which simulate takes, were stored by json.dumps(default=str) as
    the strings '0.01' and '7': hooke.open gave them back as strings and hooke.resume refused its
    own file ("max_iterations: must be an integer …, got '7'"), so the run could not be
    continued. The effective options are plain Python numbers."""
    scene = hooke.scene("spring1d")
    options = dict(tol=np.float32(0.01), max_iterations=np.int64(7))
    path = tmp_path / "run.h5"

    def stop(done, total):
        if done >= total // 2:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        hooke.simulate(scene, integrator="implicit_euler", t_end=1.0, save_every=5, store=path,
                       progress=stop, **options)
    stored = hooke.open(path).options
    assert (stored["tol"], stored["max_iterations"]) == (float(np.float32(0.01)), 7)
    assert type(stored["tol"]) is float and type(stored["max_iterations"]) is int
    resumed = hooke.resume(path)
    whole = hooke.simulate(scene, integrator="implicit_euler", t_end=1.0, save_every=5, **options)
    np.testing.assert_array_equal(resumed.x, whole.x)


@pytest.mark.parametrize("parameter, value", [("n", np.int64(5)), ("mass", np.float32(0.25))])
def test_a_scene_given_numpy_scalar_parameters_is_stored_with_numbers_and_resumes(
        tmp_path, parameter, value):
    """Issue 15 (red-team pass, stop 28): hooke.scene("chain", n=np.int64(5)) built the chain,
    but the run stored its parameters by json.dumps(default=str) as {"n": "5"}, and
    hooke.resume refused its own file ("parameters.n: Input should be a valid integer, got
    '5'"). A Scene keeps its parameters as Python numbers."""
    import h5py

    scene = hooke.scene("chain", **{parameter: value})
    assert type(scene.parameters[parameter]) is type(value.item())
    path = tmp_path / "run.h5"

    def stop(done, total):
        if done >= total // 2:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        hooke.simulate(scene, t_end=0.2, dt=0.01, save_every=2, store=path, progress=stop)
    with h5py.File(path, "r") as handle:
        assert json.loads(handle.attrs["parameters"])[parameter] == value.item()
    whole = hooke.simulate(scene, t_end=0.2, dt=0.01, save_every=2)
    np.testing.assert_array_equal(hooke.resume(path).x, whole.x)


@pytest.mark.parametrize("ends, log", [([np.float32(1.0), np.float32(2.0)], False),
                                       ([np.int64(1), 2.0], np.bool_(True))])
def test_a_sweep_range_takes_numpy_numbers_and_names_a_huge_int(ends, log):
    """Issue 15 (red-team pass, stop 28): a random sweep's range [1, 10**400] was a raw
    OverflowError from math.isfinite, and [np.float32(1), np.float32(2)] (or log=np.True_) was
    refused as not two finite numbers, though a grid's list of values takes NumPy's numbers."""
    from hooke.sweep import plan

    message = one_line(lambda: plan("spring1d", {"stiffness": {"range": [1, HUGE]}}, random=2),
                       "params.stiffness.range")
    assert message.startswith("params.stiffness.range: must be [lo, hi], two finite numbers")
    members = plan("spring1d", {"stiffness": {"range": ends, "log": log}}, random=3)
    assert all(1.0 <= member.values["stiffness"] < 2.0 for member in members)


def test_sweep_counts_take_numpy_integers_as_simulate_does():
    """Issue 15 (red-team pass, stop 28): hooke.sweep and plan refused random=np.int64(2),
    seed=np.int64(3) and save_every=np.int64(2) ("Input should be a valid integer, got
    np.int64(2)"), though simulate takes save_every=np.int64(2) and every builder a NumPy
    count; np.float64(2.0) and np.True_ are still not counts."""
    from hooke.sweep import plan

    grid = {"stiffness": [1.0, 2.0]}
    members = plan("spring1d", grid, random=np.int64(3), seed=np.int64(3),
                   save_every=np.int64(2))
    assert members == plan("spring1d", grid, random=3, seed=3, save_every=2)
    for keywords, field in ((dict(random=np.float64(2.0)), "random"),
                            (dict(save_every=np.True_), "save_every")):
        one_line(lambda: plan("spring1d", grid, **keywords), field)


@pytest.mark.parametrize("params", [{1: [1.0]}, [{"stiffness": [1.0]}, {2.5: [1.0]}]])
def test_a_sweep_path_that_is_not_a_string_is_one_line(params):
    """Issue 15 (red-team pass, stop 28): params={1: [1.0]} was two lines named after pydantic's
    union branches ("params.dict[str,any][1]: Input should be a valid string", "params.list[…]:
    Input should be a valid list")."""
    from hooke.sweep import plan

    assert one_line(lambda: plan("spring1d", params), "params").startswith(
        "params: must be a table of parameter paths")


@pytest.mark.parametrize("make, field", [
    (lambda: hooke.losses.final_position(np.full((2, 1), np.nan)), "target"),
    (lambda: hooke.losses.tracking(np.full((3, 2, 1), np.nan)), "observed_x"),
    (lambda: hooke.losses.tracking(np.array([[[np.nan, 1.0]], [[0.0, np.nan]]])), "observed_x")])
def test_a_loss_that_observes_nothing_is_refused(make, field):
    """Issue 15 (red-team pass, stop 28): a target or observed positions all NaN ("not
    observed") made hooke.gradient return L = 0 and a zero gradient, a silent non-result;
    hooke.fit refuses the same data ("observes no particle")."""
    assert one_line(make, field).startswith(
        f"{field}: observes no particle (every row is NaN)")


@pytest.mark.parametrize("weights", [0.0, [0.0, 0.0], [0.0, 1.0]])
def test_a_loss_whose_weights_leave_nothing_observed_is_refused(weights):
    """weights=0 (or 0 wherever a particle is observed) gave a loss of 0 and a zero gradient
    whatever the run, as a loss observing nothing did before it was refused."""
    scene = hooke.scene("spring1d")
    run = hooke.simulate(scene, dt=0.01, t_end=0.05)
    observed = run.x.copy()
    observed[:, 1] = np.nan  # the moving particle is not observed; the anchor is, weight 0
    loss = hooke.losses.tracking(observed if weights != [0.0, 0.0] else run.x, weights=weights)
    assert one_line(lambda: hooke.gradient(scene, loss, {"stiffness": "shared"}, dt=0.01,
                                           t_end=0.05), "weights").startswith(
        "weights: are 0 at every observed particle: the loss observes nothing, got ")


@pytest.mark.parametrize("name", ["cloth_fold", "cloth_sphere"])
def test_a_drape_of_an_int_too_large_for_a_float_is_refused_by_its_size(name):
    """Issue 15 (red-team pass, stop 28): hooke.scene("cloth_fold", n=10**400) was a raw
    OverflowError from size / (n − 1), computed before the model's size was checked; every
    other grid builder names the size."""
    assert "the model would have 1e+800 particles" in one_line(
        lambda: hooke.scene(name, n=HUGE), "parameters.n")


def test_a_command_line_value_holding_a_second_toml_line_is_not_cut_short(tmp_path, monkeypatch,
                                                                          capsys):
    """Issue 15 (red-team pass, stop 28): `-O $'rtol=1e-3\\nfoo=1'` ran with rtol = 1e-3: the
    value was read as the TOML document "value = 1e-3\\nfoo=1" and the second key dropped in
    silence. A value is one TOML value or its text (which the option's check then names)."""
    from hooke.io.scene_file import parse_value

    assert parse_value("1e-3 # a comment", "-O") == 1e-3 and parse_value("[1, 2]", "-O") == [1, 2]
    assert parse_value("1e-3\nfoo=1", "-O") == "1e-3\nfoo=1"
    code, lines = run_main(monkeypatch, capsys, "run", "spring1d", "-q", "-i", "rk45", "-O",
                           "rtol=1e-3\nfoo=1", "--out", str(tmp_path / "out"))
    assert (code, lines) == (2, ["error: rtol: must be a number > 0 for integrator 'rk45', got "
                                 "'1e-3\\nfoo=1'"])


def test_a_masked_array_is_numbers_where_unmasked_and_nan_where_masked():
    """Issue 15 (red-team pass, stop 28): add_particle(np.ma.masked_array([2, 0], mask=[0, 1]))
    was a raw ValueError ("The truth value of an array … is ambiguous") from the masked
    product. A masked entry is no number: NaN, so a position is refused as not finite and an
    observed coordinate is not observed."""
    b = two_particle_builder()
    message = one_line(lambda: b.add_particle(np.ma.masked_array([2.0, 0.0], mask=[0, 1])),
                       "particles[1].x")
    assert message.startswith("particles[1].x: must be finite")
    assert b.add_particle(np.ma.masked_array([2.0, 0.0], mask=[0, 0])) == 1
    spring_index = np.ma.masked_array([[0, 1]], mask=[[0, 1]])
    one_line(lambda: hooke.array_models.model_from_arrays(2, np.zeros((2, 2)) + [[0, 0], [1, 0]],
                                                          1.0, spring_index, 1.0), "springs")


def test_xpbd_sweeps_per_step_are_bounded_as_each_count_option_is(tmp_path, monkeypatch, capsys):
    """Issue 15 (red-team pass, stop 28): -O substeps=10000 -O iterations=10000, each within the
    bound of a count option, made 10⁸ Gauss-Seidel sweeps per step: a 20-step run of spring1d
    had not finished after a minute. The sweeps per step, substeps × iterations, are bounded
    as one count option is."""
    from hooke.integrators.base import MAX_COUNT_OPTION

    message = one_line(lambda: hooke.simulate(hooke.scene("spring1d"), integrator="xpbd",
                                              t_end=0.1, substeps=10_000, iterations=10_000),
                       "substeps × iterations")
    assert message == (f"substeps × iterations: must be at most {MAX_COUNT_OPTION} Gauss-Seidel "
                       "sweeps per step (for more, take a smaller dt), got 100000000")
    result = hooke.simulate(hooke.scene("spring1d"), integrator="xpbd", t_end=0.1,
                            substeps=100, iterations=MAX_COUNT_OPTION // 100)
    assert np.all(np.isfinite(result.x))
    code, lines = run_main(monkeypatch, capsys, "run", "spring1d", "-q", "-i", "xpbd", "-O",
                           "substeps=5000", "-O", "iterations=3", "--out", str(tmp_path / "o"))
    assert (code, lines) == (2, [f"error: substeps × iterations: must be at most "
                                 f"{MAX_COUNT_OPTION} Gauss-Seidel sweeps per step (for more, "
                                 "take a smaller dt), got 15000"])


@pytest.mark.parametrize("t", [["0.5"], 10 ** 400, [True], "0.5"])
def test_analytic_takes_numbers_only(t):
    """Issue 15 (red-team pass, stop 28): scene.analytic(["0.5"]) gave the positions at 0.5 s
    (np.asarray(t, dtype=float) read the string) and analytic(10**400) was a raw OverflowError."""
    one_line(lambda: hooke.scene("spring1d").analytic(t), "t")


@pytest.mark.parametrize("member", [None, "nope", "../../elsewhere", 3])
def test_a_sweep_result_names_a_member_it_does_not_have(tmp_path, member):
    """Issue 15 (red-team pass, stop 28): SweepResult.result(None) was a raw TypeError (Path /
    None), and result("nope") said "path: no such trajectory file" naming a path under
    members/, which "../.." could lead out of; a member is one of the table's ids."""
    import pandas as pd

    table = pd.DataFrame({"member": ["4a2c0d9cf424"], "status": ["ok"]})
    result = hooke.SweepResult(table, tmp_path, tmp_path / "summary.parquet",
                               tmp_path / "summary.csv", tmp_path / "plot.png", "energy_error",
                               ["stiffness"])
    message = one_line(lambda: result.result(member), "member")
    assert message == (f"member: is not a member of this sweep (its ids: 4a2c0d9cf424), got "
                       f"{member!r}")


def test_params_naming_a_parameter_twice_are_refused_as_on_the_command_line():
    """Issue 15 (red-team pass, stop 28): hooke.gradient and hooke.fit took params=["stiffness",
    "stiffness"] (the second dropped in silence), which `hooke fit -p stiffness,stiffness`
    refuses; a name that is a list or a dict ([[1]]) was a raw TypeError "unhashable type"."""
    loss = hooke.losses.final_position(np.zeros((2, 1)))
    message = one_line(lambda: hooke.gradient(hooke.scene("spring1d"), loss,
                                              ["stiffness", "stiffness"], t_end=0.1), "params")
    assert message == "params: names a parameter more than once, got 'stiffness'"
    for name in ([1], {"a": 1}):
        assert one_line(lambda: hooke.gradient(hooke.scene("spring1d"), loss, [name], t_end=0.1),
                        "params").startswith("params: unknown parameter")


@pytest.mark.parametrize("out_dir", [None, 5, ""])
def test_the_study_names_an_out_dir_that_is_not_a_path(out_dir):
    """Issue 15 (red-team pass, stop 28): run_pendulum_correction_study(None) was a raw
    TypeError from Path(None) (and "" was the current directory), as `hooke study` refuses."""
    from hooke.studies import run_pendulum_correction_study

    one_line(lambda: run_pendulum_correction_study(out_dir, t_end=0.1), "out_dir")



@pytest.mark.parametrize("settings, field", [
    ({"t_end": -1.0}, "t_end"), ({"t_end": "100"}, "t_end"), ({"t_end": math.inf}, "t_end"),
    ({"output_interval": 0.0}, "output_interval"), ({"output_interval": None}, "output_interval"),
    ({"t_end": 0.1, "output_interval": 0.03}, "t_end"), ({"rtol": 0.0}, "rtol"),
    ({"rtol": True}, "rtol"),
    # redH: a progress that is not callable was a raw TypeError ('int' object is not callable)
    # once the kernels were compiled, its folder made
    ({"t_end": 0.1, "progress": 5}, "progress"), ({"t_end": 0.1, "progress": "print"}, "progress")])
def test_the_studys_settings_are_checked_before_it_makes_its_folder(tmp_path, settings, field):
    """Issue 15 (red-team pass, stop 28): run_pendulum_correction_study made out_dir before it
    looked at t_end, and a bad output_interval was named "dt" (simulate's word) after the first
    runs; each setting is now named as the function calls it, before any folder or run."""
    from hooke.studies import run_pendulum_correction_study

    out = tmp_path / "study"
    one_line(lambda: run_pendulum_correction_study(out, **settings), field)
    assert not out.exists()

def test_a_state_whose_pinned_particle_is_not_where_its_pin_holds_it_is_refused():
    """Issue 15 (red-team pass, stop 28): a State with spring1d's anchor at 1 instead of 0 was
    taken: frame 0 showed it at 1 and the first step put it back at 0, a jump of 1 m in one
    step that no force made. A pinned particle of the state must be where its pin holds it at
    the state's time (x0, or x0 + u(t) − u(0) on a prescribed motion); a state that a run ended
    in is, so a run continued from it is taken."""
    import dataclasses

    scene = hooke.scene("spring1d")
    x = scene.state.x.copy()
    x[0] = 1.0
    message = one_line(lambda: dataclasses.replace(scene, state=hooke.State(0.0, x, scene.state.v)),
                       "state.x[0]")
    assert message == ("state.x[0]: is a pinned particle's position, which its pin holds at "
                       "[0.] at t = 0, got [1.]")
    press = hooke.scene("square_press")  # its top row pinned and driven down
    first = hooke.simulate(press, t_end=0.05, dt=0.01)
    last = hooke.State(float(first.t[-1]), first.x[-1], first.v[-1])
    assert hooke.simulate(dataclasses.replace(press, state=last), t_end=0.02, dt=0.01).n_frames
    one_line(lambda: dataclasses.replace(press, state=press.model.initial_state(t=0.05)),
             "state.x[4]")


@pytest.mark.parametrize("integrator, option, value", [
    ("rk4", "stabilization", np.array([])), ("rk4", "stabilization", np.array(["projection"])),
    ("implicit_euler", "solver", np.array("cg")), ("implicit_euler", "solver", np.array([])),
    ("implicit_euler", "norm", np.array([])), ("implicit_euler", "norm", 1)])
def test_an_option_that_takes_a_name_takes_a_str(integrator, option, value):
    """Issue 15 (confirmation pass, stop 28): a NumPy array where an integrator option takes a
    name was a raw exception (stabilization=np.array([]): 'The truth value of an empty array is
    ambiguous'; solver=np.array("cg"): 'unhashable type'), or taken (stabilization=
    np.array(["projection"]) ran); it is refused as a number given for a count is. A number
    meets the option's own check, which names the names it takes (fast_mass_spring's
    iterations takes "auto" or a count)."""
    scene = hooke.scene("pendulum" if option == "stabilization" else "spring1d")
    message = one_line(lambda: hooke.simulate(scene, integrator=integrator, t_end=0.01,
                                              **{option: value}), option)
    assert message.startswith(f"{option}: must be a name (a str; its default is " if
                              isinstance(value, np.ndarray) else f"{option}: must be one of ")


@pytest.mark.parametrize("integrator, option, value, takes", [
    ("fast_mass_spring", "iterations", True, 'must be an integer from 1 to 10000, or "auto"'),
    ("fast_mass_spring", "iterations", 10**400, 'must be an integer from 1 to 10000, or "auto"'),
    ("rk45", "first_step", np.bool_(True), 'must be "auto" or a number > 0'),
    ("rk45", "first_step", 10**400, 'must be "auto" or a number > 0'),
    ("implicit_euler", "solver", False, "must be one of direct, cg")])
def test_an_option_that_takes_a_count_or_a_name_says_so_for_a_bool_or_a_huge_int(
        integrator, option, value, takes):
    """iterations=True or first_step=10**400 (neither a str nor a float) was "must be a name (a
    str; its default is 'auto')", though both take numbers: the option's own check names them."""
    message = one_line(lambda: hooke.simulate(hooke.scene("spring1d"), integrator=integrator,
                                              t_end=0.01, **{option: value}), option)
    assert message.startswith(f"{option}: {takes}"), message


@pytest.mark.parametrize("name", [np.array([]), np.array(["chain"]), 5, None])
def test_a_scene_name_that_is_not_a_str_is_refused(name):
    """Issue 15 (confirmation pass, stop 28): hooke.scene(np.array([])) was a raw ValueError
    ('truth value of an empty array is ambiguous') and hooke.scene(np.array(["chain"])) a raw
    FileNotFoundError for "['chain'].toml"."""
    assert one_line(lambda: hooke.scene(name), "scene").startswith("scene: unknown scene (built-in: ")


def test_analytic_at_a_time_where_it_is_not_finite_is_refused():
    """Issue 15 (confirmation pass, stop 28): spring1d's analytic(1e308) printed NumPy's
    'invalid value encountered in sin' and returned NaN positions (ω·t overflows)."""
    import warnings

    scene = hooke.scene("spring1d")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for t in (1e308, [0.0, 1e308]):
            assert one_line(lambda: scene.analytic(t), "t") == (
                f"t: gives analytic positions that are not finite numbers (the time is too "
                f"large for the solution), got {t!r}")
        assert np.all(np.isfinite(scene.analytic([0.0, 1e3])))


@pytest.mark.parametrize("arguments", [dict(duration=1e308), dict(fps=1e308, duration=10.0)])
def test_a_movie_whose_frame_count_overflows_is_refused_by_its_count(spring_run, tmp_path,
                                                                    arguments):
    """Issue 15 (confirmation pass, stop 28): `hooke animate DIR --out m.mp4 --duration 1e308`
    ended 'unexpected OverflowError: cannot convert float infinity to integer (a bug in
    hooke)', exit 1: fps·duration is inf, which round() cannot take; it is a movie of more
    frames than a movie may have, as --duration 1e6 is."""
    from hooke.viz.animate import animate

    field = "duration"
    message = one_line(lambda: animate(spring_run, tmp_path / "movie.mp4", **arguments), field)
    assert "the movie would have inf frames" in message, message
    assert list(tmp_path.iterdir()) == []


def test_a_gradient_params_mode_that_is_not_a_str_is_named():
    """Issue 15 (confirmation pass, stop 28): hooke.gradient(…, {"stiffness": np.array([])})
    was a raw ValueError ('The truth value of an empty array is ambiguous') and
    np.array(["shared"]) was taken as "shared"."""
    from hooke import losses

    scene = hooke.scene("spring1d")
    loss = losses.tracking(np.zeros((3, 2, 1)))
    for mode in (np.array([]), np.array(["shared"]), None):
        message = one_line(lambda: hooke.gradient(scene, loss, {"stiffness": mode},
                                                  t_end=0.01, integrator="symplectic_euler"),
                           "params.stiffness")
        assert message.startswith("params.stiffness: must be 'each' or 'shared', got "), message


def test_a_tracking_loss_that_overflows_names_the_observed_positions():
    """Issue 15 (confirmation pass, stop 28): observed positions of 1e307 m printed NumPy's
    'overflow encountered in square' and hooke.gradient said 'loss: returned a non-finite
    value, got inf'; the loss names its observed positions (tracking's observed_x), as
    hooke.fit names its observed."""
    import warnings

    from hooke import losses

    scene = hooke.scene("spring1d")
    run = hooke.simulate(scene, integrator="symplectic_euler", t_end=0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        message = one_line(lambda: hooke.gradient(
            scene, losses.tracking(run.x * 1e307), {"stiffness": "shared"}, t_end=0.01,
            integrator="symplectic_euler"), "observed_x")
    assert message == ("observed_x: is so far from the run that the loss ½Σ w·|x − observed|² "
                       "overflows to inf (observed positions within about 5e+153 m of the run's "
                       "can be compared), got 2e+307")


def test_an_energy_reference_that_is_not_a_str_is_named():
    """Issue 15 (confirmation pass, stop 28): Scene(…, energy_reference=np.array([])) was a
    raw ValueError, 'The truth value of an empty array is ambiguous'."""
    import dataclasses

    scene = hooke.scene("spring1d")
    for reference in (np.array([]), np.array(["rest"])):
        assert one_line(lambda: dataclasses.replace(scene, energy_reference=reference),
                        "energy_reference").startswith(
            "energy_reference: must be one of zero, rest, got ")


def test_names_given_as_numpy_arrays_are_refused_in_one_line():
    """Issue 15 (confirmation pass, stop 28): a NumPy array where a name goes was a raw error
    from the membership test: ModelBuilder(spring_energy=np.array([])) and
    losses.energy_at(0.1, kind=np.array([])) a ValueError ('truth value of an empty array is
    ambiguous'), plots.check_kind(run, np.array(['energy'])) a TypeError ('unhashable type')."""
    from hooke import losses
    from hooke.viz import plots

    run = hooke.simulate(hooke.scene("spring1d"), t_end=0.01)
    for name in (np.array([]), np.array(["energy"])):
        one_line(lambda: hooke.ModelBuilder(dim=2, spring_energy=name), "spring_energy")
        one_line(lambda: losses.energy_at(0.1, kind=name), "kind")
        one_line(lambda: plots.check_kind(run, name), "kind")


def test_resume_with_out_is_refused_naming_out(tmp_path, monkeypatch, capsys):
    """Issue 15 (confirmation pass, stop 28): `hooke run --resume DIR --out OTHER` exited 0
    and wrote the plots and summary into DIR, OTHER never made and --out ignored in silence
    (the other settings given with --resume are refused); --out's default is still out/."""
    run = tmp_path / "run"
    assert run_main(monkeypatch, capsys, "run", "spring1d", "--t-end", "0.1", "--out", str(run),
                    "-q")[0] in (0, None)
    code, lines = run_main(monkeypatch, capsys, "run", "--resume", str(run), "--out",
                           str(tmp_path / "other"), "-q")
    assert code == 2 and lines == [
        "error: --out: a resumed run goes on where it is stored (--resume's directory); give "
        f"no --out with --resume, got {str(tmp_path / 'other')!r}"], lines
    assert not (tmp_path / "other").exists()
    monkeypatch.chdir(tmp_path)
    assert run_main(monkeypatch, capsys, "run", "spring1d", "--t-end", "0.1", "-q")[0] in (0, None)
    assert (tmp_path / "out" / "trajectory.h5").is_file()


def test_a_state_whose_pinned_particle_moves_otherwise_than_its_pin_is_refused():
    """Issue 15 (confirmation pass, stop 28): a State with spring1d's anchor (pinned, still)
    at velocity 5 m/s was taken: frame 0 showed v = 5 and 12.5 J more kinetic energy than the
    run has, and the first step set it back to 0 (energy_change counted the phantom). A pinned
    particle of the state must move as its pin does at the state's time (0, or u̇(t) on a
    prescribed motion); a state that a run ended in does, so a run continued from it is taken."""
    import dataclasses

    scene = hooke.scene("spring1d")
    v = scene.state.v.copy()
    v[0] = 5.0
    message = one_line(lambda: dataclasses.replace(scene, state=hooke.State(0.0, scene.state.x, v)),
                       "state.v[0]")
    assert message == ("state.v[0]: is a pinned particle's velocity, which its pin sets to [0.] "
                       "at t = 0, got [5.]")
    press = hooke.scene("square_press")  # its top row pinned and driven down
    first = hooke.simulate(press, t_end=0.05, dt=0.01)
    last = hooke.State(float(first.t[-1]), first.x[-1], first.v[-1])
    assert hooke.simulate(dataclasses.replace(press, state=last), t_end=0.02, dt=0.01).n_frames
    still = last.v.copy()
    still[press.model.pinned_index] = 0.0
    one_line(lambda: dataclasses.replace(press, state=hooke.State(last.t, last.x, still)),
             f"state.v[{press.model.pinned_index[0]}]")


def test_a_runs_own_states_with_moving_pins_are_taken_and_a_still_pin_is_exact():
    """Issue 15: a run's frame carries its time as t0 + k·dt, while its steps placed the moving
    pins at t + h + h … (save_every of them): the pin's velocity at the frame's time can differ
    from the stored one by that round-off. Such a state, given back to a Scene to go on, is
    taken: square_press at dt = 1/30 s with a frame every 10 steps ends its press (duration
    1 s) a rounding before t = 1 in the steps, so the frame at t = 1 holds the press speed,
    0.25 m/s, where the pin at t = 1 is still; the support of a pendulum swinging at 37 rad/s
    from t0 = 12345.678 s is 5.6e-9 m/s off its u̇(t) in a frame (both were refused by a tolerance
    of 1e-9 of the velocity's size). A still pin's velocity is 0 exactly: 1e-300 m/s is refused."""
    import dataclasses

    press = hooke.scene("square_press")
    run = hooke.simulate(press, dt=0.1 / 3, t_end=36 * (0.1 / 3), save_every=10)
    index = press.model.pinned_index
    at_one = int(np.flatnonzero(np.isclose(run.t, 1.0))[0])
    assert run.t[at_one] == 1.0
    np.testing.assert_array_equal(run.v[at_one][index], [[0.0, -0.25]] * index.size)
    np.testing.assert_array_equal(press.model.pinned_velocities(1.0), [[0.0, 0.0]] * index.size)
    for k in range(run.n_frames):
        dataclasses.replace(press, state=hooke.State(float(run.t[k]), run.x[k], run.v[k]))
    # not anything near the press speed at t = 1: half of it is refused
    v = run.v[at_one].copy()
    v[index] = [0.0, -0.125]
    one_line(lambda: dataclasses.replace(press, state=hooke.State(1.0, run.x[at_one], v)),
             f"state.v[{index[0]}]")

    pendulum = hooke.scene("pendulum", support_amplitude=0.1, support_omega=37.0)
    model, t0 = pendulum.model, 12345.678
    x, v = pendulum.state.x.copy(), pendulum.state.v.copy()
    x[0], v[0] = model.pinned_positions(t0)[0], model.pinned_velocities(t0)[0]
    start = dataclasses.replace(pendulum, state=hooke.State(t0, x, v))
    run = hooke.simulate(start, integrator="rk4", dt=0.001, t_end=0.4, save_every=200)
    off = max(float(np.max(np.abs(run.v[k][0] - model.pinned_velocities(float(run.t[k]))[0])))
              for k in range(run.n_frames))
    assert 1e-9 < off < 1e-7, off
    for k in range(run.n_frames):
        dataclasses.replace(start, state=hooke.State(float(run.t[k]), run.x[k], run.v[k]))

    spring = hooke.scene("spring1d")
    v = spring.state.v.copy()
    v[0] = 1e-300
    message = one_line(lambda: dataclasses.replace(spring, state=hooke.State(0.0, spring.state.x,
                                                                                v)), "state.v[0]")
    assert message.endswith("which its pin sets to [0.] at t = 0, got [1.e-300]"), message


def test_a_count_flag_of_thousands_of_digits_is_one_short_line(monkeypatch, capsys, tmp_path):
    """Stop 30: 5,000 digits passed the digits-only check and int() refused them past Python's
    4,300-digit limit: "Value error, Exceeds the limit (4300 digits) for integer string
    conversion … use sys.set_int_max_str_digits()", with the 5,000 digits echoed."""
    monkeypatch.chdir(tmp_path)
    code, lines = run_main(monkeypatch, capsys, "run", "spring1d", "--save-every", "9" * 5000)
    assert (code, lines) == (2, ["error: --save-every: must be an integer of at most 100 digits, "
                                 f"got '{'9' * 20}'… (5000 characters)"])
    assert list(tmp_path.iterdir()) == []


def test_a_function_motion_of_three_numbers_is_a_3d_displacement():
    """(0, 0, 0.1·t) was read as (u, du, ddu) of shape () each: 'particles[0].motion: must
    return u of shape (3,) at t = 0.0, got ()'. A tuple of arrays is still (u, du, ddu)."""
    def scene(function):
        b = hooke.ModelBuilder(dim=3, gravity=(0.0, 0.0, 0.0))
        b.add_particle((0.0, 0.0, 0.0), pinned=True, motion=FunctionMotion(function))
        b.add_particle((1.0, 0.0, 0.0), mass=1.0)
        b.add_spring(0, 1, stiffness=10.0)
        return hooke.Scene(b.finalize(), integrator="rk4", dt=0.01, t_end=0.1)
    as_tuple = hooke.simulate(scene(lambda t: (0.0, 0.0, 0.1 * t)))
    as_list = hooke.simulate(scene(lambda t: [0.0, 0.0, 0.1 * t]))
    np.testing.assert_array_equal(as_tuple.x, as_list.x)
    np.testing.assert_allclose(as_tuple.x[-1, 0], [0.0, 0.0, 0.01], atol=1e-15)
    rates = hooke.simulate(scene(lambda t: (np.array([0.0, 0.0, 0.1 * t]), np.array([0.0, 0.0, 0.1]),
                                             np.zeros(3))))
    np.testing.assert_allclose(rates.x, as_list.x, atol=1e-12)


def test_a_function_motion_of_t_at_least_0_is_differentiated_forward_at_0():
    """0.1·t**2.5 (complex before 0) was refused: 'particles[0].motion: could not be evaluated
    at t = 0.0 (float() argument must be … not 'complex')', the central difference's f(−h)."""
    def shaken(motion):
        b = hooke.ModelBuilder(dim=1, gravity=(0.0,))
        b.add_particle((0.0,), pinned=True, motion=motion)
        b.add_particle((1.0,), mass=1.0)
        b.add_spring(0, 1, stiffness=10.0)
        return hooke.simulate(hooke.Scene(b.finalize(), integrator="rk4", dt=0.01, t_end=1.0))
    motion = FunctionMotion(lambda t: [0.1 * t ** 2.5])
    u, du, ddu = motion(0.0)
    assert u.tolist() == [0.0] and abs(du[0]) < 1e-8 and abs(ddu[0]) < 1e-2  # h**1.5, h**0.5
    h = motion.h  # central differences wherever f(t − h) is defined, as before
    assert motion(1.0)[1][0] == (0.1 * (1.0 + h) ** 2.5 - 0.1 * (1.0 - h) ** 2.5) / (2 * h)
    exact = shaken(FunctionMotion(lambda t: ([0.1 * t ** 2.5], [0.25 * t ** 1.5],
                                             [0.375 * t ** 0.5])))
    np.testing.assert_allclose(shaken(motion).x, exact.x, atol=1e-9)


def test_a_function_motion_of_complex_values_is_refused_not_cut_to_its_real_part():
    """Stop 30 (red team): a FunctionMotion whose values were complex (0.1·(t − 1)**0.5 before
    t = 1) moved its pin by their real part, with only NumPy's ComplexWarning."""
    b = hooke.ModelBuilder(dim=1, gravity=(0.0,))
    motion = FunctionMotion(lambda t: np.array([0.1 * (t - 1 + 0j) ** 0.5]))
    message = one_line(lambda: b.add_particle((0.0,), pinned=True, motion=motion),
                       "particles[0].motion")
    assert message == ("particles[0].motion: could not be evaluated at t = 0.0 (complex values "
                       "are no displacements, got (6.123233995736766e-18+0.1j))")
    assert b.n_particles == 0  # the refused particle was left behind, free, before stop 30
    explicit = FunctionMotion(lambda t: (np.array([1j * t]), np.zeros(1), np.zeros(1)))
    free = b.add_particle((0.0,))
    assert one_line(lambda: b.pin(free, explicit), "particles[0].motion").startswith(
        "particles[0].motion: could not be evaluated")
    assert b.n_particles == 1 and not b.finalize().pinned[0]  # a refused pin pins nothing
