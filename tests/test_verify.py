"""`hooke verify`: its measured orders and closed-form energy factors on spring1d, and the orders,
energy classes and joint drift of the integrators with joints on the double pendulum."""

from __future__ import annotations

import csv

import numpy as np
import pytest

import hooke
from hooke.integrators.base import get
from hooke.verify import convergence_plot, verify, verify_joints

OMEGA2_H2 = (5.0 / 0.5) * 0.005**2  # ω²h² at the verify run's dt


@pytest.fixture(scope="module")
def reports():
    return {report.name: report for report in verify()}


def test_every_integrator_is_reported_with_its_order(reports):
    assert set(reports) == set(hooke.integrators())
    for report in reports.values():
        assert abs(report.measured_order - report.expected_order) <= 0.3, report


@pytest.mark.parametrize("name, change, rtol", [
    ("explicit_euler", OMEGA2_H2, 1e-9),                   # |1 + iωh|² − 1
    ("rk2", OMEGA2_H2**2 / 4, 1e-6),                       # |1 + z + z²/2|² − 1 at z = iωh
    ("implicit_euler_linear", 1 / (1 + OMEGA2_H2) - 1, 1e-9),
    ("rk4", -OMEGA2_H2**3 / 72 + OMEGA2_H2**4 / 576, 1e-3),  # 2e-13 per step: round-off limits
])
def test_energy_factor_matches_closed_form(reports, name, change, rtol):
    np.testing.assert_allclose(reports[name].energy_factor - 1, change, rtol=rtol)


def test_energy_behaviour_classes(reports):
    assert reports["explicit_euler"].behaviour == "grows"
    assert reports["implicit_euler_linear"].behaviour == "decays"
    assert reports["implicit_euler"].behaviour == "decays"
    assert reports["symplectic_euler"].behaviour == "bounded"


# The jointed part: every integrator with supports_joints on the double pendulum (stabilization=None).
EXPECTED_JOINT_ORDER = {"explicit_euler": 1, "symplectic_euler": 1, "rk2": 2, "rk4": 4, "rk45": 5,
                        "newmark": 2, "generalized_alpha": 2, "implicit_euler": 1}
# max |L − L0| over 4000 steps of 0.0025 s: measured 0.52, 0.56, 4.3e-4, 2.7e-5, 2.8e-9 with the
# bare exact tensions; the index-3 methods hold the joints to their Newton tolerance (1.2e-13,
# 2.0e-13; implicit_euler's Newton–KKT 2.2e-15).
JOINT_DRIFT_BOUND = {"explicit_euler": 0.6, "symplectic_euler": 0.65, "rk2": 5e-4, "rk4": 3.5e-5,
                     "rk45": 5e-9, "newmark": 1e-11, "generalized_alpha": 1e-11,
                     "implicit_euler": 1e-11}


@pytest.fixture(scope="module")
def joint_reports():
    return {report.name: report for report in verify_joints()}


def test_every_integrator_with_joints_is_reported(joint_reports):
    able = {name for name in hooke.integrators() if get(name).supports_joints}
    assert set(joint_reports) == able
    for report in joint_reports.values():
        if "stabilization" in get(report.name).defaults:
            assert report.options["stabilization"] is None


@pytest.mark.parametrize("name, order", sorted(EXPECTED_JOINT_ORDER.items()))
def test_jointed_order(joint_reports, name, order):
    report = joint_reports[name]
    assert report.expected_order == order
    assert abs(report.measured_order - order) <= 0.3, report
    # the reference is far more accurate than the finest step of every method
    assert report.errors.min() >= 10 * report.reference_error, report


@pytest.mark.parametrize("name, bound", sorted(JOINT_DRIFT_BOUND.items()))
def test_joint_drift(joint_reports, name, bound):
    assert joint_reports[name].drift <= bound


def test_jointed_energy_behaviour(joint_reports):
    classes = {name: report.behaviour for name, report in joint_reports.items()}
    assert classes["explicit_euler"] == "grows"
    assert classes["rk2"] == "grows"
    assert classes["rk4"] == "grows"
    assert classes["rk45"] == "grows"
    # bare exact tensions: the links stretch by half their length and the energy drains away
    assert classes["symplectic_euler"] == "decays"
    # backward Euler's numerical damping (E⁺/E − 1 = −1.9e-4 per step, measured)
    assert classes["implicit_euler"] == "decays" and joint_reports["implicit_euler"].failed_at is None
    # index-3 joints with the velocities projected onto G v = 0 after each step: the trapezoidal
    # rule stays bounded too (without the projection it blew up at t = 6.2 s); measured
    # E⁺/E − 1 = −2.7e-8 (newmark), −3.1e-8 (generalized-α)
    for name in ("newmark", "generalized_alpha"):
        assert classes[name] == "bounded" and joint_reports[name].failed_at is None
        assert -1e-7 < joint_reports[name].energy_factor - 1 < 0


def test_convergence_plot_has_a_jointed_panel(reports, joint_reports, tmp_path):
    figure = convergence_plot(list(reports.values()), tmp_path / "convergence.png",
                              list(joint_reports.values()))
    assert (tmp_path / "convergence.png").read_bytes()[:4] == b"\x89PNG"
    spring_panel, joint_panel = figure.axes
    assert len(spring_panel.get_lines()) == len(reports)
    *curves, bound = joint_panel.get_lines()  # one per integrator with joints, then the bound
    assert len(curves) == len(joint_reports)
    reference = next(iter(joint_reports.values())).reference_error
    np.testing.assert_array_equal(bound.get_ydata(), [reference, reference])
    assert bound.get_label() == "bound on the reference's error"


def table_rows(text: str, cells: int) -> dict[str, list[str]]:
    """{integrator: its cells} of the printed tables' rows with ``cells`` columns."""
    rows = {}
    for line in text.splitlines():
        parts = [part.strip() for part in line.split("│")[1:-1]]
        if len(parts) == cells and parts[0] in hooke.integrators():
            rows[parts[0]] = parts
    return rows


def test_short_steps_solve_implicit_euler_above_the_round_off():
    """Issue 15: at dt = 1e-4 s verify's tol = 1e-12 m/s is below what implicit_euler can meet
    on spring1d (ε·|x0|∞/dt = 4.4e-12): it failed after 100 Newton iterations a step with "try
    a smaller dt", and since such a tol is refused it named a tol the user cannot set; verify
    raises it above the round-off there (64 × 4.4e-12) and keeps 1e-12 where it is met."""
    from hooke.verify import fixed_step_options, within_round_off

    model = hooke.scene("spring1d").model
    tight = fixed_step_options("implicit_euler")
    assert within_round_off(tight, "implicit_euler", model, 0.0025) == tight  # the defaults' dts
    assert within_round_off(tight, "implicit_euler", model, 1e-4)["tol"] == pytest.approx(
        64 * np.finfo(float).eps * 2.0 / 1e-4)
    report = next(report for report in verify(dts=(2e-4, 1e-4), t_end=0.02, energy_dt=1e-4,
                                               energy_steps=100)
                  if report.name == "implicit_euler")
    assert report.measured_order == pytest.approx(1.0, abs=0.01)


def test_verify_command_prints_verify_numbers_and_writes_the_plot(tmp_path):
    """`hooke verify` (with short energy runs) prints what verify() and verify_joints() measure
    and writes the log-log plot; the plot function's figure holds exactly their errors."""
    import imageio.v2 as imageio
    from typer.testing import CliRunner

    from hooke.cli import app

    done = CliRunner().invoke(app, ["verify", "--energy-steps", "100", "--out", str(tmp_path)])
    assert done.exit_code == 0, done.output
    assert "energy over 100 steps of 0.005 s" in done.stdout
    reports, joint_reports = verify(energy_steps=100), verify_joints(energy_steps=100)
    printed = table_rows(done.stdout, 5)
    assert set(printed) == {r.name for r in reports} == set(hooke.integrators())
    for r in reports:
        assert printed[r.name] == [r.name, str(r.expected_order), f"{r.measured_order:.3f}",
                                   r.behaviour, f"{r.energy_factor - 1:+.3e}"]
    printed = table_rows(done.stdout, 6)
    assert set(printed) == {r.name for r in joint_reports}
    for r in joint_reports:
        assert printed[r.name] == [r.name, str(r.expected_order), f"{r.measured_order:.3f}",
                                   r.behaviour, f"{r.energy_factor - 1:+.3e}", f"{r.drift:.2e}"]
    # the closed form shows through the printed factor: explicit Euler gains ω²h² per step
    assert float(table_rows(done.stdout, 5)["explicit_euler"][4]) == pytest.approx(OMEGA2_H2, rel=1e-3)
    # the CSV tables the README is rendered from hold the same numbers
    for name, rows in (("verify_spring1d.csv", reports), ("verify_pendulum.csv", joint_reports)):
        with open(tmp_path / name, newline="", encoding="utf-8") as handle:
            written = {row["name"]: row for row in csv.DictReader(handle)}
        assert list(written) == [r.name for r in rows]
        for r in rows:
            row = written[r.name]
            assert float(row["measured_order"]) == pytest.approx(r.measured_order, rel=1e-5)
            assert float(row["energy_change"]) == pytest.approx(r.energy_factor - 1, rel=1e-5)
            assert row["behaviour"] == r.behaviour
            np.testing.assert_allclose([float(e) for e in row["errors"].split(";")], r.errors, rtol=1e-5)
            assert row.get("failed_at", "") == ""  # none stops in 100 steps: an empty field

    picture = imageio.imread(tmp_path / "convergence.png")
    assert picture.shape[:2] == (770, 1430)  # two panels, 13 × 7 in at 110 dpi
    figure = convergence_plot(reports, None, joint_reports)
    for ax, rows, ylabel in zip(figure.axes, (reports, joint_reports),
                                ("max |x − x_exact| over 2 s [m]", "max |x − x_ref| over 1.5 s [m]")):
        assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
        assert (ax.get_xlabel(), ax.get_ylabel()) == ("dt [s]", ylabel)
        lines = ax.get_lines()[: len(rows)]
        for line, r in zip(lines, rows):
            assert line.get_label() == f"{r.name} (order {r.measured_order:.2f})"
            np.testing.assert_array_equal(line.get_xydata(), np.column_stack([r.dts, r.errors]))
    for steps in ("5", "99999999999999999999"):  # the second was "unexpected HookeInputError"
        done = CliRunner().invoke(app, ["verify", "--energy-steps", steps])
        assert done.exit_code == 2 and done.stderr.strip() == (
            f"error: --energy-steps: must be an integer from 10 to 1e+08, got {steps}")
    done = CliRunner().invoke(app, ["verify", "--quick"])
    assert done.exit_code == 2 and done.stderr.strip() == "error: --quick: only with --all"


@pytest.mark.parametrize("call, field, value", [
    (lambda: verify(dts=()), "dts", "()"),  # TypeError "expected non-empty vector for x"
    (lambda: verify(dts=(0.01,)), "dts", "(0.01,)"),  # a slope of one point: order 0.17
    (lambda: verify(dts=(0.01, 0.01)), "dts", "(0.01, 0.01)"),
    (lambda: verify(dts="0.01"), "dts", "'0.01'"),  # TypeError "not iterable"
    (lambda: verify(dts=(0.01, float("nan"))), "dts", "nan"),  # ValueError from int(nan)
    (lambda: verify(dts=(0.01, -0.005)), "dts", "-0.005"),  # was named "dt"
    (lambda: verify(dts=(5e-324, 1e-323)), "dts", "5e-324"),  # OverflowError
    (lambda: verify(dts=(1.0, 2.0)), "dts", "(1.0, 2.0)"),  # "t_end: … got 0.0"
    (lambda: verify(energy_steps=True), "energy_steps", "True"),  # taken as 1 step
    (lambda: verify(energy_steps=4000.0), "energy_steps", "4000.0"),
    (lambda: verify(energy_steps=10 ** 400), "energy_steps", "1000000000"),  # OverflowError
    (lambda: verify(energy_steps=0), "energy_steps", "0"),  # was named "t_end"
    (lambda: verify(energy_dt=0.0), "energy_dt", "0.0"),  # was named "dt"
    (lambda: verify(t_end="2"), "t_end", "'2'"),
    (lambda: verify_joints(dts=()), "dts", "()"),
    (lambda: verify_joints(energy_steps=2.5), "energy_steps", "2.5"),
    # reference_dt was not checked (redH): ZeroDivisionError, TypeError, ValueError from
    # int(nan), OverflowError, or blamed on "dt" (True, -1) and "save_every" (0.2)
    (lambda: verify_joints(reference_dt=0), "reference_dt", "0"),
    (lambda: verify_joints(reference_dt="1e-3"), "reference_dt", "'1e-3'"),
    (lambda: verify_joints(reference_dt=float("nan")), "reference_dt", "nan"),
    (lambda: verify_joints(reference_dt=5e-324), "reference_dt", "5e-324"),
    (lambda: verify_joints(reference_dt=True), "reference_dt", "True"),
    (lambda: verify_joints(reference_dt=-1), "reference_dt", "-1"),
    (lambda: verify_joints(reference_dt=0.2), "reference_dt", "0.2"),
])
def test_verify_settings_are_checked_before_any_run(call, field, value):
    """Issue 15 (red-team pass, stop 28): hooke.verify's settings were not checked: an empty
    dts was NumPy's TypeError, a NaN step ValueError, a subnormal one OverflowError, one step
    gave a measured order from one point (0.17 for explicit Euler), energy_steps=True ran one
    step, and a bad energy_dt or energy_steps was blamed on "dt" or "t_end"."""
    with pytest.raises(hooke.HookeInputError) as error:
        call()
    message = str(error.value)
    assert message.startswith(f"{field}: ") and "\n" not in message, message
    assert value in message.rsplit(", got ", 1)[1], message


def test_the_convergence_plot_and_the_verify_tables_check_their_paths_before_drawing(tmp_path):
    """Issue 15 (redH): convergence_plot(reports, path) took any path as the plots did not: True
    or 5 was a raw TypeError from pathlib, "plot" (no suffix) or "plot.5" Matplotlib's
    ValueError "Format 'partial' is not supported" after drawing, "a\\0b.png" ValueError
    "embedded null byte"; write_reports the same, and a list of reports that is not one
    (None, 5) a raw TypeError. Now each is named as the plots name theirs, nothing written."""
    from hooke.verify import convergence_plot, write_reports

    for bad, problem in ((True, "must be a path (a str or a pathlib.Path)"),
                         (5, "must be a path (a str or a pathlib.Path)"),
                         (str(tmp_path / "plot"), "must end in one of .avif, .eps"),
                         (str(tmp_path / "plot.5"), "must end in one of .avif, .eps"),
                         (str(tmp_path / "a\0b.png"), "must not contain a NUL byte")):
        with pytest.raises(hooke.HookeInputError) as error:
            convergence_plot([], bad)
        assert str(error.value).startswith(f"path: {problem}"), str(error.value)
    for bad in (None, 5, "rows"):
        with pytest.raises(hooke.HookeInputError) as error:
            convergence_plot(bad)
        assert str(error.value).startswith("reports: must be a list of IntegratorReport"), \
            str(error.value)
        with pytest.raises(hooke.HookeInputError) as error:
            write_reports(bad, tmp_path / "t.csv")
        assert str(error.value).startswith("reports: must be a list of IntegratorReport"), \
            str(error.value)
    with pytest.raises(hooke.HookeInputError) as error:
        write_reports([], True)
    assert str(error.value) == "path: must be a path (a str or a pathlib.Path), got True"
    with pytest.raises(hooke.HookeInputError) as error:
        write_reports([], tmp_path / "t.txt")
    assert str(error.value) == f"path: must end in one of .csv, got '{tmp_path / 't.txt'}'"
    with pytest.raises(hooke.HookeInputError) as error:  # rows[0]: a raw IndexError
        write_reports([], tmp_path / "t.csv")
    assert str(error.value).startswith("reports: must be a list of IntegratorReport or "
                                       "JointReport (from verify() or verify_joints()), at least "
                                       "one, got []")
    assert list(tmp_path.iterdir()) == []
