"""Reliability: schema-level validation of whole files, the energy blow-up guard, determinism,
and property-based tests (hypothesis) that valid input runs and invalid input fails cleanly."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hooke
from hooke.io.scene_file import parse


def cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "hooke.cli", *args], capture_output=True,
                          text=True, env=env, timeout=300)


def test_every_problem_of_a_file_is_reported_at_once(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("""
dim = 2
[run]
t_end = -1.0
[[particles]]
x = [0.0, 0.0]
mass = 0.0
[[particles]]
x = [0.0, 0.0]
[[springs]]
i = 0
j = 1
stiffness = 1.0
[[springs]]
i = 1
j = 0
stiffness = 1.0
[[springs]]
i = 0
j = 9
stiffness = 1.0
""")
    done = cli("check", str(path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    for expected in ("run.t_end", "particles[0].mass", "springs[0]: zero length",
                     "springs[1]: duplicates springs[0]", "springs[2].j: particle index out of range"):
        assert sum(expected in line for line in lines) == 1, (expected, lines)
    assert len(lines) == 5


def test_check_accepts_every_builtin_scene_file():
    from importlib.resources import files

    for name in hooke.scenes():
        hooke.load(files("hooke.scenes") / f"{name}.toml")  # what `hooke check` runs
    done = cli("check", str(files("hooke.scenes") / "crane.toml"))
    assert done.returncode == 0 and "10 joints" in done.stdout, done.stderr


def test_schema_is_json_and_lists_the_sections():
    done = cli("schema")
    schema = json.loads(done.stdout)
    assert {"particles", "springs", "joints", "planes", "run", "builder"} <= set(schema["properties"])
    assert schema["additionalProperties"] is False


@pytest.mark.parametrize("scene_name, integrator", [
    ("cloth2d", "symplectic_euler"), ("soft3d", "implicit_euler_linear"), ("square_drop", None),
    ("pendulum", None), ("top", None),
])
def test_runs_are_byte_identical_across_runs_and_thread_counts(scene_name, integrator):
    import numba

    scene = hooke.scene(scene_name)
    outputs = []
    for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS), 1):
        numba.set_num_threads(threads)
        try:
            r = hooke.simulate(scene, integrator=integrator, t_end=0.05)
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        outputs.append(r.x.tobytes() + r.v.tobytes() + r.energy["total"].tobytes())
    assert outputs[0] == outputs[1] == outputs[2]


# -- property-based ------------------------------------------------------------------------------

# on a 1 mm grid: distinct points are then at least 1 mm apart (no underflowing spring lengths)
coordinates = st.integers(-10_000, 10_000).map(lambda k: k / 1000)


@st.composite
def valid_systems(draw):
    dim = draw(st.integers(1, 3))
    n = draw(st.integers(2, 6))
    points = draw(st.lists(st.tuples(*[coordinates] * dim), min_size=n, max_size=n, unique=True))
    b = hooke.ModelBuilder(dim=dim, gravity=draw(st.tuples(*[st.floats(-10, 10)] * dim)))
    for k, p in enumerate(points):
        b.add_particle(p, mass=draw(st.floats(0.1, 10)), pinned=(k == 0 and draw(st.booleans())))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=8))
    for i, j in {(min(p), max(p)) for p in pairs if p[0] != p[1]}:
        b.add_spring(i, j, stiffness=draw(st.floats(0, 50)), damping=draw(st.floats(0, 1)))
    return b.finalize()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=valid_systems(), integrator=st.sampled_from(
    ["explicit_euler", "symplectic_euler", "rk4", "rk45", "implicit_euler_linear", "implicit_euler",
     "newmark"]))
def test_random_valid_systems_simulate_a_few_steps(model, integrator):
    scene = hooke.Scene(model, integrator=integrator, dt=1e-3, t_end=5e-3)
    result = hooke.simulate(scene)
    assert result.complete and np.all(np.isfinite(result.x))
    np.testing.assert_array_equal(result.x[:, model.pinned], np.broadcast_to(
        model.x0[model.pinned], result.x[:, model.pinned].shape))


values = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True),
                   st.text(max_size=3), st.lists(st.floats(allow_nan=True), max_size=4))


@st.composite
def scene_texts(draw):
    """TOML scene files with random (mostly invalid) values in random places."""
    fields = {
        "dim": draw(values), "gravity": draw(values),
        "particles": [{"x": draw(values), "mass": draw(values), "pinned": draw(values)}
                      for _ in range(draw(st.integers(0, 3)))],
        "springs": [{"i": draw(values), "j": draw(values), "stiffness": draw(values)}
                    for _ in range(draw(st.integers(0, 2)))],
        "run": {"dt": draw(values), "integrator": draw(values)},
    }
    lines = []
    for key in ("dim", "gravity"):
        if fields[key] is not None:
            lines.append(f"{key} = {toml_value(fields[key])}")
    for table in ("run",):
        lines.append(f"[{table}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in fields[table].items() if v is not None]
    for table in ("particles", "springs"):
        for entry in fields[table]:
            lines.append(f"[[{table}]]")
            lines += [f"{k} = {toml_value(v)}" for k, v in entry.items() if v is not None]
    return "\n".join(lines) + "\n"


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if value != value else ("inf" if value == float("inf") else
                                             "-inf" if value == float("-inf") else repr(value))
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return str(value)


@settings(max_examples=150, deadline=None)
@given(text=scene_texts())
def test_random_scene_files_either_build_or_fail_with_the_clear_error(text):
    from hooke.io.scene_file import build

    try:
        scene = build(parse(text), text)
    except hooke.HookeInputError as error:
        message = str(error)
        assert message and all(": " in line for line in message.splitlines()), message
        return
    result = hooke.simulate(scene, t_end=3 * scene.dt)
    assert result.n_frames == 4
