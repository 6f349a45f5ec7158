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
from hooke.viz.animate import GIF_MIN_FPS, animate, frame_indices, gif_durations


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


def test_energy_plot_above_rest_subtracts_the_equilibriums_potential_energy():
    """A scene that reads its energies above the rest state (energy_reference = "rest"): a mass
    on a spring released from its unstretched length swings about y* = −L − mg/k, where
    U* = −mgL − (mg)²/(2k); potential and total are drawn above U*, kinetic as it is."""
    m, g, k, length = 2.0, 9.81, 500.0, 0.5
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -g))
    b.add_particle([0.0, 0.0], pinned=True)
    b.add_particle([0.0, -length], mass=m)
    b.add_spring(0, 1, stiffness=k)
    scene = hooke.Scene(b.finalize(), integrator="rk4", dt=0.01, t_end=1.0, energy_reference="rest")
    result = hooke.simulate(scene)
    rest = -m * g * length - (m * g) ** 2 / (2 * k)
    ax = plots.energy_plot(result).axes[0]
    lines = lines_by_label(ax)
    np.testing.assert_array_equal(lines["kinetic"][1], result.energy["kinetic"])
    for key in ("potential", "total"):
        np.testing.assert_allclose(lines[key][1], result.energy[key] - rest, rtol=0, atol=1e-9)
    # released at rest from the unstretched spring: all of ½ (mg)²/k is above rest, and it stays
    assert lines["total"][1][0] == pytest.approx(0.5 * (m * g) ** 2 / k, rel=1e-9)
    assert lines["potential"][1].min() > -1e-9
    assert ax.get_ylabel() == "energy above rest (static equilibrium) [J]"


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


def test_snapshots_share_one_scale_unless_a_frame_would_be_a_speck(spring):
    """spring1d's frames compare on one scale; a pair of particles dropped 5 m onto the ground is
    drawn fitted to each frame (its 0.1 m would be a speck on the 5 m drop), ground included, the
    flat panels wider than the tall one."""
    shared = plots.snapshot_plot(spring)
    assert "own scale" not in shared._suptitle.get_text()
    assert len({ax.get_xlim() for ax in shared.axes}) == 1
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    b.add_particle((0.0, 5.0), mass=1.0)
    b.add_particle((0.1, 5.0), mass=1.0)
    b.add_spring(0, 1, stiffness=1e3)
    b.add_plane((0.0, 1.0), (0.0, 0.0), friction=0.5)
    drop = hooke.simulate(hooke.Scene(b.finalize(), integrator="implicit_euler", dt=0.01,
                                      t_end=1.5), save_every=5)
    fitted = plots.snapshot_plot(drop)
    assert fitted._suptitle.get_text().endswith("(each panel at its own scale)")
    first, last = fitted.axes[0], fitted.axes[-1]
    assert first.get_ylim()[0] < 0 < 5.0 < first.get_ylim()[1]  # the start, and the ground below
    assert last.get_ylim()[1] - last.get_ylim()[0] < 0.5  # the pair on the ground, close up
    assert last.get_position().width > first.get_position().width


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


def frame_delays(path) -> tuple[list[int], object]:
    """Each GIF frame's delay [ms] and the file's loop count, as Pillow reads them."""
    from PIL import Image

    with Image.open(path) as image:
        delays = []
        for k in range(image.n_frames):
            image.seek(k)
            delays.append(image.info["duration"])
        return delays, image.info.get("loop")


def test_gif_durations_round_to_hundredths_and_keep_the_total():
    assert gif_durations(3, 30) == [30, 40, 30]  # 1/30 s = 3.33 cs: ends at 3, 7, 10 cs
    assert gif_durations(5, 12) == [80, 90, 80, 80, 90]  # ends at 8, 17, 25, 33, 42 cs
    assert gif_durations(4, 25) == [40] * 4
    for fps in (7.0, 12.0, 24.0, 29.97, 30.0, 50.0):
        delays = gif_durations(300, fps)
        assert abs(sum(delays) - 300 * 1000 / fps) <= 5 and min(delays) >= 20


def test_a_gif_plays_at_its_fps_and_loops_and_an_mp4_stores_its_fps(tmp_path):
    """The chain swings (every frame differs, so Pillow merges none): the GIF's delays read back
    are 1/fps in whole hundredths, looping forever; the mp4's container says its fps."""
    result = hooke.simulate(hooke.scene("chain"), t_end=1.0, save_every=5)
    for fps in (30.0, 12.0):
        path = animate(result, tmp_path / f"chain{fps:g}.gif", fps=fps)
        delays, loop = frame_delays(path)
        count = len(frame_indices(result.t, fps, None))
        assert count == fps  # 1 s of real time
        assert delays == gif_durations(count, fps) and loop == 0
        assert sum(delays) == 1000
    assert set(frame_delays(tmp_path / "chain30.gif")[0]) == {30, 40}
    path = animate(result, tmp_path / "chain.mp4", fps=20)
    assert imageio.get_reader(path).get_meta_data()["fps"] == 20
    with pytest.raises(HookeInputError, match=r"^fps: must be <= 50 for a GIF .*; use an .mp4, got 60$"):
        animate(result, tmp_path / "fast.gif", fps=60)


def test_a_gif_slower_than_its_16_bit_frame_delay_is_refused_and_the_slowest_one_plays(tmp_path):
    """A GIF frame lasts at most 65535 hundredths of a second: ``--fps 1e-5`` raised an
    OverflowError ("a bug in hooke", the confirmation pass of issue 15); now one line naming fps,
    and the slowest fps a GIF holds writes frames of 100/fps hundredths."""
    result = hooke.simulate(hooke.scene("spring1d"), t_end=0.5)
    with pytest.raises(HookeInputError, match=r"^fps: must be >= 0.00153 for a GIF \(a GIF frame "
                       r"lasts at most 655.35 s\); use an .mp4, got 1e-05$"):
        animate(result, tmp_path / "slow.gif", fps=1e-5)
    assert not (tmp_path / "slow.gif").exists()
    path = animate(result, tmp_path / "slowest.gif", fps=GIF_MIN_FPS)
    assert frame_delays(path)[0] == [655340, 655340]  # the first and last frames, 1/fps each


def test_an_mp4_slower_than_ffmpeg_takes_is_refused_and_the_slowest_one_plays(tmp_path):
    """``--fps 1e-9 --out m.mp4`` reached ffmpeg as a rate of 0 and ended in a dozen lines of
    its output (exit 1); 1e-6 wrote a broken movie without an error. Now one line naming fps;
    the slowest fps an mp4 takes is stored as it is."""
    import imageio.v2 as imageio

    from hooke.viz.animate import MP4_MIN_FPS

    result = hooke.simulate(hooke.scene("spring1d"), t_end=0.5)
    for fps in (1e-9, 1e-6):
        with pytest.raises(HookeInputError) as refused:
            animate(result, tmp_path / "slow.mp4", fps=fps)
        assert str(refused.value) == (f"fps: must be >= 0.0001 for an mp4 (a frame lasts at most "
                                      f"10⁴ s: ffmpeg fails to store a slower rate), got {fps!r}")
    assert not (tmp_path / "slow.mp4").exists()
    path = animate(result, tmp_path / "slowest.mp4", fps=MP4_MIN_FPS)
    assert imageio.get_reader(path).get_meta_data()["fps"] == pytest.approx(MP4_MIN_FPS)


def test_snapshots_label_their_axes_in_metres_and_3d_text_fits(monkeypatch):
    """2D and 1D axes say x [m] (and y [m]); 3D ones x, y, z [m], and as drawn (each text's box
    taken while Matplotlib draws it: 3D tick labels are placed only then) no two tick labels of
    an axis overlap and no tick or axis label reaches outside the figure."""
    from itertools import combinations

    from matplotlib.text import Text

    square = plots.snapshot_plot(hooke.simulate(hooke.scene("square_drop"), t_end=0.05))
    assert {(ax.get_xlabel(), ax.get_ylabel()) for ax in square.axes} == {("x [m]", "y [m]")}
    spring1d = plots.snapshot_plot(hooke.simulate(hooke.scene("spring1d"), t_end=0.05))
    assert {ax.get_xlabel() for ax in spring1d.axes} == {"x [m]"}
    for name in ("top", "cloth_drop"):
        fig = plots.snapshot_plot(hooke.simulate(hooke.scene(name), t_end=0.3, save_every=10))
        drawn, draw = {}, Text.draw

        def record(text, renderer):
            draw(text, renderer)
            if text.get_visible() and text.get_text():
                drawn[id(text)] = text.get_window_extent(renderer)

        monkeypatch.setattr(Text, "draw", record)
        fig.canvas.draw()
        monkeypatch.setattr(Text, "draw", draw)
        for ax in fig.axes:
            assert [ax.get_xlabel(), ax.get_ylabel(), ax.get_zlabel()] == [
                f"{axis} [m]" for axis in ("xzy" if name == "cloth_drop" else "xyz")]
            for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
                boxes = [drawn[id(tick.label1)] for tick in axis.majorTicks if id(tick.label1) in drawn]
                assert len(boxes) >= 2
                assert not any(a.overlaps(b) for a, b in combinations(boxes, 2))
                for box in [*boxes, drawn[id(axis.label)]]:
                    assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1
                    assert fig.bbox.y0 <= box.y0 and box.y1 <= fig.bbox.y1


def test_a_3d_body_with_cells_is_drawn_as_a_lit_surface():
    """A small block of tetrahedra: its boundary triangles, one polygon each, shaded by their
    direction (the box's three visible orientations give at least three shades), drawn in place
    of the springs; a body without cells (the top) keeps its particles and lines."""
    from mpl_toolkits.mplot3d.art3d import Line3DCollection, Poly3DCollection

    result = hooke.simulate(hooke.scene("lattice", nx=3, ny=3, nz=3), t_end=0.01)
    fig = plots.snapshot_plot(result, n_snapshots=1)
    fig.canvas.draw()  # a 3D collection has its 2D paths once projected
    ax = fig.axes[0]
    (surface,) = [c for c in ax.collections if isinstance(c, Poly3DCollection)]
    assert len(surface.get_paths()) == len(result.scene.model.surface_triangles()) == 2 * 6 * 4
    assert len(np.unique(surface.get_facecolor().round(3), axis=0)) >= 3
    assert not [c for c in ax.collections if isinstance(c, Line3DCollection)]
    top = plots.snapshot_plot(hooke.simulate(hooke.scene("top"), t_end=0.01), n_snapshots=1).axes[0]
    assert not [c for c in top.collections if isinstance(c, Poly3DCollection)]
    assert [c for c in top.collections if isinstance(c, Line3DCollection)]


def test_cli_animate_reports_progress_in_frames(tmp_path, progress_bars):
    """``hooke animate`` feeds ``hooke run``'s LazyProgress (shown on a terminal after a second),
    counting frames."""
    hooke.simulate(hooke.scene("chain"), t_end=0.5, save_every=10, store=tmp_path / "trajectory.h5")
    done = CliRunner().invoke(app, ["animate", str(tmp_path), "--out", str(tmp_path / "chain.gif"),
                                    "--fps", "20"])
    assert done.exit_code == 0, done.output
    assert progress_bars == [("animate", "frames", k, 10) for k in range(1, 11)]  # 0.5 s at 20 fps


def test_a_movie_lasts_what_it_is_asked_and_one_too_long_is_refused(tmp_path):
    """Issue 15 (second red-team pass): `hooke animate --fps 1e9 --out m.mp4` wrote the run's
    101 saved frames at 1e9 fps (a movie of 0.1 µs, exit 0); `--duration 2` of a run with 6 saved
    frames made a 0.6 s GIF; `animate(duration=-1)` a 2-frame one; `--duration 1e9` would render
    every saved frame into a GIF held in memory. Now a saved frame is held where the run saved
    fewer, so the movie lasts what was asked, and a movie beyond MAX_MOVIE_FRAMES (a GIF beyond
    GIF_MAX_FRAMES) is refused, naming fps or duration."""
    result = hooke.simulate(hooke.scene("spring1d"), t_end=0.5, save_every=20)
    assert len(result.t) == 6  # t = 0, 0.1, …, 0.5
    shown = frame_indices(result.t, 10, 2.0)
    assert len(shown) == 20 and np.all(np.diff(shown) >= 0) and set(shown) == set(range(6))
    path = animate(result, tmp_path / "held.gif", fps=10, duration=2.0)
    assert sum(frame_delays(path)[0]) == 2000
    from hooke.viz.animate import GIF_MAX_FRAMES, MAX_MOVIE_FRAMES

    for call, message in [
        (dict(fps=1e9), f"fps: the movie would have 5e+08 frames (1e+09 fps for 0.5 s), more than "
                        f"the {MAX_MOVIE_FRAMES:,} a movie may have: choose a lower fps or a "
                        "shorter duration, got 1000000000.0"),
        (dict(duration=1e9), "duration: the movie would have 3e+10 frames (30 fps for 1e+09 s)"),
        (dict(duration=-1.0), "duration: must be None (real time) or a number > 0 [s], got -1.0"),
        (dict(duration="2"), "duration: must be None (real time) or a number > 0 [s], got '2'"),
        (dict(fps="30"), "fps: must be a number > 0, got '30'")]:
        with pytest.raises(HookeInputError) as refused:
            animate(result, tmp_path / "refused.mp4", **call)
        assert str(refused.value).startswith(message), str(refused.value)
    with pytest.raises(HookeInputError, match=f"^duration: a GIF would have 2,500 frames, more "
                                              f"than the {GIF_MAX_FRAMES:,} a GIF may have"):
        animate(result, tmp_path / "long.gif", fps=50, duration=50.0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["held.gif"]


def test_every_plot_kind_names_its_own_function():
    """``hooke.viz.PLOT_KINDS`` (the names a run checks without Matplotlib) pairs with PLOTS."""
    from hooke.viz import PLOT_KINDS

    assert {kind: function.__name__ for kind, function in plots.PLOTS.items()} == {
        kind: f"{kind}_plot" for kind in PLOT_KINDS}


def test_a_kind_given_twice_is_drawn_once(tmp_path, monkeypatch):
    """Issue 15 (confirmation pass, stop 28): `hooke plot DIR -k energy -k energy` drew
    energy.png twice and printed 'wrote …/energy.png' twice; a kind is drawn once, as `hooke
    export -f vtu -f vtu` writes its frames once."""
    hooke.simulate(hooke.scene("spring1d"), t_end=0.1, store=tmp_path / "trajectory.h5")
    drawn = []
    original = plots.finish
    monkeypatch.setattr(plots, "finish", lambda fig, path: (drawn.append(path.name),
                                                            original(fig, path))[1])
    done = CliRunner().invoke(app, ["plot", str(tmp_path), "-k", "energy", "-k", "energy"])
    assert done.exit_code == 0, done.output
    assert drawn == ["energy.png"] and done.stdout.count("wrote") == 1, done.stdout
