"""The contact terms on their own: barrier and lagged friction against finite differences, their
closed forms, positive semi-definiteness, and the continuous collision detection of the barrier."""

from __future__ import annotations

import numpy as np
import pytest

import hooke
from hooke.energies import barrier, friction, hessian
from hooke.motion import ConstantVelocity

from conftest import fd_gradient, fd_jacobian

DHAT, KAPPA = 0.05, 1e4


def contact_model(rng, dim: int, n: int = 6, friction_coefficient: float = 0.4, motion=None):
    """n free particles scattered within d̂ of two planes (the second tilted), areas random."""
    normals = [np.eye(dim)[-1 if dim > 1 else 0]]
    if dim > 1:
        tilted = rng.normal(size=dim)
        tilted[-1] = abs(tilted[-1]) + 1.0
        normals.append(tilted / np.linalg.norm(tilted))
    b = hooke.ModelBuilder(dim=dim, gravity=np.zeros(dim))
    for _ in range(n):
        while True:  # within d̂ of the first plane, on the allowed side of every plane
            x = rng.uniform(-0.5, 0.5, size=dim)
            x[-1 if dim > 1 else 0] = rng.uniform(0.1, 0.9) * DHAT
            if all(x @ nk > 0.05 * DHAT for nk in normals):
                break
        b.add_particle(x, mass=1.0)
    for k, nk in enumerate(normals):
        b.add_plane(nk, np.zeros(dim), friction=friction_coefficient,
                    motion=motion if k == 0 else None)
    b.set_contact(dhat=DHAT, kappa=KAPPA, area=rng.uniform(0.5, 2.0, size=n))
    return b.finalize()


def closed_form_barrier(model, x, t=0.0):
    offsets = barrier.plane_offsets(model, t)
    d = x @ model.plane_normals.T - offsets[None, :]
    s = d / model.contact_dhat
    area = model.contact_area[:, None]
    terms = np.where(d < model.contact_dhat,
                     area * model.contact_dhat * model.contact_kappa / 2 * (s - 1) * np.log(np.minimum(s, 1)), 0.0)
    return float(terms.sum())


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_barrier_value_matches_the_books_formula(rng, dim):
    model = contact_model(rng, dim)
    x = model.x0
    assert barrier.value(model, x) == pytest.approx(closed_form_barrier(model, x), rel=1e-12)
    assert barrier.value(model, x) > 0


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_barrier_gradient_and_hessian_match_finite_differences(rng, dim):
    model = contact_model(rng, dim)
    x = model.x0
    grad = barrier.gradient(model, x)
    np.testing.assert_allclose(grad, fd_gradient(lambda y: barrier.value(model, y), x, eps=1e-7),
                               rtol=1e-5, atol=1e-6 * np.abs(grad).max())
    dense = hessian(barrier, model, x).toarray()
    numeric = fd_jacobian(lambda y: barrier.gradient(model, y), x, eps=1e-8)
    np.testing.assert_allclose(dense, numeric, rtol=1e-4, atol=1e-5 * np.abs(dense).max())
    assert np.linalg.eigvalsh(dense).min() >= -1e-9 * np.abs(dense).max()


def test_barrier_is_zero_beyond_dhat_and_infinite_at_contact():
    b = hooke.ModelBuilder(dim=2)
    b.add_particle((0.0, 1.0))
    b.add_plane((0.0, 1.0), (0.0, 0.0))
    b.set_contact(dhat=0.1)
    model = b.finalize()
    assert barrier.value(model, np.array([[0.0, 0.1]])) == 0.0
    assert np.all(barrier.gradient(model, np.array([[0.0, 0.2]])) == 0.0)
    assert barrier.value(model, np.array([[0.0, 0.0]])) == np.inf
    assert barrier.value(model, np.array([[0.0, -0.01]])) == np.inf


def test_pinned_and_zero_area_particles_take_no_part_in_contact():
    b = hooke.ModelBuilder(dim=2)
    b.add_particle((0.0, 0.001), pinned=True)
    b.add_particle((1.0, 0.001))
    b.add_particle((2.0, 0.001))
    b.add_plane((0.0, 1.0), (0.0, 0.0))
    b.set_contact(area=[1.0, 0.0, 1.0])
    model = b.finalize()
    assert model.contact_area.tolist() == [0.0, 0.0, 1.0]
    grad = barrier.gradient(model, model.x0)
    assert grad[0].tolist() == [0.0, 0.0] and grad[1].tolist() == [0.0, 0.0] and grad[2, 1] < 0


def test_moving_plane_barrier_follows_the_plane(rng):
    model = contact_model(rng, 2, motion=ConstantVelocity((0.0, 0.01)))
    t = 1.5
    x = model.x0 + np.array([0.0, 0.015])
    moved = barrier.at_time(model, t)
    assert moved.value(model, x) == pytest.approx(closed_form_barrier(model, x, t), rel=1e-12)
    np.testing.assert_allclose(moved.gradient(model, x),
                               fd_gradient(lambda y: moved.value(model, y), x, eps=1e-8),
                               rtol=1e-5, atol=1e-6 * np.abs(moved.gradient(model, x)).max())


@pytest.mark.parametrize("dim", [2, 3])
def test_ccd_stops_short_of_every_plane(rng, dim):
    model = contact_model(rng, dim)
    offsets = barrier.plane_offsets(model)
    for _ in range(50):
        x = model.x0
        p = rng.normal(size=x.shape) * rng.uniform(0.01, 1.0)
        alpha = barrier.max_step(model, x, p)
        assert 0 < alpha <= 1
        d_before = x @ model.plane_normals.T - offsets
        d_after = (x + alpha * p) @ model.plane_normals.T - offsets
        # Each particle keeps at least 10 % of its distance: 0.9 of the first impact at most.
        assert np.all(d_after >= 0.1 * d_before - 1e-15)
        if alpha < 1:  # the step is limited by an impact: some pair reaches exactly 10 %
            assert np.isclose(d_after / d_before, 0.1).any()


def test_ccd_matches_the_books_init_step_size_for_the_ground():
    # The book: α = min(1, 0.9 · min over p_y < 0 of (y_ground − x_y)/p_y).
    b = hooke.ModelBuilder(dim=2)
    for y in (0.5, 0.2, 1.0):
        b.add_particle((0.0, y))
    b.add_plane((0.0, 1.0), (0.0, -1.0))
    model = b.finalize()
    p = np.array([[0.0, -2.0], [5.0, -3.0], [0.0, 4.0]])
    expected = min(1.0, 0.9 * (-1 - 0.5) / -2.0, 0.9 * (-1 - 0.2) / -3.0)
    assert barrier.max_step(model, model.x0, p) == pytest.approx(expected, rel=1e-14)
    assert barrier.max_step(model, model.x0, np.zeros_like(p)) == 1.0


# -- friction -------------------------------------------------------------------------------------
def prepared_friction(rng, dim, motion=None, h=0.01):
    model = contact_model(rng, dim, motion=motion)
    start = hooke.State(0.3, model.x0, np.zeros_like(model.x0))
    return model, friction.prepare(model, start, h), h


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("scale", [0.2, 3.0])  # tangential motion below / above ε_v h
def test_friction_gradient_and_hessian_match_finite_differences(rng, dim, scale):
    model, term, h = prepared_friction(rng, dim)
    assert term.nodes.size >= model.n_particles  # every particle is within d̂ of the first plane
    x = model.x0 + scale * model.contact_epsv * h * rng.normal(size=model.x0.shape)
    grad = term.gradient(model, x)
    eps = 1e-3 * term.eps
    np.testing.assert_allclose(grad, fd_gradient(lambda y: term.value(model, y), x, eps=eps),
                               rtol=1e-5, atol=1e-6 * np.abs(grad).max())
    dense = hessian(term, model, x).toarray()
    numeric = fd_jacobian(lambda y: term.gradient(model, y), x, eps=eps)
    scale = term.weights.max() / term.eps  # the Hessian's size in the viscous range
    np.testing.assert_allclose(dense, numeric, rtol=1e-4, atol=1e-5 * scale)
    assert np.linalg.eigvalsh(dense).min() >= -1e-9 * scale


def one_particle_on_ground(mu=0.5, motion=None):
    b = hooke.ModelBuilder(dim=2)
    b.add_particle((0.0, 0.004))
    b.add_plane((0.0, 1.0), (0.0, 0.0), friction=mu, motion=motion)
    b.set_contact(dhat=0.01, kappa=1e5, area=0.25)
    return b.finalize()


def test_friction_hessian_stays_finite_for_huge_weights_and_tiny_slips():
    """A particle starting 1e-150 m above a frictional plane has μλ = 2.5e152 N; after Newton's
    first iteration it had slipped 7.8e-160 m, where the rank-one part's −μλ/(ε² y) overflowed
    to −inf and, times u² (6e-319), stayed inf, with NaN after the PSD projection: implicit_euler
    failed at step 1 with "the motion blew up". By the unit slip direction the block is the
    closed form (μλ (2ε − y)/ε²)·T − (μλ y/ε²) û ûᵀ, which is μλ·2/ε (1 − y/ε) along û."""
    model = one_particle_on_ground()
    weight, eps, slip = 2.5e152, 1e-5, 7.77e-160
    term = friction.LaggedFriction(np.array([0]), np.array([[0.0, 1.0]]), np.array([weight]),
                                   np.zeros((1, 2)), eps)
    block = hessian(term, model, np.array([[slip, 0.004]])).toarray()
    expected = weight * (2 * eps - slip) / eps**2 - weight * slip / eps**2
    np.testing.assert_allclose(block, [[expected, 0.0], [0.0, 0.0]], rtol=1e-15)


@pytest.mark.parametrize("height", [1e-148, 1e-150, 1e-152])
def test_a_particle_starting_next_to_a_frictional_plane_stays_on_it(height):
    """The scene that found it: 1 kg joined by a spring to a second particle, starting within
    1e-148 m of a frictional ground (μ = 0.5), five implicit_euler steps of 0.01 s. It stays
    on the ground (the barrier holds it between 0 and d̂) and friction holds it in place."""
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    b.add_particle((0.0, height), mass=1.0)
    b.add_particle((1.0, 0.5), mass=1.0)
    b.add_spring(0, 1, stiffness=100.0)
    b.add_plane((0.0, 1.0), (0.0, 0.0), friction=0.5)
    result = hooke.simulate(hooke.Scene(b.finalize()), integrator="implicit_euler", dt=0.01,
                            t_end=0.05)
    assert result.complete and np.all(np.isfinite(result.x))
    assert np.all((result.x[:, 0, 1] > 0) & (result.x[:, 0, 1] < 0.01))
    assert np.max(np.abs(result.x[:, 0, 0])) < 1e-100  # stuck: μλ dwarfs the spring's pull


def test_friction_weights_are_mu_times_the_lagged_normal_forces(rng):
    model, term, _ = prepared_friction(rng, 2)
    lam = barrier.at_time(model, 0.3).normal_forces(model, model.x0)
    np.testing.assert_allclose(term.weights, (0.4 * lam)[lam > 0], rtol=1e-14)


def test_sliding_friction_force_is_mu_lambda_against_the_motion():
    model, h = one_particle_on_ground(), 0.01
    lagged = friction.prepare(model, hooke.State(0.0, model.x0, np.zeros((1, 2))), h)
    normal = barrier.at_time(model, 0.0).normal_forces(model, model.x0)[0, 0]
    assert normal > 0
    for direction in (1.0, -1.0):
        slide = model.x0 + np.array([[direction * 10 * model.contact_epsv * h, 0.0]])
        np.testing.assert_allclose(lagged.gradient(model, slide), [[direction * 0.5 * normal, 0.0]],
                                   rtol=1e-12)
    # Motion along the normal causes no friction.
    assert np.all(lagged.gradient(model, model.x0 + np.array([[0.0, 1e-3]])) == 0.0)


def test_friction_acts_relative_to_a_moving_plane():
    belt = ConstantVelocity((0.3, 0.0))  # a conveyor: tangential motion only
    model, h = one_particle_on_ground(motion=belt), 0.01
    lagged = friction.prepare(model, hooke.State(0.0, model.x0, np.zeros((1, 2))), h)
    riding = model.x0 + np.array([[0.3 * h, 0.0]])
    np.testing.assert_allclose(lagged.gradient(model, riding), 0.0, atol=1e-12)
    # Standing still while the belt moves on: the belt drags the particle forward (force +x).
    assert lagged.gradient(model, model.x0)[0, 0] < 0


def test_frictionless_planes_have_no_friction_term(rng):
    model = contact_model(rng, 2, friction_coefficient=0.0)
    assert not friction.active(model)
    assert hooke.System(model).lagged_terms == []
