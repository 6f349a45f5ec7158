"""Modal analysis (hooke.modes): equilibrium with joints, frequencies and shapes."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import hooke
from hooke.analysis import equilibrium
from hooke.errors import HookeInputError, SimulationError

from conftest import run_main


def fixed_chain(n, stiffness, mass):
    b = hooke.ModelBuilder(dim=1)
    ids = [b.add_particle([float(q)], mass=mass, pinned=q in (0, n + 1)) for q in range(n + 2)]
    for q in range(n + 1):
        b.add_spring(ids[q], ids[q + 1], stiffness=stiffness)
    return b.finalize()


@pytest.mark.parametrize("n,dense", [(12, True), (12, False), (400, False)])
def test_fixed_fixed_chain_matches_the_closed_form(n, dense):
    k, m = 40.0, 0.25
    result = hooke.modes(fixed_chain(n, k, m), k=6, dense=dense)
    j = np.arange(1, 7)
    omega = 2.0 * np.sqrt(k / m) * np.sin(j * np.pi / (2 * (n + 1)))
    np.testing.assert_allclose(result.frequencies, omega / (2 * np.pi), rtol=1e-9)
    assert result.shapes.shape == (6, n + 2, 1)
    assert np.all(result.shapes[:, [0, -1]] == 0)
    np.testing.assert_allclose(np.max(np.abs(result.shapes), axis=(1, 2)), 1.0)
    # The first mode is the half sine.
    expected = np.sin(np.arange(1, n + 1) * np.pi / (n + 1))
    np.testing.assert_allclose(result.shapes[0, 1:-1, 0], expected / expected.max(), atol=1e-8)


def test_joint_pendulum_frequency_comes_from_the_tension():
    # A mass hanging on a joint: no spring at all, only the geometric stiffness T/L = m g / L.
    b = hooke.ModelBuilder(dim=2, gravity=(0, -9.81))
    b.add_particle((0, 0), pinned=True)
    b.add_particle((0.3, -1.9), mass=2.0)  # released off the vertical: equilibrium is found
    b.add_joint(0, 1, length=2.0)
    result = hooke.modes(b.finalize(), k=3)
    assert result.frequencies.shape == (1,)  # 2 DOFs minus 1 joint
    np.testing.assert_allclose(result.frequencies, [np.sqrt(9.81 / 2.0) / (2 * np.pi)], rtol=1e-9)
    np.testing.assert_allclose(result.equilibrium[1], [0, -2.0], atol=1e-9)
    np.testing.assert_allclose(result.tensions, [2.0 * 9.81], rtol=1e-9)


def test_crane_vibration_analysis():
    result = hooke.modes("crane", k=10)
    assert result.frequencies.shape == (5,)  # 15 free DOFs, 10 joints
    assert np.all(np.diff(result.frequencies) >= 0) and result.frequencies[0] > 0
    assert result.shapes.shape == (5, 8, 3)
    # The load's axial spring mode: sqrt(k/m) / 2π with k = 1 N/m, m = 0.001 kg (the rest of the
    # crane barely moves at that frequency).
    np.testing.assert_allclose(result.frequencies[-1], np.sqrt(1000.0) / (2 * np.pi), rtol=2e-3)
    # The load's two pendulum modes on its 2 m hanger: sqrt(g/L) / 2π.
    np.testing.assert_allclose(result.frequencies[1:3], np.sqrt(9.81 / 2.0) / (2 * np.pi), rtol=5e-3)
    # The wind turns the boom downwind (+y).
    x, _ = equilibrium(hooke.scene("crane"))
    np.testing.assert_allclose(x[6, :2], [0.0, 4.0], atol=1e-6)


def test_the_cranes_drag_damps_its_undamped_modes_as_mass_proportional_damping():
    """modes() leaves damping out. The crane's drag is mass-proportional (C = αM, α = 0.01 s⁻¹),
    so its damped linearisation M q̈ + C q̇ + K q = 0 on the joints' tangent space keeps the
    undamped modes: eigenvalues −α/2 ± iω_k √(1 − ζ_k²), ζ_k = α/(2ω_k), so |λ_k| = ω_k."""
    import scipy.linalg

    from hooke.energies import kinetic
    from hooke.saddle_point import SaddlePointMatrix
    from hooke.system import System

    scene = hooke.scene("crane")
    result = hooke.modes(scene, k=5)
    system = System(scene.model)
    n = system.free_dofs.size
    matrix = SaddlePointMatrix(system)
    full = matrix.assemble(result.equilibrium, result.tensions, 0.0, 1.0, 0.0).toarray()
    damping = matrix.assemble(result.equilibrium, result.tensions, 0.0, 0.0, 1.0).toarray()
    basis = scipy.linalg.null_space(full[n:, :n])  # motions that keep the joints' lengths
    mass = kinetic.mass_diagonal(scene.model)[system.free_dofs]
    reduced_m = basis.T @ (mass[:, None] * basis)
    reduced_k = basis.T @ full[:n, :n] @ basis
    reduced_c = basis.T @ damping[:n, :n] @ basis
    np.testing.assert_allclose(reduced_c, 0.01 * reduced_m, atol=1e-15)
    size = basis.shape[1]
    inverse_m = np.linalg.inv(reduced_m)
    state = np.block([[np.zeros((size, size)), np.eye(size)],
                      [-inverse_m @ reduced_k, -inverse_m @ reduced_c]])
    eigenvalues = np.linalg.eigvals(state)
    eigenvalues = eigenvalues[eigenvalues.imag > 0]
    eigenvalues = eigenvalues[np.argsort(np.abs(eigenvalues))]
    omega = 2 * np.pi * result.frequencies
    np.testing.assert_allclose(np.abs(eigenvalues), omega, rtol=1e-9)
    np.testing.assert_allclose(eigenvalues.real, -0.005, rtol=1e-9)
    # the slowest mode (crane.toml): ζ = 0.029, its frequency 0.04 % below the undamped one
    assert 0.01 / (2 * omega[0]) == pytest.approx(0.029, abs=5e-4)
    assert 1 - eigenvalues[0].imag / omega[0] == pytest.approx(4.2e-4, abs=1e-5)


def test_bad_input():
    with pytest.raises(HookeInputError, match="k: must be an integer >= 1"):
        hooke.modes("crane", k=0)
    with pytest.raises(HookeInputError, match="scene: must be a hooke Scene"):
        hooke.modes(42)


def test_a_scene_with_an_obstacle_mesh_is_one_line_from_modes_and_equilibrium(tmp_path):
    """Red-team pass (redF): ``hooke modes`` of a scene with an ``[[obstacles]]`` mesh was
    "unexpected AttributeError: module 'hooke.energies.obstacle_barrier' has no attribute
    'hessian_structure' (a bug in hooke)", exit 1: its pairs change as the particles move, as
    self-contact's do. Now one line naming the scene, exit 2."""
    path = tmp_path / "ramp.toml"
    path.write_text('dim = 2\ngravity = [0.0, -9.81]\n[[particles]]\nx = [0.9, 0.3]\n'
                    'mass = 0.1\n[[obstacles]]\nvertices = [[0.5, 0.2], [1.5, 0.0]]\n'
                    'faces = [[0, 1]]\n[contact]\narea = 0.01\n[run]\n'
                    'integrator = "implicit_euler"\ndt = 0.01\nt_end = 0.1\n')
    line = ("scene: has obstacle meshes, which the static equilibrium and the modal analysis do "
            "not handle, got 'ramp'")
    for analysis in (hooke.modes, equilibrium):
        with pytest.raises(HookeInputError) as caught:
            analysis(hooke.load(path))
        assert str(caught.value) == line
    done = subprocess.run([sys.executable, "-m", "hooke.cli", "modes", str(path), "-k", "1",
                           "--out", str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=300)
    assert (done.returncode, done.stderr, done.stdout) == (2, f"error: {line}\n", "")


def test_a_scene_with_self_contact_is_one_line_from_modes_and_equilibrium(tmp_path):
    """Self-contact's barrier has no fixed Hessian pattern: ``hooke modes chain_pile`` (and every
    self-contact scene) was "unexpected AttributeError … (a bug in hooke)" (the confirmation pass
    of issue 15). Now one line naming the scene, exit 2; contact planes alone still have modes."""
    line = ("scene: has self-contact (contact surfaces), which the static equilibrium and the "
            "modal analysis do not handle, got 'chain_pile'")
    for analysis in (hooke.modes, equilibrium):
        with pytest.raises(HookeInputError) as caught:
            analysis(hooke.scene("chain_pile"))
        assert str(caught.value) == line
    done = subprocess.run([sys.executable, "-m", "hooke.cli", "modes", "chain_pile", "-k", "3",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stderr, done.stdout) == (2, f"error: {line}\n", "")
    result = hooke.modes("square_drop", k=3)  # a ground plane, no surfaces
    assert result.frequencies.shape == (3,) and np.all(np.isfinite(result.frequencies))


def test_k_larger_than_the_mode_count_returns_every_mode():
    result = hooke.modes("crane", k=10)
    assert result.frequencies.shape == (5,) and result.shapes.shape == (5, 8, 3)
    np.testing.assert_allclose(result.frequencies, hooke.modes("crane", k=5).frequencies, rtol=1e-12)
    assert hooke.modes("crane", k=2).frequencies.shape == (2,)


@pytest.mark.parametrize("scene, k, wanted", [(fixed_chain(3, 40.0, 0.25), 3, 3),
                                                (fixed_chain(3, 40.0, 0.25), 3, 7),
                                                ("pendulum", 4, 6)])
def test_every_mode_from_the_sparse_solver_is_refused_in_one_line(scene, k, wanted):
    """ARPACK finds at most n − 1 of the pencil's n finite eigenvalues: hooke.modes(...,
    dense=False) asked for all of them (or more, clamped to all) raised SciPy's TypeError
    ('Cannot use scipy.linalg.eigh for sparse A with k >= N') or ValueError ('ncv must be
    k<ncv<=n'). One fewer is still the closed form (the chain's), and all come from dense=True."""
    with pytest.raises(HookeInputError, match=rf"^k: the sparse eigen-solver \(dense=False\) "
                       rf"finds at most {k - 1} of the {k} modes of this scene .*, got {wanted}$"):
        hooke.modes(scene, k=wanted, dense=False)
    assert hooke.modes(scene, k=wanted, dense=True).frequencies.shape == (k,)
    if not isinstance(scene, str):
        j = np.arange(1, k)
        omega = 2.0 * np.sqrt(40.0 / 0.25) * np.sin(j * np.pi / (2 * (k + 1)))
        np.testing.assert_allclose(hooke.modes(scene, k=k - 1, dense=False).frequencies,
                                   omega / (2 * np.pi), rtol=1e-12)


@pytest.mark.parametrize("sign", [1.0, -1.0])
@pytest.mark.parametrize("ulp", [1.0, -1.0])
def test_a_symmetric_modes_sign_does_not_depend_on_round_off(monkeypatch, sign, ulp):
    """A symmetric body's antisymmetric mode has +a and −a at mirror particles (2 equal masses
    between 3 equal springs: (1, −1)). Which of the two an eigen-solver returns a hair larger is
    round-off (cloth2d 8 × 6's fourth mode came with opposite signs from the dense and the
    sparse solver, differing by 2); the first of tied peaks scales the shape, so every such
    vector gives the same shape (1, −1)."""
    import scipy.linalg

    eigh = scipy.linalg.eigh

    def solver(a, b, subset_by_index):
        omega2, vectors = eigh(a, b, subset_by_index=subset_by_index)
        vectors[:, 1] = sign * np.array([1.0, -1.0 - ulp * 2.0 ** -52])
        return omega2, vectors

    monkeypatch.setattr(scipy.linalg, "eigh", solver)
    result = hooke.modes(fixed_chain(2, 40.0, 0.25), k=2, dense=True)
    np.testing.assert_allclose(result.frequencies[1], np.sqrt(3 * 40.0 / 0.25) / (2 * np.pi),
                               rtol=1e-12)
    assert result.shapes[1, 1:3, 0].tolist()[0] == 1.0
    np.testing.assert_allclose(result.shapes[1, 1:3, 0], [1.0, -1.0], rtol=1e-15)


@pytest.mark.parametrize("energy", ["hookean", "squared_length"])
def test_a_taut_string_without_gravity_vibrates_as_the_closed_form(energy):
    """5 masses on a 2D string stretched 1.2× between two pins, no gravity: at rest each spring
    pulls with T but the net force on a particle is round-off (1e-14 N), and equilibrium's
    tolerance, relative to the net forces alone, was never met ('Newton did not converge in 500
    iterations … force scale 3.908e-14 N'). The spring forces set the scale: the transverse
    modes 2√(T/(m a)) sin(jπ/12), the longitudinal 2√(k_a/m) sin(jπ/12)."""
    n, k, m, stretch = 5, 7.0, 0.3, 1.2
    b = hooke.ModelBuilder(dim=2, spring_energy=energy)
    ids = [b.add_particle([stretch * q, 0.0], mass=m, pinned=q in (0, n + 1)) for q in range(n + 2)]
    for q in range(n + 1):
        b.add_spring(ids[q], ids[q + 1], stiffness=k, rest_length=1.0)
    if energy == "hookean":
        tension, axial = k * (stretch - 1.0), k
    else:  # E = ½ k (d² − 1)²: E' = 2kd(d² − 1), E'' = 2k(d² − 1) + 4kd²
        tension, axial = 2 * k * stretch * (stretch**2 - 1), 2 * k * (stretch**2 - 1) + 4 * k * stretch**2
    result = hooke.modes(b.finalize(), k=2 * n)
    s = np.sin(np.arange(1, n + 1) * np.pi / (2 * (n + 1)))
    omega = np.concatenate([2 * np.sqrt(tension / (m * stretch)) * s, 2 * np.sqrt(axial / m) * s])
    np.testing.assert_allclose(result.frequencies, np.sort(omega) / (2 * np.pi), rtol=1e-12)
    np.testing.assert_allclose(result.equilibrium[1:-1, 0], stretch * np.arange(1, n + 1),
                               rtol=0, atol=1e-14)


def test_a_free_stretched_body_without_gravity_relaxes_to_its_rest_shape():
    """A free triangle with a centre particle, stretched 1.1× and nothing pinned, no gravity:
    its springs' net force is round-off ((0, 2.22e-16) N), which equilibrium's check for a body
    nothing holds read as an external force ('none exists: … pin a particle'). It has a
    rest state: every spring at its rest length, and three rigid modes (0 Hz) below the rest."""
    b = hooke.ModelBuilder(dim=2)
    points = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3) / 2], [0.5, 0.3]]) * 1.1
    ids = [b.add_particle(p, mass=0.2) for p in points]
    pairs = ((0, 1), (1, 2), (2, 0), (0, 3), (1, 3), (2, 3))
    for i, j in pairs:
        b.add_spring(ids[i], ids[j], stiffness=10.0,
                     rest_length=float(np.linalg.norm((points[i] - points[j]) / 1.1)))
    model = b.finalize()
    x, _ = equilibrium(model)
    lengths = [np.linalg.norm(x[j] - x[i]) for i, j in pairs]
    np.testing.assert_allclose(lengths, model.spring_rest_length, rtol=1e-9)
    frequencies = hooke.modes(model, k=4).frequencies
    np.testing.assert_allclose(frequencies[:3], 0.0, atol=1e-5)
    assert frequencies[3] > 1.0


def test_modes_command_notes_the_mode_count(tmp_path):
    done = subprocess.run([sys.executable, "-m", "hooke.cli", "modes", "crane", "-k", "10",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "note: crane has 5 modes: 15 degrees of freedom − 10 joints"
    assert done.stdout.splitlines()[0].split() == ["mode", "f", "[Hz]", "omega", "[rad/s]"]
    assert [line.split()[0] for line in done.stdout.splitlines()[1:6]] == ["1", "2", "3", "4", "5"]
    done = subprocess.run([sys.executable, "-m", "hooke.cli", "modes", "crane", "-k", "5",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stderr == ""


def test_equilibrium_newton_failure_reports_the_residuals():
    # a hanging mass given one iteration: the residual is still m·g
    b = hooke.ModelBuilder(dim=2, gravity=(0, -9.81))
    anchor = b.add_particle((0, 0), mass=1.0, pinned=True)
    b.add_spring(anchor, b.add_particle((0, -1), mass=1.0), stiffness=10.0, rest_length=1.0)
    with pytest.raises(SimulationError, match=r"^equilibrium: Newton did not converge in 1 "
                                              r"iterations \(\|∇U \+ Gᵀ T\|∞ over the last "
                                              r"iterations: 9\.810e\+00; force scale 9\.810e\+00 "
                                              r"N\)$"):
        equilibrium(b.finalize(), max_iterations=1)


def test_the_jointed_chain_hangs_within_the_default_iterations():
    """jointed_chain's 40 links start level and take 285 trust-region steps to hang: with the
    old default of 200 `hooke modes jointed_chain` (and rest_energy) ended "Newton did not
    converge in 200 iterations" for a built-in scene. Its lowest mode is a 40-link chain's
    swing, close to the continuous hanging chain's 0.6 Hz (f = 1.2024·√(g/L)/2π, L = 1 m)."""
    frequencies = hooke.modes("jointed_chain", k=2).frequencies
    np.testing.assert_allclose(frequencies, [0.5957, 1.3676], rtol=1e-3)



def test_a_chain_of_joints_sagging_between_two_pins_hangs_as_the_discrete_catenary():
    """Eight links of 0.25 m between pins 1.6 m apart, started on a sine sag whose distances
    (0.201–0.231 m) are not the lengths: the projection onto the joints kept the directions of
    the start, crept at 0.6 per step and ended "the position projection did not converge at
    t = 0 (… 7.310e-13, 4.381e-13)" from hooke.modes, equilibrium and every explicit run (at
    sags of 0.2 or 0.4 m it converged). Directions taken again where steps creep, it hangs:
    each link at its length, the horizontal pull the same in every link and each particle's
    weight carried by the links at its ends (a force balance computed here)."""
    n, g = 9, 9.81
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -g))
    for i in range(n):
        b.add_particle((1.6 * i / (n - 1), -0.3 * np.sin(np.pi * i / (n - 1))),
                       mass=0.1 + 0.01 * i, pinned=i in (0, n - 1))
    for i in range(n - 1):
        b.add_joint(i, i + 1, length=0.25)
    model = b.finalize()
    x, tensions = equilibrium(hooke.Scene(model))
    links = np.diff(x, axis=0)
    lengths = np.linalg.norm(links, axis=1)
    np.testing.assert_allclose(lengths, 0.25, rtol=0, atol=1e-12)
    pull = np.abs(tensions)[:, None] * links / lengths[:, None]  # each link's pull along it
    horizontal = np.abs(pull[:, 0])
    assert np.ptp(horizontal) < 1e-12 * horizontal.mean()
    net = model.mass[1:-1] * -g + pull[1:, 1] - pull[:-1, 1]  # weight, link above, link below
    assert np.max(np.abs(net)) < 1e-12 * horizontal.mean()
    assert hooke.modes(hooke.Scene(model), k=1).frequencies.size == 1
    run = hooke.simulate(hooke.Scene(model, integrator="rk4", dt=1e-3, t_end=0.01))
    assert np.max(np.abs(np.linalg.norm(np.diff(run.x[-1], axis=0), axis=1) - 0.25)) < 1e-12

def test_equilibrium_checks_its_start_and_tolerance():
    """Issue 15: equilibrium(scene, x=...) took any x: a NaN start looped for ever, a (5, 3)
    array for a (2, 1) model came back as the equilibrium, a (2,) one failed in Numba's typing
    and a start whose forces overflow (x = 1e308) was returned as converged (its residual inf
    passed against an inf force scale); tol=-1 or NaN ran 200 iterations to "did not converge"
    at a residual of 0. Each is now one line naming the argument."""
    scene = hooke.scene("spring1d")
    for x, message in [(np.full((2, 1), np.nan), "x[0]: must be finite, got [nan]"),
                       (np.zeros((5, 3)), "x: must be an array of numbers of shape (2, 1) "
                                          "(particles, dim), got (5, 3)"),
                       (np.zeros(2), "x: must be an array of numbers of shape (2, 1) "
                                     "(particles, dim), got (2,)"),
                       ([["0"], ["1"]], "x: must be an array of numbers of shape (2, 1) "
                                        "(particles, dim), got [['0'], ['1']]")]:
        with pytest.raises(HookeInputError) as caught:
            equilibrium(scene, x=x)
        assert str(caught.value) == message
    with pytest.raises(SimulationError, match=r"^equilibrium: the forces at the start overflow "
                                              r"to inf"):
        equilibrium(scene, x=[[0.0], [1e308]])
    for tol in (-1, float("nan"), "1"):
        with pytest.raises(HookeInputError, match=r"^tol: must be a finite number > 0"):
            equilibrium(scene, tol=tol)
    np.testing.assert_allclose(equilibrium(scene, x=[[0], [1]])[0], 0.0, atol=1e-12)


FREE_BODY = ("equilibrium: none exists: no particle is pinned and nothing holds the body, so the "
             "net external force on it (gravity, wind), (0, -19.62) N, moves it as a whole; pin a "
             "particle or add a ground plane")


def free_pair(gravity) -> hooke.ModelBuilder:
    b = hooke.ModelBuilder(dim=2, gravity=gravity)
    b.add_spring(b.add_particle((0, 0), mass=1.0), b.add_particle((1, 0), mass=1.0),
                 stiffness=10.0)
    return b


def test_a_free_body_under_gravity_has_no_equilibrium_and_says_so(tmp_path):
    """Issue 15: `hooke modes` of a body with no pinned particle under gravity ran Newton's 200
    iterations and said only "Newton did not converge", no hint that no static equilibrium
    exists. Now it says so at once, naming the net force; without gravity it has modes (the
    rigid ones at 0 Hz), and a ground plane may hold it (square_drop, above)."""
    with pytest.raises(SimulationError) as caught:
        hooke.modes(free_pair((0, -9.81)).finalize(), k=2)
    assert str(caught.value) == FREE_BODY
    result = hooke.modes(free_pair((0, 0)).finalize(), k=4)
    np.testing.assert_allclose(result.frequencies[:3], 0.0, atol=1e-6)
    assert result.frequencies[3] == pytest.approx(np.sqrt(2 * 10.0) / (2 * np.pi), rel=1e-9)
    scene = tmp_path / "free.toml"
    scene.write_text('dim = 2\ngravity = [0, -9.81]\n[[particles]]\nx = [0, 0]\nmass = 1\n'
                     '[[particles]]\nx = [1, 0]\nmass = 1\n[[springs]]\ni = 0\nj = 1\n'
                     'stiffness = 10\n')
    done = subprocess.run([sys.executable, "-m", "hooke.cli", "modes", str(scene), "-k", "2",
                           "--out", str(tmp_path / "modes")], capture_output=True, text=True,
                          timeout=300)
    assert (done.returncode, done.stderr, done.stdout) == (1, f"error: {FREE_BODY}\n", "")


def test_the_mode_count_note_comes_before_the_analysis(monkeypatch, capsys, tmp_path):
    """Issue 15: `hooke modes lattice -k 100000000000000000000000` computed all 2,700 modes (two
    minutes on a loaded machine) and only then said the scene has 2,700; the note is now the
    first line, before the analysis (here one that fails)."""
    import hooke.analysis

    def failing(scene, k):
        raise SimulationError(f"stopped at k = {k}")

    monkeypatch.setattr(hooke.analysis, "modes", failing)
    code, lines = run_main(monkeypatch, capsys, "modes", "crane", "-k", str(10 ** 23), "--out",
                           str(tmp_path))
    assert (code, lines) == (1, ["note: crane has 5 modes: 15 degrees of freedom − 10 joints",
                                 f"error: stopped at k = {10 ** 23}"])


def test_rest_energy_of_a_hanging_mass_is_the_closed_form():
    """A mass m on a spring (k, rest length L) from a fixed point hangs at y* = −L − mg/k, where
    U* = ½k(mg/k)² + mg·y* = −mgL − (mg)²/(2k); a scene that reads energies above rest has that
    as its zero, one that does not has zero."""
    from hooke.analysis import energy_reference, rest_energy

    m, g, k, length = 2.0, 9.81, 500.0, 0.5
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -g))
    b.add_particle([0.0, 0.0], pinned=True)
    b.add_particle([0.3, -0.2], mass=m)  # the solver starts away from the rest state
    b.add_spring(0, 1, stiffness=k, rest_length=length)
    model = b.finalize()
    exact = -m * g * length - (m * g) ** 2 / (2 * k)
    assert rest_energy(model) == pytest.approx(exact, rel=1e-12)
    resting = hooke.Scene(model, energy_reference="rest")
    assert energy_reference(resting) == (pytest.approx(exact, rel=1e-12),
                                         "energy above rest (static equilibrium) [J]")
    assert energy_reference(hooke.Scene(model)) == (0.0, "energy [J]")
    # with no spring the mass falls for ever: no rest state, hooke's zero, and the label says so
    falling = hooke.ModelBuilder(dim=2, gravity=(0.0, -g))
    falling.add_particle([0.0, 0.0], mass=m)
    assert energy_reference(hooke.Scene(falling.finalize(), energy_reference="rest")) == (
        0.0, "energy [J] (no rest state found)")
    with pytest.raises(HookeInputError, match="energy_reference: must be one of zero, rest, got 'still'"):
        hooke.Scene(model, energy_reference="still")


def test_every_mode_of_a_model_too_large_for_the_dense_solver_is_refused_up_front(monkeypatch):
    """Issue 15 (second red-team pass): `hooke modes` with -k 1000000000 asks for every mode,
    which takes the dense solver whatever the model's size; a 27,000-particle lattice then ran
    its equilibrium for 3.5 minutes and ended in "unexpected MemoryError … a bug in hooke".
    Now the dense solver's memory (DENSE_COPIES n × n matrices) is checked against the
    machine's before anything is solved; here the machine is made 16 MiB so that a 20 × 15
    cloth (596 free DOFs: 22.7 MB) is refused, and the sparse solver's k still runs."""
    from hooke import memory

    scene = hooke.scene("cloth2d", nx=20, ny=15)
    free = scene.model.free_dofs.size
    assert free == 596 and 8 * 8 * free**2 > 16 * 2**20  # 8 matrices of 8-byte numbers
    monkeypatch.setattr(memory, "physical_memory", lambda: 16 * 2**20)
    with pytest.raises(HookeInputError) as refused:
        hooke.modes(scene, k=10**9)
    assert str(refused.value) == (
        "k: 596 modes of 596 free DOFs need the dense eigen-solver, 8 matrices of 596² (21.7 MiB) "
        "in memory, more than this machine's 16 MiB: ask for at most 594 modes (the sparse "
        "solver), got 1000000000")
    with pytest.raises(HookeInputError, match="^k: 4 modes of 596 free DOFs need the dense"):
        hooke.modes(scene, k=4, dense=True)
    assert hooke.modes(scene, k=4, dense=False).frequencies.shape == (4,)


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("dense", [True, False])
def test_a_stiffness_matrix_that_overflows_is_one_line(dense):
    """Issue 15 (red-team pass, stop 28): a spring of stiffness 1e308 (which the builder takes)
    made hooke.modes print NumPy's "overflow encountered in add" and raise SciPy's raw
    ValueError "array must not contain infs or NaNs"."""
    b = hooke.ModelBuilder(dim=2)
    b.add_particle((0.0, 0.0), pinned=True)
    b.add_particle((1.0, 0.0))
    b.add_particle((2.0, 0.0))
    b.add_spring(0, 1, stiffness=1e308)
    b.add_spring(1, 2, stiffness=1.0)
    scene = hooke.Scene(b.finalize(), name="stiff")
    with pytest.raises(HookeInputError) as error:
        hooke.modes(scene, k=1, dense=dense)
    assert str(error.value) == (
        "scene: its stiffness matrix at the equilibrium has entries up to 1e+308, past 1.34e+154 "
        "(√ of the largest float), where its products overflow: no modes can be computed; "
        "choose smaller stiffnesses, got 'stiff'")


def test_a_body_held_by_contact_alone_that_slides_says_why_it_has_no_equilibrium():
    """Issue 15 (red team, stop 30): `hooke.equilibrium("square_slope")` (and its modes) said
    only "Newton did not converge": the square rests on a tilted plane held by contact alone,
    and the static energy has no friction, so it slides without end. The line says so; a body
    that is pinned somewhere gets no such hint."""
    with pytest.raises(SimulationError) as caught:
        hooke.analysis.equilibrium(hooke.scene("square_slope"), max_iterations=20)
    assert str(caught.value).startswith("equilibrium: Newton did not converge in 20 iterations")
    assert str(caught.value).endswith(
        "; nothing is pinned and only contact holds the body, without friction (the static "
        "energy has none): a body on a slope, or pushed sideways by its springs or the wind, "
        "slides without end and has no equilibrium")
    with pytest.raises(SimulationError) as pinned:
        hooke.analysis.equilibrium(hooke.scene("jointed_chain"), max_iterations=1)
    assert str(pinned.value).endswith("N)")


def free_body(points, pairs, mass: float, stiffness: float):
    b = hooke.ModelBuilder(dim=len(points[0]))
    for p in points:
        b.add_particle(p, mass=mass)
    for i, j in pairs:
        b.add_spring(i, j, stiffness=stiffness)
    return b.finalize()


def test_a_free_bodys_rigid_modes_are_zero_and_the_rest_its_closed_form():
    """An equilateral triangle (m = 1, k = 100) has ω² = 3k/2m (twice) and 3k/m; a regular
    tetrahedron (m = 2, k = 50) k/m (twice), 2k/m (three times) and 4k/m. Their rigid motions
    (3 in 2D, 6 in 3D) came out as ω² of ±2e-14 to 6e-14 (±5e-8 Hz in `hooke modes`), round-off
    of an eigen-solver whose errors scale with ‖M⁻¹K‖ (600 and 150 here)."""
    triangle = free_body([(0, 0), (1, 0), (0.5, np.sqrt(3) / 2)], [(0, 1), (1, 2), (0, 2)],
                         1.0, 100.0)
    np.testing.assert_array_equal(hooke.modes(triangle, k=6).omega_squared[:3], 0.0)
    np.testing.assert_allclose(hooke.modes(triangle, k=6).omega_squared[3:], [150, 150, 300],
                               rtol=1e-12)
    tetrahedron = free_body([(1, 1, 1), (1, -1, -1), (-1, 1, -1), (-1, -1, 1)],
                            [(i, j) for i in range(4) for j in range(i + 1, 4)], 2.0, 50.0)
    result = hooke.modes(tetrahedron, k=12)
    np.testing.assert_array_equal(result.frequencies[:6], 0.0)
    np.testing.assert_allclose(result.omega_squared[6:], [25, 25, 50, 50, 50, 100], rtol=1e-12)


def test_a_free_grid_at_rest_is_its_own_equilibrium():
    """A free 30 × 30 grid at its rest lengths, no gravity: every force is round-off (5.3e-15 N)
    and so was the force scale, so equilibrium ran 500 iterations and said "did not converge".
    Forces are known to K·ε|x|∞ at best: that residual is the equilibrium, x0 itself. Its
    three rigid modes are 0 on both eigen-solvers, and the next two agree between them."""
    b = hooke.ModelBuilder(dim=2)
    b.grid(30, 30, spacing=0.1, mass=0.01, stiffness=100.0)
    model = b.finalize()
    x, _ = equilibrium(model)
    np.testing.assert_allclose(x, model.x0, rtol=0, atol=1e-15)
    dense, sparse = (hooke.modes(model, k=5, dense=flag).omega_squared for flag in (True, False))
    np.testing.assert_array_equal(dense[:3], 0.0)
    np.testing.assert_array_equal(sparse[:3], 0.0)
    assert dense[3] > 100.0  # the softest bending of a 2.9 m sheet of 0.01 kg, k = 100 N/m
    np.testing.assert_allclose(sparse[3:], dense[3:], rtol=1e-8)


def test_a_body_resting_on_a_plane_balances_its_weight_to_tol():
    """Two 1 kg particles joined by a spring, started 5 mm above a frictionless ground (inside
    d̂ = 10 mm) under gravity. Newton met the barrier's 8.5e4 N on its way, and the force scale
    kept it: a residual of 3.7e-6 N passed at tol 1e-10 (the barrier held 9.81000375 N). Measured
    against the forces at the answer, the barrier holds each weight to tol × 9.81 N."""
    from hooke.energies import barrier

    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    b.add_particle((0.0, 0.005), mass=1.0)
    b.add_particle((1.0, 0.005), mass=1.0)
    b.add_spring(0, 1, stiffness=100.0)
    b.add_plane((0.0, 1.0), (0.0, 0.0))
    model = b.finalize()
    x, _ = equilibrium(model)
    held = barrier.at_time(model, 0.0).normal_forces(model, x)[:, 0]
    np.testing.assert_allclose(held, 9.81, rtol=0, atol=1e-10 * 9.81)
    assert np.max(np.abs(hooke.System(model).potential_gradient(x))) <= 1e-10 * 9.81
