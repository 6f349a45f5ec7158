"""The verification matrix (`hooke verify --all`): its reduced version run through the command
line, with the measured values asserted from the CSV it writes; the independent reference; the
ladder's moves; the per-scene plan."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest
from typer.testing import CliRunner

import hooke
from hooke.cli import app
from hooke.integrators.base import get
from hooke.integrators.newmark import AlphaMethod
from hooke.verification import LIMITATIONS, QUICK, run_matrix
from hooke.verification.matrix import ORDER_TOLERANCE, pre_asymptotic
from hooke.verification.plan import SCENES, Configuration, SceneCase
from hooke.verification.reference import dae_reference
from hooke.verify import joint_options


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """`hooke verify --all --quick --out DIR`: (its result, {(integrator, scene): CSV row}, DIR)."""
    out = tmp_path_factory.mktemp("matrix")
    done = CliRunner().invoke(app, ["verify", "--all", "--quick", "--out", str(out)])
    with open(out / "verification.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return done, {(row["integrator"], row["scene"]): row for row in rows}, out


def values(field: str) -> np.ndarray:
    return np.array([float(value) for value in field.split(";")])


def accepted(rows):
    return {key: row for key, row in rows.items() if row["status"] != "n/a"}


def test_quick_command_passes_and_writes_csv_and_plot(quick):
    import imageio.v2 as imageio

    done, rows, out = quick
    assert done.exit_code == 0, done.output
    picture = imageio.imread(out / "verification.png")
    assert picture.ndim == 3 and picture.shape[0] > 300 and picture.shape[1] > 500
    for scene in ("spring1d", "cloth2d", "top", "square_drop"):  # a row each in the table
        assert any(line.lstrip("│ ").startswith(scene) for line in done.stdout.splitlines())


def test_every_integrator_and_scene_has_a_row(quick):
    _, rows, _ = quick
    assert set(rows) == {(name, case.scene) for name in hooke.integrators() for case in QUICK.cases}
    first = next(iter(rows.values()))
    for column in ("status", "expected_order", "measured_order", "last_ratio", "reference", "dt0",
                   "dts", "errors", "energy_errors", "energy_behaviour", "joint_drift",
                   "contact_distance", "wall_time", "note"):
        assert column in first


def test_accepted_by_capability_and_refusals_give_the_reason(quick):
    _, rows, _ = quick
    for (name, scene), row in rows.items():
        cls = get(name)
        needs = {"top": "supports_joints", "square_drop": "supports_contact"}.get(scene)
        assert (row["status"] == "n/a") == (needs is not None and not getattr(cls, needs)), row
        if row["status"] == "n/a":
            what = "joints" if scene == "top" else "contact planes"
            assert f"'{name}' does not handle {what}" in row["note"]
            assert row["errors"] == "" and row["measured_order"] == ""


def test_every_accepted_cell_shows_its_order(quick):
    _, rows, _ = quick
    for (name, scene), row in accepted(rows).items():
        dts, errors = values(row["dts"]), values(row["errors"])
        assert dts.size == QUICK.levels
        assert errors.size == QUICK.levels - (row["reference"] == "self-convergence")
        np.testing.assert_allclose(dts[:-1] / dts[1:], 2.0)
        order = np.polyfit(np.log(dts[:errors.size]), np.log(errors), 1)[0]
        assert float(row["measured_order"]) == pytest.approx(order, rel=1e-5)
        assert float(row["last_ratio"]) == pytest.approx(errors[-2] / errors[-1], rel=1e-5)
        if (name, scene) in LIMITATIONS:
            assert row["status"] in ("limited", "ok")  # a stated limitation may not show in 3 levels
            assert row["limitation"] == (LIMITATIONS[name, scene] if row["status"] == "limited"
                                         else "")
            continue
        assert row["status"] == "ok", row
        assert abs(order - int(row["expected_order"])) <= ORDER_TOLERANCE, row


def test_references(quick):
    _, rows, _ = quick
    kinds = {scene: {row["reference"] for (_, s), row in accepted(rows).items() if s == scene}
             for scene in ("spring1d", "cloth2d", "top", "square_drop")}
    assert kinds["spring1d"] == {"analytic"}
    assert kinds["cloth2d"] == {"DOP853 ODE"}
    assert kinds["top"] == {"DOP853 index-1 DAE"}
    assert kinds["square_drop"] == {"self-convergence"}
    # where a reference is used, it is far more accurate than the finest run
    for row in accepted(rows).values():
        if row["reference_error"]:
            assert values(row["errors"]).min() >= 10 * float(row["reference_error"]), row


def test_high_order_ladders_coarsen_away_from_round_off(quick):
    _, rows, _ = quick
    row = rows["rk45", "spring1d"]
    assert int(row["shift"]) < 0 and float(row["dt0"]) > hooke.scene("spring1d").dt
    assert "coarsened" in row["note"] and "adaptive=False" in row["note"]
    assert values(row["errors"]).min() > 1e-12  # clear of round-off


def test_alpha_methods_energy_error_shrinks_from_the_scene_dt(quick):
    """Part 1's standard, at the quick matrix's depth: on the jointed scene every α-method
    starts at the scene's own dt and its energy error falls as dt halves."""
    _, rows, _ = quick
    for (name, scene), row in rows.items():
        if row["kind"] != "joints" or not issubclass(get(name), AlphaMethod):
            continue
        assert float(row["dt0"]) == hooke.scene(scene).dt and row["shift"] == "0"
        energy = values(row["energy_errors"])
        assert np.all(energy[1:] < energy[:-1] / 3), row  # second order: ÷4 per halving
        assert float(row["energy_order"]) == pytest.approx(2.0, abs=ORDER_TOLERANCE)


def test_joint_drift(quick):
    """On the top every integrator with joints holds them: the Runge–Kutta family by its default
    projection (measured 1.8e-12 m at most), the α-methods as index-3 constraints (1.2e-14 m),
    implicit_euler's Newton–KKT to its stopping rule, 1e-10 × the top's size 2 m (measured
    2.9e-11 m)."""
    from hooke.constraints import JOINT_TOL, length_scale

    _, rows, _ = quick
    jointed = {name: values(row["joint_drift"]) for (name, scene), row in accepted(rows).items()
               if scene == "top"}
    assert set(jointed) == {name for name in hooke.integrators() if get(name).supports_joints}
    for name, drift in jointed.items():
        bound = JOINT_TOL * length_scale(hooke.scene("top").model) if name == "implicit_euler" else 1e-11
        assert drift.max() <= bound, name
    for (name, scene), row in accepted(rows).items():
        if scene != "top":
            assert row["joint_drift"] == ";".join([""] * QUICK.levels)  # NaN: no joints


def test_contact_distance_stays_positive(quick):
    _, rows, _ = quick
    row = rows["implicit_euler", "square_drop"]
    distance = values(row["contact_distance"])
    dhat = hooke.scene("square_drop").model.contact_dhat
    assert np.all(distance > 0) and np.all(distance < dhat)  # it touched, never reached the ground


def test_conservative_energy_classes(quick):
    """The closed forms' classes on spring1d: explicit Euler gains energy, implicit Euler loses
    it, symplectic Euler keeps it bounded; damped cloth2d names the physical loss."""
    _, rows, _ = quick
    assert rows["explicit_euler", "spring1d"]["energy_behaviour"] == "grows"
    assert rows["implicit_euler", "spring1d"]["energy_behaviour"] == "decays"
    assert rows["symplectic_euler", "spring1d"]["energy_behaviour"] == "bounded"
    assert rows["implicit_euler", "cloth2d"]["energy_behaviour"].endswith("(physical: spring damping)")


def test_unstable_start_moves_the_ladder_down():
    """Symplectic Euler on the stiff 6³ lattice (ω up to ~4e3 rad/s) is unstable at the scene's
    dt = 5 ms: the ladder starts lower, says so, and shows first order there."""
    case = SceneCase("lattice", 0.02, 0.02, "a test", {"nx": 4, "ny": 4, "nz": 4})
    cell, = run_matrix(Configuration("test", (case,), levels=3), ["symplectic_euler"])
    assert cell.shift > 0 and cell.note.startswith("unstable at the scene's dt = 0.005 s")
    assert cell.status == "ok" and abs(cell.measured_order - 1) <= ORDER_TOLERANCE


def test_pre_asymptotic_is_a_trend_towards_the_order():
    dts = 0.01 / 2.0 ** np.arange(5)
    converging = 1e-3 / np.cumprod([1, 1.2, 1.4, 1.6, 1.8])  # local orders 0.26 … 0.85 → 1
    assert pre_asymptotic(converging, dts, 1)
    collapsing = 1e-3 / np.cumprod([1, 2, 2, 2, 0.01])  # right order, then lost at the fine end
    assert not pre_asymptotic(collapsing, dts, 1)
    assert not pre_asymptotic(1e-3 * dts / dts[0], dts, 1)  # on the order: nothing to refine


def test_dae_reference_matches_fixed_step_rk45_on_the_pendulum():
    """The independent reference against hooke's rk45 at h = 1/1280 s (itself within 7e-14 m):
    measured 2.8e-12 m apart, and the reference's estimate of its error agrees (2.6e-12 m)."""
    pendulum = hooke.scene("pendulum")
    t = np.arange(16) * 0.1
    reference = dae_reference(pendulum, t)
    fine = hooke.simulate(pendulum, integrator="rk45", dt=0.1 / 128, t_end=1.5, save_every=128,
                          **joint_options("rk45"))
    distance = np.max(np.abs(reference.x - fine.x))
    assert distance < 1e-11
    assert distance / 3 < reference.error < 3 * distance
    assert np.max(pendulum.model.joint_length_error(reference.x)) < 1e-12


def test_dae_reference_without_joints_is_the_ode():
    spring = hooke.scene("spring1d")
    t = np.linspace(0.0, 2.0, 11)
    reference = dae_reference(spring, t)
    assert reference.kind == "DOP853 ODE"
    np.testing.assert_allclose(reference.x, spring.analytic(t), rtol=0, atol=1e-11)


def test_every_built_in_scene_has_a_case_that_fits_its_steps():
    assert set(SCENES) == set(hooke.scenes())
    for case in SCENES.values():
        scene = hooke.scene(case.scene, **case.parameters)
        assert case.frames >= 1 and case.frame_steps(scene.dt) >= 1
        assert case.why
        # the coarsest ladder the frames allow still divides them
        coarsest = scene.dt * 2 ** case.max_coarsening(scene.dt)
        assert case.frame_steps(coarsest) >= 1
        with pytest.raises(ValueError, match="does not divide"):
            case.frame_steps(coarsest * 2)


def test_stated_limitations_name_real_cells_and_their_cause():
    for (integrator, scene), cause in LIMITATIONS.items():
        assert integrator in hooke.integrators() and scene in hooke.scenes()
        assert len(cause) > 40 and not math.isnan(get(integrator).order)


def test_readme_blocks_render_the_matrix_csv(tmp_path):
    """verification.csv as write_matrix_csv writes it, rendered by the README's two blocks: an
    off cell in bold with ✗ and listed as not explained, a limitation with ‡ and its cause, a
    refusal as ·."""
    import importlib.util
    from pathlib import Path

    from hooke.verification.matrix import Cell
    from hooke.verification.report import write_matrix_csv

    script = Path(__file__).resolve().parents[1] / "scripts" / "readme_tables.py"
    spec = importlib.util.spec_from_file_location("readme_tables_for_matrix", script)
    tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tables)
    measured = dict(kind="springs", dim=1, particles=2, dts=[0.01, 0.005], errors=[1e-2, 4e-3])
    write_matrix_csv([
        Cell("rk2", "spring1d", status="ok", expected_order=2, measured_order=2.004, **measured),
        Cell("xpbd", "spring1d", status="off", expected_order=1, measured_order=1.37,
             note="refined ×2", **measured),
        Cell("rk2", "top", "joints", 3, 5, "limited", 2, measured_order=1.5, dts=[0.001],
             errors=[1e-3], limitation="a cause stated in the plan"),
        Cell("xpbd", "top", "joints", 3, 5, "n/a", 1, note="does not handle joints"),
    ], tmp_path / "verification.csv")
    matrix = tables.RENDERERS["verification-matrix"](tmp_path)
    assert "| `spring1d` | springs, 1D, 2 particles | 2.00 | **1.37 ✗** |" in matrix
    assert "| `top` | joints, 3D, 5 particles | 1.50 ‡ | · |" in matrix
    assert "`rk2` (2)" in matrix and "`hooke verify --all --out docs/data`" in matrix
    limitations = tables.RENDERERS["verification-limitations"](tmp_path)
    assert "| `xpbd` | `spring1d` | 1 | 1.37 |" in limitations
    assert "**not yet explained** (refined ×2)" in limitations
    assert "a cause stated in the plan" in limitations and "`rk2` | `spring1d`" not in limitations


def test_committed_matrix_meets_part_1_standard():
    """docs/data/verification.csv (the README's matrix, from `hooke verify --all`): every α-method
    on the jointed scenes converges at second order from the scene's own dt, four halvings deep,
    and its energy error falls as dt halves (or is at round-off, below 1e-10 J: Newmark's on the
    seed's crane, without air drag, was 3e-11 J of ~60 J); no cell is off or failed, and every
    limited cell states the plan's cause."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "docs" / "data" / "verification.csv"
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert {(row["integrator"], row["scene"]) for row in rows} == {
        (name, scene) for name in hooke.integrators() for scene in hooke.scenes()}
    for row in rows:
        assert row["status"] in ("ok", "limited", "n/a"), row
        if row["status"] == "limited":
            assert row["limitation"] == LIMITATIONS[row["integrator"], row["scene"]]
    for scene in ("top", "crane", "pendulum", "jointed_chain"):
        for name in hooke.integrators():
            if not issubclass(get(name), AlphaMethod):
                continue
            row = next(row for row in rows if (row["integrator"], row["scene"]) == (name, scene))
            assert row["status"] == "ok" and row["shift"] == "0", row
            assert float(row["dt0"]) == hooke.scene(scene).dt and values(row["errors"]).size == 5
            assert abs(float(row["measured_order"]) - 2) <= ORDER_TOLERANCE
            energy = values(row["energy_errors"])
            assert np.all(np.diff(energy) < 0) or energy.max() < 1e-10, row


def test_the_matrix_csv_reads_back_into_the_cells_that_write_it(tmp_path):
    """read_matrix_csv inverts write_matrix_csv on the shipped data: the cells read write the
    same bytes, and their values are the file's (scripts/update_verification.py redraws from them)."""
    from pathlib import Path

    from hooke.verification.report import read_matrix_csv, write_matrix_csv

    shipped = Path(__file__).resolve().parents[1] / "docs" / "data" / "verification.csv"
    cells = read_matrix_csv(shipped)
    assert write_matrix_csv(cells, tmp_path / "again.csv").read_bytes() == shipped.read_bytes()
    spring = next(c for c in cells if (c.integrator, c.scene) == ("rk4", "spring1d"))
    assert spring.status == "ok" and abs(spring.measured_order - 4.0) < 0.3
    assert len(spring.dts) == len(spring.energy_errors) and spring.dts[1] == spring.dts[0] / 2
    assert {c.status for c in cells} <= {"ok", "off", "limited", "n/a", "failed"}


def test_a_number_with_an_underscore_is_not_read_from_the_matrix_csv(tmp_path):
    """float("1_000") is 1000 and int("4_1") is 41 (Python's literal syntax): a CSV hooke reads
    takes decimal numbers only (issue 15)."""
    import csv
    from pathlib import Path

    from hooke.io.csv_numbers import csv_number
    from hooke.verification.report import read_matrix_csv

    assert [csv_number(text) for text in ("1", "-2.5e-3", " .5 ", "1.", "inf", "-inf")] == [
        1.0, -2.5e-3, 0.5, 1.0, float("inf"), float("-inf")]
    assert np.isnan(csv_number("nan")) and csv_number("-41", integer=True) == -41
    for text in ("1_000", "1_0.5", "0x10", "1e", "", "1,5", "½", "١٢"):
        with pytest.raises(ValueError):
            csv_number(text)
    with pytest.raises(ValueError):
        csv_number("4.0", integer=True)
    shipped = Path(__file__).resolve().parents[1] / "docs" / "data" / "verification.csv"
    rows = list(csv.DictReader(shipped.open(encoding="utf-8", newline="")))
    for column, text in (("dim", "1_0"), ("measured_order", "1_000")):
        edited = [dict(rows[0], **{column: text})] + rows[1:]
        path = tmp_path / f"{column}.csv"
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(edited)
        with pytest.raises(ValueError, match="not a"):
            read_matrix_csv(path)
