"""The notebooks' live 3D view with sliders (hooke.viz.notebook, issue 17 §5), driven as a
notebook cell drives it: the widget's values set from code, the figure's traces read back."""

from __future__ import annotations

import html
import math
import sys

import numpy as np
import pytest

import hooke
from hooke.errors import HookeInputError
from hooke.viz.notebook import as_3d, live_view, segments, sphere_mesh


def traces(view) -> dict:
    return {trace.name: trace for trace in view.figure.data}


def points(trace) -> np.ndarray:
    return np.stack([np.asarray(trace.x, dtype=float), np.asarray(trace.y, dtype=float),
                     np.asarray(trace.z, dtype=float)], axis=1)


def test_playing_steps_hooke_runs_steps_and_moves_the_drawn_surface():
    view = live_view("cloth_drop", steps_per_frame=4)
    scene = hooke.scene("cloth_drop")
    surface = traces(view)["surface"]
    assert len(surface.i) == len(scene.model.surface_triangles())
    view.play.value += 1          # the Play button's tick: one frame
    view.advance(2)               # and two more from code
    assert view.session.steps == 12
    expected = hooke.simulate(scene, t_end=12 * scene.dt, save_every=12)
    assert np.array_equal(view.state.x, expected.x[-1])  # the steps of `hooke run`, bit for bit
    assert np.array_equal(points(traces(view)["surface"]), view.state.x)
    assert f"t = {view.state.t:.3f} s" in view.readout.value and "12 steps" in view.readout.value


def test_a_slider_restarts_the_run_with_its_value():
    view = live_view("cloth_drop")
    view.advance(1)
    [nx] = [slider for slider in view.sliders.children if slider.description == "nx"]
    nz = next(slider.value for slider in view.sliders.children if slider.description == "nz")
    nx.value = 8
    assert view.state.t == 0.0 and view.session.steps == 0
    assert len(traces(view)["surface"].x) == 8 * nz == view.session.scene.model.n_particles
    [nx] = [slider for slider in view.sliders.children if slider.description == "nx"]
    assert nx.value == 8  # the new sliders show the run's values
    [stiffness] = [slider for slider in view.sliders.children if slider.description == "stiffness"]
    assert stiffness.min == pytest.approx(np.log10(500.0) - 1)  # a decade either side
    stiffness.value = 5000.0
    assert view.session.scene.model.spring_stiffness[0] == pytest.approx(5000.0)


def test_a_refused_change_says_why_and_the_run_goes_on():
    view = live_view("cloth_drop")
    view.advance(1)
    steps = view.session.steps
    view.integrator.value = "xpbd"   # has no contact planes
    assert "xpbd" in view.message.value and "contact planes" in view.message.value
    assert view.integrator.value == view.session.integrator == "implicit_euler"
    view.advance(1)
    assert view.session.steps > steps
    [damping] = [slider for slider in view.sliders.children if slider.description == "damping"]
    assert damping.min == 0.0        # a slider stops at the builder's bound; from code:
    view.restart(damping=-0.5)
    assert "damping" in view.message.value and "-0.5" in view.message.value
    assert view.session.scene.model.spring_damping[0] == 0.0 and view.session.steps > steps


def test_plane_scenes_lie_in_z_0_and_joints_and_pins_are_drawn():
    view = live_view("jointed_chain")
    view.advance(3)
    drawn = traces(view)
    x = view.state.x
    assert set(drawn) == {"joints", "particles", "pinned"}
    joints = np.asarray(view.session.scene.model.joint_indices)
    xs, ys, zs = segments(as_3d(x), joints)
    assert list(drawn["joints"].x) == xs and list(drawn["joints"].y) == ys
    assert all(z in (0.0, None) for z in drawn["joints"].z)
    pinned = view.session.scene.model.pinned
    assert np.array_equal(points(drawn["pinned"])[:, :2], x[pinned])
    camera = view.figure.layout.scene.camera
    assert (camera.eye.x, camera.eye.y) == (0.0, 0.0) and camera.up.y == 1.0  # face on


def test_spheres_and_planes_are_drawn_and_the_3d_camera_looks_down_against_gravity():
    view = live_view("cloth_sphere")
    drawn = traces(view)
    [ball] = view.session.scene_message()["spheres"]
    sphere = points(drawn["sphere"])
    assert np.allclose(np.linalg.norm(sphere - ball["center"], axis=1), ball["radius"], rtol=1e-12)
    plane = points(drawn["plane"])
    assert np.allclose(plane[:, 1], 0.0)  # the ground y = 0
    camera = view.figure.layout.scene.camera
    assert camera.up.y == 1.0 and camera.eye.y > 0  # from above


def test_segments_and_the_sphere_mesh_are_what_they_say():
    x3 = np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    xs, ys, zs = segments(x3, [[0, 1], [2, 0]])
    assert xs == [0.0, 1.0, None, 4.0, 0.0, None] and zs == [0.0, 3.0, None, 6.0, 0.0, None]
    mesh = sphere_mesh([1.0, 2.0], 0.5, n=8)
    vertices = np.stack([mesh["x"], mesh["y"], mesh["z"]], axis=1)
    assert np.allclose(np.linalg.norm(vertices - [1.0, 2.0, 0.0], axis=1), 0.5)
    faces = np.stack([mesh["i"], mesh["j"], mesh["k"]], axis=1)
    assert faces.max() < len(vertices) and len(faces) == 2 * 7 * 15


def test_an_unknown_scene_is_one_error_naming_it():
    with pytest.raises(HookeInputError, match="nosuch"):
        live_view("nosuch")


def test_bad_arguments_and_values_are_one_line_and_a_blow_up_is_said_without_warnings():
    """Issue 15 (fourth pass): steps_per_frame=0, 10**9 or 2.5 were taken (a frame that never
    moved, a kernel frozen at its first frame); restart(stiffness=nan) raised pydantic's
    ValidationError; stiffness=1e308 built sliders up to 10**309 (OverflowError) over an
    analytic solution of NaN; a blown-up run printed NumPy's overflow warning."""
    import warnings

    with pytest.raises(HookeInputError) as refused:
        live_view("spring1d", steps_per_frame=2.5, height=0)
    assert str(refused.value) == ("steps_per_frame: must be an integer from 1 to 10000, got 2.5\n"
                                  "height: must be an integer from 1 to 10000, got 0")
    with pytest.raises(HookeInputError, match=r"^steps_per_frame: must be an integer from 1 to "
                                              r"10000, got 1000000000$"):
        live_view("spring1d", steps_per_frame=10 ** 9)
    view = live_view("spring1d")
    view.restart(stiffness=float("nan"))
    assert "parameters.stiffness: Input should be a finite number, got nan" in view.message.value
    view.restart(stiffness=1e308)
    assert html.escape("parameters.stiffness: over parameters.mass = 0.5 gives ω = √(k/m) = inf "
                       "rad/s; ω must be a finite number > 0, got 1e+308") in view.message.value
    view.restart(stiffness=1e307)  # ω = 4.5e153 rad/s: symplectic Euler blows up at step 2
    assert view.message.value == "" and view.session.scene.model.spring_stiffness[0] == 1e307
    [stiffness] = [s for s in view.sliders.children if s.description == "stiffness"]
    assert 307 < stiffness.max <= math.log10(sys.float_info.max)  # 10**max is a float
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        view.advance(3)
    assert "the state became non-finite at step 2" in view.message.value


def test_a_parameter_near_the_largest_float_builds_its_slider_and_advance_refuses_bad_counts():
    """Issue 15 (confirmation pass): restart(mass=1e308) on a scene whose mass slider spans a
    decade up raised OverflowError from ipywidgets (10**log10(float max) overflows) with the
    run already restarted and its sliders half built; advance(-1) did nothing and said nothing,
    advance(2.5) raised Python's TypeError."""
    view = live_view("spring1d")
    view.restart(mass=1e308)
    assert view.message.value == "" and view.session.scene.model.mass[-1] == 1e308
    [mass] = [s for s in view.sliders.children if s.description == "mass"]
    assert 10.0 ** mass.max >= 1e308 and mass.value >= 1e308
    for frames in (-1, 2.5, "3", None):
        with pytest.raises(HookeInputError, match=r"^frames: must be an integer >= 0, got "):
            view.advance(frames)
    steps = view.session.steps
    view.advance(0)
    assert view.session.steps == steps


def test_advance_of_more_steps_than_a_run_has_is_refused_at_once():
    """Issue 15 (confirmation pass, stop 28): view.advance(10**400) stepped until the kernel
    was interrupted (a hang: 10**400 frames); a call of more than MAX_STEPS steps (frames ×
    steps_per_frame), the most a run has, is refused before any step, as simulate refuses such
    a t_end."""
    import time

    from hooke.limits import MAX_STEPS

    view = live_view("spring1d", steps_per_frame=5)
    steps = view.session.steps
    started = time.perf_counter()
    for frames in (10**400, MAX_STEPS // 5 + 1):
        with pytest.raises(HookeInputError) as error:
            view.advance(frames)
        assert str(error.value) == (
            f"frames: {frames} frames of 5 steps are more than the 1e+08 steps a run has, got "
            f"{frames}")
    assert time.perf_counter() - started < 5.0 and view.session.steps == steps


@pytest.mark.parametrize("scene", [np.array([]), np.array(["spring1d"]), 5])
def test_a_scene_that_is_not_a_name_is_one_error_naming_it(scene):
    """Issue 15 (confirmation pass, stop 28): live_view(np.array([])) was a raw ValueError,
    'The truth value of an empty array is ambiguous', from the scene's membership test."""
    with pytest.raises(HookeInputError) as error:
        live_view(scene)
    assert str(error.value).startswith("scene: unknown scene (built-in: ")


def test_an_error_naming_user_text_is_shown_as_text_not_html():
    """Issue 15 (red team): the view's error line was HTML made with the message as it was, so a
    parameter name given from code, ``view.restart(**{"<b>x</b>": 1.0})``, was drawn bold and a
    ``<script>`` one was markup of the notebook's page; it is escaped (html.escape)."""
    view = live_view("spring1d")
    view.restart(**{"<b>x</b>": 1.0, "<script>": 2.0})
    assert "<b>" not in view.message.value and "<script>" not in view.message.value
    assert "parameters.&lt;b&gt;x&lt;/b&gt;: is not a parameter of scene" in view.message.value


def test_an_integrator_the_menu_does_not_offer_is_one_line_and_the_run_goes_on(monkeypatch):
    """Issue 15 (red team): ``view.integrator.value = "nosuch"`` (or 5, or an index or label
    out of the menu) raised traitlets' TraitError "Invalid selection: value not found" out of
    the cell; an integrator registered after the view was made was refused so too. Each is the
    view's one-line error naming the integrator and the value, and the menu keeps the running
    integrator."""
    from hooke.integrators import base

    view = live_view("spring1d")
    running = view.session.integrator
    menu = view.integrator
    for trait, value, line in [
            ("value", "<script>", "integrator: unknown integrator (known: "),
            ("value", 5, "integrator: unknown integrator (known: "),
            ("label", "nosuch", "integrator: unknown integrator (known: "),
            ("index", 99, f"integrator.index: must be an integer from 0 to {len(menu.options) - 1}"),
            ("index", "x", "integrator.index: must be an integer from 0 to ")]:
        setattr(menu, trait, value)
        assert line in view.message.value and "<script>" not in view.message.value, view.message.value
        assert menu.value == view.session.integrator == running
    monkeypatch.setitem(base._REGISTRY, "later", base.get("rk4"))
    menu.value = "later"
    assert view.message.value == ("<span style='color:#b00020'>integrator: was registered after "
                                  "this view was made; a new live_view offers it, got "
                                  "&#x27;later&#x27;</span>")
    menu.value = "rk4"  # the menu still works, and the run goes on
    steps = view.session.steps
    view.advance(1)
    assert view.message.value == "" and view.session.integrator == "rk4"
    assert view.session.steps > steps


def test_a_parameter_name_of_60000_characters_is_cut_short_in_the_error():
    """Issue 15 red team (redI): restart(**{60,000-character name: 1}) showed the name whole,
    twice with a bad value (a 121 KB line under the view)."""
    view = live_view("spring1d")
    view.restart(**{"k" * 60_000: "x"})
    shown = html.unescape(view.message.value)
    assert f"parameters.{'k' * 80}… (60,000 characters): String should have at most 100 " \
           "characters, got 'k" in shown
    assert len(shown) < 2_500 and view.state.t == 0.0 and view.session.scene.name == "spring1d"


def test_a_run_whose_energy_overflows_from_its_start_restarts_without_numpy_warnings():
    """Issue 15 red team (redI): restart(mass=1e300, v0=1e100) (a kinetic energy of 5e499 J)
    printed NumPy's "overflow encountered in multiply" three times in the cell; advance had
    been made quiet, a restart had not."""
    import warnings

    view = live_view("spring1d")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        view.restart(mass=1e300, v0=1e100)
        view.advance(1)
    assert view.message.value == "" and view.session.scene.model.mass[-1] == 1e300
    assert "total energy inf J" in view.readout.value and view.session.steps == 8
