"""Scene-file validation and input errors (issue 9 §1, issue 2 "Bad input"), exact messages:

- field paths follow the schema (union tags such as ``constrained-float`` dropped, field names
  starting with "int" or "float" kept);
- the schema is strict: no string or bool for a number, no float for an index, no int for a
  bool; an int is a float;
- every problem of a file at once, one line each: the schema's and those between fields (vector
  lengths, planes, contact areas, motions, joints, indices, duplicates, zero lengths);
- ``hooke check`` validates the run settings as ``hooke run`` does (options, whole steps);
- t_end must be a whole number of steps; absurd sizes, huge coordinates, an ``--out`` that is a
  file, command-line parse errors and unexpected exceptions each give one clear line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import tomllib
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest

import hooke
from hooke.array_models import model_from_arrays
from hooke import cli
from hooke.io.scene_file import build, parse
from hooke.scene_setup import step_count
from hooke.simulate import plan

from conftest import run_main


def problems(text: str) -> list[str]:
    """The lines of the error a scene file's text gives (none when it is valid)."""
    try:
        parse(textwrap.dedent(text))
    except hooke.HookeInputError as error:
        return str(error).splitlines()
    return []


TWO = """\
dim = 2
[[particles]]
x = [0.0, 0.0]
pinned = true
[[particles]]
x = [1.0, 0.0]
[[springs]]
i = 0
j = 1
stiffness = 100.0
"""


def test_paths_keep_fields_named_like_types_and_drop_union_tags():
    # "integrator" starts with "int": it is a field, not pydantic's `int` tag
    assert problems(TWO + "[run]\nintegrator = 5\n") == ["run.integrator: Input should be a valid "
                                                          "string, got 5"]
    # contact.area is a number or a list: one line, no 'number' or 'list' tag in the path
    assert problems(TWO + '[contact]\narea = "x"\n') == [
        "contact.area: Input should be a valid number, got 'x'"]
    assert problems(TWO + "[contact]\narea = [1.0, -2.0]\n") == [
        "contact.area[1]: Input should be greater than or equal to 0, got -2.0"]
    # a motion is a union tagged by its type: no 'sinusoid' in the path
    motion = 'motion = { type = "sinusoid", amplitude = "a", direction = [1.0, 0.0], omega = 1.0 }\n'
    assert problems(TWO.replace("pinned = true\n", "pinned = true\n" + motion)) == [
        "particles[0].motion.amplitude: Input should be a valid number, got 'a'"]
    assert problems(TWO.replace("pinned = true\n", "pinned = true\nmotion = { type = "
                                '"constant_velocity", velocity = [1.0, 0.0], speed = 2 }\n')) == [
        "particles[0].motion.speed: unknown field, got 2"]


def test_a_key_of_60000_characters_is_cut_short_in_its_line():
    """Issue 15 red team (redI): an unknown key of 60,000 characters was echoed whole in its
    error's path (a 60 KB line from `hooke check`)."""
    key = "k" * 60_000
    assert problems(TWO + f"[run]\n{key} = 1\n") == [
        f"run.{'k' * 80}… (60,000 characters): unknown field, got 1"]


@pytest.mark.parametrize("motion, line", [
    ('{ type = "bogus" }',
     "particles[0].motion.type: unknown kind (known: constant_velocity, sinusoid), got 'bogus'"),
    ('{ kind = "sinusoid", amplitude = 0.1, omega = 1.0 }',
     "particles[0].motion: needs a 'type' naming its kind, got {'kind': 'sinusoid', "
     "'amplitude': 0.1, 'omega': 1.0}")])
def test_a_motion_without_a_known_type_names_the_type_key(motion, line):
    """pydantic's words were "Unable to extract tag using discriminator 'type'" (a motion
    without its type) and "Input tag 'bogus' found using 'type' does not match any of the
    expected tags: 'constant_velocity', 'sinusoid'"."""
    assert problems(TWO.replace("pinned = true\n", f"pinned = true\nmotion = {motion}\n")) == [line]


@pytest.mark.parametrize("change, line", [
    ("x = [1.0, 0.0]", 'x = ["1", true]'),
    ("x = [1.0, 0.0]", "x = [1.0, 0.0]\nmass = true"),
    ("pinned = true", "pinned = 1"),
    ("stiffness = 100.0", 'stiffness = "100"'),
    ("j = 1", "j = true"),
    ("j = 1", "j = 1.0"),
])
def test_the_schema_is_strict(change, line):
    expected = {
        'x = ["1", true]': ["particles[1].x[0]: Input should be a valid number, got '1'",
                            "particles[1].x[1]: Input should be a valid number, got True"],
        "x = [1.0, 0.0]\nmass = true": ["particles[1].mass: Input should be a valid number, got True"],
        "pinned = 1": ["particles[0].pinned: Input should be a valid boolean, got 1"],
        'stiffness = "100"': ["springs[0].stiffness: Input should be a valid number, got '100'"],
        "j = true": ["springs[0].j: Input should be a valid integer, got True"],
        "j = 1.0": ["springs[0].j: Input should be a valid integer, got 1.0"],
    }[line]
    assert problems(TWO.replace(change, line)) == expected


def test_an_int_is_a_float_and_builder_parameters_are_strict_too():
    assert problems(TWO.replace("stiffness = 100.0", "stiffness = 100")) == []
    chain = files("hooke.scenes").joinpath("chain.toml").read_text()
    bad = chain.replace("n = 10", "n = 10.0").replace("mass = 0.1 ", 'mass = "0.1" ')
    assert problems(bad) == ["parameters.n: Input should be a valid integer, got 10.0",
                             "parameters.mass: Input should be a valid number, got '0.1'"]
    # from Python (hooke.scene, sweeps, the viewer) as strictly: a float is not a count
    with pytest.raises(hooke.HookeInputError) as info:
        hooke.scene("chain", n=4.0)
    assert str(info.value) == "parameters.n: Input should be a valid integer, got 4.0"


MANY = """\
dim = 2
gravity = [0.0, -9.81, 0.0]
[run]
integrator = "rk4"
dt = 0.3
t_end = 1.0
[[particles]]
x = [0.0, 0.0]
pinned = true
[[particles]]
x = [1.0, 0.0, 0.0]
[[particles]]
x = [2.0, 0.0]
v = [1.0]
mass = 0.0
[[particles]]
x = [0.0, 1.0]
motion = { type = "sinusoid", amplitude = 0.1, direction = [0.0, 0.0], omega = 1.0 }
[[particles]]
x = [2.0, 0.0]
[[springs]]
i = 0
j = 9
stiffness = 1.0
[[springs]]
i = 2
j = 4
stiffness = 1.0
[[springs]]
i = 4
j = 2
stiffness = 1.0
[[joints]]
i = 0
j = 3
[[joints]]
i = 2
j = 4
length = 1.0
[[planes]]
normal = [0.0, 0.0]
point = [0.0, -1.0]
[[planes]]
normal = [0.0, 1.0]
point = [0.0, -1.0, 0.0]
motion = { type = "constant_velocity", velocity = [1.0] }
[contact]
area = [1.0, 1.0]
"""

MANY_LINES = [
    "particles[2].mass: Input should be greater than 0, got 0.0",
    "run.t_end: must be a whole number of steps of dt = 0.3 (t_end / dt = 3.333333333); nearest "
    "valid: t_end = 0.9 or 1.2, or dt = 0.333333333333 (3 steps) or 0.25 (4 steps), got 1.0",
    "gravity: must have 2 component(s) for dim=2, got [0.0, -9.81, 0.0]",
    "particles[1].x: must have 2 component(s) for dim=2, got [1.0, 0.0, 0.0]",
    "particles[2].v: must have 2 component(s) for dim=2, got [1.0]",
    "particles[3].motion.direction: must be a non-zero vector, got (0.0, 0.0)",
    "springs[0].j: particle index out of range [0, 5), got 9",
    "springs[1]: zero-length spring: particles 2 and 4 coincide and no rest_length was given, "
    "got (2, 4)",
    "springs[2]: duplicates springs[1] between the same particles 4 and 2, got (4, 2)",
    "joints[0]: joins two pinned particles 0 and 3 (nothing can move to keep its length), got (0, 3)",
    "joints[1]: endpoints coincide: particles 2 and 4 are both at [2.0, 0.0], a joint needs a "
    "direction, got (2, 4)",
    "planes[0].normal: must be a non-zero vector, got [0.0, 0.0]",
    "planes[1].point: must have 2 component(s) for dim=2, got [0.0, -1.0, 0.0]",
    "planes[1].motion.velocity: must have 2 component(s) for dim=2, got [1.0]",
    "contact.area: must have one value per particle (5), got [1.0, 1.0]",
]


def test_every_problem_of_a_file_at_once(tmp_path):
    assert problems(MANY) == MANY_LINES
    path = tmp_path / "many.toml"
    path.write_text(MANY)
    done = subprocess.run([sys.executable, "-m", "hooke.cli", "check", str(path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [f"error: {line}" for line in MANY_LINES]


def test_the_file_checks_are_the_builders():
    """The API reports the same problems with the same words, one at a time."""
    b = hooke.ModelBuilder(dim=2)
    for x in ((0.0, 0.0), (2.0, 0.0), (2.0, 0.0)):
        b.add_particle(x)
    with pytest.raises(hooke.HookeInputError) as error:
        b.add_spring(1, 2, stiffness=1.0)
    assert str(error.value) == ("springs[0]: zero-length spring: particles 1 and 2 coincide and no "
                                "rest_length was given, got (1, 2)")
    b.add_spring(0, 1, stiffness=1.0)
    with pytest.raises(hooke.HookeInputError) as error:
        b.add_spring(1, 0, stiffness=1.0)
    assert str(error.value) == "springs[1]: duplicates springs[0] between the same particles 1 and 0, got (1, 0)"


def test_a_particle_below_a_plane_and_a_builder_scene_planes_all_at_once():
    below = TWO + "[[planes]]\nnormal = [0.0, 1.0]\npoint = [0.0, 0.5]\n"
    assert problems(below) == ["planes[0]: particle(s) 1 start on or below the plane (signed "
                               "distance <= 1.5e-154 m), got [-0.5]"]
    square = files("hooke.scenes").joinpath("square_drop.toml").read_text()
    square = square.replace("normal = [0.0, 1.0]", "normal = [0.0, 1.0, 0.0]")
    square += "\n[[planes]]\nnormal = [0.0, 0.0]\npoint = [0.0, -5.0]\n"
    with pytest.raises(hooke.HookeInputError) as error:  # the dimension is the builder's: at build
        build(parse(square), square)
    assert str(error.value).splitlines() == [
        "planes[0].normal: must have 2 component(s) for dim=2, got [0.0, 1.0, 0.0]",
        "planes[1].normal: must be a non-zero vector, got [0.0, 0.0]"]


def test_builder_files_refuse_fields_the_builder_sets():
    text = 'builder = "harmonic"\ndim = 1\ngravity = [0.0]\n[[particles]]\nx = [0.0]\n' \
           "[parameters]\nx0 = 1.0\nv0 = 0.0\nstiffness = 1.0\nmass = 1.0\n"
    assert problems(text) == [
        "builder: give either 'builder' or 'particles'/'springs'/'joints', not both, got "
        "'harmonic' and particles",
        "dim: only applies to a file that lists its particles (the builder sets it), got 1",
        "gravity: only applies to a file that lists its particles (the builder sets it), got [0.0]"]


# -- hooke check: the run settings, as hooke run -------------------------------------------------

OPTIONS_SCENE = TWO + '[run]\nintegrator = "rk45"\ndt = 0.01\nt_end = 1.0\noptions = {OPTIONS}\n'


def test_check_reports_integrator_options_exactly_as_run(tmp_path):
    path = tmp_path / "options.toml"
    path.write_text(OPTIONS_SCENE.replace("{OPTIONS}", "{ rtol = -1.0, bogus = 2 }"))
    expected = ["error: bogus: is not an option of integrator 'rk45' (its options: adaptive, atol, "
                "baumgarte_alpha, baumgarte_beta, beta_c, first_step, k_c, max_step, rtol, "
                "stabilization), got 2",
                "error: rtol: must be a number > 0 for integrator 'rk45', got -1.0"]
    for command in (["check", str(path)], ["run", str(path), "--out", str(tmp_path / "out")]):
        done = subprocess.run([sys.executable, "-m", "hooke.cli", *command], capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 2 and done.stderr.splitlines() == expected, done.stderr
    path.write_text(OPTIONS_SCENE.replace("{OPTIONS}", "{ rtol = 1e-6 }"))
    done = subprocess.run([sys.executable, "-m", "hooke.cli", "check", str(path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == (
        f"{path}: valid — 2 particles, 1 spring, 0 joints, 0 planes, 2D; rk45, dt = 0.01, "
        "t_end = 1 (100 steps), rtol = 1e-06")


# -- whole steps, absurd sizes --------------------------------------------------------------------

SPRING1D = hooke.scene("spring1d")


def test_t_end_must_be_a_whole_number_of_steps():
    with pytest.raises(hooke.HookeInputError) as error:
        hooke.simulate(SPRING1D, dt=0.3, t_end=1.0)
    assert str(error.value) == (
        "t_end: must be a whole number of steps of dt = 0.3 (t_end / dt = 3.333333333); nearest "
        "valid: t_end = 0.9 or 1.2, or dt = 0.333333333333 (3 steps) or 0.25 (4 steps), got 1.0")
    with pytest.raises(hooke.HookeInputError) as error:  # shorter than one step of 0.005
        hooke.simulate(SPRING1D, t_end=0.001)
    assert str(error.value) == (
        "t_end: must be a whole number of steps of dt = 0.005 (t_end / dt = 0.2); nearest valid: "
        "t_end = 0.005, or dt = 0.001 (1 step), got 0.001")
    # the tolerance is 1e-9 of a step
    assert step_count(1.0 + 0.5e-9 * 0.1, 0.1) == 10
    with pytest.raises(hooke.HookeInputError, match="whole number of steps"):
        step_count(1.0 + 2e-9 * 0.1, 0.1)
    # decimal steps whose quotient is off by round-off only are whole
    assert step_count(0.35, 0.005) == 70 and step_count(1e5, 1e-3) == 10**8


def test_every_shipped_scene_runs_whole_steps():
    for name in hooke.scenes():
        scene = hooke.scene(name)
        n = step_count(scene.t_end, scene.dt)
        assert abs(n * scene.dt - scene.t_end) <= 1e-9 * scene.dt, name


def test_absurd_run_sizes_are_input_errors_before_any_allocation(monkeypatch):
    import hooke.memory
    from hooke.simulate import plan

    with pytest.raises(hooke.HookeInputError) as error:
        hooke.simulate(SPRING1D, dt=1e-300, t_end=1e300)
    assert str(error.value) == ("t_end: t_end / dt = inf steps of dt = 1e-300, more than the 1e+08 "
                                f"hooke runs: choose a shorter t_end or a larger dt{PIECES}, got "
                                "1e+300")
    # Issue 15: 1e11 steps of spring1d ran for hours printing nothing; 1e8 + 1 steps are refused.
    for t_end, steps, shown in ((5e8, "1e+11", "500000000.0"), (500000.005, "1e+08", "500000.005")):
        with pytest.raises(hooke.HookeInputError) as error:
            hooke.simulate(SPRING1D, t_end=t_end)
        assert str(error.value) == (f"t_end: t_end / dt = {steps} steps of dt = 0.005, more than the "
                                    "1e+08 hooke runs: choose a shorter t_end or a larger dt"
                                    f"{PIECES}, got {shown}")
    assert plan(SPRING1D, t_end=500000.0).n_steps == 10**8  # the bound itself is a run
    # 1e8 steps saved every step: 1e8 frames of 8·(2·2·1 + 0 + 8) = 96 bytes = 8.94 GiB
    monkeypatch.setattr(hooke.memory, "physical_memory", lambda: 2**30)
    with pytest.raises(hooke.HookeInputError) as error:
        hooke.simulate(SPRING1D, t_end=5e5, save_every=1)
    assert str(error.value).startswith(
        "t_end: the run would keep 1e+08 frames of 96 bytes (8.94 GiB) in memory, more than this "
        "machine's 1 GiB")
    assert str(error.value).endswith(": choose a shorter t_end, a larger dt = 0.005 or a larger "
                                     "save_every = 1, got 500000.0")


PIECES = (", or run it in pieces of at most 1e+08 steps, each from the state the last one "
          "ended in (hooke.simulate of dataclasses.replace(scene, state=...))")


def test_a_study_longer_than_the_step_bound_runs_in_pieces_bit_for_bit():
    """There is no override of MAX_STEPS (1e8 steps: 2.5e5 periods of spring1d at its dt; tens of
    minutes to hours of wall time): a longer study runs in pieces, as the refusal says, and a
    fixed-step integrator's pieces give the very numbers of one run (an adaptive one starts each
    piece's step-size control afresh: the same tolerance, not the same bits)."""
    import dataclasses

    for name, integrator in (("spring1d", "symplectic_euler"), ("pendulum", "rk4"),
                             ("cloth2d", "implicit_euler")):
        scene = hooke.scene(name)
        steps = 40 if name == "cloth2d" else 400
        whole = hooke.simulate(scene, integrator=integrator, t_end=2 * steps * scene.dt,
                               save_every=steps)
        first = hooke.simulate(scene, integrator=integrator, t_end=steps * scene.dt,
                               save_every=steps)
        last = hooke.State(first.t[-1], first.x[-1], first.v[-1])
        second = hooke.simulate(dataclasses.replace(scene, state=last), integrator=integrator,
                                t_end=steps * scene.dt, save_every=steps)
        assert second.t[-1] == whole.t[-1], name
        np.testing.assert_array_equal(second.x[-1], whole.x[-1])
        np.testing.assert_array_equal(second.v[-1], whole.v[-1])


def test_models_and_sweeps_that_cannot_fit_are_refused_before_anything_is_built(monkeypatch,
                                                                                tmp_path):
    """Estimated from the counts, against the machine's memory (here 1 GiB), in milliseconds:
    before, a chain of 10⁹ particles grew for minutes and a cloth of n = 200000 asked NumPy for
    298 GiB."""
    import hooke.memory
    from hooke.sweep import plan as plan_sweep

    monkeypatch.setattr(hooke.memory, "physical_memory", lambda: 2**30)
    text = files("hooke.scenes").joinpath("chain.toml").read_text()
    text = text.replace("n = 10\n", "n = 1000000000\n")
    (tmp_path / "chain.toml").write_text(text)
    cases = [
        (lambda: hooke.load(tmp_path / "chain.toml"),
         "parameters.n: the model would have 1e+09 particles and 1e+09 springs (1.86 TiB) in "
         "memory, more than this machine's 1 GiB: choose a smaller parameters.n, got 1000000000"),
        (lambda: hooke.scene("cloth", n=200_000), "parameters.n: the model would have 4e+10 "
         "particles and 1.6e+11 springs (32.6 TiB) in memory"),
        (lambda: hooke.scene("cloth2d", nx=10**5, ny=40), "parameters.nx × ny: the model would "
         "have 4e+06 particles and 1.6e+07 springs (19.1 GiB)"),
        (lambda: hooke.ModelBuilder(dim=3).lattice(1000, 1000, 10), "nx × ny × nz: the model "
         "would have 1e+07 particles and 7e+07 springs"),
        (lambda: plan_sweep("spring1d", {"stiffness": {"range": [1.0, 2.0]}}, random=10**8),
         "random: the sweep would have 1e+08 members (381 GiB) in memory, more than this "
         "machine's 1 GiB: choose fewer members, or run the sweep in parts, got 100000000"),
        (lambda: plan_sweep("spring1d", {"stiffness": list(range(1, 101)), "x0": list(range(1, 101)),
                                         "mass": list(range(1, 101))}),
         "params: the sweep would have 1e+06 members (3.81 GiB)"),
    ]
    for call, message in cases:
        with pytest.raises(hooke.HookeInputError) as error:
            call()
        assert str(error.value).startswith(message), str(error.value)
    assert hooke.scene("cloth2d").model.n_particles == 1200  # the shipped sizes fit


BUILD_REFUSAL = (", about {seconds} s to build here, more than the 60 s a build may take: choose a "
                 "smaller {field}, or build it from arrays (hooke.array_models.model_from_arrays), "
                 "got {value}")


def test_models_that_would_take_minutes_to_build_are_refused_in_one_line(monkeypatch, capsys,
                                                                          tmp_path):
    """Issue 15: hooke.scene("chain", n=10**7) fitted in memory and built particle by particle
    (about 20 µs each with its link) for minutes printing nothing. The build's time is estimated
    from the counts, as its memory is (both before the first array), and more than a minute is
    refused in one line naming the field, the value and the estimate; here the machine is made
    1 TiB so that only the time refuses."""
    import time

    import hooke.memory

    monkeypatch.setattr(hooke.memory, "physical_memory", lambda: 2**40)
    chain = "parameters.n: the model would have 1e+07 particles and 1e+07 springs"
    cases = [*((name, dict(n=10**7), chain + BUILD_REFUSAL.format(
        seconds=220, field="parameters.n", value=10**7))
        for name in ("chain", "jointed_chain", "npendulum", "chain_pile")),
        ("cloth2d", dict(nx=2000, ny=1000), "parameters.nx × ny: the model would have 2e+06 "
         "particles and 8e+06 springs" + BUILD_REFUSAL.format(
             seconds=92, field="parameters.nx × ny", value=(2000, 1000))),
        ("square_drop", dict(n_seg=2000), "parameters.n_seg: the model would have 4.004e+06 "
         "particles and 1.602e+07 springs" + BUILD_REFUSAL.format(
             seconds=184, field="parameters.n_seg", value=2000)),
        ("pendulum", dict(masses=[1.0] * 3_000_000), "parameters.masses: the model would have "
         "3e+06 particles and 3e+06 springs" + BUILD_REFUSAL.format(
             seconds=66, field="parameters.masses", value="'3000000 masses'"))]
    for name, parameters, message in cases:
        start = time.perf_counter()
        with pytest.raises(hooke.HookeInputError) as error:
            hooke.scene(name, **parameters)
        assert str(error.value) == message, name
        assert time.perf_counter() - start < 5, name  # before anything is built
    text = files("hooke.scenes").joinpath("chain.toml").read_text()
    (tmp_path / "chain.toml").write_text(text.replace("n = 10\n", "n = 10000000\n"))
    assert run_main(monkeypatch, capsys, "check", str(tmp_path / "chain.toml")) == (
        2, ["error: " + chain + BUILD_REFUSAL.format(seconds=220, field="parameters.n",
                                                     value=10**7)])
    assert hooke.scene("chain", n=20_000).model.n_particles == 20_001  # a second: built


def test_run_save_every_comes_from_the_file_unless_given():
    text = TWO + '[run]\nintegrator = "rk4"\ndt = 0.01\nt_end = 0.12\nsave_every = 5\n'
    scene = build(parse(text), text)
    np.testing.assert_allclose(hooke.simulate(scene).t, [0.0, 0.05, 0.1, 0.12], rtol=0, atol=1e-15)
    assert hooke.simulate(scene, save_every=1).n_frames == 13
    assert problems(TWO + "[run]\nsave_every = 0\n") == [
        "run.save_every: Input should be greater than or equal to 1, got 0"]
    with pytest.raises(hooke.HookeInputError) as error:
        hooke.Scene(scene.model, save_every="a")
    assert str(error.value) == "save_every: must be an integer >= 1, got 'a'"


def test_a_files_save_every_past_the_step_bound_is_named_under_run(tmp_path, monkeypatch,
                                                                   capsys):
    """Issue 15 (confirmation pass, stop 28): a scene file's [run] save_every over 1e8 was
    named 'save_every', the Scene's argument, not the file's field 'run.save_every' (and was
    found only once the file's model was built, after every other check)."""
    assert problems(TWO + "[run]\nsave_every = 100000000000\n") == [
        "run.save_every: must be at most 1e+08 steps (the most a run has), got 100000000000"]
    path = tmp_path / "scene.toml"
    path.write_text(TWO + "[run]\nsave_every = 100000000000\n", encoding="utf-8")
    assert run_main(monkeypatch, capsys, "check", str(path)) == (2, [
        "error: run.save_every: must be at most 1e+08 steps (the most a run has), got "
        "100000000000"])


def test_a_builder_scene_files_mesh_is_read_from_its_folder(tmp_path, monkeypatch):
    """Issue 15 (confirmation pass, stop 28): a tet_mesh scene file naming a mesh beside it
    (mesh = "mine.vtu") was read from the current directory, as no obstacle mesh is: run from
    another folder it said 'parameters.mesh: no such mesh file', or loaded another folder's
    mine.vtu; a stored run of it could not be opened from elsewhere either."""
    folder = tmp_path / "scene"
    folder.mkdir()
    (folder / "mine.vtu").write_bytes((files("hooke.scenes") / "meshes" / "blob.vtu").read_bytes())
    text = files("hooke.scenes").joinpath("soft3d.toml").read_text(encoding="utf-8")
    path = folder / "soft.toml"
    path.write_text(text.replace('mesh = "blob.vtu"', 'mesh = "mine.vtu"'), encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # no mine.vtu here
    scene = hooke.load(path)
    np.testing.assert_array_equal(scene.model.x0, hooke.scene("soft3d").model.x0)
    hooke.simulate(scene, t_end=scene.dt, store=tmp_path / "run.h5")
    np.testing.assert_array_equal(hooke.open(tmp_path / "run.h5").scene.model.x0, scene.model.x0)
    path.write_text(text.replace('mesh = "blob.vtu"', 'mesh = ""'), encoding="utf-8")
    with pytest.raises(hooke.HookeInputError) as error:
        hooke.load(path)
    assert str(error.value) == "parameters.mesh: must name a mesh file, got ''"


# -- huge coordinates -----------------------------------------------------------------------------

def test_coordinates_whose_squares_overflow_are_rejected():
    b = hooke.ModelBuilder(dim=2)
    with pytest.raises(hooke.HookeInputError) as error:
        b.add_particle((1e308, 0.0))
    assert str(error.value) == ("particles[0].x: is too large (its squared length overflows to inf), "
                                "got (1e+308, 0.0)")
    # each point fine, their distance's square overflows: named on the spring or joint
    b.add_particle((1e154, 0.0))
    b.add_particle((-1e154, 0.0))
    for add, name in ((b.add_spring, "springs"), (b.add_joint, "joints")):
        with pytest.raises(hooke.HookeInputError) as error:
            add(0, 1, **({"stiffness": 1.0} if name == "springs" else {}))
        assert str(error.value) == (f"{name}[0]: the distance between particles 0 and 1 is too "
                                    "large (its square overflows to inf), got (0, 1)")
    with pytest.raises(hooke.HookeInputError) as error:
        model_from_arrays(2, [[1e154, 0.0], [-1e154, 0.0]], 1.0, [[0, 1]], 1.0)
    assert str(error.value) == ("springs[0]: the distance between its particles is too large (its "
                                "square overflows to inf), got (0, 1)")
    text = TWO.replace("x = [0.0, 0.0]", "x = [1e154, 0.0]").replace("x = [1.0, 0.0]", "x = [-1e154, 0.0]")
    assert problems(text) == ["springs[0]: the distance between particles 0 and 1 is too large (its "
                              "square overflows to inf), got (0, 1)"]


# -- the command line -----------------------------------------------------------------------------

@pytest.mark.parametrize("args, line", [
    (["run", "spring1d", "--dt", "abc"], "error: --dt: must be a number, got 'abc'"),
    # stop 29: a number past the largest float was read as inf, and refused as the inf nobody
    # typed ("--t-end: must be a finite number > 0, got inf"); every float flag reads it as typed
    (["run", "spring1d", "--t-end", "1e400"],
     "error: --t-end: is past the largest float (1.798e+308), got '1e400'"),
    (["fit", "spring1d", "--observed", "o.csv", "--dt", "-1e999"],
     "error: --dt: is past the largest float (1.798e+308), got '-1e999'"),
    (["animate", "out", "--duration", "1e309"],
     "error: --duration: is past the largest float (1.798e+308), got '1e309'"),
    (["sweep", "spring1d", "--param", "stiffness=1", "--timeout", "1E400"],
     "error: --timeout: is past the largest float (1.798e+308), got '1E400'"),
    (["study", "pendulum-correction", "--output-interval", "2e308"],
     "error: --output-interval: is past the largest float (1.798e+308), got '2e308'"),
    (["run", "spring1d", "--save-every", "1.5"],
     "error: --save-every: must be an integer, got '1.5'"),
    (["run", "spring1d", "--bogus", "3"],
     "error: --bogus: no such option of `hooke run` (did you mean --out?), got '--bogus'"),
    (["check"], "error: FILE: missing (see `hooke check --help`), got nothing"),
    (["frobnicate"], "error: hooke: No such command 'frobnicate' (see `hooke --help`)"),
])
def test_parse_errors_are_one_line_exit_2(monkeypatch, capsys, args, line):
    code, lines = run_main(monkeypatch, capsys, *args)
    assert (code, lines) == (2, [line])


def test_out_must_be_a_directory(monkeypatch, capsys, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("not a directory")
    code, lines = run_main(monkeypatch, capsys, "run", "spring1d", "--out", str(afile))
    assert (code, lines) == (2, [f"error: --out: is an existing file, not a directory, got '{afile}'"])


def test_an_unexpected_exception_is_one_line_and_hooke_debug_shows_it(monkeypatch, capsys):
    def broken(name):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(cli, "load_scene", broken)
    monkeypatch.delenv("HOOKE_DEBUG", raising=False)
    code, lines = run_main(monkeypatch, capsys, "run", "spring1d")
    assert (code, lines) == (1, ["error: unexpected RuntimeError: boom second line (a bug in hooke; "
                                 "run with HOOKE_DEBUG=1 to see the traceback)"])
    monkeypatch.setenv("HOOKE_DEBUG", "1")
    monkeypatch.setattr(sys, "argv", ["hooke", "run", "spring1d"])
    with pytest.raises(RuntimeError, match="boom"):  # raised on: Python prints the traceback
        cli.main()


def test_hooke_debug_prints_the_traceback_in_a_real_process(tmp_path):
    script = ("import sys, hooke.cli as c\n"
              "def broken(name): raise ZeroDivisionError('deliberate')\n"
              "c.load_scene = broken\nsys.argv = ['hooke', 'run', 'spring1d', '--out', sys.argv[1]]\n"
              "c.main()\n")
    for debug, code in (("", 1), ("1", 1)):
        done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True,
                              text=True, timeout=300, env={**os.environ, "HOOKE_DEBUG": debug})
        assert done.returncode == code
        assert ("Traceback (most recent call last)" in done.stderr) == bool(debug), done.stderr
        assert "ZeroDivisionError: deliberate" in done.stderr


# -- docs/scene-files.md --------------------------------------------------------------------------

DOC = (Path(__file__).resolve().parents[1] / "docs" / "scene-files.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```(toml broken|toml|text)\n(.*?)```", DOC, flags=re.S)


def doc_table(heading: str) -> dict[str, str]:
    """The first table under ``heading``: its first column's `key` → second column."""
    section = DOC.split(heading, 1)[1]
    rows = re.findall(r"^\| `([^`]+)`[^|]* \| ([^|]+) \|", section.split("\n## ", 1)[0], flags=re.M)
    return {key: value.strip() for key, value in rows}


def test_every_documented_example_is_valid_and_runs(tmp_path):
    examples = [text for kind, text in BLOCKS if kind == "toml"]
    assert len(examples) == 9
    for k, text in enumerate(examples):
        path = tmp_path / f"example{k}.toml"
        path.write_text(text)
        scene = hooke.load(path)
        run = plan(scene)  # what `hooke check` adds: options, whole steps, frame memory
        result = hooke.simulate(scene, t_end=3 * scene.dt)
        assert result.complete and np.all(np.isfinite(result.x)), (k, run.n_steps)


def test_the_documented_error_output_is_what_check_prints(monkeypatch, capsys, tmp_path):
    kinds = [kind for kind, _ in BLOCKS]
    broken = kinds.index("toml broken")
    assert kinds[broken + 1] == "text"
    path = tmp_path / "broken.toml"
    path.write_text(BLOCKS[broken][1])
    code, lines = run_main(monkeypatch, capsys, "check", str(path))
    assert (code, lines) == (2, BLOCKS[broken + 1][1].splitlines())


def test_the_documented_tables_match_the_code():
    from hooke.integrators import get as get_integrator
    from hooke.scenes import source
    from hooke.scenes.builders import _BUILDERS, parameter_names

    # builders: every one, with exactly its parameters and the built-in scenes made with it
    rows = re.findall(r"^\| `(\w+)` \| ((?:`\w+`(?:, )?)+) \| [^|]+ \| ([^|]+) \|$", DOC, flags=re.M)
    documented = {name: (re.findall(r"`(\w+)`", params), re.findall(r"`(\w+)`", scenes))
                  for name, params, scenes in rows}
    assert set(documented) == set(_BUILDERS)
    for name, (params, scenes) in documented.items():
        assert params == parameter_names(name), name
        assert sorted(scenes) == [s for s in hooke.scenes() if f'builder = "{name}"' in source(s)], name
    # integrator options and their defaults
    table = DOC.split("The options and their defaults:", 1)[1].split("\n\n", 2)[1]
    option_rows = re.findall(r"^\| ((?:`\w+`(?:, )?)+) \| (.+) \|$", table, flags=re.M)
    joint_options = None
    for names, options in option_rows:
        pairs = {key: tomllib.loads(f"v = {value}")["v"]
                 for key, value in re.findall(r"`(\w+) = ([^`]+)`", options)}
        if joint_options is None:
            joint_options = pairs
        if "joint options above" in options:
            pairs.update(joint_options)
        for name in re.findall(r"`(\w+)`", names):
            assert pairs == get_integrator(name).defaults, name
    assert {n for names, _ in option_rows for n in re.findall(r"`(\w+)`", names)} == set(hooke.integrators())
    # defaults of [run], [contact] and particles
    run = doc_table("## `[run]`")
    scene = hooke.Scene(hooke.scene("spring1d").model)
    assert (run["integrator"], float(run["dt"]), float(run["t_end"]), int(run["save_every"])) == (
        f'`"{scene.integrator}"`', scene.dt, scene.t_end, scene.save_every)
    contact = doc_table("`[contact]` holds")
    b = hooke.ModelBuilder(dim=1)
    b.add_particle([1.0])
    b.add_plane([1.0], [0.0])
    model = b.finalize()
    assert {key: float(contact[key]) for key in ("dhat", "kappa", "area", "epsv")} == {
        "dhat": model.contact_dhat, "kappa": model.contact_kappa, "area": model.contact_area[0],
        "epsv": model.contact_epsv}
    assert float(doc_table("## `[[particles]]`")["mass"]) == model.mass[0]
