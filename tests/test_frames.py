"""Saved frames (hooke.frames): a run records each frame's state and derives the rest in blocks;
every derived value is bit-identical to the frame-by-frame reference (frame_data), on every
built-in scene; a frame whose derivation fails stops the run there; a Ctrl-C between frames keeps
the frames whose checkpoint is known, and the run resumes exactly."""

from __future__ import annotations

import json

import numpy as np
import pytest

import hooke
from hooke import simulate as simulate_module
from hooke.errors import SimulationError
from hooke.frames import derive_block, frame_data
from hooke.io.store import (FLUSH_FRAMES, MAX_FLUSH_FRAMES, TrajectoryWriter, flush_frames,
                            read_trajectory)
from hooke.system import System

from conftest import run_cli

SMALL = {"cloth": {"n": 6}, "lattice": {"nx": 3, "ny": 3, "nz": 3}, "jointed_chain": {"n": 5},
         "cloth_fold": {"n": 8}, "soft3d_pile": {"n": 3}}


def reference(system, result) -> dict[str, np.ndarray]:
    """frame_data of every saved state, stacked: what the run would have saved frame by frame."""
    frames = [frame_data(system, hooke.State(result.t[f], result.x[f], result.v[f]))
              for f in range(result.n_frames)]
    return {key: np.stack([np.asarray(frame[key]) for frame in frames]) for key in frames[0]}


@pytest.mark.parametrize("name", hooke.scenes())
def test_a_run_saves_exactly_what_frame_by_frame_derivation_gives(name):
    """Energies by term, tensions, contact distance and forces and the surfaces' distance of a
    run (derived in blocks) equal frame_data's of the same states bit for bit, and derive_block
    keys them alike."""
    scene = hooke.scene(name, **SMALL.get(name, {}))
    result = hooke.simulate(scene, t_end=30 * scene.dt)
    system = System(scene.model)
    expected = reference(system, result)
    saved = {"t": result.t, "x": result.x, "v": result.v,
             **{f"energy/{key}": value for key, value in result.energy.items()}}
    if scene.model.n_joints:
        saved["joint_force"] = result.joint_force
    if scene.model.n_planes:
        saved["contact_distance"] = result.contact_distance
        saved["contact_force"] = result.contact_force
    if scene.model.n_contact_faces:
        saved["surface_distance"] = result.surface_distance
    assert sorted(saved) == sorted(expected)
    for key, value in expected.items():
        assert saved[key].tobytes() == value.tobytes(), key
    block = derive_block(system, np.ascontiguousarray(result.t), np.ascontiguousarray(result.x),
                         np.ascontiguousarray(result.v))
    assert list(block) == [key for key in expected if key not in ("t", "x", "v")]


def test_the_block_sums_round_as_numpys_frame_sums_at_any_size():
    """The kinetic and gravity energies of a block (sums along a contiguous last axis, a stacked
    matrix product) equal the frame-by-frame ones for sizes around NumPy's pairwise-sum blocks."""
    rng = np.random.default_rng(3)
    for n in (1, 7, 8, 9, 127, 128, 129, 1000, 4097):
        for dim in (1, 2, 3):
            builder = hooke.ModelBuilder(dim=dim, gravity=rng.normal(size=dim))
            for _ in range(n):
                builder.add_particle(rng.normal(size=dim), mass=rng.uniform(0.1, 2.0))
            model = builder.finalize()
            system = System(model)
            x, v = rng.normal(size=(2, 5, n, dim)) * 10.0
            block = derive_block(system, np.arange(5.0), x, v)
            for f in range(5):
                frame = frame_data(system, hooke.State(float(f), x[f], v[f]))
                for key in ("energy/kinetic", "energy/gravity", "energy/total"):
                    assert block[key][f] == frame[key], (n, dim, key)


def failing_tensions(monkeypatch, at: float):
    """System.joint_tensions raising from time ``at`` on, through the frame-by-frame path."""
    monkeypatch.setattr("hooke.frames._compiled_tensions", lambda system, x, v, out: 0)
    original = System.joint_tensions

    def tensions(self, x, v, t=0.0):
        if t >= at - 1e-12:
            raise SimulationError(f"joints: at t = {t:.6g} the joint set is singular")
        return original(self, x, v, t)
    monkeypatch.setattr(System, "joint_tensions", tensions)


def test_a_frame_that_cannot_be_derived_stops_the_run_with_the_frames_before_it(
        monkeypatch, tmp_path):
    """Frame 30 (t = 0.03 s) fails: the error names it, the Result and the file keep frames
    0–29 (derived exactly), and the file says why it stopped (it is not resumed)."""
    scene = hooke.scene("pendulum")
    full = hooke.simulate(scene, integrator="rk4", dt=1e-3, t_end=0.05)
    failing_tensions(monkeypatch, at=0.03)
    path = tmp_path / "run.h5"
    with pytest.raises(SimulationError, match="at t = 0.03 the joint set is singular") as caught:
        hooke.simulate(scene, integrator="rk4", dt=1e-3, t_end=0.05, store=path)
    partial = caught.value.result
    assert partial.n_frames == 30 and not partial.complete
    assert partial.joint_force.tobytes() == full.joint_force[:30].tobytes()
    stored = read_trajectory(path)
    assert stored["total_frames"] == 30 and stored["x"].tobytes() == full.x[:30].tobytes()
    assert "singular" in stored["attrs"]["failure"]
    with pytest.raises(hooke.HookeInputError, match="^path: holds a run the blow-up guard stopped"):
        hooke.resume(path)


@pytest.mark.parametrize("eager", [True, False], ids=["a checkpoint per frame", "per block"])
def test_a_ctrl_c_inside_a_step_keeps_the_frames_whose_checkpoint_is_known(
        monkeypatch, tmp_path, eager):
    """A KeyboardInterrupt from inside the integrator's advance of frame 150: with a checkpoint
    taken at every frame (slow advances) the file keeps frames 0–149; with checkpoints per block
    only (fast advances) it keeps the frames of the blocks written (none at 64-frame blocks of
    a quick run that never reached its write time). Either way the run resumes bit-identical."""
    scene = hooke.scene("spring1d")
    monkeypatch.setattr(simulate_module, "EAGER_CHECKPOINT_SECONDS", 0.0 if eager else np.inf)
    # blocks of 64 frames, whatever the machine's speed (no write by time)
    monkeypatch.setattr(TrajectoryWriter, "due", lambda self, pending, size: pending >= 64)
    advance = simulate_module.Run._advance

    def interrupted(self, state, t0, frame, end):  # rk4: frame by frame (end = frame + 1)
        if frame == 150:
            raise KeyboardInterrupt
        return advance(self, state, t0, frame, end)
    monkeypatch.setattr(simulate_module.Run, "_advance", interrupted)
    path = tmp_path / "run.h5"
    with pytest.raises(KeyboardInterrupt) as caught:
        hooke.simulate(scene, integrator="rk4", t_end=2.0, store=path)
    kept = caught.value.frames_kept
    assert kept == (150 if eager else 128)  # blocks of 64 frames: 0–63, 64–127
    assert read_trajectory(path)["total_frames"] == kept
    monkeypatch.setattr(simulate_module.Run, "_advance", advance)
    resumed = hooke.resume(path)
    full = hooke.simulate(scene, integrator="rk4", t_end=2.0)
    assert resumed.x.tobytes() == full.x.tobytes() and resumed.stats == full.stats
    assert resumed.energy["total"].tobytes() == full.energy["total"].tobytes()


def test_small_frames_are_written_in_larger_blocks():
    """64 frames per block from 16 KiB frames up, up to 1 MiB of smaller frames, at most 4,096."""
    assert flush_frames(2**14) == flush_frames(10**6) == FLUSH_FRAMES == 64
    assert flush_frames(2**10) == 1024 and flush_frames(100) == MAX_FLUSH_FRAMES == 4096


# -- how many frames a run keeps by default -----------------------------------------------------

def summary_frames(tmp_path, *args) -> int:
    done = run_cli("run", *args, "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    return json.loads((tmp_path / "summary.json").read_text())["frames"]


def test_hooke_run_keeps_about_1000_frames_unless_told(tmp_path):
    """spring1d's 2,000 steps: `hooke run` keeps every second step (1,001 frames); --save-every 1
    or a scene file's own save_every keep every step (2,001), as hooke.simulate does by default."""
    assert summary_frames(tmp_path / "a", "spring1d") == 1001
    assert summary_frames(tmp_path / "b", "spring1d", "--save-every", "1") == 2001
    scene_file = tmp_path / "spring.toml"
    scene_file.write_text(hooke.scenes.source("spring1d").replace("[run]", "[run]\nsave_every = 1"))
    assert summary_frames(tmp_path / "c", str(scene_file)) == 2001
    scene = hooke.scene("spring1d")
    assert hooke.simulate(scene).n_frames == 2001
    assert hooke.simulate(scene, max_frames=1000).n_frames == 1001
    assert hooke.simulate(scene, max_frames=3000).n_frames == 2001
    assert hooke.simulate(scene, max_frames=7).n_frames == 8  # every 286th step, and the last
    # max_frames counts the frames after the start, which is always kept (issue 15: 1 gave 2
    # frames, which the docstring's "at most about this many frames" did not say)
    ends = hooke.simulate(scene, max_frames=1)
    assert ends.n_frames == 2 and ends.t.tolist() == [0.0, scene.t_end]
    for bad in (0, -1, 1.0):
        with pytest.raises(hooke.HookeInputError) as refused:
            hooke.simulate(scene, max_frames=bad)
        assert str(refused.value) == ("max_frames: must be an integer >= 1 (the frames saved after "
                                      "the initial one, which is always kept, the last step among "
                                      f"them), got {bad!r}")


def test_joint_forces_of_the_frames_are_the_same_bits_for_any_numba_thread_count():
    """The frames' joint tensions on a model whose springs the gather sums in runs (the 40 × 40
    cloth with a joint): the compiled tensions, which sum the springs one by one, were taken with
    one Numba thread (one chunk) and System.joint_tensions, through the run kernels, with two,
    so NUMBA_NUM_THREADS=1 and 2 stored tensions an ulp apart. The compiled ones now leave such
    a model to System.joint_tensions whatever the thread count."""
    import dataclasses

    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs two Numba threads")
    scene = hooke.scene("cloth", n=40)
    model = scene.model
    ends = model.x0[[500, 501]]
    model = dataclasses.replace(model, joint_indices=np.array([[500, 501]]),
                                joint_length=np.array([np.linalg.norm(ends[1] - ends[0])]))
    rng = np.random.default_rng(0)
    x = model.x0 + 0.01 * rng.normal(size=model.x0.shape)
    v = rng.normal(size=x.shape)
    x[model.pinned], v[model.pinned] = model.x0[model.pinned], 0.0
    scene = dataclasses.replace(scene, model=model, state=hooke.State(0.0, x, v))
    before = numba.get_num_threads()
    results = []
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            results.append(hooke.simulate(scene, integrator="symplectic_euler",
                                          stabilization=None, t_end=2 * scene.dt))
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(results[0].x, results[1].x)
    assert results[0].joint_force.tobytes() == results[1].joint_force.tobytes()
