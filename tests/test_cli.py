"""The `hooke` command and the README's API example, run as a user would."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hooke.io.store import read_trajectory

from conftest import make_socket, run_cli as hooke

ROOT = Path(__file__).resolve().parents[1]


def test_list_names_every_scene_and_integrator():
    import hooke as api

    done = hooke("list")
    assert done.returncode == 0, done.stderr
    for name in api.scenes() + api.integrators():
        assert name in done.stdout


def test_run_writes_trajectory_plots_and_summary(tmp_path):
    done = hooke("run", "spring1d", "--integrator", "rk4", "--dt", "0.01", "--t-end", "2",
                 "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    for name in ("trajectory.h5", "trajectory.xdmf", "energy.png", "snapshot.png", "analytic.png",
                 "summary.json"):
        assert (tmp_path / name).stat().st_size > 0
    data = read_trajectory(tmp_path / "trajectory.h5")
    assert data["x"].shape == (201, 2, 1) and data["attrs"]["complete"]
    # RK4 at h = 0.01 on ω = √10: the saved trajectory matches x0 cos(ωt) closely.
    exact = 2.0 * np.cos(np.sqrt(10.0) * data["t"])
    assert np.max(np.abs(data["x"][:, 1, 0] - exact)) < 1e-6
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["integrator"] == "rk4" and summary["frames"] == 201
    assert summary["max_error_vs_analytic"] < 1e-6
    assert "max |x − analytic|" in done.stdout


@pytest.mark.parametrize("args, field", [
    (["run", "no_such_scene"], "SCENE_OR_FILE"),
    (["run", "spring1d", "--integrator", "warp_drive"], "integrator"),
    (["run", "spring1d", "--dt", "0"], "dt"),
    (["run", "spring1d", "--dt", "-1e-3"], "dt"),
    (["run", "spring1d", "--t-end", "nan"], "--t-end"),
    # issue 15: 1e11 steps ran for hours printing nothing
    (["run", "spring1d", "--t-end", "5e8"], "--t-end: t_end / dt = 1e+11 steps of dt = 0.005, more "
     "than the 1e+08 hooke runs"),
    (["run", "--resume", "anywhere", "--max-energy-growth", "2"], "--resume: continues the stored"),
    # issue 15: the study named t_end and dt, which it has not; its flags now
    (["study", "pendulum-correction", "--t-end", "1", "--output-interval", "0.3"],
     "error: --t-end: must be a whole number of steps of --output-interval = 0.3 (--t-end / "
     "--output-interval = 3.333333333); nearest valid: --t-end = 0.9 or 1.2, or "
     "--output-interval = 0.333333333333 (3 steps) or 0.25 (4 steps), got 1.0"),
    (["study", "pendulum-correction", "--output-interval", "1e-300"],
     "error: --t-end: --t-end / --output-interval = 1e+302 steps of --output-interval = 1e-300, "
     "more than the 1e+08 hooke runs: choose a shorter --t-end or a larger --output-interval, "
     "got 100.0"),
    (["study", "pendulum-correction", "--data", "."], "--data: is a directory"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, args, field):
    done = hooke(*args, "--out", str(tmp_path))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and field in lines[0], done.stderr


def test_resume_refuses_a_falsy_setting_and_names_only_those_given(tmp_path):
    """``--resume DIR --dt 0`` ignored ``--dt`` (0 is false) and exited 0 (the confirmation pass
    of issue 15); the refusal named every flag whatever was given. Now each given one, exit 2,
    the stored run untouched."""
    assert hooke("run", "spring1d", "--t-end", "0.1", "--quiet", "--out", str(tmp_path)).returncode == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    lead = ("error: --resume: continues the stored run with its own settings (--save-every and "
            "--max-energy-growth included); give no scene or settings with it, got ")
    for args, given in [(["--dt", "0"], "--dt"), (["--t-end", "0", "-O", "a=1"], "--t-end/--option"),
                        (["--save-every", "0"], "--save-every"), (["spring1d"], "SCENE_OR_FILE")]:
        done = hooke("run", *args, "--resume", str(tmp_path))
        assert (done.returncode, done.stderr) == (2, f"{lead}{given}\n")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_invalid_scene_file_reports_every_problem(tmp_path):
    scene = tmp_path / "bad.toml"
    scene.write_text("""
dim = 2
[run]
dt = -0.1
[[particles]]
x = [0.0, 0.0]
mass = -1.0
[[particles]]
x = [1.0, nan]
[[springs]]
i = 0
j = 1
stiffness = -5.0
""")
    done = hooke("run", str(scene), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    text = done.stderr
    for field in ("run.dt", "particles[0].mass", "particles[1].x[1]", "springs[0].stiffness"):
        assert field in text, text
    assert "-5.0" in text and "-1.0" in text


def test_blow_up_keeps_computed_frames_and_exits_1(tmp_path):
    done = hooke("run", "oscillator", "--integrator", "explicit_euler", "--dt", "0.5",
                 "--t-end", "2000", "--out", str(tmp_path))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "non-finite" in done.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["complete"] is False and summary["frames"] > 1
    stored = read_trajectory(tmp_path / "trajectory.h5")
    assert not stored["attrs"]["complete"] and np.all(np.isfinite(stored["x"]))
    assert stored["total_frames"] == summary["frames"]


def readme_scene_file() -> str:
    """The scene file of the README's "Scene files" section."""
    text = (ROOT / "README.md").read_text()
    return re.search(r"## Scene files\n.*?```toml\n(.*?)```", text, re.S).group(1)


def test_energy_change_is_reported_against_the_initial_energy(tmp_path):
    """The README's scene file: a pendulum on a spring from E0 = 0.25 J whose kinetic energy
    reaches 4.9 J. Its total energy keeps its sign, so the change is relative to E0: −1.5 %
    (the old report divided by the largest kinetic energy and printed −0.077 %)."""
    (tmp_path / "example.toml").write_text(readme_scene_file())
    done = hooke("run", str(tmp_path / "example.toml"), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    initial, final = summary["energy_initial_J"], summary["energy_final_J"]
    assert initial == pytest.approx(0.25, rel=1e-12) and final == pytest.approx(0.24622, abs=1e-5)
    assert summary["energy_change_J"] == final - initial
    assert summary["energy_relative_to"] == "initial energy" and summary["energy_scale_J"] == initial
    assert summary["energy_change_relative"] == pytest.approx((final - initial) / 0.25, rel=1e-12)
    assert summary["energy_change_relative"] == pytest.approx(-0.0151, abs=1e-4)
    assert (f"ΔE = {final - initial:+.4g} J = -1.514 % of the initial energy (0.25 J)"
            in " ".join(done.stdout.split())), done.stdout


def test_energy_change_through_zero_is_reported_against_the_largest_kinetic_energy(tmp_path):
    """square_drop starts at E0 = 0 (its centre at the zero of gravity's potential) and falls
    below it: a percentage of E0 means nothing, and the change (implicit Euler's dissipation and
    the fall) is relative to the largest kinetic energy, named (the old report: "−106 %" alone)."""
    import hooke as api

    done = hooke("run", "square_drop", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    result = api.open(tmp_path / "trajectory.h5")
    largest_kinetic = float(result.energy["kinetic"].max())
    assert abs(summary["energy_initial_J"]) < 1e-20 and summary["energy_final_J"] < -4000
    assert summary["energy_relative_to"] == "largest kinetic energy"
    assert summary["energy_scale_J"] == largest_kinetic
    assert summary["energy_change_relative"] == pytest.approx(
        summary["energy_change_J"] / largest_kinetic, rel=1e-12)
    assert summary["energy_change_relative"] == pytest.approx(-1.063, abs=1e-3)
    assert (f"= -106.3 % of the largest kinetic energy ({largest_kinetic:.4g} J)"
            in " ".join(done.stdout.split())), done.stdout


def test_energy_change_names_its_scale():
    """|E0| while the energy keeps its sign (negative E0 too), else the largest kinetic energy;
    no scale when nothing moved, no change when an energy overflowed."""
    from hooke.result import EnergyChange

    def change(total, kinetic):
        return EnergyChange.of(np.array(total), np.array(kinetic))

    kept = change([2.0, 1.5], [0.0, 1.0])
    assert (kept.scale, kept.relative_to, kept.change, kept.relative) == (
        2.0, "initial energy", -0.5, -0.25)
    assert change([-4.0, -5.0], [0.0, 3.0]).relative == -0.25
    crossed = change([1.0, -0.5, -1.0], [0.0, 4.0, 1.0])
    assert (crossed.scale, crossed.relative_to, crossed.relative) == (
        4.0, "largest kinetic energy", -0.5)
    still = change([0.0, 0.0], [0.0, 0.0])
    assert (still.change, still.scale, still.relative_to, still.relative) == (0.0, None, None, None)
    blown = change([1.0, np.inf], [0.0, np.inf])
    assert (blown.initial, blown.final, blown.change, blown.relative) == (1.0, None, None, None)
    # issue 15: a subnormal E0 (gravity = [5e-324, -9.81]) gave a relative change of -inf, and
    # `hooke run` "unexpected ValueError: Out of range float values are not JSON compliant: -inf
    # (a bug in hooke)"; the largest kinetic energy is the scale then, and a change that
    # overflows (between finite energies of either sign) has none
    tiny = change([-5e-324, -0.05], [0.0, 0.5])
    assert (tiny.scale, tiny.relative_to, tiny.relative) == (0.5, "largest kinetic energy", -0.1)
    wide = change([-1e308, 1e308], [0.0, 1.0])
    assert (wide.change, wide.scale, wide.relative) == (None, None, None)


def test_a_subnormal_initial_energy_is_no_bug_in_run(tmp_path):
    """Issue 15: `hooke run` of a pendulum with gravity = [5e-324, -9.81] (E0 = -5e-324 J) was
    "unexpected ValueError: Out of range float values are not JSON compliant: -inf (a bug in
    hooke)" and wrote no summary; the change is now relative to the largest kinetic energy."""
    scene = tmp_path / "g.toml"
    scene.write_text('dim = 2\ngravity = [5e-324, -9.81]\n[[particles]]\nx = [0.0, 0.0]\n'
                     'pinned = true\n[[particles]]\nx = [1.0, 0.0]\n[[springs]]\ni = 0\nj = 1\n'
                     'stiffness = 100.0\n[run]\ndt = 0.01\nt_end = 0.1\n')
    done = hooke("run", str(scene), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["energy_initial_J"] == -5e-324
    assert summary["energy_relative_to"] == "largest kinetic energy"
    assert np.isfinite(summary["energy_change_relative"])


def test_readme_api_example_runs():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## The API in ten lines\n\n```python\n(.*?)```", text, re.S).group(1)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    result, spring, r = namespace["result"], namespace["spring"], namespace["r"]
    assert result.x.shape == (2001, 2, 3)
    assert np.max(np.abs(r.x - spring.analytic(r.t))) < 1e-6


def test_a_new_run_leaves_no_plot_of_the_earlier_run_in_its_folder(tmp_path):
    """Issue 15 (second red-team pass): `hooke run cloth2d --out D` over spring1d's D left
    spring1d's analytic.png (and a `hooke plot` phase.png) beside cloth2d's trajectory, where
    they read as this run's. Now a run's folder holds only the plots of that run."""
    assert hooke("run", "spring1d", "--t-end", "0.5", "--out", str(tmp_path)).returncode == 0
    assert hooke("plot", str(tmp_path), "--kind", "phase").returncode == 0
    assert (tmp_path / "analytic.png").is_file() and (tmp_path / "phase.png").is_file()
    done = hooke("run", "cloth2d", "--t-end", "0.05", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "energy.png", "snapshot.png", "summary.json", "trajectory.h5", "trajectory.xdmf"]
    assert read_trajectory(tmp_path / "trajectory.h5")["attrs"]["scene_name"] == "cloth2d"


def test_plot_command_writes_every_applicable_kind(tmp_path):
    assert hooke("run", "pendulum", "--t-end", "1", "--out", str(tmp_path)).returncode == 0
    done = hooke("plot", str(tmp_path), "--out", str(tmp_path / "plots"))
    assert done.returncode == 0, done.stderr
    for kind in ("energy", "phase", "snapshot", "drift"):
        assert (tmp_path / "plots" / f"{kind}.png").stat().st_size > 10_000
    done = hooke("plot", str(tmp_path), "--kind", "penetration")
    assert done.returncode == 2 and "penetration" in done.stderr and "Traceback" not in done.stderr


def test_modes_command_prints_crane_frequencies(tmp_path):
    import hooke as api

    done = hooke("modes", "crane", "-k", "3", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    expected = api.modes(api.scene("crane"), k=3).frequencies
    printed = [float(line.split()[1]) for line in done.stdout.splitlines()
               if line.strip()[:1].isdigit()]
    np.testing.assert_allclose(printed, expected, rtol=1e-5)
    assert (tmp_path / "modes.png").stat().st_size > 10_000


def test_study_command_runs_a_short_pendulum_study(tmp_path):
    """Over the first 3 s (measured max ΔL: β_c = 0 … 0.4 at k_c = 0: 1.7e-2, 1.6e-3, 6.2e-4,
    2.9e-4, 1.9e-4; k_c = 0 … 0.04 at β_c = 0.2: 6.2e-4 … 5.3e-4) the drift falls as either
    gain grows. With 1 and 2 Numba threads the study writes the same CSV, and --data the same
    rows with its provenance."""
    runs = {}
    for threads in ("1", "2"):
        out = tmp_path / threads
        done = hooke("study", "pendulum-correction", "--t-end", "3", "--output-interval", "0.1",
                     "--out", str(out), "--data", str(out / "study.json"),
                     env={"NUMBA_NUM_THREADS": threads})
        assert done.returncode == 0, done.stderr
        runs[threads] = json.loads((out / "study.json").read_text())
        assert runs[threads]["command"] == (f"NUMBA_NUM_THREADS={threads} hooke study "
                                            f"pendulum-correction --t-end 3 --output-interval 0.1 "
                                            f"--out {out} --data {out / 'study.json'}")
        assert runs[threads]["measured"]["numba_threads"] == int(threads)
    assert runs["1"]["rows"] == runs["2"]["rows"] and len(runs["1"]["rows"]) == 13
    assert ((tmp_path / "1" / "pendulum_correction.csv").read_bytes()
            == (tmp_path / "2" / "pendulum_correction.csv").read_bytes())
    assert (out / "pendulum_correction.png").stat().st_size > 10_000
    import csv

    rows = list(csv.reader((out / "pendulum_correction.csv").open()))
    # a column per curve: 5 β_c + 5 k_c + Baumgarte, projection, generalized-α; a row per 0.1 s
    assert len(rows[0]) == 1 + 13 and len(rows) == 1 + 31
    assert rows[0][1:6] == [f"k_c=0, β_c={b:g}" for b in (0, 0.1, 0.2, 0.3, 0.4)]
    assert rows[0][6:11] == [f"k_c={k:g}, β_c=0.2" for k in (0, 0.01, 0.02, 0.03, 0.04)]
    drift = np.array(rows[1:], dtype=float)
    assert np.all(drift[:, 1:] >= 0) and drift[-1, 12] < 1e-9  # projection holds the lengths
    beta_sweep, k_sweep = drift[:, 1:6].max(axis=0), drift[:, 6:11].max(axis=0)
    assert np.all(np.diff(beta_sweep) < 0) and np.all(np.diff(k_sweep) < 0), (beta_sweep, k_sweep)
    assert beta_sweep[0] > 50 * beta_sweep[-1]
    assert hooke("study", "no-such-study").returncode == 2


def test_parse_option_values():
    from hooke.cli_common import parse_option

    assert parse_option("rtol=1e-8") == ("rtol", 1e-8)
    assert parse_option("max_iterations=25") == ("max_iterations", 25)
    assert isinstance(parse_option("max_iterations=25")[1], int)
    assert parse_option("adaptive=false") == ("adaptive", False)
    assert parse_option("adaptive=True") == ("adaptive", True)
    assert parse_option("stabilization=none") == ("stabilization", None)
    assert parse_option("first_step=null") == ("first_step", None)
    assert parse_option("max_step=inf") == ("max_step", float("inf"))
    assert parse_option(" stabilization = correction ") == ("stabilization", "correction")


def test_run_option_reaches_the_integrator(tmp_path):
    import hooke as api

    done = hooke("run", "pendulum", "--t-end", "0.5", "-O", "rtol=1e-8", "--option",
                 "stabilization=none", "-O", "atol=1e-8", "-o", str(tmp_path))
    assert done.returncode == 0, done.stderr
    stored = read_trajectory(tmp_path / "trajectory.h5")
    options = json.loads(stored["attrs"]["options"])  # the effective options: with defaults
    assert {key: options[key] for key in ("rtol", "atol", "stabilization", "k_c", "beta_c")} == {
        "rtol": 1e-8, "atol": 1e-8, "stabilization": None, "k_c": 0.03, "beta_c": 0.2}
    expected = api.simulate(api.scene("pendulum"), t_end=0.5, rtol=1e-8, atol=1e-8,
                            stabilization=None)
    assert stored["x"].tobytes() == expected.x.tobytes()


@pytest.mark.parametrize("option, message", [
    ("tol=1e-3", "error: tol: is not an option of integrator 'rk45' (its options: adaptive, atol, "
                 "baumgarte_alpha, baumgarte_beta, beta_c, first_step, k_c, max_step, rtol, "
                 "stabilization), got 0.001"),
    ("rtol=-1", "error: rtol: must be a number > 0 for integrator 'rk45', got -1"),
    ("adaptive=maybe", "error: adaptive: must be true or false, got 'maybe'"),
    ("first_step=soon", "error: first_step: must be \"auto\" or a number > 0 for integrator "
                        "'rk45', got 'soon'"),
    ("rtol", "error: --option: must be KEY=VALUE, got 'rtol'"),
    # Stop 29: "unexpected TypeError: simulate() got multiple values for keyword argument 'dt'
    # (a bug in hooke)".
    ("dt=0.01", "error: --option: dt is not an integrator option but an argument of "
                "hooke.simulate (a flag of its own where the command has one), got 'dt=0.01'"),
    ("store=x.h5", "error: --option: store is not an integrator option but an argument of "
                   "hooke.simulate (a flag of its own where the command has one), got 'store=x.h5'"),
    # Stop 33: the integrator's own parameters were "unexpected TypeError: Integrator.__init__()
    # got multiple values for argument 'system' (a bug in hooke)".
    ("system=1", "error: system: is not an option of integrator 'rk45' (its options: adaptive, "
                 "atol, baumgarte_alpha, baumgarte_beta, beta_c, first_step, k_c, max_step, rtol, "
                 "stabilization), got 1"),
    ("self=1", "error: self: is not an option of integrator 'rk45' (its options: adaptive, "
               "atol, baumgarte_alpha, baumgarte_beta, beta_c, first_step, k_c, max_step, rtol, "
               "stabilization), got 1"),
])
def test_run_bad_option_is_the_integrators_one_line_error(tmp_path, option, message):
    done = hooke("run", "pendulum", "--t-end", "0.1", "-O", option, "--out", str(tmp_path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert [line for line in done.stderr.splitlines() if line.strip()] == [message]


def test_run_with_another_integrator_keeps_the_scene_options_it_accepts(tmp_path):
    import hooke as api

    done = hooke("run", "pendulum", "-i", "rk4", "--t-end", "0.5", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == "note: rk4 does not take pendulum's option(s) atol, rtol; dropped"
    stored = read_trajectory(tmp_path / "trajectory.h5")
    assert json.loads(stored["attrs"]["options"]) == {  # rk4's options, the scene's kept
        "stabilization": "correction", "k_c": 0.03, "beta_c": 0.2, "baumgarte_alpha": 10.0,
        "baumgarte_beta": 10.0}
    expected = api.simulate(api.scene("pendulum"), integrator="rk4", t_end=0.5,
                            stabilization="correction", k_c=0.03, beta_c=0.2)
    assert stored["x"].tobytes() == expected.x.tobytes()
    done = hooke("run", "pendulum", "--t-end", "0.1", "--out", str(tmp_path))  # its own: no note
    assert done.returncode == 0 and "note" not in done.stderr


# -- conventions: --version, --quiet, help text ----------------------------------------------------

def test_version_prints_hookes_version():
    import hooke as api

    done = hooke("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"hooke {api.__version__}\n" and done.stderr == ""


def test_python_dash_m_hooke_is_the_hooke_command():
    """`python -m hooke` (a venv whose scripts are not on PATH) said "No module named
    hooke.__main__"; it is the same command as `hooke` (issue 15 red-team pass)."""
    import subprocess
    import sys

    import hooke as api

    done = subprocess.run([sys.executable, "-m", "hooke", "--version"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == f"hooke {api.__version__}\n", done.stderr
    done = subprocess.run([sys.executable, "-m", "hooke", "run", "spring1d", "--dt", "0"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith("error: --dt: "), done.stderr


def test_run_quiet_prints_nothing_and_writes_the_same_files(tmp_path):
    args = ("run", "spring1d", "--integrator", "rk4", "--dt", "0.01", "--t-end", "1")
    loud = hooke(*args, "--out", str(tmp_path / "loud"))
    quiet = hooke(*args, "--quiet", "--out", str(tmp_path / "quiet"))
    assert loud.returncode == quiet.returncode == 0, quiet.stderr
    assert "hooke run: spring1d" in loud.stdout
    assert quiet.stdout == "" and quiet.stderr == ""
    assert sorted(p.name for p in (tmp_path / "quiet").iterdir()) == \
        sorted(p.name for p in (tmp_path / "loud").iterdir())
    summary = json.loads((tmp_path / "quiet" / "summary.json").read_text())
    assert summary["frames"] == 101 and summary["complete"] is True
    assert read_trajectory(tmp_path / "quiet" / "trajectory.h5")["x"].shape == (101, 2, 1)


def test_run_quiet_still_reports_errors_on_stderr(tmp_path):
    bad = hooke("run", "spring1d", "--dt", "0", "--quiet", "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and bad.stdout == ""
    assert len(bad.stderr.strip().splitlines()) == 1 and "dt" in bad.stderr
    blown = hooke("run", "oscillator", "--integrator", "explicit_euler", "--dt", "0.5",
                  "--t-end", "2000", "-q", "--out", str(tmp_path / "blown"))
    assert blown.returncode == 1 and blown.stdout == "" and "non-finite" in blown.stderr
    summary = json.loads((tmp_path / "blown" / "summary.json").read_text())  # still written
    assert summary["complete"] is False and summary["frames"] > 1


def help_sections(text: str) -> dict[str, list[str]]:
    """The lines of each section of a help text ("Options:", "Commands:" …) by its title."""
    sections, title = {}, None
    for line in text.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            title = line[:-1]
            sections[title] = []
        elif title is not None and line.strip():
            sections[title].append(line)
    return sections


@pytest.mark.parametrize("columns", [80, 120])
def test_run_help_is_plain_text_wrapped_in_even_columns(columns):
    done = hooke("run", "--help", env={"COLUMNS": str(columns)})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(map(len, lines)) <= min(columns, 100)
    assert not any(set(line) & set("│╭╰─") for line in lines)  # no Rich panels
    assert "time step [s]" in done.stdout  # not read as Rich markup ("[s]": strikethrough)
    # Every option's help starts in one column and its continuation lines start there too.
    options = help_sections(done.stdout)["Options"]
    starts = {re.match(r"\s+-\S.*?\s{2,}", line).end() for line in options
              if line.lstrip().startswith("-")}
    assert len(starts) == 1
    column = starts.pop()
    for line in options:
        if not line.lstrip().startswith("-"):
            assert len(line) - len(line.lstrip()) == column, line


def test_command_list_has_one_line_per_command():
    import typer.main

    from hooke.cli import app

    done = hooke("--help", env={"COLUMNS": "80"})
    commands = help_sections(done.stdout)["Commands"]
    names = [command.name for command in typer.main.get_command(app).commands.values()]
    assert [line.split()[0] for line in commands] == names
    assert max(map(len, done.stdout.splitlines())) <= 80


BENCH_OPTIONS = [
    (["--repeats", "100000000000000000000"], "--repeats: must be an integer from 1 to 1000, got "
     "100000000000000000000"),  # accepted before (issue 15): a benchmark that never ends
    (["--repeats", "1001"], "--repeats: must be an integer from 1 to 1000, got 1001"),
    (["--repeats", "0"], "--repeats: must be an integer from 1 to 1000, got 0"),
    (["--rounds", "99999999999"], "--rounds: must be an integer from 1 to 100, got 99999999999"),
    (["--rounds", "-3"], "--rounds: must be an integer from 1 to 100, got -3"),
    (["--repeats", "1e20"], "--repeats: must be an integer, got '1e20'"),
    (["--rounds", "nan"], "--rounds: must be an integer, got 'nan'"),
    (["W9"], "WORKLOAD: unknown workload (known: W1, W2, W3, W4, W5, W6, W8, joints, contact, "
     "startup, gradient), got 'W9'"),
    (["--data", "/dev/null"], "--data: is an existing file, not a directory, got '/dev/null'"),
]


@pytest.mark.parametrize("args, message", BENCH_OPTIONS)
def test_every_bench_option_is_bounded_one_line_exit_2(monkeypatch, capsys, args, message):
    import hooke.bench

    from conftest import run_main

    ran = []
    monkeypatch.setattr(hooke.bench, "run", lambda *call: ran.append(call))
    code, lines = run_main(monkeypatch, capsys, "bench", *args)
    assert (code, lines, ran) == (2, [f"error: {message}"], [])


def test_bench_takes_the_bounds_themselves(monkeypatch, capsys):
    import hooke.bench

    from conftest import run_main

    ran = []
    monkeypatch.setattr(hooke.bench, "run", lambda *call: ran.append(call))
    code, _ = run_main(monkeypatch, capsys, "bench", "W1", "--repeats", "1000", "--rounds", "100")
    assert code in (0, None) and ran[0][1].repeats == 1000 and ran[0][1].rounds == 100


def test_bench_data_files_that_cannot_be_replaced_are_refused_before_any_workload(
        monkeypatch, capsys, tmp_path):
    """`hooke bench --data DIR` checked DIR only: a FIFO at DIR/bench_W6.json blocked the writing
    after the workload had run (a directory there failed then, the measurement lost)."""
    import hooke.bench

    from conftest import run_main

    ran = []
    monkeypatch.setattr(hooke.bench, "run", lambda *call: ran.append(call))
    os.mkfifo(tmp_path / "bench_W6.json")
    (tmp_path / "bench_startup.json").mkdir()
    make_socket(tmp_path / "bench_gradient.json")
    for args, message in (
            (["W6"], f"--data: is a FIFO (named pipe), not a regular file: an output is written "
                     f"as a regular file in its place; remove it or choose another path, got "
                     f"'{tmp_path / 'bench_W6.json'}'"),
            (["startup", "w3"], f"--data: is a directory, not a file, got "
                                f"'{tmp_path / 'bench_startup.json'}'"),
            ([], "--data: is a FIFO (named pipe)"),  # every workload: the first in order
            (["gradient"], "--data: is a socket, not a regular file")):
        code, lines = run_main(monkeypatch, capsys, "bench", *args, "--data", str(tmp_path))
        assert code == 2 and len(lines) == 1 and lines[0].startswith(f"error: {message}"), lines
    assert ran == []
    code, _ = run_main(monkeypatch, capsys, "bench", "W3", "--data", str(tmp_path))
    assert code in (0, None) and len(ran) == 1  # the other workloads' files are not in the way


@pytest.mark.parametrize("value", ["0", "-1", "abc", ""])
def test_a_numba_thread_count_numba_cannot_use_is_one_line_exit_2(value):
    """NUMBA_NUM_THREADS=0 (or -1) was "unexpected ValueError: Number of threads specified must
    be > 0 (a bug in hooke)", raised by Numba's import; a word printed Numba's own traceback and
    ran on."""
    done = hooke("run", "spring1d", "--t-end", "0.05", "--out", "unused", env={"NUMBA_NUM_THREADS": value})
    assert (done.returncode, done.stderr.splitlines()) == (2, [
        f"error: NUMBA_NUM_THREADS: must be an integer >= 1 (the threads of Numba's parallel "
        f"kernels) or unset, got {value!r}"])


@pytest.mark.parametrize("name, value, reason", [
    ("NUMBA_OPT", "bogus", "Environment variable `NUMBA_OPT` is set to an unsupported value "
     "'bogus', supported values are 0, 1, 2, 3, and 'max'"),
    ("NUMBA_DEBUG_CACHE", "yes", "invalid literal for int() with base 10: 'yes'")])
def test_a_numba_setting_numba_cannot_parse_is_one_line_exit_2(tmp_path, name, value, reason):
    """Any other NUMBA_ variable Numba cannot parse printed Numba's own traceback (as a warning)
    and ran on without it (the red-team pass after issue 15)."""
    done = hooke("run", "spring1d", "--t-end", "0.05", "--out", str(tmp_path), env={name: value})
    assert (done.returncode, done.stderr.splitlines()) == (2, [
        f"error: {name}: Numba cannot parse it ({reason}), got {value!r}"])
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


@pytest.mark.parametrize("value, reason", [
    ("bogus", "The threading layer requested 'bogus' is unknown to Numba"),
    ("", "The threading layer requested '' is unknown to Numba")])
def test_a_numba_threading_layer_numba_cannot_load_is_one_line_exit_2(tmp_path, value, reason):
    """NUMBA_THREADING_LAYER=bogus ran on until cloth's first parallel kernel: "step 1 (t =
    0.001) failed: symplectic_euler: ValueError: The threading layer requested 'bogus' is
    unknown to Numba.; … Try a smaller dt or an implicit integrator", exit 1."""
    done = hooke("run", "cloth", "--t-end", "0.003", "--dt", "0.001", "--out", str(tmp_path),
                 env={"NUMBA_THREADING_LAYER": value})
    assert (done.returncode, done.stderr.splitlines()) == (2, [
        f"error: NUMBA_THREADING_LAYER: Numba cannot load it ({reason}), got {value!r}"])
    assert not tmp_path.exists() or not any(tmp_path.iterdir())
    done = hooke("run", "spring1d", "--t-end", "0.05", "--quiet", "--out", str(tmp_path),
                 env={"NUMBA_THREADING_LAYER": "workqueue"})
    assert (done.returncode, done.stderr) == (0, "")


def test_an_mplbackend_the_command_line_does_not_use_is_ignored(tmp_path):
    """MPLBACKEND=bogus: matplotlib's import refused it, "unexpected ValueError … (a bug in
    hooke)" after the run; the command line draws with Agg whatever it says."""
    done = hooke("run", "spring1d", "--t-end", "0.05", "--quiet", "--out", str(tmp_path),
                 env={"MPLBACKEND": "bogus"})
    assert (done.returncode, done.stderr) == (0, "")
    assert (tmp_path / "energy.png").stat().st_size > 1000


def test_an_ascii_terminal_gets_escapes_not_a_unicode_error(tmp_path):
    """PYTHONIOENCODING=ascii: `hooke list` was "unexpected UnicodeEncodeError … (a bug in
    hooke)" at the first "⁺" of the integrators' table."""
    done = hooke("list", env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0 and done.stderr == ""
    assert "(\\u03b1 = 1/k)" in done.stdout and "rk45" in done.stdout


@pytest.mark.parametrize("module", ["hooke.cli", "typer", "rich.table"])
def test_a_ctrl_c_while_the_command_line_is_imported_is_one_line(module):
    """Issue 15 (red-team pass, stop 28): a Ctrl-C in the first half second of any command,
    while hooke.cli was still importing Typer, Rich and hooke's command modules, printed a
    KeyboardInterrupt traceback of 6 to 58 lines. The entry point now imports the command line
    inside its own function: a real SIGINT, sent as ``module`` is imported, is one line and
    exit 130, as later."""
    import subprocess
    import sys

    start = (  # `python -m hooke list`, with the SIGINT sent as `module` is looked for
        "import os, signal, sys\n"
        "import hooke\n"
        "class Interrupt:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name == {module!r}:\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        "sys.argv = ['hooke', 'list']\n"
        "from hooke.command import main\n"
        "main()\n")
    done = subprocess.run([sys.executable, "-c", start], capture_output=True, text=True,
                          timeout=120)
    assert (done.returncode, done.stderr, done.stdout) == (130, "error: interrupted\n", "")


@pytest.mark.parametrize("signum, code, line", [(signal.SIGTERM, 143, "stopped by SIGTERM"),
                                                 (signal.SIGINT, 130, "interrupted")])
def test_a_stop_that_breaks_numbas_compiler_is_said_as_the_stop(tmp_path, signum, code, line):
    """redL: a SIGTERM (or Ctrl-C) while Numba compiled a kernel was swallowed inside its
    compiler, which then failed with "no compiled object yet for <Library '_normal_values'>":
    `hooke run` ended "unexpected RuntimeError … (a bug in hooke)", exit 1. The stop recorded,
    the failure it caused is said as that stop."""
    start = ("import os, signal, sys, time\n"
             "import hooke.simulate\n"
             "def compiling(*args, **kwargs):\n"
             "    try:\n"
             f"        os.kill(os.getpid(), {int(signum)})\n"
             "        time.sleep(5)\n"
             "    except KeyboardInterrupt:\n"
             "        pass  # swallowed, as Numba's compiler did\n"
             "    raise RuntimeError(\"no compiled object yet for <Library '_run' at 0x0>\")\n"
             "hooke.simulate.simulate = compiling\n"
             "sys.argv = ['hooke', 'run', 'spring1d', '-q', '--out', sys.argv[1]]\n"
             "from hooke.command import main\n"
             "main()\n")
    done = subprocess.run([sys.executable, "-c", start, str(tmp_path / "o")], capture_output=True,
                          text=True, timeout=120)
    assert (done.returncode, done.stderr, done.stdout) == (code, f"error: {line}\n", "")


def test_names_and_paths_with_brackets_or_escape_sequences_are_printed_as_written(tmp_path):
    """Issue 15 (redH): the stdout console read a scene's name and the paths it prints as Rich
    markup and wrote their control characters raw: `name = "[/]"` or `--out 'o[/]x'` ended a
    finished run with "unexpected MarkupError … (a bug in hooke)", exit 1; `--out 'o[red]x'`
    was shown as 'ox'; a name with an escape sequence set the terminal's title and colour.
    Now each is shown as written, its control characters escaped as errors escape them."""
    scene = tmp_path / "c[red]\x1b[31m.toml"
    scene.write_text('name = "[/]\\u001b]0;title\\u0007[bold]x"\nbuilder = "harmonic"\n'
                     "[parameters]\nx0 = 1.0\nv0 = 0.0\nstiffness = 1.0\nmass = 1.0\n"
                     "[run]\ndt = 0.01\nt_end = 0.1\n")
    out = tmp_path / "o[/]x" / "[red]y"
    # a relative --out: the summary's lines (120 columns off a terminal) hold it whole
    done = hooke("run", str(scene), "--out", "o[/]x/[red]y", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "hooke run: [/]\\x1b]0;title\\x07[bold]x"
    assert "o[/]x/[red]y/trajectory.h5" in done.stdout and "\x1b" not in done.stdout
    assert (out / "trajectory.h5").is_file()
    checked = hooke("check", str(scene))
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.startswith(f"{tmp_path}/c[red]\\x1b[31m.toml: valid — 2 particles")
