"""Cloth and soft bodies that behave like them (issue 17 §4): bending springs across the edges of a
sheet (grid second neighbours, triangle hinges, quad second neighbours) with the closed-form
energy of a fold, and masses lumped from a density (totals equal density × volume, area or
length; a tet mesh's boundary triangles add nothing), through the builder, meshes and scenes."""

from __future__ import annotations

import meshio
import numpy as np
import pytest

import hooke
from hooke import ModelBuilder
from hooke.mesh_topology import (bending_pairs, grid_bending, grid_quads, lattice_tetrahedra,
                                 lumped_masses)
from hooke.system import System


def pairs_set(pairs) -> set:
    return {tuple(sorted(pair)) for pair in np.asarray(pairs).tolist()}


def test_a_grids_quads_bend_across_their_edges_as_its_second_neighbours():
    for nx, ny in ((2, 2), (4, 3), (7, 5)):
        assert pairs_set(bending_pairs({"quad": grid_quads(nx, ny)})) == pairs_set(
            grid_bending(nx, ny))
    assert len(grid_bending(4, 3)) == 2 * 3 + 4 * 1


def test_triangles_bend_across_shared_edges_only():
    #  2 --- 3     two triangles share 1–2: the hinge joins 0 and 3; border edges bend freely,
    #  | \\  |     and an edge of a triangle and a quad (4–5 here) neither
    #  0 --- 1
    triangles = np.array([[0, 1, 2], [2, 1, 3], [3, 1, 4]])
    assert pairs_set(bending_pairs({"triangle": triangles})) == {(0, 3), (2, 4)}
    mixed = {"triangle": np.array([[0, 1, 2]]), "quad": np.array([[1, 5, 6, 2]])}
    assert len(bending_pairs(mixed)) == 0
    assert bending_pairs({"triangle": np.array([[0, 1, 2]])}).shape == (0, 2)


def folded_strip(bending: float, angle: float, nx: int = 6, ny: int = 3, h: float = 0.1):
    """A 3D grid strip with bending springs, and its positions folded by ``angle`` about the
    grid line i = 2 (the part i > 2 turned up): every structural and shear spring keeps its
    length, so only the bending springs (1, j)–(3, j) that cross the fold are strained."""
    b = ModelBuilder(dim=3)
    ids = b.grid(nx, ny, spacing=h, plane="xz", bending=bending)
    model = b.finalize()
    x = model.x0.copy()
    beyond = ids[3:].reshape(-1)
    along = x[beyond, 0] - 2 * h
    x[beyond, 0] = 2 * h + np.cos(angle) * along
    x[beyond, 1] = np.sin(angle) * along
    return model, x


@pytest.mark.parametrize("angle", [0.3, 1.0, np.pi / 2])
def test_a_fold_strains_only_the_bending_springs_across_it_by_the_closed_form(angle):
    """Energy of the fold: ny springs of rest length 2h shortened to 2h·cos(φ/2), each
    ½ k_b (2h (1 − cos(φ/2)))²; without bending springs the fold costs nothing."""
    h, ny, kb = 0.1, 3, 7.0
    model, x = folded_strip(kb, angle, ny=ny, h=h)
    energy = System(model).potential_energies(x)["spring"]
    assert energy == pytest.approx(ny * 0.5 * kb * (2 * h * (1 - np.cos(angle / 2))) ** 2,
                                   rel=1e-12)
    flat, x = folded_strip(0.0, angle, ny=ny, h=h)
    assert abs(System(flat).potential_energies(x)["spring"]) < 1e-28
    assert model.n_springs - flat.n_springs == len(grid_bending(6, ny))


def test_the_bending_springs_push_a_fold_back_towards_flat():
    """On the row just beyond the fold line the force turns the folded part back: its component
    along (sin φ, −cos φ), the direction in which φ decreases about the fold line, is positive."""
    angle = 1.0
    model, x = folded_strip(5.0, angle)
    force = -System(model).potential_gradient(x)
    row = np.arange(model.n_particles).reshape(6, 3)[3]
    unfold = force[row, 0] * np.sin(angle) - force[row, 1] * np.cos(angle)
    assert np.all(unfold > 0)


def test_lumped_masses_add_up_to_density_times_the_measure():
    rng = np.random.default_rng(5)
    n = 4
    grid = np.stack(np.meshgrid(*[np.arange(n)] * 3, indexing="ij"), -1).reshape(-1, 3) * 0.5
    tets = lattice_tetrahedra(n, n, n)
    masses = lumped_masses(grid, {"tetra": tets}, 800.0)
    assert masses.sum() == pytest.approx(800.0 * 1.5 ** 3, rel=1e-12)
    assert masses.max() / masses.min() > 1  # corners and inner vertices carry different shares
    # boundary triangles beside the tetrahedra add nothing
    faces = np.array([[0, 1, 2]])
    assert np.array_equal(lumped_masses(grid, {"tetra": tets, "triangle": faces}, 800.0), masses)
    square = np.array([[0.0, 0.0], [2.0, 0.0], [2.0, 3.0], [0.0, 3.0]])
    assert lumped_masses(square, {"quad": [[0, 1, 2, 3]]}, 0.5).tolist() == [0.75] * 4
    assert lumped_masses(square, {"triangle": [[0, 1, 2], [0, 2, 3]]}, 0.5).sum() == 3.0
    line = rng.normal(size=(5, 3))
    lengths = np.linalg.norm(np.diff(line, axis=0), axis=1)
    chain = np.stack([np.arange(4), np.arange(1, 5)], 1)
    assert lumped_masses(line, {"line": chain}, 2.0).sum() == pytest.approx(2.0 * lengths.sum())


def test_from_mesh_takes_density_and_bending(tmp_path):
    """A tet mesh file with its boundary triangles: the particles' masses sum to ρ·V; a triangle
    sheet gets one hinge spring per interior edge; bad values are one line each."""
    n = 3
    points = np.stack(np.meshgrid(*[np.arange(n)] * 3, indexing="ij"), -1).reshape(-1, 3) * 0.1
    mesh = meshio.Mesh(points, [("tetra", lattice_tetrahedra(n, n, n)),
                                ("triangle", np.array([[0, 1, 3]]))])
    path = tmp_path / "block.vtu"
    mesh.write(path)
    b = ModelBuilder(dim=3)
    b.from_mesh(str(path), density=1000.0, stiffness=100.0)
    assert b.finalize().mass.sum() == pytest.approx(1000.0 * 0.2 ** 3, rel=1e-12)
    sheet = meshio.Mesh(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0.0]]),
                        [("triangle", np.array([[0, 1, 2], [2, 1, 3]]))])
    b = ModelBuilder(dim=3)
    b.from_mesh(sheet, bending=2.0)
    model = b.finalize()
    assert model.n_springs == 5 + 1 and model.spring_stiffness.tolist().count(2.0) == 1
    for kwargs, message in (({"bending": -1.0}, "bending: must be >= 0, got -1.0"),
                            ({"density": 0.0}, "density: must be > 0, got 0.0"),
                            ({"bending": 1.0, "mesh": mesh.points[:4]}, None)):
        b = ModelBuilder(dim=3)
        if message is None:  # a tet-only mesh has no sheet to bend
            with pytest.raises(hooke.HookeInputError, match=r"^bending: needs triangles or quads"):
                b.from_mesh(meshio.Mesh(points, [("tetra", lattice_tetrahedra(n, n, n))]),
                            bending=1.0)
            continue
        with pytest.raises(hooke.HookeInputError, match=f"^{message}$"):
            b.from_mesh(sheet, **kwargs)


def test_the_cloth_scenes_carry_bending_springs():
    model = hooke.scene("cloth_fold", n=6).model
    assert model.n_springs == len(hooke.mesh_topology.grid_springs(6, 6)) + len(grid_bending(6, 6))
    assert np.count_nonzero(model.spring_stiffness == 3.0) == len(grid_bending(6, 6))
