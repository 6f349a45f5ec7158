"""Prescribed sinusoids against the step (hooke.integrators.sampling): a fixed-step run that samples
one fewer than twice per period is refused up front, one line naming the motion's ω, dt and the
largest dt that resolves it; rk45's adaptive steps are not; a resolved sinusoid pin converges
at each integrator's order under dt halving."""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest

import hooke
from hooke.motion import Sinusoid

from conftest import INTEGRATORS, fixed_step_options, integrator_class, log_slope, run_main

FIXED_STEP = [name for name in INTEGRATORS if not integrator_class(name).adaptive]


def shaken_spring(omega: float, dim: int = 2, wind_omega: float | None = None) -> hooke.Scene:
    """A pin shaken along x at ``omega`` (amplitude 0.1 m) and a spring of 1 m to a free
    particle of 0.5 kg; with ``wind_omega``, air drag towards a wind sloshing at that rate."""
    b = hooke.ModelBuilder(dim=dim)
    along = (1.0,) + (0.0,) * (dim - 1)
    b.add_particle((0.0,) * dim, pinned=True, motion=Sinusoid(0.1, along, omega))
    b.add_particle(along, mass=0.5)
    b.add_spring(0, 1, stiffness=40.0, damping=0.2)
    if wind_omega is not None:
        b.set_air(0.3, wind=(0.0,) * dim, motion=Sinusoid(0.5, along, wind_omega))
    return hooke.Scene(b.finalize(), dt=0.01, t_end=0.5)


SCENE_FILE = """\
    dim = 2

    [[particles]]
    x = [0.0, 0.0]

    [[particles]]
    x = [1.0, 0.0]
    motion = { type = "sinusoid", amplitude = 0.1, direction = [1.0, 0.0], omega = 1000.0 }

    [[springs]]
    i = 0
    j = 1
    stiffness = 10.0

    [run]
    integrator = "rk4"
    dt = 0.01
    t_end = 2.0
"""


def test_a_sinusoid_the_steps_cannot_resolve_is_one_line_before_any_file(tmp_path, monkeypatch,
                                                                        capsys):
    """ω·dt = 10: rk4 left the free particle at x = −0.97 m (the far side of its pin), every
    other integrator near 1 m, all silently; implicit_euler_linear went to 1e146 m at ω = 1e150."""
    path = tmp_path / "shaken.toml"
    path.write_text(textwrap.dedent(SCENE_FILE))
    out = tmp_path / "out"
    code, lines = run_main(monkeypatch, capsys, "run", str(path), "--out", str(out))
    assert (code, lines) == (2, [
        "error: particles[1].motion.omega: sampled fewer than 2 times per period (2π/|omega| = "
        "0.00628 s) by rk4's fixed steps of dt = 0.01 s, so its values alias to another motion: "
        "take dt <= π/|omega| = 0.00314 s (or rk45, whose adaptive steps follow the motion), "
        "got 1000.0"])
    assert not out.exists()
    code, lines = run_main(monkeypatch, capsys, "check", str(path))
    assert code == 2 and lines[0].startswith("error: particles[1].motion.omega: sampled fewer ")
    # the same motion resolved (dt = 0.003 s < π/1000), and rk45, whose dt sets the frames only
    code, _ = run_main(monkeypatch, capsys, "run", str(path), "--dt", "0.003", "--t-end", "0.03",
                       "--out", str(out))
    assert code in (None, 0)  # a run that succeeds returns from main()
    code, _ = run_main(monkeypatch, capsys, "run", str(path), "-i", "rk45", "--t-end", "0.03",
                       "--out", str(tmp_path / "adaptive"))
    assert code in (None, 0)  # a run that succeeds returns from main()


@pytest.mark.parametrize("name", FIXED_STEP)
def test_every_fixed_step_integrator_refuses_past_two_samples_per_period(name):
    options = fixed_step_options(name)
    with pytest.raises(hooke.HookeInputError) as info:
        hooke.simulate(shaken_spring(320.0), integrator=name, **options)  # ω·dt = 3.2 > π
    assert str(info.value).startswith(f"particles[0].motion.omega: sampled fewer than 2 times "
                                      f"per period (2π/|omega| = 0.0196 s) by {name}'s ")
    assert str(info.value).endswith("got 320.0")
    result = hooke.simulate(shaken_spring(310.0), integrator=name, t_end=0.05, **options)
    assert result.complete  # ω·dt = 3.1 ≤ π: two samples per period, accepted


def test_xpbd_samples_at_its_substeps_and_rk45_only_with_fixed_steps():
    scene = shaken_spring(500.0)  # ω·dt = 5: 2 substeps resolve it
    assert hooke.simulate(scene, integrator="xpbd", substeps=2, t_end=0.05).complete
    with pytest.raises(hooke.HookeInputError) as info:
        hooke.simulate(scene, integrator="xpbd", substeps=1)
    assert str(info.value) == (
        "particles[0].motion.omega: sampled fewer than 2 times per period (2π/|omega| = 0.0126 s) "
        "by xpbd's fixed steps of dt = 0.01 s, so its values alias to another motion: take dt <= "
        "π/|omega| = 0.00628 s (or rk45, whose adaptive steps follow the motion), got 500.0")
    assert hooke.simulate(scene, integrator="rk45", t_end=0.05).complete
    with pytest.raises(hooke.HookeInputError, match=r"^particles\[0\]\.motion\.omega: .* by "
                       r"rk45's fixed steps of dt = 0\.01 s"):
        hooke.simulate(scene, integrator="rk45", adaptive=False)


def test_every_unresolved_sinusoid_is_named_one_line_each():
    scene = shaken_spring(400.0, wind_omega=-1000.0)
    with pytest.raises(hooke.HookeInputError) as info:
        hooke.simulate(scene, integrator="rk4")
    lines = str(info.value).split("\n")
    assert [line.split(":")[0] for line in lines] == ["particles[0].motion.omega", "air.motion.omega"]
    assert lines[1].endswith("take dt <= π/|omega| = 0.00314 s (or rk45, whose adaptive steps "
                             "follow the motion), got -1000.0")


def reference(scene: hooke.Scene, t_end: float, interval: float) -> np.ndarray:
    return hooke.simulate(scene, integrator="rk45", dt=interval, t_end=t_end, rtol=1e-12,
                          atol=1e-13).x


@pytest.mark.parametrize("name", FIXED_STEP)
def test_a_resolved_sinusoid_pin_converges_at_the_integrators_order(name):
    """ω = 8 rad/s, ω·dt ≤ 0.32 (≥ 20 samples per period): the error against rk45 at rtol 1e-12
    falls as dt^order under three halvings; the pin itself sits on its path to round-off."""
    order = integrator_class(name).order
    scene = shaken_spring(8.0)
    base = 0.01 if order <= 1 else 0.04
    dts = base * 2.0 ** -np.arange(4)
    t_end = 1.28
    exact = reference(scene, t_end, dts[0])
    errors = []
    for dt in dts:
        result = hooke.simulate(scene, integrator=name, dt=dt, t_end=t_end,
                                save_every=int(round(dts[0] / dt)), **fixed_step_options(name, 1e-10))
        np.testing.assert_allclose(result.x[:, 0, 0], 0.1 * np.sin(8.0 * result.t), atol=1e-14)
        errors.append(np.max(np.abs(result.x[:, 1] - exact[:, 1])))
    errors = np.array(errors)
    assert errors.min() > 1e-10, errors
    slope = log_slope(dts, errors)
    assert abs(slope - order) <= 0.3, f"{name}: slope {slope:.3f} vs order {order}, errors {errors}"
