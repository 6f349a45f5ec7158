"""Plots and animations: each plot function returns its Figure, whose lines are the Result's own
arrays; movies of 1D and 3D scenes have the planned frame count and show the particles moving."""

from __future__ import annotations

import imageio.v2 as imageio
import numpy as np
import pytest
from matplotlib.figure import Figure
from typer.testing import CliRunner

import hooke
from hooke.cli import app
from hooke.errors import HookeInputError
from hooke.viz import plots
from hooke.viz.animate import animate, frame_indices


def xy(line) -> tuple[np.ndarray, np.ndarray]:
    data = line.get_xydata()
    return data[:, 0], data[:, 1]


def lines_by_label(ax) -> dict:
    return {line.get_label(): xy(line) for line in ax.get_lines()}


@pytest.fixture(scope="module")
def spring():
    return hooke.simulate(hooke.scene("spring1d"), integrator="rk4", dt=0.05, t_end=3.0)


def test_energy_plot_draws_the_energies_against_time(spring, tmp_path):
    fig = plots.energy_plot(spring, tmp_path / "energy.png")
    assert isinstance(fig, Figure) and (tmp_path / "energy.png").read_bytes()[:4] == b"\x89PNG"
    lines = lines_by_label(fig.axes[0])
    assert list(lines) == ["kinetic", "potential", "total"]
    for key, (t, energy) in lines.items():
        np.testing.assert_array_equal(t, spring.t)
        np.testing.assert_array_equal(energy, spring.energy[key])
    assert fig.axes[0].get_xlabel() == "t [s]" and fig.axes[0].get_ylabel() == "energy [J]"


def test_phase_plot_draws_velocity_against_position(spring):
    fig = plots.phase_plot(spring)  # no path: only the figure
    lines = lines_by_label(fig.axes[0])
    x, v = lines["numerical"]
    np.testing.assert_array_equal(x, spring.x[:, 1, 0])
    np.testing.assert_array_equal(v, spring.v[:, 1, 0])
    exact = spring.analytic()[:, 1, 0]  # x0 cos ωt and its numerical derivative
    np.testing.assert_array_equal(lines["analytic"][0], exact)
    np.testing.assert_allclose(lines["analytic"][1], np.gradient(exact, spring.t))
    assert (x[0], v[0]) == tuple(lines["start"][i][0] for i in (0, 1))
    assert (x[-1], v[-1]) == tuple(lines["end"][i][0] for i in (0, 1))


def test_analytic_plot_draws_numerical_exact_and_their_difference(spring):
    fig = plots.analytic_plot(spring)
    top, bottom = fig.axes
    lines = lines_by_label(top)
    exact = 2.0 * np.cos(np.sqrt(10.0) * spring.t)  # x0 cos(√(k/m) t), seed 000
    np.testing.assert_array_equal(lines["numerical solution"][1], spring.x[:, 1, 0])
    np.testing.assert_allclose(lines["analytic solution"][1], exact, rtol=0, atol=1e-15)
    t, error = xy(bottom.get_lines()[0])
    np.testing.assert_array_equal(t, spring.t)
    np.testing.assert_allclose(error, spring.x[:, 1, 0] - exact, rtol=0, atol=1e-15)


def test_drift_plot_draws_the_joint_length_error():
    result = hooke.simulate(hooke.scene("pendulum"), integrator="symplectic_euler", dt=0.01,
                            t_end=1.0, stabilization=None)
    i, j = result.scene.model.joint_indices.T
    error = np.abs(np.linalg.norm(result.x[:, j] - result.x[:, i], axis=-1) - 1.0)  # L0 = 1 m
    assert error.max() > 1e-4  # without stabilisation the links drift
    fig = plots.drift_plot(result)
    lines = lines_by_label(fig.axes[0])
    np.testing.assert_array_equal(lines["Σ |L − L0|"][0], result.t)
    np.testing.assert_allclose(lines["Σ |L − L0|"][1], np.maximum(error.sum(axis=1), 1e-17), rtol=1e-12)
    np.testing.assert_allclose(lines["max |L − L0|"][1], np.maximum(error.max(axis=1), 1e-17), rtol=1e-12)
    assert fig.axes[0].get_yscale() == "log"


def test_penetration_plot_and_the_cli_plot_the_stored_distances(tmp_path, monkeypatch):
    result = hooke.simulate(hooke.scene("square_drop"), t_end=1.0, store=tmp_path / "trajectory.h5")
    fig = plots.penetration_plot(result)
    t, distance = lines_by_label(fig.axes[0])["min distance to a plane"]
    np.testing.assert_array_equal(t, result.t)
    np.testing.assert_array_equal(distance, result.contact_distance)
    assert 0 < distance.min() < result.scene.model.contact_dhat  # it touched, never crossed

    drawn = {}
    original = plots.finish

    def keep(fig, path):
        drawn[path.name] = fig
        return original(fig, path)

    monkeypatch.setattr(plots, "finish", keep)
    done = CliRunner().invoke(app, ["plot", str(tmp_path), "--kind", "penetration", "--kind", "energy"])
    assert done.exit_code == 0, done.output
    assert sorted(drawn) == ["energy.png", "penetration.png"]
    assert (tmp_path / "penetration.png").read_bytes()[:4] == b"\x89PNG"
    t, distance = lines_by_label(drawn["penetration.png"].axes[0])["min distance to a plane"]
    np.testing.assert_array_equal(t, result.t)
    np.testing.assert_array_equal(distance, result.contact_distance)
    total = lines_by_label(drawn["energy.png"].axes[0])["total"][1]
    np.testing.assert_array_equal(total, result.energy["total"])


@pytest.mark.parametrize("kind, scene, message", [
    ("drift", "spring1d", "'drift' does not apply to this run, which has no joints (it applies: "
                          "energy, phase, snapshot, analytic), got 'drift'"),
    ("penetration", "spring1d", "'penetration' does not apply to this run, which has no contact "
                                "planes, spheres or obstacles (it applies: energy, phase, snapshot, "
                                "analytic), got 'penetration'"),
    ("analytic", "pendulum", "'analytic' does not apply to this run, which has no analytic solution "
                             "(it applies: energy, phase, snapshot, drift), got 'analytic'"),
])
def test_a_plot_refuses_a_run_it_does_not_apply_to_in_the_clis_line(kind, scene, message, tmp_path):
    result = hooke.simulate(hooke.scene(scene), t_end=0.1, store=tmp_path / "trajectory.h5")
    with pytest.raises(HookeInputError) as caught:
        plots.PLOTS[kind](result)
    assert str(caught.value) == f"kind: {message}"
    done = CliRunner().invoke(app, ["plot", str(tmp_path), "--kind", kind])
    assert done.exit_code == 2 and done.stderr == f"error: --kind: {message}\n"
    assert not list(tmp_path.glob("*.png"))


def test_phase_and_analytic_plots_refuse_a_run_without_a_free_particle():
    builder = hooke.ModelBuilder(dim=1)
    builder.add_particle([0.0], pinned=True)
    builder.add_particle([1.0], pinned=True)
    builder.add_spring(0, 1, stiffness=1.0)
    frozen = hooke.Scene(builder.finalize(), integrator="rk4", dt=0.1, t_end=0.2,
                         analytic_solution=lambda t: np.zeros((np.size(t), 2, 1)))
    result = hooke.simulate(frozen)
    assert plots.available(result) == ["energy", "snapshot"]
    for kind in ("phase", "analytic"):
        with pytest.raises(HookeInputError, match=rf"^kind: '{kind}' does not apply to this run, "
                           r"which has no free particle \(it applies: energy, snapshot\)"):
            plots.PLOTS[kind](result)


def particle_masks(path) -> list[np.ndarray]:
    """Per frame, the pixels of the free particles: blue (tab:blue, lighter when 3D shades it by
    depth), nothing else in the drawing is."""
    masks = []
    for frame in imageio.get_reader(path):
        rgb = np.asarray(frame)[..., :3].astype(int)
        masks.append((rgb[..., 2] - rgb[..., 0] > 40) & (rgb[..., 2] > 120))
        assert masks[-1].sum() > 10, "no particle drawn"
    return masks


def test_animation_of_a_1d_scene(tmp_path):
    """spring1d: one particle moving along x, drawn on a line; half a period at 10 fps."""
    result = hooke.simulate(hooke.scene("spring1d"), t_end=1.0, save_every=4)
    path = animate(result, tmp_path / "spring.gif", fps=10)
    centroids = np.array([np.argwhere(mask).mean(axis=0) for mask in particle_masks(path)])
    assert len(centroids) == len(frame_indices(result.t, 10, None)) == 10
    # x = 2 cos(√10 t): from +2 through 0 (t ≈ 0.5) to −2 (t ≈ 0.99) — moving left, not up
    assert centroids[0, 1] - centroids[-1, 1] > 100
    assert np.all(np.diff(centroids[:, 1]) < 0) and np.ptp(centroids[:, 0]) < 3


def test_animation_of_a_3d_scene(tmp_path):
    """The spinning top (3D): its four masses circle the vertical axis by about 1 rad per frame,
    so no particle pixel of one frame is a particle pixel of the next."""
    result = hooke.simulate(hooke.scene("top"), t_end=0.6, save_every=10)
    path = animate(result, tmp_path / "top.mp4", fps=10)
    masks = particle_masks(path)
    assert len(masks) == len(frame_indices(result.t, 10, None)) == 6  # 0.6 s in real time
    for before, after in zip(masks[:-1], masks[1:]):
        assert (before & after).sum() <= 0.2 * before.sum()
