"""Tetrahedron quality (hooke.mesh_quality) against closed forms, and the shipped soft-body mesh:
made by scripts/make_meshes.py (running it again gives the same mesh) with no slivers, a flat
base, and its tetrahedra filling the shape the script describes."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import meshio
import numpy as np
import pytest

from conftest import load_script
from hooke.mesh_quality import dihedral_angles, radius_ratios
from hooke.mesh_topology import boundary_faces

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "make_meshes.py"
REGULAR = np.array([[1.0, 1.0, 1.0], [1.0, -1.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]])


@pytest.fixture(scope="module")
def script():
    return load_script(SCRIPT)


@pytest.fixture(scope="module")
def shipped():
    return meshio.read(resources.files("hooke.scenes") / "meshes" / "blob.vtu")


def test_a_regular_tetrahedron_in_either_orientation_has_the_ideal_quality():
    rng = np.random.default_rng(3)
    rotation, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    points = 0.7 * REGULAR @ rotation.T + [5.0, -2.0, 1.0]  # any size, place and orientation
    tets = np.array([[0, 1, 2, 3], [1, 0, 2, 3]])
    np.testing.assert_allclose(dihedral_angles(points, tets), np.degrees(np.arccos(1 / 3)), rtol=1e-12)
    np.testing.assert_allclose(radius_ratios(points, tets), 1.0, rtol=1e-12)


def test_the_corner_of_a_cube_has_three_right_angles_and_ratio_sqrt3_minus_1():
    # the edges 01, 02, 03 meet at the right-angled corner; the faces across the slanted face
    # meet it at arccos(1/√3); inradius (3 − √3)/6 and circumradius √3/2 give 3r/R = √3 − 1
    points = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    angles = dihedral_angles(points, np.array([[0, 1, 2, 3]]))[0]
    np.testing.assert_allclose(angles, [90, 90, 90] + [np.degrees(np.arccos(1 / np.sqrt(3)))] * 3)
    np.testing.assert_allclose(radius_ratios(points, np.array([[0, 1, 2, 3]])), np.sqrt(3) - 1)


def test_a_sliver_has_angles_near_0_and_180_degrees_and_ratio_near_0():
    # a square's corners, two of them lifted by ε: four nearly coplanar points
    eps = 1e-3
    points = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 0.0, eps], [0.0, 1.0, eps]])
    angles = dihedral_angles(points, np.array([[0, 1, 2, 3]]))[0]
    assert angles.min() < 0.2 and angles.max() > 179.8
    assert radius_ratios(points, np.array([[0, 1, 2, 3]]))[0] < 5e-3
    assert angles.sum() > 360  # the six angles of a tetrahedron sum to between 2π and 3π


def test_the_script_makes_the_shipped_mesh_again(script, shipped):
    made = script.blob()
    np.testing.assert_allclose(made.points, shipped.points, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(made.cells_dict["tetra"], shipped.cells_dict["tetra"])


def test_the_shipped_mesh_has_no_slivers_and_a_flat_base(script, shipped):
    points, tets = shipped.points, shipped.cells_dict["tetra"]
    angles = dihedral_angles(points, tets)
    # isosurface stuffing's bound is [10.7°, 164.8°]; this mesh: 20.8° – 138.6° (0.8° – 179.0° before)
    assert angles.min() > 20 and angles.max() < 140
    assert radius_ratios(points, tets).min() > 0.28
    corners = points[tets]
    assert np.all(np.linalg.det(corners[:, 1:] - corners[:, :1]) > 0)  # all positively oriented
    base = points[:, 1] == points[:, 1].min()
    assert points[:, 1].min() == script.BASE and base.sum() >= 20
    # every boundary triangle lies on the shape's surface: its corners are zeros of the shape's
    # function (cut points to the bisection's 1e-16, lattice points warped onto them)
    surface = np.unique(boundary_faces({"tetra": tets}, 3))
    assert np.abs(script.shape(points[surface])).max() < 1e-12
    inner = np.setdiff1d(np.arange(len(points)), surface)
    assert np.all(script.shape(points[inner]) < 0)


def test_the_shipped_tetrahedra_fill_the_shape(script, shipped):
    """Their volume is the shape's (a Monte Carlo estimate, 1e6 samples: ±0.3 %) less the
    slivers of the curved surface that the flat triangles cut off (a few per cent)."""
    points, tets = shipped.points, shipped.cells_dict["tetra"]
    corners = points[tets]
    volume = np.linalg.det(corners[:, 1:] - corners[:, :1]).sum() / 6
    rng = np.random.default_rng(0)
    lo, hi = np.array([-0.6, 0.0, -0.5]), np.array([0.8, 1.2, 0.5])
    samples = rng.uniform(lo, hi, (1_000_000, 3))
    shape_volume = np.mean(script.shape(samples) < 0) * np.prod(hi - lo)
    assert 0.93 * shape_volume < volume < shape_volume
