"""Parameter sweeps on Dask (hooke.sweep, `hooke sweep`): one LocalCluster with 2 single-threaded
worker processes is shared by the module (a worker that dies fails its task at once: Dask's
allowed-failures is 0 there, its default 3 would re-run the task on more workers first). No test
restarts a worker: members stuck past their time limit are killed in their own processes."""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import subprocess
import sys
import threading
import tomllib

import dask
import h5py
import numpy as np
import pandas as pd
import psutil
import pytest
from typer.testing import CliRunner

import hooke
from hooke.cli import app
from hooke.errors import HookeInputError
from hooke.io.store import read_trajectory
from hooke.studies import BETA_C_SWEEP, K_C_SWEEP, length_drift
from hooke.sweep import is_sweep_file, metrics, parse_param, plan, read_sweep_file
from hooke.sweep.execution import connect

from conftest import make_socket

SPRING = {"stiffness": [5.0, 80.0], "integrator": ["symplectic_euler", "rk4"], "dt": [0.01],
          "t_end": [1.0]}
# The issue's example: `hooke sweep spring1d --param spring.k=1e3,1e4,1e5 --param
# integrator=symplectic_euler,rk4`, at spring1d's dt = 0.005, t_end = 10 s, m = 0.5 kg.
ISSUE = {"spring.k": [1e3, 1e4, 1e5], "integrator": ["symplectic_euler", "rk4"]}
# The summary table's documented columns around the parameter columns, and their dtypes.
BEFORE = {"member": "str"}
AFTER = {"status": "str", "error": "str", "attempts": "int64", "wall_time": "float64",
         "energy_error": "float64", "constraint_drift": "float64", "penetration": "float64",
         "steps": "int64", "rejected": "int64", "trajectory": "str"}


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                         silence_logs=logging.ERROR) as cluster, Client(cluster) as dask_client:
        yield dask_client


@pytest.fixture(scope="module")
def spring_sweep(client, tmp_path_factory):
    return hooke.sweep("spring1d", SPRING, client=client, out=tmp_path_factory.mktemp("spring"))


def same_number(a, b) -> bool:
    return (math.isnan(a) and math.isnan(b)) if isinstance(a, float) and math.isnan(a) else a == b


def assert_same_as_alone(result, run_alone):
    """Every member's stored trajectory and metrics equal a run of the member by itself."""
    for row in result.table.to_dict("records"):
        assert row["status"] == "ok", row["error"]
        alone = run_alone(row)
        stored = read_trajectory(result.directory / row["trajectory"])
        for key in ("t", "x", "v"):
            assert np.array_equal(stored[key], getattr(alone, key)), key
        assert np.array_equal(stored["energy"]["total"], alone.energy["total"])
        for key, value in metrics(alone).items():
            assert same_number(row[key], value), (key, row[key], value)


def measured_omega(t: np.ndarray, x: np.ndarray, rest: float = 0.0) -> float:
    """Angular frequency from the first and last zero crossings of x − rest (linear interpolation)."""
    y = x - rest
    k = np.flatnonzero(np.sign(y[:-1]) != np.sign(y[1:]))
    crossings = t[k] - y[k] * (t[k + 1] - t[k]) / (y[k + 1] - y[k])
    return math.pi * (crossings.size - 1) / (crossings[-1] - crossings[0])


def discrete_omega(integrator: str, omega: float, h: float) -> float:
    """The frequency a method gives the oscillator x'' = −ω²x at step h: symplectic Euler
    turns by θ = 2 asin(ωh/2) per step, RK4 by arg R(iωh), R(z) = 1 + z + z²/2 + z³/6 + z⁴/24."""
    if integrator == "symplectic_euler":
        return 2 * math.asin(omega * h / 2) / h
    z = 1j * omega * h
    return float(np.angle(1 + z + z**2 / 2 + z**3 / 6 + z**4 / 24)) / h


def test_sweep_on_two_workers_equals_each_member_run_alone(spring_sweep, client, tmp_path):
    assert len(spring_sweep.table) == 4 and spring_sweep.counts()["ok"] == 4
    first = spring_sweep.table.iloc[0]
    reopened = spring_sweep.result(first["member"])
    assert reopened.integrator == first["integrator"] and reopened.scene.parameters["stiffness"] == 5.0
    assert_same_as_alone(spring_sweep, lambda row: hooke.simulate(
        hooke.scene("spring1d", stiffness=row["stiffness"]), integrator=row["integrator"],
        dt=row["dt"], t_end=row["t_end"]))
    # joints (constraint drift) and contact (penetration), through a scheduler address
    address = client.scheduler.address
    pendulum = hooke.sweep("pendulum", {"k_c": [0.0, 0.04], "t_end": [0.3]}, client=address,
                           out=tmp_path / "pendulum", metric="constraint_drift")
    assert len(pendulum.table) == 2 and (pendulum.table["constraint_drift"] > 0).all()
    assert_same_as_alone(pendulum, lambda row: hooke.simulate(
        hooke.scene("pendulum"), t_end=row["t_end"], k_c=row["k_c"]))
    # constraint_drift is seed 003's ΔL = Σ|L − L0| over both strings (max over frames), the
    # measure of `hooke study`, more than the largest single-string error
    for row in pendulum.table.to_dict("records"):
        stored = pendulum.result(row["member"])
        model = stored.scene.model
        assert row["constraint_drift"] == length_drift(model, stored.x).max()
        i, j = model.joint_indices.T
        single = np.abs(np.linalg.norm(stored.x[:, j] - stored.x[:, i], axis=2) - model.joint_length)
        assert single.max() < row["constraint_drift"] <= single.sum(axis=1).max()
    drop = hooke.sweep("square_drop", {"parameters.stiffness": [2e4, 4e4], "run.t_end": [0.2]},
                       client=address, out=tmp_path / "drop", metric="penetration")
    assert len(drop.table) == 2 and (drop.table["penetration"] == 0.0).all()  # the barrier holds
    assert_same_as_alone(drop, lambda row: hooke.simulate(
        hooke.scene("square_drop", stiffness=row["parameters.stiffness"]), t_end=row["run.t_end"]))


def test_summary_table_columns_and_dtypes_in_parquet_and_csv(spring_sweep):
    expected = {"member": "str", "stiffness": "float64", "integrator": "str", "dt": "float64",
                "t_end": "float64", "status": "str", "error": "str", "attempts": "int64",
                "wall_time": "float64", "energy_error": "float64", "constraint_drift": "float64",
                "penetration": "float64", "steps": "int64", "rejected": "int64", "trajectory": "str"}
    parquet = pd.read_parquet(spring_sweep.parquet)
    assert list(parquet.columns) == list(expected)
    assert {k: str(v) for k, v in parquet.dtypes.items()} == expected
    csv = pd.read_csv(spring_sweep.csv, keep_default_na=False, na_values=["nan"])
    assert {k: str(v) for k, v in csv.dtypes.items()} == expected
    pd.testing.assert_frame_equal(csv, parquet, check_exact=False, rtol=1e-15)
    assert (parquet["error"] == "").all() and parquet["constraint_drift"].isna().all()
    assert parquet["penetration"].isna().all() and (parquet["attempts"] == 1).all()
    assert (parquet["steps"] == 100).all() and (parquet["rejected"] == 0).all()  # 1 s at dt 0.01
    assert list(parquet["trajectory"]) == [f"members/{m}/trajectory.h5" for m in parquet["member"]]
    assert spring_sweep.plot.stat().st_size > 0


def test_the_issues_example_sets_every_springs_stiffness(client, tmp_path):
    calls = []
    result = hooke.sweep("spring1d", ISSUE, client=client, out=tmp_path,
                         progress=lambda done, total: calls.append((done, total)))
    assert calls == [(done, 6) for done in range(7)]  # once up, then once per member
    table = result.table
    assert list(zip(table["spring.k"], table["integrator"])) == [
        (k, name) for k in ISSUE["spring.k"] for name in ISSUE["integrator"]]
    h, m = 0.005, 0.5
    for row in table.to_dict("records"):
        k, name = row["spring.k"], row["integrator"]
        if k == 1e5 and name == "symplectic_euler":  # ωh = 2.24 > 2: unstable
            assert row["status"] == "failed", row
            assert row["error"].startswith("SimulationError: the state became non-finite")
            continue
        assert row["status"] == "ok", row["error"]
        run = result.result(row["member"])
        assert run.scene.parameters["stiffness"] == k
        assert run.scene.model.spring_stiffness.tolist() == [k]
        if k == 1e5:  # rk4 inside its stability limit ωh < 2.79, but |R(iωh)| = 0.59 per step
            assert row["energy_error"] == pytest.approx(1.0, abs=1e-12)
            continue
        expected = discrete_omega(name, math.sqrt(k / m), h)
        assert measured_omega(run.t, run.x[:, 1, 0]) == pytest.approx(expected, rel=1e-4)


# Which model paths each scene takes (one scene per builder, and both particle-list files).
MODEL_PATHS_TAKEN = {
    "spring.k": ["chain", "cloth", "cloth2d", "cloth_drop", "crane", "lattice", "soft3d",
                 "spring1d", "square_drop"],
    "spring.damping": ["chain", "cloth", "cloth2d", "cloth_drop", "crane", "lattice", "soft3d"],
    "particle.mass": ["chain", "cloth", "cloth2d", "cloth_drop", "crane", "lattice", "npendulum",
                      "soft3d", "spring1d", "top"],
    "gravity": ["chain", "cloth", "cloth2d", "cloth_drop", "crane", "lattice", "npendulum",
                "pendulum", "soft3d", "square_drop", "top"]}


def test_model_paths_set_every_spring_and_particle_of_every_kind_of_scene():
    scenes = ["chain", "cloth", "cloth2d", "cloth_drop", "crane", "lattice", "npendulum",
              "pendulum", "soft3d", "spring1d", "square_drop", "top"]
    taken = {path: [] for path in MODEL_PATHS_TAKEN}
    for name in scenes:
        dim = hooke.scene(name).model.dim
        scalar_gravity = name in ("chain", "cloth2d")  # their builders take g_y
        for path, value in (("spring.k", 123.0), ("spring.damping", 0.25), ("particle.mass", 0.75),
                            ("gravity", -2.5 if scalar_gravity else [0.0] * (dim - 1) + [-2.5])):
            try:
                member = plan(name, {path: [value]})[0]
            except HookeInputError:
                continue
            model = member.scene().model
            got = {"spring.k": model.spring_stiffness, "spring.damping": model.spring_damping,
                   "particle.mass": model.mass[model.free], "gravity": model.gravity}[path]
            expected = [0.0] * (dim - 1) + [-2.5] if path == "gravity" else [value] * got.size
            assert got.size > 0 and got.tolist() == expected, (name, path)
            taken[path].append(name)
    assert taken == MODEL_PATHS_TAKEN
    # the others say why
    for name, params, message in [
        ("top", {"spring.k": [1.0]}, "spring.k: scene 'top' has no springs, got 'spring.k'"),
        ("square_drop", {"particle.mass": [1.0]},
         "particle.mass: scene 'square_drop' is made by builder 'square', which takes no mass "
         "(its parameters: side, n_seg, density, stiffness, gravity, spring_energy), got 'particle.mass'"),
        ("spring1d", {"spring.k": [1.0], "stiffness": [2.0]},
         "stiffness: sets the same parameter as spring.k, got 'stiffness'"),
        ("crane", {"spring.k": [-1.0]}, "spring.k: Input should be greater than or equal to 0, got -1.0"),
        ("crane", {"particle.mass": [0.0]}, "particle.mass: Input should be greater than 0, got 0.0"),
        ("crane", {"gravity": [[0.0, -9.81]]},
         "gravity: must have 3 component(s) for dim=3, got [0.0, -9.81]"),
    ]:
        with pytest.raises(HookeInputError) as caught:
            plan(name, params)
        assert str(caught.value) == message


def test_model_paths_on_a_particle_list_file_reach_the_stored_scene(client, tmp_path):
    """A user's file: x(t) = 1 + 0.5 cos(√(k/m) t) about the rest length 1, for each k and m."""
    path = tmp_path / "bob.toml"
    path.write_text('dim = 1\n[[particles]]\nx = [0.0]\npinned = true\n[[particles]]\nx = [1.5]\n'
                    'mass = 9.0\n[[springs]]\ni = 0\nj = 1\nstiffness = 1.0\nrest_length = 1.0\n'
                    '[run]\nintegrator = "rk4"\ndt = 0.002\nt_end = 2.0\n')
    result = hooke.sweep(path, {"spring.k": [16.0, 64.0], "particle.mass": [0.25, 1.0]},
                         client=client, out=tmp_path / "sweep")
    assert result.counts()["ok"] == 4
    for row in result.table.to_dict("records"):
        k, m = row["spring.k"], row["particle.mass"]
        stored = result.result(row["member"])  # rebuilt from the member's rewritten file
        assert stored.scene.model.spring_stiffness.tolist() == [k]
        assert stored.scene.model.mass.tolist() == [m, m]
        assert tomllib.loads(stored.scene.source)["springs"] == [
            {"i": 0, "j": 1, "stiffness": k, "rest_length": 1.0}]
        assert measured_omega(stored.t, stored.x[:, 1, 0], rest=1.0) == pytest.approx(
            math.sqrt(k / m), rel=1e-4)


def test_failing_members_are_recorded_and_the_others_finish_with_retries(client, tmp_path):
    params = {"spring.k": [5.0, 5e6, 80.0], "dt": [0.01], "t_end": [2.0]}
    blocked = plan("spring1d", params)[2]
    # its trajectory's path is taken by a directory: the store refuses it (HookeInputError)
    (tmp_path / "members" / blocked.id / "trajectory.h5").mkdir(parents=True)
    result = hooke.sweep("spring1d", params, client=client, out=tmp_path, retries=1)
    rows = result.table.set_index("spring.k")
    assert rows.loc[5.0, "status"] == "ok" and rows.loc[5.0, "attempts"] == 1
    assert rows.loc[5.0, "steps"] == 200
    unstable = rows.loc[5e6]  # ωh = 31.6: non-finite after a few steps
    assert unstable["status"] == "failed" and unstable["attempts"] == 2
    assert unstable["error"].startswith("SimulationError: the state became non-finite")
    assert 0 < unstable["steps"] < 200 and math.isnan(unstable["energy_error"])
    raised = rows.loc[80.0]  # any exception inside a member becomes its row
    assert raised["status"] == "failed" and raised["attempts"] == 2 and raised["steps"] == 0
    assert raised["error"].startswith("HookeInputError: store: is a directory, not a trajectory "
                                      "file"), raised["error"]
    assert "\n" not in raised["error"]
    assert math.isnan(raised["energy_error"]) and raised["trajectory"] == ""
    assert result.counts() == {"ok": 1, "failed": 2, "timeout": 0}


def test_a_member_whose_energy_overflows_with_a_finite_state_is_a_failure(client, tmp_path):
    """Explicit Euler on spring1d with k = 5e6 at h = 0.01: the energy passes the largest float
    at step 101 while x and v stay finite to t = 1.5 (tests/test_guard.py has the closed form).
    It was recorded "ok" with energy_error inf; it is that member's failure, the other runs."""
    params = {"spring.k": [5.0, 5e6], "integrator": ["explicit_euler"], "dt": [0.01],
              "t_end": [1.5]}
    result = hooke.sweep("spring1d", params, client=client, out=tmp_path)
    rows = result.table.set_index("spring.k")
    assert rows.loc[5.0, "status"] == "ok" and np.isfinite(rows.loc[5.0, "energy_error"])
    overflowed = rows.loc[5e6]
    assert overflowed["status"] == "failed" and overflowed["steps"] == 150
    assert overflowed["error"].startswith("SimulationError: the total energy overflowed to inf J "
                                          "at step 101 (t = 1.01)"), overflowed["error"]
    assert "\n" not in overflowed["error"] and math.isnan(overflowed["energy_error"])
    assert result.counts() == {"ok": 1, "failed": 1, "timeout": 0}


def test_a_member_whose_worker_dies_is_recorded_and_the_others_finish(client, tmp_path):
    """The member stuck in one rk45 frame (max_step 4e-8: 2.5e7 steps, under the MAX_STEPS a
    run may have, past which rk45 stops by itself) is running alone on its worker, in its own
    process (it has a time limit), once the two quick ones are done; then that worker process
    exits, and the member's process ends with it."""
    params = {"integrator": ["rk45"], "max_step": [4e-8, 0.01, 0.02], "dt": [1.0], "t_end": [1.0]}
    stuck = plan("spring1d", params)[0]
    killed, orphans = [], []

    def kill_its_worker() -> None:
        for _ in range(1200):  # up to 60 s: a loaded machine schedules it late
            for worker, keys in client.processing().items():
                if any(key.startswith(f"hooke-member-{stuck.id}-") for key in keys):
                    children = member_processes(client)[worker]
                    if not children:  # its process is starting
                        break
                    killed.append(worker)
                    orphans.extend(children)
                    try:
                        client.run(os._exit, 1, workers=[worker])
                    except Exception:  # noqa: BLE001 - the worker is gone before it answers
                        pass
                    return
            threading.Event().wait(0.05)

    def progress(done: int, total: int) -> None:
        if done == 2:
            threading.Thread(target=kill_its_worker, daemon=True).start()

    result = hooke.sweep("spring1d", params, client=client, out=tmp_path, timeout=60,
                         progress=progress)
    rows = result.table.set_index("max_step")
    assert len(killed) == 1 and orphans
    assert rows.loc[0.01, "status"] == "ok" and rows.loc[0.02, "status"] == "ok"
    died = rows.loc[4e-8]
    assert died["status"] == "failed" and died["error"].startswith("KilledWorker: "), died["error"]
    assert killed[0] in died["error"] and math.isnan(died["wall_time"])
    client.wait_for_workers(2, timeout=60)  # the nanny starts a new worker process
    for _ in range(600):  # the member's process, orphaned, sees its parent gone and ends
        if not any(alive(pid) for pid in orphans):
            break
        threading.Event().wait(0.05)
    assert not any(alive(pid) for pid in orphans)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_restart_skips_finished_members(client, tmp_path):
    params = {"stiffness": [5.0, 6.0, 7.0], "t_end": [0.5]}
    first = hooke.sweep("spring1d", params, client=client, out=tmp_path)
    stores = {m: tmp_path / "members" / m / "trajectory.h5" for m in first.table["member"]}
    stamps = {m: path.stat().st_mtime_ns for m, path in stores.items()}
    unfinished = first.table["member"][1]
    (tmp_path / "members" / unfinished / "row.json").unlink()  # as if interrupted before it ended
    second = hooke.sweep("spring1d", params, client=client, out=tmp_path)
    assert sorted(second.skipped) == sorted(set(stamps) - {unfinished})
    assert {m: path.stat().st_mtime_ns == stamps[m] for m, path in stores.items()} == {
        m: m != unfinished for m in stamps}
    pd.testing.assert_frame_equal(second.table.drop(columns="wall_time"),
                                  first.table.drop(columns="wall_time"))


def test_random_mode_draws_within_ranges_with_a_fixed_seed(client, tmp_path):
    params = {"stiffness": {"range": [1.0, 100.0], "log": True}, "x0": {"range": [1.0, 3.0]},
              "integrator": ["rk4", "symplectic_euler"]}
    members = plan("spring1d", params, random=20, seed=3)
    assert len({m.id for m in members}) == 20
    for m in members:
        assert 1.0 <= m.values["stiffness"] < 100.0 and 1.0 <= m.values["x0"] < 3.0
        assert m.values["integrator"] in ("rk4", "symplectic_euler")
        assert m.parameters["stiffness"] == m.values["stiffness"]
    assert [m.id for m in plan("spring1d", params, random=20, seed=3)] == [m.id for m in members]
    assert [m.id for m in plan("spring1d", params, random=20, seed=4)] != [m.id for m in members]
    # an integer builder parameter draws integers; a number one draws floats even from 0:20
    drawn = [m.values for m in plan("chain", {"n": {"range": [1.5, 5]}, "damping": {"range": [0, 20]}},
                                    random=30)]
    assert {v["n"] for v in drawn} == {2, 3, 4, 5} and all(isinstance(v["n"], int) for v in drawn)
    assert all(isinstance(v["damping"], float) for v in drawn)
    # a random sweep that keeps only the rows
    result = hooke.sweep("spring1d", {"stiffness": {"range": [1.0, 10.0]}, "t_end": [0.2]},
                         client=client, out=tmp_path, random=3, summary_only=True)
    assert len(result.table) == 3 and (result.table["trajectory"] == "").all()
    assert not list(tmp_path.glob("members/*/trajectory.h5"))


def test_paths_and_values_are_checked_before_anything_runs():
    assert parse_param("integrator=rk4,symplectic_euler") == ("integrator", ["rk4", "symplectic_euler"])
    assert parse_param("gravity=[0.0, -9.81],[0.0, -1.0]") == ("gravity", [[0.0, -9.81], [0.0, -1.0]])
    assert parse_param("spring.k=1e3,1e4,1e5") == ("spring.k", [1e3, 1e4, 1e5])
    assert parse_param("stiffness=log:1e3:1e5") == ("stiffness", {"range": [1e3, 1e5], "log": True})
    assert parse_param("n=2:9") == ("n", {"range": [2, 9], "log": False})
    # issue 15: a number past the largest float was shown as the inf nobody typed
    for text in ("stiffness=1e400", "stiffness=1,1e400", "stiffness=log:1:1e400"):
        with pytest.raises(HookeInputError) as error:
            parse_param(text)
        assert str(error.value) == ("--param stiffness: is past the largest float (1.798e+308), "
                                    "got '1e400'")
    assert parse_param("stiffness=inf,-inf") == ("stiffness", [np.inf, -np.inf])  # as typed
    assert parse_param("gravity=[[0.0], [1.0]]") == ("gravity", [[[0.0], [1.0]]])  # nested, closed
    for text in ("gravity=[0.0, -9.81", "gravity=0.0],[1.0]", "gravity=[[0.0]"):  # were [] or [..]
        with pytest.raises(HookeInputError) as error:
            parse_param(text)
        assert str(error.value) == ("--param gravity: has a [ without its ] or a ] without its [, "
                                    f"got '{text.partition('=')[2]}'")
    # stop 29: a range's end of nan or inf was named params.spring.k.range, not as typed
    for text in ("spring.k=nan:1", "spring.k=log:1:inf"):
        with pytest.raises(HookeInputError) as error:
            parse_param(text)
        assert str(error.value) == ("--param spring.k: a range is lo:hi or log:lo:hi with finite "
                                    f"numbers, got '{text.partition('=')[2]}'")
    members = plan("pendulum", {"parameters.length": [1.0], "run.dt": [0.02],
                                "run.options.k_c": [0.01], "options.beta_c": [0.1]})
    assert members[0].parameters["length"] == 1.0 and members[0].run == {"dt": 0.02}
    assert members[0].options == {"k_c": 0.01, "beta_c": 0.1}
    assert plan("spring1d", {"spring.k": [1e3]})[0].parameters["stiffness"] == 1e3
    bad = [({"nosuch": [1.0]}, "nosuch: unknown parameter (builder parameters of scene 'spring1d': "
            "x0, v0, stiffness, mass; model: spring.k, spring.damping, particle.mass, gravity; "
            "run settings: integrator, dt, t_end; or an integrator option), got 'nosuch'"),
           # named as the path was written, whatever the builder calls the parameter
           ({"spring.k": [-1.0]}, "spring.k: Input should be greater than 0, got -1.0"),
           ({"stiffness": [-1.0]}, "stiffness: Input should be greater than 0, got -1.0"),
           ({"parameters.stiffness": [-1.0]}, "parameters.stiffness: Input should be greater"),
           ({"integrator": ["rk5"]}, "integrator: unknown integrator"),  # every member invalid
           ({"integrator": ["rk4"], "rtol": [1e-6]}, "rtol: is not an option of integrator 'rk4'"),
           ({"dt": [0.01], "run.dt": [0.02]}, "run.dt: sets the same run as dt"),
           ({"stiffness": {"range": [1.0, 2.0]}}, "params.stiffness: a range needs random mode"),
           ({"stiffness": []}, "params.stiffness: must be a non-empty list"),
           ({"status": [1.0]}, "params.status: is also a column of the summary table"),
           ([{"k_c": [0.0]}, {"beta_c": [0.1]}], "params: every grid must name the same paths as "
            "the first (k_c), got ['beta_c']"),
           ([], "params: must list at least one grid, got []")]
    for params, message in bad:
        with pytest.raises(HookeInputError) as caught:
            plan("spring1d", params)
        assert str(caught.value).startswith(message), str(caught.value)
    with pytest.raises(HookeInputError, match=r"^n: the model would have 1e\+09 particles and "
                       r"1e\+09 springs \(1\.86 TiB\) in memory, more than this machine's .*: "
                       r"choose a smaller n, got 1000000000$"):  # its advice names it as given
        plan("chain", {"n": [1_000_000_000]})
    with pytest.raises(HookeInputError, match=r"^random: draws from one grid, not from a list of 2, got 5$"):
        plan("spring1d", [{"x0": [1.0]}, {"x0": [2.0]}], random=5)


def test_a_member_with_invalid_settings_fails_alone_and_the_others_run(client, tmp_path):
    """Not the whole sweep refused up front: the member is a failed row (0 attempts), never run."""
    members = plan("spring1d", {"integrator": ["rk4", "rk5", "rk45"], "rtol": [1e-6]})
    assert [bool(m.invalid) for m in members] == [True, True, False]
    assert members[0].invalid == ("rtol: is not an option of integrator 'rk4' (its options: "
                                  "baumgarte_alpha, baumgarte_beta, beta_c, k_c, stabilization), "
                                  "got 1e-06")
    assert members[1].invalid.startswith("integrator: unknown integrator")
    # the first value's check fails through another path's bad first value: each member decides
    assert [bool(m.invalid) for m in plan("spring1d", {"dt": [-1.0, 0.01], "t_end": [0.1, 0.2]})] == [
        True, True, False, False]
    result = hooke.sweep("spring1d", {"dt": [0.01, -1.0], "t_end": [0.1]}, client=client, out=tmp_path)
    rows = result.table.set_index("dt")
    assert rows.loc[0.01, "status"] == "ok" and result.failed == 1
    bad = rows.loc[-1.0]
    assert (bad["status"], bad["attempts"]) == ("failed", 0) and math.isnan(bad["wall_time"])
    assert bad["error"] == "HookeInputError: dt: must be a finite number > 0, got -1.0"
    for member in result.table["member"]:  # strict JSON: no bare NaN
        text = (tmp_path / "members" / member / "row.json").read_text()
        row = json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in {text}"))
        assert row["constraint_drift"] is None and row["penetration"] is None


def test_rows_keep_an_infinite_metric_as_strict_json(tmp_path):
    from hooke.sweep.storage import _read_row, write_row

    member = plan("spring1d", {"stiffness": [5.0]})[0]
    write_row(tmp_path, member, {"status": "ok", "error": "", "attempts": 1, "energy_error": math.inf,
                                 "wall_time": math.nan, "constraint_drift": math.nan,
                                 "penetration": math.nan, "steps": 10, "rejected": 0})
    text = (tmp_path / "members" / member.id / "row.json").read_text()
    assert '"energy_error": "inf"' in text and '"wall_time": null' in text
    row = _read_row(tmp_path, member)
    assert row["energy_error"] == math.inf and math.isnan(row["wall_time"])


def test_the_seed_003_study_ships_as_its_10_runs(tmp_path):
    study = read_sweep_file("pendulum_correction")
    members = plan(study.scene, study.params)
    assert study.scene == "pendulum" and study.metric == "constraint_drift"
    assert [(m.options["k_c"], m.options["beta_c"]) for m in members] == (
        [(k, 0.2) for k in (0.0, 0.01, 0.02, 0.03, 0.04)] + [(0.0, b) for b in (0.0, 0.1, 0.2, 0.3, 0.4)])
    assert (K_C_SWEEP, BETA_C_SWEEP) == ((0.0, 0.01, 0.02, 0.03, 0.04), (0.0, 0.1, 0.2, 0.3, 0.4))
    for m in members:
        assert m.run == {"integrator": "rk45"} and m.parameters == hooke.scene("pendulum").parameters
        assert {key: m.options[key] for key in ("rtol", "atol", "stabilization")} == {
            "rtol": 1e-4, "atol": 1e-4, "stabilization": "correction"}
    assert members[0] is members[7]  # k_c = 0, β_c = 0.2 is in both sweeps: one simulation
    assert len({m.id for m in members}) == 9
    # a user's sweep file: [params] shared, [[grid]] tables concatenated; a scene file beside it
    (tmp_path / "one.toml").write_text('builder = "harmonic"\n[parameters]\nx0 = 1.0\nv0 = 0.0\n'
                                       'stiffness = 4.0\nmass = 1.0\n[run]\ndt = 0.01\nt_end = 1.0\n')
    (tmp_path / "sweep.toml").write_text(
        'scene = "one.toml"\nretries = 2\n[params]\nintegrator = ["rk4"]\n'
        '[[grid]]\nmass = [1.0, 2.0]\nspring.k = [3.0]\n[[grid]]\nmass = [5.0]\nspring.k = [6.0, 7.0]\n')
    spec = read_sweep_file(tmp_path / "sweep.toml")
    assert [is_sweep_file(name) for name in (str(tmp_path / "sweep.toml"), str(tmp_path / "one.toml"),
                                             "pendulum_correction", "pendulum", "no_such.toml")] == [
        True, False, True, False, False]
    assert spec.retries == 2 and spec.scene == str(tmp_path / "one.toml")
    assert [(m.parameters["mass"], m.parameters["stiffness"]) for m in plan(spec.scene, spec.params)] == [
        (1.0, 3.0), (2.0, 3.0), (5.0, 6.0), (5.0, 7.0)]
    for text, message in [
        ('scene = "spring1d"\nretries = -1\n[params]\nstiffness = [1.0]\n',
         "retries: Input should be greater than or equal to 0, got -1"),
        ('scene = "spring1d"\n[params]\nx0 = [1.0]\n[[grid]]\nx0 = [2.0]\n',
         "grid[0].x0: is also in [params]; a path goes in [params] (every grid) or in the grids, got 'x0'"),
        ('scene = "spring1d"\n[[grid]]\nx0 = [2.0]\n[[grid]]\nv0 = [1.0]\n',
         "params: every grid must name the same paths as the first (x0), got ['v0']")]:
        (tmp_path / "bad.toml").write_text(text)
        with pytest.raises(HookeInputError) as caught:
            read_sweep_file(tmp_path / "bad.toml")
        assert str(caught.value) == message


@pytest.mark.parametrize("args, message", [
    (["spring1d", "--param", "nosuch=1"], "nosuch: unknown parameter"),
    (["spring1d", "--param", "stiffness"], "--param: expected PATH=VALUES"),
    (["spring1d", "--param", "integrator=rk5"], "integrator: unknown integrator"),
    # issue 15: named params.stiffness (the API's argument) with the range as a dict nobody typed,
    # {'range': [1, 10], 'log': True}: the flag and the text as typed, whatever the check
    (["spring1d", "--param", "stiffness=1:10"], "--param stiffness: a range needs random mode "
     "(--random N); a grid takes a list of values (stiffness=v1,v2,…), got '1:10'"),
    (["spring1d", "--param", "stiffness=log:1:10"], "--param stiffness: a range needs random mode "
     "(--random N); a grid takes a list of values (stiffness=v1,v2,…), got 'log:1:10'"),
    (["spring1d", "--param", "stiffness=10:1", "--random", "3"],
     "--param stiffness: must have lo < hi, got '10:1'"),
    (["spring1d", "--param", "stiffness=log:0:10", "--random", "3"],
     "--param stiffness: a log range needs lo > 0, got 'log:0:10'"),
    (["spring1d", "--param", "status=1,2"], "--param status: is also a column of the summary table; "
     "use the dotted form (parameters.status or options.status), got 'status=1,2'"),
    (["spring1d", "--param", "a b=1"], "--param: a path is NAME or dotted.NAME, got 'a b=1'"),
    # a [ never closed swallowed every value: "params.stiffness: must be a non-empty list …, got []"
    (["spring1d", "--param", "stiffness=[1,2"],
     "--param stiffness: has a [ without its ] or a ] without its [, got '[1,2'"),
    (["spring1d", "--param", "stiffness=1,2", "--param", "stiffness=3"],
     "--param stiffness: given more than once, got 'stiffness=3'"),
    (["--file", "SWEEP:[params]\nx0 = [1.0]", "--param", "stiffness=1:3"],
     "--param stiffness: a range needs random mode (--random N)"),
    (["--file", "SWEEP:[params]\nx0 = {range = [1.0, 2.0]}"],  # the file's own key stays named
     "params.x0: a range needs random mode (random = N, --random N); a grid takes a list of values"),
    (["spring1d"], "--param: missing for scene 'spring1d': give at least one (e.g. --param "
                   "spring.k=1e3,1e4) or a sweep file (--file), got nothing"),
    (["--file", "no_such_sweep.toml"], "--file: no such sweep file"),
    (["--file", "/dev/zero"], "--file: is a device; a sweep file must be a regular file"),
    (["spring1d", "--param", "stiffness=1", "--plot-metric", "speed"], "--plot-metric: Input should be"),
    (["spring1d", "--param", "spring.k=1,2", "--scheduler", "nosuch://host"],
     "--scheduler: cannot connect (unknown address scheme 'nosuch'"),
    # issue 15: a member failing the same way each time ran 1e9 times; `params = [1, 2]` was
    # three lines naming pydantic's union branches (params.list[dict[str,any]][0]: …)
    (["spring1d", "--param", "stiffness=1", "--retries", "1000000000"],
     "--retries: Input should be less than or equal to 10, got 1000000000"),
    # a setting given as a flag is named as the flag (it was named as the API's argument,
    # `random:`), every problem at once; the same setting from a sweep file keeps its key
    # a time limit of 1e308 s failed every member with "OverflowError: timestamp out of range"
    (["spring1d", "--param", "stiffness=1", "--timeout", "1e308"],
     "--timeout: Input should be less than or equal to 10000000, got 1e+308"),
    (["spring1d", "--param", "stiffness=1", "--random", "0"],
     "--random: Input should be greater than or equal to 1, got 0"),
    (["spring1d", "--param", "stiffness=1", "--seed", "-1", "--timeout", "0", "--save-every", "0"],
     "--seed: Input should be greater than or equal to 0, got -1\n"
     "error: --timeout: Input should be greater than 0, got 0.0\n"
     "error: --save-every: Input should be greater than or equal to 1, got 0"),
    (["--file", "SWEEP:random = 0\n[params]\nstiffness = [1.0]"],
     "random: Input should be greater than or equal to 1, got 0"),
    (["--file", "SWEEP:retries = 11\n[params]\nstiffness = [1.0]"],
     "retries: Input should be less than or equal to 10, got 11"),
    (["--file", "SWEEP:params = [1, 2]"],
     "params: must be a table of parameter paths ([params]) or a list of them, got [1, 2]"),
    # a builder parameter is named as the user wrote it, not as the builder does
    (["spring1d", "--param", "spring.k=nan"], "spring.k: Input should be a finite number, got nan"),
    (["spring1d", "--param", "spring.k=-1,0"], "spring.k: Input should be greater than 0, got -1\n"
     "error: spring.k: Input should be greater than 0, got 0"),
])
def test_cli_bad_input_exits_2_with_one_line(args, message, tmp_path, tmp_path_factory):
    for k, arg in enumerate(args):
        if arg.startswith("SWEEP:"):  # a sweep file of spring1d with these lines
            path = tmp_path_factory.mktemp("sweep") / "sweep.toml"
            path.write_text('scene = "spring1d"\n' + arg[len("SWEEP:"):] + "\n", encoding="utf-8")
            args = [*args[:k], str(path), *args[k + 1:]]
    out = tmp_path / "made" / "for"  # the folders a refused sweep made are gone again
    result = CliRunner().invoke(app, ["sweep", *args, "--out", str(out)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == message.count("\n") + 1, result.stderr
    assert "\n".join(lines).startswith(f"error: {message}"), result.stderr
    assert list(tmp_path.iterdir()) == []  # no members, no (empty) summary, no folder


def test_cli_the_issues_example_on_a_scheduler_with_retries_and_summary_only(client, tmp_path):
    result = CliRunner().invoke(app, [
        "sweep", "spring1d", "--param", "spring.k=1e3,1e4,1e5", "--param",
        "integrator=symplectic_euler,rk4", "--out", str(tmp_path),
        "--scheduler", client.scheduler.address, "--retries", "1", "--summary-only"])
    assert result.exit_code == 1, result.output  # a member failed: the table, then one line
    assert "6 member(s): 5 ok, 1 failed, 0 timeout" in result.stdout
    assert result.stderr.splitlines() == [f"error: 1 of 6 member(s) did not finish ok (1 failed); "
                                          f"their errors are in {tmp_path / 'summary.csv'}"]
    table = pd.read_parquet(tmp_path / "summary.parquet")
    assert list(zip(table["spring.k"], table["integrator"], table["status"], table["attempts"])) == [
        (1e3, "symplectic_euler", "ok", 1), (1e3, "rk4", "ok", 1), (1e4, "symplectic_euler", "ok", 1),
        (1e4, "rk4", "ok", 1), (1e5, "symplectic_euler", "failed", 2), (1e5, "rk4", "ok", 1)]
    assert (table["trajectory"] == "").all() and (table["steps"][table["status"] == "ok"] == 2000).all()
    assert not list(tmp_path.glob("members/*/trajectory.h5"))
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "energy_error.png", "members", "summary.csv", "summary.parquet"]


def test_default_cluster_is_one_single_threaded_worker_process_per_core():
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    with connect(None) as local:
        local.wait_for_workers(cores, timeout=60)
        workers = local.scheduler_info()["workers"].values()
        assert [worker["nthreads"] for worker in workers] == [1] * cores
        pids = set(local.run(os.getpid).values())
        assert len(pids) == cores and os.getpid() not in pids


def test_cli_runs_the_study_file_given_as_scene_or_file(client, tmp_path):
    result = CliRunner().invoke(app, ["sweep", "pendulum_correction", "--param", "t_end=0.2",
                                      "--scheduler", client.scheduler.address, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "10 member(s), 9 distinct: 10 ok, 0 failed, 0 timeout" in result.stdout
    table = pd.read_parquet(tmp_path / "summary.parquet")
    assert list(zip(table["k_c"], table["beta_c"])) == (
        [(k, 0.2) for k in K_C_SWEEP] + [(0.0, b) for b in BETA_C_SWEEP])
    assert table["member"][0] == table["member"][7] and table["member"].nunique() == 9
    assert (table["t_end"] == 0.2).all() and (table["constraint_drift"] > 0).all()
    assert (tmp_path / "constraint_drift.png").stat().st_size > 0


def member_processes(client) -> dict[str, list[int]]:
    """The child processes (members run with a time limit) of each worker."""
    return client.run(lambda: [child.pid for child in psutil.Process().children(recursive=True)])


def test_timeouts_stop_slow_and_stuck_members_and_leave_every_worker_free(client, tmp_path):
    """A slow member stops at a saved frame. Two members stuck inside their first rk45 frame
    (max_step 4e-8) take both workers; each has its process killed on its worker, so the quick
    member queued behind them runs, and so does any later task, on either worker: no worker was
    restarted (the cluster is the caller's) and none stays busy."""
    slow = hooke.sweep("spring1d", {"dt": [1e-5], "t_end": [100.0]}, client=client,
                       out=tmp_path / "slow", timeout=0.5, save_every=100)
    row = slow.table.iloc[0]
    assert row["status"] == "timeout" and "time limit" in row["error"] and row["steps"] > 0
    assert not read_trajectory(slow.directory / row["trajectory"])["attrs"]["complete"]
    client.wait_for_workers(2, timeout=60)
    pids = client.run(os.getpid)
    stuck = {"integrator": ["rk45"], "max_step": [4e-8], "dt": [1.0], "t_end": [1.0, 2.0]}
    quick = {**stuck, "max_step": [0.01], "t_end": [1.0]}
    # 5 s: the quick member takes ~0.3 s in a fresh process; the stuck ones are killed after 10 s
    result = hooke.sweep("spring1d", [stuck, quick], client=client, out=tmp_path / "stuck",
                         timeout=5.0)
    rows = result.table.set_index("max_step")
    for error in rows.loc[4e-8, "error"]:
        assert error.startswith("MemberTimeout: still running ") and error.endswith(
            "stuck inside one frame: its process was killed, its worker is free"), error
    assert list(rows.loc[4e-8, "status"]) == ["timeout", "timeout"]
    assert rows.loc[0.01, "status"] == "ok" and rows.loc[0.01, "steps"] > 0
    assert client.run(os.getpid) == pids  # the same worker processes: none was restarted
    assert member_processes(client) == {worker: [] for worker in pids}
    for worker, pid in pids.items():  # each worker takes a task at once
        assert client.submit(os.getpid, workers=[worker], allow_other_workers=False,
                             pure=False).result(timeout=120) == pid


def test_an_out_directory_the_sweep_cannot_write_is_refused_before_any_member_runs(tmp_path):
    """A file DIR/members was a NotADirectoryError "bug in hooke"; a directory where
    summary.csv or a member's row.json goes was an IsADirectoryError after every member ran."""
    params = {"stiffness": [1.0, 2.0], "t_end": [0.01]}
    member = plan("spring1d", params)[1].id
    layouts = {"members": ("file", "holds a file members where the sweep keeps a directory"),
               f"members/{member}": ("file", f"holds a file members/{member} where"),
               "summary.csv": ("dir", "holds a directory summary.csv where the sweep writes a file"),
               "energy_error.png": ("dir", "holds a directory energy_error.png where"),
               f"members/{member}/row.json": ("dir", f"holds a directory members/{member}/row.json")}
    for name, (kind, message) in layouts.items():
        out = tmp_path / name.replace("/", "_")
        path = out / name
        path.parent.mkdir(parents=True)
        path.mkdir() if kind == "dir" else path.write_text("")
        before = sorted(out.rglob("*"))
        with pytest.raises(HookeInputError) as caught:
            hooke.sweep("spring1d", params, out=out)
        assert str(caught.value).startswith(f"out: {message}"), str(caught.value)
        assert str(caught.value).endswith(f"remove it or choose another --out, got '{out}'")
        assert sorted(out.rglob("*")) == before  # nothing written, nothing run


def test_an_out_that_is_not_a_path_is_one_line(tmp_path):
    """Issue 15 (second red-team pass): hooke.sweep(out=5) was a raw TypeError from pathlib."""
    for out in (5, None, b"dir"):
        with pytest.raises(HookeInputError) as refused:
            hooke.sweep("spring1d", {"stiffness": [1.0]}, out=out)
        assert str(refused.value) == f"out: must be a path (a str or a pathlib.Path), got {out!r}"


def test_a_member_process_whose_worker_is_gone_ends_without_a_traceback():
    """Issue 15 (second red-team pass): killing a Dask worker mid-sweep left its member's child
    process to finish and write its row into the dead worker's pipe: a BrokenPipeError
    traceback on the cluster's log. Now it ends quietly (status 1), the row unwanted."""
    import pickle

    (member,) = plan("spring1d", {"t_end": [0.05]})
    child = subprocess.Popen([sys.executable, "-m", "hooke.sweep.member_process"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child.stdout.close()  # the worker is gone before the row is written
    _, said = child.communicate(pickle.dumps((member, None, 30.0)), timeout=120)
    assert child.returncode == 1 and b"Traceback" not in said and b"Error" not in said, said


def test_a_row_that_is_a_fifo_or_a_socket_is_refused_before_any_member_runs(tmp_path):
    """A FIFO at members/<id>/row.json blocked the sweep forever (the row of a member is read to
    see whether it is done); a socket there was an OSError "bug in hooke". Both are refused
    before any member runs, as a directory there was. A writer that unblocks a reader of the
    FIFO makes a regression fail instead of hang."""
    params = {"stiffness": [1.0, 2.0], "t_end": [0.01]}
    member = plan("spring1d", params)[0].id
    for kind, make in (("a FIFO (named pipe)", os.mkfifo),
                       ("a socket", make_socket)):
        out = tmp_path / kind.split()[1]
        row = out / "members" / member / "row.json"
        row.parent.mkdir(parents=True)
        make(row)
        done = threading.Event()

        def unblock(row=row, done=done):
            while not done.is_set():
                try:
                    os.close(os.open(row, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:  # no reader waits (or not a FIFO): nothing to unblock
                    done.wait(0.2)

        watchdog = threading.Thread(target=unblock, daemon=True)
        watchdog.start()
        try:
            with pytest.raises(HookeInputError) as caught:
                hooke.sweep("spring1d", params, out=out)
        finally:
            done.set()
            watchdog.join()
        assert str(caught.value) == (
            f"out: holds {kind} members/{member}/row.json where the sweep writes a file: remove "
            f"it or choose another --out, got '{out}'")
        assert sorted(out.rglob("*")) == [out / "members", row.parent, row]  # nothing written


def test_a_sweep_of_more_members_than_one_sweep_schedules_is_refused_before_planning():
    """A 2000 × 2000 grid fits in memory (4e6 members of 4 kB), so it was planned for a minute
    in silence and would then have been 4e6 Dask tasks; now one line at once. The bound itself
    is a sweep."""
    import time

    from hooke.sweep.planning import MAX_MEMBERS

    values = [float(k + 1) for k in range(2000)]
    started = time.perf_counter()
    with pytest.raises(HookeInputError) as refused:
        plan("spring1d", {"stiffness": values, "mass": values})
    assert time.perf_counter() - started < 5.0
    assert str(refused.value) == (
        "params: the sweep would have 4e+06 members, more than the 1e+06 one sweep plans and "
        "schedules: run it in parts, each with its own directory, got {'stiffness': 2000, "
        "'mass': 2000}")
    with pytest.raises(HookeInputError, match=r"^random: the sweep would have 1\.5e\+06 members"):
        plan("spring1d", {"stiffness": {"range": [1.0, 2.0]}}, random=MAX_MEMBERS * 3 // 2)


def test_a_sweeps_scene_is_named_as_the_scene_the_user_gave(tmp_path):
    """Issue 15 (confirmation pass, stop 28): a sweep's scene that is no scene file was named
    'path' (plan("/dev/zero", …): 'path: is a device …'; plan("", …): 'path: must not be
    empty (for the current directory give '.')'), a word neither the API nor a sweep file
    uses, and a sweep file's scene = "" was read as the sweep file's folder ('path: is a
    directory …, got 'sweeps''); it is the API's scene, the file's scene, the CLI's
    SCENE_OR_FILE."""
    for scene, message in (("/dev/zero", "scene: is a device; a scene file must be a regular "
                                         "file, got '/dev/zero'"),
                           ("", "scene: is neither a built-in scene (")):
        with pytest.raises(HookeInputError) as error:
            plan(scene, {"stiffness": [1.0]})
        assert str(error.value).startswith(message), error.value
    folder = tmp_path / "sweeps"
    folder.mkdir()
    (folder / "sweep.toml").write_text('scene = ""\n[params]\nstiffness = [1.0]\n')
    with pytest.raises(HookeInputError) as error:
        read_sweep_file(folder / "sweep.toml")
    assert str(error.value) == "scene: String should have at least 1 character, got ''"
    result = CliRunner().invoke(app, ["sweep", "/dev/zero", "--param", "stiffness=1", "--out",
                                      str(tmp_path / "out")])
    assert result.exit_code == 2 and result.stderr == (
        "error: SCENE_OR_FILE: is a device; a scene file must be a regular file, got "
        "'/dev/zero'\n"), result.stderr


def test_a_random_count_past_the_largest_float_is_refused_as_too_many():
    """Issue 15 (confirmation pass, stop 28): plan(…, random=10**400) (and `hooke sweep
    --random` of 401 digits) was a raw OverflowError, 'int too large to convert to float',
    from the count's formatting in the memory check."""
    with pytest.raises(HookeInputError) as refused:
        plan("spring1d", {"stiffness": {"range": [1.0, 2.0]}}, random=10**400)
    message = str(refused.value)
    assert message.startswith("random: the sweep would have inf members") and "\n" not in message


@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM"])
def test_a_ctrl_c_mid_sweep_is_one_line_and_the_same_command_finishes_it(tmp_path, stop):
    """Issue 15 (third red-team pass): a Ctrl-C reaches the terminal's whole process group, so
    each local worker process printed a KeyboardInterrupt traceback (and heartbeat errors)
    before hooke's one line. Now the workers ignore it, the client stops the sweep with one
    line, and the same command runs only the members left, keeping every finished row. A
    SIGTERM (a batch scheduler's time limit, to the job's processes) ended the sweep with no
    word, exit -15, and Python's warning of leaked semaphores; now it is stopped as `hooke run`
    is: one line, exit 143 (confirmation pass)."""
    import signal
    import time

    stiffness = ",".join(str(float(k)) for k in range(1, 41))
    command = [sys.executable, "-m", "hooke", "sweep", "spring1d", "--param",
               f"stiffness={stiffness}", "--summary-only", "--out", str(tmp_path)]
    sweep = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("members/*/row.json"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(sweep.pid, getattr(signal, stop))  # as a terminal's Ctrl-C: the whole group
    _, said = sweep.communicate(timeout=120)
    code, what = (130, "interrupted") if stop == "SIGINT" else (143, "stopped by SIGTERM")
    assert sweep.returncode == code
    assert said.decode() == (f"error: {what}: finished members are kept in {tmp_path}; "
                             "the same command continues the sweep\n")
    kept = {row: row.read_bytes() for row in tmp_path.glob("members/*/row.json")}
    assert 3 <= len(kept) < 40
    finished = subprocess.run(command, capture_output=True, timeout=600)
    assert finished.returncode == 0, finished.stderr
    assert {row: row.read_bytes() for row in kept} == kept
    table = pd.read_csv(tmp_path / "summary.csv")
    assert len(table) == 40 and (table["status"] == "ok").all()


@pytest.mark.parametrize("content", ["NaN", "[1, 2]", '"ok"', '{"status": "ok"}',
                                     '{"member": "x", "status": "ok", "values": {}}',
                                     b"\xff\xfe\x00garbage", "[" * 100000])
def test_a_damaged_row_left_in_dir_runs_its_member_again(client, tmp_path, content):
    """Issue 15 (third red-team pass): a row.json that was JSON but not a row (NaN, a list, a
    table missing "error" …) made the next same command "unexpected TypeError/KeyError (a bug in
    hooke)"; now the member runs again and its row is written whole. So does a row of 100,000
    nested "[" (red-team pass G: "unexpected RecursionError … (a bug in hooke)")."""
    params = {"stiffness": [5.0, 6.0], "t_end": [0.1]}
    first = hooke.sweep("spring1d", params, client=client, out=tmp_path)
    damaged = first.table["member"][0]
    row = tmp_path / "members" / damaged / "row.json"
    row.write_bytes(content if isinstance(content, bytes) else content.encode())
    second = hooke.sweep("spring1d", params, client=client, out=tmp_path)
    assert second.skipped == [first.table["member"][1]]
    assert json.loads(row.read_text())["status"] == "ok"
    pd.testing.assert_frame_equal(second.table.drop(columns="wall_time"),
                                  first.table.drop(columns="wall_time"))


def test_a_row_whose_value_was_changed_but_is_still_json_runs_its_member_again(client, tmp_path):
    """Issue 15 (red-team pass G): a row.json still whole JSON but with one value changed (a
    flipped digit of energy_error, 6.03e-05 read as 7.03e-05) was skipped on the next same
    command and its wrong value went into the summary table, silently; each row now carries a
    checksum of its content, and a row whose checksum does not hold runs its member again."""
    params = {"stiffness": [5.0, 6.0], "t_end": [0.1]}
    first = hooke.sweep("spring1d", params, client=client, out=tmp_path)
    damaged = first.table["member"][0]
    row = tmp_path / "members" / damaged / "row.json"
    record = json.loads(row.read_text())
    assert len(record["checksum"]) == 64
    record["energy_error"] *= 1.25
    row.write_text(json.dumps(record, indent=1))
    second = hooke.sweep("spring1d", params, client=client, out=tmp_path)
    assert second.skipped == [first.table["member"][1]]
    assert json.loads(row.read_text())["energy_error"] == first.table["energy_error"][0]
    pd.testing.assert_frame_equal(second.table.drop(columns="wall_time"),
                                  first.table.drop(columns="wall_time"))


def _flip_a_byte_of_frames_x(path):
    with h5py.File(path, "r") as handle:
        chunk = handle["frames/x"].id.get_chunk_info(0)
    with open(path, "r+b") as file:
        file.seek(chunk.byte_offset + chunk.size // 2)
        byte = file.read(1)
        file.seek(-1, os.SEEK_CUR)
        file.write(bytes([byte[0] ^ 0xFF]))


def _mark_incomplete(path):
    with h5py.File(path, "r+") as handle:
        handle.attrs["complete"] = False


def _cut_in_half(path):
    os.truncate(path, path.stat().st_size // 2)


def _replace_by_garbage(path):
    path.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(range(256)) * 8)


def _replace_by_the_other_members_run(path):
    other = next(folder for folder in path.parents[1].iterdir() if folder != path.parent)
    shutil.copyfile(other / "trajectory.h5", path)


@pytest.mark.parametrize("damage", [_flip_a_byte_of_frames_x, _mark_incomplete, _cut_in_half,
                                    _replace_by_garbage, _replace_by_the_other_members_run])
def test_a_damaged_trajectory_left_in_dir_runs_its_member_again(client, tmp_path, damage):
    """Issue 15 (fourth pass): a member whose row said ok was skipped whatever its trajectory
    had become since, and the table pointed at a file hooke.open refused; a whole, sound run of
    another member copied there was skipped too (red-team pass): its settings are checked."""
    params = {"stiffness": [5.0, 6.0], "t_end": [0.1]}
    first = hooke.sweep("spring1d", params, client=client, out=tmp_path)
    damaged = first.table["member"][0]
    store = tmp_path / "members" / damaged / "trajectory.h5"
    whole = read_trajectory(store)
    damage(store)
    try:  # the damage is one a reader sees: a refusal, a run that says it is not complete,
        stored = read_trajectory(store)  # or another member's
        assert not stored["attrs"]["complete"] or stored["attrs"]["parameters"] != \
            whole["attrs"]["parameters"]
    except HookeInputError:
        pass
    second = hooke.sweep("spring1d", params, client=client, out=tmp_path)
    assert second.skipped == [first.table["member"][1]]
    again = read_trajectory(store)
    assert again["attrs"]["complete"] and np.array_equal(again["x"], whole["x"])
    pd.testing.assert_frame_equal(second.table.drop(columns="wall_time"),
                                  first.table.drop(columns="wall_time"))


def test_a_local_worker_started_again_after_dying_ignores_ctrl_c_too():
    """Issue 15 (fourth pass): the nanny spawns a worker that died again with this process's
    SIGINT handler, not with the ignored SIGINT of the first start, so a terminal's Ctrl-C gave
    a KeyboardInterrupt traceback from it; the worker preload ignores SIGINT in every worker."""
    import signal
    import time

    with connect(None) as client:
        def dispositions() -> dict:
            return client.run(lambda: signal.getsignal(signal.SIGINT) == signal.SIG_IGN)

        first = dispositions()
        assert set(first.values()) == {True}
        address, victim = next(iter(client.run(os.getpid).items()))
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until the nanny's new worker has joined
            workers = client.scheduler_info()["workers"]
            if address not in workers and len(workers) == len(first):
                break
            time.sleep(0.1)
        assert victim not in client.run(os.getpid).values()
        assert set(dispositions().values()) == {True}


class _CountingClient:
    """A client whose submit notes how many of the futures it gave are not done yet."""

    def __init__(self, client):
        self.client, self.futures, self.most_at_once = client, [], 0

    def __getattr__(self, name):
        return getattr(self.client, name)

    def submit(self, *args, **kwargs):
        self.most_at_once = max(self.most_at_once, 1 + sum(not f.done() for f in self.futures))
        self.futures.append(self.client.submit(*args, **kwargs))
        return self.futures[-1]


def test_a_sweep_keeps_a_few_members_per_worker_thread_on_the_cluster(client, tmp_path):
    """Issue 15 (fourth pass): 200,000 members were submitted at once, the scheduler was busy
    88 s before the first ran, and a Ctrl-C then took minutes to cancel them (with Dask's
    tracebacks and a TimeoutError 'bug in hooke'). Now the next member is submitted as one ends."""
    from hooke.sweep.execution import MIN_WINDOW, TASKS_PER_THREAD, execute
    from hooke.sweep.settings import SweepSettings, validated

    members = plan("spring1d", {"stiffness": [float(k) for k in range(1, 61)], "t_end": [0.05]})
    counting, rows = _CountingClient(client), {}
    execute(counting, members, tmp_path, validated(SweepSettings, {
        "params": {"t_end": [0.05]}, "summary_only": True}),
        lambda member, row: rows.setdefault(member.id, row))
    window = max(MIN_WINDOW, TASKS_PER_THREAD * 2)
    assert len(counting.futures) == 60 and len(rows) == 60
    assert {row["status"] for row in rows.values()} == {"ok"}
    assert window // 2 < counting.most_at_once <= window


def test_numpy_values_are_a_grids_values_and_a_bad_progress_is_refused_up_front(tmp_path):
    """Issue 15 (fourth pass): np.linspace(…) as a path's values was "must be a non-empty list";
    progress=5 started the cluster, ran the members and failed at the first call."""
    by_array = plan("spring1d", {"stiffness": np.linspace(1.0, 2.0, 3), "x0": np.array([0.5])})
    by_list = plan("spring1d", {"stiffness": [1.0, 1.5, 2.0], "x0": [0.5]})
    assert [m.id for m in by_array] == [m.id for m in by_list]
    assert [type(m.values["stiffness"]) for m in by_array] == [float] * 3
    out = tmp_path / "sweep"
    with pytest.raises(HookeInputError, match=r"^progress: must be a callable progress\(done, "
                                              r"total\) or None, got 5$"):
        hooke.sweep("spring1d", {"stiffness": [1.0]}, out=out, progress=5)
    assert not out.exists()


@pytest.mark.parametrize("answer, reason", [
    (None, "no Dask scheduler answered within 1 s"),
    (b"HTTP/1.1 400 Bad Request\r\n\r\n" * 4, "what answers there is not a Dask scheduler: "
                                               "MemoryError"),
])
def test_a_scheduler_address_where_no_dask_scheduler_answers_is_one_line(monkeypatch, tmp_path,
                                                                         answer, reason):
    """Issue 15 (fourth pass): Dask waits for a scheduler's handshake without a limit, so a
    server that accepted the connection and said nothing hung `hooke sweep --scheduler` for
    good; one that answered anything else was read as a 3 EiB message ("unexpected MemoryError
    … a bug in hooke"). Both are one line naming --scheduler, and DIR is not made."""
    import socket

    from hooke.sweep import execution

    monkeypatch.setattr(execution, "CONNECT_SECONDS", 1)
    server = socket.create_server(("127.0.0.1", 0))
    accepted = []

    def serve():
        connection, _ = server.accept()
        accepted.append(connection)  # held open, silent or answering
        if answer is not None:
            connection.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
    out = tmp_path / "sweep"
    try:
        result = CliRunner().invoke(app, ["sweep", "spring1d", "--param", "stiffness=1,2",
                                          "--scheduler", address, "--out", str(out)])
    finally:
        server.close()
    assert result.exit_code == 2, result.output
    assert result.stderr == f"error: --scheduler: cannot connect ({reason}), got '{address}'\n"
    assert not out.exists()


def test_a_second_sweep_on_the_same_dir_is_refused_naming_the_first(tmp_path):
    """Issue 15 (fourth pass): two `hooke sweep` on one --out ran the same members twice, each
    writing the other's rows and trajectories over; the second is now refused in one line
    naming the first's PID, and leaves DIR as it was."""
    from hooke.io.lock import OutputLock

    tmp_path.mkdir(exist_ok=True)
    first = OutputLock(tmp_path / "summary.parquet", "out")  # as a running sweep holds it
    try:
        before = sorted(tmp_path.iterdir())
        result = CliRunner().invoke(app, ["sweep", "spring1d", "--param", "stiffness=1,2",
                                          "--out", str(tmp_path)])
        assert result.exit_code == 2, result.output
        assert result.stderr == (
            f"error: --out: is being written by another run (PID {os.getpid()}, lock "
            "summary.parquet.lock); wait until it ends or write elsewhere, got "
            f"'{tmp_path / 'summary.parquet'}'\n")
        assert sorted(tmp_path.iterdir()) == before
    finally:
        first.release()


def test_dasks_report_of_its_cancel_race_is_dropped_and_only_it(client, caplog):
    """Issue 15: a Ctrl-C landing as Dask's ``sync`` starts a call runs its cancel callback
    before the future it cancels exists; Tornado logged that NameError's traceback above the
    sweep's one line (the Ctrl-C test, now and then). That report alone is dropped."""
    import functools

    def sync():  # a callback named as Dask's is: sync.<locals>.cancel
        def cancel():
            pass
        return cancel

    tornado = logging.getLogger("tornado.application")
    with caplog.at_level(logging.ERROR, logger="tornado.application"), connect(client):
        tornado.error("Exception in callback %r", functools.partial(sync()))
        tornado.error("Exception in callback %r", functools.partial(print))
    tornado.error("Exception in callback %r", functools.partial(sync()))  # the sweep is over
    assert [record.getMessage().split(" at 0x")[0] for record in caplog.records] == [
        "Exception in callback functools.partial(<built-in function print>)",
        "Exception in callback functools.partial(<function test_dasks_report_of_its_cancel_race"
        "_is_dropped_and_only_it.<locals>.sync.<locals>.cancel"]


def test_the_local_clusters_workers_print_no_dask_errors_of_their_own(capfd):
    """Issue 15 (CI, stop 27): a Ctrl-C's shutdown raced a worker's heartbeat to the scheduler,
    and the worker printed Dask's "Failed to communicate with scheduler during heartbeat" with a
    traceback before the sweep's one line. What a sweep's workers hit reaches the user as the
    member's row (a failing member, a worker that died: KilledWorker), so the local cluster's
    workers print Dask's own errors no more; a critical one still shows."""
    from hooke.sweep.execution import connect

    def report(level):
        logging.getLogger("distributed.worker").log(level, "a worker's own %s",
                                                     logging.getLevelName(level))

    with connect(None) as local:
        local.run(report, logging.ERROR)
        local.run(report, logging.CRITICAL)
    printed = capfd.readouterr().err
    assert "a worker's own ERROR" not in printed
    assert "a worker's own CRITICAL" in printed


def test_the_api_names_a_client_it_cannot_connect_to_as_its_argument(tmp_path):
    """Issue 15 (red-team pass, stop 28): hooke.sweep(client="nosuch://host") was refused as
    "scheduler: …", the command line's word; the API's argument is ``client`` (the CLI still
    says --scheduler)."""
    with pytest.raises(HookeInputError) as refused:
        hooke.sweep("spring1d", {"stiffness": [1.0]}, client="nosuch://host", out=tmp_path)
    assert str(refused.value).startswith("client: cannot connect (unknown address scheme")



@pytest.mark.parametrize("client", ["nosuch://host", 42])
def test_a_sweep_refused_after_its_dir_was_checked_leaves_no_dir_behind(tmp_path, client):
    """Issue 15 (red-team pass): a client that is no client or cannot be reached is refused
    once DIR has been made to prove it writable; the empty DIR (and its parents made for it)
    stayed. The command line removed them; the API now does too."""
    out = tmp_path / "made" / "sweep"
    with pytest.raises(HookeInputError, match="^client: "):
        hooke.sweep("spring1d", {"stiffness": [1.0]}, client=client, out=out)
    assert list(tmp_path.iterdir()) == []

TERM_WHILE_WORKERS_START = """
import os, signal, sys
from distributed import nanny

original = nanny.Nanny.start_unsafe

async def start_unsafe(self):  # a SIGTERM lands while the local cluster's workers start
    os.kill(os.getpid(), signal.SIGTERM)
    return await original(self)

nanny.Nanny.start_unsafe = start_unsafe
from hooke import cli
sys.argv = ["hooke", "sweep", "spring1d", "--param", "stiffness=1.0,2.0", "--summary-only",
            "--out", sys.argv[1]]
cli.main()
"""


def test_a_sigterm_while_the_workers_start_is_the_sweeps_one_line(tmp_path):
    """Issue 15 (confirmation pass, stop 28): a SIGTERM while the local cluster's workers started
    stopped the sweep with its one line and exit 143, then Dask's atexit close of the half-made
    cluster printed "AssertionError: Status.init" and "Task exception was never retrieved …
    Nanny failed to start" tracebacks. The SIGTERM is held until the workers are up, as a
    Ctrl-C is ignored then, and stops the sweep from there."""
    done = subprocess.run([sys.executable, "-c", TERM_WHILE_WORKERS_START, str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stderr) == (143, (
        f"error: stopped by SIGTERM: finished members are kept in {tmp_path}; the same command "
        "continues the sweep\n"))


def test_a_scene_name_too_long_for_a_file_name_is_one_line(tmp_path):
    """Issue 15 (stop 28): the sweep API looked for a scene name with Path.exists, which raises
    OSError ('File name too long') for a name longer than the file system takes, where the
    command line (os.path.exists) named SCENE_OR_FILE; both now resolve a scene in one place
    (io.scene_file.named_scene)."""
    with pytest.raises(HookeInputError) as refused:
        hooke.sweep("x" * 300, {"stiffness": [1.0]}, out=tmp_path)
    assert str(refused.value).startswith("scene: is neither a built-in scene (")


def test_a_stop_python_swallowed_still_stops_the_sweep(client, tmp_path):
    """Issue 15 (CI, stop 28): a Ctrl-C mid-sweep ran it to its end, exit 0, once in a while:
    its KeyboardInterrupt was raised where Python drops it (a released future's ``__del__``)
    and only recorded (:mod:`hooke.pending_stop`). The sweep now raises a recorded stop after
    each member, as a run does after each block; the finished rows stay."""
    from hooke import pending_stop

    def swallowed_ctrl_c(done, total):
        if done == 1:
            pending_stop.record(KeyboardInterrupt)  # as the handler does before its raise is lost

    with pytest.raises(KeyboardInterrupt):
        hooke.sweep("spring1d", {"stiffness": [float(k) for k in range(1, 41)], "t_end": [0.1]},
                    client=client, out=tmp_path, summary_only=True, progress=swallowed_ctrl_c)
    rows = list(tmp_path.glob("members/*/row.json"))
    assert 1 <= len(rows) < 40
    pending_stop.raise_if_pending()  # nothing left recorded
