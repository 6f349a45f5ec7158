"""Reliability: schema-level validation of whole files, the energy blow-up guard, determinism,
and property-based tests (hypothesis) that valid input runs and invalid input fails cleanly."""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hooke
from hooke import cli as hooke_cli
from hooke.integrators import get as get_integrator
from hooke.io.scene_file import build, parse

from conftest import run_cli as cli


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
    assert done.returncode == 2 and done.stderr.splitlines() == [
        "error: particles[0].mass: Input should be greater than 0, got 0.0",
        "error: run.t_end: Input should be greater than 0, got -1.0",
        "error: springs[0]: zero-length spring: particles 0 and 1 coincide and no rest_length was "
        "given, got (0, 1)",
        "error: springs[1]: duplicates springs[0] between the same particles 1 and 0, got (1, 0)",
        "error: springs[2].j: particle index out of range [0, 2), got 9"]


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


def test_the_pendulum_runs_the_same_on_every_blas_kernel(tmp_path):
    """OpenBLAS picks its kernels by CPU (AVX-512 SkylakeX here, AVX2 Haswell on many machines)
    and they round differently; the runs of seed 003's study never go through the BLAS (stage
    sums element-wise, the joints' normal matrix by hooke.dense), so the chaotic pendulum comes
    out bit-identical whichever kernel OPENBLAS_CORETYPE forces."""
    script = ("import sys, hooke; r = hooke.simulate(hooke.scene('pendulum'), t_end=10.0, "
              "beta_c=0.2, k_c=0.01); open(sys.argv[1], 'wb').write(r.x.tobytes())")
    outputs = []
    for kernel in ("", "Haswell", "Prescott"):  # this CPU's own choice, AVX2, SSE3
        path = tmp_path / (kernel or "default")
        env = {key: value for key, value in os.environ.items() if key != "OPENBLAS_CORETYPE"}
        subprocess.run([sys.executable, "-c", script, str(path)], check=True, timeout=120,
                       env={**env, "OPENBLAS_CORETYPE": kernel} if kernel else env)
        outputs.append(path.read_bytes())
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


# -- scene files: valid ones run, invalid ones fail cleanly ------------------------------------------

millimetres = st.integers(-5_000, 5_000).map(lambda k: k / 1000)
positive = st.floats(0.1, 10.0)
PLANE_INTEGRATORS = [n for n in hooke.integrators() if get_integrator(n).supports_contact]
JOINT_INTEGRATORS = [n for n in hooke.integrators() if get_integrator(n).supports_joints]


@st.composite
def motions(draw, dim: int):
    vector = draw(st.lists(st.integers(-2, 2), min_size=dim, max_size=dim).filter(any))
    if draw(st.booleans()):
        return {"type": "sinusoid", "amplitude": draw(st.floats(-0.2, 0.2)),
                "direction": [float(c) for c in vector], "omega": draw(st.floats(0.0, 10.0))}
    return {"type": "constant_velocity", "velocity": [0.1 * c for c in vector]}


@st.composite
def valid_scenes(draw) -> dict:
    """Scene files with particles (pinned, moving, with velocities), springs, joints (a forest with
    at most one pinned particle per tree: never singular), contact planes below every particle,
    contact settings and run settings: every draw is valid."""
    dim = draw(st.integers(1, 3))
    n = draw(st.integers(2, 6))
    points = draw(st.lists(st.tuples(*[millimetres] * dim), min_size=n, max_size=n, unique=True))
    energy = draw(st.sampled_from(["hookean", "squared_length"]))
    scene: dict = {"dim": dim, "spring_energy": energy}
    if draw(st.booleans()):
        scene["gravity"] = [draw(st.floats(-10, 10)) for _ in range(dim)]
    particles = []
    for point in points:
        particle = {"x": list(point), "mass": draw(positive)}
        if draw(st.integers(0, 3)) == 0:
            particle["pinned"] = True
            if draw(st.booleans()):
                particle["motion"] = draw(motions(dim))
        elif draw(st.booleans()):
            particle["v"] = [draw(st.floats(-1, 1)) for _ in range(dim)]
        particles.append(particle)
    scene["particles"] = particles
    pinned = [p.get("pinned", False) for p in particles]
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=8))
    springs = []
    for i, j in dict.fromkeys((min(p), max(p)) for p in pairs if p[0] != p[1]):
        spring = {"i": i, "j": j, "stiffness": draw(st.floats(0.0, 100.0))}
        if draw(st.booleans()):  # within a factor 2 of the length: no stiff, fast-blowing system
            length = float(np.linalg.norm(np.subtract(points[j], points[i])))
            spring["rest_length"] = length * draw(st.floats(0.5, 1.5))
        if draw(st.booleans()):
            spring["damping"] = draw(st.floats(0.0, 1.0))
        springs.append(spring)
    scene["springs"] = springs
    kind = draw(st.sampled_from(["plain", "joints", "planes"]))
    if kind == "joints":
        tree = list(range(n))  # the root of each particle's tree
        anchored = list(pinned)
        joints = []
        for k in range(1, n):
            j = draw(st.integers(0, k - 1))
            if draw(st.booleans()) and not (anchored[tree[j]] and pinned[k]):
                joint = {"i": j, "j": k}
                if draw(st.booleans()):  # near the distance: the first projection converges
                    length = float(np.linalg.norm(np.subtract(points[k], points[j])))
                    joint["length"] = length * draw(st.floats(0.8, 1.2))
                joints.append(joint)
                root = tree[j]
                anchored[root] = anchored[root] or pinned[k]
                tree[k] = root
        scene["joints"] = joints
    elif kind == "planes":
        planes = []
        for _ in range(draw(st.integers(1, 2))):
            normal = np.array(draw(st.lists(st.integers(-2, 2), min_size=dim, max_size=dim).filter(any)),
                              dtype=float)
            unit = normal / np.linalg.norm(normal)
            lowest = min(float(np.dot(p, unit)) for p in points)
            point = (lowest - draw(st.floats(0.05, 1.0))) * unit
            plane = {"normal": normal.tolist(), "point": point.tolist(),
                     "friction": draw(st.floats(0.0, 0.5))}
            if draw(st.booleans()):
                plane["motion"] = {"type": "constant_velocity", "velocity": (-0.1 * unit).tolist()}
            planes.append(plane)
        scene["planes"] = planes
        area = draw(st.one_of(st.floats(0.0, 1.0), st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n)))
        scene["contact"] = {"dhat": draw(st.floats(0.005, 0.04)), "kappa": draw(st.floats(1e2, 1e5)),
                            "area": area, "epsv": draw(st.floats(1e-4, 1e-2))}
    integrators = {"plain": hooke.integrators(), "joints": JOINT_INTEGRATORS,
                   "planes": PLANE_INTEGRATORS}[kind]
    if energy == "squared_length":
        integrators = [name for name in integrators if name != "fast_mass_spring"]
    dt = draw(st.sampled_from([5e-4, 1e-3, 2e-3]))
    scene["run"] = {"integrator": draw(st.sampled_from(integrators)), "dt": dt,
                    "t_end": draw(st.integers(1, 4)) * dt}
    return scene


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scene=valid_scenes())
def test_random_valid_scene_files_load_and_simulate_a_few_steps(scene):
    text = tomli_w.dumps(scene)
    loaded = build(parse(text), text)  # every draw is valid
    result = hooke.simulate(loaded)
    steps = round(scene["run"]["t_end"] / scene["run"]["dt"])
    assert result.complete and result.n_frames == steps + 1
    assert np.all(np.isfinite(result.x)) and np.all(np.isfinite(result.energy["total"]))
    model = loaded.model
    static = model.pinned.copy()
    static[[k for k, _ in model.pinned_motions]] = False
    np.testing.assert_array_equal(result.x[:, static], np.broadcast_to(model.x0[static],
                                                                       result.x[:, static].shape))
    assert model.n_springs == len(scene["springs"]) and model.n_joints == len(scene.get("joints", []))


def check_file(text: str) -> tuple[int, list[str]]:
    """``hooke check`` on a file holding ``text``, in this process: (exit code, stderr lines)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "scene.toml"
        path.write_text(text, encoding="utf-8")
        stderr, argv = io.StringIO(), sys.argv
        sys.argv = ["hooke", "check", str(path)]
        try:
            with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
                with pytest.raises(SystemExit) as done:
                    hooke_cli.main()
        finally:
            sys.argv = argv
    return done.value.code, stderr.getvalue().splitlines()


def _pick(draw, scene: dict, table: str, used: set):
    """An entry of ``table`` not yet mutated (its index), or None."""
    free = [k for k in range(len(scene.get(table, []))) if (table, k) not in used]
    if not free:
        return None
    k = draw(st.sampled_from(free))
    used.add((table, k))
    return k


def _add_twin(scene: dict, p: int, used: set) -> int:
    """A new particle on top of particle ``p`` (kept valid for contact), which no other mutation
    touches; returns its index."""
    scene["particles"].append({"x": list(scene["particles"][p]["x"])})
    area = scene.get("contact", {}).get("area")
    if isinstance(area, list):
        area.append(0.5)
    used.add(("particles", len(scene["particles"]) - 1))
    return len(scene["particles"]) - 1


WRONG_TYPES = ["1.0", True, [1.0], {"a": 1}]


@st.composite
def mutation(draw, scene: dict, used: set) -> str | None:
    """Break ``scene`` in one place; return the field path its one error line must name. Entries
    a mutation touches or depends on go into ``used``, so that mutations stay independent (an
    invalid position, say, silences the checks of the springs at that particle)."""
    dim, n = scene["dim"], len(scene["particles"])
    kind = draw(st.sampled_from(["unknown_key", "wrong_type", "range", "non_finite", "index",
                                 "duplicate", "zero_length", "joint_coincident", "joint_pinned",
                                 "plane_normal", "plane_point", "vector_length", "run"]))
    if kind == "unknown_key":
        table = draw(st.sampled_from(["particles", "springs"]))
        k = _pick(draw, scene, table, used)
        if k is None:
            return None
        scene[table][k]["colour"] = "red"
        return f"{table}[{k}].colour"
    if kind in ("wrong_type", "range", "non_finite"):
        k = _pick(draw, scene, "particles", used)
        if k is None:
            return None
        particle = scene["particles"][k]
        if kind == "wrong_type":
            field = draw(st.sampled_from(["mass", "pinned", "name"]))
            particle[field] = {"mass": draw(st.sampled_from(WRONG_TYPES)), "pinned": 1, "name": 3}[field]
            return f"particles[{k}].{field}"
        if kind == "range":
            particle["mass"] = draw(st.sampled_from([0.0, -1.0, -1e-300]))
            return f"particles[{k}].mass"
        c = draw(st.integers(0, dim - 1))
        particle["x"][c] = draw(st.sampled_from([math.nan, math.inf, -math.inf]))
        # the springs and joints at this particle cannot be checked: no more lines
        return f"particles[{k}].x[{c}]"
    if kind == "index":
        k = _pick(draw, scene, "springs", used)
        if k is None:
            return None
        end = draw(st.sampled_from(["i", "j"]))
        scene["springs"][k][end] = draw(st.sampled_from([n + 100, -1]))  # twins may follow
        return f"springs[{k}].{end}"
    if kind == "duplicate":
        if not scene["springs"]:
            return None
        original = _pick(draw, scene, "springs", used)
        if original is None:
            return None
        copy = dict(scene["springs"][original])
        copy["i"], copy["j"] = copy["j"], copy["i"]
        scene["springs"].append(copy)
        used.add(("springs", len(scene["springs"]) - 1))
        return f"springs[{len(scene['springs']) - 1}]"
    if kind in ("zero_length", "joint_coincident", "joint_pinned"):
        if kind != "zero_length" and scene.get("planes"):
            return None  # a file with planes has no joints (implicit_euler runs it)
        table = "springs" if kind == "zero_length" else "joints"
        scene.setdefault(table, [])
        if kind == "joint_pinned":
            first = _add_twin(scene, 0, used)
            scene["particles"][first].update({"x": [5.0 + 0.1 * first] * dim, "pinned": True})
            second = _add_twin(scene, first, used)
            scene["particles"][second].update({"x": [6.0 + 0.1 * second] * dim, "pinned": True})
            ends = (first, second)
        else:
            p = _pick(draw, scene, "particles", used)
            if p is None:
                return None
            ends = (p, _add_twin(scene, p, used))
        entry = {"i": ends[0], "j": ends[1]}
        if table == "springs":
            entry["stiffness"] = 1.0
        scene[table].append(entry)
        used.add((table, len(scene[table]) - 1))
        return f"{table}[{len(scene[table]) - 1}]"
    if kind in ("plane_normal", "plane_point"):
        k = _pick(draw, scene, "planes", used)
        if k is None:
            return None
        if kind == "plane_normal":
            scene["planes"][k]["normal"] = [0.0] * dim
            return f"planes[{k}].normal"
        scene["planes"][k]["point"] = scene["planes"][k]["point"] + [0.0]
        return f"planes[{k}].point"
    if kind == "vector_length":
        k = _pick(draw, scene, "particles", used)
        if k is None:
            return None
        field = "v" if "v" in scene["particles"][k] else "x"
        scene["particles"][k][field] = scene["particles"][k][field] + [0.0]
        return f"particles[{k}].{field}"
    field = draw(st.sampled_from(["dt", "t_end", "integrator", "speed"]))
    if ("run", field) in used or ("run", "dt") in used or ("run", "t_end") in used:
        return None
    used.add(("run", field))
    scene["run"][field] = {"dt": -0.01, "t_end": 0.0, "integrator": "leapfrog", "speed": 2}[field]
    return f"run.{field}"


@st.composite
def invalid_files(draw) -> tuple[str, set[str] | None]:
    """(text, the field paths of its problems): a valid scene broken in one to three independent
    places, a builder scene with bad parameters, or malformed TOML (paths None)."""
    kind = draw(st.sampled_from(["explicit"] * 6 + ["builder", "malformed"]))
    if kind == "builder":
        parameters = {"x0": 1.0, "v0": 0.0, "stiffness": 5.0, "mass": 0.5}
        broken = draw(st.sets(st.sampled_from(sorted(parameters) + ["extra"]), min_size=1, max_size=3))
        for name in broken:
            parameters[name] = 1.0 if name == "extra" else draw(st.sampled_from(
                ["5", True, math.nan, -1.0 if name in ("stiffness", "mass") else "x"]))
        text = 'builder = "harmonic"\n' + tomli_w.dumps({"parameters": parameters})
        return text, {f"parameters.{name}" for name in broken}
    scene = draw(valid_scenes())
    if kind == "malformed":
        text = tomli_w.dumps(scene)
        cut = draw(st.sampled_from(["x = [", "= 1", "[[particles]\n", "dim = 2\ndim = 3\n"]))
        return text + cut, None
    used: set = set()
    paths = {draw(mutation(scene, used)) for _ in range(draw(st.integers(1, 3)))} - {None}
    if not paths:
        scene["particles"][0]["colour"] = 1
        paths = {"particles[0].colour"}
    return tomli_w.dumps(scene), paths


def line_path(line: str) -> str:
    return line.removeprefix("error: ").split(": ", 1)[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=invalid_files())
def test_random_invalid_scene_files_fail_check_with_one_clear_line_per_problem(case):
    text, paths = case
    code, lines = check_file(text)
    assert code == 2, (text, lines)
    assert lines and all(line.startswith("error: ") for line in lines), lines
    assert not any("Traceback" in line or "unexpected" in line for line in lines), lines
    if paths is None:  # malformed TOML: one line naming the file
        assert len(lines) == 1 and line_path(lines[0]).endswith("scene.toml"), lines
        assert "malformed TOML" in lines[0]
        return
    # one line per problem, each naming the field path and the value
    assert sorted(line_path(line) for line in lines) == sorted(paths), (text, lines)
    assert all(", got " in line for line in lines), lines
