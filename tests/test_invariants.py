"""Invariants every integrator keeps: no force ⇒ no motion; pinned particles never move; linear
momentum (and uniform centre-of-mass motion) without gravity and pins, relaxing to the wind's under
air drag proportional to mass; energy of an undamped
network with RK4 at small dt; a damped hanging mass settles at the static extension L + mg/k."""

from __future__ import annotations

import numpy as np
import pytest

import hooke
from hooke.energies import hessian, spring

from conftest import INTEGRATORS, integrator_class, random_network, tight_options


def momentum(model, v):
    """(frames, d) total linear momentum Σ m v."""
    return np.einsum("p,fpa->fa", model.mass, v)


def test_no_force_no_motion(integrator, rng):
    """Particles at rest, springs at rest length (damped), no gravity: nothing moves."""
    model = random_network(rng, 3, n=8, n_springs=16, rest_scale=(1.0, 1.0), damping=1.0, pinned=(2,))
    assert np.max(np.abs(spring.gradient(model, model.x0))) < 1e-12  # really force-free
    scene = hooke.Scene(model, integrator=integrator)
    result = hooke.simulate(scene, dt=0.01, t_end=0.2)
    assert result.complete
    np.testing.assert_allclose(result.x, np.broadcast_to(model.x0, result.x.shape), rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.v, 0.0, rtol=0, atol=1e-10)


def test_free_particles_without_springs_move_uniformly(integrator, rng):
    """No springs, no gravity: x(t) = x0 + v0 t to round-off, v constant."""
    b = hooke.ModelBuilder(dim=2)
    for _ in range(4):
        b.add_particle(rng.normal(size=2), mass=rng.uniform(0.5, 2), velocity=rng.normal(size=2))
    model = b.finalize()
    result = hooke.simulate(hooke.Scene(model, integrator=integrator), dt=0.01, t_end=0.3)
    expected = model.x0[None] + result.t[:, None, None] * model.v0[None]
    np.testing.assert_allclose(result.x, expected, rtol=0, atol=1e-13)
    np.testing.assert_allclose(result.v, np.broadcast_to(model.v0, result.v.shape), rtol=0, atol=1e-13)


@pytest.mark.parametrize("scene_name,steps", [("cloth2d", 4), ("chain", 100)])
def test_pinned_particles_never_move(integrator, scene_name, steps):
    scene = hooke.scene(scene_name)
    model = scene.model
    pinned = model.pinned
    assert pinned.sum() >= 1
    result = hooke.simulate(scene, integrator=integrator, dt=scene.dt, t_end=steps * scene.dt,
                            **tight_options(integrator))
    assert result.complete and result.n_frames == steps + 1
    np.testing.assert_array_equal(result.x[:, pinned], np.broadcast_to(model.x0[pinned], result.x[:, pinned].shape))
    np.testing.assert_array_equal(result.v[:, pinned], 0.0)
    # ... while the free particles do fall (the test is not vacuous).
    fall = model.x0[~pinned, 1] - result.x[-1][~pinned, 1]
    assert np.max(fall) > 0.1 * 0.5 * 9.81 * (steps * scene.dt) ** 2


def test_free_fall(integrator):
    """Constant force: every method gives v = g t exactly; x − (x0 + ½gt²) is at most ½|g|·h·t
    (explicit Euler −½ght, symplectic and implicit Euler +½ght), and exactly 0 for order ≥ 2."""
    g, dt, t_end = np.array([0.0, -9.81]), 0.01, 0.5
    b = hooke.ModelBuilder(dim=2, gravity=g)
    b.add_particle((0.3, 2.0), mass=0.7)
    model = b.finalize()
    result = hooke.simulate(hooke.Scene(model, integrator=integrator), dt=dt, t_end=t_end,
                            **tight_options(integrator))
    t = result.t[:, None]
    np.testing.assert_allclose(result.v[:, 0], g * t, rtol=0, atol=1e-12)
    error = np.abs(result.x[:, 0] - (model.x0[0] + 0.5 * g * t**2))
    assert np.all(error <= 0.5 * np.abs(g) * dt * t * (1 + 1e-9) + 1e-12)
    if getattr(integrator_class(integrator), "order", 1) >= 2:
        assert np.max(error) <= 1e-12


@pytest.mark.skipif("implicit_euler" not in INTEGRATORS, reason="implicit_euler is not registered")
def test_chain_falls_with_implicit_euler_default_options():
    """h·g = 0.0098 m/s is below the default tol = 1e-2 m/s: implicit_euler must still take its
    first Newton iteration (min_iterations = 1) instead of freezing the chain."""
    scene = hooke.scene("chain")
    result = hooke.simulate(scene, integrator="implicit_euler", dt=scene.dt, t_end=0.1)
    free = ~scene.model.pinned
    assert np.max(scene.model.x0[free, 1] - result.x[-1][free, 1]) > 0.01


def test_linear_momentum_conserved(integrator, rng):
    """Random 3D damped spring network, random velocities, no gravity, no pins: spring and damping
    forces are internal (equal and opposite), so Σ m v is constant and the centre of mass moves
    uniformly, for explicit and implicit methods alike (the implicit matrices' rows sum to zero)."""
    model = random_network(rng, 3, n=10, n_springs=22, damping=0.2, velocities=1.0,
                           rest_scale=(0.7, 1.3))
    result = hooke.simulate(hooke.Scene(model, integrator=integrator), dt=0.005, t_end=0.5, save_every=5)
    assert result.complete
    p = momentum(model, result.v)
    scale = np.sum(model.mass[:, None] * np.abs(model.v0))
    np.testing.assert_allclose(p, np.broadcast_to(p[0], p.shape), rtol=0, atol=1e-12 * scale)
    total_mass = model.mass.sum()
    com = np.einsum("p,fpa->fa", model.mass, result.x) / total_mass
    expected = com[0] + result.t[:, None] * p[0] / total_mass
    np.testing.assert_allclose(com, expected, rtol=0, atol=1e-12 * (1 + np.max(np.abs(com))))
    # Forces really acted: the velocities changed by a sizeable amount.
    assert np.max(np.abs(result.v[-1] - model.v0)) > 0.1 * np.max(np.abs(model.v0))


def test_momentum_relaxes_to_the_wind_under_drag_proportional_to_mass(integrator, rng):
    """Air drag c_i = k m_i towards a steady wind w on a damped spring network (no gravity, no
    pins): the springs' forces cancel in Σ m v, so the momentum obeys P' = k (M w − P) and
    relaxes as P(t) = M w + (P0 − M w) e^{−kt}, the closed form every integrator follows to its
    own error (h k = 0.005)."""
    from hooke.air import with_air

    network = random_network(rng, 3, n=10, n_springs=22, damping=0.2, velocities=1.0,
                             rest_scale=(0.7, 1.3))
    k, wind = 1.0, np.array([2.0, -1.0, 0.5])
    model = with_air(network, k * network.mass, wind)
    result = hooke.simulate(hooke.Scene(model, integrator=integrator), dt=0.005, t_end=0.5,
                            save_every=5, **tight_options(integrator))
    assert result.complete
    p, still = momentum(model, result.v), model.mass.sum() * wind
    expected = still + (p[0] - still) * np.exp(-k * result.t)[:, None]
    # measured: 7.6e-4 for the first-order methods, ≤ 1.3e-6 for the second-order, 1e-12 beyond
    bound = 1e-3 if integrator_class(integrator).order == 1 else 1e-5
    np.testing.assert_allclose(p, expected, rtol=0, atol=bound * np.max(np.abs(p[0] - still)))
    assert np.max(np.abs(p[-1] - p[0])) > 0.3 * np.max(np.abs(p[0] - still))  # it did relax


def test_rk4_conserves_energy_of_undamped_network(rng):
    """RK4 on a linear oscillator loses energy by 1 − |R(iωh)|² ≈ (ωh)⁶/72 per step. With
    h = 0.02/ω_max (ω_max from the mass-weighted Hessian) that is < 1e-12 per step, so 3000 steps
    keep the relative energy error far below 1e-9 (nonlinearity included)."""
    if "rk4" not in hooke.integrators():
        pytest.skip("rk4 is not registered")
    model = random_network(rng, 3, n=10, n_springs=22, velocities=1.0, rest_scale=(0.7, 1.3))
    inv_sqrt_m = 1.0 / np.sqrt(np.repeat(model.mass, 3))
    stiffness = hessian(spring, model, model.x0).toarray()
    omega_max = np.sqrt(np.linalg.eigvalsh(inv_sqrt_m[:, None] * stiffness * inv_sqrt_m[None]).max())
    dt = 0.02 / omega_max
    result = hooke.simulate(hooke.Scene(model, integrator="rk4"), dt=dt, t_end=3000 * dt, save_every=10)
    total = result.energy["total"]
    assert result.stats["steps"] == 3000
    assert np.max(np.abs(total - total[0])) / total[0] <= 1e-9
    # Energy really moved between kinetic and potential (the system is not trivially static).
    kinetic = result.energy["kinetic"]
    assert np.ptp(kinetic) > 0.05 * total[0]


def test_damped_hanging_mass_rests_at_static_extension(integrator):
    """Mass m on a spring (k, rest length L, damping c) below a pinned particle, gravity g:
    the equilibrium length is L + m g / k, with zero velocity. ζ = c / (2√(km)) = 0.2, ω = 10,
    so the oscillation decays like e^(−2t): after 15 s it is ~1e-14 of its start."""
    m, k, length, c, g = 0.5, 50.0, 1.0, 2.0, 9.81
    b = hooke.ModelBuilder(dim=3, gravity=(0.0, 0.0, -g))
    top = b.add_particle((0.0, 0.0, 0.0), mass=1.0, pinned=True)
    bob = b.add_particle((0.0, 0.0, -length), mass=m)
    b.add_spring(top, bob, stiffness=k, damping=c)
    scene = hooke.Scene(b.finalize(), integrator=integrator)
    # implicit_euler stops where ‖p‖∞/h < tol: a dead zone of offsets up to tol/(ω²h) around
    # the equilibrium (2e-12 m for tol = 1e-12).
    dt, options = 0.005, tight_options(integrator, tol=1e-12)
    result = hooke.simulate(scene, dt=dt, t_end=15.0, save_every=500, **options)
    assert result.complete
    final = result.x[-1, bob]
    dead_zone = options.get("tol", 0.0) / (k / m * dt)
    assert abs(-final[2] - (length + m * g / k)) <= 1e-9 + dead_zone
    np.testing.assert_array_equal(final[:2], 0.0)  # the motion stays on the vertical axis
    assert np.max(np.abs(result.v[-1, bob])) <= 1e-8
    # It did oscillate on the way (it started at the rest length, 0.0981 m above equilibrium).
    assert np.max(-result.x[:, bob, 2]) > length + 0.5 * m * g / k
