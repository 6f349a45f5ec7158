"""Contact between surfaces (issue 14, first increment): the IPC barrier between surface elements
against finite differences and PSD projection, the squares_self_contact scene checked frame by
frame with distances computed here (numpy, independent of the barrier and of ipctk), the weight
of a body resting on another carried by the barrier, surfaces in the model, scene files and the
trajectory store, and bad input."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

import hooke
from hooke import ModelBuilder
from hooke.energies import hessian, surface_barrier
from hooke.integrators import get as get_integrator
from hooke.io.store import read_trajectory
from hooke.linalg import SparseSolver, installed_direct_solvers
from hooke.system import System

from conftest import fd_gradient, fd_jacobian, run_cli

DHAT, KAPPA = 0.01, 1e5


# -- independent geometry (numpy) ----------------------------------------------------------------
def distance_matrix(x: np.ndarray, points: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """(points, segments) distance of each particle to each segment (closest point clamped)."""
    p = x[points][:, None, :]
    a, b = x[faces[:, 0]][None], x[faces[:, 1]][None]
    ab = b - a
    t = np.clip(((p - a) * ab).sum(-1) / (ab * ab).sum(-1), 0.0, 1.0)
    return np.linalg.norm(p - (a + t[..., None] * ab), axis=-1)


def point_segment_distances(x: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Distance of every surface particle to every segment not containing it, (pairs,)."""
    points = np.unique(faces)
    own = (points[:, None] == faces[None, :, 0]) | (points[:, None] == faces[None, :, 1])
    return distance_matrix(x, points, faces)[~own]


def gap_between(x: np.ndarray, faces_a: np.ndarray, faces_b: np.ndarray) -> float:
    """The smallest particle–segment distance between two surfaces."""
    return min(distance_matrix(x, np.unique(faces_a), faces_b).min(),
               distance_matrix(x, np.unique(faces_b), faces_a).min())


def crossing_pairs(x: np.ndarray, faces: np.ndarray) -> int:
    """How many pairs of segments sharing no particle cross or touch (orientation tests)."""
    def orient(p, q, r):
        return np.sign((q[..., 0] - p[..., 0]) * (r[..., 1] - p[..., 1])
                       - (q[..., 1] - p[..., 1]) * (r[..., 0] - p[..., 0]))

    i, j = np.triu_indices(len(faces), k=1)
    disjoint = ~np.any(faces[i][:, :, None] == faces[j][:, None, :], axis=(1, 2))
    i, j = i[disjoint], j[disjoint]
    a, b, c, d = (x[faces[i, 0]], x[faces[i, 1]], x[faces[j, 0]], x[faces[j, 1]])
    crossing = ((orient(a, b, c) * orient(a, b, d) <= 0) & (orient(c, d, a) * orient(c, d, b) <= 0))
    return int(np.count_nonzero(crossing))


# -- models ------------------------------------------------------------------------------------
def two_squares(gap: float, shift: float = 0.0, n: int = 3):
    """Two n × n grids of side 0.45 (structural + diagonal springs, 22.5 kg nodes), the second
    ``gap`` below the first and ``shift`` to the right, each with its boundary loop as surface."""
    b = ModelBuilder(dim=2, gravity=(0.0, -9.81), spring_energy="squared_length")
    spacing = 0.45 / (n - 1)
    upper = b.grid(n, n, spacing=spacing, origin=(-0.225, -0.225), mass=22.5, stiffness=1e5,
                   surface=True)
    lower = b.grid(n, n, spacing=spacing, origin=(-0.225 + shift, -0.675 - gap), mass=22.5,
                   stiffness=1e5, surface=True)
    b.set_contact(dhat=DHAT, kappa=KAPPA, area=0.225, self_contact=True)
    return b.finalize(), upper.ravel(), lower.ravel()


def near_contact_2d(rng):
    """Two squares 0.4 d̂ apart, shifted, every particle jittered by up to 0.2 d̂."""
    model, _, _ = two_squares(gap=0.4 * DHAT, shift=0.06)
    return model, model.x0 + rng.uniform(-0.2, 0.2, size=model.x0.shape) * DHAT


def near_contact_3d(rng):
    """Two 3 × 3 cloths (triangles) 0.5 d̂ apart, offset, jittered by up to 0.15 d̂."""
    b = ModelBuilder(dim=3)
    b.grid(3, 3, spacing=0.1, origin=(0.0, 0.0, 0.0), plane="xz", surface=True)
    b.grid(3, 3, spacing=0.1, origin=(0.031, -0.5 * DHAT, 0.017), plane="xz", surface=True)
    b.set_contact(dhat=DHAT, kappa=KAPPA, self_contact=True)
    model = b.finalize()
    return model, model.x0 + rng.uniform(-0.15, 0.15, size=model.x0.shape) * DHAT


NEAR_CONTACT = {2: near_contact_2d, 3: near_contact_3d}


# -- the barrier ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_surface_barrier_gradient_and_hessian_match_finite_differences(dim, seed):
    model, x = NEAR_CONTACT[dim](np.random.default_rng(seed))
    energy = surface_barrier.value(model, x)
    assert 0 < energy < np.inf
    grad = surface_barrier.gradient(model, x)
    assert np.abs(grad).max() > 0
    numeric = fd_gradient(lambda y: surface_barrier.value(model, y), x, eps=1e-8)
    np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-5 * np.abs(grad).max())
    dense = hessian(surface_barrier, model, x).toarray()
    numeric = fd_jacobian(lambda y: surface_barrier.gradient(model, y), x, eps=1e-9)
    np.testing.assert_allclose(dense, numeric, rtol=1e-3, atol=1e-4 * np.abs(dense).max())


@pytest.mark.parametrize("dim", [2, 3])
def test_projected_surface_hessian_is_positive_semi_definite(dim):
    model, x = NEAR_CONTACT[dim](np.random.default_rng(5))
    raw = hessian(surface_barrier, model, x).toarray()
    projected = hessian(surface_barrier, model, x, project_psd=True).toarray()
    scale = np.abs(raw).max()
    assert np.linalg.eigvalsh(raw).min() < -1e-6 * scale  # the projection has work to do
    assert np.linalg.eigvalsh(projected).min() >= -1e-9 * scale
    np.testing.assert_allclose(projected, projected.T, atol=1e-12 * scale)


def test_surface_barrier_is_zero_beyond_dhat_and_grows_without_bound_as_a_gap_closes():
    model, upper, lower = two_squares(gap=2 * DHAT, shift=0.1)
    assert surface_barrier.value(model, model.x0) == 0.0
    assert not surface_barrier.gradient(model, model.x0).any()
    energies = []
    for gap in (1e-1, 1e-3, 1e-6, 1e-9):
        x = model.x0.copy()
        x[lower, 1] += (2 - gap) * DHAT
        energies.append(surface_barrier.value(model, x))
    assert 0 < energies[0] < energies[1] < energies[2] < energies[3] < np.inf
    # the log singularity: equal steps in ln(gap) give equal steps in energy (to 5 %)
    assert (energies[3] - energies[2]) == pytest.approx(energies[2] - energies[1], rel=0.05)


def test_near_contact_force_law_is_the_books_point_edge_barrier():
    """One vertex above the middle of a far-away segment at d = d̂/100: the repulsion equals the
    book's point–edge barrier's −d/dd [w·κ/8·d̂·(s² − 1) ln s²], w = ½ A_v (A_v: the vertex's
    boundary share, half its two segments' lengths), to 1e-3 (the two agree as d → 0)."""
    b = ModelBuilder(dim=2)
    for x in ((-1.0, 0.0), (1.0, 0.0), (-0.1, 0.3), (0.0, 1e-4), (0.1, 0.3)):
        b.add_particle(x)
    b.add_surface([[0, 1]])
    b.add_surface([[2, 3], [3, 4]])
    b.set_contact(dhat=DHAT, kappa=KAPPA, self_contact=True)
    model = b.finalize()
    d = 1e-4
    weight = 0.5 * np.hypot(0.1, 0.3 - d)  # ½ A_v, A_v = ½ · 2 segments of length √(0.1² + 0.3²)
    s2 = (d / DHAT) ** 2
    book = -weight * KAPPA / 8 * DHAT * (np.log(s2) + (s2 - 1) / s2) * 2 * d / DHAT ** 2
    force = surface_barrier.contact_forces(model, model.x0)[3, 1]
    assert force == pytest.approx(book, rel=1e-3)


@pytest.mark.parametrize("dim", [2, 3])
def test_ccd_step_keeps_the_surfaces_apart(dim):
    """A step pushing one body through the other is cut to 0.9 of the first time of impact."""
    model, x = NEAR_CONTACT[dim](np.random.default_rng(3))
    p = np.zeros_like(x)
    half = model.n_particles // 2
    p[half:, 1] = 10 * DHAT  # the second body straight up through the first
    alpha = surface_barrier.max_step(model, x, p)
    assert 0 < alpha < 0.2
    assert surface_barrier.value(model, x + alpha * p) < np.inf
    if dim == 2:
        faces = model.surface_faces
        assert point_segment_distances(x + alpha * p, faces).min() > 0
        assert crossing_pairs(x + alpha * p, faces) == 0
        assert crossing_pairs(x + p, faces) > 0  # the full step would have crossed


# -- the scene -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def squares_run():
    scene = hooke.scene("squares_self_contact")
    return scene, hooke.simulate(scene)


def test_squares_self_contact_never_intersect(squares_run):
    scene, result = squares_run
    model = scene.model
    assert result.complete and result.t[-1] == pytest.approx(3.0)
    faces = model.surface_faces
    distances = np.array([point_segment_distances(x, faces).min() for x in result.x])
    assert distances.min() > 1e-3  # measured 3.3e-3 m, at t = 0.94 s under the ceiling
    close = distances < DHAT  # the run's own record (ipctk) agrees where pairs are within d̂
    assert close.sum() > 100
    np.testing.assert_allclose(result.surface_distance[close], distances[close], rtol=1e-9)
    assert np.all(np.isinf(result.surface_distance[~close]))
    assert all(crossing_pairs(x, faces) == 0 for x in result.x)
    assert np.nanmin(result.contact_distance) > 0  # and the planes kept everything above


def test_squares_self_contact_follow_the_books_story(squares_run):
    """The upper square lands on the lower one (t ≈ 0.26 s), bounces up to 5 cm, lands again and
    rests on it (0.55–0.9 s: the bodies within d̂ of each other, its centre 0.35–0.5 m above the
    lower's) until the ceiling comes (t ≈ 0.9 s); pressed, it slides
    off sideways (no friction between the squares) to the ground beside it, as the book tells;
    at the end both lie squeezed between the ground (−1) and the ceiling (−0.7)."""
    scene, result = squares_run
    upper, lower = np.arange(9), np.arange(9, 18)
    faces, owner = scene.model.surface_faces, scene.model.surface_of_face
    for frame in np.flatnonzero((result.t > 0.55) & (result.t < 0.9)):
        x = result.x[frame]
        assert 0.35 < x[upper, 1].mean() - x[lower, 1].mean() < 0.5
        assert gap_between(x, faces[owner == 0], faces[owner == 1]) < DHAT
    end = result.x[-1]
    for body in (upper, lower):
        assert end[body, 1].min() == pytest.approx(-1.0, abs=DHAT)
        assert end[body, 1].max() == pytest.approx(-0.7, abs=DHAT)
    assert end[upper, 0].max() < end[lower, 0].min()  # beside it, on its left


def test_squares_self_contact_take_the_generic_newton_path():
    scene = hooke.scene("squares_self_contact")
    integrator = get_integrator("implicit_euler")(System(scene.model), scene.dt, **scene.options)
    assert not integrator.compiled


def test_other_integrators_refuse_contact_between_surfaces():
    model, _, _ = two_squares(gap=0.1)
    assert model.n_planes == 0
    for name in hooke.integrators():
        cls = get_integrator(name)
        if cls.supports_contact:
            continue
        with pytest.raises(hooke.HookeInputError) as info:
            cls(System(model), 0.01)
        message = str(info.value)
        assert "\n" not in message
        assert message.startswith(f"integrator: '{name}' does not handle contact between surfaces")


# -- bodies at rest ------------------------------------------------------------------------------
def test_the_barrier_carries_the_upper_squares_weight():
    """A 0.45 m square resting on a 0.9 m one on the ground, its bottom vertices over the lower's
    top segments (a vertex exactly over a vertex is an unstable balance): from t = 0.5 s to 3 s
    the barrier forces on the upper square add up to its weight (0.2 %), with a sideways part
    under 0.5 % of it (the lower's top sags under the load, so the upper creeps sideways: no
    friction between the squares yet), and to minus that on the lower (action and reaction)."""
    b = ModelBuilder(dim=2, gravity=(0.0, -9.81), spring_energy="squared_length")
    upper = b.grid(3, 3, spacing=0.225, origin=(-0.125, 0.005), mass=22.5, stiffness=1e5,
                   surface=True).ravel()
    lower = b.grid(3, 3, spacing=0.45, origin=(-0.45, -0.9), mass=22.5, stiffness=1e5,
                   surface=True).ravel()
    b.add_plane((0.0, 1.0), (0.0, -0.905), friction=0.4)
    b.set_contact(dhat=DHAT, kappa=KAPPA, area=0.225, self_contact=True)
    model = b.finalize()
    result = hooke.simulate(hooke.Scene(model, integrator="implicit_euler", dt=0.01, t_end=3.0))
    weight = model.mass[upper].sum() * 9.81
    for frame in np.flatnonzero(result.t >= 1.0):
        x = result.x[frame]
        assert np.abs(result.v[frame]).max() < 0.1  # quasi-static
        forces = surface_barrier.contact_forces(model, x)
        assert forces[upper, 1].sum() == pytest.approx(weight, rel=2e-3)
        assert abs(forces[upper, 0].sum()) < 5e-3 * weight
        np.testing.assert_allclose(forces[lower].sum(axis=0), -forces[upper].sum(axis=0),
                                   atol=1e-9 * weight)


# -- the linear solver with a changing pattern -----------------------------------------------------
@pytest.mark.parametrize("name", installed_direct_solvers())
def test_direct_solvers_follow_a_changing_pattern(name):
    """PARDISO keeps its analysis for one pattern: a contact pair appearing between two solves
    gave an IndexError before the solver noticed the new pattern."""
    n = 300
    base = sp.diags([4.0] * n) + sp.diags([-1.0] * (n - 1), 1) + sp.diags([-1.0] * (n - 1), -1)
    pair = sp.coo_matrix(([-1.0, -1.0, 2.0, 2.0], ([0, 200, 0, 200], [200, 0, 0, 200])), (n, n))
    solver, rhs = SparseSolver(name), np.arange(n, dtype=float)
    for matrix in (sp.csr_matrix(base), sp.csr_matrix(base + pair), sp.csr_matrix(base)):
        np.testing.assert_allclose(matrix @ solver.solve(matrix, rhs), rhs, atol=1e-9 * n)


# -- surfaces in the model ----------------------------------------------------------------------
def test_surface_true_gives_each_body_its_boundary():
    b = ModelBuilder(dim=2)
    b.grid(4, 3, surface=True)  # boundary loop: 2·3 + 2·2 segments
    b.grid(1, 5, origin=(10.0, 0.0), surface=True)  # a single row: the chain itself
    model = b.finalize()
    assert model.n_surface_faces == 10 + 4
    np.testing.assert_array_equal(np.bincount(model.surface_of_face), [10, 4])
    loop = model.surface_faces[model.surface_of_face == 0]
    assert np.all(np.bincount(loop.ravel(), minlength=12)[[0, 1, 2, 3, 5, 6, 8, 9, 10, 11]] == 2)

    b = ModelBuilder(dim=3)
    b.lattice(3, 4, 2, surface=True)
    b.grid(3, 3, origin=(0.0, 5.0, 0.0), plane="xz", surface=True)
    model = b.finalize()
    block = model.surface_faces[model.surface_of_face == 0]
    assert len(block) == 2 * (2 * 2 * 3 + 2 * 2 * 1 + 2 * 3 * 1) * 2 // 2  # 2 triangles per square
    edges = np.sort(np.concatenate([block[:, [0, 1]], block[:, [1, 2]], block[:, [2, 0]]]), axis=1)
    assert np.all(np.unique(edges, axis=0, return_counts=True)[1] == 2)  # closed
    assert np.count_nonzero(model.surface_of_face == 1) == 8  # the cloth's triangles


def test_from_mesh_surface_is_the_boundary_of_tetrahedra_and_of_triangles():
    import meshio

    from hooke.mesh_topology import lattice_tetrahedra

    points = np.stack(np.meshgrid(*[np.arange(3.0)] * 3, indexing="ij"), -1).reshape(-1, 3)
    b = ModelBuilder(dim=3)
    b.from_mesh(meshio.Mesh(points, [("tetra", lattice_tetrahedra(3, 3, 3))]), surface=True)
    faces = b.finalize().surface_faces
    edges = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1)
    assert len(faces) == 6 * 4 * 2  # 6 sides of 2 × 2 squares, 2 triangles each
    assert np.all(np.unique(edges, axis=0, return_counts=True)[1] == 2)  # closed
    assert np.all(np.abs(points[faces] - 1.0).max(axis=2).min(axis=1) == 1.0)  # on the boundary

    b = ModelBuilder(dim=2)
    square = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
    b.from_mesh(meshio.Mesh(square, [("triangle", np.array([[0, 1, 2], [0, 2, 3]]))]),
                surface=True)
    faces = b.finalize().surface_faces
    assert sorted(map(sorted, faces.tolist())) == [[0, 1], [0, 3], [1, 2], [2, 3]]


def test_the_store_reads_the_surfaces_back(tmp_path, squares_run):
    scene, result = squares_run
    path = tmp_path / "run.h5"
    hooke.simulate(scene, t_end=0.02, store=path)
    model = read_trajectory(path)["model"]
    np.testing.assert_array_equal(model.surface_faces, scene.model.surface_faces)
    np.testing.assert_array_equal(model.surface_of_face, scene.model.surface_of_face)
    assert model.self_contact is True and model.n_contact_faces == 16
    stored = hooke.open(path)
    np.testing.assert_array_equal(stored.surface_distance, result.surface_distance[:3])


# -- bad input -------------------------------------------------------------------------------------
API_CASES = {
    "index-out-of-range": ([[0, 1], [1, 9]], "surfaces[0].faces[1]: particle index out of range "
                                             "[0, 4), got [1, 9]"),
    "repeated-particle": ([[0, 1], [2, 2]], "surfaces[0].faces[1]: is degenerate: it repeats a "
                                           "particle, got [2, 2]"),
    "wrong-arity": ([[0, 1, 2]], "surfaces[0].faces: must be a non-empty list of segments"),
    "not-integers": ([[0, 1.0]], "surfaces[0].faces[0]: must hold integer particle indices"),
    "negative-friction": (([[0, 1]], -0.5), "surfaces[0].friction: must be >= 0, got -0.5"),
    "text-friction": (([[0, 1]], "0.3"), "surfaces[0].friction: must be a number, got '0.3'"),
}


@pytest.mark.parametrize("dim, make, args, counts, least", [
    (2, "grid", (1, 1), "nx × ny = 1 × 1", "in all"),
    (3, "grid", (1, 3), "nx × ny = 1 × 3", "along each axis"),
    (3, "lattice", (2, 1, 2), "nx × ny × nz = 2 × 1 × 2", "along each axis")])
def test_a_surface_of_a_body_without_cells_is_named(dim, make, args, counts, least):
    """redL: grid(1, 1, surface=True) and lattice(2, 1, 2, surface=True) were NumPy's "cannot
    reshape array of size 0 into shape (0,newaxis)" (a bug line): no cell, no boundary."""
    with pytest.raises(hooke.HookeInputError) as info:
        getattr(ModelBuilder(dim=dim), make)(*args, surface=True)
    assert str(info.value) == (f"surface: needs a body with cells: {counts} has none, so no "
                               f"boundary to make a contact surface of (at least 2 particles "
                               f"{least}), got True")
    assert ModelBuilder(dim=2).grid(1, 2, surface=True).size == 2  # a chain of one segment


@pytest.mark.parametrize("case", list(API_CASES))
def test_add_surface_names_the_face_and_its_value(case):
    faces, message = API_CASES[case]
    b = ModelBuilder(dim=2)
    for x in ((0, 0), (1, 0), (2, 0), (3, 0)):
        b.add_particle(x)
    with pytest.raises(hooke.HookeInputError) as info:
        b.add_surface(*faces) if isinstance(faces, tuple) else b.add_surface(faces)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


SURFACE_SCENE = """\
dim = 2
[run]
integrator = "implicit_euler"
dt = 0.01
t_end = 0.1
[[particles]]
x = [0.0, 0.0]
[[particles]]
x = [1.0, 0.0]
[[particles]]
x = [0.5, {y}]
[[particles]]
x = [0.5, {top}]
[[springs]]
i = 2
j = 3
stiffness = 100.0
rest_length = 0.4
[[surfaces]]
faces = [[0, 1]]
[[surfaces]]
faces = [[2, {j}]]
friction = {mu}
[contact]
self_contact = {self_contact}
"""

FILE_CASES = {
    "index-out-of-range": (dict(j=7), "surfaces[1].faces[0]: particle index out of range [0, 4), "
                                      "got [2, 7]"),
    "degenerate-face": (dict(top=0.2, y=0.2), "surfaces[1].faces[0]: is degenerate: its "
                                              "particles coincide at the start, got [2, 3]"),
    "touching-start": (dict(y=0.0), "surfaces: segment (0, 1) and segment (2, 3) cross or touch "
                                    "at the start"),
    "crossing-start": (dict(y=-0.5), "surfaces: segment (0, 1) and segment (2, 3) cross or touch "
                                     "at the start"),
    "negative-friction": (dict(mu=-0.1), "surfaces[1].friction: Input should be greater than or "
                                         "equal to 0, got -0.1"),
    # redL: a face given twice doubled its barrier in silence (the docs' triangle on its floor
    # [[0, 1], [1, 0]] came to rest 5e-5 m higher); within a surface or across two
    "repeated-face": (dict(j="3], [3, 2"), "surfaces[1].faces[1]: repeats surfaces[1].faces[0] (a "
                      "face given twice counts twice in the contact barrier), got [3, 2]"),
    "face-of-another-surface": (dict(j="3], [1, 0"), "surfaces[1].faces[1]: repeats "
                                "surfaces[0].faces[0] (a face given twice counts twice in the "
                                "contact barrier), got [1, 0]"),
}


def surface_scene(tmp_path, **changes):
    values = dict(y=0.1, top=0.5, j=3, self_contact="true", mu=0.0) | changes
    path = tmp_path / "surfaces.toml"
    path.write_text(textwrap.dedent(SURFACE_SCENE.format(**values)), encoding="utf-8")
    return path


def test_hooke_run_reports_the_smallest_distance_between_surfaces(tmp_path):
    completed = run_cli("run", "squares_self_contact", "--t-end", "1", "--out", str(tmp_path))
    assert completed.returncode == 0, completed.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert 1e-3 < summary["min_surface_distance_m"] < DHAT
    assert "min distance between surfaces" in completed.stdout


def test_a_valid_surface_scene_file_runs_and_keeps_the_segments_apart(tmp_path):
    scene = hooke.load(surface_scene(tmp_path))
    assert scene.model.self_contact and scene.model.n_surface_faces == 2
    result = hooke.simulate(scene)
    assert result.complete
    assert min(point_segment_distances(x, scene.model.surface_faces).min() for x in result.x) > 0


@pytest.mark.parametrize("case", list(FILE_CASES))
def test_hooke_check_refuses_bad_surfaces_in_one_line(tmp_path, case):
    changes, message = FILE_CASES[case]
    completed = run_cli("check", str(surface_scene(tmp_path, **changes)))
    assert completed.returncode == 2
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]


def test_a_body_whose_face_areas_overflow_gives_its_own_error_and_no_numpy_warning(
        tmp_path, monkeypatch, capsys):
    """Issue 15 red team (redI): cloth_sphere with size = 1e150 (as the notebook's slider or the
    viewer's field can ask) printed NumPy's "overflow encountered in multiply" from the face
    area check, before `hooke check`'s one line and alone when the scene builds."""
    import re
    import warnings

    from conftest import run_main

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scene = hooke.scene("cloth_sphere", size=1e150)
    assert scene.model.n_particles == 1600
    source = hooke.scene("cloth_sphere").source
    path = tmp_path / "big.toml"
    path.write_text(re.sub(r"\nsize = [^\n#]*", "\nsize = 1e150 ", source))
    code, lines = run_main(monkeypatch, capsys, "check", str(path))
    assert code == 2 and len(lines) == 1
    assert lines[0].startswith("error: particles[0].mass: is lost to round-off in "
                               "implicit_euler's step matrix")


def test_self_contact_without_a_surface_is_refused(tmp_path):
    text = surface_scene(tmp_path).read_text().split("[[surfaces]]")[0]
    path = tmp_path / "no_surface.toml"
    path.write_text(text + "[contact]\nself_contact = true\n", encoding="utf-8")
    with pytest.raises(hooke.HookeInputError, match=r"^contact\.self_contact: needs a contact "
                                                    r"surface \(\[\[surfaces\]\]\), got True$"):
        hooke.load(path)
    b = ModelBuilder(dim=2)
    b.add_particle((0.0, 0.0))
    b.set_contact(self_contact=True)
    with pytest.raises(hooke.HookeInputError, match=r"^contact\.self_contact: needs a contact "):
        b.finalize()


def test_builder_names_touching_elements_at_the_start():
    with pytest.raises(hooke.HookeInputError) as info:
        two_squares(gap=-0.01)  # overlapping by 1 cm
    lines = str(info.value).splitlines()
    assert lines and all(line.startswith("surfaces: segment (") and "cross or touch at the start"
                         in line for line in lines)


def test_a_moving_floor_segment_lifts_a_damped_triangle_without_touching_it():
    """Pins on a prescribed path and damped springs with self-contact (the implicit step's full
    matrix then couples the moving pins through the barrier too): the floor segment, pinned and
    rising at 0.5 m/s, carries the triangle up; the floor follows its path exactly and the
    triangle never reaches it."""
    from hooke.motion import ConstantVelocity

    b = ModelBuilder(dim=2, gravity=(0.0, -9.81))
    rise = ConstantVelocity((0.0, 0.5))
    floor = [b.add_particle(x, pinned=True, motion=rise) for x in ((-1.0, 0.0), (1.0, 0.0))]
    tri = [b.add_particle(x) for x in ((-0.2, 0.05), (0.2, 0.05), (0.0, 0.35))]
    for i, j in ((0, 1), (1, 2), (2, 0)):
        b.add_spring(tri[i], tri[j], stiffness=1e4, damping=5.0)
    b.add_surface([floor])
    b.add_surface([[tri[0], tri[1]], [tri[1], tri[2]], [tri[2], tri[0]]])
    b.set_contact(dhat=DHAT, kappa=KAPPA, self_contact=True)
    model = b.finalize()
    result = hooke.simulate(hooke.Scene(model, integrator="implicit_euler", dt=0.01, t_end=1.0))
    np.testing.assert_allclose(result.x[:, floor, 1], 0.5 * result.t[:, None] * [1, 1], atol=1e-12)
    gaps = [distance_matrix(x, np.array(tri), np.array([floor])).min() for x in result.x]
    assert 0 < min(gaps) < DHAT  # carried on the barrier, never touching
    assert result.x[-1, tri, 1].min() > 0.45  # lifted with the floor


def test_the_surface_barrier_repeats_bit_for_bit_on_a_busy_machine():
    """ipctk runs on one thread (surfaces.load_ipctk): on two threads under load its gradient of
    the same state differed in the last bit now and then (2 values in 3,000 calls measured), and a
    run's saved energies then differed from a re-derivation (CI, squares_self_contact)."""
    import subprocess
    import sys

    scene = hooke.scene("squares_self_contact")
    x = hooke.simulate(scene, t_end=60 * scene.dt).x[-1]
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        values = {surface_barrier.value(scene.model, x) for _ in range(500)}
        gradients = {surface_barrier.gradient(scene.model, x).tobytes() for _ in range(2000)}
    finally:
        for process in busy:
            process.kill()
            process.wait()
    assert surface_barrier.of(scene.model).ipctk.get_num_threads() == 1
    assert len(gradients) == 1 and len(values) == 1
    assert np.abs(np.frombuffer(gradients.pop())).max() > 0.0  # pairs are in contact at x


# -- friction between surfaces -----------------------------------------------------------------
SLOPE = np.radians(20.0)
DOWN_SLOPE = np.array([np.cos(SLOPE), -np.sin(SLOPE)])
OUT_OF_SLOPE = np.array([np.sin(SLOPE), np.cos(SLOPE)])


def block_on_slope(mu: float, t_end: float = 0.4):
    """A stiff 0.1 m square (1 kg) 0.5 mm above a fixed 20° slope (a pinned segment, its own
    surface), both of friction μ; returns (t, the square's travel down the slope [m])."""
    b = ModelBuilder(dim=2, gravity=(0.0, -9.81))
    ends = [b.add_particle(s * 2.0 * DOWN_SLOPE, pinned=True) for s in (-1, 1)]
    corners = [b.add_particle(5e-4 * OUT_OF_SLOPE + u * DOWN_SLOPE + w * OUT_OF_SLOPE, mass=0.25)
               for u, w in ((0, 0), (0.1, 0), (0.1, 0.1), (0, 0.1))]
    for i in range(4):
        for j in range(i + 1, 4):
            b.add_spring(corners[i], corners[j], stiffness=1e6)
    b.add_surface([ends], friction=mu)
    b.add_surface([[corners[k], corners[(k + 1) % 4]] for k in range(4)], friction=mu)
    b.set_contact(dhat=1e-3, kappa=1e5, epsv=1e-4, area=0.05, self_contact=True)
    model = b.finalize()
    scene = hooke.Scene(model=model, state=hooke.State(0.0, model.x0.copy(), model.v0.copy()),
                        integrator="implicit_euler", dt=1e-3, t_end=t_end, options={"tol": 1e-8})
    result = hooke.simulate(scene)
    assert result.surface_distance.min() > 0
    centre = result.x[:, corners].mean(axis=1)
    return result.t, (centre - centre[0]) @ DOWN_SLOPE


@pytest.mark.parametrize("mu", [0.0, 0.1, 0.25])
def test_a_block_slides_down_a_block_at_g_sin_minus_mu_cos(mu):
    """μ < tan 20° = 0.364: once the contact has settled (t > 0.1 s) the travel is a parabola of
    acceleration g(sin θ − μ cos θ) (fitted, within 0.5 %)."""
    t, travel = block_on_slope(mu)
    late = t > 0.1
    acceleration = 2.0 * np.polyfit(t[late], travel[late], 2)[0]
    expected = 9.81 * (np.sin(SLOPE) - mu * np.cos(SLOPE))
    assert acceleration == pytest.approx(expected, rel=5e-3)


def test_a_block_sticks_on_a_block_when_mu_exceeds_tan_theta():
    """μ = 0.6 > tan 20°: after the contact settles the block stays put (it creeps below the
    smoothing speed ε_v = 1e-4 m/s at most: under 20 µm in 0.2 s)."""
    t, travel = block_on_slope(0.6)
    assert abs(travel[-1] - travel[np.searchsorted(t, 0.2)]) < 2e-5


def test_surface_friction_is_stored_and_each_pair_takes_the_mean_of_its_surfaces(tmp_path):
    """Model.surface_friction survives the store; a particle carries its surfaces' largest μ."""
    from hooke.energies.surface_friction import vertex_friction

    b = ModelBuilder(dim=2)
    for x in ((0, 0), (1, 0), (0, 1), (1, 1), (2, 1)):
        b.add_particle(x)
    b.add_surface([[0, 1]], friction=0.2)
    b.add_surface([[2, 3]], friction=0.6)
    b.add_surface([[3, 4]])
    b.set_contact(self_contact=True)
    model = b.finalize()
    assert model.surface_friction.tolist() == [0.2, 0.6, 0.0]
    assert vertex_friction(model, np.arange(5)).tolist() == [0.2, 0.2, 0.6, 0.6, 0.0]
    scene = hooke.Scene(model=model, state=hooke.State(0.0, model.x0.copy(), model.v0.copy()),
                        integrator="implicit_euler", dt=0.01, t_end=0.02)
    hooke.simulate(scene, store=tmp_path / "run.h5")
    assert read_trajectory(tmp_path / "run.h5")["model"].surface_friction.tolist() == [
        0.2, 0.6, 0.0]


def test_a_step_far_longer_than_the_surface_is_cut_before_the_ccd():
    """Issue 15: chain_pile under a gravity of 1e300 (the viewer's parameter field) gave Newton
    steps of 4e294 m, and ipctk's broad phase over that sweep ran for minutes; the CCD now sees
    at most CCD_REACH times the surface's extent, and the run stops with its Newton failure."""
    scene = hooke.scene("chain_pile", gravity=1e300)
    with pytest.raises(hooke.SimulationError, match="step 1 .* Newton did not converge"):
        hooke.simulate(scene, t_end=0.004)
    term = next(t for t in hooke.System(scene.model).terms if t.NAME == surface_barrier.NAME)
    x = scene.model.x0
    extent = np.ptp(x, axis=0).max()
    down = np.zeros_like(x)
    down[:, 1] = -1.0  # every particle straight down: no pair comes closer, nothing to cut but length
    free = term.max_step(scene.model, x, down * 0.5 * extent)
    assert free == 1.0
    far = term.max_step(scene.model, x, down * 1e294)
    assert far == pytest.approx(surface_barrier.CCD_REACH * extent / 1e294, rel=1e-12)
    # A step with a NaN (cloth_fold under a damping of 1e300) hung ipctk's CCD: no motion at all.
    down[3, 0] = np.nan
    assert term.max_step(scene.model, x, down) == 0.0
    with pytest.raises(hooke.SimulationError, match="step 1 .*the line search found no decrease"):
        hooke.simulate(hooke.scene("cloth_fold", damping=1e300), t_end=0.01)
