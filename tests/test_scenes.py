"""Built-in scenes reproduce DESIGN.md §5's reference parameters; the builder helpers make the
structures they promise; scene files and overrides work."""

from __future__ import annotations

import meshio
import numpy as np
import pytest

import hooke
from hooke.mesh_topology import lattice_tetrahedra, mesh_edges
from hooke.run_report import summary_data


def test_every_builtin_scene_loads_and_steps():
    for name in hooke.scenes():
        scene = hooke.scene(name)
        result = hooke.simulate(scene, dt=scene.dt, t_end=3 * scene.dt)
        assert result.n_frames == 4 and np.all(np.isfinite(result.x))


def test_spring1d_reference():
    scene = hooke.scene("spring1d")
    m = scene.model
    assert (scene.integrator, scene.dt) == ("symplectic_euler", 0.005)
    assert m.dim == 1 and m.pinned.tolist() == [True, False]
    assert scene.state.x[:, 0].tolist() == [0.0, 2.0] and np.all(scene.state.v == 0)
    assert m.mass[1] == 0.5 and m.spring_stiffness.tolist() == [5.0] and m.spring_rest_length.tolist() == [0.0]
    t = np.linspace(0, 3, 7)
    np.testing.assert_allclose(scene.analytic(t)[:, 1, 0], 2.0 * np.cos(np.sqrt(10.0) * t))


def test_oscillator_reference():
    scene = hooke.scene("oscillator")
    m = scene.model
    assert (m.mass[1], m.spring_stiffness[0], scene.dt, scene.state.x[1, 0]) == (1.0, 100.0, 0.01, 1.0)
    np.testing.assert_allclose(scene.analytic(0.1)[1, 0], np.cos(1.0))


def test_cloth2d_reference():
    scene = hooke.scene("cloth2d")
    m = scene.model
    assert (m.n_particles, m.n_springs) == (1200, 4592)
    assert np.all(m.spring_stiffness == 5000) and np.all(m.spring_damping == 10) and np.all(m.mass == 0.5)
    assert m.gravity.tolist() == [0.0, -9.81] and (scene.integrator, scene.dt) == ("symplectic_euler", 0.005)
    pinned = np.flatnonzero(m.pinned)
    assert pinned.size == 2
    top = m.x0[:, 1].max()
    assert np.all(m.x0[pinned, 1] == top)
    np.testing.assert_allclose(sorted(m.x0[pinned, 0]), [m.x0[:, 0].min(), m.x0[:, 0].max()])


def test_cloth2d_sits_at_the_edge_of_symplectic_eulers_stability():
    """The README's note: the sheet's stiffest mode at rest, ω² the largest eigenvalue of M⁻¹K
    and γ its damping rate φᵀCφ / φᵀMφ, gives h·ω = 1.41 and h·γ = 0.80 at dt = 0.005, so
    (hω)² + 2hγ = 3.6, inside symplectic Euler's damped stability limit 4 (the Jury condition
    1 + tr + det > 0 of its 2 × 2 step matrix) but close to it, and 1.3 at make run's 0.0025."""
    from scipy.sparse.linalg import eigsh

    from hooke.system import System

    scene = hooke.scene("cloth2d")
    system, x = System(scene.model), scene.model.x0
    stiffness = system.combined_matrix(x, 0.0, 1.0, 0.0)
    damping = system.combined_matrix(x, 0.0, 0.0, 1.0)
    mass = 0.5  # every particle's: the mass matrix is 0.5·I
    eigenvalue, mode = eigsh(stiffness, k=1, which="LA")
    omega, gamma = np.sqrt(eigenvalue[0] / mass), (mode[:, 0] @ (damping @ mode[:, 0])) / mass
    h = scene.dt
    assert (h * omega, h * gamma) == pytest.approx((1.41, 0.80), abs=0.005)
    assert (h * omega) ** 2 + 2 * h * gamma == pytest.approx(3.6, abs=0.02)
    assert (h * omega / 2) ** 2 + h * gamma == pytest.approx(1.3, abs=0.02)


def test_soft3d_reference():
    scene = hooke.scene("soft3d")
    m = scene.model
    assert m.dim == 3 and np.all(m.spring_stiffness == 1e5) and np.all(m.mass == 1.0)
    assert m.gravity.tolist() == [0.0, -9.8, 0.0] and scene.dt == 0.005
    assert scene.integrator == "implicit_euler_linear" and scene.energy_reference == "rest"
    # the pins hold the flat base: every vertex at the lowest y, and no other
    y = m.x0[:, 1]
    np.testing.assert_array_equal(m.pinned, y == y.min())
    assert m.pinned.sum() == 24
    # every tet edge is one spring: count the unique edges of the shipped mesh
    mesh = meshio.read(__import__("importlib.resources").resources.files("hooke.scenes") / "meshes" / "blob.vtu")
    assert m.n_springs == len(mesh_edges({"tetra": mesh.cells_dict["tetra"]}))
    np.testing.assert_array_equal(m.x0, mesh.points)
    # the push: a rotation at spin = (0, 0, −2) rad/s about the base's centroid, pins at rest
    centre = m.x0[m.pinned].mean(axis=0)
    r = m.x0 - centre
    expected = np.stack([2.0 * r[:, 1], -2.0 * r[:, 0], np.zeros(len(r))], axis=1)
    np.testing.assert_allclose(m.v0[~m.pinned], expected[~m.pinned], rtol=0, atol=1e-15)
    assert np.all(m.v0[m.pinned] == 0)
    assert np.all(m.v0[~m.pinned][:, 0] * r[~m.pinned][:, 1] > 0)  # the higher, the faster (+x)


def test_soft3d_deforms_visibly_and_its_energy_above_rest_decays():
    """The pushed body nods: its top moves by tens of centimetres in the first swing; its energy
    above rest (hooke.analysis.rest_energy) starts as the push's kinetic energy plus the sag to
    come, and linearly implicit Euler's numerical damping takes it away, never below rest."""
    from hooke.analysis import rest_energy

    scene = hooke.scene("soft3d")
    result = hooke.simulate(scene, t_end=0.5, save_every=5)
    top = int(np.argmax(scene.model.x0[:, 1]))
    assert np.max(np.abs(result.x[:, top, 0] - result.x[0, top, 0])) > 0.2
    above = result.energy["total"] - rest_energy(scene)
    kinetic = 0.5 * np.sum(scene.model.mass[:, None] * scene.model.v0 ** 2)
    assert result.energy["kinetic"][0] == pytest.approx(kinetic, rel=1e-12)
    assert kinetic < above[0] < kinetic + 50.0  # the gravity sag stores tens of joules
    assert np.all(np.diff(above) < 0) and above[-1] > 0
    assert np.min(result.energy["potential"] - rest_energy(scene)) > -1e-6


def test_chain_parameter_and_static_sag():
    """The chain's static equilibrium (hooke.modes' solver) hangs straight down from the support
    with spring k (counted from the top) stretched by the weight of the n − k + 1 particles below
    it over the stiffness: y_j = −Σ_{k≤j} (L/n + (n − k + 1)·m·g / K)."""
    from hooke.analysis import equilibrium

    n, stiffness, mass, g, length = 5, 500.0, 0.1, 9.81, 1.0
    scene = hooke.scene("chain", n=n, stiffness=stiffness)
    assert scene.model.n_particles == n + 1 and scene.model.n_springs == n
    assert scene.parameters["n"] == n and scene.parameters["mass"] == mass
    stretch = (n - np.arange(1, n + 1) + 1) * mass * g / stiffness  # 9.81 mm at the top
    sag = np.concatenate([[0.0], -np.cumsum(length / n + stretch)])
    guess = np.stack([np.zeros(n + 1), -np.arange(n + 1) * length / n], axis=1)
    x, _ = equilibrium(scene, x=guess)
    np.testing.assert_allclose(x[:, 0], 0.0, atol=1e-12)
    np.testing.assert_allclose(x[:, 1], sag, rtol=0, atol=1e-12)
    assert sag[-1] == pytest.approx(-(length + mass * g / stiffness * n * (n + 1) / 2))  # 2.94 cm


def test_grid_counts_and_numbering():
    b = hooke.ModelBuilder(dim=2)
    ids = b.grid(5, 5, spacing=0.25, origin=(-0.5, -0.5), stiffness=2e4, mass=40.0)
    model = b.finalize()
    assert model.n_springs == 72  # seed 004's square: 20 + 20 + 2·16
    assert ids[2, 3] == 2 * 5 + 3
    np.testing.assert_allclose(model.x0[ids[2, 3]], (-0.5 + 0.25 * 2, -0.5 + 0.25 * 3))


def test_lattice_is_six_tets_per_cube_with_unique_edges():
    tets = lattice_tetrahedra(3, 2, 2)
    assert tets.shape == (2 * 1 * 1 * 6, 4)
    b = hooke.ModelBuilder(dim=3)
    b.lattice(2, 2, 2, spacing=1.0)
    model = b.finalize()
    # one cube: 12 edges, 6 face diagonals (one per face) and 1 main diagonal
    assert (model.n_particles, model.n_springs) == (8, 19)
    cube = lattice_tetrahedra(2, 2, 2)
    volumes = [abs(np.linalg.det(model.x0[t[1:]] - model.x0[t[0]])) / 6 for t in cube]
    np.testing.assert_allclose(volumes, 1 / 6)  # six equal tets fill the unit cube


def test_from_mesh_reads_a_triangle_mesh(tmp_path):
    points = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=float)
    path = tmp_path / "square.obj"
    meshio.write(path, meshio.Mesh(points, [("triangle", np.array([[0, 1, 2], [0, 2, 3]]))]))
    b = hooke.ModelBuilder(dim=2)
    ids = b.from_mesh(str(path), mass=2.0, stiffness=10.0)
    model = b.finalize()
    assert ids.tolist() == [0, 1, 2, 3] and model.n_springs == 5
    np.testing.assert_allclose(sorted(model.spring_rest_length), [1, 1, 1, 1, np.sqrt(2)])


def test_scene_file_round_trip(tmp_path):
    path = tmp_path / "two.toml"
    path.write_text("""
dim = 2
gravity = [0.0, -9.81]
[run]
integrator = "rk4"
dt = 0.002
t_end = 0.5
[[particles]]
x = [0.0, 0.0]
pinned = true
[[particles]]
x = [1.0, 0.0]
mass = 0.5
v = [0.0, 1.0]
[[springs]]
i = 0
j = 1
stiffness = 100.0
""")
    scene = hooke.load(path)
    assert (scene.name, scene.integrator, scene.dt, scene.t_end) == ("two", "rk4", 0.002, 0.5)
    assert scene.model.spring_rest_length.tolist() == [1.0]
    assert scene.state.v[1].tolist() == [0.0, 1.0]
    result = hooke.simulate(scene)
    assert result.n_frames == 251 and np.all(result.x[:, 0] == 0.0)


def test_builder_parameters_are_validated():
    with pytest.raises(hooke.HookeInputError, match=r"parameters\.stiffness.*-1"):
        hooke.scene("spring1d", stiffness=-1.0)
    with pytest.raises(hooke.HookeInputError, match=r"parameters\.colour"):
        hooke.scene("chain", colour="red")


def test_scene_file_particle_motion_drives_a_pendulum_support(tmp_path):
    path = tmp_path / "driven.toml"
    path.write_text("""
dim = 1
[run]
integrator = "rk4"
dt = 0.001
t_end = 3.0
[[particles]]
x = [0.0]
pinned = true
motion = { type = "sinusoid", amplitude = 0.3, direction = [1.0], omega = 1.0 }
[[particles]]
x = [0.0]
mass = 1.0
v = [0.4]
[[springs]]
i = 0
j = 1
stiffness = 4.0
rest_length = 0.0
""")
    result = hooke.simulate(hooke.load(path))
    # x'' = -4 (x - 0.3 sin t): the steady forced response 0.4 sin t matches v(0) = 0.4 exactly
    np.testing.assert_allclose(result.x[:, 0, 0], 0.3 * np.sin(result.t), atol=1e-15)
    np.testing.assert_allclose(result.x[:, 1, 0], 0.4 * np.sin(result.t), atol=1e-9)
    bad = path.read_text().replace('type = "sinusoid"', 'type = "wobble"')
    path.write_text(bad)
    with pytest.raises(hooke.HookeInputError, match=r"particles\[0\]\.motion"):
        hooke.load(path)


def test_the_analytic_solution_starts_at_the_scenes_start_time_and_state():
    """Issue 15 (red team, stop 30): a spring1d scene started at t = 1000 s was compared with the
    analytic solution of a run started at 0 — its analytic positions 3.15 m off the run, and the
    summary's max_error_vs_analytic and analytic.png with them. The solution is of the model's
    initial-value problem (x0, v0 at the start's time); a state of one's own has none."""
    scene = hooke.scene("spring1d")
    t = np.linspace(0.0, 2.0, 41)
    late = hooke.Scene(scene.model, dt=scene.dt, state=scene.model.initial_state(t=1000.0),
                       analytic_solution=scene.analytic_solution, name="spring1d")
    np.testing.assert_allclose(late.analytic(1000.0 + t), scene.analytic(t), atol=1e-12)
    np.testing.assert_allclose(late.analytic(1000.0 + t)[:, 1, 0],
                               2.0 * np.cos(np.sqrt(10.0) * t), atol=1e-12)
    result = hooke.simulate(late, integrator="rk4", dt=1e-3, t_end=2.0, save_every=50)
    assert result.t[0] == 1000.0 and result.has_analytic
    assert np.max(np.abs(result.x - result.analytic())) < 1e-9  # rk4's error at dt = 1e-3
    assert summary_data(result)["max_error_vs_analytic"] < 1e-9

    moved = scene.model.initial_state()
    moved.x[1, 0] = 1.5
    elsewhere = hooke.Scene(scene.model, dt=scene.dt, state=moved, name="spring1d",
                            analytic_solution=scene.analytic_solution)
    assert not elsewhere.has_analytic
    with pytest.raises(hooke.HookeInputError, match=r"^state: is not scene 'spring1d''s initial "
                       r"positions and velocities .*, got 'a state at t = 0'$"):
        elsewhere.analytic(t)
    run = hooke.simulate(elsewhere, t_end=0.1)
    assert not run.has_analytic
    assert "max_error_vs_analytic" not in summary_data(run)
