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
from hooke.io.store import read_trajectory

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


def test_bad_store_files_get_clear_errors(tmp_path):
    with pytest.raises(hooke.HookeInputError, match="no such trajectory"):
        hooke.open(tmp_path / "missing.h5")
    (tmp_path / "junk.h5").write_bytes(b"not an hdf5 file at all")
    with pytest.raises(hooke.HookeInputError, match="not a readable HDF5"):
        hooke.open(tmp_path / "junk.h5")


@pytest.mark.parametrize("scene_name, integrator", [
    ("chain", "rk45"), ("chain", "implicit_euler"), ("square_drop", None),
    ("cloth2d", "symplectic_euler"), ("pendulum", "rk4"), ("pendulum", "rk45"),
])
def test_resume_ends_identical_to_an_uninterrupted_run(tmp_path, scene_name, integrator):
    scene = hooke.scene(scene_name)
    settings = dict(integrator=integrator, t_end=0.3)
    full = hooke.simulate(scene, store=tmp_path / "full.h5", **settings)
    interrupted_run(scene, tmp_path / "part.h5", **settings)
    kept = read_trajectory(tmp_path / "part.h5")["total_frames"]
    assert 1 < kept < full.n_frames
    resumed = hooke.resume(tmp_path / "part.h5")
    stored, reference = read_trajectory(tmp_path / "part.h5"), read_trajectory(tmp_path / "full.h5")
    assert stored["attrs"]["complete"]
    for key in FRAME_KEYS:
        assert getattr(resumed, key).tobytes() == getattr(full, key).tobytes()
        assert stored[key].tobytes() == reference[key].tobytes()
    for key in reference["energy"]:
        assert stored["energy"][key].tobytes() == reference["energy"][key].tobytes()
    for key in reference["extras"]:
        assert stored["extras"][key].tobytes() == reference["extras"][key].tobytes()


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
    slab = grids[7].find("Geometry/DataItem/DataItem").text.split()
    assert slab[:3] == ["7", "0", "0"]  # frame 7's hyperslab of /frames/x
    done = subprocess.run([sys.executable, "-m", "hooke.cli", "export", str(out), "--vtu"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    mesh = meshio.read(out / "vtu" / "frame_00050.vtu")
    stored = read_trajectory(out / "trajectory.h5")
    np.testing.assert_allclose(mesh.points[:, :2], stored["x"][50])
    assert mesh.cells_dict["line"].shape == (10, 2)
    assert "frame_00050.vtu" in (out / "vtu" / "frames.pvd").read_text()


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
