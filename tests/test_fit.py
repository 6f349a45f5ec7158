"""hooke.fit and `hooke fit` (issue 18 §2): parameters recovered from synthetic noisy motion to
within the reported uncertainty, the uncertainty shrinking with the noise, the differenced
Jacobian against the adjoint gradient, an undetermined direction reported as σ = inf, the
observed-data files, and bad input in one line (exit 2 on the command line)."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import hooke
from hooke.adjoint.params import with_values
from hooke.errors import HookeInputError
from hooke.fitting.problem import Problem
from hooke.io.observed import read_observed, write_observed_csv

from conftest import run_main

DT = 0.005
K, C = 5.0, 0.3  # spring1d's stiffness and the damping added to it


def damped_spring(k=K, c=C):
    return with_values(hooke.scene("spring1d"), {"stiffness": np.array([k]),
                                                 "damping": np.array([c])})


def noisy_record(scene, noise, seed=0, t_end=4.0, save_every=4, **options):
    """(times, observed): the run every save_every steps plus Gaussian noise; the pinned
    particles are not observed (NaN)."""
    truth = hooke.simulate(scene, dt=options.pop("dt", DT), t_end=t_end, save_every=save_every,
                           **options)
    observed = truth.x + np.random.default_rng(seed).normal(0.0, noise, truth.x.shape)
    observed[:, scene.model.pinned] = np.nan
    return truth.t, observed


def within(result, truth: dict, sigmas=3.0):
    for name, value in truth.items():
        error = abs(result.values[name] - value)
        assert error < sigmas * result.uncertainty[name], (name, result.values[name],
                                                           result.uncertainty[name])


@pytest.mark.parametrize("method", ["least_squares", "lbfgsb"])
def test_stiffness_and_damping_of_a_damped_spring_within_three_sigma(method):
    times, observed = noisy_record(damped_spring(), 0.01)
    start = damped_spring(3.0, 0.1)
    result = hooke.fit(start, observed, {"stiffness": "shared", "damping": "shared"}, times=times,
                       dt=DT, method=method)
    assert result.converged, result.message
    within(result, {"stiffness": K, "damping": C})
    assert result.log_space == [True, True]
    assert result.noise == pytest.approx(0.01, rel=0.2)  # σ from the residual: the noise added
    assert result.history[0] > 100 * result.history[-1]  # the loss fell from the poor start
    assert result.history[-1] == pytest.approx(result.loss)
    assert result.iterations == len(result.history) - 1 >= 2
    fitted = result.scene.model
    assert fitted.spring_stiffness[0] == pytest.approx(result.values["stiffness"])


def test_both_solvers_reach_the_same_minimum():
    times, observed = noisy_record(damped_spring(), 0.01, seed=2)
    found = [hooke.fit(damped_spring(4.0, 0.2), observed, ["stiffness", "damping"], times=times,
                       dt=DT, method=method) for method in ("least_squares", "lbfgsb")]
    np.testing.assert_allclose(found[0].x, found[1].x, rtol=1e-5)
    assert found[0].labels == ["stiffness[0]", "damping[0]"]


def test_the_uncertainty_shrinks_with_the_noise():
    sigmas = []
    for noise in (0.02, 0.002):
        times, observed = noisy_record(damped_spring(), noise, seed=1)
        result = hooke.fit(damped_spring(), observed, {"stiffness": "shared"},
                           initial={"stiffness": 4.0}, times=times, dt=DT)
        within(result, {"stiffness": K})
        sigmas.append(result.uncertainty["stiffness"])
    # σ ∝ the noise (the Gauss–Newton Hessian is the same): ten times less noise, ~ten times less σ
    assert sigmas[1] == pytest.approx(sigmas[0] / 10, rel=0.2)


def test_the_reported_sigma_is_the_spread_of_the_fits_over_noise_draws():
    """40 records with independent noise: the fitted values scatter by the reported σ. The
    sample standard deviation of 40 draws is within 1/√78 ≈ 11% of the true one at 1σ, so the
    ratio is asserted within 3 × 11%."""
    fits = []
    for seed in range(40):
        times, observed = noisy_record(damped_spring(), 0.01, seed=seed, t_end=2.0)
        fits.append(hooke.fit(damped_spring(), observed, {"stiffness": "shared", "damping": "shared"},
                              times=times, dt=DT))
    spread = np.std([fit.x for fit in fits], axis=0, ddof=1)
    reported = np.mean([fit.sigma for fit in fits], axis=0)
    np.testing.assert_allclose(spread / reported, 1.0, atol=0.34)


def test_irregular_observation_times_are_saved_frames():
    """Observed at steps 0, 6, 9 and 30: the run saves every 3rd step (their gcd) and ends at
    the last one; noise-free positions give the truth back."""
    steps = np.array([0, 6, 9, 30])
    truth = hooke.simulate(damped_spring(), dt=DT, t_end=30 * DT, save_every=3)
    observed = truth.x[steps // 3]
    result = hooke.fit(damped_spring(4.0, 0.2), observed, ["stiffness", "damping"],
                       times=steps * DT, dt=DT)
    np.testing.assert_allclose(result.x, [K, C], rtol=1e-6)
    assert result.residual.size == steps.size  # the anchor's rows are left out


def test_the_differenced_jacobian_gives_the_adjoint_gradient():
    """Jᵀr from the central differences of the forward run equals dL/dz from hooke.gradient."""
    times, observed = noisy_record(damped_spring(), 0.01)
    problem = Problem(damped_spring(4.0, 0.2), observed, {"stiffness": "shared", "damping": "each"},
                      times=times, dt=DT)
    z = problem.unknowns.z0
    by_differences = problem.jacobian(z).T @ problem.residual(z)
    loss, by_adjoint = problem.loss_and_gradient(z)
    np.testing.assert_allclose(by_differences, by_adjoint, rtol=1e-6)
    assert loss == pytest.approx(0.5 * np.sum(problem.residual(z) ** 2), rel=1e-12)


def test_stiffness_and_damping_of_a_cloth_from_three_tracked_points():
    truth = {"stiffness": 500.0, "damping": 2.0}
    scene = hooke.scene("cloth2d", nx=5, ny=4, **truth)
    times, observed = noisy_record(scene, 1e-3, t_end=1.0, save_every=10, dt=0.002)
    tracked = [0, 16, 10]  # the two bottom corners and a point in the middle (id = i·ny + j)
    untracked = np.setdiff1d(np.arange(scene.model.n_particles), tracked)
    observed[:, untracked] = np.nan
    start = hooke.scene("cloth2d", nx=5, ny=4, stiffness=300.0, damping=1.0)
    result = hooke.fit(start, observed, {"stiffness": "shared", "damping": "shared"}, times=times,
                       dt=0.002)
    within(result, truth)
    assert result.residual.size == len(tracked) * 2 * times.size


def test_a_direction_the_motion_does_not_fix_has_infinite_sigma():
    """The spring's motion depends on k/m alone: k and m together are undetermined."""
    times, observed = noisy_record(hooke.scene("spring1d"), 0.01, t_end=2.0)
    result = hooke.fit(hooke.scene("spring1d"), observed, ["stiffness", "mass"], times=times,
                       initial={"stiffness": 4.0}, dt=DT)
    assert np.all(np.isinf(result.sigma))
    assert result.x[0] / result.x[1] == pytest.approx(K / 0.5, rel=1e-2)  # the ratio is fitted
    assert result.summary()["parameters"][0]["sigma"] is None  # strict JSON


def test_bounds_hold_the_fit():
    times, observed = noisy_record(damped_spring(), 0.01)
    result = hooke.fit(damped_spring(4.0, C), observed, {"stiffness": "shared"},
                       bounds={"stiffness": (1.0, 4.5)}, times=times, dt=DT)
    assert result.values["stiffness"] == pytest.approx(4.5, rel=1e-6)



@pytest.mark.parametrize("method", ["least_squares", "lbfgsb"])
def test_a_fit_that_ends_on_a_bound_says_so(method):
    """Data from k = 5 fitted within (1, 4.5): the fit stops on the upper bound, which is no
    minimum of the loss, and was reported as "stiffness = 4.5 ± 0.0036", converged, as an
    interior fit is. It now says that it ends on the bound (text, summary, at_bound)."""
    times, observed = noisy_record(damped_spring(), 0.01)
    result = hooke.fit(damped_spring(4.0, C), observed, {"stiffness": "shared"}, method=method,
                       bounds={"stiffness": (1.0, 4.5)}, times=times, dt=DT)
    assert result.at_bound == ["high"]
    assert result.text().splitlines()[0].endswith(
        " (at its upper bound: the best fit within the bounds, not the loss's minimum; σ as if free)")
    assert result.summary()["parameters"][0]["at_bound"] == "high"
    low = hooke.fit(damped_spring(6.0, C), observed, {"stiffness": "shared"}, method=method,
                    bounds={"stiffness": (5.5, 9.0)}, times=times, dt=DT)
    assert low.at_bound == ["low"] and "(at its lower bound:" in low.text()
    free = hooke.fit(damped_spring(4.0, C), observed, {"stiffness": "shared"}, method=method,
                     bounds={"stiffness": (1.0, 9.0)}, times=times, dt=DT)
    assert free.at_bound == [None] and "bound" not in free.text()
    assert free.summary()["parameters"][0]["at_bound"] is None

def test_an_open_low_bound_of_a_positive_parameter_is_no_bound(observed_csv, monkeypatch, capsys):
    """Issue 15 (third red-team pass): (None, 4.5), and `--bounds stiffness=:4.5` ("an empty
    side: none"), were refused with "low must be >= 0 (the parameter is positive), got (None,
    4.5)"; for a parameter fitted in log space no low bound is 0."""
    times, observed = noisy_record(damped_spring(), 0.01)
    result = hooke.fit(damped_spring(4.0, C), observed, {"stiffness": "shared"},
                       bounds={"stiffness": (None, 4.5)}, times=times, dt=DT)
    assert result.values["stiffness"] == pytest.approx(4.5, rel=1e-6)
    code, lines = run_main(monkeypatch, capsys, "fit", "spring1d", "--observed", str(observed_csv),
                           "--param", "stiffness", "--initial", "stiffness=3", "--bounds",
                           "stiffness=:")
    assert not code, lines


def test_chosen_elements_only_are_fitted():
    scene = hooke.scene("chain", n=3, damping=1.0)
    model = scene.model
    masses = model.mass.copy()
    masses[2] *= 1.5
    truth = with_values(scene, {"mass": masses})
    times, observed = noisy_record(truth, 1e-4, t_end=0.4, save_every=5, dt=0.002)
    result = hooke.fit(scene, observed, {"mass": [2]}, times=times, dt=0.002)
    assert result.labels == ["mass[2]"]
    assert abs(result.x[0] - masses[2]) < 3 * result.sigma[0]
    assert np.isnan(result.values["mass"][1])  # held, not fitted


@pytest.mark.parametrize("suffix", [".csv", ".h5"])
def test_observed_files_round_trip(tmp_path, suffix):
    scene = damped_spring()
    path = tmp_path / f"observed{suffix}"
    result = hooke.simulate(scene, dt=DT, t_end=0.5, save_every=10,
                            **({"store": path} if suffix == ".h5" else {}))
    if suffix == ".csv":
        x = result.x.copy()
        x[:, 0] = np.nan
        write_observed_csv(path, result.t, x)
    record = read_observed(path, 2, 1)
    np.testing.assert_array_equal(record.t, result.t)
    np.testing.assert_array_equal(record.x[:, 1], result.x[:, 1])


BAD_CALLS = {
    "unknown parameter": (dict(params=["stifness"]), "params: unknown parameter"),
    "observed of the wrong shape": (dict(observed=np.zeros((5, 3, 1))), "observed: must have shape"),
    "bounds not a pair": (dict(bounds={"stiffness": 3.0}), "bounds.stiffness: must be a pair"),
    "bounds reversed": (dict(bounds={"stiffness": (9.0, 1.0)}), "bounds.stiffness: must be numbers with low < high"),
    "bounds negative in log space": (dict(bounds={"stiffness": (-1.0, 9.0)}), "bounds.stiffness: low must be >= 0"),
    "bounds of an unfitted name": (dict(bounds={"mass": (0.1, 1.0)}), "bounds: names a parameter that is not fitted"),
    "bounds without the start": (dict(bounds={"stiffness": (6.0, 9.0)}), "bounds.stiffness: does not hold the start"),
    "times off the step grid": (dict(times=np.arange(41) * 0.0123), "times: 0.0123 is not on the step grid"),
    "times past the run": (dict(t_end=0.1), "times: 2.0 is after the run's end"),
    "times before the run": (dict(times=np.arange(41) * 0.05 - 0.05), "times: -0.05 is before the run's start"),
    "a damping of 0 in log space": (dict(params=["damping"]), "params.damping: damping[0] starts at 0"),
    "initial 0 in log space": (dict(initial={"stiffness": 0.0}), "initial.stiffness: must be > 0"),
    # issue 15: the second mention of element 0 was dropped in silence (one unknown, not two)
    "an element picked twice": (dict(params={"stiffness": [0, 0]}),
                                "params.stiffness: picks element 0 more than once, got [0, 0]"),
    "unknown method": (dict(method="newton"), "method: must be one of"),
    "no adjoint for lbfgsb": (dict(method="lbfgsb", integrator="rk4"), "integrator: has no adjoint"),
    # Issue 15: positions of 1e308 m gave rms = inf, "converged", exit 0.
    "a residual whose square overflows": (
        dict(observed=np.full((41, 2, 1), 1e308)), "observed: the loss ½|simulated − observed|² at "
        "the start overflows to inf: the observed x of particle 1 at t = 0 s is 1e+308 m from the "
        "run's; observed positions must lie within about 2.96e+153 m of the simulated ones, got 1e+308"),
    "the same with lbfgsb": (dict(observed=np.full((41, 2, 1), 1e308), method="lbfgsb"),
                             "at the start overflows to inf"),
    # √(max float · 2 / 41 observed values) = 2.96e153 m; a failed run's residual is 1e3 × the span
    "positions whose spread overflows": (
        dict(observed=np.stack([np.zeros(41), np.resize([1e151, -1e151], 41)], 1)[..., None]),
        "observed: positions span 2e+151 m: the fit's loss ½|simulated − observed|² overflows to "
        "inf; observed positions must lie within about 2.96e+150 m of each other, got 1e+151"),
}


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_bad_input_is_one_line_naming_the_field(case):
    changes, message = BAD_CALLS[case]
    scene = hooke.scene("spring1d")
    t = np.arange(41) * 0.05
    call = dict(observed=np.stack([np.zeros_like(t), 2.0 * np.cos(np.sqrt(10.0) * t)], 1)[..., None],
                params=["stiffness"], times=t, dt=DT)
    call.update(changes)
    with pytest.raises(HookeInputError) as error:
        hooke.fit(scene, call.pop("observed"), call.pop("params"), **call)
    assert message in str(error.value) and "\n" not in str(error.value)


T_SPRING = np.arange(11) * 0.05
X_SPRING = np.stack([np.zeros(11), 2.0 * np.cos(np.sqrt(10.0) * T_SPRING)], 1)[..., None]


@pytest.mark.parametrize("changes, field, value", [
    (dict(observed=X_SPRING.astype(str)), "observed", "(11, 2, 1)"),
    (dict(observed=X_SPRING.astype(bool)), "observed", "(11, 2, 1)"),
    (dict(observed=X_SPRING.astype(complex)), "observed", "(11, 2, 1)"),
    (dict(times=[str(t) for t in T_SPRING]), "times", "(11,)"),
    (dict(initial={"stiffness": 10 ** 400}), "initial.stiffness", "1000000000"),
    (dict(initial={"stiffness": ["8"]}), "initial.stiffness", "['8']"),
    (dict(initial={"stiffness": [True]}), "initial.stiffness", "[True]"),
])
def test_fit_inputs_are_numbers_as_everywhere_else(changes, field, value):
    """Issue 15 (red-team pass, stop 28): hooke.fit took observed positions of strings, bools
    (fitted to 0 and 1 m) or complex numbers (NumPy's ComplexWarning, the imaginary part
    dropped) and times of strings, through np.array(dtype=float); initial={"stiffness":
    10**400} was a raw OverflowError, and ["8"] or [True] were a start of 8 and 1."""
    call = {**dict(observed=X_SPRING, times=T_SPRING, initial=None), **changes}
    with pytest.raises(HookeInputError) as error:
        hooke.fit(hooke.scene("spring1d"), call.pop("observed"), ["stiffness"], dt=DT,
                  max_iterations=2, **call)
    message = str(error.value)
    assert message.startswith(f"{field}: ") and "\n" not in message, message
    assert value in message.rsplit(", got ", 1)[1], message


@pytest.mark.parametrize("tolerance", [np.float32(1e-6), np.float64(1e-6)])
def test_fit_tolerance_takes_numpy_numbers(tolerance):
    """Issue 15 (red-team pass, stop 28): tolerance=np.float32(1e-6) was refused as "must be a
    number in (0, 1)" (an isinstance check of int and float) where every other number of the
    API takes NumPy's."""
    result = hooke.fit(hooke.scene("spring1d"), X_SPRING, ["stiffness"], times=T_SPRING, dt=DT,
                       max_iterations=2, tolerance=tolerance)
    assert np.all(np.isfinite(result.values["stiffness"]))


def test_fit_still_takes_lists_object_arrays_and_numpy_numbers():
    """The strict conversion keeps what was right: nested lists, NaN rows, float32 and object
    arrays of numbers, NumPy scalars as a start."""
    observed = X_SPRING.copy()
    observed[:, 0] = np.nan  # the pinned particle, not observed
    expected = hooke.fit(hooke.scene("spring1d"), observed, ["stiffness"], times=T_SPRING, dt=DT,
                         max_iterations=3).values["stiffness"]
    for given, times, initial in ((observed.tolist(), T_SPRING.tolist(), None),
                                  (observed.astype(object), T_SPRING.astype(np.float32), None),
                                  (observed, T_SPRING, {"stiffness": np.float64(5.0)})):
        result = hooke.fit(hooke.scene("spring1d"), given, ["stiffness"], times=times, dt=DT,
                           max_iterations=3, initial=initial)
        if initial is None:
            np.testing.assert_allclose(result.values["stiffness"], expected, rtol=1e-6)


@pytest.mark.parametrize("scene", [5, None, "spring1d"])
def test_a_scene_that_is_not_a_scene_is_one_line(scene):
    """Issue 15 (third red-team pass): hooke.fit(5, …) was AttributeError: 'int' object has no
    attribute 'model'."""
    with pytest.raises(HookeInputError) as error:
        hooke.fit(scene, np.zeros((2, 2, 1)), ["stiffness"], times=[0.0, 0.05])
    assert str(error.value) == ("scene: must be a hooke.Scene (hooke.scene(name), hooke.load(path)),"
                                f" got {type(scene).__name__!r}")


# -- the command line --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def observed_csv(tmp_path_factory):
    times, observed = noisy_record(damped_spring(), 0.01, t_end=2.0)
    path = tmp_path_factory.mktemp("fit") / "observed.csv"
    write_observed_csv(path, times, observed)
    return path


def test_fit_command_prints_the_values_and_writes_the_summary(observed_csv, tmp_path, monkeypatch,
                                                              capsys):
    out = tmp_path / "fit.json"
    code, lines = run_main(monkeypatch, capsys, "fit", "spring1d", "--observed", str(observed_csv),
                           "--param", "stiffness,damping", "--initial", "stiffness=3",
                           "--initial", "damping=0.1", "--out", str(out))
    assert not code, lines  # sys.exit(None): status 0
    assert lines[0].startswith("iteration 1: loss")  # progress on stderr, a line per iteration
    summary = json.loads(out.read_text())
    assert summary["converged"] and summary["scene"] == "spring1d"
    for name, value in (("stiffness", K), ("damping", C)):
        assert abs(summary["values"][name] - value) < 3 * summary["uncertainty"][name]
    assert len(summary["history"]) == summary["iterations"] + 1


def test_a_repeated_param_flag_fits_every_name_given(observed_csv, tmp_path, monkeypatch, capsys):
    """`-p stiffness -p damping` fitted damping alone (the last flag), in silence; it fits both,
    as `-p stiffness,damping` does, and a name repeated across flags is refused."""
    out = tmp_path / "fit.json"
    base = ["fit", "spring1d", "--observed", str(observed_csv), "--initial", "damping=0.1"]
    code, lines = run_main(monkeypatch, capsys, *base, "-p", "stiffness", "-p", "damping",
                           "--out", str(out))
    assert not code, lines
    assert sorted(json.loads(out.read_text())["values"]) == ["damping", "stiffness"]
    code, lines = run_main(monkeypatch, capsys, *base, "-p", "damping", "-p", "damping")
    assert (code, lines) == (2, ["error: --param: damping given more than once, got "
                                 "'damping,damping'"])


@pytest.mark.parametrize("args, message", [
    (["--param", "stifness"], "--param: unknown parameter"),
    (["--param", "damping"], "--param damping: damping starts at 0"),
    (["--param", "stiffness", "--bounds", "stiffness=3"], "--bounds: must be NAME=LOW:HIGH"),
    (["--param", "stiffness", "--bounds", "stiffness=9:1"], "--bounds stiffness: must be numbers with low < high"),
    (["--param", "stiffness", "--dt", "0.003"], "times: 0.02 is not on the step grid"),
    (["--param", "stiffness", "--method", "lbfgsb", "-i", "rk4"], "--integrator: has no adjoint"),
    # issue 15: hooke.fit's arguments were named as in Python (max_iterations, initial.stiffness)
    (["--param", "stiffness", "--max-iterations", "0"], "--max-iterations: must be an integer from 1 to 10000, got 0"),
    (["--param", "stiffness", "--initial", "stiffness=nan"], "--initial stiffness: must be a finite number"),
    (["--param", "stiffness", "--method", "newton"], "--method: must be one of least_squares, lbfgsb"),
    (["--param", "stiffness", "--t-end", "-1"], "--t-end: must be a finite number > 0, got -1.0"),
    (["--param", "stiffness", "--observed", "missing.csv"], "--observed: no such file"),
    # issue 15: a number past the largest float was shown as the inf nobody typed
    (["--param", "stiffness", "--initial", "stiffness=1e400"],
     "--initial stiffness: is past the largest float (1.798e+308), got '1e400'"),
    (["--param", "stiffness", "--bounds", "stiffness=1:1e999"],
     "--bounds stiffness: is past the largest float (1.798e+308), got '1e999'"),
    # Stop 29: `-O dt=0.01` was "unexpected TypeError: fit() got multiple values for keyword
    # argument 'dt' (a bug in hooke)", and a repeated key kept its last value in silence.
    (["--param", "stiffness", "-O", "dt=0.01"],
     "--option: dt is not an integrator option but an argument of hooke.simulate"),
    (["--param", "stiffness", "-O", "method=lbfgsb"],
     "--option: method is not an integrator option but an argument of hooke.fit"),
    (["--param", "stiffness", "-O", "tol=1e-8", "-O", "tol=1e-9"],
     "--option: tol given more than once, got 'tol=1e-9'"),
])
def test_fit_command_bad_input_is_one_line_exit_2(observed_csv, monkeypatch, capsys, args, message):
    base = ["fit", "spring1d"] + ([] if "--observed" in args else ["--observed", str(observed_csv)])
    code, lines = run_main(monkeypatch, capsys, *base, *args)  # (an --observed given twice is
    assert code == 2  # refused as any option of one value is)
    assert len(lines) == 1 and lines[0].startswith(f"error: {message}"), lines


@pytest.mark.parametrize("out", [".", "/", "..", "sub/.", "sub/", "new/.", "new/"])
def test_fit_command_names_an_out_that_is_a_folder(observed_csv, monkeypatch, capsys, tmp_path,
                                                   out):
    """Issue 15 (red-team pass, stop 28): `hooke fit … --out .` (or `/`) was exit 1, "unexpected
    ValueError: PosixPath('.') has an empty name (a bug in hooke)": the partial file's name was
    made before the directory was refused, as `--out ..` is. Then `--out sub/.` (or `sub/`),
    which pathlib reads as `sub`, was refused as 'sub' when the folder existed and wrote a file
    named sub when it did not; now the folder the name ends in is refused as typed."""
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    code, lines = run_main(monkeypatch, capsys, "fit", "spring1d", "--observed",
                           str(observed_csv), "--param", "stiffness", "--out", out)
    assert (code, lines) == (2, [f"error: --out: names a folder, not a file: give the name of a "
                                 f"file (in it), got '{out}'"])
    assert sorted(path.name for path in tmp_path.iterdir()) == ["sub"]
    assert not list((tmp_path / "sub").iterdir())


def test_a_trajectory_of_another_scene_is_one_line(tmp_path, monkeypatch, capsys):
    path = tmp_path / "chain.h5"
    hooke.simulate(hooke.scene("chain", n=2), t_end=0.01, store=path)
    code, lines = run_main(monkeypatch, capsys, "fit", "spring1d", "--observed", str(path),
                           "--param", "stiffness")
    assert code == 2 and len(lines) == 1
    assert "observed: must have shape (times, 2, 1)" in lines[0] and "got (11, 3, 2)" in lines[0], lines  # 11 frames, 3 particles in 2D


def test_a_csv_of_the_wrong_dimension_is_one_line(tmp_path, monkeypatch, capsys):
    path = tmp_path / "observed.csv"
    path.write_text("t,particle,x,y\n0,1,2.0,0.0\n")
    code, lines = run_main(monkeypatch, capsys, "fit", "spring1d", "--observed", str(path),
                           "--param", "stiffness")
    assert code == 2 and len(lines) == 1
    assert "header must name the columns t, particle, x (this scene is 1D)" in lines[0]


def test_the_readme_example_recovers_the_cloth_within_three_sigma():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Fitting parameters to observed motion\n\n.*?```python\n(.*?)```", text,
                      re.S).group(1)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    within(namespace["fit"], {"stiffness": 500.0, "damping": 2.0})


def test_a_stored_trajectory_is_observed_and_its_pins_are_left_out(tmp_path):
    """A .h5 record holds every particle; the pinned anchor never moves, so its zero residuals
    are not counted (they would shrink the noise estimate)."""
    path = tmp_path / "trajectory.h5"
    hooke.simulate(damped_spring(), dt=DT, t_end=1.0, save_every=5, store=path)
    record = read_observed(path, 2, 1)
    result = hooke.fit(damped_spring(4.0, C), record, {"stiffness": "shared"}, dt=DT)
    assert result.residual.size == record.t.size  # the moving particle's x only
    assert result.values["stiffness"] == pytest.approx(K, rel=1e-6)  # noise-free: the truth


# -- a fresh red-team pass (issue 15's "Done when") ----------------------------------------------

def test_a_start_whose_run_blows_up_is_refused_not_reported_converged(observed_csv, monkeypatch,
                                                                       capsys):
    """At stiffness 1e308 symplectic Euler blows up at step 1: every residual was the same
    failure value, the Jacobian zero, and the fit printed "stiffness = 1e+308" as converged after
    0 iterations (exit 0). Now it stops before the first iteration, saying why (exit 1)."""
    code, lines = run_main(monkeypatch, capsys, "fit", "spring1d", "--observed", str(observed_csv),
                           "--param", "stiffness", "--initial", "stiffness=1e308")
    assert code == 1 and len(lines) == 1, lines
    assert lines[0].startswith("error: the run at the start (stiffness = 1e+308) fails, so the fit "
                               "cannot begin: the state became non-finite at step 1")
    assert lines[0].endswith("; start from values whose run does not blow up (initial=, "
                             "--initial NAME=VALUE)")


@pytest.mark.parametrize("start", [1e-300, 1e-13])
@pytest.mark.parametrize("method", ["least_squares", "lbfgsb"])
def test_a_start_on_a_plateau_of_the_loss_is_not_reported_converged(observed_csv, method, start):
    """Issue 15 (fourth pass): from stiffness 1e-300 the motion does not change with ln k, the
    gradient is 0 and met the tolerance: "stiffness = 1e-300 ± inf ... 0 iterations" as a
    converged fit. Now it is not converged, saying the loss is flat there. From 1e-13 it is
    nearly flat: the gradient in ln k met the tolerance too, and "stiffness = 1e-13 ± 0.079"
    was reported converged where the data say 5; the Gauss–Newton step from there asks
    to move ln k by ~1e12, so it is not converged either."""
    record = read_observed(observed_csv, 2, 1)
    result = hooke.fit(damped_spring(4.0, C), record, {"stiffness": "shared"}, dt=DT,
                       initial={"stiffness": start}, method=method)
    assert result.iterations == 0 and result.values["stiffness"] == pytest.approx(start)
    assert not result.converged and not result.summary()["converged"]
    assert result.message == (f"no step from the start (stiffness = {start:g}): the loss does not "
                              "change with stiffness there; start from other values (initial=, "
                              "--initial NAME=VALUE)")
    assert result.text().endswith(f"{method} (not converged: {result.message})")
    moved = hooke.fit(damped_spring(4.0, C), record, {"stiffness": "shared"}, dt=DT,
                      initial={"stiffness": 1.0}, method=method)
    assert moved.converged and moved.values["stiffness"] == pytest.approx(K, rel=0.05)


@pytest.mark.parametrize("method", ["least_squares", "lbfgsb"])
def test_a_start_at_the_minimum_is_converged(observed_csv, method):
    """The plateau check above leaves a fit that starts where the loss is least converged: from
    a fit's own result, and (noise-free data) from the truth, where the residual is round-off."""
    record = read_observed(observed_csv, 2, 1)
    first = hooke.fit(damped_spring(4.0, C), record, {"stiffness": "shared"}, dt=DT, method=method)
    again = hooke.fit(damped_spring(4.0, C), record, {"stiffness": "shared"}, dt=DT, method=method,
                      initial={"stiffness": first.values["stiffness"]})
    assert first.converged and again.converged, (first.message, again.message)
    assert again.values["stiffness"] == pytest.approx(first.values["stiffness"], rel=1e-6)
    if method == "least_squares":  # (L-BFGS-B's line search ends ABNORMAL at a loss of 1e-32)
        scene = hooke.scene("spring1d")
        truth = hooke.simulate(scene, dt=DT, t_end=0.5, save_every=10)
        exact = hooke.fit(scene, truth, {"stiffness": "shared"}, dt=DT, method=method)
        assert exact.converged and exact.iterations == 0, exact.message
        assert exact.values["stiffness"] == pytest.approx(K, rel=1e-9)


@pytest.mark.parametrize("content, message", [
    (b"\xff\xfet,particle,x\n0.1,1,2\n", "error: --observed bad.csv: is not UTF-8 text (byte 0), got"),
    (b"t,particle,x\n1e300,1,1.9\n1e301,1,1.8\n",
     "error: times: 1e+300 is more than the 1e+08 steps of dt = 0.005 s hooke runs after the "
     "start, got 1e+300"),
    # float() reads "1_000" as 1000 and "1_0.5" as 10.5: a mistyped cell, never a CSV number
    (b"t,particle,x\n0.1,1,1_000\n", "error: --observed bad.csv line 2: must be 3 finite decimal "
     "numbers, got '0.1,1,1_000'"),
    # Issue 15: observations spanning 1e9 s, or 3e5 s (three runs of 6e7 steps), ran for hours
    (b"t,particle,x\n1e9,1,1\n", "error: times: 1000000000.0 is more than the 1e+08 steps of "
     "dt = 0.005 s hooke runs after the start, got 1000000000.0"),
    (b"t,particle,x\n1e5,1,1\n3e5,1,1\n", "error: times: the fit's first iteration would take 3 "
     "runs of 6e+07 steps of dt = 0.005 s (1.8e+08 steps), more than the 1e+08 hooke runs: "
     "observe a shorter span or take a larger dt, got 300000.0"),
    (b"t,particle,x\n0.5,1,1e308\n1.0,1,1e308\n", "error: --observed: the loss ½|simulated − "
     "observed|² at the start overflows to inf: the observed x of particle 1 at t = 0.5 s is "
     "1e+308 m from the run's"),
    (b"t,particle,x\n0.1,1_0,0.5\n", "error: --observed bad.csv line 2: must be 3 finite decimal "
     "numbers, got '0.1,1_0,0.5'"),
    # a repeated row was "particle 1 appears twice at t = 0.2 s, got 4": 4 was the line
    (b"t,particle,x\n0.1,1,0.5\n\n0.2,1,0.4\n0.1,1,0.5\n", "error: --observed bad.csv line 5: "
     "particle 1 at t = 0.1 s is already observed on line 2"),
])
def test_an_undecodable_csv_or_a_time_past_every_step_is_one_line(tmp_path, monkeypatch, capsys,
                                                                  content, message):
    """A CSV in another encoding was a UnicodeDecodeError "bug in hooke"; t = 1e300 wrapped
    round int64 and was called "before the run's start"."""
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    code, lines = run_main(monkeypatch, capsys, "fit", "spring1d", "--observed", str(path),
                           "--param", "stiffness")
    assert code == 2 and len(lines) == 1 and lines[0].startswith(message), lines


@pytest.mark.filterwarnings("error")
def test_a_time_that_overflows_the_step_count_is_one_line_without_a_warning(tmp_path, monkeypatch,
                                                                           capsys):
    """Issue 15 (third red-team pass): t = 1e308 was refused, after NumPy's "RuntimeWarning:
    overflow encountered in divide" and its source line on stderr."""
    path = tmp_path / "bad.csv"
    path.write_bytes(b"t,particle,x\n0,1,2\n1e308,1,1.9\n")
    code, lines = run_main(monkeypatch, capsys, "fit", "spring1d", "--observed", str(path),
                           "--param", "stiffness")
    assert code == 2 and lines == ["error: times: 1e+308 is more than the 1e+08 steps of dt = "
                                   "0.005 s hooke runs after the start, got 1e+308"], lines


def test_a_spreadsheets_byte_order_mark_is_not_part_of_the_header(tmp_path):
    """Spreadsheets save "CSV UTF-8" with a byte-order mark before the header: read as the plain
    file (it was refused as a header naming '\\ufefft')."""
    plain, marked = tmp_path / "plain.csv", tmp_path / "marked.csv"
    plain.write_text("t,particle,x\n0.05,1,1.97\n0.1,1,1.9\n", encoding="utf-8")
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    a, b = read_observed(plain, 2, 1), read_observed(marked, 2, 1)
    np.testing.assert_array_equal(a.t, b.t)
    np.testing.assert_array_equal(a.x, b.x)
    assert a.x[1, 1, 0] == 1.9


def test_drag_and_wind_of_a_hanging_mass_within_three_sigma():
    """Air drag (fitted in log space, the pinned anchor's coefficient left out) and the steady
    wind (as it is) from the noisy motion of a mass swinging on a spring in the wind."""
    def hanging(drag, wind):
        builder = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
        builder.add_particle((0.0, 0.0), pinned=True)
        builder.add_particle((0.0, -1.0), mass=2.0)
        builder.add_spring(0, 1, stiffness=50.0)
        builder.set_air(drag, wind=wind)
        return hooke.Scene(builder.finalize(), integrator="implicit_euler_linear", dt=DT,
                           t_end=4.0)

    times, observed = noisy_record(hanging(0.5, (3.0, -1.0)), 0.01)
    result = hooke.fit(hanging(0.2, (1.0, 0.0)), observed, {"drag": "each", "wind": "each"},
                       times=times, dt=DT)
    assert result.converged, result.message
    assert result.labels == ["drag[1]", "wind[0]", "wind[1]"]
    assert result.log_space == [True, False, False]
    for fitted, truth, sigma in zip(result.x, (0.5, 3.0, -1.0), result.sigma):
        # σ: 0.007 N·s/m, 0.04 and 0.07 m/s at this noise; the start was 60 % off in c
        assert abs(fitted - truth) < 3 * sigma < 0.25 * abs(truth), (result.labels, result.x,
                                                                       result.sigma)


def test_fit_command_names_what_an_observed_path_is_when_not_a_file(monkeypatch, capsys, tmp_path):
    """Issue 15 (second red-team pass): a FIFO, a device or a directory as --observed read "no
    such file", although it exists; now one line saying what it is (and never read from)."""
    fifo = tmp_path / "observed.csv"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a FIFO (named pipe)"), ("/dev/zero", "a device"),
                       (tmp_path, "a directory")):
        code, lines = run_main(monkeypatch, capsys, "fit", "spring1d", "--observed", str(path),
                               "--param", "stiffness")
        assert code == 2 and lines == [f"error: --observed: is {kind}; a file of observed motion must "
                                       f"be a regular file, got '{path}'"], lines


def test_a_start_the_scene_file_would_refuse_is_refused_before_the_fit(tmp_path, monkeypatch,
                                                                       capsys):
    """Issue 15: `hooke fit crane -p wind --initial wind=1e300` stepped until "Newton did not
    converge … try smaller dt". A scene file refuses that wind (the drag energy squares it, and
    its square overflows), and so do hooke.fit and `hooke fit`, up front, with the same check and
    in one line naming the start; so for the positions and velocities the energies square. The
    others' scene-file checks (finite; > 0 or >= 0) are those a start already passes."""
    crane = hooke.scene("crane")
    path = tmp_path / "crane.h5"
    hooke.simulate(crane, t_end=10 * crane.dt, store=path)
    record = read_observed(path, crane.model.n_particles, crane.model.dim)
    huge = "is too large (its squared length overflows to inf), got [1e+300, 1e+300, 1e+300]"
    cases = [("wind", 1e300, "initial.wind: " + huge), ("x0", 1e300, "initial.x0[0]: " + huge),
             ("v0", [[1e300] * 3] * 8, "initial.v0[0]: " + huge),
             ("drag", -1.0, "initial.drag: must be > 0 (fitted in log space), got -1.0"),
             ("stiffness", float("inf"), "initial.stiffness: must be a finite number or array, "
              "got inf"),
             ("mass", 0.0, "initial.mass: must be > 0 (fitted in log space), got 0.0")]
    for name, value, message in cases:
        with pytest.raises(HookeInputError) as error:
            hooke.fit(crane, record, {name: "each"}, initial={name: value})
        assert str(error.value) == message
    code, lines = run_main(monkeypatch, capsys, "fit", "crane", "--observed", str(path), "-p",
                           "wind", "--initial", "wind=1e300")
    assert (code, lines) == (2, ["error: --initial wind: " + huge])
    # the scene file's own refusal of the same wind, for comparison
    builder = hooke.ModelBuilder(dim=3)
    with pytest.raises(HookeInputError) as error:
        builder.set_air(0.1, wind=[1e300] * 3)
    assert str(error.value) == "air.wind: " + huge


@pytest.mark.parametrize("changes, field", [
    (dict(save_every=0), "save_every"), (dict(save_every="1"), "save_every"),
    (dict(save_every=[]), "save_every"), (dict(save_every=10**400), "save_every"),
    (dict(save_every=False), "save_every"), (dict(bounds={"stiffness": np.array(1.0)}),
                                             "bounds.stiffness"),
    (dict(method=np.array([])), "method"), (dict(method=np.array(["lbfgsb"])), "method"),
    # issue 15: below machine epsilon SciPy warned that the test was disabled (all three
    # tolerances below it: a raw ValueError from least_squares)
    (dict(tolerance=1e-320), "tolerance"), (dict(tolerance=1e-17), "tolerance")])
def test_bad_fit_settings_of_any_type_are_one_line(changes, field):
    """Issue 15 (confirmation pass, stop 28): hooke.fit's save_every went unchecked into
    `k % save_every` (0: NumPy's divide-by-zero warning, then a wrong message; '1', [] and
    10**400: raw TypeError, ValueError, OverflowError), bounds={"stiffness": np.array(1.0)} was
    a raw TypeError ('len() of unsized object') and method=np.array([]) a raw ValueError."""
    import warnings

    t = np.arange(41) * 0.05
    observed = np.stack([np.zeros_like(t), 2.0 * np.cos(np.sqrt(10.0) * t)], 1)[..., None]
    with warnings.catch_warnings(), pytest.raises(HookeInputError) as error:
        warnings.simplefilter("error")
        hooke.fit(hooke.scene("spring1d"), observed, ["stiffness"], times=t, dt=DT, **changes)
    message = str(error.value)
    assert message.startswith(f"{field}: ") and "\n" not in message, message


@pytest.mark.parametrize("name", ["mass", "v0"])
def test_a_pinned_particle_picked_by_index_is_refused_where_it_is_not_fitted(name):
    """Issue 15 (confirmation pass, stop 28): {"mass": [0]} on spring1d, whose particle 0 is
    the pinned anchor, ran a fit of a mass no motion depends on ('not converged', σ = inf), and
    {"v0": [0]} was refused as 'state.v[0]: is a pinned particle's velocity …', a state the
    caller never gave; the pick is refused naming the particle, as 'each' leaves it out."""
    t = np.arange(11) * 0.05
    observed = np.stack([np.zeros_like(t), 2.0 * np.cos(np.sqrt(10.0) * t)], 1)[..., None]
    with pytest.raises(HookeInputError) as error:
        hooke.fit(hooke.scene("spring1d"), observed, {name: [1, 0]}, times=t, dt=DT)
    assert str(error.value) == (
        f"params.{name}: picks pinned particle 0, whose {name} is not fitted (no motion depends "
        "on it), got [1, 0]")
