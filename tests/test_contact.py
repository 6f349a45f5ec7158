"""Contact in whole simulations: the contact scenes, the book's square drop against a dense
reimplementation, free fall, friction on a slope, a moving ceiling, moving Dirichlet boundaries,
walls, the line search, which integrators take contact, scene files and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import hooke
from hooke.builder import add_contact
from hooke.energies import barrier
from hooke.integrators import implicit
from hooke.integrators.implicit import ROUND_OFF
from hooke.errors import HookeInputError, SimulationError
from hooke.integrators import get as get_integrator
from hooke.motion import ConstantVelocity

from conftest import run_main

G = 9.81
CONTACT_SCENES = {  # scene: t_end for the test (None: the scene's own)
    "square_drop": None, "square_slope": None, "square_compress": None, "square_press": None,
    "cloth_drop": 0.7, "cloth_valley": 0.6, "soft3d_drop": None,
}
SHORT_RUNS = {  # scene: steps that reach contact, for the tests that watch every Newton iteration
    "square_drop": 150, "square_slope": 150, "square_compress": 150, "square_press": 150,
    "cloth_drop": 40, "cloth_valley": 40, "soft3d_drop": 40,
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


def book_square_drop(steps: int) -> tuple[np.ndarray, np.ndarray]:
    """The book's square drop exactly as DESIGN.md §5 states it, densely in plain NumPy (no hooke):
    the positions of every frame (steps + 1, 25, 2) and the Newton iterations of every step."""
    n_seg, side, h, k, m, g, ground = 4, 1.0, 0.01, 2e4, 40.0, 9.81, -1.0
    dhat, kappa, area, tol = 0.01, 1e5, side / n_seg, 1e-2
    ij = np.array([(i, j) for i in range(n_seg + 1) for j in range(n_seg + 1)], dtype=float)
    x = -side / 2 + side / n_seg * ij  # node i·(n_seg + 1) + j
    n = x.shape[0]

    def node(i, j):
        return i * (n_seg + 1) + j

    edges = []
    for i in range(n_seg + 1):
        for j in range(n_seg):
            edges += [(node(i, j), node(i, j + 1)), (node(j, i), node(j + 1, i))]
    for i in range(n_seg):
        for j in range(n_seg):
            edges += [(node(i, j), node(i + 1, j + 1)), (node(i + 1, j), node(i, j + 1))]
    e = np.array(edges)
    l2 = np.sum((x[e[:, 1]] - x[e[:, 0]]) ** 2, axis=1)  # squared rest lengths
    dofs = np.concatenate([2 * e[:, :1] + [0, 1], 2 * e[:, 1:] + [0, 1]], axis=1)  # (s, 4)

    def potential(y, x_tilde):
        d = y[e[:, 1]] - y[e[:, 0]]
        strain = np.sum(d * d, axis=1) / l2 - 1
        gap = y[:, 1] - ground
        if np.any(gap <= 0):
            return np.inf
        s = np.minimum(gap / dhat, 1.0)  # ln 1 = 0: no barrier beyond d̂
        return (0.5 * m * np.sum((y - x_tilde) ** 2)
                + h * h * (np.sum(0.5 * k * l2 * strain ** 2) + np.sum(m * g * y[:, 1])
                           + np.sum(area * dhat * kappa / 2 * (s - 1) * np.log(s))))

    def newton_direction(y, x_tilde):
        d = y[e[:, 1]] - y[e[:, 0]]
        strain = np.sum(d * d, axis=1) / l2 - 1
        grad = m * (y - x_tilde)
        pull = h * h * 2 * k * strain[:, None] * d
        np.add.at(grad, e[:, 1], pull)
        np.add.at(grad, e[:, 0], -pull)
        grad[:, 1] += h * h * m * g
        local = (2 * k * strain[:, None, None] * np.eye(2)
                 + 4 * k / l2[:, None, None] * d[:, :, None] * d[:, None, :])
        w, q = np.linalg.eigh(np.block([[local, -local], [-local, local]]))  # each spring's 4×4
        psd = np.einsum("sab,sb,scb->sac", q, np.maximum(w, 0.0), q)
        hess = m * np.eye(2 * n)
        np.add.at(hess, (dofs[:, :, None], dofs[:, None, :]), h * h * psd)
        gap = y[:, 1] - ground
        near = np.flatnonzero(gap < dhat)
        s = gap[near] / dhat
        grad[near, 1] += h * h * area * kappa / 2 * (np.log(s) + (s - 1) / s)
        hess[2 * near + 1, 2 * near + 1] += h * h * area * kappa / (2 * dhat) * (1 / s + 1 / s ** 2)
        return -np.linalg.solve(hess, grad.reshape(-1)).reshape(n, 2)

    v = np.zeros_like(x)
    frames, iterations = [x], []
    for _ in range(steps):
        x_tilde = x + h * v
        y = x
        energy = potential(y, x_tilde)
        p = newton_direction(y, x_tilde)
        count = 0
        while np.linalg.norm(p, np.inf) / h > tol:  # the book's: the largest row sum, checked first
            down = p[:, 1] < 0
            alpha = min(1.0, 0.9 * np.min((ground - y[down, 1]) / p[down, 1], initial=np.inf))
            while potential(y + alpha * p, x_tilde) > energy:
                alpha /= 2
            y = y + alpha * p
            energy = potential(y, x_tilde)
            p = newton_direction(y, x_tilde)
            count += 1
        v, x = (y - x) / h, y
        frames.append(x)
        iterations.append(count)
    return np.array(frames), np.array(iterations)


def test_square_drop_matches_a_dense_reimplementation_of_the_book(runs):
    result = runs("square_drop")
    steps = result.n_frames - 1
    assert steps == 500
    reference, iterations = book_square_drop(steps)
    assert result.stats["newton_iterations"] == iterations.sum() == 387  # the book's own run: 387
    np.testing.assert_allclose(result.x, reference, rtol=0, atol=1e-13)  # measured: 3.6e-15
    assert int(np.argmax(reference[:, :, 1].min(axis=1) + 1.0 < 0.01)) == 32
    np.testing.assert_allclose(result.v[1:], np.diff(reference, axis=0) / result.dt, atol=1e-11)


def test_the_books_norm_decides_the_trajectory():
    """Stopping on the largest entry of p instead of the book's largest row sum (norm="max")
    takes 384 Newton iterations, not the book's 387, and parts from its run by 1e-3 m from step
    57 on (measured): the scene's norm = "row_sum" is what makes it the book's run."""
    entry = hooke.simulate(hooke.scene("square_drop"), norm="max")
    reference, _ = book_square_drop(500)
    gap = np.abs(entry.x - reference).max(axis=(1, 2))
    assert entry.stats["newton_iterations"] == 384
    assert gap[:57].max() < 1e-12 and gap.max() > 1e-4


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


@pytest.mark.parametrize("name, free", [("square_drop", 32), ("cloth_drop", 23), ("soft3d_drop", 20)])
def test_free_fall_matches_backward_euler_closed_form(name, free):
    # Backward Euler under constant g: v_n = v0 + n h g, x_n = x0 + h Σ_{k=1..n} v_k.
    scene = hooke.scene(name)
    model = scene.model
    # A direct solve: the cloth's scene file takes CG, exact only to its residual (1e-10).
    result = hooke.simulate(scene, t_end=(free + 1) * scene.dt, solver="direct")
    assert int(np.argmax(result.contact_distance < model.contact_dhat)) == free  # first contact
    h, n = result.dt, np.arange(free)
    expected = result.x[0] + (h * h * n * (n + 1) / 2)[:, None, None] * model.gravity
    np.testing.assert_allclose(result.x[:free], expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.v[:free], np.broadcast_to(
        (n * h)[:, None, None] * model.gravity, result.v[:free].shape), rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", list(SHORT_RUNS))
def test_newton_trials_stay_inside_and_the_potential_decreases(monkeypatch, name):
    """Every configuration the line search evaluates lies strictly inside every half-space, and
    the incremental potential never increases from one accepted Newton iterate to the next. On
    the generic path, whose trials the spy sees (the compiled one takes the same iterates:
    tests/test_implicit_compiled.py)."""
    monkeypatch.setattr(implicit, "COMPILED", False)
    seen = []
    original = barrier.PlaneBarrier.value

    def spy(self, model, x):
        seen.append(float((x @ model.plane_normals.T - self.offsets)[model.contact_area > 0].min()))
        return original(self, model, x)

    monkeypatch.setattr(barrier.PlaneBarrier, "value", spy)
    scene = hooke.scene(name)
    stepper = get_integrator("implicit_euler")(hooke.System(scene.model), scene.dt)
    state, multi = scene.state, 0
    for _ in range(SHORT_RUNS[name]):
        state = stepper.step(state)
        energies = np.array(stepper.step_energies)
        # never increases, up to the round-off band where steps are judged by the gradient
        band = ROUND_OFF * np.abs(energies[:-1])
        assert np.all(np.diff(energies) <= band)
        multi += energies.size > 2
    assert multi > 5  # contact steps need several Newton iterations
    assert len(seen) > 2 * SHORT_RUNS[name] and min(seen) > 0.0
    assert min(seen) < scene.model.contact_dhat  # trials inside the barrier's range


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


def test_square_press_drives_its_top_row_inside_the_implicit_solve(runs):
    """Moving Dirichlet boundary: the pinned top row follows y = 0.5 − speed·min(t, duration)
    exactly inside every implicit step and squeezes the square against the ground."""
    result = runs("square_press")
    model, parameters = result.scene.model, result.scene.parameters
    speed, duration, dhat = parameters["speed"], parameters["duration"], model.contact_dhat
    top = np.flatnonzero(model.pinned)
    assert top.tolist() == [4, 9, 14, 19, 24]  # j = n_seg: the top row
    t = result.t[:, None]
    np.testing.assert_allclose(result.x[:, top, 1], 0.5 - speed * np.minimum(t, duration) + 0 * top,
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.x[:, top, 0], np.broadcast_to(model.x0[top, 0], (t.size, 5)),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.v[:, top, 1], np.where(t < duration, -speed, 0.0) + 0 * top,
                               rtol=0, atol=1e-12)
    ground = model.plane_points[0, 1]
    y = result.x[:, :, 1]
    assert np.all(y[:, ~model.pinned] > ground)  # never crosses the ground
    gap = y[-1].min() - ground
    assert 0 < gap < dhat  # pressed onto it
    height = y.max(axis=1) - y.min(axis=1)
    assert height[0] == 1.0 and height[-1] == pytest.approx(0.75, abs=dhat / 2)  # 0.755 − gap
    middle_row = np.arange(5) * 5 + 2
    assert np.ptp(result.x[-1, middle_row, 0]) > 1.0 + 0.01  # squeezed, it bulges sideways
    assert np.all(result.energy["kinetic"][-50:] == 0.0)  # held: at rest


def square_in_a_box(speed: float = 4.0) -> hooke.Scene:
    """The book's square thrown sideways at ``speed`` in a box: the ground y = −1 and vertical
    walls x = ±1.5, all frictionless."""
    drop = hooke.scene("square_drop")
    walls = [dict(normal=(1.0, 0.0), point=(-1.5, 0.0)), dict(normal=(-1.0, 0.0), point=(1.5, 0.0))]
    model = add_contact(drop.model, walls)
    v = np.tile([speed, 0.0], (model.n_particles, 1))
    return hooke.Scene(model, state=hooke.State(0.0, model.x0.copy(), v), integrator="implicit_euler",
                       dt=0.01, t_end=2.0)


def test_square_thrown_in_a_box_bounces_off_the_walls():
    result = hooke.simulate(square_in_a_box())
    model = result.scene.model
    d = result.x @ model.plane_normals.T - barrier.plane_offsets(model)  # (frames, 25, 3)
    assert np.all(d > 0.0)
    touching = d.min(axis=1) < model.contact_dhat  # (frames, planes)
    right, left = int(np.argmax(touching[:, 2])), int(np.argmax(touching[:, 1]))
    # Its right side (x = 0.5) reaches d̂ from the wall x = 1.5 in step ⌈0.99 / (4 h)⌉ = 25.
    assert right == 25 and right < left and touching[:, 0].any()
    vx = result.v[:, :, 0].mean(axis=1)
    # No horizontal force before the wall (frictionless floor): momentum kept to round-off.
    np.testing.assert_allclose(vx[:right], 4.0, rtol=0, atol=1e-12)
    leave = right + int(np.argmax(~touching[right:, 2]))
    np.testing.assert_allclose(vx[leave:left], vx[leave], rtol=0, atol=1e-12)
    assert -4.0 < vx[leave] < -1.0  # thrown back, slower (implicit Euler dissipates)


def test_block_in_a_3d_corner_rests_on_all_three_planes():
    """A small tet block pulled into the corner of the floor and two walls by a tilted gravity:
    at rest, each frictionless plane carries exactly the weight's component along its normal."""
    gravity = np.array([-2.0, -9.81, -1.0])
    b = hooke.ModelBuilder(dim=3, gravity=gravity)
    b.lattice(2, 2, 2, spacing=0.1, origin=(0.05, 0.05, 0.05), mass=0.5, stiffness=1e4)
    for normal in np.eye(3):  # the walls x = 0, z = 0 and the floor y = 0
        b.add_plane(normal, (0.0, 0.0, 0.0))
    b.set_contact(dhat=0.01, kappa=1e5, area=0.01)
    scene = hooke.Scene(b.finalize(), integrator="implicit_euler", dt=0.01, t_end=2.0,
                        options={"tol": 1e-8})
    result = hooke.simulate(scene)
    model = scene.model
    assert np.all(result.x > 0.0)  # inside all three half-spaces, every frame
    assert result.energy["kinetic"][-1] < 1e-20
    support = barrier.at_time(model, result.t[-1]).normal_forces(model, result.x[-1]).sum(axis=0)
    np.testing.assert_allclose(support, -model.mass.sum() * gravity, rtol=1e-6)


def test_cloth_drop_lands_edge_first_and_comes_to_rest(runs):
    result = runs("cloth_drop")
    model, dhat = result.scene.model, result.scene.model.contact_dhat
    y = result.x[:, :, 1]  # the ground is y = 0
    assert np.all(y > 0.0)
    first = int(np.argmax(y.min(axis=1) < dhat))
    landed = np.flatnonzero(y[first] < dhat) // result.scene.parameters["nz"]  # grid column i
    assert landed.tolist() == [0] * landed.size  # tilted: its low edge lands first
    assert 0 < y[-1].min() < dhat  # the lowest node settles within d̂ of the ground
    kinetic = result.energy["kinetic"]
    assert kinetic[-1] < 1e-6 * kinetic.max()  # measured: 2e-8
    support = barrier.at_time(model, result.t[-1]).normal_forces(model, result.x[-1]).sum()
    assert support == pytest.approx(model.mass.sum() * G, rel=1e-4)  # measured: 1.3e-6


def test_soft3d_drop_comes_to_rest_sagging_under_its_weight(runs):
    result = runs("soft3d_drop")
    scene = result.scene
    model, dhat = scene.model, scene.model.contact_dhat
    kinetic = result.energy["kinetic"]
    assert kinetic[-1] < 1e-4 * kinetic.max()
    weight = model.mass.sum() * -model.gravity[1]
    support = barrier.at_time(model, result.t[-1]).normal_forces(model, result.x[-1]).sum()
    assert support == pytest.approx(weight, rel=2e-3)  # measured: 6e-4
    # The sag: the same block with its bottom layer pinned, at static equilibrium (implicit
    # Euler with steps so long that inertia vanishes).
    pinned = hooke.scene("lattice", **{**scene.parameters, "pin_bottom": True})
    static = hooke.simulate(pinned, integrator="implicit_euler", dt=1.0, t_end=5.0, save_every=5,
                            tol=1e-9)
    height = model.x0[:, 1].mean()
    sag = height - static.x[-1, :, 1].mean()
    assert sag > dhat  # measured: 8.9 mm
    ground = model.plane_points[0, 1]
    bottom = model.x0[:, 1] == 0.0
    gap = result.x[-1, bottom, 1].mean() - ground
    assert 0 < gap < dhat
    # Friction holds the base at its landing spread: measured 0.05 sag from the pinned block.
    assert result.x[-1, :, 1].mean() - ground == pytest.approx(gap + height - sag, abs=0.1 * sag)


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


def test_a_dhat_whose_square_overflows_is_refused_naming_it(tmp_path, monkeypatch, capsys):
    """Red-team pass (redF): d̂ = 1e300 was taken; the run failed at its first step with exit 1,
    "a number inside the step became inf or NaN … try a smaller dt" (planes) or ipctk's "unable
    to project matrix onto positive semi-definite cone" (surfaces), after a frame 0 of NaN
    energies. The barrier works in (d/d̂)² and d̂²: a d̂ whose square is inf is refused up front."""
    with pytest.raises(HookeInputError) as caught:
        ground_builder(dhat=1e300)
    assert str(caught.value) == ("contact.dhat: is too large (its square overflows to inf), "
                                 "got 1e+300")
    assert ground_builder(dhat=1e154).finalize().contact_dhat == 1e154  # d̂² = 1e308: finite
    scene = tmp_path / "scene.toml"
    scene.write_text('dim = 2\n[[particles]]\nx = [-1.0, 0.0]\npinned = true\n[[particles]]\n'
                     'x = [1.0, 0.0]\npinned = true\n[[particles]]\nx = [0.0, 0.3]\n'
                     '[[particles]]\nx = [0.2, 0.3]\n[[surfaces]]\nfaces = [[0, 1]]\n'
                     '[[surfaces]]\nfaces = [[2, 3]]\n[contact]\nself_contact = true\n'
                     'dhat = 1e300\n[run]\nintegrator = "implicit_euler"\ndt = 0.01\n'
                     't_end = 0.05\n')
    code, err = run_main(monkeypatch, capsys, "run", str(scene), "-o", str(tmp_path / "out"),
                         "-q")
    assert (code, err) == (2, ["error: contact.dhat: is too large (its square overflows to inf), "
                               "got 1e+300"])
    assert not (tmp_path / "out").exists()


def test_one_plane_moving_past_the_positions_precision_is_not_called_a_squeeze():
    """Stop 29 (red-team pass): a lone plane moving at 1e300 m/s said "moving planes squeeze
    particle(s) 0, 1 against another plane … try a smaller dt": there is no other plane; the
    plane's step of 1e298 m is past what the positions resolve."""
    b = hooke.ModelBuilder(dim=2)
    b.add_particle((0.0, 0.5))
    b.add_particle((1.0, 0.5))
    b.add_spring(0, 1, stiffness=10.0)
    b.add_plane((0.0, 1.0), (0.0, 0.0), motion=ConstantVelocity((0.0, 1e300)))
    scene = hooke.Scene(b.finalize(), integrator="implicit_euler", dt=0.01, t_end=0.05)
    with pytest.raises(hooke.SimulationError) as caught:
        hooke.simulate(scene)
    message = str(caught.value)
    assert message.startswith("step 1 (t = 0.01) failed: moving plane 0 carries particle(s) 0, 1 "
                              "by 1e+298 m in the step to t = 0.01, past what positions of |x| "
                              "up to 1e+298 m resolve;")
    assert message.endswith("Give the plane a slower motion.") and "squeeze" not in message


@pytest.mark.parametrize("scale", [1e-300, 5e-324, 1e300])
def test_a_plane_normal_of_any_finite_size_is_taken_as_its_direction(scale):
    """Stop 29 (red-team pass): (0, 1e-300) was refused as "must be a non-zero vector", its
    squared length underflowing to 0; a normal is a direction, whatever its size."""
    b = hooke.ModelBuilder(dim=2)
    b.add_particle((0.0, 0.5))
    b.add_plane((scale, scale), (0.0, 0.0))
    b.add_plane((0.0, scale), (0.0, 0.0))
    normals = b.finalize().plane_normals
    np.testing.assert_allclose(normals, [[0.5 ** 0.5, 0.5 ** 0.5], [0.0, 1.0]], rtol=1e-15)


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


def test_a_penetrating_scene_state_names_the_particles():
    scene = hooke.scene("square_compress")
    x = scene.state.x.copy()
    x[[3, 7], 1] = -1.2
    with pytest.raises(HookeInputError, match=r"^state\.x: particle\(s\) 3, 7 start on or below "
                                              r"planes\[0\] \(signed distance <= 1\.5e-154 m\), got \[-0\.19999999999999996, "
                                              r"-0\.19999999999999996\]$"):
        hooke.Scene(scene.model, state=hooke.State(0.0, x, scene.state.v))
    # Planes where they are at the state's time: the ceiling y = 0.6 − 0.5·t is below the top
    # row (y = 0.5) from t = 0.2 on.
    x, v = scene.state.x, scene.state.v
    assert hooke.Scene(scene.model, state=hooke.State(0.19, x, v)).state.t == 0.19
    with pytest.raises(HookeInputError, match=r"^state\.x: particle\(s\) 4, 9, 14, 19, 24 start "
                                              r"on or below planes\[1\] \(signed distance <= 1\.5e-154 m\), "
                                              r"got \[-0\.2, -0\.2, -0\.2, -0\.2, -0\.2\]$"):
        hooke.Scene(scene.model, state=hooke.State(0.6, x, v))


def test_implicit_euler_is_the_integrator_that_handles_contact():
    able = [other for other in hooke.integrators() if get_integrator(other).supports_contact]
    assert able == ["implicit_euler"]


@pytest.mark.parametrize("name", hooke.integrators())
def test_only_integrators_that_declare_contact_take_planes(name):
    scene = hooke.scene("square_drop")
    if get_integrator(name).supports_contact:
        result = hooke.simulate(scene, integrator=name, t_end=0.05)
        n = np.arange(6)  # free fall, as test_free_fall_matches_backward_euler_closed_form
        np.testing.assert_allclose(result.x[:, :, 1] - result.x[0, :, 1],
                                   np.broadcast_to((-0.5e-4 * G * n * (n + 1))[:, None], (6, 25)),
                                   rtol=0, atol=1e-12)
        return
    with pytest.raises(HookeInputError) as error:
        hooke.simulate(scene, integrator=name, t_end=0.05)
    assert str(error.value) == (f"integrator: '{name}' does not handle contact planes (integrators "
                                f"that do: implicit_euler), got '{name}'")


def test_a_penetrating_start_names_the_particles():
    b = hooke.ModelBuilder(dim=2)
    for x in (0.0, 1.0, 2.0, 3.0):
        b.add_particle((x, 0.5 if x < 2 else 0.0 if x == 2 else -0.1))
    b.add_particle((5.0, -1.0), pinned=True)  # pinned particles take no part in contact
    b.add_plane((0.0, 1.0), (0.0, 0.0))
    with pytest.raises(HookeInputError, match=r"^planes\[0\]: particle\(s\) 2, 3 start on or below "
                                              r"the plane \(signed distance <= 1\.5e-154 m\), got \[0\.0, -0\.1\]$"):
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
