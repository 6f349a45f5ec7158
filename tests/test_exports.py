"""Exports people open elsewhere: the mesh cells a model keeps (``Model.triangles``,
``Model.tetrahedra``), the XDMF sidecar as VTK's reader (ParaView's) reads it, the VTU frames and
the surface sequences (OBJ, PLY) as meshio reads them back."""

from __future__ import annotations

from dataclasses import replace

import h5py
import meshio
import numpy as np
import pytest
from typer.testing import CliRunner

import hooke
from hooke.cli import app
from hooke.io.export import export_frames, export_vtu, write_xdmf
from hooke.io.store import input_hash, read_trajectory
from hooke.mesh_topology import boundary_faces, lattice_tetrahedra


# -- the cells a model keeps ----------------------------------------------------------------------
def test_builders_keep_their_cells():
    """A 3 × 2 grid: 2 cells, each split along its (i, j)–(i + 1, j + 1) diagonal; a lattice's
    Freudenthal tetrahedra; a mesh's triangles and split quads, renumbered to the particles; the
    array-built cloth and block scenes alike; springs-only models keep none."""
    b = hooke.ModelBuilder(dim=2)
    b.add_particle((5.0, 5.0))  # the grid's particles start at index 1
    b.grid(3, 2, spacing=0.5)
    model = b.finalize()
    # particle (i, j) is 1 + 2i + j: cells (1, 3, 4, 2) and (3, 5, 6, 4)
    np.testing.assert_array_equal(model.triangles, [[1, 3, 4], [3, 5, 6], [1, 4, 2], [3, 6, 4]])
    assert model.tetrahedra.shape == (0, 4)
    np.testing.assert_array_equal(model.surface_triangles(), model.triangles)  # 2D: the sheet

    b = hooke.ModelBuilder(dim=3)
    b.add_particle((9.0, 9.0, 9.0))
    b.lattice(2, 3, 2, spacing=0.5)
    model = b.finalize()
    np.testing.assert_array_equal(model.tetrahedra, 1 + lattice_tetrahedra(2, 3, 2))
    np.testing.assert_array_equal(model.surface_triangles(),
                                  boundary_faces({"tetra": model.tetrahedra}, 3))
    assert len(model.surface_triangles()) == 2 * (2 * 2 + 2 * 1 + 2 * 2)  # the box's 10 squares

    mesh = meshio.Mesh(np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [2, 0, 0.5]], float),
                       [("quad", np.array([[0, 1, 2, 3]])), ("triangle", np.array([[1, 4, 2]]))])
    b = hooke.ModelBuilder(dim=3)
    b.add_particle((9.0, 9.0, 9.0))
    b.from_mesh(mesh)
    np.testing.assert_array_equal(b.finalize().triangles, [[1, 2, 3], [1, 3, 4], [2, 5, 3]])

    n = 5
    cloth = hooke.scene("cloth", n=n).model
    assert cloth.triangles.shape == (2 * (n - 1) ** 2, 3) and cloth.triangles.max() == n * n - 1
    block = hooke.scene("lattice", nx=2, ny=2, nz=3).model
    np.testing.assert_array_equal(block.tetrahedra, lattice_tetrahedra(2, 2, 3))
    for name in ("chain", "crane", "spring1d"):
        model = hooke.scene(name).model
        assert model.triangles.shape == (0, 3) and model.tetrahedra.shape == (0, 4)
        assert model.surface_triangles().shape == (0, 3)


def test_model_from_arrays_checks_its_cells():
    x0 = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    springs = [[0, 1], [1, 2], [2, 0]]
    model = hooke.builder.model_from_arrays(2, x0, 1.0, springs, 10.0, cells={"triangle": [[0, 1, 2]]})
    np.testing.assert_array_equal(model.triangles, [[0, 1, 2]])
    with pytest.raises(hooke.HookeInputError) as error:
        hooke.builder.model_from_arrays(2, x0, 1.0, springs, 10.0, cells={"triangle": [[0, 1, 3]]})
    assert str(error.value) == "cells: particle index out of range [0, 3), got 'array'"


def test_cells_are_stored_but_not_hashed(tmp_path):
    """The store keeps the cells (/model/triangles); a file without them (written before they
    existed) reads as no cells; the input hash ignores them, so such files still resume."""
    scene = hooke.scene("square_drop")
    hooke.simulate(scene, t_end=0.02, store=tmp_path / "run.h5")
    np.testing.assert_array_equal(read_trajectory(tmp_path / "run.h5")["model"].triangles,
                                  scene.model.triangles)
    with h5py.File(tmp_path / "run.h5", "a") as handle:
        del handle["model/triangles"], handle["model/tetrahedra"]
    assert read_trajectory(tmp_path / "run.h5")["model"].triangles.shape == (0, 3)
    settings = {"integrator": "implicit_euler"}
    bare = replace(scene, model=replace(scene.model, triangles=np.empty((0, 3), dtype=np.int64)))
    assert len(scene.model.triangles) == 32
    assert input_hash(scene, settings) == input_hash(bare, settings)
