"""rk45's compiled adaptive steps (hooke.integrators.adaptive_compiled) against its Python loop:
the same bits, the same counts, the same errors; and when each path is taken. (A resumed run
recomputes the step its last frame came from with the Python loop and goes on compiled:
tests/test_store.py's resume test checks that it ends bit-identical.)"""

from __future__ import annotations

import numpy as np
import pytest

import hooke
from hooke.integrators import adaptive, adaptive_compiled
from hooke.integrators import get as get_integrator
from hooke.system import System

from conftest import seed_crane


CASES = [  # (scene, simulate's keywords): joints under each stabilisation it covers, and springs
    ("pendulum", {"t_end": 20.0}),  # seed 003's correction force, chaotic
    ("pendulum", {"t_end": 5.0, "stabilization": "baumgarte"}),
    ("pendulum", {"t_end": 5.0, "stabilization": "none"}),
    ("npendulum", {"t_end": 3.0, "stabilization": "correction"}),
    # joints and a spring: the seed's crane (its wind a tilted gravity; the crane scene's air
    # drag sends rk45 down its Python loop, tests/test_drag.py)
    ("seed crane", {"t_end": 1.0, "stabilization": "correction"}),
    ("chain", {"t_end": 1.0}),  # springs only, 3D
    ("spring1d", {"t_end": 5.0}),  # 1D
    # one frame of 50,000 steps: the compiled steps pause (STEPS_PER_CALL) and go on
    ("spring1d", {"t_end": 0.5, "dt": 0.5, "max_step": 1e-5}),
]


def case_scene(name: str) -> hooke.Scene:
    """A case's scene: the built-in one of that name, or the seed's crane."""
    return seed_crane() if name == "seed crane" else hooke.scene(name)


def run_both(name: str, keywords: dict, monkeypatch):
    scene = case_scene(name)
    keywords = {"integrator": "rk45", **keywords}
    compiled = hooke.simulate(scene, **keywords)
    with monkeypatch.context() as patch:
        patch.setattr(adaptive.adaptive_compiled, "build", lambda *args: None)
        python = hooke.simulate(scene, **keywords)
    return compiled, python


@pytest.mark.parametrize("name, keywords", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_compiled_steps_give_the_python_loops_bits(name, keywords, monkeypatch):
    compiled, python = run_both(name, keywords, monkeypatch)
    assert compiled.stats == python.stats
    np.testing.assert_array_equal(compiled.x, python.x)
    np.testing.assert_array_equal(compiled.v, python.v)
    np.testing.assert_array_equal(compiled.energy["total"], python.energy["total"])


def test_the_pendulum_takes_the_compiled_steps_and_projection_does_not():
    scene = hooke.scene("pendulum")
    integrator = get_integrator("rk45")(System(scene.model), scene.dt, **scene.options)
    assert integrator._compiled is not None
    projecting = get_integrator("rk45")(System(scene.model), scene.dt,
                                        **{**scene.options, "stabilization": "projection"})
    assert projecting._compiled is None  # projection moves the state after each step
    fixed = get_integrator("rk45")(System(scene.model), scene.dt, adaptive=False,  # (its rtol
                                   stabilization="correction")  # and atol: inert, refused)
    assert fixed._compiled is None


def test_a_moving_pin_keeps_the_python_loop():
    """Seed 003's moving support: its motion is a Python function of time."""
    moving = hooke.scene("pendulum", support_amplitude=0.1, support_omega=2.0)
    assert get_integrator("rk45")(System(moving.model), moving.dt,
                                  **moving.options)._compiled is None  # a moving pin


def test_a_step_the_compiled_loop_stops_at_fails_as_in_the_python_loop(monkeypatch):
    """A largest step under the underflow limit from a given first step: the trial step
    underflows at once. (Tolerances of 1e-300, which made every error estimate overflow, are
    refused now: tests/test_strict_inputs.py, as is that max_step, by ``check_span``, which is
    skipped here to reach the step loops' own guard.) The compiled steps stop before that step
    and the Python loop repeats it, so the error, its step and the state it names are the
    same."""
    scene = hooke.scene("pendulum")
    keywords = {"t_end": 0.1, "max_step": 1e-15, "first_step": 1e-3}
    failures, statuses = [], []
    compiled_run = adaptive_compiled.CompiledDormandPrince.run

    def recorded(self, *args):
        outcome = compiled_run(self, *args)
        statuses.append(outcome.status)
        return outcome

    for patched in (False, True):
        with monkeypatch.context() as patch:
            patch.setattr(adaptive_compiled.CompiledDormandPrince, "run", recorded)
            patch.setattr(adaptive.DormandPrince45, "check_span", lambda *args: None)
            if patched:
                patch.setattr(adaptive.adaptive_compiled, "build", lambda *args: None)
            with pytest.raises(hooke.SimulationError) as caught:
                hooke.simulate(scene, **keywords)
            failures.append(str(caught.value))
    assert failures[0].startswith("step 1 (t = 0.01) failed: rk45: step size underflow")
    assert failures[0] == failures[1]
    assert statuses == [adaptive_compiled.UNDERFLOW]  # the compiled steps stopped, once


def compiled_scenes():
    """Every built-in scene whose rk45 (with the scene's options for it) takes the compiled
    steps, over the scene's first 200 output intervals."""
    from hooke.simulate import scene_options

    cases = []
    for name in hooke.scenes():
        scene = hooke.scene(name)
        try:
            stepper = get_integrator("rk45")(System(scene.model), scene.dt,
                                             **scene_options(scene, "rk45")[0])
        except hooke.HookeInputError:  # contact: rk45 refuses it
            continue
        if stepper._compiled is not None:
            cases.append((name, {"t_end": min(scene.t_end, 200 * scene.dt)}))
    return cases


BLOCK_CASES = compiled_scenes() + CASES


def recording_calls(patch) -> list:
    """Patch CompiledDormandPrince.run to record each call's (status, frames written, frames
    asked for, frames already done)."""
    calls, compiled_run = [], adaptive_compiled.CompiledDormandPrince.run

    def recorded(self, step, start, first, h, times, done, *args):
        outcome = compiled_run(self, step, start, first, h, times, done, *args)
        calls.append((outcome.status, outcome.frames, times.size, done))
        return outcome
    patch.setattr(adaptive_compiled.CompiledDormandPrince, "run", recorded)
    return calls


def test_every_compiled_scene_is_among_the_block_cases():
    assert {"pendulum", "npendulum", "chain", "spring1d", "oscillator"} <= {
        name for name, _ in compiled_scenes()}


@pytest.mark.parametrize("name, keywords", BLOCK_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(BLOCK_CASES)])
def test_frames_in_blocks_give_the_frame_by_frame_bits(name, keywords, monkeypatch):
    """simulate computes rk45's frames in blocks (one compiled call for many frames); with
    blocks off it calls ``advance`` once per frame. Both give the same frames, energies,
    tensions and counts, bit for bit."""
    from hooke import simulate as simulate_module
    from hooke.simulate import Run

    scene = case_scene(name)
    keywords = {"integrator": "rk45", **keywords}
    with monkeypatch.context() as patch:
        patch.setattr(simulate_module, "BLOCK_SECONDS", np.inf)  # blocks double, however slow
        block_calls = recording_calls(patch)
        blocks = hooke.simulate(scene, **keywords)
    with monkeypatch.context() as patch:
        patch.setattr(Run, "_blocks", lambda self: False)
        frame_calls = recording_calls(patch)
        frames = hooke.simulate(scene, **keywords)
    assert blocks.stats == frames.stats
    for key in ("t", "x", "v"):
        assert getattr(blocks, key).tobytes() == getattr(frames, key).tobytes(), key
    assert blocks.energy.keys() == frames.energy.keys()
    for key, value in blocks.energy.items():
        assert value.tobytes() == frames.energy[key].tobytes(), key
    if blocks.joint_force is not None:
        assert blocks.joint_force.tobytes() == frames.joint_force.tobytes()
    assert len(frame_calls) >= blocks.n_frames - 1  # one call per frame at least
    if blocks.n_frames > 100:
        assert len(block_calls) < (blocks.n_frames - 1) / 10  # the blocks double to 1024


def test_a_block_that_pauses_gives_the_frame_by_frame_bits(monkeypatch):
    """spring1d's frames 0.07 s apart at steps of at most 1e-5 s: 7,000 steps per frame, so a
    block of 8 frames pauses (STEPS_PER_CALL = 20,000) with 2 of its frames written and goes on;
    its frames and counts are those of 8 calls of ``advance``."""
    scene = hooke.scene("spring1d")
    options = {**scene.options, "max_step": 1e-5}
    times = 0.07 * np.arange(1, 9)

    def stepper():
        made = get_integrator("rk45")(System(scene.model), scene.dt, **options)
        made.t_bound = times[-1]
        return made

    shape = (times.size,) + scene.model.x0.shape
    x, v = np.empty(shape), np.empty(shape)
    with monkeypatch.context() as patch:
        calls = recording_calls(patch)
        blocks = stepper()
        last = blocks.advance_frames(scene.state, times, x, v)
    assert calls[0] == (adaptive_compiled.PAUSED, 2, times.size, 0)  # paused mid-block
    assert calls[-1][:2] == (adaptive_compiled.OK, times.size)
    frames, state = stepper(), scene.state
    for k, time in enumerate(times):
        state = frames.advance(state, time, 1)
        assert state.t == time
        assert state.x.tobytes() == x[k].tobytes() and state.v.tobytes() == v[k].tobytes()
    assert blocks.stats == frames.stats and blocks.stats["steps"] > 2 * adaptive_compiled.STEPS_PER_CALL
    assert last.t == times[-1] and last.x is blocks._frame.x
    checkpoint = frames.checkpoint()  # a resumed run goes on from the same step
    assert blocks.checkpoint().keys() == checkpoint.keys()
    for key, value in blocks.checkpoint().items():
        np.testing.assert_array_equal(value, checkpoint[key], err_msg=key)


def test_rk45_gives_the_same_bits_for_any_numba_thread_count():
    """A model whose springs the gather sums in runs (the 40 × 40 cloth, 6162 springs): the
    compiled steps, which sum them spring by spring, were taken with one Numba thread (one chunk)
    and the generic ones, through the run kernels, with two, so NUMBA_NUM_THREADS=1 and 2 gave
    velocities 3e-17 m/s apart after 10 ms. The compiled steps now leave such a model to the
    generic ones, whatever the thread count."""
    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs two Numba threads")
    scene = hooke.scene("cloth", n=40)
    assert System(scene.model).gather.runs is not None
    before = numba.get_num_threads()
    results = []
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            results.append(hooke.simulate(scene, integrator="rk45", t_end=0.01, dt=1e-3))
    finally:
        numba.set_num_threads(before)
    one, two = results
    assert one.stats == two.stats
    np.testing.assert_array_equal(one.x, two.x)
    np.testing.assert_array_equal(one.v, two.v)
