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


CASES = [  # (scene, simulate's keywords): joints under each stabilisation it covers, and springs
    ("pendulum", {"t_end": 20.0}),  # seed 003's correction force, chaotic
    ("pendulum", {"t_end": 5.0, "stabilization": "baumgarte"}),
    ("pendulum", {"t_end": 5.0, "stabilization": "none"}),
    ("npendulum", {"t_end": 3.0, "stabilization": "correction"}),
    ("crane", {"t_end": 1.0, "stabilization": "correction"}),  # joints and a spring
    ("chain", {"t_end": 1.0}),  # springs only, 3D
    ("spring1d", {"t_end": 5.0}),  # 1D
    # one frame of 50,000 steps: the compiled steps pause (STEPS_PER_CALL) and go on
    ("spring1d", {"t_end": 0.5, "dt": 0.5, "max_step": 1e-5}),
]


def run_both(name: str, keywords: dict, monkeypatch):
    scene = hooke.scene(name)
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
    fixed = get_integrator("rk45")(System(scene.model), scene.dt,
                                   **{**scene.options, "adaptive": False})
    assert fixed._compiled is None


def test_a_moving_pin_keeps_the_python_loop():
    """Seed 003's moving support: its motion is a Python function of time."""
    moving = hooke.scene("pendulum", support_amplitude=0.1, support_omega=2.0)
    assert get_integrator("rk45")(System(moving.model), moving.dt,
                                  **moving.options)._compiled is None  # a moving pin


def test_a_step_the_compiled_loop_stops_at_fails_as_in_the_python_loop(monkeypatch):
    """Tolerances of 1e-300 from a given first step: every error estimate overflows and the
    trial steps shrink until the step size underflows. The compiled steps stop before that step
    and the Python loop repeats it, so the error, its step and the state it names are the same."""
    scene = hooke.scene("pendulum")
    keywords = {"t_end": 0.1, "rtol": 1e-300, "atol": 1e-300, "first_step": 1e-3}
    failures, statuses = [], []
    compiled_run = adaptive_compiled.CompiledDormandPrince.run

    def recorded(self, *args):
        outcome = compiled_run(self, *args)
        statuses.append(outcome.status)
        return outcome

    for patched in (False, True):
        with monkeypatch.context() as patch:
            patch.setattr(adaptive_compiled.CompiledDormandPrince, "run", recorded)
            if patched:
                patch.setattr(adaptive.adaptive_compiled, "build", lambda *args: None)
            with pytest.raises(hooke.SimulationError) as caught:
                hooke.simulate(scene, **keywords)
            failures.append(str(caught.value))
    assert failures[0].startswith("step 1 (t = 0.01) failed: rk45: step size underflow")
    assert failures[0] == failures[1]
    assert statuses == [adaptive_compiled.UNDERFLOW]  # the compiled steps stopped, once
