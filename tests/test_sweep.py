"""Parameter sweeps on Dask (hooke.sweep, `hooke sweep`): one LocalCluster with 2 single-threaded
worker processes is shared by the module; the test that restarts a worker runs last."""

from __future__ import annotations

import dataclasses
import logging
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import hooke
from hooke.cli import app
from hooke.errors import HookeInputError
from hooke.io.store import read_trajectory
from hooke.sweep import COLUMNS, METRICS, metrics, parse_param, plan, read_sweep_file, run_member

SPRING = {"stiffness": [5.0, 80.0], "integrator": ["symplectic_euler", "rk4"], "dt": [0.01],
          "t_end": [1.0]}


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
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
    assert (pendulum.table["constraint_drift"] > 0).all()
    assert_same_as_alone(pendulum, lambda row: hooke.simulate(
        hooke.scene("pendulum"), t_end=row["t_end"], k_c=row["k_c"]))
    drop = hooke.sweep("square_drop", {"parameters.stiffness": [2e4, 4e4], "run.t_end": [0.2]},
                       client=address, out=tmp_path / "drop", metric="penetration")
    assert (drop.table["penetration"] == 0.0).all()  # the barrier keeps every node above ground
    assert_same_as_alone(drop, lambda row: hooke.simulate(
        hooke.scene("square_drop", stiffness=row["parameters.stiffness"]), t_end=row["run.t_end"]))


def test_summary_table_columns_and_dtypes_in_parquet_and_csv(spring_sweep):
    expected = {"member": "str", "stiffness": "float64", "integrator": "str", "dt": "float64",
                "t_end": "float64", **{k: v for k, v in COLUMNS.items() if k != "member"}}
    parquet = pd.read_parquet(spring_sweep.parquet)
    assert list(parquet.columns) == list(expected)
    assert {k: str(v) for k, v in parquet.dtypes.items()} == expected
    assert set(METRICS) <= set(parquet.columns)
    csv = pd.read_csv(spring_sweep.csv, keep_default_na=False, na_values=["nan"])
    assert {k: str(v) for k, v in csv.dtypes.items()} == expected
    pd.testing.assert_frame_equal(csv, parquet, check_exact=False, rtol=1e-15)
    assert (parquet["error"] == "").all() and parquet["constraint_drift"].isna().all()
    assert spring_sweep.plot.stat().st_size > 0


def test_failing_member_is_recorded_and_the_others_finish_with_retries(client, tmp_path):
    result = hooke.sweep("spring1d", {"stiffness": [5.0, 5e6], "dt": [0.01], "t_end": [2.0]},
                         client=client, out=tmp_path, retries=1)
    rows = result.table.set_index("stiffness")
    assert rows.loc[5.0, "status"] == "ok" and rows.loc[5.0, "attempts"] == 1
    failed = rows.loc[5e6]
    assert failed["status"] == "failed" and failed["attempts"] == 2
    assert failed["error"].startswith("SimulationError: the state became non-finite")
    assert 0 < failed["steps"] < 200 and math.isnan(failed["energy_error"])
    assert result.counts() == {"ok": 1, "failed": 1, "timeout": 0}
    # any exception inside a member becomes its row
    member = plan("spring1d", {"stiffness": [5.0]})[0]
    broken = dataclasses.replace(member, parameters={**member.parameters, "mass": "heavy"})
    row = client.submit(run_member, broken, None, None, "test-topic").result()
    assert row["status"] == "failed" and "parameters.mass" in row["error"] and "\n" not in row["error"]


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
    assert parse_param("stiffness=log:1e3:1e5") == ("stiffness", {"range": [1e3, 1e5], "log": True})
    assert parse_param("n=2:9") == ("n", {"range": [2, 9], "log": False})
    members = plan("pendulum", {"parameters.length": [1.0], "run.dt": [0.02],
                                "run.options.k_c": [0.01], "options.beta_c": [0.1]})
    assert members[0].parameters["length"] == 1.0 and members[0].run == {"dt": 0.02}
    assert members[0].options == {"k_c": 0.01, "beta_c": 0.1}
    bad = [({"spring.k": [1.0]}, "spring.k: unknown parameter"),
           ({"stiffness": [-1.0]}, "parameters.stiffness: Input should be greater than 0"),
           ({"integrator": ["rk4", "rk5"]}, "integrator: unknown integrator"),
           ({"integrator": ["rk4", "rk45"], "rtol": [1e-6]}, "rtol: is not an option of integrator 'rk4'"),
           ({"dt": [0.01], "run.dt": [0.02]}, "run.dt: sets the same run as dt"),
           ({"stiffness": {"range": [1.0, 2.0]}}, "params.stiffness: a range needs random mode"),
           ({"stiffness": []}, "params.stiffness: must be a non-empty list"),
           ({"status": [1.0]}, "params.status: is also a column of the summary table")]
    for params, message in bad:
        with pytest.raises(HookeInputError) as caught:
            plan("spring1d", params)
        assert str(caught.value).startswith(message), str(caught.value)


def test_sweep_files_validate_and_the_seed_003_study_ships(tmp_path):
    study = read_sweep_file("pendulum_correction")
    members = plan(study.scene, study.params)
    assert study.metric == "constraint_drift" and len(members) == 25
    assert {(m.options["k_c"], m.options["beta_c"]) for m in members} == {
        (k, b) for k in (0.0, 0.01, 0.02, 0.03, 0.04) for b in (0.0, 0.1, 0.2, 0.3, 0.4)}
    (tmp_path / "one.toml").write_text('builder = "harmonic"\n[parameters]\nx0 = 1.0\nv0 = 0.0\n'
                                       'stiffness = 4.0\nmass = 1.0\n[run]\ndt = 0.01\nt_end = 1.0\n')
    (tmp_path / "sweep.toml").write_text('scene = "one.toml"\nretries = 2\n[params]\nmass = [1.0, 2.0]\n')
    spec = read_sweep_file(tmp_path / "sweep.toml")
    assert spec.retries == 2 and len(plan(spec.scene, spec.params)) == 2
    (tmp_path / "bad.toml").write_text('scene = "spring1d"\nretries = -1\n[params]\nstiffness = [1.0]\n')
    with pytest.raises(HookeInputError, match=r"^retries: Input should be greater than or equal to 0, got -1$"):
        read_sweep_file(tmp_path / "bad.toml")


@pytest.mark.parametrize("args, message", [
    (["spring1d", "--param", "nosuch=1"], "nosuch: unknown parameter"),
    (["spring1d", "--param", "stiffness"], "--param: expected PATH=VALUES"),
    (["spring1d", "--param", "integrator=rk5"], "integrator: unknown integrator"),
    (["spring1d", "--param", "stiffness=1:10"], "params.stiffness: a range needs random mode"),
    (["spring1d", "--param", "stiffness=1,2", "--param", "stiffness=3"], "--param: stiffness given more than once"),
    (["spring1d"], "params: must name at least one parameter path"),
    (["--file", "no_such_sweep.toml"], "--file: no such sweep file"),
    (["spring1d", "--param", "stiffness=1", "--plot-metric", "speed"], "metric: Input should be"),
])
def test_cli_bad_input_exits_2_with_one_line(args, message, tmp_path):
    result = CliRunner().invoke(app, ["sweep", *args, "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {message}"), result.stderr
    assert not (tmp_path / "members").exists()


def test_cli_runs_the_study_file_on_a_local_cluster(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "hooke.cli", "sweep", "--file", "pendulum_correction", "--param",
         "t_end=0.2", "--param", "k_c=0.0,0.04", "--param", "beta_c=0.0,0.4", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "4 member(s): 4 ok, 0 failed, 0 timeout" in done.stdout
    table = pd.read_parquet(tmp_path / "summary.parquet")
    assert sorted(zip(table["k_c"], table["beta_c"])) == [(0.0, 0.0), (0.0, 0.4), (0.04, 0.0), (0.04, 0.4)]
    assert (tmp_path / "constraint_drift.png").stat().st_size > 0


def test_timeouts_stop_slow_and_stuck_members(client, tmp_path):
    """Runs last: the stuck member's worker is restarted."""
    slow = hooke.sweep("spring1d", {"dt": [1e-5], "t_end": [100.0]}, client=client,
                       out=tmp_path / "slow", timeout=0.5, save_every=100)
    row = slow.table.iloc[0]
    assert row["status"] == "timeout" and "time limit" in row["error"] and row["steps"] > 0
    assert not read_trajectory(slow.directory / row["trajectory"])["attrs"]["complete"]
    stuck = hooke.sweep("spring1d", {"integrator": ["rk45"], "max_step": [1e-9], "dt": [1.0],
                                     "t_end": [1.0]}, client=client, out=tmp_path / "stuck", timeout=0.5)
    row = stuck.table.iloc[0]
    assert row["status"] == "timeout" and "was restarted" in row["error"], row["error"]
    assert client.submit(lambda: 1).result() == 1  # the cluster works on
