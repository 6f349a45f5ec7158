"""Bad input (the issue): "A scene file or API call with a missing field, an unknown integrator or
scene, dt ≤ 0, a zero or negative mass, a spring index out of range, a zero-length spring, a NaN in
a position: one clear line that names the field and the value." Also unknown integrator options,
several problems in one file (one line each), and a blow-up that keeps the finite frames."""

from __future__ import annotations

import dataclasses
import os
import sys
import textwrap
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest

import hooke
from hooke.motion import ConstantVelocity, Sinusoid
from hooke import losses

from conftest import INTEGRATORS, run_main


def input_error(call, field: str, value: str | None) -> str:
    """Run ``call``; it must raise HookeInputError with one line ``field: problem, got value``."""
    with pytest.raises(hooke.HookeInputError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message, message
    assert message.startswith(f"{field}: "), message
    if value is not None:
        assert ", got " in message, message
        assert value in message.rsplit(", got ", 1)[1], message
    return message


def two_particles(spring_energy="hookean") -> hooke.ModelBuilder:
    b = hooke.ModelBuilder(dim=2, spring_energy=spring_energy)
    b.add_particle((0.0, 0.0), pinned=True)
    b.add_particle((1.0, 0.0), mass=0.5)
    return b


def small_model() -> hooke.Model:
    b = two_particles()
    b.add_spring(0, 1, stiffness=10.0)
    return b.finalize()


# -- API --------------------------------------------------------------------------------------

SPRING1D = hooke.scene("spring1d")

API_CASES = {
    "simulate-unknown-integrator": (lambda: hooke.simulate(SPRING1D, integrator="leapfrogg"),
                                    "integrator", "'leapfrogg'"),
    "simulate-dt-zero": (lambda: hooke.simulate(SPRING1D, dt=0), "dt", "0"),
    "simulate-dt-negative": (lambda: hooke.simulate(SPRING1D, dt=-0.25), "dt", "-0.25"),
    "simulate-dt-nan": (lambda: hooke.simulate(SPRING1D, dt=float("nan")), "dt", "nan"),
    "simulate-t_end-negative": (lambda: hooke.simulate(SPRING1D, t_end=-1.5), "t_end", "-1.5"),
    "simulate-unknown-option": (lambda: hooke.simulate(SPRING1D, integrator="rk4", rtol=1e-3),
                                "rtol", "0.001"),
    "scene-unknown": (lambda: hooke.scene("trampoline"), "scene", "'trampoline'"),
    "scene-parameter-zero-mass": (lambda: hooke.scene("spring1d", mass=0), "parameters.mass", "0"),
    "scene-parameter-negative-mass": (lambda: hooke.scene("chain", mass=-0.3), "parameters.mass", "-0.3"),
    "scene-parameter-unknown": (lambda: hooke.scene("spring1d", masss=1.0), "parameters.masss", "1.0"),
    "Scene-dt-zero": (lambda: hooke.Scene(small_model(), dt=0.0), "dt", "0.0"),
    "Scene-dt-negative": (lambda: hooke.Scene(small_model(), dt=-1e-3), "dt", "-0.001"),
    "Scene-unknown-integrator": (lambda: hooke.Scene(small_model(), integrator="verlet9"),
                                 "integrator", "'verlet9'"),
    "builder-zero-mass": (lambda: two_particles().add_particle((2.0, 0.0), mass=0.0),
                          "particles[2].mass", "0.0"),
    "builder-negative-mass": (lambda: two_particles().add_particle((2.0, 0.0), mass=-1.5),
                              "particles[2].mass", "-1.5"),
    "builder-nan-position": (lambda: two_particles().add_particle((float("nan"), 0.0)),
                             "particles[2].x", "nan"),
    "builder-index-out-of-range": (lambda: two_particles().add_spring(0, 5, stiffness=1.0),
                                   "springs[0].j", "5"),
    "builder-negative-index": (lambda: two_particles().add_spring(-1, 1, stiffness=1.0),
                               "springs[0].i", "-1"),
    "builder-negative-stiffness": (lambda: two_particles().add_spring(0, 1, stiffness=-3.0),
                                   "springs[0].stiffness", "-3.0"),
    "builder-squared-length-zero-rest": (
        lambda: two_particles("squared_length").add_spring(0, 1, stiffness=1.0, rest_length=0.0),
        "springs[0].rest_length", "0.0"),
    "builder-bad-dim": (lambda: hooke.ModelBuilder(dim=4), "dim", "4"),
    # the API is as strict as scene files: a bool or a string is not a number, a float not a count
    "builder-pinned-string": (lambda: two_particles().add_particle((2.0, 0.0), pinned="false"),
                              "particles[2].pinned", "'false'"),
    "builder-position-strings": (lambda: two_particles().add_particle(["2", "0"]),
                                 "particles[2].x", "['2', '0']"),
    "builder-velocity-bool": (lambda: two_particles().add_particle((2.0, 0.0), velocity=[True, 0.0]),
                              "particles[2].v", "[True, 0.0]"),
    "builder-mass-string": (lambda: two_particles().add_particle((2.0, 0.0), mass="1"),
                            "particles[2].mass", "'1'"),
    "builder-mass-bool": (lambda: two_particles().add_particle((2.0, 0.0), mass=True),
                          "particles[2].mass", "True"),
    "builder-stiffness-string": (lambda: two_particles().add_spring(0, 1, stiffness="10"),
                                 "springs[0].stiffness", "'10'"),
    "builder-grid-float-count": (lambda: hooke.ModelBuilder(dim=2).grid(2.5, 3), "nx", "2.5"),
    "scene-parameter-bool-count": (lambda: hooke.scene("chain", n=True), "parameters.n", "True"),
    "scene-parameter-float-count": (lambda: hooke.scene("chain", n=4.0), "parameters.n", "4.0"),
    "scene-parameter-string": (lambda: hooke.scene("spring1d", mass="0.5"), "parameters.mass",
                               "'0.5'"),
    "simulate-dt-string": (lambda: hooke.simulate(SPRING1D, dt="0.01"), "dt", "'0.01'"),
    "simulate-dt-bool": (lambda: hooke.simulate(SPRING1D, dt=True), "dt", "True"),
    "simulate-count-option-float": (lambda: hooke.simulate(SPRING1D, integrator="implicit_euler",
                                                           max_iterations=2.5),
                                    "max_iterations", "2.5"),
    "simulate-count-option-half": (lambda: hooke.simulate(SPRING1D, integrator="implicit_euler",
                                                          max_iterations=0.5),
                                   "max_iterations", "0.5"),
    "simulate-count-option-huge": (lambda: hooke.simulate(SPRING1D, integrator="xpbd",
                                                          substeps=10**9),
                                   "substeps", "1000000000"),
    "simulate-save-every-huge": (lambda: hooke.simulate(SPRING1D, save_every=10**23),
                                 "save_every", "100000000000000000000000"),
    "Scene-dt-string": (lambda: hooke.Scene(small_model(), dt="0.01"), "dt", "'0.01'"),
    # every argument is checked by hooke, not by a TypeError from deep inside (issue 15)
    "builder-float-dim": (lambda: hooke.ModelBuilder(dim=2.0), "dim", "2.0"),
    "simulate-store-directory": (lambda: hooke.simulate(SPRING1D, store="."), "store", "'.'"),
    "simulate-store-number": (lambda: hooke.simulate(SPRING1D, store=5), "store", "5"),
    "simulate-progress-number": (lambda: hooke.simulate(SPRING1D, progress=5), "progress", "5"),
    "simulate-energy-growth-string": (lambda: hooke.simulate(SPRING1D, max_energy_growth="2"),
                                      "max_energy_growth", "'2'"),
    "load-number": (lambda: hooke.load(5), "path", "5"),
    "open-none": (lambda: hooke.open(None), "path", "None"),
    "resume-number": (lambda: hooke.resume(5), "path", "5"),
    # the confirmation pass of issue 15: energy_at(True) was the energy at t = 1 s, a weight
    # "2" a weight of 2, times ["0", "0.5"] the frames at 0 and 0.5 s
    "loss-energy-time-bool": (lambda: losses.energy_at(True), "time", "True"),
    "loss-energy-target-string": (lambda: losses.energy_at(0.5, target="1"), "target", "'1'"),
    "loss-weights-string": (lambda: hooke.gradient(SPRING1D, losses.final_position(
        np.zeros((2, 1)), weights="2"), params=["stiffness"], t_end=0.1), "weights", "'2'"),
    "loss-times-strings": (lambda: hooke.gradient(SPRING1D, losses.tracking(
        np.zeros((2, 2, 1)), times=["0", "0.05"]), params=["stiffness"], t_end=0.1),
        "times", "['0', '0.05']"),
}


def _zero_length_spring():
    b = two_particles()
    b.add_particle((1.0, 0.0))  # on top of particle 1
    b.add_spring(1, 2, stiffness=1.0)


def _nan_state():
    model = small_model()
    x = model.x0.copy()
    x[1, 0] = np.nan
    hooke.Scene(model, state=model.initial_state().replace(x=x))


API_CASES["builder-zero-length-spring"] = (_zero_length_spring, "springs[0]", "(1, 2)")
API_CASES["Scene-nan-position"] = (_nan_state, "state.x[1]", "nan")


def _triangles(points=((0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)), cells=((0, 1, 2), (1, 3, 2))):
    import meshio

    return meshio.Mesh(np.array(points), [("triangle", np.array(cells))])


def _from_mesh(mesh=None, dim=3, **options):
    builder = hooke.ModelBuilder(dim=dim)
    builder.from_mesh(_triangles() if mesh is None else mesh, **options)
    return builder.finalize()


def _grid(**options):
    hooke.ModelBuilder(dim=3).grid(3, 3, **options)


# A fresh red-team pass (issue 15's "Done when"): from_mesh took mass="1" and True through
# float(), wrapped a negative cell index round to the last point, and raised raw ValueError,
# TypeError, IndexError or AttributeError for a mass list of the wrong length, None, a cell
# index out of range or fractional, points with one axis, or a mesh that is not one; grid raised
# ValueError for a spacing of one or three values and TypeError for plane=5, and took
# diagonals="no" as True.
API_CASES.update({
    "from_mesh-mass-string": (lambda: _from_mesh(mass="1"), "mass", "'1'"),
    "from_mesh-mass-bool": (lambda: _from_mesh(mass=True), "mass", "True"),
    "from_mesh-mass-wrong-length": (lambda: _from_mesh(mass=[1.0, 2.0]), "mass", "(2,)"),
    "from_mesh-mass-none": (lambda: _from_mesh(mass=None), "mass", "None"),
    "from_mesh-negative-cell-index": (lambda: _from_mesh(_triangles(cells=[(0, 1, -1)])),
                                      "mesh.cells[triangle]", "(1, 3)"),
    "from_mesh-cell-index-out-of-range": (lambda: _from_mesh(_triangles(cells=[(0, 1, 7)])),
                                          "mesh.cells[triangle]", "(1, 3)"),
    "from_mesh-fractional-cell-index": (lambda: _from_mesh(_triangles(cells=[(0, 1, 2.5)])),
                                        "mesh.cells[triangle]", "(1, 3)"),
    "from_mesh-string-points": (lambda: _from_mesh(_triangles(points=[("0", "0", "0"), ("1", "0", "0"),
                                                                      ("0", "1", "0")], cells=[(0, 1, 2)])),
                                "mesh", "(3, 3)"),
    "from_mesh-not-a-mesh": (lambda: _from_mesh(5), "mesh", "'int'"),
    "grid-spacing-three-values": (lambda: _grid(spacing=(1.0, 2.0, 3.0)), "spacing", "(1.0, 2.0, 3.0)"),
    "grid-spacing-one-value": (lambda: _grid(spacing=(1.0,)), "spacing", "(1.0,)"),
    "grid-spacing-string": (lambda: _grid(spacing=(1.0, "2")), "spacing", "'2'"),
    "grid-plane-number": (lambda: _grid(plane=5), "plane", "5"),
    "grid-diagonals-string": (lambda: _grid(diagonals="no"), "diagonals", "'no'"),
})
# The losses' constructors (issue 15, finding D): tracking("abc") said "got ()" (the shape of a
# string), a ragged list raised NumPy's ValueError, and weights or times of the wrong type were
# taken until the first gradient; each is the argument's name and the value given, at once.
API_CASES.update({
    "loss-tracking-string": (lambda: losses.tracking("abc"), "observed_x", "'abc'"),
    "loss-tracking-none": (lambda: losses.tracking(None), "observed_x", "None"),
    "loss-tracking-ragged": (lambda: losses.tracking([[1.0], [1.0, 2.0]]), "observed_x",
                             "[[1.0], [1.0, 2.0]]"),
    "loss-tracking-weights-string": (lambda: losses.tracking(np.zeros((2, 2, 1)), weights="w"),
                                     "weights", "'w'"),
    "loss-tracking-times-bool": (lambda: losses.tracking(np.zeros((1, 2, 1)), times=True),
                                 "times", "True"),
    "loss-tracking-times-strings": (lambda: losses.tracking(np.zeros((2, 2, 1)),
                                                            times=["0", "0.05"]),
                                    "times", "['0', '0.05']"),
    "loss-final-position-string": (lambda: losses.final_position("abc"), "target", "'abc'"),
    "loss-final-position-dict": (lambda: losses.final_position({"x": 1.0}), "target",
                                 "{'x': 1.0}"),
    "loss-final-position-weights-negative": (
        lambda: losses.final_position(np.zeros((2, 1)), weights=[1.0, -1.0]), "weights",
        "[ 1., -1.]"),
})


def test_a_loss_given_no_positions_names_the_argument_and_the_value():
    assert str(input_error(lambda: losses.tracking("abc"), "observed_x", "'abc'")) == (
        "observed_x: must be positions: finite numbers, NaN where not observed, got 'abc'")


def test_a_sinusoid_whose_acceleration_overflows_is_one_line(tmp_path, monkeypatch, capsys):
    """amplitude = omega = 1e308 passed (each finite) and `hooke check` / `run` failed with an
    unexpected OverflowError from a Python float's omega ** 2."""
    from hooke.motion import Sinusoid

    input_error(lambda: Sinusoid(1e200, (1.0, 0.0), 1e200), "motion.omega", "1e+200")
    path = write(tmp_path, scene_text().replace("pinned = true", 'motion = { type = "sinusoid", '
                                                "amplitude = 1e308, direction = [1.0, 0.0], "
                                                "omega = 1e308 }"))
    code, lines = run_main(monkeypatch, capsys, "check", str(path))
    assert code == 2 and lines == ["error: particles[0].motion.omega: gives an acceleration "
                                   "amplitude·omega² past the largest float (amplitude = 1e+308), "
                                   "got 1e+308"], lines


def test_from_mesh_masses_one_per_point_still_work():
    np.testing.assert_array_equal(_from_mesh(mass=np.array([1.0, 2.0, 3.0, 4.0])).mass, [1, 2, 3, 4])


@pytest.mark.parametrize("case", list(API_CASES))
def test_api_bad_input_names_field_and_value(case):
    call, field, value = API_CASES[case]
    input_error(call, field, value)


def test_a_whole_float_is_still_a_number_and_numpy_counts_are_counts():
    b = two_particles()
    b.add_particle(np.array([2, 0]), mass=np.float32(2.0), velocity=np.zeros(2))
    b.add_spring(np.int64(0), 2, stiffness=10, damping=np.float64(0.5))
    assert b.finalize().mass.tolist() == [1.0, 0.5, 2.0]
    assert hooke.scene("chain", n=np.int64(4)).model.n_particles == 5


def test_cli_refuses_a_fractional_count_option_and_a_negative_movie_duration(tmp_path):
    from conftest import run_cli

    done = run_cli("run", "spring1d", "-i", "implicit_euler", "-O", "max_iterations=2.5",
                   "--out", str(tmp_path))
    assert done.returncode == 2 and done.stderr.splitlines() == [
        "error: max_iterations: must be an integer (its default is 100), got 2.5"]
    assert not any(tmp_path.iterdir())
    hooke.simulate(SPRING1D, t_end=0.1, store=tmp_path / "trajectory.h5")
    for duration in ("-1", "0", "nan"):
        done = run_cli("animate", str(tmp_path), "--duration", duration, "--out",
                       str(tmp_path / "movie.gif"))
        assert done.returncode == 2 and done.stderr.splitlines() == [
            f"error: --duration: must be a number > 0 (seconds), got {float(duration)}"]
    assert not (tmp_path / "movie.gif").exists()


def test_every_bad_option_is_reported_at_once(tmp_path, monkeypatch, capsys):

    text = scene_text(integrator="implicit_euler").replace(
        "t_end = 1.0\n", "t_end = 1.0\n[run.options]\nmax_iterations = 2.5\ntol = -1.0\n"
        "norm = 'bad'\nbogus = 3\n")
    code, lines = run_main(monkeypatch, capsys, "check", str(write(tmp_path, text)))
    assert code == 2 and lines == [
        "error: bogus: is not an option of integrator 'implicit_euler' (its options: "
        "max_iterations, min_iterations, norm, solver, tol), got 3",
        "error: max_iterations: must be an integer (its default is 100), got 2.5",
        "error: tol: must be a number > 0 for integrator 'implicit_euler', got -1.0",
        "error: norm: must be one of max, row_sum for integrator 'implicit_euler', got 'bad'"]


def test_integrators_made_directly_refuse_a_fractional_count():
    """The count check is the integrator's own, not only simulate's."""
    from hooke.system import System

    make = hooke.get_integrator("implicit_euler")
    input_error(lambda: make(System(SPRING1D.model), 0.01, max_iterations=2.5), "max_iterations",
                "2.5")
    assert make(System(SPRING1D.model), 0.01, max_iterations=np.int64(7)).max_iterations == 7


def test_unknown_option_names_integrator_and_its_options():
    message = input_error(lambda: hooke.simulate(SPRING1D, integrator="rk4", rtol=1e-3), "rtol", "0.001")
    assert "'rk4'" in message
    if "rk45" in INTEGRATORS:
        message = input_error(lambda: hooke.simulate(SPRING1D, integrator="rk45", tol=1e-3),
                              "tol", "0.001")
        assert "rtol" in message and "atol" in message  # lists the options it does have


def test_bad_option_value_names_option():
    if "rk45" not in INTEGRATORS:
        pytest.skip("rk45 is not registered")
    input_error(lambda: hooke.simulate(SPRING1D, integrator="rk45", rtol=-1.0), "rtol", "-1.0")


def test_input_errors_are_value_errors():
    """HookeInputError is a HookeError and a ValueError, so generic handlers catch it."""
    with pytest.raises(ValueError):
        hooke.simulate(SPRING1D, dt=0)
    assert issubclass(hooke.HookeInputError, hooke.HookeError)


# -- scene files --------------------------------------------------------------------------------

SCENE = """\
dim = 2
[run]
integrator = "{integrator}"
dt = {dt}
t_end = 1.0
[[particles]]
x = [0.0, 0.0]
pinned = true
[[particles]]
x = [{x1}, 0.0]
mass = {mass}
[[springs]]
i = 0
j = {j}
stiffness = 100.0
"""


def scene_text(**changes) -> str:
    values = {"integrator": "rk4", "dt": 0.01, "x1": 1.0, "mass": 1.0, "j": 1}
    values.update(changes)
    return SCENE.format(**values)


def write(tmp_path, text: str, name="scene.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


FILE_CASES = {
    "missing-stiffness": (scene_text().replace("stiffness = 100.0\n", ""), "springs[0].stiffness", None),
    "missing-position": (scene_text().replace("x = [1.0, 0.0]\n", ""), "particles[1].x", None),
    "missing-dim": (scene_text().replace("dim = 2\n", ""), "dim", None),
    "unknown-integrator": (scene_text(integrator="leapfrogg"), "run.integrator", "'leapfrogg'"),
    "dt-zero": (scene_text(dt=0), "run.dt", "0"),
    "dt-negative": (scene_text(dt=-0.5), "run.dt", "-0.5"),
    "zero-mass": (scene_text(mass=0.0), "particles[1].mass", "0.0"),
    "negative-mass": (scene_text(mass=-2.0), "particles[1].mass", "-2.0"),
    "nan-position": (scene_text(x1="nan"), "particles[1].x[0]", "nan"),
    "index-out-of-range": (scene_text(j=7), "springs[0].j", "7"),
    "negative-index": (scene_text(j=-1), "springs[0].j", "-1"),
    "zero-length-spring": (scene_text(x1=0.0), "springs[0]", "(0, 1)"),
    "unknown-field": (scene_text().replace("dim = 2", "dim = 2\nstiffnes = 3"), "stiffnes", "3"),
    "builder-parameter": ('builder = "harmonic"\n[parameters]\nx0 = 1.0\nv0 = 0.0\n'
                          'stiffness = 1.0\nmass = -4.0\n', "parameters.mass", "-4.0"),
}


@pytest.mark.parametrize("case", list(FILE_CASES))
def test_scene_file_bad_input_names_field_and_value(tmp_path, case):
    text, field, value = FILE_CASES[case]
    path = write(tmp_path, text)
    input_error(lambda: hooke.load(path), field, value)


def test_valid_scene_file_loads_and_runs(tmp_path):
    """The template the bad files are made from is itself valid (so each case tests one fault)."""
    scene = hooke.load(write(tmp_path, scene_text()))
    result = hooke.simulate(scene, t_end=0.05)
    assert result.complete and scene.integrator == "rk4" and scene.dt == 0.01


def test_scene_file_reports_every_problem_one_line_each(tmp_path):
    path = write(tmp_path, scene_text(dt=-1.0, mass=0.0))
    with pytest.raises(hooke.HookeInputError) as info:
        hooke.load(path)
    lines = str(info.value).splitlines()
    assert len(lines) == 2
    assert any(line.startswith("run.dt: ") and line.endswith("got -1.0") for line in lines)
    assert any(line.startswith("particles[1].mass: ") and line.endswith("got 0.0") for line in lines)


def test_scene_file_unknown_option_is_reported_when_run(tmp_path):
    text = scene_text().replace("t_end = 1.0\n", "t_end = 1.0\noptions = { rtol = 1e-3 }\n")
    scene = hooke.load(write(tmp_path, text))
    input_error(lambda: hooke.simulate(scene), "rtol", "0.001")


def test_missing_scene_file_names_path(tmp_path):
    missing = tmp_path / "nowhere.toml"
    input_error(lambda: hooke.load(missing), "path", repr(str(missing)))


def test_a_missing_scene_file_on_the_command_line_names_the_argument(tmp_path, monkeypatch, capsys):
    """`hooke run nowhere.toml` and `hooke check nowhere.toml` said "path: no such scene file",
    naming hooke.load's argument, which the command line has not (issue 15)."""
    missing = tmp_path / "nowhere.toml"
    for command, argument in (("run", "SCENE_OR_FILE"), ("check", "FILE"), ("fit", "SCENE_OR_FILE")):
        extra = ("--observed", str(missing), "--param", "stiffness") if command == "fit" else ()
        code, lines = run_main(monkeypatch, capsys, command, str(missing), *extra)
        assert (code, lines) == (2, [f"error: {argument}: no such scene file, got '{missing}'"])
    tmp_path.joinpath("folder.toml").mkdir()
    code, lines = run_main(monkeypatch, capsys, "run", str(tmp_path / "folder.toml"))
    assert (code, lines) == (2, [f"error: SCENE_OR_FILE: is a directory; a scene file must be a "
                                 f"regular file, got '{tmp_path / 'folder.toml'}'"])


# -- joints whose lengths cannot hold: refused up front, not "try a smaller dt" at step 1 ----------

TRIANGLE = [(0.0, 0.0), (1.0, 0.0), (0.5, float(np.sqrt(0.75)))]  # equilateral, side 1


def joint_triangle(third: float) -> hooke.ModelBuilder:
    """The triangle, one corner pinned, on joints of lengths 1, 1, ``third``."""
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    for k, corner in enumerate(TRIANGLE):
        b.add_particle(corner, pinned=k == 0)
    for i, j, length in ((0, 1, 1.0), (1, 2, 1.0), (2, 0, third)):
        b.add_joint(i, j, length=length)
    return b


def test_joint_lengths_that_cannot_hold_are_refused_naming_the_joints(tmp_path, monkeypatch, capsys):
    import tomli_w


    message = input_error(lambda: joint_triangle(5.0).finalize(), "joints", "[0, 1, 2]")
    assert "their lengths cannot all hold" in message
    assert "2 (2–0: length 5, distance 1)" in message
    message = input_error(lambda: joint_triangle(2.0).finalize(), "joints", None)
    assert "hold only where the joints are singular" in message  # folded flat
    joint_triangle(1.9).finalize()  # other lengths than the positions' that can hold are fine
    text = tomli_w.dumps({"dim": 2, "particles": [{"x": list(corner), "pinned": k == 0}
                                                  for k, corner in enumerate(TRIANGLE)],
                          "joints": [{"i": 0, "j": 1}, {"i": 1, "j": 2},
                                     {"i": 2, "j": 0, "length": 5.0}]})
    code, lines = run_main(monkeypatch, capsys, "check", str(write(tmp_path, text)))
    assert code == 2 and len(lines) == 1 and lines[0].startswith(
        "error: joints: their lengths cannot all hold"), lines


def pendulum_file(tmp_path, length: float, **options) -> Path:
    """A bob 1 m from its pin on a joint of ``length``, rk4 (``options`` its [run.options])."""
    import tomli_w

    run = {"integrator": "rk4", "dt": 0.01, "t_end": 0.05, **({"options": options} if options else {})}
    return write(tmp_path, tomli_w.dumps({
        "dim": 2, "gravity": [0.0, -9.81], "particles": [{"x": [0.0, 0.0], "pinned": True},
                                                          {"x": [1.0, 0.0]}],
        "joints": [{"i": 0, "j": 1, "length": length}], "run": run}))


def check_says(monkeypatch, capsys, path: Path) -> list[str]:
    """What ``hooke check FILE`` prints (stdout lines) for a file it finds valid."""
    from hooke import cli

    monkeypatch.setattr(sys, "argv", ["hooke", "check", str(path)])
    with pytest.raises(SystemExit) as done:
        cli.main()
    captured = capsys.readouterr()
    assert done.value.code in (None, 0) and not captured.err, captured.err
    return captured.out.splitlines()


def test_a_joint_length_far_from_its_distance_is_shown_by_check_or_refused_if_it_overflows(
        tmp_path, monkeypatch, capsys):
    """Stop 33: a length of 1e155 m for a distance of 1 m was "cannot all hold … distance 0"
    (L + g lost the 1 m to round-off, and its square overflows in the projection); 1e10 m was
    taken in silence and the run moved the bob 1e10 m. The square is bounded as a position's is,
    and ``hooke check`` says how far off the start is and what a run does with it."""
    for length in (1e155, 1e200):
        path = pendulum_file(tmp_path, length)
        code, lines = run_main(monkeypatch, capsys, "check", str(path))
        assert (code, lines) == (2, [f"error: joints[0].length: is too large (its square "
                                     f"overflows to inf), got {length:g}"])
        model = joint_triangle(1.0).finalize()
        input_error(lambda: dataclasses.replace(model, joint_length=np.array([1.0, 1.0, length])),
                    "joint_length[2]", f"{length:g}")
    for length, off in ((1e10, "1e+10"), (1.5, "0.5"), (1e154, "1e+154")):
        path = pendulum_file(tmp_path, length)
        assert check_says(monkeypatch, capsys, path)[1:] == [
            f"{path}: its start is off its joints by up to {off} m (joint 0 (0–1: length "
            f"{length:g}, distance 1)); a run puts it on them first"]
    path = pendulum_file(tmp_path, 1.5, stabilization="correction")
    assert check_says(monkeypatch, capsys, path)[1:] == [
        f"{path}: its start is off its joints by up to 0.5 m (joint 0 (0–1: length 1.5, "
        "distance 1)); rk4 starts from it as given"]
    assert len(check_says(monkeypatch, capsys, pendulum_file(tmp_path, 1.0))) == 1  # on them


# -- files that cannot be read: one line naming the field and the file, never a crash or a hang --

SOFT3D = files("hooke.scenes").joinpath("soft3d.toml").read_text(encoding="utf-8")


def mesh_scene(tmp_path, mesh) -> Path:
    """soft3d's scene file reading ``mesh`` instead of its shipped mesh."""
    return write(tmp_path, SOFT3D.replace('mesh = "blob.vtu"', f'mesh = "{mesh}"'))


def test_a_corrupt_mesh_is_an_input_error_naming_the_field_and_the_file(tmp_path, capsys):
    """meshio prints and calls sys.exit(1) on a file it cannot parse: that must not end a
    notebook's kernel (SystemExit) nor print anything. Its message, from a Rich console 80
    columns wide, had a path longer than that folded with a space in it ("ramp.vt u")."""
    folder = tmp_path / ("long" * 25)
    folder.mkdir()
    bad = folder / "bad.vtu"
    bad.write_bytes(b"garbage\x00\x01 not a vtu")
    message = input_error(lambda: hooke.load(mesh_scene(tmp_path, bad)), "parameters.mesh",
                          repr(str(bad)))
    assert f"cannot be read as a mesh (Couldn't read file {bad} as vtu)" in message
    input_error(lambda: hooke.ModelBuilder().from_mesh(bad), "mesh", repr(str(bad)))
    input_error(lambda: hooke.ModelBuilder().from_mesh("/dev/zero"), "mesh", "'/dev/zero'")
    assert capsys.readouterr() == ("", "")


def test_a_mesh_with_a_nan_point_shows_the_value_on_the_command_line(tmp_path, monkeypatch, capsys):
    import meshio


    mesh = meshio.read(files("hooke.scenes").joinpath("meshes", "blob.vtu"))
    mesh.points[3] = [np.nan, 0.0, 0.0]  # "[nan, 0., 0.]" reads as Rich markup, and vanished
    meshio.write(tmp_path / "nan.vtu", mesh)
    code, lines = run_main(monkeypatch, capsys, "check", str(mesh_scene(tmp_path, tmp_path / "nan.vtu")))
    assert code == 2 and lines == ["error: particles[3].x: must be finite, got [nan,  0.,  0.]"]


def test_a_value_with_an_emoji_code_is_shown_as_typed(monkeypatch, capsys):
    """Rich read ':-1:' (a sweep range 'log:-1:5', an integrator ':smile:') as an emoji code and
    printed 'log👎5' or '😄': the value in the error was not the one typed."""
    code, lines = run_main(monkeypatch, capsys, "run", "spring1d", "--integrator", "log:-1:smile:")
    assert code == 2 and len(lines) == 1
    assert lines[0].endswith("got 'log:-1:smile:'"), lines


def test_nesting_past_the_recursion_limit_is_malformed_toml(tmp_path, monkeypatch, capsys):

    path = write(tmp_path, "a = " + "[" * 5000)
    input_error(lambda: hooke.load(path), str(path), None)
    code, lines = run_main(monkeypatch, capsys, "check", str(path))
    assert code == 2 and lines == [f"error: {path}: malformed TOML (arrays or tables nested too "
                                   "deeply)"]


def test_a_value_nested_or_long_past_reason_is_shown_bounded(tmp_path, monkeypatch, capsys):
    """Dotted table headers ([a.a.a.…] 5,000 deep) parse, but showing the unknown field's value
    was a RecursionError "bug in hooke"; a list of 100,000 numbers where one goes was shown
    whole, a line of 500 kB."""

    deep = write(tmp_path, "[" + ".".join(["a"] * 5000) + "]\n")
    long = tmp_path / "long.toml"
    long.write_text("dim = 1\ngravity = [" + ", ".join(["1.0"] * 100_000) + "]\n"
                    "[[particles]]\nx = [0.0]\n")
    code, lines = run_main(monkeypatch, capsys, "check", str(deep))
    assert code == 2 and lines[0] == "error: a: unknown field, got a dict nested too deeply to show"
    code, lines = run_main(monkeypatch, capsys, "check", str(long))
    assert code == 2 and len(lines) == 1 and lines[0].startswith(
        "error: gravity: must have 1 component(s) for dim=1, got [1.0, 1.0, ")
    assert lines[0].endswith("… (500,000 characters)") and len(lines[0]) < 1100


def test_scene_files_are_regular_files_of_bounded_size(tmp_path):
    """A FIFO would block the reader forever and /dev/zero be read until memory runs out."""
    from hooke.io.files import MAX_TEXT_BYTES

    fifo = tmp_path / "scene.toml"
    os.mkfifo(fifo)
    assert "is a FIFO" in input_error(lambda: hooke.load(fifo), "path", repr(str(fifo)))
    assert "is a device" in input_error(lambda: hooke.load("/dev/zero"), "path", "'/dev/zero'")
    assert "is a directory" in input_error(lambda: hooke.load(tmp_path), "path", repr(str(tmp_path)))
    big = tmp_path / "big.toml"
    with big.open("wb") as handle:  # sparse: no 16 MiB written
        handle.truncate(MAX_TEXT_BYTES + 1)
    assert "larger than the 16 MiB" in input_error(lambda: hooke.load(big), "path", repr(str(big)))
    (tmp_path / "latin1.toml").write_bytes(b"name = '\xe9'")
    assert "is not UTF-8" in input_error(lambda: hooke.load(tmp_path / "latin1.toml"), "path", None)


def test_mesh_files_are_of_bounded_size(tmp_path, monkeypatch, capsys):
    """Issue 15 (redH): a mesh file had no size bound: a 4 GiB obstacle mesh (sparse, nothing
    written) kept `hooke check` reading past 60 s at 8.5 GB of memory (an .stl: 33 s and 8.7 GB,
    then refused). A mesh larger than MAX_MESH_BYTES (256 MiB, read in about 4 s and 0.7 GB) is
    refused before meshio opens it, for an obstacle, a tet_mesh builder's mesh and from_mesh."""
    from hooke.io.files import MAX_MESH_BYTES

    assert MAX_MESH_BYTES == 256 * 2**20
    big = tmp_path / "big.stl"
    with big.open("wb") as handle:  # sparse: nothing written
        handle.truncate(MAX_MESH_BYTES + 1)
    scene = tmp_path / "scene.toml"
    scene.write_text(textwrap.dedent("""\
        dim = 3
        [[particles]]
        x = [0.2, 0.5, 0.2]
        [[obstacles]]
        mesh = "big.stl"
        [run]
        integrator = "implicit_euler"
        """))
    line = (f"obstacles[0].mesh: is larger than the 256 MiB a mesh file may have "
            f"({MAX_MESH_BYTES + 1} bytes), got '{big}'")
    code, lines = run_main(monkeypatch, capsys, "check", str(scene))
    assert (code, lines) == (2, [f"error: {line}"])
    assert input_error(lambda: hooke.ModelBuilder(dim=3).from_mesh(big), "mesh",
                       repr(str(big))).startswith("mesh: is larger than the 256 MiB")


def test_a_scene_file_saved_with_a_byte_order_mark_and_crlf_reads_as_the_plain_file(tmp_path):
    """Issue 15 (red-team pass, stop 28): a scene file saved by Windows Notepad (a UTF-8
    byte-order mark before its first line, CRLF line ends) was refused as "malformed TOML
    (Invalid statement (at line 1, column 1))", pointing at nothing the user can see. Now the
    mark is not part of the text, as for an observed CSV: the same scene as the plain file."""
    plain = (files("hooke.scenes") / "spring1d.toml").read_text(encoding="utf-8")
    saved = tmp_path / "notepad.toml"
    saved.write_bytes(b"\xef\xbb\xbf" + plain.replace("\n", "\r\n").encode())
    scene = hooke.load(saved)
    assert (scene.parameters, scene.dt, scene.t_end) == (hooke.scene("spring1d").parameters,
                                                         0.005, 10.0)


# -- blow-up ----------------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # overflow on the way to inf is expected
def test_blow_up_raises_simulation_error_with_finite_frames():
    """Explicit Euler on a stiff spring (ω = 100, h = 0.1) multiplies the energy by
    1 + ω²h² = 101 each step until it overflows; the error carries every finite frame."""
    if "explicit_euler" not in INTEGRATORS:
        pytest.skip("explicit_euler is not registered")
    b = hooke.ModelBuilder(dim=1)
    b.add_particle([0.0], pinned=True)
    b.add_particle([1.0], mass=1.0)
    b.add_spring(0, 1, stiffness=1e4, rest_length=0.0)
    scene = hooke.Scene(b.finalize(), integrator="explicit_euler")
    with pytest.raises(hooke.SimulationError) as info:
        hooke.simulate(scene, dt=0.1, t_end=1000.0)
    result = info.value.result
    assert result.complete is False
    assert 10 < result.n_frames < 10_001
    assert np.all(np.isfinite(result.x)) and np.all(np.isfinite(result.v))
    np.testing.assert_allclose(result.t, 0.1 * np.arange(result.n_frames), rtol=1e-12)
    energy = result.energy["total"][:50]
    np.testing.assert_allclose(energy[1:] / energy[:-1], 101.0, rtol=1e-10)
    assert "non-finite" in str(info.value)


def test_soft3d_energy_reference_and_spin_errors_name_the_field(tmp_path):
    path = write(tmp_path, SOFT3D.replace('energy_reference = "rest"', 'energy_reference = "still"'))
    message = input_error(lambda: hooke.load(path), "energy_reference", "'still'")
    assert "'zero' or 'rest'" in message
    message = input_error(lambda: hooke.scene("soft3d", spin=[1.0, 0.0]), "parameters.spin", "[1.0, 0.0]")
    assert "must have 3 component(s)" in message


def test_an_observed_csv_over_16_mib_is_one_line_before_it_is_read(tmp_path):
    """`hooke fit` read a 43 MB observed CSV for 25 s, silent, then fitted for minutes (issue
    15); now refused at once, as scene files are, naming the file, its size and the limit."""
    from conftest import run_cli

    big = tmp_path / "observed.csv"
    with big.open("wb") as handle:  # sparse: no 16 MiB written
        handle.write(b"t,particle,x\n")
        handle.truncate(16 * 2**20 + 1)
    done = run_cli("fit", "spring1d", "--observed", str(big), "--param", "stiffness")
    assert done.returncode == 2 and done.stderr.splitlines() == [
        f"error: --observed: is larger than the 16 MiB a file of observed motion may have "
        f"({16 * 2**20 + 1} bytes), got '{big}'"]


@pytest.mark.parametrize("make, field", [
    (lambda: Sinusoid({"a": 1}, (1.0, 0.0), 3.0), "motion.amplitude"),
    (lambda: Sinusoid([], (1.0, 0.0), 3.0), "motion.amplitude"),
    (lambda: Sinusoid([1.0], (1.0, 0.0), 3.0), "motion.amplitude"),
    (lambda: Sinusoid("0.1", (1.0, 0.0), 3.0), "motion.amplitude"),
    (lambda: Sinusoid(0.1, (1.0, 0.0), np.array([])), "motion.omega"),
    (lambda: Sinusoid(0.1, (1.0, 0.0), 10**400), "motion.omega"),
    (lambda: Sinusoid(0.1, (1 + 2j, 0.0), 3.0), "motion.direction"),
    (lambda: Sinusoid(0.1, ("1", "0"), 3.0), "motion.direction"),
    (lambda: ConstantVelocity((10**400, 0.0)), "motion.velocity"),
    (lambda: ConstantVelocity(("1", "0")), "motion.velocity"),
    (lambda: ConstantVelocity((1.0, 0.0), duration=[]), "motion.duration"),
    (lambda: ConstantVelocity((1.0, 0.0), duration=1 + 2j), "motion.duration"),
    (lambda: ConstantVelocity((1.0, 0.0), duration="1"), "motion.duration")])
def test_a_motions_settings_are_numbers_as_in_scene_files(make, field):
    """Issue 15 (confirmation pass, stop 28): Sinusoid and ConstantVelocity took their settings
    through np.asarray(dtype=float): a dict, a complex number or 10**400 was a raw TypeError or
    OverflowError, [] or an array a raw error from abs() or a comparison, and strings ("0.1",
    ("1", "0")) or a list amplitude ([1.0]) were taken as numbers."""
    input_error(make, field, None)


def test_a_sinusoids_direction_is_normalised_without_overflow():
    """Issue 15 (confirmation pass, stop 28): Sinusoid(0.1, (1e308, 1e308), 3.0) printed
    NumPy's 'overflow encountered in dot' and its direction became (0, 0), its |x|² being inf: a
    motion that moved nothing, in silence; a direction is normalised after scaling by its largest
    component, so any non-zero finite vector gives its unit vector."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for given in ((1e308, 1e308), (1e-320, 1e-320), (3.0, 3.0)):
            np.testing.assert_allclose(Sinusoid(0.1, given, 3.0).direction, [0.5 ** 0.5] * 2,
                                       rtol=1e-15)


@pytest.mark.parametrize("length", [1e-300, 1e-320])
def test_a_joint_length_whose_ends_meet_in_the_check_is_no_traceback(length):
    """Issue 15 (confirmation pass, stop 28): add_joint(0, 1, length=1e-300) between
    particles 1 m apart raised a raw ZeroDivisionError from finalize: the lengths check's
    Newton step put the ends on each other, where the compiled joint geometry divides by 0.
    Such a trial is no decrease, as a NaN one is; the model is then built, and a run of it
    fails in its own one line (the state blows up where the ends all but meet, as the joint's
    direction 1/|d| does), never with a traceback."""
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    b.add_particle((0.0, 0.0), pinned=True)
    b.add_particle((1.0, 0.0))
    b.add_joint(0, 1, length=length)
    scene = hooke.Scene(b.finalize(), integrator="rk4", dt=0.01, t_end=0.05)
    with pytest.raises(hooke.SimulationError, match="blew up|became non-finite") as caught:
        hooke.simulate(scene)
    assert "\n" not in str(caught.value)


def test_a_pinned_particle_given_a_velocity_is_refused(tmp_path, monkeypatch, capsys):
    """Issue 15 (confirmation pass, stop 28): a scene file's particle with pinned = true (or a
    motion) and v = [5.0, 0.0] ran with that particle still and its velocity 0 in every frame,
    the given velocity dropped in silence; add_particle(velocity=…, pinned=True) the same."""
    b = hooke.ModelBuilder(dim=2)
    input_error(lambda: b.add_particle((0, 0), velocity=(5, 0), pinned=True), "particles[0].v",
                "(5, 0)")
    motion = Sinusoid(amplitude=0.1, direction=(1.0, 0.0), omega=3.0)
    input_error(lambda: b.add_particle((0, 0), velocity=(5, 0), motion=motion),
                "particles[0].v", "(5, 0)")
    b.add_particle((0, 0), velocity=(0, 0), pinned=True)  # a zero velocity is what it has
    path = write(tmp_path, """\
        dim = 2
        [[particles]]
        x = [0.0, 0.0]
        pinned = true
        v = [5.0, 0.0]
        [[particles]]
        x = [1.0, 0.0]
        [[springs]]
        i = 0
        j = 1
        stiffness = 1.0
        """)
    code, lines = run_main(monkeypatch, capsys, "check", str(path))
    assert code == 2 and lines == [
        "error: particles[0].v: is a pinned particle's velocity (it stays at x, or moves as its "
        "motion does), got [5.0, 0.0]"], lines


def test_pinning_a_particle_given_a_velocity_is_refused():
    """Issue 15: ModelBuilder.pin(i) of a particle added with velocity=(5, 0) set its velocity
    to 0 (or to its motion's) in silence, as add_particle(…, pinned=True) did; pinning it again
    (another motion) is no such loss."""
    b = hooke.ModelBuilder(dim=2)
    b.add_particle((0, 0), velocity=(5, 0))
    input_error(lambda: b.pin(0), "particles[0].v", "[5., 0.]")
    input_error(lambda: b.pin(0, Sinusoid(0.1, (1.0, 0.0), 3.0)), "particles[0].v", "[5., 0.]")
    b.add_particle((1, 0))
    b.pin(1, Sinusoid(0.1, (1.0, 0.0), 3.0))
    b.pin(1)  # held still now: its velocity 0.3 m/s was the motion's
    model = b.finalize()
    np.testing.assert_array_equal(model.v0, [[5.0, 0.0], [0.0, 0.0]])
    np.testing.assert_array_equal(model.pinned, [False, True])
