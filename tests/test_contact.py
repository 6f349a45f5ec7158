"""Contact in whole simulations: the contact scenes, the book's square drop, free fall, friction on
a slope, a moving ceiling, the line search, scene files and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import hooke
from hooke.integrators.implicit import ROUND_OFF
from hooke.energies import barrier
from hooke.errors import HookeInputError, SimulationError
from hooke.integrators import get as get_integrator
from hooke.motion import ConstantVelocity

G = 9.81
CONTACT_SCENES = {  # scene: t_end for the test (None: the scene's own)
    "square_drop": None, "square_slope": None, "square_compress": None,
    "cloth_drop": 0.6, "soft3d_drop": 0.35,
}


def all_distances(model, x, t):
    """(n_contact, q) signed distances of the contact particles to the planes at time t."""
    offsets = barrier.plane_offsets(model, t)
    return (x @ model.plane_normals.T - offsets[None, :])[model.contact_area > 0]


@pytest.fixture(scope="module")
def runs():
    """Each contact scene run once (shared by the tests below)."""
    cache = {}

    def run(name):
        if name not in cache:
            scene = hooke.scene(name)
            cache[name] = hooke.simulate(scene, t_end=CONTACT_SCENES[name] or scene.t_end)
        return cache[name]
    return run


@pytest.mark.parametrize("name", list(CONTACT_SCENES))
def test_no_particle_ever_reaches_a_plane(runs, name):
    result = runs(name)
    model = result.scene.model
    assert result.complete
    for x, t, reported in zip(result.x, result.t, result.contact_distance):
        d = all_distances(model, x, t)
        assert np.all(d > 0.0), f"{name}: a particle reached a plane at t = {t}"
        assert reported == pytest.approx(d.min(), rel=1e-12)
    assert result.contact_distance.min() < model.contact_dhat  # contact did happen


@pytest.mark.parametrize("name", ["square_slope", "square_compress"])
def test_no_newton_trial_crosses_a_plane(monkeypatch, name):
    """Every configuration the line search evaluates lies strictly inside every half-space."""
    seen = []
    original = barrier.PlaneBarrier.value

    def spy(self, model, x):
        seen.append(float((x @ model.plane_normals.T - self.offsets)[model.contact_area > 0].min()))
        return original(self, model, x)

    monkeypatch.setattr(barrier.PlaneBarrier, "value", spy)
    hooke.simulate(hooke.scene(name), t_end=1.5)
    assert len(seen) > 100 and min(seen) > 0.0


def test_square_drop_reproduces_the_book(runs):
    result = runs("square_drop")
    model, dhat = result.scene.model, result.scene.model.contact_dhat
    assert (model.n_particles, model.n_springs) == (25, 72)
    assert np.allclose(model.mass, 40.0) and model.spring_energy == "squared_length"
    first_contact = int(np.argmax(result.contact_distance < dhat))
    assert first_contact == 32  # the book: first touch near step 32
    height = result.x[:, :, 1].max(axis=1) - result.x[:, :, 1].min(axis=1)
    squeezed = int(np.argmin(height))
    assert first_contact < squeezed < 100 and height[squeezed] < 0.8  # maximum compression
    assert result.energy["kinetic"][-50:].max() == 0.0  # at rest (Newton no longer moves)
    assert 0 < result.contact_distance[-1] < dhat
    np.testing.assert_allclose(result.x[-1, :, 0].mean(), 0.0, atol=1e-10)  # stays symmetric


def test_free_fall_matches_backward_euler_closed_form(runs):
    # Backward Euler under constant g: v_n = v0 + n h g, x_n = x0 + h Σ_{k=1..n} v_k.
    result = runs("square_drop")
    h, x0 = result.dt, result.x[0]
    n = np.arange(32)
    drop = h * h * G * n * (n + 1) / 2
    expected = x0[None, :, :] - np.stack([np.zeros_like(drop), drop], axis=1)[:, None, :]
    np.testing.assert_allclose(result.x[:32], expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.v[:32, :, 1], -(n * h * G)[:, None] * np.ones(25), atol=1e-10)


def test_incremental_potential_decreases_at_every_newton_step():
    for name in ("square_drop", "square_slope", "square_compress"):
        scene = hooke.scene(name)
        stepper = get_integrator("implicit_euler")(hooke.System(scene.model), scene.dt)
        state, multi = scene.state, 0
        for _ in range(150):
            state = stepper.step(state)
            energies = np.array(stepper.step_energies)
            # never increases, up to the round-off band where steps are judged by the gradient
            band = ROUND_OFF * np.abs(energies[:-1])
            assert np.all(np.diff(energies) <= band), name
            multi += energies.size > 2
        assert multi > 5  # contact steps need several Newton iterations


def block_on_slope(mu: float, slope: float = 0.5, dt: float = 0.01):
    """A stiff 2×2-node square block of side 0.2 resting on a slope of gradient ``slope``."""
    theta = np.arctan(slope)
    normal = np.array([-np.sin(theta), np.cos(theta)])
    tangent = np.array([np.cos(theta), np.sin(theta)])  # uphill
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -G))
    lift = 0.004  # inside d̂ = 0.01: in contact from the first step
    for i in range(2):
        for j in range(2):
            b.add_particle(0.2 * i * tangent + (lift + 0.2 * j) * normal, mass=1.0)
    for i, j in [(0, 1), (0, 2), (1, 3), (2, 3), (0, 3), (1, 2)]:
        b.add_spring(i, j, stiffness=1e5)
    b.add_plane(normal, (0.0, 0.0), friction=mu)
    b.set_contact(dhat=0.01, kappa=1e5, area=0.1, epsv=1e-3)
    scene = hooke.Scene(b.finalize(), integrator="implicit_euler", dt=dt, t_end=2.0,
                        options={"tol": 1e-6})
    return scene, theta, tangent


def test_block_with_mu_above_tan_theta_stays_put():
    scene, theta, tangent = block_on_slope(mu=0.6)
    result = hooke.simulate(scene)
    along = result.x.mean(axis=1) @ tangent
    creep = abs(along[-1] - along[100])  # after settling, over 1 s
    assert creep < 1e-3  # below ε_v · 1 s: static friction up to the smoothing's creep


def test_block_with_mu_below_tan_theta_slides_with_coulomb_acceleration():
    mu = 0.2
    scene, theta, tangent = block_on_slope(mu=mu)
    result = hooke.simulate(scene)
    speed = result.v.mean(axis=1) @ tangent
    acceleration = -(speed[-1] - speed[100]) / (result.t[-1] - result.t[100])
    expected = G * (np.sin(theta) - mu * np.cos(theta))
    assert acceleration == pytest.approx(expected, rel=1e-3)  # measured: 2e-7
    assert np.all(result.contact_distance > 0)


def test_square_slope_lands_slides_and_stops(runs):
    result = runs("square_slope")
    n = result.scene.model.plane_normals[0]
    tangent = np.array([n[1], -n[0]])  # downhill
    speed = result.v.mean(axis=1) @ tangent
    assert speed[100:400].min() > 0.1  # sliding down after landing
    assert np.all(np.abs(speed[-50:]) < 1e-12)  # μ = 0.11 > tan θ = 0.1: stopped for good


def test_ceiling_compresses_the_square_and_holds(runs):
    result = runs("square_compress")
    model = result.scene.model
    ceiling = -barrier.plane_offsets(model, result.t[-1])[1]
    assert ceiling == pytest.approx(-0.25)
    top, bottom = result.x[-1, :, 1].max(), result.x[-1, :, 1].min()
    assert 0 < ceiling - top < model.contact_dhat and 0 < bottom + 1.0 < model.contact_dhat
    assert top - bottom == pytest.approx(0.75, abs=0.02)
    assert result.energy["barrier"][-1] > 0


def test_planes_closing_on_a_particle_raise_a_simulation_error():
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -G))
    b.add_particle((0.0, 0.02))
    b.add_plane((0.0, 1.0), (0.0, 0.0))
    b.add_plane((0.0, -1.0), (0.0, 0.05), motion=ConstantVelocity((0.0, -1.0)))
    scene = hooke.Scene(b.finalize(), integrator="implicit_euler", dt=0.01, t_end=0.1)
    with pytest.raises(SimulationError, match="squeeze particle"):
        hooke.simulate(scene)


# -- scene files and bad input --------------------------------------------------------------------
EXPLICIT = """
dim = 2
gravity = [0.0, -9.81]
[[particles]]
x = [0.0, 0.5]
[[planes]]
normal = [0.0, 2.0]
point = [0.0, 0.0]
friction = 0.3
[contact]
dhat = 0.02
kappa = 1.0e4
area = 0.5
epsv = 1.0e-4
[run]
integrator = "implicit_euler"
dt = 0.01
t_end = 1.0
"""


def test_scene_file_planes_and_contact(tmp_path):
    path = tmp_path / "drop.toml"
    path.write_text(EXPLICIT)
    scene = hooke.load(path)
    m = scene.model
    assert m.plane_normals.tolist() == [[0.0, 1.0]] and m.plane_friction.tolist() == [0.3]
    assert (m.contact_dhat, m.contact_kappa, m.contact_epsv) == (0.02, 1e4, 1e-4)
    assert m.contact_area.tolist() == [0.5]
    result = hooke.simulate(scene)
    assert np.all(result.contact_distance > 0) and result.x[-1, 0, 1] < 0.02


@pytest.mark.parametrize("change, field", [
    ("dhat = 0.02", "contact.dhat"), ("kappa = 1.0e4", "contact.kappa"),
    ("friction = 0.3", "planes[0].friction"), ("epsv = 1.0e-4", "contact.epsv"),
])
def test_scene_file_rejects_non_positive_contact_settings(tmp_path, change, field):
    key = change.split(" = ")[0]
    path = tmp_path / "bad.toml"
    path.write_text(EXPLICIT.replace(change, f"{key} = -1.0"))
    with pytest.raises(HookeInputError) as error:
        hooke.load(path)
    assert str(error.value).startswith(f"{field}: ") and "-1.0" in str(error.value)


def test_scene_file_reports_a_penetrating_start(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(EXPLICIT.replace("x = [0.0, 0.5]", "x = [0.0, -0.5]"))
    with pytest.raises(HookeInputError, match=r"planes\[0\]: particle\(s\) 0 start on or below"):
        hooke.load(path)


def ground_builder(**contact):
    b = hooke.ModelBuilder(dim=2)
    b.add_particle((0.0, 0.5))
    b.add_particle((1.0, 0.5))
    b.add_plane((0.0, 1.0), (0.0, 0.0))
    if contact:
        b.set_contact(**contact)
    return b


@pytest.mark.parametrize("setting, value", [("dhat", 0.0), ("dhat", -0.01), ("kappa", 0.0),
                                            ("kappa", -1.0), ("epsv", 0.0), ("dhat", np.nan)])
def test_non_positive_barrier_settings_are_rejected(setting, value):
    with pytest.raises(HookeInputError, match=rf"^contact\.{setting}: must be"):
        ground_builder(**{setting: value})


def test_bad_planes_are_rejected():
    b = hooke.ModelBuilder(dim=2)
    b.add_particle((0.0, 0.5))
    with pytest.raises(HookeInputError, match=r"^planes\[0\]\.friction: must be >= 0, got -0\.1"):
        b.add_plane((0.0, 1.0), (0.0, 0.0), friction=-0.1)
    with pytest.raises(HookeInputError, match=r"^planes\[0\]\.normal: must be a non-zero vector"):
        b.add_plane((0.0, 0.0), (0.0, 0.0))
    with pytest.raises(HookeInputError, match=r"^planes\[0\]\.point: must have 2 component"):
        b.add_plane((0.0, 1.0), (0.0, 0.0, 0.0))
    with pytest.raises(HookeInputError, match=r"^contact\.area: must be finite and >= 0"):
        b.set_contact(area=-1.0)
    b.set_contact(area=[1.0, 2.0])
    b.add_plane((0.0, 1.0), (0.0, 0.0))
    with pytest.raises(HookeInputError, match=r"^contact\.area: must have one value per particle"):
        b.finalize()


def test_a_penetrating_start_names_the_particles():
    b = hooke.ModelBuilder(dim=2)
    for x in (0.0, 1.0, 2.0, 3.0):
        b.add_particle((x, 0.5 if x < 2 else 0.0 if x == 2 else -0.1))
    b.add_particle((5.0, -1.0), pinned=True)  # pinned particles take no part in contact
    b.add_plane((0.0, 1.0), (0.0, 0.0))
    with pytest.raises(HookeInputError, match=r"^planes\[0\]: particle\(s\) 2, 3 start on or below "
                                              r"the plane \(signed distance <= 0\), got \[0\.0, -0\.1\]$"):
        b.finalize()


def test_moving_pins_inside_the_implicit_solve_with_contact():
    """A pinned particle driven down through the ground (pinned particles take no part in contact)
    drags a free particle on a spring; the free one stops on the ground, the pin goes on exactly."""
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -G))
    driver = b.add_particle((0.0, 1.0), motion=ConstantVelocity((0.0, -1.0)))
    bob = b.add_particle((0.0, 0.5), mass=1.0)
    b.add_spring(driver, bob, stiffness=1e3)
    b.add_plane((0.0, 1.0), (0.0, 0.0))
    b.set_contact(dhat=0.01, kappa=1e4, area=1.0)
    scene = hooke.Scene(b.finalize(), integrator="implicit_euler", dt=0.01, t_end=2.0)
    result = hooke.simulate(scene)
    np.testing.assert_allclose(result.x[:, driver, 1], 1.0 - result.t, atol=1e-12)
    np.testing.assert_allclose(result.v[:, driver], [[0.0, -1.0]] * result.n_frames, atol=1e-12)
    assert result.x[-1, driver, 1] < -0.9 and np.all(result.x[:, bob, 1] > 0.0)
    assert np.all(result.contact_distance > 0) and result.contact_distance[-1] < 0.01
