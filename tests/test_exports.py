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
from hooke.array_models import model_from_arrays
from hooke.cli import app
from hooke.io.export import export_frames, export_vtu, write_xdmf
from hooke.io.store import input_hash, read_trajectory
from hooke.mesh_topology import boundary_faces, lattice_tetrahedra

from conftest import padded3, vtk_blocks


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
    model = model_from_arrays(2, x0, 1.0, springs, 10.0, cells={"triangle": [[0, 1, 2]]})
    np.testing.assert_array_equal(model.triangles, [[0, 1, 2]])
    with pytest.raises(hooke.HookeInputError) as error:
        model_from_arrays(2, x0, 1.0, springs, 10.0, cells={"triangle": [[0, 1, 3]]})
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


# -- XDMF as VTK's reader (ParaView's "XDMF Reader") reads it ---------------------------------------
def stored_run(folder, name, t_end, **parameters):
    """A short stored run of the built-in scene ``name``: (trajectory path, stored data)."""
    path = folder / name / "trajectory.h5"
    hooke.simulate(hooke.scene(name, **parameters), t_end=t_end, store=path)
    return path, read_trajectory(path)


def test_vtks_xdmf_reader_gets_3_component_vectors_and_the_cells_without_a_complaint(tmp_path, capfd):
    """square_drop (2D: springs, triangles, contact forces), crane (3D: springs, joints), a
    small lattice (3D: springs, tetrahedra) and spring1d (1D): at three time steps read one after
    another (the reader caches a block's points between steps), every block's points, velocity
    and contact force are (n, 3) arrays equal to the stored frame's, padded with zeros, and its
    cells are the model's; neither VTK's output window nor XDMF's own printing says anything."""
    vtk = pytest.importorskip("vtk")
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkCommonExecutionModel import vtkStreamingDemandDrivenPipeline

    log = tmp_path / "vtk.log"
    window = vtk.vtkFileOutputWindow()
    window.SetFileName(str(log))
    window.SetFlush(1)
    previous = vtk.vtkOutputWindow.GetInstance()
    vtk.vtkOutputWindow.SetInstance(window)
    capfd.readouterr()
    try:
        for name, t_end, parameters in (("square_drop", 0.4, {}), ("crane", 0.05, {}),
                                        ("lattice", 0.02, {"nx": 3, "ny": 3, "nz": 2}),
                                        ("spring1d", 0.05, {})):
            path, stored = stored_run(tmp_path, name, t_end, **parameters)
            model = stored["model"]
            cells = {4: np.concatenate([model.spring_indices, model.joint_indices]),  # VTK_POLY_LINE
                     5: model.triangles, 10: model.tetrahedra}  # VTK_TRIANGLE, VTK_TETRA
            reader = vtk.vtkXdmfReader()
            reader.SetFileName(str(write_xdmf(path)))
            reader.UpdateInformation()
            times = reader.GetOutputInformation(0).Get(vtkStreamingDemandDrivenPipeline.TIME_STEPS())
            assert len(times) == len(stored["t"]) >= 3
            for k in (len(times) // 2, len(times) - 1, 1):
                reader.UpdateTimeStep(times[k])
                found = {}
                for block in vtk_blocks(reader.GetOutputDataObject(0)):
                    np.testing.assert_array_equal(vtk_to_numpy(block.GetPoints().GetData()),
                                                  padded3(stored["x"][k]))
                    data = block.GetPointData()
                    np.testing.assert_array_equal(vtk_to_numpy(data.GetArray("velocity")),
                                                  padded3(stored["v"][k]))
                    if "contact_force" in stored["extras"]:
                        force = stored["extras"]["contact_force"][k]
                        np.testing.assert_array_equal(vtk_to_numpy(data.GetArray("contact_force")),
                                                      padded3(force))
                        assert k < len(times) - 1 or force[:, 1].sum() > 0  # landed by the end
                    kinds = set(vtk_to_numpy(block.GetDistinctCellTypesArray()).tolist())
                    assert len(kinds) == 1
                    found.setdefault(kinds.pop(), []).append(vtk_to_numpy(
                        block.GetCells().GetConnectivityArray()).reshape(block.GetNumberOfCells(), -1))
                expected = {kind: value for kind, value in cells.items() if len(value)}
                assert sorted(found) == sorted(expected or {1: None})  # 1: VTK_VERTEX
                for kind, value in expected.items():
                    np.testing.assert_array_equal(np.concatenate(found[kind]), value)
    finally:
        vtk.vtkOutputWindow.SetInstance(previous)
    printed = capfd.readouterr()
    assert "Cannot find DataItem" not in printed.out + printed.err
    assert printed.out + printed.err == ""
    assert not log.exists() or log.read_text() == ""


# -- VTU, OBJ and PLY frames --------------------------------------------------------------------
def test_vtu_frames_carry_tetrahedra_and_surface_sequences_read_back(tmp_path):
    """A small lattice: its VTU frames have the springs as lines and the tetrahedra; its OBJ and
    PLY frames the boundary triangles over every particle at the frame's positions. A 2D sheet
    (square_drop) gives its triangles at z = 0."""
    path, stored = stored_run(tmp_path, "lattice", 0.05, nx=3, ny=2, nz=2)
    model = stored["model"]
    calls = []
    written = export_frames(path, tmp_path / "lattice", ("vtu", "obj", "ply"),
                            progress=lambda done, total: calls.append((done, total)))
    frames = len(stored["t"])
    assert calls == [(k, 3 * frames) for k in range(1, 3 * frames + 1)]
    assert len(written) == 3 * frames + 1  # + frames.pvd
    k = frames - 1
    vtu = meshio.read(tmp_path / "lattice" / "vtu" / f"frame_{k:05d}.vtu")
    assert [block.type for block in vtu.cells] == ["line", "tetra"]
    np.testing.assert_array_equal(vtu.cells_dict["line"], model.spring_indices)
    np.testing.assert_array_equal(vtu.cells_dict["tetra"], model.tetrahedra)
    assert not np.array_equal(stored["x"][k], stored["x"][0])  # it sagged: the frame matters
    for fmt in ("obj", "ply"):
        mesh = meshio.read(tmp_path / "lattice" / fmt / f"frame_{k:05d}.{fmt}")
        np.testing.assert_allclose(mesh.points, stored["x"][k], rtol=0, atol=1e-6 if fmt == "obj" else 0)
        np.testing.assert_array_equal(mesh.cells_dict["triangle"], model.surface_triangles())
        assert len(model.surface_triangles()) == 2 * 2 * (1 * 1 + 2 * 1 + 2 * 1)  # 2 per cube face

    path, stored = stored_run(tmp_path, "square_drop", 0.05)
    export_frames(path, tmp_path / "square", ("obj",))
    mesh = meshio.read(tmp_path / "square" / "obj" / "frame_00003.obj")
    np.testing.assert_allclose(mesh.points, padded3(stored["x"][3]), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(mesh.cells_dict["triangle"], stored["model"].triangles)
    assert export_vtu(path, tmp_path / "vtu")[-1] == tmp_path / "vtu" / "frames.pvd"


def test_surface_exports_of_a_run_are_the_same_bytes_each_time(tmp_path, monkeypatch):
    """Issue 15 (red-team pass, stop 32): meshio stamps its OBJ and PLY headers with the wall
    clock ("# Created by meshio v5.3.5, 2026-11-28T02:59:41.123456"), so two exports of one
    run differed; vtu's did not. The stamp is dropped; the files still read back whole."""
    import datetime

    path, stored = stored_run(tmp_path, "lattice", 0.05, nx=3, ny=2, nz=2)
    exports = []
    for year in (2001, 2031):  # meshio's clock, in two different years
        class Clock(datetime.datetime):
            @classmethod
            def now(cls, tz=None):
                return datetime.datetime(year, 1, 2, 3, 4, 5, 678901)
        for module in ("meshio.obj._obj", "meshio.ply._ply"):
            monkeypatch.setattr(f"{module}.datetime.datetime", Clock)
        out = tmp_path / str(year)
        export_frames(path, out, ("obj", "ply"))
        exports.append({p.relative_to(out): p.read_bytes() for p in out.rglob("frame_*")})
    assert exports[0] == exports[1] and len(exports[0]) == 2 * len(stored["t"])
    for name, data in exports[0].items():
        assert b"Created by meshio v" in data[:200] and b"2001-01-02" not in data, name
        mesh = meshio.read(tmp_path / "2001" / name)
        assert mesh.points.shape[0] == stored["x"].shape[1]


def test_an_export_of_a_shorter_run_leaves_no_frame_of_the_longer_one(tmp_path):
    """Issue 15 (red-team pass, stop 28): exporting a run into a folder where an export of a
    longer run had written more frames left the longer run's last ones (frame_00004.obj …),
    which tools that play a folder's numbered files as one sequence (ParaView groups
    frame_*.vtu) showed after the new run's as if they were its own. Now every frame file there
    is this run's, and a file of the user's beside them is kept."""
    path, _ = stored_run(tmp_path, "square_drop", 0.05)
    export_frames(path, tmp_path / "out", ("vtu", "obj"))
    (tmp_path / "out" / "obj" / "notes.txt").write_text("mine")
    hooke.simulate(hooke.scene("square_drop"), t_end=0.02, store=path)
    written = export_frames(path, tmp_path / "out", ("vtu", "obj"))
    frames = len(read_trajectory(path)["t"])
    for fmt in ("vtu", "obj"):
        names = sorted(p.name for p in (tmp_path / "out" / fmt).iterdir())
        expected = [f"frame_{k:05d}.{fmt}" for k in range(frames)]
        assert names == sorted(expected + (["frames.pvd"] if fmt == "vtu" else ["notes.txt"]))
    assert len(written) == 2 * frames + 1


@pytest.mark.parametrize("command", ["export", "plot", "animate"])
def test_a_run_directory_that_cannot_be_read_is_named_dir(tmp_path, command):
    """Issue 15: `hooke export DIR` (and plot, animate) said "path: no such trajectory file" and
    "path: is not a readable HDF5 trajectory": path is the reader's argument; the command line
    calls it DIR."""
    missing, damaged = tmp_path / "missing", tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "trajectory.h5").write_text("not HDF5")
    for folder, problem in ((missing, "no such trajectory file"),
                            (damaged, "is not a readable HDF5 trajectory (file signature not "
                                      "found)")):
        done = CliRunner().invoke(app, [command, str(folder)])
        assert (done.exit_code, done.stderr) == (
            2, f"error: DIR: {problem}, got '{folder / 'trajectory.h5'}'\n"), done.output


def test_cli_export_formats(tmp_path, progress_bars):
    """``hooke export DIR --format obj`` writes DIR/obj, ``--vtu`` stays ``--format vtu``, both
    report progress through the run's LazyProgress (in files); a surface format for a run
    without cells, or an unknown format, is one line naming --format (exit 2) and writes
    nothing."""
    path, stored = stored_run(tmp_path, "cloth_drop", 0.02)
    frames = len(stored["t"])
    done = CliRunner().invoke(app, ["export", str(path.parent), "--vtu", "--format", "obj"])
    assert done.exit_code == 0, done.output
    assert sorted(p.name for p in path.parent.iterdir()) == ["obj", "trajectory.h5", "trajectory.xdmf", "vtu"]
    assert len(list((path.parent / "obj").iterdir())) == frames
    assert progress_bars[-1] == ("export", "files", 2 * frames, 2 * frames)

    path, _ = stored_run(tmp_path, "chain", 0.02)
    for flag, message in (("ply", "--format: a surface format needs the body's triangles or "
                           "tetrahedra, which this run's model has none of (grid, lattice and "
                           "from_mesh bodies have them), got 'ply'"),
                          ("stl", "--format: unknown export format (known: vtu, obj, ply), got 'stl'")):
        done = CliRunner().invoke(app, ["export", str(path.parent), "--vtu", "--format", flag])
        assert done.exit_code == 2 and done.stderr.strip() == f"error: {message}"
        assert sorted(p.name for p in path.parent.iterdir()) == ["trajectory.h5"]


def test_the_xdmf_sidecar_is_written_frame_by_frame_never_held_whole(tmp_path):
    """Issue 15 (red-team pass redA): the sidecar's text was built whole in memory, with its
    frames' parts beside it: 1.2 kB a frame held about twice over, 1 GB for a spring1d run of
    411,000 frames (`--save-every 1`), tens of GB for the 8e7 frames such a run may keep — a
    MemoryError or the OOM killer as the run ends. Now it is written frame by frame: the memory
    it takes does not grow with the frame count (16,000 frames more: +56 MB before, 0 now)."""
    import tracemalloc

    peaks, texts = [], []
    for t_end in (20.0, 100.0):
        path = tmp_path / f"{t_end:g}" / "trajectory.h5"
        hooke.simulate(hooke.scene("spring1d"), integrator="rk4", dt=0.005, t_end=t_end,
                       save_every=1, store=path)
        tracemalloc.start()
        try:
            write_xdmf(path, verify=False)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        texts.append(path.with_suffix(".xdmf").read_text())
    assert [text.count('<Grid Name="frame ') for text in texts] == [4001, 20001]
    assert len(texts[1]) > 20_000_000 and texts[1].endswith("    </Grid>\n  </Domain>\n</Xdmf>\n")
    assert peaks[1] - peaks[0] < 1_000_000  # 16,000 frames' times (128 kB), not their 19 MB text
