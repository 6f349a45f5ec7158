"""The compiled Newmark-family step (hooke.integrators.newmark_compiled) against the generic one.

Both paths run the same method with the same Newton test and refactor rule; they differ only in
round-off (force summation order, banded LU vs SuperLU), so over 3000 steps positions, velocities
and joint forces agree to 1e-10 relative (measured: ≤ 5e-11), and so do the counts (a round-off
flip of a refactor decision may change a few). The jointed chain is compared up to 1.2 s only:
its free end whips at 1.4 s, where the motion amplifies any difference (at 3 s, 5e-4). The crane
(air drag towards a steady wind) over 2000 steps: its sway amplifies the first steps' 1e-20
differences to 3e-11 in the velocities by 4 s and 9e-11 by 6 s.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import hooke
from hooke.errors import SimulationError
from hooke.integrators import newmark
from hooke.system import System

from conftest import relative_difference, seed_crane


def hanging_chain(n: int) -> hooke.Scene:
    b = hooke.ModelBuilder(dim=3, gravity=(0.0, 0.0, -9.81))
    previous = b.add_particle((0.0, 0.0, 0.0), pinned=True)
    for k in range(1, n + 1):
        current = b.add_particle((k / n, 0.0, 0.0), mass=0.1)
        b.add_joint(previous, current)
        previous = current
    return hooke.Scene(b.finalize(), integrator="generalized_alpha", dt=1e-3, t_end=0.5)


def spring_net(energy: str, air: bool = False) -> hooke.Scene:
    """A damped 2D 4 × 3 spring net (structural and diagonal springs), hanging from two corners,
    stretched at the start; no joints. With ``air``: drag on every particle (the pinned corners
    too, where it does nothing) towards a steady wind across and up."""
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81), spring_energy=energy)
    if air:
        b.set_air(np.linspace(0.05, 0.6, 12), wind=(4.0, 1.5))
    ids = {(i, j): b.add_particle((0.3 * i, -0.25 * j), mass=0.2, pinned=j == 0 and i in (0, 3))
           for i in range(4) for j in range(3)}
    for (i, j), p in ids.items():
        for di, dj in ((1, 0), (0, 1), (1, 1), (1, -1)):
            q = ids.get((i + di, j + dj))
            if q is not None:
                b.add_spring(p, q, stiffness=400.0, damping=0.5,
                             rest_length=0.2 if dj == 0 else None)
    return hooke.Scene(b.finalize(), integrator="generalized_alpha", dt=2e-3, t_end=1.0)


CASES = {  # scene, dt, steps compared, options
    "top": (hooke.scene("top"), 1e-3, 3000, {}),
    "crane (steady wind)": (hooke.scene("crane"), 2e-3, 2000, {}),
    "seed crane (tilted gravity)": (seed_crane(), 2e-3, 3000, {}),
    "pendulum": (hooke.scene("pendulum"), 1e-3, 3000, {}),
    "chain n=20": (hanging_chain(20), 1e-3, 1200, {}),
    "springs hookean": (spring_net("hookean"), 2e-3, 3000, {}),
    "springs squared_length": (spring_net("squared_length"), 2e-3, 3000,
                               {"integrator": "newmark"}),
    "springs with air drag": (spring_net("hookean", air=True), 2e-3, 3000, {}),
    "spring1d": (hooke.scene("spring1d"), 5e-3, 3000, {"rho_inf": 0.5}),
}


def run(scene, dt, compiled, monkeypatch, steps=400, **options):
    monkeypatch.setattr(newmark, "COMPILED", compiled)
    options = {"integrator": "generalized_alpha", **options}
    return hooke.simulate(scene, dt=dt, t_end=steps * dt, save_every=7, **options)


@pytest.mark.parametrize("case", CASES)
def test_compiled_step_agrees_with_the_generic_one(case, monkeypatch):
    scene, dt, steps, options = CASES[case]
    generic = run(scene, dt, False, monkeypatch, steps, **options)
    compiled = run(scene, dt, True, monkeypatch, steps, **options)
    settings = {key: value for key, value in options.items() if key != "integrator"}
    stepper = hooke.get_integrator(options.get("integrator", "generalized_alpha"))
    assert stepper(System(scene.model), dt, **settings).compiled  # the kernel ran, not the generic
    for key in ("x", "v", "joint_force"):
        if getattr(generic, key).size:
            assert relative_difference(getattr(compiled, key), getattr(generic, key)) <= 1e-10, key
    np.testing.assert_array_equal(compiled.t, generic.t)
    assert compiled.stats["steps"] == generic.stats["steps"] == steps
    for key in ("newton_iterations", "factorizations"):  # a round-off flip may change a few
        assert abs(compiled.stats[key] - generic.stats[key]) <= 0.02 * generic.stats[key] + 1


def test_single_steps_and_batches_are_the_same_run(monkeypatch):
    scene = hooke.scene("top")
    batched = run(scene, 1e-3, True, monkeypatch, steps=200)
    stepper = hooke.get_integrator("generalized_alpha")(System(scene.model), 1e-3)
    state = scene.state
    for k in range(200):
        state = stepper.step(state) if k % 2 else stepper.advance(state, state.t + 1e-3, 1)
    assert stepper.compiled and stepper.stats == batched.stats
    assert relative_difference(state.x, batched.x[-1]) <= 1e-14


@pytest.mark.parametrize("name", ["top", "pendulum", "crane"])
def test_the_compiled_path_is_taken_for_the_seed_scenes(name, monkeypatch):
    scene = hooke.scene(name)
    stepper = hooke.get_integrator("generalized_alpha")(System(scene.model), 1e-3)
    assert stepper.compiled
    monkeypatch.setattr(newmark, "COMPILED", False)
    assert not hooke.get_integrator("newmark")(System(scene.model), 1e-3).compiled


def test_models_it_does_not_cover_take_the_generic_path():
    moving = hooke.scene("pendulum", support_amplitude=0.1, support_omega=2.0)
    gusting = hooke.scene("crane_wind")  # a wind that varies in time
    for scene in (moving, gusting):
        stepper = hooke.get_integrator("generalized_alpha")(System(scene.model), 1e-3)
        assert not stepper.compiled
    # A term added after construction (the viewer's cursor spring) switches it off too.
    scene = hooke.scene("top")
    system = System(scene.model)
    stepper = hooke.get_integrator("generalized_alpha")(system, 1e-3)
    state = stepper.step(scene.state)
    assert stepper.compiled
    system.terms.append(system.terms[0])  # any other term object; here gravity again
    assert not stepper.compiled
    stepper.step(state)


def test_newton_failure_reports_the_same_history_on_both_paths(monkeypatch):
    monkeypatch.setattr(newmark, "MAX_HALVINGS", 0)  # (split, the steps of 0.05 s converge)
    messages = []
    for compiled in (False, True):
        monkeypatch.setattr(newmark, "COMPILED", compiled)
        with pytest.raises(SimulationError, match="Newton did not converge in 2 iterations") as info:
            hooke.simulate(hooke.scene("top"), dt=0.05, t_end=1.0, max_iterations=2)
        messages.append(str(info.value))
        assert not info.value.result.complete and np.all(np.isfinite(info.value.result.x))
    assert messages[0] == messages[1]


def test_blow_up_is_reported_at_the_first_non_finite_step(monkeypatch):
    """Free fall under a gravity of 3e307 m/s² with dt = 1 s: Newton converges at once (the
    residual is exactly zero), x = ½gt², v = gt, and x overflows at step 4. Both paths stop
    there even with frames every 10 steps and write step 3, the last finite state, as a frame."""
    g = -3e307
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, g))
    b.add_particle((0.0, 0.0), mass=1.0)
    scene = hooke.Scene(b.finalize(), integrator="generalized_alpha", dt=1.0, t_end=20.0)
    for compiled in (True, False):
        monkeypatch.setattr(newmark, "COMPILED", compiled)
        with pytest.raises(SimulationError) as info:
            hooke.simulate(scene, save_every=10)
        assert str(info.value) == (
            "the state became non-finite at step 4 (t = 4); worst particle 0 (non-finite; at "
            "t = 3: |x|∞ = 1.35e+308 m, |v|∞ = 9e+307 m/s); 2 frame(s) kept, the last at t = 3. "
            "Try a smaller dt or an implicit integrator (implicit_euler, implicit_euler_linear).")
        partial = info.value.result
        np.testing.assert_array_equal(partial.t, [0.0, 3.0])
        np.testing.assert_allclose(partial.x[-1], [[0.0, 4.5 * g]], rtol=1e-15)
        np.testing.assert_allclose(partial.v[-1], [[0.0, 3 * g]], rtol=1e-15)


def test_resume_continues_a_compiled_run(tmp_path, monkeypatch):
    """A resumed run restarts from the consistent acceleration (the checkpoint holds no ã), on
    either path alike."""
    scene = hooke.scene("crane")
    full = hooke.simulate(scene, t_end=0.3, store=tmp_path / "full.h5")

    def stop(done, total):
        if done >= total // 2:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        hooke.simulate(scene, t_end=0.3, store=tmp_path / "part.h5", progress=stop)
    shutil.copy(tmp_path / "part.h5", tmp_path / "copy.h5")
    resumed = hooke.resume(tmp_path / "part.h5")
    monkeypatch.setattr(newmark, "COMPILED", False)
    generic = hooke.resume(tmp_path / "copy.h5")
    assert resumed.complete and resumed.stats["steps"] == full.stats["steps"] == 150
    assert relative_difference(resumed.x, generic.x) <= 1e-10
    assert relative_difference(resumed.x, full.x) <= 1e-6


BLOCK_CASES = {  # scene, simulate's keywords
    "pendulum, a frame every step": ("pendulum", {"integrator": "generalized_alpha", "dt": 1e-3,
                                                  "t_end": 2.0, "save_every": 1}),
    "crane, every 7 steps": ("crane", {"t_end": 1.0, "save_every": 7}),
    "newmark, every 2 steps": ("pendulum", {"integrator": "newmark", "dt": 1e-3, "t_end": 1.0,
                                            "save_every": 2}),
    # Newton fails in 4 iterations at dt = 0.02: many steps are split between kernel calls
    "top, steps split": ("top", {"dt": 0.02, "t_end": 1.0, "max_iterations": 4,
                                 "save_every": 3}),
}


@pytest.mark.parametrize("case", BLOCK_CASES)
def test_frames_in_blocks_give_the_frame_by_frame_bits(case, monkeypatch):
    """simulate computes the α-methods' frames in blocks (one kernel call for many frames, a
    failing step split in Python between two calls); with blocks off it calls ``advance`` once
    per frame. Both give the same frames, energies, tensions and counts, bit for bit."""
    from hooke import simulate as simulate_module
    from hooke.integrators.newmark_compiled import CompiledAlpha
    from hooke.simulate import Run

    name, keywords = BLOCK_CASES[case]
    scene = hooke.scene(name)
    results, calls = [], []
    for blocks in (True, False):
        with monkeypatch.context() as patch:
            patch.setattr(simulate_module, "BLOCK_SECONDS", np.inf)  # blocks double, however slow
            if not blocks:
                patch.setattr(Run, "_blocks", lambda self: False)
            made, run_frames = [], CompiledAlpha.run_frames

            def recorded(self, times, *args):
                made.append(times.size)
                return run_frames(self, times, *args)
            patch.setattr(CompiledAlpha, "run_frames", recorded)
            results.append(hooke.simulate(scene, **keywords))
            calls.append(made)
    blocks, frames = results
    assert blocks.stats == frames.stats
    assert (blocks.stats["split_steps"] > 0) == (case == "top, steps split")
    for key in ("t", "x", "v", "joint_force"):
        assert getattr(blocks, key).tobytes() == getattr(frames, key).tobytes(), key
    assert blocks.energy.keys() == frames.energy.keys()
    for key, value in blocks.energy.items():
        assert value.tobytes() == frames.energy[key].tobytes(), key
    assert set(calls[1]) == {1} and len(calls[1]) >= blocks.n_frames - 1  # a call per frame
    if not blocks.stats["split_steps"]:
        assert len(calls[0]) < (blocks.n_frames - 1) / 5  # the blocks double
