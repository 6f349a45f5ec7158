"""Trajectory store: frames written as the run goes, lazy reads, resume, ParaView and movie exports."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET

import h5py
import imageio.v2 as imageio
import meshio
import numpy as np
import pytest

import hooke
from hooke.integrators import get as get_integrator
from hooke.integrators import newmark
from hooke.io.export import export_vtu, write_xdmf
from hooke.io.store import TrajectoryWriter, read_trajectory, rewrite

from conftest import padded3, vtk_blocks

FRAME_KEYS = ("t", "x", "v")


def interrupted_run(scene, path, stop_fraction=0.5, **kwargs):
    def stop(done, total):
        if done >= stop_fraction * total:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        hooke.simulate(scene, store=path, progress=stop, **kwargs)


def test_store_holds_frames_model_and_provenance(tmp_path):
    scene = hooke.scene("spring1d")
    result = hooke.simulate(scene, integrator="rk4", t_end=1.0, store=tmp_path / "run.h5")
    with h5py.File(tmp_path / "run.h5", "r") as handle:
        assert handle["frames/x"].compression == "gzip" and handle["frames/x"].chunks[0] > 1
        attrs = handle.attrs
        assert attrs["integrator"] == "rk4" and attrs["dt"] == 0.005 and attrs["complete"]
        assert attrs["scene_source"] == scene.source and len(attrs["input_hash"]) == 64
        assert attrs["hooke_version"] == hooke.__version__ and "T" in attrs["created"]
        np.testing.assert_array_equal(handle["model/mass"][()], scene.model.mass)
    back = hooke.open(tmp_path / "run.h5")
    for key in FRAME_KEYS:
        np.testing.assert_array_equal(getattr(back, key), getattr(result, key))
    for key, value in result.energy.items():
        np.testing.assert_array_equal(back.energy[key], value)
    assert back.scene.has_analytic and back.stats == result.stats


def test_open_reads_only_a_frame_range(tmp_path):
    result = hooke.simulate(hooke.scene("chain"), t_end=0.5, store=tmp_path / "run.h5")
    part = hooke.open(tmp_path / "run.h5", frames=slice(100, 200, 10))
    np.testing.assert_array_equal(part.x, result.x[100:200:10])
    np.testing.assert_array_equal(part.energy["total"], result.energy["total"][100:200:10])
    with pytest.raises(hooke.HookeInputError, match="frames"):
        hooke.open(tmp_path / "run.h5", frames=slice(400, 900))
    with pytest.raises(hooke.HookeInputError) as error:  # the argument's fault, not the file's
        hooke.open(tmp_path / "run.h5", frames=slice(0.5, 3))
    assert str(error.value).startswith("frames: must be a slice of integers")
    for step in (0, -1):  # a step that does not read forwards is named as such, not as a range
        with pytest.raises(hooke.HookeInputError) as error:
            hooke.open(tmp_path / "run.h5", frames=slice(0, 3, step))
        assert str(error.value) == (f"frames: the slice's step must be an integer >= 1, got "
                                    f"'0:3:{step}'")
    # a step past the C long h5py takes was an OverflowError (the red-team pass after issue 15):
    # any step from the range's length on reads its first frame alone
    assert hooke.open(tmp_path / "run.h5", frames=slice(2, 10, 10**30)).t.tolist() == [result.t[2]]


def test_open_takes_one_frame_index(tmp_path):
    result = hooke.simulate(hooke.scene("chain"), t_end=0.1, store=tmp_path / "run.h5")
    for index, expected in ((5, 5), (-1, result.n_frames - 1), (np.int64(0), 0)):
        one = hooke.open(tmp_path / "run.h5", frames=index)
        assert one.n_frames == 1 and one.t[0] == result.t[expected]
        assert one.x.tobytes() == result.x[expected:expected + 1].tobytes()
    with pytest.raises(hooke.HookeInputError) as error:
        hooke.open(tmp_path / "run.h5", frames=101)
    assert str(error.value) == "frames: out of range for 101 stored frame(s), got 101"
    with pytest.raises(hooke.HookeInputError) as error:
        hooke.open(tmp_path / "run.h5", frames="5")
    assert str(error.value) == ("frames: must be a slice (e.g. slice(0, 100, 10)) or one frame's "
                                "index, got '5'")


def test_provenance_holds_the_effective_options_and_a_hash_of_the_inputs(tmp_path):
    def stored(label, scene=None, **settings):
        hooke.simulate(scene or hooke.scene("spring1d"), integrator="implicit_euler", t_end=0.02,
                       store=tmp_path / f"{label}.h5", **settings)
        return read_trajectory(tmp_path / f"{label}.h5", frames=0)["attrs"]

    base = stored("base")
    assert json.loads(base["options"]) == get_integrator("implicit_euler").defaults == {
        "tol": 0.01, "norm": "max", "max_iterations": 100, "min_iterations": 1, "solver": "auto"}
    # the same inputs, spelt with or without the default option: the same hash
    assert stored("again")["input_hash"] == stored("default spelt", tol=0.01)["input_hash"] == base["input_hash"]
    changed = [stored("dt", dt=0.004), stored("option", tol=1e-3),
               stored("parameter", scene=hooke.scene("spring1d", stiffness=6.0))]
    assert json.loads(changed[1]["options"])["tol"] == 1e-3
    hashes = {base["input_hash"], *(attrs["input_hash"] for attrs in changed)}
    assert len(hashes) == 4

    def built(mass):  # a scene from code has no file text: the model arrays are hashed
        builder = hooke.ModelBuilder(dim=1, gravity=(0.0,))
        builder.add_spring(builder.add_particle((0.0,), pinned=True), builder.add_particle((1.0,), mass=mass),
                           stiffness=10.0, rest_length=0.5)
        return hooke.Scene(builder.finalize(), integrator="rk4", dt=0.01, t_end=0.02)

    assert stored("code 1", built(1.0))["input_hash"] != stored("code 2", built(2.0))["input_hash"]


def test_contact_and_joint_forces_are_stored_and_read_back(tmp_path):
    """A square resting on the ground carries its weight (Σ contact force = −M g); while it lands,
    implicit Euler's momentum balance holds frame by frame: Σ m (v⁺ − v)/h = M g + Σ f_contact(x⁺)
    (spring forces cancel in the sum). A mass hanging still on a joint pulls it with m g."""
    square = hooke.scene("square_drop")
    mass, gravity, h = square.model.mass, square.model.gravity, square.dt
    hooke.simulate(square, t_end=10.0, save_every=100, tol=1e-10, store=tmp_path / "rest.h5")
    with h5py.File(tmp_path / "rest.h5", "r") as handle:
        assert handle["frames/contact_force"].shape == (11, 25, 2)
    rest = hooke.open(tmp_path / "rest.h5", frames=-1)
    total = rest.contact_force[0].sum(axis=0)
    np.testing.assert_allclose(total, -mass.sum() * gravity, rtol=0, atol=1e-4 * mass.sum() * 9.81)
    assert total[1] == pytest.approx(9810.0, rel=1e-5)  # 25 nodes of 40 kg
    landing = hooke.simulate(square, t_end=0.6, tol=1e-10, store=tmp_path / "landing.h5")
    back = hooke.open(tmp_path / "landing.h5")
    assert back.contact_force.tobytes() == landing.contact_force.tobytes()
    momentum = (mass[None, :, None] * back.v).sum(axis=1)
    balance = np.diff(momentum, axis=0) / h - mass.sum() * gravity - back.contact_force[1:].sum(axis=1)
    assert back.contact_force[:, :, 1].sum(axis=1).max() > 2e4  # the impact: more than twice the weight
    assert np.abs(balance).max() < 1e-6
    assert np.all(back.contact_force[:, :, 0] == 0.0)  # the ground is frictionless and horizontal

    builder = hooke.ModelBuilder(dim=3, gravity=(0.0, 0.0, -9.81))
    support = builder.add_particle((0.0, 0.0, 0.0), pinned=True)
    builder.add_joint(support, builder.add_particle((0.0, 0.0, -1.5), mass=2.0))
    hanging = hooke.Scene(builder.finalize(), integrator="generalized_alpha", dt=0.01, t_end=0.5)
    hooke.simulate(hanging, store=tmp_path / "hanging.h5")
    with h5py.File(tmp_path / "hanging.h5", "r") as handle:
        assert handle["frames/joint_force"].shape == (51, 1) and "contact_force" not in handle["frames"]
    back = hooke.open(tmp_path / "hanging.h5")
    np.testing.assert_allclose(back.joint_force, 2.0 * 9.81, rtol=1e-12)
    assert back.contact_force.shape == (51, 0, 3) and np.all(back.contact_distance == np.inf)


def test_bad_store_files_get_clear_errors(tmp_path):
    with pytest.raises(hooke.HookeInputError, match="no such trajectory"):
        hooke.open(tmp_path / "missing.h5")
    (tmp_path / "junk.h5").write_bytes(b"not an hdf5 file at all")
    with pytest.raises(hooke.HookeInputError, match="not a readable HDF5"):
        hooke.open(tmp_path / "junk.h5")


def resume_cases():
    """Every registered integrator on the chain (springs), those that handle joints also on the
    double pendulum, those that handle contact on the square sliding down a slope (barrier and
    lagged friction); the default integrators of the top and the crane (generalized-α) and of
    the cloth (symplectic Euler)."""
    able = lambda capability: [name for name in hooke.integrators()  # noqa: E731
                               if getattr(get_integrator(name), capability)]
    cases = [("chain", name) for name in hooke.integrators()]
    cases += [("pendulum", name) for name in able("supports_joints")]
    cases += [("square_slope", name) for name in able("supports_contact")]
    return cases + [("top", None), ("crane", None), ("cloth2d", None)]


def assert_resume_is_identical(tmp_path, scene_name, integrator, t_end=0.3):
    scene = hooke.scene(scene_name)
    settings = dict(integrator=integrator, t_end=t_end)
    full = hooke.simulate(scene, store=tmp_path / "full.h5", **settings)
    interrupted_run(scene, tmp_path / "part.h5", **settings)
    kept = read_trajectory(tmp_path / "part.h5")["total_frames"]
    assert 1 < kept < full.n_frames
    resumed = hooke.resume(tmp_path / "part.h5")
    stored, reference = read_trajectory(tmp_path / "part.h5"), read_trajectory(tmp_path / "full.h5")
    assert stored["attrs"]["complete"]
    # rk45 evaluates its first-same-as-last stage once more after a restart (the same value)
    counters = lambda stats: {key: value for key, value in stats.items() if key != "evaluations"}  # noqa: E731
    assert counters(resumed.stats) == counters(full.stats)
    for key in FRAME_KEYS:
        assert getattr(resumed, key).tobytes() == getattr(full, key).tobytes(), key
        assert stored[key].tobytes() == reference[key].tobytes()
    for key in reference["energy"]:
        assert stored["energy"][key].tobytes() == reference["energy"][key].tobytes()
    assert set(stored["extras"]) == set(reference["extras"])
    for key in reference["extras"]:
        assert stored["extras"][key].tobytes() == reference["extras"][key].tobytes()


@pytest.mark.parametrize("scene_name, integrator", resume_cases())
def test_resume_ends_identical_to_an_uninterrupted_run(tmp_path, scene_name, integrator):
    assert_resume_is_identical(tmp_path, scene_name, integrator)


@pytest.mark.parametrize("scene_name", ["top", "pendulum"])
def test_resume_is_identical_on_the_generic_newmark_path(tmp_path, monkeypatch, scene_name):
    """The sparse (uncompiled) generalized-α step reuses a SuperLU factorisation across steps;
    the checkpoint's factorisation point rebuilds it."""
    monkeypatch.setattr(newmark, "COMPILED", False)
    assert_resume_is_identical(tmp_path, scene_name, "generalized_alpha")


def test_killed_process_leaves_a_readable_file_and_resumes(tmp_path):
    path = tmp_path / "run.h5"
    script = textwrap.dedent(f"""
        import hooke
        hooke.simulate(hooke.scene("chain"), t_end=10.0, store={str(path)!r})
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL)
    seen, deadline = 0, time.monotonic() + 120
    while seen < 100 and time.monotonic() < deadline:  # read the file while it is being written
        time.sleep(0.2)
        if path.exists():
            try:
                seen = read_trajectory(path)["total_frames"]
            except hooke.HookeInputError:
                pass  # not yet past its first flush
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    stored = read_trajectory(path)
    assert seen >= 100 and stored["total_frames"] >= seen and not stored["attrs"]["complete"]
    assert np.all(np.isfinite(stored["x"])) and stored["t"][-1] == pytest.approx(
        0.001 * (stored["total_frames"] - 1))
    resumed = hooke.resume(path)
    full = hooke.simulate(hooke.scene("chain"), t_end=10.0)
    assert resumed.x.tobytes() == full.x.tobytes()


def test_xdmf_sidecar_and_vtu_export(tmp_path):
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "hooke.cli", "run", "chain", "--t-end", "0.05",
                           "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    tree = ET.parse(out / "trajectory.xdmf")
    grids = tree.getroot().findall(".//Grid[@GridType='Uniform']")
    assert len(grids) == 51
    assert float(grids[-1].find("Time").get("Value")) == pytest.approx(0.05)
    np.testing.assert_array_equal(resolve(grids[7].find("Geometry/DataItem"), out),  # frame 7's points
                                  padded3(read_trajectory(out / "trajectory.h5")["x"][7]))
    assert "<!-- frame 7 -->" in (out / "trajectory.xdmf").read_text()  # VTK's cache key: see export
    done = subprocess.run([sys.executable, "-m", "hooke.cli", "export", str(out), "--vtu"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    mesh = meshio.read(out / "vtu" / "frame_00050.vtu")
    stored = read_trajectory(out / "trajectory.h5")
    np.testing.assert_allclose(mesh.points[:, :2], stored["x"][50])
    assert mesh.cells_dict["line"].shape == (10, 2)
    assert "frame_00050.vtu" in (out / "vtu" / "frames.pvd").read_text()


def resolve(item, folder):
    """The array an XDMF DataItem stands for: inline XML, an HDF5 dataset ("file:/path", which
    must exist with the declared dimensions), a HyperSlab of one, or a JOIN of items (columns
    interleaved) with zeros. (meshio's XDMF time-series reader expects one fixed mesh and no
    hyperslabs, so it cannot read a moving one.)"""
    dims = [int(d) for d in item.get("Dimensions").split()]
    if item.get("ItemType") == "Function":  # JOIN of the components and zeros written 0 * $0
        parts = [resolve(part, folder) for part in item]
        terms = item.get("Function").removeprefix("JOIN(").removesuffix(")").split(", ")
        columns = [parts[int(term[1:])] if term.startswith("$") else 0 * parts[0] for term in terms]
        assert terms[len(parts):] == ["0 * $0"] * (3 - len(parts))
        return np.column_stack(columns).reshape(dims)
    if item.get("ItemType") == "HyperSlab":
        selection, source = list(item)
        start, stride, count = np.array(selection.text.split(), dtype=int).reshape(3, -1)
        data = resolve(source, folder)
        return data[tuple(slice(b, b + s * c, s) for b, s, c in zip(start, stride, count))].reshape(dims)
    if item.get("Format") == "HDF":
        name, dataset = item.text.strip().split(":")
        with h5py.File(folder / name, "r") as handle:
            data = handle[dataset][()]
        assert list(data.shape) == dims
        return data
    return np.array(item.text.split(), dtype=float).reshape(dims)


def blocks_of(frame) -> dict:
    """{block name: Uniform grid} of one frame: the frame itself, or its spatial collection's."""
    if frame.get("GridType") == "Uniform":
        return {None: frame}
    assert frame.get("CollectionType") == "Spatial"
    frame_number = frame.get("Name").removeprefix("frame ")
    names = [grid.get("Name").split() for grid in frame.findall("Grid")]
    assert all(number == frame_number for _, number in names)  # "springs 7" in frame 7
    return {name: grid for (name, _), grid in zip(names, frame.findall("Grid"))}


def vtu_cells(mesh) -> tuple[np.ndarray, dict]:
    """The line (or vertex) cells of a meshio mesh in file order, and each cell data array over
    all its cells likewise."""
    return (np.concatenate([block.data for block in mesh.cells if block.type in ("line", "vertex")]),
            {key: np.concatenate(value) for key, value in mesh.cell_data.items()})


def test_exports_carry_joints_and_forces(tmp_path):
    """crane: springs and joints (two blocks), pendulum: joints only, square_drop: springs,
    triangles and contact forces, a lone particle: neither (vertices). No block is ever empty;
    every value read back from the XDMF (through its HDF5 references) and from the VTU files
    equals the store's, vectors padded to 3 components."""
    lone = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    lone.add_particle((0.0, 1.0), mass=1.0)
    cases = {"crane": (hooke.scene("crane"), 10), "pendulum": (hooke.scene("pendulum"), 1),
             "square": (hooke.scene("square_drop"), 40),
             "lone": (hooke.Scene(lone.finalize(), integrator="rk4", dt=0.01, t_end=0.05), 1)}
    for label, (scene, save_every) in cases.items():
        folder = tmp_path / label
        hooke.simulate(scene, t_end=min(scene.t_end, 0.4), save_every=save_every,
                       store=folder / "trajectory.h5")
        export_vtu(folder / "trajectory.h5", folder / "vtu")
        stored = read_trajectory(folder / "trajectory.h5")
        model, extras, frames = stored["model"], stored["extras"], stored["total_frames"]
        springs, joints = model.spring_indices, model.joint_indices
        triangles = model.triangles
        padded = np.zeros((model.n_particles, 3))

        xdmf = ET.parse(write_xdmf(folder / "trajectory.h5")).getroot()
        series = xdmf.findall("Domain/Grid/Grid")
        assert len(series) == frames >= 2
        for k, frame in enumerate(series):
            assert float(frame.find("Time").get("Value")) == stored["t"][k]
            blocks = blocks_of(frame)
            names = [name for name, cells in (("springs", springs), ("joints", joints),
                                              ("triangles", triangles)) if len(cells)]
            assert len(blocks) == max(len(names), 1)
            for name, grid in blocks.items():
                kind = name or (names[0] if names else "particles")  # one block: no name
                topology = grid.find("Topology")
                cells = resolve(topology.find("DataItem"), folder)
                expected = {"springs": springs, "joints": joints, "triangles": triangles}.get(
                    kind, np.arange(model.n_particles))
                np.testing.assert_array_equal(cells, expected)
                assert int(topology.get("NumberOfElements")) == len(expected) > 0
                (geometry,) = [resolve(item, folder) for item in grid.find("Geometry")]
                np.testing.assert_array_equal(geometry, padded3(stored["x"][k]))
                attributes = {a.get("Name"): (a.get("Center"), a.get("AttributeType"),
                                              resolve(a.find("DataItem"), folder))
                              for a in grid.findall("Attribute")}
                np.testing.assert_array_equal(attributes.pop("velocity")[2], padded3(stored["v"][k]))
                if "contact_force" in extras:
                    center, kind_of, value = attributes.pop("contact_force")
                    assert (center, kind_of) == ("Node", "Vector")
                    np.testing.assert_array_equal(value, padded3(extras["contact_force"][k]))
                if kind == "joints":
                    center, kind_of, value = attributes.pop("joint_force")
                    assert (center, kind_of) == ("Cell", "Scalar")
                    np.testing.assert_array_equal(value, extras["joint_force"][k])
                assert not attributes

        for k in (0, frames - 1):
            mesh = meshio.read(folder / "vtu" / f"frame_{k:05d}.vtu")
            padded[:, : model.dim] = stored["x"][k]
            np.testing.assert_array_equal(mesh.points, padded)
            padded[:, : model.dim] = stored["v"][k]
            np.testing.assert_array_equal(mesh.point_data["velocity"], padded)
            cells, cell_data = vtu_cells(mesh)
            if len(springs) + len(joints):
                np.testing.assert_array_equal(cells, np.concatenate([springs, joints]))
                assert [block.type for block in mesh.cells if block.type != "line"] == (
                    ["triangle"] if len(triangles) else [])
                if len(triangles):
                    np.testing.assert_array_equal(mesh.cells_dict["triangle"], triangles)
            else:
                assert [block.type for block in mesh.cells] == ["vertex"]
                np.testing.assert_array_equal(cells[:, 0], np.arange(model.n_particles))
            if len(joints):
                np.testing.assert_array_equal(cell_data["joint"], [0] * len(springs) + [1] * len(joints))
                np.testing.assert_array_equal(cell_data["joint_force"],
                                              np.concatenate([np.zeros(len(springs)), extras["joint_force"][k]]))
            else:
                assert not cell_data
            if "contact_force" in extras:
                padded[:, : model.dim] = extras["contact_force"][k]
                np.testing.assert_array_equal(mesh.point_data["contact_force"], padded)
                assert k == 0 or mesh.point_data["contact_force"][:, 1].sum() > 0  # it landed
            else:
                assert "contact_force" not in mesh.point_data


def test_animate_writes_mp4_and_gif(tmp_path):
    hooke.simulate(hooke.scene("chain"), t_end=0.5, save_every=10, store=tmp_path / "trajectory.h5")
    for name in ("movie.mp4", "movie.gif"):
        done = subprocess.run([sys.executable, "-m", "hooke.cli", "animate", str(tmp_path),
                               "--out", str(tmp_path / name), "--fps", "20"],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        frames = [frame for frame in imageio.get_reader(tmp_path / name)]  # (len() is inf for mp4)
        assert len(frames) == 10  # 0.5 s of real time at 20 fps
        changed = np.any(np.abs(frames[0].astype(int) - frames[-1]) > 40, axis=-1)
        assert changed.mean() > 0.002  # the chain swung: its pixels moved
    done = subprocess.run([sys.executable, "-m", "hooke.cli", "animate", str(tmp_path),
                           "--out", str(tmp_path / "movie.avi")], capture_output=True, text=True)
    assert done.returncode == 2 and "out" in done.stderr


def test_cli_resume(tmp_path):
    scene = hooke.scene("spring1d")
    interrupted_run(scene, tmp_path / "trajectory.h5", integrator="rk4", t_end=2.0)
    done = subprocess.run([sys.executable, "-m", "hooke.cli", "run", "--resume", str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["complete"] and summary["frames"] == 401
    full = hooke.simulate(scene, integrator="rk4", t_end=2.0)
    assert hooke.open(tmp_path / "trajectory.h5").x.tobytes() == full.x.tobytes()


def test_interrupted_cli_run_keeps_a_sidecar_of_its_frames(tmp_path):
    child = subprocess.Popen([sys.executable, "-m", "hooke.cli", "run", "chain", "--t-end", "100",
                              "--out", str(tmp_path)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    seen, deadline = 0, time.monotonic() + 120
    while seen < 50 and time.monotonic() < deadline:
        time.sleep(0.2)
        try:
            seen = read_trajectory(tmp_path / "trajectory.h5", frames=0)["total_frames"]
        except hooke.HookeInputError:
            pass  # not yet past its first flush
    child.send_signal(signal.SIGINT)  # Ctrl-C
    _, stderr = child.communicate(timeout=60)
    assert child.returncode == 130 and "Traceback" not in stderr
    assert f"continue with `hooke run --resume {tmp_path}`" in " ".join(stderr.split())
    stored = read_trajectory(tmp_path / "trajectory.h5")
    assert not stored["attrs"]["complete"] and stored["total_frames"] >= seen >= 50
    grids = ET.parse(tmp_path / "trajectory.xdmf").getroot().findall(".//Grid[@GridType='Uniform']")
    assert len(grids) == stored["total_frames"]
    assert float(grids[-1].find("Time").get("Value")) == stored["t"][-1]


def test_paraviews_xdmf_reader_reads_the_sidecar(tmp_path):
    """ParaView opens trajectory.xdmf with VTK's XDMF reader, whose HDF5 is 1.14: the store
    must stay in a file format 1.14 reads (h5py's HDF5 2.0 writes layouts it refuses unless
    bounded: io.store.LIBVER). At a middle time step every block's points, the point velocities
    and the joints' forces equal the stored frame's."""
    xdmf2 = pytest.importorskip("vtkmodules.vtkIOXdmf2")
    from vtkmodules.vtkCommonExecutionModel import vtkStreamingDemandDrivenPipeline
    from vtkmodules.util.numpy_support import vtk_to_numpy

    for name, save_every in (("crane", 10), ("pendulum", 1), ("square_drop", 5)):
        scene = hooke.scene(name)
        path = tmp_path / name / "trajectory.h5"
        hooke.simulate(scene, t_end=0.3, save_every=save_every, store=path)
        stored = read_trajectory(path)
        model = stored["model"]
        reader = xdmf2.vtkXdmfReader()
        reader.SetFileName(str(write_xdmf(path)))
        reader.UpdateInformation()
        times = reader.GetOutputInformation(0).Get(vtkStreamingDemandDrivenPipeline.TIME_STEPS())
        np.testing.assert_allclose(times, stored["t"], rtol=0, atol=1e-15)
        k = len(times) // 2
        reader.UpdateTimeStep(times[k])
        blocks = vtk_blocks(reader.GetOutputDataObject(0))
        assert sum(block.GetNumberOfCells() for block in blocks) == (
            model.n_springs + model.n_joints + len(model.triangles))
        expected = np.zeros((model.n_particles, 3))
        expected[:, :model.dim] = stored["x"][k]
        for block in blocks:
            np.testing.assert_array_equal(vtk_to_numpy(block.GetPoints().GetData()), expected)
            velocity = vtk_to_numpy(block.GetPointData().GetArray("velocity"))
            np.testing.assert_array_equal(velocity, padded3(stored["v"][k]))  # (n, 3) in 2D too
        if model.n_joints:
            forces = [vtk_to_numpy(block.GetCellData().GetArray("joint_force")) for block in blocks
                      if block.GetCellData().GetArray("joint_force") is not None]
            np.testing.assert_array_equal(np.concatenate(forces), stored["extras"]["joint_force"][k])


def test_resume_keeps_the_energy_guard(tmp_path):
    """The stored run's blow-up guard goes on after a resume: explicit Euler multiplies the
    oscillator's energy by 1.25 per step (dt = 0.05), past the factor 2 at step 4, after the
    interruption at step 2; the resumed run stops there as the uninterrupted one does."""
    scene = hooke.scene("oscillator")
    path = tmp_path / "run.h5"
    interrupted_run(scene, path, stop_fraction=2 / 200, integrator="explicit_euler", dt=0.05,
                    t_end=10.0, max_energy_growth=2.0)
    with h5py.File(path, "r") as handle:
        assert handle.attrs["max_energy_growth"] == 2.0
        assert handle.attrs["frames_written"] < 4
    with pytest.raises(hooke.SimulationError, match=r"grew from 50 J to 122.07 J .* at step 4 "):
        hooke.resume(path)


def test_a_copy_that_cannot_be_written_leaves_the_run_as_it_was(tmp_path):
    """rewrite's fresh file cannot be created (its name is taken by a directory, as a full disk
    or a read-only folder would refuse it): one line naming the file, which stays byte for byte
    as it was, and no leftover copy — not a claim that the file is corrupted."""
    from hooke.io.store import rewrite

    path = tmp_path / "run.h5"
    hooke.simulate(hooke.scene("spring1d"), t_end=0.1, store=path)
    before = path.read_bytes()
    (tmp_path / "run.h5.rewrite").mkdir()
    with pytest.raises(hooke.HookeInputError) as info:
        rewrite(path)
    assert str(info.value).startswith("path: could not be rewritten through run.h5.rewrite (")
    assert str(info.value).endswith(f"); it is left as it was, got '{path}'")
    assert path.read_bytes() == before and (tmp_path / "run.h5.rewrite").is_dir()


def test_the_compacting_copy_does_not_keep_the_order_attributes_were_rewritten_in(tmp_path,
                                                                                  monkeypatch):
    """Flushes rewrite the checkpoint's attributes, in an order that depends on when they came
    (under load, a flush after the first frame); the closing copy must not carry that order into
    the file's bytes (a CLI run once differed from its twin at byte 1400, in that header)."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    scene = hooke.scene("chain")
    for name in ("a.h5", "b.h5"):
        hooke.simulate(scene, t_end=0.05, store=tmp_path / name)
    with h5py.File(tmp_path / "b.h5", "r+") as handle:
        checkpoint = handle["checkpoint"].attrs
        stats = checkpoint["stats"]
        del checkpoint["stats"]  # now after frames_written in the header
        checkpoint["stats"] = stats
    assert (tmp_path / "a.h5").read_bytes() != (tmp_path / "b.h5").read_bytes()
    rewrite(tmp_path / "b.h5")
    assert (tmp_path / "a.h5").read_bytes() == (tmp_path / "b.h5").read_bytes()


def frame_bytes(path) -> tuple[int, int]:
    """(bytes of one frame over every frame dataset, bytes of one chunk of each summed)."""
    sizes = []
    with h5py.File(path, "r") as handle:
        handle["frames"].visititems(lambda _, item: sizes.append(
            (item.dtype.itemsize * int(np.prod(item.shape[1:])), item.chunks[0]))
            if isinstance(item, h5py.Dataset) else None)
    return sum(size for size, _ in sizes), sum(size * chunk for size, chunk in sizes)


def test_a_run_flushed_frame_by_frame_holds_no_dead_space(tmp_path, monkeypatch):
    """A slow run flushes every few frames. Under SWMR HDF5 does not reuse the space a chunk
    leaves, so a compressed last chunk, which grows and moves at each flush, left all its old
    copies behind: the file a kill leaves would be many times its frames' bytes. Flushed after
    every frame, the file holds at each flush every frame flushed, bit for bit, and beyond its
    size at the first flush (its metadata and first chunks) no more than their bytes and one
    chunk per dataset; closed, it is compressed and smaller than its frames' bytes."""
    monkeypatch.setattr(TrajectoryWriter, "due", lambda self, pending, frame_bytes: pending > 0)
    scene = hooke.scene("cloth2d")
    reference = hooke.simulate(scene, t_end=1.5)
    path = tmp_path / "run.h5"
    sizes = {}  # frames flushed → the file's size then
    write = TrajectoryWriter.write_frames

    def write_and_check(self, block, checkpoint) -> None:
        write(self, block, checkpoint)
        sizes[self.count] = path.stat().st_size
        if len(sizes) % 100 == 1:  # what a kill now leaves: every frame flushed
            stored = read_trajectory(path)
            for key in FRAME_KEYS:
                assert stored[key].tobytes() == getattr(reference, key)[:self.count].tobytes()

    monkeypatch.setattr(TrajectoryWriter, "write_frames", write_and_check)
    hooke.simulate(scene, t_end=1.5, store=path)
    per_frame, first_chunks = frame_bytes(path)
    assert reference.n_frames == 301 and per_frame >= 38400  # x and v: 1200 × 2 × 8 bytes each
    assert len(sizes) >= 290  # a flush after every frame
    first = min(sizes)
    assert sizes[first] < first_chunks + 2**20  # the model, metadata and one chunk a dataset
    for flushed, size in sizes.items():  # the frames since, and their last chunk's unfilled rest
        assert size <= sizes[first] + 1.02 * per_frame * (flushed - first) + first_chunks, (
            flushed, size)
    with h5py.File(path, "r") as handle:
        assert handle["frames/x"].compression == "gzip"
    assert path.stat().st_size < per_frame * reference.n_frames


@pytest.mark.parametrize("motion", [hooke.motion.Sinusoid(0.1, (1.0, 0.0), 8.0),
                                    hooke.motion.ConstantVelocity((0.5, 0.0))])
def test_a_run_of_a_scene_built_in_code_with_a_moving_pin_opens(tmp_path, motion):
    """Its motion is not stored, so the model read back has a fixed pin, whose stored v0 (u̇(0) =
    0.8 or 0.5 m/s) that Scene refused: hooke.open (and plot, export) of the complete run was
    'state.v[0]: is a pinned particle's velocity, which its pin sets to [0., 0.] at t = 0'."""
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, 0.0))
    b.add_particle((0.0, 0.0), pinned=True, motion=motion)
    b.add_particle((1.0, 0.0), mass=1.0)
    b.add_spring(0, 1, stiffness=10.0)
    run = hooke.simulate(hooke.Scene(b.finalize(), integrator="rk4", dt=0.01, t_end=0.1),
                         store=tmp_path / "run.h5")
    opened = hooke.open(tmp_path / "run.h5")
    assert opened.complete and np.array_equal(opened.x, run.x) and np.array_equal(opened.v, run.v)
    assert opened.scene.model.v0.tolist() == [[0.0, 0.0], [0.0, 0.0]]
