"""An observed motion beside the simulated one in the viewer (issue 18 §3), without a browser:
the interpolation in time, the session's messages, the server's checks and ``hooke serve
--observed``'s errors. tests/test_viewer.py looks at the drawing in a real browser."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import hooke
from hooke.cli import app
from hooke.errors import HookeInputError
from hooke.viz.web import server
from hooke.viz.web.observed import ObservedMotion, ObservedOverlay
from hooke.viz.web.protocol import parse_command
from hooke.viz.web.session import Session


def write_csv(path: Path, times, particles, positions) -> Path:
    """A CSV as ``hooke fit --observed`` reads it: one row per (time, particle)."""
    axes = ["x", "y", "z"][:positions.shape[-1]]
    lines = [",".join(["t", "particle", *axes])]
    for t, row in zip(times, positions):
        for particle, p in zip(particles, row):
            lines.append(",".join([repr(float(t)), str(particle), *map(repr, map(float, p))]))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_positions_between_observed_times_are_linear_and_unseen_particles_are_left_out():
    t = np.array([0.0, 0.1, 0.3])
    x = np.array([[[0.0, 0.0], [1.0, 1.0]],
                  [[1.0, 2.0], [np.nan, np.nan]],
                  [[3.0, 2.0], [2.0, 2.0]]])
    motion = ObservedMotion("m", t, x)
    particles, positions = motion.at(0.2)        # half-way from 0.1 to 0.3: particle 1 unseen at 0.1
    assert particles.tolist() == [0] and np.allclose(positions, [[2.0, 2.0]], rtol=0, atol=1e-15)
    particles, positions = motion.at(0.025)      # a quarter of the way from 0 to 0.1
    assert particles.tolist() == [0] and np.allclose(positions, [[0.25, 0.5]], rtol=0, atol=1e-15)
    particles, positions = motion.at(0.0)        # at an observed time: that row, both seen
    assert particles.tolist() == [0, 1] and positions.tolist() == [[0.0, 0.0], [1.0, 1.0]]
    particles, positions = motion.at(0.3 + 1e-12)  # past the end by a step's round-off
    assert particles.tolist() == [0, 1] and positions.tolist() == [[3.0, 2.0], [2.0, 2.0]]
    for outside in (-1e-3, 0.31):
        particles, positions = motion.at(outside)
        assert particles.size == 0 and positions.shape == (0, 2)


def test_the_message_gives_the_rms_distance_of_the_simulated_particles():
    motion = ObservedMotion("m", np.array([0.0]), np.array([[[0.0, 0.0], [np.nan, np.nan], [3.0, 0.0]]]))
    simulated = np.array([[3.0, 4.0], [9.0, 9.0], [3.0, 0.0]])
    message = motion.message(0.0, simulated)
    assert message["particles"] == [0, 2]
    assert message["rms"] == pytest.approx(np.sqrt((25.0 + 0.0) / 2), rel=1e-15)
    assert motion.message(1.0, simulated) == {"particles": [], "x": [], "rms": None}


@pytest.fixture
def spring_csv(tmp_path) -> Path:
    """spring1d's free particle, its closed-form motion shifted by 0.1 m, every 0.01 s to 3 s."""
    scene = hooke.scene("spring1d")
    times = np.round(np.arange(0.0, 3.0 + 1e-9, 0.01), 10)
    return write_csv(tmp_path / "spring.csv", times, [1], scene.analytic(times)[:, [1], :] + 0.1)


def test_a_session_sends_the_observed_positions_at_each_frame_time(spring_csv):
    session = Session("spring1d", observed=ObservedOverlay("spring1d", spring_csv))
    opening = session.scene_message()
    assert opening["observed"] == {"name": "spring.csv", "t": [0.0, 3.0]}
    assert opening["observed_note"] is None
    analytic = session.scene.analytic
    model = session.scene.model
    swing = analytic(np.linspace(0.0, 3.0, 3001))[:, 1, 0]
    # linear in time between rows 0.01 s apart: within h²/8·max|x''| = h²/8·ω²·amplitude of the
    # closed form
    amplitude = (swing.max() - swing.min()) / 2
    bound = 0.01 ** 2 / 8 * model.spring_stiffness[0] / model.mass[1] * amplitude * 1.001
    for _ in range(5):
        frames = [m for m in session.tick() if m["type"] == "frame"]
        frame = frames[-1]
        observed, t = frame["observed"], frame["t"]
        assert observed["particles"] == [1]
        assert abs(observed["x"][0][0] - (analytic(np.array([t]))[0, 1, 0] + 0.1)) < bound
        assert observed["rms"] == pytest.approx(abs(session.state.x[1, 0] - observed["x"][0][0]),
                                                rel=1e-12)


def test_another_scene_or_another_particle_count_says_why_nothing_is_drawn(tmp_path):
    cloth = hooke.scene("cloth2d")
    times = np.array([0.0, 0.5])
    path = write_csv(tmp_path / "cloth.csv", times, [0], np.zeros((2, 1, 2)))
    overlay = ObservedOverlay("cloth2d", path)
    overlay.check()
    other = Session("spring1d", observed=overlay).scene_message()
    assert other["observed"] is None and "belongs to scene 'cloth2d'" in other["observed_note"]
    n = cloth.model.n_particles
    write_csv(path, times, [n - 1], np.zeros((2, 1, 2)))  # the last particle of the default cloth
    session = Session("cloth2d", observed=overlay)
    assert session.scene_message()["observed"] is not None
    smaller = {"type": "restart", "integrator": session.integrator, "dt": session.dt,
               "parameters": {"nx": 4, "ny": 4}}
    replies = session.tick([parse_command(json.dumps(smaller))])
    [scene] = [m for m in replies if m["type"] == "scene"]
    assert scene["observed"] is None and "particle" in scene["observed_note"]
    assert all("observed" not in m for m in replies if m["type"] == "frame")


def test_an_observed_file_that_does_not_fit_the_scene_is_refused_before_serving(tmp_path, spring_csv):
    with pytest.raises(HookeInputError, match="observed"):
        server.create_app("spring1d", observed=tmp_path / "missing.csv")
    with pytest.raises(HookeInputError, match=r"particle.*7|7.*particle"):
        server.create_app("spring1d", observed=write_csv(tmp_path / "far.csv", [0.0], [7],
                                                          np.zeros((1, 1, 1))))
    with pytest.raises(HookeInputError, match="column"):  # 2D positions for a 1D scene
        server.create_app("spring1d", observed=write_csv(tmp_path / "2d.csv", [0.0], [1],
                                                          np.zeros((1, 1, 2))))
    assert server.create_app("spring1d", observed=spring_csv) is not None


def test_hooke_serve_with_a_bad_observed_file_is_one_line_and_exit_2(tmp_path):
    result = CliRunner().invoke(app, ["serve", "spring1d", "--observed", str(tmp_path / "none.csv")])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "observed" in lines[0] and "none.csv" in lines[0], result.output


def test_a_file_name_with_a_newline_or_an_escape_keeps_the_error_on_one_line(
        monkeypatch, capsys, tmp_path):
    """Issue 15 (red team): `hooke serve --observed $'obs\\nx.csv'` (a file with no rows) printed
    its one error across two lines, "error: observed obs" then "error: x.csv: has no rows…", as
    did every message naming a path the command line prints (`hooke run`'s stop line, its notes,
    `hooke sweep`'s failures); a carriage return or a terminal's escape sequence in one was
    obeyed, not shown. Each is one line, the character written as repr writes it."""
    import typer

    from conftest import run_main
    from hooke.cli_stop import stopped

    for name, shown in (("obs\nx.csv", "obs\\nx.csv"), ("obs\r\x1b[2Jx.csv", "obs\\r\\x1b[2Jx.csv")):
        (tmp_path / name).write_text("t,particle,x\n")
        code, lines = run_main(monkeypatch, capsys, "serve", "spring1d", "--observed",
                               str(tmp_path / name))
        assert code == 2 and len(lines) == 1, lines
        assert lines[0].startswith(f"error: --observed {shown}: has no rows of data, got "), lines
    with pytest.raises(typer.Exit):
        stopped(KeyboardInterrupt(), tmp_path / "a\nb")
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"error: interrupted before the first frame was written; {tmp_path}/a\\nb is "
                     "left as it was"], lines
