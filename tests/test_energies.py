"""Energy terms: values in closed form, gradients and Hessians against central finite differences
on random configurations in 1D, 2D and 3D, the damping Jacobian against finite differences of the
damping force, PSD projection, and the assembled free-DOF matrix against a dense P(M + aH + bD)Pᵀ."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import hooke
from hooke.energies import damping, gravity, hessian, kinetic, spring

from conftest import fd_gradient, fd_jacobian, random_network

DIMS = (1, 2, 3)
# (spring_energy, number of zero-rest-length springs): rest length 0 only exists for hookean.
SPRING_CASES = [("hookean", 0), ("hookean", 4), ("squared_length", 0)]


def perturbed(rng, model, scale=0.2):
    """A random configuration near the model's initial positions."""
    return model.x0 + scale * rng.normal(size=model.x0.shape)


def dense(rows, cols, values, n):
    """Dense matrix from triplets, duplicates summed (independent of hooke's assembly)."""
    return sp.coo_matrix((values, (rows, cols)), shape=(n, n)).toarray()


def closed_form_spring_energy(model, x):
    i, j = model.spring_indices.T
    length = np.linalg.norm(x[j] - x[i], axis=1)
    k, l0 = model.spring_stiffness, model.spring_rest_length
    if model.spring_energy == "squared_length":
        return float(np.sum(0.5 * k * l0**2 * (length**2 / l0**2 - 1.0) ** 2))
    return float(np.sum(0.5 * k * (length - l0) ** 2))


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("energy,zero_rest", SPRING_CASES)
def test_spring_value_matches_closed_form(rng, dim, energy, zero_rest):
    model = random_network(rng, dim, spring_energy=energy, zero_rest=zero_rest)
    for _ in range(3):
        x = perturbed(rng, model)
        assert spring.value(model, x) == pytest.approx(closed_form_spring_energy(model, x), rel=1e-12)


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("energy,zero_rest", SPRING_CASES)
def test_spring_gradient_matches_finite_differences(rng, dim, energy, zero_rest):
    model = random_network(rng, dim, spring_energy=energy, zero_rest=zero_rest)
    for _ in range(3):
        x = perturbed(rng, model)
        analytic = spring.gradient(model, x)
        numeric = fd_gradient(lambda y: spring.value(model, y), x)
        scale = np.max(np.abs(analytic))
        assert scale > 1.0  # a configuration with real forces, not a trivially zero gradient
        np.testing.assert_allclose(analytic, numeric, rtol=0, atol=1e-7 * scale)


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("energy,zero_rest", SPRING_CASES)
def test_spring_hessian_matches_finite_differences(rng, dim, energy, zero_rest):
    model = random_network(rng, dim, spring_energy=energy, zero_rest=zero_rest)
    for _ in range(3):
        x = perturbed(rng, model)
        analytic = hessian(spring, model, x).toarray()
        numeric = fd_jacobian(lambda y: spring.gradient(model, y), x)
        scale = np.max(np.abs(analytic))
        np.testing.assert_allclose(analytic, numeric, rtol=0, atol=1e-7 * scale)
        np.testing.assert_allclose(analytic, analytic.T, rtol=0, atol=1e-14 * scale)


def test_zero_rest_length_spring_is_linear_force(rng):
    """Hookean l0 = 0: E = ½k|d|², so the force is exactly −k d and the Hessian is k·[[I, −I], [−I, I]]."""
    b = hooke.ModelBuilder(dim=3)
    b.add_particle(rng.normal(size=3))
    b.add_particle(rng.normal(size=3))
    b.add_spring(0, 1, stiffness=7.0, rest_length=0.0)
    model = b.finalize()
    x = model.x0
    d = x[1] - x[0]
    np.testing.assert_allclose(spring.gradient(model, x), [-7.0 * d, 7.0 * d], rtol=1e-14)
    block = 7.0 * np.block([[np.eye(3), -np.eye(3)], [-np.eye(3), np.eye(3)]])
    np.testing.assert_allclose(hessian(spring, model, x).toarray(), block, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("dim", DIMS)
def test_gravity_value_gradient_hessian(rng, dim):
    g = rng.normal(size=dim) * 9.81
    model = random_network(rng, dim, gravity=g)
    assert gravity.active(model)
    x = perturbed(rng, model)
    assert gravity.value(model, x) == pytest.approx(-np.sum(model.mass[:, None] * g * x), rel=1e-13)
    np.testing.assert_allclose(gravity.gradient(model, x),
                               fd_gradient(lambda y: gravity.value(model, y), x),
                               rtol=0, atol=1e-7 * np.max(np.abs(model.mass[:, None] * g)))
    np.testing.assert_allclose(gravity.gradient(model, x), -model.mass[:, None] * g, rtol=1e-14)
    h = hessian(gravity, model, x)
    assert h.shape == (model.n_dofs, model.n_dofs) and abs(h).sum() == 0.0


@pytest.mark.parametrize("dim", DIMS)
def test_kinetic_gradient_is_momentum(rng, dim):
    model = random_network(rng, dim)
    v = rng.normal(size=model.x0.shape)
    assert kinetic.value(model, v) == pytest.approx(0.5 * np.sum(model.mass[:, None] * v * v), rel=1e-14)
    np.testing.assert_allclose(kinetic.gradient(model, v),
                               fd_gradient(lambda w: kinetic.value(model, w), v), rtol=0, atol=1e-7)


@pytest.mark.parametrize("dim", DIMS)
def test_damping_jacobian_matches_finite_differences(rng, dim):
    model = random_network(rng, dim, damping=1.0)
    assert model.has_damping
    x = perturbed(rng, model)
    v = rng.normal(size=x.shape)
    rows, cols = damping.jacobian_structure(model)
    d_matrix = dense(rows, cols, damping.jacobian_values(model, x), model.n_dofs)
    # D = −∂f/∂v with n held at x.
    numeric = -fd_jacobian(lambda w: damping.force(model, x, w), v)
    np.testing.assert_allclose(d_matrix, numeric, rtol=0, atol=1e-8 * np.max(np.abs(d_matrix)))
    # The force is linear in v, f = −D v, and derives from the dissipation potential Ψ.
    np.testing.assert_allclose(damping.force(model, x, v).reshape(-1), -d_matrix @ v.reshape(-1),
                               rtol=0, atol=1e-12 * np.max(np.abs(d_matrix)) * np.max(np.abs(v)))
    np.testing.assert_allclose(damping.force(model, x, v),
                               -fd_gradient(lambda w: damping.dissipation(model, x, w), v),
                               rtol=0, atol=1e-7 * np.max(np.abs(d_matrix)))
    assert np.linalg.eigvalsh(d_matrix).min() >= -1e-12 * np.max(np.abs(d_matrix))
    # Rigid translations are not damped.
    shift = np.broadcast_to(rng.normal(size=dim), x.shape)
    np.testing.assert_allclose(damping.force(model, x, shift), 0.0, atol=1e-12)


def _pair_block(a):
    return np.block([[a, -a], [-a, a]])


def _clamp_psd(block):
    w, q = np.linalg.eigh(block)
    return (q * np.maximum(w, 0.0)) @ q.T


@pytest.mark.parametrize("dim", (2, 3))
@pytest.mark.parametrize("energy", ("hookean", "squared_length"))
def test_projected_hessian_is_psd_and_clamps_each_spring_block(rng, dim, energy):
    # Compressed springs (rest length 1.5–3 × current length; ratio < 1/3 for squared_length
    # makes even the parallel stiffness negative) make the plain Hessian indefinite.
    model = random_network(rng, dim, spring_energy=energy, rest_scale=(1.5, 3.0))
    x = model.x0
    plain = hessian(spring, model, x).toarray()
    projected = hessian(spring, model, x, project_psd=True).toarray()
    scale = np.max(np.abs(plain))
    assert np.linalg.eigvalsh(plain).min() < -1e-3 * scale, "the test configuration must be indefinite"
    assert np.linalg.eigvalsh(projected).min() >= -1e-12 * scale
    # Each spring's 2d×2d block is the eigenvalue-clamped (nearest PSD) version of the plain block.
    plain_local = spring.local_hessians(model, x)
    projected_local = spring.local_hessians(model, x, project_psd=True)
    for a, p in zip(plain_local, projected_local):
        np.testing.assert_allclose(_pair_block(p), _clamp_psd(_pair_block(a)), rtol=0, atol=1e-10 * scale)


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("energy,zero_rest", SPRING_CASES)
def test_projection_leaves_stretched_springs_unchanged(rng, dim, energy, zero_rest):
    model = random_network(rng, dim, spring_energy=energy, zero_rest=zero_rest, rest_scale=(0.3, 0.9))
    x = model.x0
    plain = hessian(spring, model, x).toarray()
    projected = hessian(spring, model, x, project_psd=True).toarray()
    np.testing.assert_array_equal(projected, plain)
    assert np.linalg.eigvalsh(plain).min() >= -1e-12 * np.max(np.abs(plain))


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("project_psd", (False, True))
@pytest.mark.parametrize("energy", ("hookean", "squared_length"))
def test_combined_matrix_equals_dense_projection(rng, dim, project_psd, energy):
    """System.combined_matrix(x, a, b, c) = P(a·M + b·∇²U + c·D)Pᵀ over the free DOFs."""
    g = rng.normal(size=dim)
    model = random_network(rng, dim, n=8, n_springs=14, spring_energy=energy, damping=1.0,
                           gravity=g, pinned=(0, 5), rest_scale=(0.6, 1.4))
    x = perturbed(rng, model, 0.1)
    a, b, c = rng.uniform(0.5, 2.0, size=3)
    n = model.n_dofs
    mass = np.diag(np.repeat(model.mass, dim))
    stiff = sum(hessian(term, model, x, project_psd).toarray() for term in (spring, gravity))
    rows, cols = damping.jacobian_structure(model)
    d_matrix = dense(rows, cols, damping.jacobian_values(model, x), n)
    free = np.repeat(~model.pinned, dim)
    projection = np.eye(n)[free]
    expected = projection @ (a * mass + b * stiff + c * d_matrix) @ projection.T
    actual = hooke.System(model).combined_matrix(x, a, b, c, project_psd=project_psd)
    assert actual.shape == (free.sum(), free.sum()) == (n - 2 * dim,) * 2
    np.testing.assert_allclose(actual.toarray(), expected, rtol=1e-13, atol=1e-12 * np.max(np.abs(expected)))


def test_system_force_is_minus_gradient_plus_damping(rng):
    model = random_network(rng, 3, damping=1.0, gravity=(0.0, -9.81, 0.0))
    system = hooke.System(model)
    x = perturbed(rng, model)
    v = rng.normal(size=x.shape)
    expected = (-spring.gradient(model, x) - gravity.gradient(model, x) + damping.force(model, x, v))
    np.testing.assert_allclose(system.force(x, v), expected, rtol=1e-13, atol=1e-12)
    total = fd_gradient(system.potential_energy, x)
    np.testing.assert_allclose(system.potential_gradient(x), total, rtol=0,
                               atol=1e-7 * np.max(np.abs(total)))


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_kinetic_hessian_is_the_mass_matrix(rng, dim):
    """∂²T/∂v_a∂v_b by central differences of T's gradient (itself checked against T's in
    test_kinetic_gradient_is_momentum) equals the sparse mass matrix M."""
    model = random_network(rng, dim, n=4, n_springs=3, mass_range=(0.3, 3.0))
    v = rng.normal(size=(model.n_particles, dim))
    hessian_fd = fd_jacobian(lambda w: kinetic.gradient(model, w), v)
    np.testing.assert_allclose(kinetic.mass_matrix(model).toarray(), hessian_fd, rtol=0, atol=1e-8)
    np.testing.assert_array_equal(kinetic.mass_diagonal(model), np.repeat(model.mass, dim))


# |d|² subnormal (1e-320: n = d/|d| to 1e-5, the precision left) or underflowing to 0 (no
# direction, as at zero length: no damping block).
@pytest.mark.parametrize("length, along", [(1e-160, 101.0), (1e-200, 100.0)])
def test_hessian_and_damping_blocks_of_a_vanishing_spring_stay_finite(length, along, monkeypatch):
    """A damped zero-rest-length spring shorter than 1e-154 m: its blocks — the spring Hessian,
    the fused CSR kernel of a spring-only model, the compiled Newmark band — are k on the
    diagonal plus the damping c n nᵀ along n, never 1/|d|² overflowing into inf or NaN:
    k + c·γ' = 100 + 2·0.5 along the spring's axis, k across."""
    from hooke.integrators import newmark

    b = hooke.ModelBuilder(dim=2, gravity=(0.0, 0.0))
    b.add_particle((0.0, 0.0), mass=1.0, pinned=True)
    b.add_particle((1.0, 0.0), mass=1.0)
    b.add_spring(0, 1, stiffness=100.0, rest_length=0.0, damping=2.0)
    model = b.finalize()
    x = np.array([[0.0, 0.0], [length, 0.0]])
    np.testing.assert_array_equal(spring.local_hessians(model, x)[0], 100.0 * np.eye(2))
    matrix = hooke.System(model).combined_matrix(x, 0.0, 1.0, 0.5).toarray()
    np.testing.assert_allclose(matrix, [[along, 0.0], [0.0, 100.0]], rtol=2e-5)
    state = hooke.State(0.0, x, np.array([[0.0, 0.0], [0.0, 1.0]]))
    steps = []
    for compiled in (True, False):
        monkeypatch.setattr(newmark, "COMPILED", compiled)
        result = hooke.simulate(hooke.Scene(model, state=state, integrator="newmark", dt=1e-3,
                                            t_end=2e-3))
        assert np.isfinite(result.x).all() and np.isfinite(result.v).all()
        steps.append(result)
    np.testing.assert_allclose(steps[0].x, steps[1].x, rtol=1e-12, atol=1e-300)
