"""Integrators against closed forms on the 1D spring (``hooke.scene("spring1d")``, ω = √(k/m)):

- order of convergence: slope of log(max error) vs log(dt) within ±0.3 of the class's ``order``;
- rk45 (any adaptive integrator with rtol/atol): error proportional to the tolerance, rejected
  steps counted exactly;
- energy per step: explicit Euler × (1 + ω²h²), linearly implicit Euler ÷ (1 + ω²h²); every
  explicit Runge–Kutta tableau × |R(iωh)|² (its stability polynomial); symplectic Euler keeps
  the modified energy E − ½hk·x·v exactly and E within (ωh/2)/(1 − ωh/2) over 1e5 steps.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import hooke
from hooke.system import System

from conftest import (INTEGRATORS, MEASURED_SLOPES, fixed_step_options, integrator_class,
                      log_slope)

SPRING1D = hooke.scene("spring1d")
K = SPRING1D.parameters["stiffness"]
M = SPRING1D.parameters["mass"]
OMEGA = np.sqrt(K / M)


def spring1d_energy_ratios(name: str, dt: float, steps: int, scene=None, **options) -> np.ndarray:
    scene = scene or hooke.scene("spring1d", v0=1.5)  # both x and v non-zero at the start
    result = hooke.simulate(scene, integrator=name, dt=dt, t_end=steps * dt, **options)
    assert result.n_frames == steps + 1
    total = result.energy["total"]
    x, v = result.x[:, 1, 0], result.v[:, 1, 0]
    np.testing.assert_allclose(total, 0.5 * M * v**2 + 0.5 * K * x**2, rtol=1e-13)
    return total[1:] / total[:-1]


# -- order of convergence -------------------------------------------------------------------------

def convergence_steps(order: int) -> np.ndarray:
    """Four halvings of dt in the asymptotic regime: 0.01 … 0.00125 for first-order methods
    (ω·dt ≤ 0.03, leading error term ≫ the next), 0.04 … 0.005 for orders 2–4; for each order
    above 4 the range moves up one octave so the smallest error, ≈ C·dt^order, stays far above
    round-off."""
    base = 0.01 if order <= 1 else 0.04 * 2.0 ** max(0, order - 4)
    return base * 2.0 ** -np.arange(4)


@pytest.mark.parametrize("name", INTEGRATORS)
def test_order_of_convergence(name):
    cls = integrator_class(name)
    order = getattr(cls, "order", None)
    if order is None:
        pytest.skip(f"{name} declares no theoretical order")
    options = fixed_step_options(name, tol=1e-10)  # Newton error far below the O(h) error
    dts = convergence_steps(order)
    t_end, frame_interval = 2.56, dts[0]  # t_end ≈ 1.3 periods (2π/ω ≈ 1.99 s), a multiple of every dt
    errors = []
    for dt in dts:
        result = hooke.simulate(SPRING1D, integrator=name, dt=dt, t_end=t_end,
                                save_every=int(round(frame_interval / dt)), **options)
        assert result.complete and result.t[-1] == pytest.approx(t_end)
        np.testing.assert_allclose(result.t, np.arange(result.n_frames) * frame_interval, atol=1e-12)
        errors.append(np.max(np.abs(result.x - result.analytic())))
    errors = np.array(errors)
    assert errors.min() > 1e-11, f"errors {errors} reach round-off: the slope would be meaningless"
    slope = log_slope(dts, errors)
    MEASURED_SLOPES[name] = (order, slope)
    assert abs(slope - order) <= 0.3, f"{name}: slope {slope:.3f} vs order {order}, errors {errors}"


def drifting_particle(t: np.ndarray, m=2.0, c=2.0, g=9.81, steady=1.0, amplitude=0.4, omega=5.0):
    """(model, x(t)) of a particle in 2D from rest at the origin with air drag c towards a
    gusting wind w(t) = (steady + a ω cos ωt, 0) (the air moving as Sinusoid(a, x, ω)), under
    gravity −g along y: m v' = −c (v − w) + m g, solved in closed form with k = c/m."""
    from hooke.motion import Sinusoid

    builder = hooke.ModelBuilder(dim=2, gravity=[0.0, -g])
    builder.add_particle([0.0, 0.0], mass=m)
    builder.set_air(c, wind=[steady, 0.0], motion=Sinusoid(amplitude, (1.0, 0.0), omega))
    k, b = c / m, amplitude * omega
    decay = (1.0 - np.exp(-k * t)) / k
    # x: the steady wind's and the gust's particular solutions, and the decay of v(0) − v_p(0)
    gust = k * b / (k * k + omega * omega)
    x = steady * (t - decay) + gust * (k * np.sin(omega * t) / omega - np.cos(omega * t) + 1.0) \
        - gust * k * decay
    y = -(g / k) * (t - decay)
    return builder.finalize(), np.stack([x, y], axis=-1)


@pytest.mark.parametrize("name", INTEGRATORS)
def test_order_of_convergence_with_air_drag_in_a_gusting_wind(name):
    """Air drag (:mod:`hooke.energies.drag`) with a time-dependent wind keeps every integrator's
    order: a wind taken at the wrong stage time would cost the higher-order methods theirs."""
    order = integrator_class(name).order
    dts = convergence_steps(order)
    t_end = 2.56
    errors = []
    for dt in dts:
        model, _ = drifting_particle(np.zeros(1))
        result = hooke.simulate(hooke.Scene(model, integrator=name, dt=dt, t_end=t_end),
                                save_every=int(round(dts[0] / dt)), **fixed_step_options(name, 1e-10))
        errors.append(np.max(np.abs(result.x[:, 0] - drifting_particle(result.t)[1])))
    errors = np.array(errors)
    # positions of up to 30 m carry ~1e-14 m of round-off: 1e-13 keeps the slope meaningful
    assert errors.min() > 1e-13, f"errors {errors} reach round-off: the slope would be meaningless"
    slope = log_slope(dts, errors)
    assert abs(slope - order) <= 0.3, f"{name}: slope {slope:.3f} vs order {order}, errors {errors}"


ADAPTIVE = [n for n in INTEGRATORS if getattr(integrator_class(n), "adaptive", False)
            and {"rtol", "atol"} <= set(getattr(integrator_class(n), "defaults", {}))]


@pytest.mark.parametrize("name", ADAPTIVE)
def test_adaptive_error_follows_tolerance(name):
    """With output every 0.5 s (ω·0.5 ≈ 1.6, so the output grid never limits the steps) over
    10 s ≈ 5 periods, the global error is proportional to rtol = atol and a bounded multiple of it."""
    tols = np.array([1e-4, 1e-6, 1e-8])
    errors, steps = [], []
    for tol in tols:
        result = hooke.simulate(SPRING1D, integrator=name, dt=0.5, t_end=10.0, rtol=tol, atol=tol)
        np.testing.assert_allclose(result.t, 0.5 * np.arange(21), rtol=0, atol=1e-12)  # lands on outputs
        errors.append(np.max(np.abs(result.x - result.analytic())))
        steps.append(result.stats["steps"])
    errors = np.array(errors)
    slope = log_slope(tols, errors)
    MEASURED_SLOPES[f"{name} (adaptive, vs tol)"] = (1, slope)
    assert 0.8 <= slope <= 1.3
    assert np.all(errors <= 50 * tols)  # measured ≈ 14·tol (error accumulates over ~5 periods)
    assert steps[0] < steps[1] < steps[2]  # tighter tolerance ⇒ more (smaller) steps


@pytest.mark.parametrize("name", ADAPTIVE)
def test_adaptive_counts_rejected_steps(name, monkeypatch):
    """A first trial step of 2 s (≈ one period) at tol 1e-8 must be rejected. Every attempt
    (accepted or rejected) runs the RK stages once, so attempts = steps + rejected exactly, and
    the ``evaluations`` count equals the calls of System.acceleration."""
    calls = {"acceleration": 0, "attempts": 0}
    original_acceleration = System.acceleration

    def counting_acceleration(self, *args, **kwargs):
        calls["acceleration"] += 1
        return original_acceleration(self, *args, **kwargs)

    monkeypatch.setattr(System, "acceleration", counting_acceleration)
    # the Python loop, whose calls are counted here (rk45's compiled steps count the same:
    # tests/test_adaptive_compiled.py)
    monkeypatch.setattr("hooke.integrators.adaptive_compiled.build", lambda *args: None)
    module = sys.modules[integrator_class(name).__module__]
    stages = getattr(module, "runge_kutta_stages", None)
    if stages is not None:
        def counting_stages(*args, **kwargs):
            calls["attempts"] += 1
            return stages(*args, **kwargs)
        monkeypatch.setattr(module, "runge_kutta_stages", counting_stages)

    result = hooke.simulate(SPRING1D, integrator=name, dt=2.0, t_end=10.0, rtol=1e-8, atol=1e-8,
                            first_step=2.0)
    stats = result.stats
    assert stats["rejected"] >= 1
    assert np.max(np.abs(result.x - result.analytic())) <= 50 * 1e-8
    if "evaluations" in stats:
        assert stats["evaluations"] == calls["acceleration"]
    if stages is not None:
        assert calls["attempts"] == stats["steps"] + stats["rejected"]


# -- energy per step --------------------------------------------------------------------------------

def _require(name):
    if name not in INTEGRATORS:
        pytest.skip(f"{name} is not registered")


@pytest.mark.parametrize("dt", [0.005, 0.05])
def test_explicit_euler_multiplies_energy_by_one_plus_omega2_h2(dt):
    _require("explicit_euler")
    ratios = spring1d_energy_ratios("explicit_euler", dt, 1000)
    np.testing.assert_allclose(ratios, 1.0 + OMEGA**2 * dt**2, rtol=1e-10)


@pytest.mark.parametrize("name,options", [("implicit_euler_linear", {}),
                                          ("implicit_euler", {"tol": 1e-10})])
@pytest.mark.parametrize("dt", [0.005, 0.05])
def test_implicit_euler_divides_energy_by_one_plus_omega2_h2(name, options, dt):
    """Backward Euler on the (linear) 1D spring: the linearised step is exact, and Newton solved
    to a tight tol gives the same step."""
    _require(name)
    ratios = spring1d_energy_ratios(name, dt, 1000, **options)
    np.testing.assert_allclose(ratios, 1.0 / (1.0 + OMEGA**2 * dt**2), rtol=1e-10)


def stability_polynomial(tableau, z: complex) -> complex:
    """R(z) = 1 + z bᵀ(I − zA)⁻¹1 of a Runge–Kutta tableau."""
    stages = tableau.stages
    return complex(1.0 + z * tableau.b @ np.linalg.solve(np.eye(stages) - z * tableau.a, np.ones(stages)))


RK_TABLEAU = [n for n in INTEGRATORS if getattr(integrator_class(n), "tableau", None) is not None]


@pytest.mark.parametrize("name", RK_TABLEAU)
def test_runge_kutta_energy_factor_is_stability_polynomial(name):
    """In the scaled coordinates (ωx, v) the oscillator's generator is ω·J with J skew and J² = −I,
    so one RK step maps E to |R(iωh)|²·E exactly (explicit Euler: 1 + ω²h², midpoint rule:
    1 + (ωh)⁴/4, RK4: 1 − (ωh)⁶/72 + (ωh)⁸/576)."""
    tableau = integrator_class(name).tableau
    dt = 0.1
    factor = abs(stability_polynomial(tableau, 1j * OMEGA * dt)) ** 2
    ratios = spring1d_energy_ratios(name, dt, 200, **fixed_step_options(name))
    np.testing.assert_allclose(ratios, factor, rtol=1e-12)
    w = OMEGA * dt
    known = {"explicit_euler": 1 + w**2, "rk2": 1 + w**4 / 4, "rk4": 1 - w**6 / 72 + w**8 / 576}
    if name in known:
        assert factor == pytest.approx(known[name], rel=1e-14)


def test_symplectic_euler_energy_bounded_over_1e5_steps():
    """Symplectic Euler (v first) on the oscillator exactly conserves Q = E − ½hk·x·v. Since
    ½hk|xv| ≤ (ωh/2)·E, the energy stays within |E − E0|/E0 ≤ (ωh/2)/(1 − ωh/2) (E0 = Q with
    v0 = 0), forever: no secular growth."""
    _require("symplectic_euler")
    dt, steps = 0.005, 100_000
    result = hooke.simulate(SPRING1D, integrator="symplectic_euler", dt=dt, t_end=steps * dt,
                            save_every=7)  # 7 steps ≈ 0.11 rad of phase: samples every phase
    assert result.stats["steps"] == steps and result.n_frames == steps // 7 + 2
    x, v = result.x[:, 1, 0], result.v[:, 1, 0]
    energy = result.energy["total"]
    e0 = energy[0]
    modified = energy - 0.5 * dt * K * x * v
    np.testing.assert_allclose(modified, e0, rtol=1e-10)
    wh = OMEGA * dt
    deviation = np.abs(energy - e0) / e0
    bound = (wh / 2) / (1 - wh / 2)
    assert deviation.max() <= bound
    assert deviation.max() >= 0.9 * (wh / 2)  # the O(ωh) oscillation is really there
    tenth = energy.size // 10
    first, last = energy[:tenth].mean(), energy[-tenth:].mean()
    assert abs(last - first) / e0 <= 0.01 * wh  # mean drift is < 1% of the oscillation amplitude


# -- the steps written out ------------------------------------------------------------------------

def test_rk2_is_the_midpoint_rule_not_heun():
    """rk2 evaluates the force at x + ½h k1 (seed 000's "Runge-Kutta 2"). On a 2D Hookean spring
    with rest length > 0 (a nonlinear force) under gravity the midpoint rule and Heun's method
    differ at O(h³) per step: hooke must match the first to round-off and not the second."""
    _require("rk2")
    k, m, l0, g, h, steps = 40.0, 0.5, 0.7, np.array([0.0, -9.81]), 0.01, 30
    b = hooke.ModelBuilder(dim=2, gravity=g)
    b.add_particle((0.0, 0.0), pinned=True)
    b.add_particle((1.0, 0.3), mass=m, velocity=(0.2, 0.5))
    b.add_spring(0, 1, stiffness=k, rest_length=l0)
    result = hooke.simulate(hooke.Scene(b.finalize(), integrator="rk2"), dt=h, t_end=steps * h)

    def a(x):  # the free particle's acceleration, the other end fixed at the origin
        r = np.linalg.norm(x)
        return -(k / m) * (r - l0) * x / r + g

    def midpoint(x, v):
        xm, vm = x + 0.5 * h * v, v + 0.5 * h * a(x)
        return x + h * vm, v + h * a(xm)

    def heun(x, v):
        xe, ve = x + h * v, v + h * a(x)
        return x + 0.5 * h * (v + ve), v + 0.5 * h * (a(x) + a(xe))

    for method, agrees in ((midpoint, True), (heun, False)):
        x, v = np.array([1.0, 0.3]), np.array([0.2, 0.5])
        expected = [x]
        for _ in range(steps):
            x, v = method(x, v)
            expected.append(x)
        difference = np.max(np.abs(result.x[:, 1] - np.array(expected)))
        assert (difference < 1e-13) if agrees else (difference > 1e-6), (method.__name__, difference)


def test_implicit_euler_linear_is_seed_000s_recurrence():
    """On spring1d, implicit_euler_linear is seed 000's "Implicit Euler" step by step:
    (1 + h²k/m) Δv = (h/m)(f − h k v), v += Δv, x += h v, with f = −k x."""
    _require("implicit_euler_linear")
    scene = hooke.scene("spring1d", v0=0.7)
    h, steps = scene.dt, 400
    result = hooke.simulate(scene, integrator="implicit_euler_linear", t_end=steps * h)
    x, v = result.x[:, 1, 0], result.v[:, 1, 0]
    assert (x[0], v[0]) == (2.0, 0.7)
    dv = (h / M) * (-K * x[:-1] - h * K * v[:-1]) / (1.0 + h * h * K / M)  # each step from hooke's state
    np.testing.assert_allclose(v[1:], v[:-1] + dv, rtol=0, atol=1e-14)
    np.testing.assert_allclose(x[1:], x[:-1] + h * (v[:-1] + dv), rtol=0, atol=1e-14)
    assert np.ptp(x) > 3.9  # 400 steps of 0.005 s: past half a period (π/√10 ≈ 0.99 s)


def test_rk45_takes_solve_ivps_steps_and_interpolates_like_it(monkeypatch):
    """Seed 003 ran scipy's solve_ivp(method="RK45", t_eval=...): hooke's rk45 has the same
    starting step, controller and continuous extension, so on the double pendulum (correction
    force, rtol = atol = 1e-4) it takes the same steps — the step times agree to 1.1e-12 s over
    5 s (measured; solve_ivp sums the stages through the BLAS, hooke stage by stage, so they
    round differently) — and its frames at the 0.01 s output times are solve_ivp's."""
    from scipy.integrate import solve_ivp

    from hooke.integrators.adaptive import DormandPrince45

    scene = hooke.scene("pendulum")
    model = scene.model
    system = System(model)
    integrator_class("rk45")(system, 0.01, **scene.options)  # sets the joints' correction force

    def rhs(t, y):
        x, v = model.x0.copy(), np.zeros_like(model.x0)
        x[1:], v[1:] = y[:6].reshape(2, 3), y[6:].reshape(2, 3)
        return np.concatenate([v[1:].ravel(), system.acceleration(x, v, t)[1:].ravel()])

    boundaries = []
    finish = DormandPrince45._finish
    monkeypatch.setattr(DormandPrince45, "_finish",
                        lambda self, step: (boundaries.append(step.t + step.h), finish(self, step)))
    # The Python loop finishes each step on its own; the compiled steps, which finish only the
    # last of each call, are its steps bit for bit (tests/test_adaptive_compiled.py).
    monkeypatch.setattr("hooke.integrators.adaptive_compiled.build", lambda *args: None)
    result = hooke.simulate(scene, t_end=5.0)
    y0 = np.concatenate([model.x0[1:].ravel(), model.v0[1:].ravel()])
    reference = solve_ivp(rhs, (0.0, 5.0), y0, method="RK45", rtol=1e-4, atol=1e-4,
                          t_eval=result.t, dense_output=True)
    steps = reference.sol.ts[1:]  # both cut their last step to end at 5 s
    assert len(boundaries) == steps.size == result.stats["steps"] and boundaries[-1] == 5.0
    np.testing.assert_allclose(boundaries, steps, rtol=0, atol=1e-11)
    assert result.stats["evaluations"] == reference.nfev
    positions = reference.y[:6].T.reshape(-1, 2, 3)
    np.testing.assert_allclose(result.x[:, 1:], positions, rtol=0, atol=1e-11)


def test_rk45_steps_do_not_depend_on_the_output_interval():
    scene = hooke.scene("pendulum")
    fine = hooke.simulate(scene, dt=0.01, t_end=3.0)
    coarse = hooke.simulate(scene, dt=0.1, t_end=3.0)
    assert fine.stats == coarse.stats and fine.stats["steps"] < 100  # steps of ~0.04 s, not 0.01
    # the same interpolant at the same times (to the round-off of k·0.01 against k/10·0.1)
    np.testing.assert_allclose(fine.x[::10], coarse.x, rtol=0, atol=1e-13)
    fixed = hooke.simulate(scene, dt=0.01, t_end=3.0, adaptive=False)
    assert fixed.stats["steps"] == 300
