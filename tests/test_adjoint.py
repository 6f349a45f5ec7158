"""hooke.gradient (issue 18): the discrete adjoint against central finite differences of
hooke.simulate, for every supported integrator and parameter on smooth scenes (spring1d, a small
cloth2d, a small chain, a 3D squared-length network, and square_drop for contact); the spring and
damping terms' extra derivatives against finite differences; checkpointed and fully stored
sweeps bit for bit; bad input in one line."""

from __future__ import annotations

import dataclasses
import math
import re
import warnings

import numpy as np
import pytest

import hooke
from hooke import losses
from hooke.adjoint import base
from hooke.adjoint.checkpoint import TAPE_MEMORY, Tape, segment_length
from hooke.adjoint.params import ELEMENT_ARRAYS, SHAREABLE, current, with_values
from hooke.adjoint.spring_terms import SpringGeometry, differences, scatter
from hooke.adjoint.forces import damping_position_blocks
from hooke.adjoint.joints import JointGeometry
from hooke.constraints import JointSet
from hooke.energies import damping, spring
from hooke.errors import HookeInputError
from hooke.linalg import block_structure, pair_block_values, triplets_to_csr

from conftest import fd_gradient, fd_jacobian, random_network, seed_crane

ADJOINT_INTEGRATORS = ("symplectic_euler", "implicit_euler_linear", "implicit_euler", "newmark",
                       "generalized_alpha")
# Newton's stopping rule must be far below the finite differences' resolution: the adjoint of
# implicit_euler is that of the exact backward-Euler step (the implicit function theorem).
OPTIONS = {"implicit_euler": {"tol": 1e-10}, "newmark": {"tol": 1e-13},
           "generalized_alpha": {"tol": 1e-13}}
RELATIVE = 1e-6
# The fourth-order central stencil: (8 [L(θ + ε) − L(θ − ε)] − [L(θ + 2ε) − L(θ − 2ε)]) / 12ε.
# Its truncation error is O(ε⁴), so a step large enough to keep round-off (and Newton's
# tolerance) far below 1e-6 of the derivative keeps the truncation there too; the two-point
# stencil cannot reach both at once on these scenes.
STENCIL = ((1.0, 8.0), (-1.0, -8.0), (2.0, -1.0), (-2.0, 1.0))


def squared_network():
    """A 3D network of squared-length springs, compressed and stretched, with one pin, damping
    and initial velocities: every branch the derivatives have besides Hookean."""
    model = random_network(np.random.default_rng(3), 3, n=5, n_springs=8,
                           spring_energy="squared_length", damping=1.0, gravity=(0, -9.81, 0),
                           velocities=0.5, pinned=(0,), rest_scale=(0.8, 1.2))
    return hooke.Scene(model, integrator="symplectic_euler", dt=0.002, t_end=0.1)


def double_pendulum_off_its_joints(distance=0.9, velocity=(0.5, 1.0), t_end=0.2):
    """A 2D double pendulum whose first joint is given 1 m at a ``distance`` of 0.9 m and whose
    first mass moves 0.5 m/s along it, its second mass 2 kg: the α-methods start from the
    state projected onto the joints (tests/test_joints.py), so every gradient passes through
    that projection, masses and lengths included."""
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    b.add_particle((0.0, 0.0), pinned=True)
    b.add_particle((distance, 0.0), mass=1.0, velocity=velocity)
    b.add_particle((distance + 0.5, 0.3), mass=2.0)
    b.add_joint(0, 1, length=1.0)
    b.add_joint(1, 2)
    return hooke.Scene(b.finalize(), integrator="newmark", dt=0.005, t_end=t_end)


# name → (scene, dt, t_end, ε: the parameters' relative change in the finite differences);
# short runs of smooth motion, stable for every integrator here. The stencil is fourth order
# (below), so ε is as large as the stiff chain's nonlinearity allows; square_drop's Newton
# solves stagnate near tol = 1e-10 (|p| ~ 1e-12 m), which needs the larger ε to stay far below
# 1e-6 of the derivative.
SCENES = {
    "spring1d": (lambda: hooke.scene("spring1d"), 0.005, 0.5, 1e-4),
    "cloth2d": (lambda: hooke.scene("cloth2d", nx=4, ny=3, stiffness=500.0, damping=2.0),
                0.002, 0.1, 1e-4),
    "chain": (lambda: hooke.scene("chain", n=4, damping=2.0), 0.002, 0.1, 1e-4),
    "squared3d": (squared_network, 0.002, 0.1, 1e-4),
    # contact: the square touches the ground (d < d̂) from step 32 on, and rests on it at the end
    "square_drop": (lambda: hooke.scene("square_drop"), 0.01, 0.45, 1e-3),
    # joints: alone (the chain, the 3D double pendulum), and with a spring (the crane's load;
    # the seed's crane, its wind a tilted gravity; the crane scene in its real wind, with air
    # drag, is in tests/test_adjoint_air.py with the other scenes with air)
    "jointed_chain": (lambda: hooke.scene("jointed_chain", n=3), 0.002, 0.1, 1e-4),
    "pendulum": (lambda: hooke.scene("pendulum"), 0.005, 0.5, 1e-4),
    "crane": (seed_crane, 0.002, 0.1, 1e-4),
    # a start off the joints, which the first step starts from put on them
    "pendulum_off_joints": (double_pendulum_off_its_joints, 0.005, 0.2, 1e-4),
}
CONTACT_SCENES = ("square_drop",)
JOINT_SCENES = ("jointed_chain", "pendulum", "crane", "pendulum_off_joints")
MASSES_ALONE = ("jointed_chain", "pendulum", "pendulum_off_joints")  # joints, gravity, no springs
JOINT_INTEGRATORS = ("newmark", "generalized_alpha")
SPRING_PARAMETERS = ("stiffness", "damping", "rest_length")
AIR_PARAMETERS = ("drag", "wind")  # none of these scenes has air: tests/test_adjoint_air.py


def applies(scene: str, integrator: str, name: str) -> bool:
    """Whether the scene has parameter ``name`` and the integrator's adjoint handles it."""
    if scene in CONTACT_SCENES and integrator != "implicit_euler":
        return False
    if scene in JOINT_SCENES and integrator not in JOINT_INTEGRATORS:
        return False
    if name in SPRING_PARAMETERS and scene in MASSES_ALONE:
        return False
    if name in AIR_PARAMETERS:
        return False
    return ((name != "kappa" or scene in CONTACT_SCENES)
            and (name != "joint_length" or scene in JOINT_SCENES))


def target_loss(scene, integrator, dt, t_end, **options):
    """Tracking of the scene's own motion offset by a fixed random field: a loss whose gradient
    has no special zeros."""
    result = hooke.simulate(scene, integrator=integrator, dt=dt, t_end=t_end, save_every=5,
                            **options)
    offset = np.random.default_rng(0).normal(scale=0.01, size=result.x.shape)
    return losses.tracking(result.x + offset)


def direction(scene, name, rng):
    """A random direction in parameter ``name``'s space, scaled to the parameter's size."""
    base_value = current(scene, name)
    scale = np.where(base_value != 0, np.abs(base_value), 1.0)
    delta = rng.uniform(-1, 1, size=base_value.shape) * scale
    if name == "v0":  # a pinned particle moves as its pin does (a Scene refuses other velocities)
        delta[scene.model.pinned] = 0.0
    return delta


def fd_directional(scene, loss, name, delta, integrator, dt, t_end, mode, eps, **options):
    """dL/dε of L(θ + ε δ) at 0 by the central stencil and hooke.simulate; for a shared factor
    θ is 1 and δ is 1."""
    total = 0.0
    for offset, weight in STENCIL:
        if mode == "shared":
            value = 1.0 + offset * eps
        else:
            value = current(scene, name) + offset * eps * delta
        result = hooke.simulate(with_values(scene, {name: value}), integrator=integrator, dt=dt,
                                t_end=t_end, save_every=5, **options)
        total += weight * loss(result)
    return total / (12 * eps)


# Scaling every mass of a system of joints under gravity alone changes no motion (see
# test_mass_scale_invariance): that derivative is zero, which finite differences cannot compare.
CASES = [(scene, integrator, name, mode) for scene in SCENES for integrator in ADJOINT_INTEGRATORS
         for name in ELEMENT_ARRAYS for mode in (("each", "shared") if name in SHAREABLE
                                                 else ("each",))
         if applies(scene, integrator, name)
         and not (scene in MASSES_ALONE and (name, mode) == ("mass", "shared"))]


@pytest.mark.parametrize("scene_name, integrator, name, mode", CASES)
def test_gradient_matches_finite_differences(scene_name, integrator, name, mode):
    make, dt, t_end, eps = SCENES[scene_name]
    scene = make()
    if mode == "shared" and not np.any(current(scene, name)):
        pytest.skip("a factor of an all-zero array changes nothing")
    if name == "damping" and not np.any(current(scene, name)):
        # hooke drops the damping term when every c is 0 (c < 0 is no model): the central
        # differences would straddle that switch.
        pytest.skip("no damping to perturb both ways")
    check_against_finite_differences(scene, integrator, name, mode, dt, t_end, eps)


def check_against_finite_differences(scene, integrator, name, mode, dt, t_end, eps):
    """The adjoint's derivative of :func:`target_loss` along a random direction of parameter
    ``name`` against the central stencil, to RELATIVE; the loss is simulate's run's."""
    options = OPTIONS.get(integrator, {})
    loss = target_loss(scene, integrator, dt, t_end, **options)
    value, grads = hooke.gradient(scene, loss, {name: mode}, integrator=integrator, dt=dt,
                                  t_end=t_end, save_every=5, **options)
    delta = direction(scene, name, np.random.default_rng(1))
    adjoint = grads[name] if mode == "shared" else float(np.sum(grads[name] * delta))
    fd = fd_directional(scene, loss, name, delta, integrator, dt, t_end, mode, eps, **options)
    assert fd != 0.0
    assert abs(adjoint - fd) <= RELATIVE * abs(fd), (adjoint, fd)
    expected = loss(hooke.simulate(scene, integrator=integrator, dt=dt, t_end=t_end,
                                   save_every=5, **options))
    assert value == expected  # the forward run is simulate's, bit for bit


@pytest.mark.parametrize("loss_name", ["final_position", "energy_total", "energy_kinetic",
                                       "energy_potential_target", "tracking_at_times"])
@pytest.mark.parametrize("integrator", ADJOINT_INTEGRATORS)
def test_losses_match_finite_differences(loss_name, integrator):
    """Every loss, including those that read the model directly (energies), for every
    parameter at once on the small cloth."""
    make, dt, t_end, eps = SCENES["cloth2d"]
    scene = make()
    options = OPTIONS.get(integrator, {})
    reference = hooke.simulate(scene, integrator=integrator, dt=dt, t_end=t_end, save_every=5,
                               **options)
    loss = {"final_position": losses.final_position(reference.x[-1] * 1.05,
                                                    weights=np.arange(12) % 3),
            "energy_total": losses.energy_at(0.05),
            "energy_kinetic": losses.energy_at(t_end, "kinetic"),
            "energy_potential_target": losses.energy_at(0.03, "potential", target=0.5),
            "tracking_at_times": losses.tracking(reference.x[[2, 4]] + 0.01,
                                                 times=reference.t[[2, 4]])}[loss_name]
    names = [name for name in ELEMENT_ARRAYS if applies("cloth2d", integrator, name)]
    _, grads = hooke.gradient(scene, loss, names, integrator=integrator, dt=dt, t_end=t_end,
                              save_every=5, **options)
    rng = np.random.default_rng(2)
    for name in names:
        delta = direction(scene, name, rng)
        fd = fd_directional(scene, loss, name, delta, integrator, dt, t_end, "each", eps,
                            **options)
        adjoint = float(np.sum(grads[name] * delta))
        assert abs(adjoint - fd) <= RELATIVE * abs(fd) + 1e-12, (name, adjoint, fd)


@pytest.mark.parametrize("kind", ["potential", "total"])
def test_contact_energy_loss_matches_finite_differences(kind):
    """energy_at on square_drop: the barrier's energy, read directly (∂/∂κ = B/κ) and through
    the implicit function theorem of every Newton solve."""
    make, dt, t_end, eps = SCENES["square_drop"]
    scene = make()
    options = OPTIONS["implicit_euler"]
    loss = losses.energy_at(0.4, kind)
    names = ["kappa", "stiffness", "mass", "x0"]
    _, grads = hooke.gradient(scene, loss, names, dt=dt, t_end=t_end, save_every=5, **options)
    rng = np.random.default_rng(4)
    for name in names:
        delta = direction(scene, name, rng)
        fd = fd_directional(scene, loss, name, delta, "implicit_euler", dt, t_end, "each", eps,
                            **options)
        adjoint = float(np.sum(grads[name] * delta))
        assert abs(adjoint - fd) <= RELATIVE * abs(fd), (name, adjoint, fd)


@pytest.mark.parametrize("integrator", JOINT_INTEGRATORS)
def test_mass_scale_invariance(integrator):
    """Joints and gravity alone: scaling every mass by one factor scales every force with it
    (the tensions too), so the motion and any loss stay: dL/dα = Σ m_i ∂L/∂m_i = 0, while
    the per-particle derivatives are not zero."""
    make, dt, t_end, _ = SCENES["pendulum"]
    scene = make()
    options = OPTIONS[integrator]
    loss = target_loss(scene, integrator, dt, t_end, **options)
    _, each = hooke.gradient(scene, loss, ["mass"], integrator=integrator, dt=dt, t_end=t_end,
                             save_every=5, **options)
    _, shared = hooke.gradient(scene, loss, {"mass": "shared"}, integrator=integrator, dt=dt,
                               t_end=t_end, save_every=5, **options)
    scale = float(np.max(np.abs(scene.model.mass * each["mass"])))
    assert scale > 1e-6
    assert abs(shared["mass"]) <= 1e-9 * scale


def test_spring1d_full_gradient_in_closed_form():
    """spring1d, symplectic Euler, L = x_N: ∂x_N/∂x0 is the (1, 1) entry of the N-th power of
    the step matrix [[1 − h²k/m, h], [−hk/m, 1]] (x⁺ = x + h v⁺, v⁺ = v − h k x / m)."""
    scene = hooke.scene("spring1d")
    h, k, m, n = 0.005, 5.0, 0.5, 100

    class FinalX(losses.Loss):
        def __call__(self, result):
            return float(result.x[-1, 1, 0])

        def gradient(self, result):
            gx = np.zeros(np.shape(result.x))
            gx[-1, 1, 0] = 1.0
            return gx, np.zeros(np.shape(result.v))

    _, grads = hooke.gradient(scene, FinalX(), ["x0", "v0"], dt=h, t_end=n * h)
    step = np.array([[1 - h * h * k / m, h], [-h * k / m, 1.0]])
    power = np.linalg.matrix_power(step, n)
    assert grads["x0"][1, 0] == pytest.approx(power[0, 0], rel=1e-12)
    assert grads["v0"][1, 0] == pytest.approx(power[0, 1], rel=1e-12)
    assert grads["v0"][0, 0] == 0.0  # the anchor is pinned: its velocity never enters


# -- the spring terms' derivatives ------------------------------------------------------------

NETWORKS = [("hookean", 0), ("hookean", 3), ("squared_length", 0)]


def network(kind, zero_rest, dim=3):
    return random_network(np.random.default_rng(7), dim, spring_energy=kind, zero_rest=zero_rest,
                          damping=1.0)


@pytest.mark.parametrize("kind, zero_rest", NETWORKS)
def test_hessian_derivative_matches_finite_differences(kind, zero_rest):
    model = network(kind, zero_rest)
    rng = np.random.default_rng(8)
    x = model.x0 + 0.1 * rng.normal(size=model.x0.shape)
    u, w = rng.normal(size=x.shape), rng.normal(size=x.shape)
    du, dw = differences(model, u), differences(model, w)

    def contraction(y):
        return float(np.sum(du * SpringGeometry(model, y).hessian_times(dw)))

    exact = scatter(model, SpringGeometry(model, x).hessian_derivative(du, dw))
    np.testing.assert_allclose(exact, fd_gradient(contraction, x), rtol=1e-6, atol=1e-6)


def _with(model, **arrays):
    return dataclasses.replace(model, **arrays)


@pytest.mark.parametrize("kind, zero_rest", NETWORKS)
@pytest.mark.parametrize("attribute", ["spring_stiffness", "spring_rest_length"])
def test_parameter_partials_match_finite_differences(kind, zero_rest, attribute):
    """∂E/∂θ, ∂g/∂θ and ∂(ΔuᵀAΔw)/∂θ for θ = k and l0, every spring at once (each spring's
    terms depend on its own θ only, so the sums' derivatives are the per-spring values)."""
    model = network(kind, zero_rest)
    rng = np.random.default_rng(9)
    x = model.x0 + 0.1 * rng.normal(size=model.x0.shape)
    du, dw = rng.normal(size=(model.n_springs, 3)), rng.normal(size=(model.n_springs, 3))
    column = 0 if attribute == "spring_stiffness" else 1
    geometry = SpringGeometry(model, x)
    exact = (geometry.energy_partials()[column],
             np.einsum("sa,sa->s", du, geometry.gradient_partials()[column]),
             geometry.hessian_partials(du, dw)[column])
    base_value = getattr(model, attribute)
    keep = base_value > 0  # l0 = 0 springs: a one-sided point of the Hookean form, skipped
    for index, function in enumerate((
            lambda m: np.array([spring.value(_single(m, s), x) for s in range(m.n_springs)]),
            lambda m: np.einsum("sa,sa->s", du, _spring_gradients(m, x)),
            lambda m: np.einsum("sa,sa->s", du, SpringGeometry(m, x).hessian_times(dw)))):
        step = 1e-6 * np.abs(base_value)
        plus = function(_with(model, **{attribute: base_value + step}))
        minus = function(_with(model, **{attribute: base_value - step}))
        fd = np.divide(plus - minus, 2 * step, out=np.zeros_like(step), where=step > 0)
        np.testing.assert_allclose(exact[index][keep], fd[keep], rtol=1e-6, atol=1e-8)


def _single(model, s):
    """The model with spring s alone."""
    return _with(model, spring_indices=model.spring_indices[s:s + 1],
                 spring_rest_length=model.spring_rest_length[s:s + 1],
                 spring_stiffness=model.spring_stiffness[s:s + 1],
                 spring_damping=model.spring_damping[s:s + 1])


def _spring_gradients(model, x):
    """(s, d) g = ∂E_s/∂d of every spring (the force factor times d)."""
    return np.stack([spring.gradient(_single(model, s), x)[model.spring_indices[s, 1]]
                     for s in range(model.n_springs)])


def test_damping_partials_match_finite_differences():
    model = network("hookean", 0)
    rng = np.random.default_rng(10)
    x = model.x0 + 0.1 * rng.normal(size=model.x0.shape)
    u, w = rng.normal(size=x.shape), rng.normal(size=x.shape)
    du, dw = differences(model, u), differences(model, w)

    def psi(y):
        n = SpringGeometry(model, y).n
        return float(np.sum(model.spring_damping * np.einsum("sa,sa->s", du, n)
                            * np.einsum("sa,sa->s", dw, n)))

    by_c, by_d = SpringGeometry(model, x).damping_partials(du, dw)
    np.testing.assert_allclose(scatter(model, by_d), fd_gradient(psi, x), rtol=1e-6, atol=1e-7)
    n = SpringGeometry(model, x).n
    np.testing.assert_allclose(by_c, np.einsum("sa,sa->s", du, n) * np.einsum("sa,sa->s", dw, n),
                               rtol=1e-14)


def test_damping_position_jacobian_matches_finite_differences():
    """The non-symmetric −∂F_damping/∂x the α-methods' adjoint assembles from its blocks."""
    model = network("hookean", 0)
    rng = np.random.default_rng(11)
    x = model.x0 + 0.1 * rng.normal(size=model.x0.shape)
    v = rng.normal(size=x.shape)
    blocks = damping_position_blocks(SpringGeometry(model, x), differences(model, v))
    rows, cols = block_structure(model.spring_indices, model.dim)
    exact = triplets_to_csr(rows, cols, pair_block_values(blocks), model.n_dofs).toarray()
    fd = fd_jacobian(lambda y: -damping.force(model, y, v), x)
    np.testing.assert_allclose(exact, fd, rtol=1e-6, atol=1e-7)
    assert not np.allclose(exact, exact.T)  # it is not symmetric: Jᵀ is solved, not J


def test_joint_projection_and_start_match_finite_differences():
    """The vector–Jacobian products of the velocity projection and of the consistent start
    (:mod:`hooke.adjoint.joints`) on the 3D double pendulum, off its constraints."""
    model = hooke.scene("pendulum").model
    rng = np.random.default_rng(12)
    free = ~model.pinned[:, None]
    x = np.where(free, model.x0 + 0.05 * rng.normal(size=model.x0.shape), model.x0)
    v, lam, a_u = (rng.normal(size=x.shape) * free for _ in range(3))

    def projected(y, w, m=model):
        return float(np.sum(lam * JointSet(m).project_velocities(y, w, 0.0)))

    def start(y, w, a, m=model):
        joints = JointSet(m)
        tension = joints.tensions(y, w, a)
        pull = joints.transpose_times(joints.geometry(y)[1], tension)
        return float(np.sum(lam * (a - joints.inverse_mass[:, None] * pull)))

    def by_mass(function):
        return fd_gradient(lambda m: function(dataclasses.replace(model, mass=m[:, 0])),
                           model.mass[:, None].copy())[:, 0]

    geometry = JointGeometry(JointSet(model), x)
    by_v, by_x, by_m = geometry.projection_vjp(v, lam)
    for exact, fd in ((by_v, fd_gradient(lambda w: projected(x, w), v)),
                      (by_x, fd_gradient(lambda y: projected(y, v), x)),
                      (by_m, by_mass(lambda m: projected(x, v, m)))):
        np.testing.assert_allclose(exact, fd, rtol=1e-6, atol=1e-8)
    by_a, by_x, by_v, by_m = geometry.start_vjp(v, a_u, lam)
    for exact, fd in ((by_a, fd_gradient(lambda a: start(x, v, a), a_u)),
                      (by_x, fd_gradient(lambda y: start(y, v, a_u), x)),
                      (by_v, fd_gradient(lambda w: start(x, w, a_u), v)),
                      (by_m, by_mass(lambda m: start(x, v, a_u, m)))):
        np.testing.assert_allclose(exact, fd, rtol=1e-6, atol=1e-8)


# -- checkpointing ---------------------------------------------------------------------------

@pytest.mark.parametrize("scene_name, integrator", [("cloth2d", name) for name in ADJOINT_INTEGRATORS]
                         + [("square_drop", "implicit_euler"), ("crane", "generalized_alpha")])
def test_checkpointed_gradient_is_bit_identical(scene_name, integrator):
    make, dt, t_end, _ = SCENES[scene_name]
    scene = make()
    options = OPTIONS.get(integrator, {})
    loss = target_loss(scene, integrator, dt, t_end, **options)
    names = [name for name in ELEMENT_ARRAYS if applies(scene_name, integrator, name)]
    steps = round(t_end / dt)
    runs = [hooke.gradient(scene, loss, names, integrator=integrator, dt=dt, t_end=t_end,
                           save_every=5, checkpoints=checkpoints, **options)
            for checkpoints in (None, steps, 3, 1)]
    for value, grads in runs[1:]:
        assert value == runs[0][0]
        for name in names:
            np.testing.assert_array_equal(grads[name], runs[0][1][name])


@pytest.mark.parametrize("n_steps, checkpoints", [(400, None), (401, None), (1000, 10), (50, 50)])
def test_tape_memory_and_recomputed_states(n_steps, checkpoints):
    """Kept states: about √n by default (at most ⌈√n⌉ + 1 checkpoints and a segment of ⌈√n⌉),
    ``checkpoints`` bounds them; the recomputed states equal the forward run's bit for bit."""
    scene = hooke.scene("chain", n=3, damping=0.5)
    system = hooke.System(scene.model)
    integrator = hooke.get_integrator("symplectic_euler")
    segment = segment_length(n_steps, checkpoints)
    tape = Tape(integrator(system, 0.001), n_steps, segment, lambda: integrator(system, 0.001))
    forward = []
    tape.forward(scene.state, lambda step, state: forward.append(state))
    seen = 0
    for first, states, _ in tape.segments():
        for k, state in enumerate(states):
            np.testing.assert_array_equal(state.x, forward[first + k].x)
            np.testing.assert_array_equal(state.v, forward[first + k].v)
        seen += len(states) - 1
    assert seen == n_steps
    root = math.ceil(math.sqrt(n_steps))
    most_kept = root + 1 if checkpoints is None else checkpoints + 1
    assert segment == (root if checkpoints is None else math.ceil(n_steps / checkpoints))
    assert len(tape.kept) <= most_kept
    assert tape.peak_states <= most_kept + segment - 1


def test_default_tape_keeps_every_state_that_fits_in_its_memory():
    """``checkpoints=None``: segments of one step (every state kept, nothing computed twice)
    while the n + 1 states fit in the memory, about √n beyond; the gradient is the same bit
    for bit either way (tested above), and a bad ``tape_memory`` is one line."""
    assert segment_length(400, None, state_bytes=1000, memory=401_000) == 1
    assert segment_length(400, None, state_bytes=1000, memory=400_999) == 20
    assert segment_length(400, None, state_bytes=1000) == 1  # 0.4 MB ≤ TAPE_MEMORY
    assert segment_length(400, None, state_bytes=TAPE_MEMORY) == 20
    assert segment_length(400, 10, state_bytes=1, memory=1e9) == 40
    scene = hooke.scene("spring1d")
    loss = losses.final_position(np.array([[0.0], [1.0]]))
    for bad in (-1, "1GB", None):
        one_line_error(lambda: hooke.gradient(scene, loss, ["mass"], dt=0.005, t_end=0.05,
                                              tape_memory=bad), "tape_memory", repr(bad))


# -- the compiled reverse steps against their NumPy references -------------------------------

FAST_CASES = {  # (scene, integrator, options, dt, t_end)
    "cloth2d": (lambda: hooke.scene("cloth2d", nx=6, ny=5, stiffness=500.0, damping=2.0),
                ("symplectic_euler", "implicit_euler_linear"), {}, 0.002, 0.05),
    "soft3d": (lambda: hooke.scene("soft3d", stiffness=1e4, damping=2.0),
               ("symplectic_euler", "implicit_euler_linear"), {"solver": "cg"}, 0.002, 0.02),
    "squared_network": (squared_network, ("symplectic_euler", "implicit_euler_linear"), {},
                        0.002, 0.05),
}


@pytest.mark.parametrize("case", list(FAST_CASES))
def test_compiled_reverse_steps_equal_the_numpy_path(case, monkeypatch):
    """``hooke.adjoint.explicit.COMPILED`` and ``.implicit.COMPILED`` (the compiled reverse
    steps of :mod:`hooke.adjoint.compiled`) give the NumPy path's gradient to round-off, for
    every parameter they touch, on cloth2d (2D), soft3d (3D, 691 particles) and a network of
    squared-length springs; the parallel chunks of the symplectic step (forced here on a small
    model) the serial pass's."""
    from hooke.adjoint import compiled, explicit, implicit

    make, integrators, options, dt, t_end = FAST_CASES[case]
    scene = make()
    names = ["stiffness", "damping", "rest_length", "mass", "gravity", "x0", "v0"]
    for integrator in integrators:
        extra = options if integrator == "implicit_euler_linear" else {}
        end = hooke.simulate(scene, integrator=integrator, dt=dt, t_end=t_end, **extra).x[-1]
        loss = losses.final_position(end + 0.01)

        def gradient():
            return hooke.gradient(scene, loss, names, integrator=integrator, dt=dt, t_end=t_end,
                                  **extra)[1]

        monkeypatch.setattr(explicit, "COMPILED", False)
        monkeypatch.setattr(implicit, "COMPILED", False)
        reference = gradient()
        monkeypatch.setattr(explicit, "COMPILED", True)
        monkeypatch.setattr(implicit, "COMPILED", True)
        runs = [gradient()]
        if integrator == "symplectic_euler":
            monkeypatch.setattr(compiled, "PARALLEL_MIN_SPRINGS", 1)
            monkeypatch.setattr(compiled.numba, "get_num_threads", lambda: 3)
            runs.append(gradient())
            monkeypatch.undo()
        for fast in runs:
            for name in names:
                scale = np.max(np.abs(reference[name]))
                assert scale > 0, (case, integrator, name)
                np.testing.assert_allclose(fast[name], reference[name], rtol=0,
                                           atol=1e-12 * scale, err_msg=f"{integrator} {name}")


# -- bad input -------------------------------------------------------------------------------

def one_line_error(call, *fragments):
    with pytest.raises(HookeInputError) as error:
        call()
    message = str(error.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message
    return message


@pytest.fixture(scope="module")
def spring_scene():
    scene = hooke.scene("spring1d")
    loss = losses.final_position(np.array([[0.0], [1.0]]))
    return scene, loss


def test_bad_parameter_names(spring_scene):
    scene, loss = spring_scene

    def grad(params, **kwargs):
        return lambda: hooke.gradient(scene, loss, params, dt=0.005, t_end=0.05, **kwargs)

    one_line_error(grad(["stifness"]), "params", "'stifness'", "unknown parameter")
    one_line_error(grad(["joint_length"]), "params", "'joint_length'", "no joints")
    one_line_error(grad({"gravity": "shared"}), "params.gravity", "'shared'")
    one_line_error(grad({"mass": "all"}), "params.mass", "'all'")
    one_line_error(grad([]), "params")
    one_line_error(grad(["mass"], integrator="rk4"), "integrator", "'rk4'", "no adjoint")
    one_line_error(grad(["mass"], checkpoints=0), "checkpoints", "0")
    springless = hooke.Scene(_particle_only(), dt=0.01, t_end=0.1)
    one_line_error(lambda: hooke.gradient(springless, losses.energy_at(0.0), ["stiffness"]),
                   "params", "'stiffness'", "no springs")


def _particle_only():
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    b.add_particle((0.0, 0.0), mass=1.0)
    return b.finalize()


def test_bad_losses(spring_scene):
    scene, _ = spring_scene

    class Vector(losses.Loss):
        def __call__(self, result):
            return result.x[-1, :, 0]

        def gradient(self, result):
            return np.zeros(np.shape(result.x)), np.zeros(np.shape(result.v))

    class Infinite(Vector):
        def __call__(self, result):
            return float("inf")

    def grad(loss):
        return lambda: hooke.gradient(scene, loss, ["mass"], dt=0.005, t_end=0.05)

    one_line_error(grad(Vector()), "loss", "scalar")
    one_line_error(grad(Infinite()), "loss", "non-finite", "inf")
    one_line_error(grad(lambda result: 0.0), "loss", "function")
    one_line_error(grad(losses.tracking(np.zeros((3, 2, 1)))), "observed_x", "(11, 2, 1)")
    one_line_error(grad(losses.tracking(np.zeros((1, 2, 1)), times=[0.5])), "times", "0.5",
                   "outside the run")
    one_line_error(grad(losses.tracking(np.zeros((1, 2, 1)), times=[0.0123])), "times",
                   "not a saved frame's time")
    one_line_error(grad(losses.tracking(np.zeros((11, 2, 1)), weights=[1, 2, 3])), "weights")
    # issue 15 red-team pass: inf counted as "not observed" (loss 0, gradient 0, silently) and a
    # string was a raw ValueError
    one_line_error(lambda: losses.tracking(np.full((11, 2, 1), np.inf)), "observed_x",
                   "finite numbers, NaN where not observed", "got 'inf'")
    one_line_error(lambda: losses.tracking("abc"), "observed_x", "must be positions")
    one_line_error(lambda: losses.final_position([["1"], ["2"]]), "target", "must be positions")
    one_line_error(lambda: losses.energy_at(0.0, "elastic"), "kind", "'elastic'")
    # issue 15: a target whose squared misfit overflows was Python's raw "OverflowError: (34,
    # 'Numerical result out of range')"
    one_line_error(grad(losses.energy_at(0.05, target=1e200)), "target", "overflows to inf",
                   "got 1e+200")


def test_a_start_too_far_off_the_joints_for_the_gradient_is_one_line():
    """The start's projection onto the joints is differentiated as x_p = x − M⁻¹G(x)ᵀμ: its
    steps keep the directions at x. Far off (the first joint 1 m at a distance of 0.2 m) they
    turn on the way; the run is simulate's, the gradient is refused in one line rather than
    given wrong. At 0.6 m they do not: the gradient is given."""
    def scene(distance):
        return double_pendulum_off_its_joints(distance, (0.0, 0.0), 0.05)

    loss = losses.final_position(np.zeros((3, 2)))
    assert np.all(np.isfinite(hooke.gradient(scene(0.6), loss, ["joint_length"])[1]["joint_length"]))
    assert np.all(np.isfinite(hooke.simulate(scene(0.2)).x))
    with pytest.raises(hooke.SimulationError) as error:
        hooke.gradient(scene(0.2), loss, ["joint_length"])
    assert str(error.value) == (
        "gradient: the start is so far off the joints that their projection turned its "
        "directions on the way, which hooke.gradient does not differentiate; give joint "
        "lengths nearer the distances")


def test_an_adjoint_that_overflows_is_one_line_without_warnings(integrator="implicit_euler"):
    """Stop 29: final_position(…, weights=1e308) has a finite loss (4e307) whose adjoint sweep
    overflows: NumPy printed overflow warnings and implicit_euler's solve raised a raw
    "ValueError: array must not contain infs or NaNs"."""
    loss = losses.final_position([[0.0], [1.0]], weights=1e308)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(hooke.SimulationError) as caught:
            hooke.gradient(hooke.scene("spring1d"), loss, ["stiffness"], integrator=integrator,
                           t_end=0.1)
    assert re.fullmatch(r"gradient: the adjoint ∂L/∂\(x, v\) overflowed to inf or NaN at "
                        r"t = [0-9.e-]+: the loss's scale \(its weights or targets\) is past "
                        r"double precision; scale the loss down", str(caught.value))
    # at a scale the sweep holds, the gradient is linear in the weights
    small = hooke.gradient(hooke.scene("spring1d"), losses.final_position([[0.0], [1.0]], weights=1e8),
                           ["stiffness"], integrator=integrator, t_end=0.1)
    unit = hooke.gradient(hooke.scene("spring1d"), losses.final_position([[0.0], [1.0]]),
                          ["stiffness"], integrator=integrator, t_end=0.1)
    np.testing.assert_allclose(small[1]["stiffness"], 1e8 * unit[1]["stiffness"], rtol=1e-12)


@pytest.mark.parametrize("body, what", [("sphere", "spheres"), ("obstacle", "obstacle meshes")])
def test_a_sphere_or_an_obstacle_is_refused_not_differentiated_without_its_barrier(body, what):
    """Red-team pass (redF): hooke.gradient of a model resting on a frictionless fixed sphere
    or obstacle returned a derivative without their barriers (∂L/∂g_y −1.406e-4 against the
    central differences' −1.445e-4 on the sphere, −4.04e-6 against −4.98e-6 on the obstacle):
    the adjoint differentiates the planes' barrier only. Now refused in one line."""
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    b.add_particle((0.0, 0.03), mass=0.1)
    b.add_particle((0.3, 0.04), mass=0.1)
    b.add_spring(0, 1, 100.0)
    if body == "sphere":
        b.add_sphere((0.15, -1.0), 1.0)
    else:
        b.add_obstacle(([(-1.0, 0.0), (1.0, 0.0)], [(0, 1)]))
    b.set_contact(dhat=0.01, kappa=1e3, area=0.1)
    scene = hooke.Scene(b.finalize(), integrator="implicit_euler", dt=0.01, t_end=0.1)
    with pytest.raises(HookeInputError) as caught:
        hooke.gradient(scene, losses.final_position(np.zeros((2, 2))), ["gravity"])
    assert str(caught.value).startswith(f"scene: has {what}, which hooke.gradient does not "
                                        "differentiate with 'implicit_euler' (it covers ")
    assert str(caught.value).endswith(f", got '{what}'")


def test_unsupported_models_are_refused():
    def grad(name, integrator, **parameters):
        return lambda: hooke.gradient(hooke.scene(name, **parameters), losses.energy_at(0.0),
                                      ["mass"], integrator=integrator, dt=0.01, t_end=0.02)

    one_line_error(grad("jointed_chain", "symplectic_euler", n=3), "scene", "joints",
                   "generalized_alpha")
    one_line_error(grad("square_slope", "implicit_euler"), "scene", "friction", "implicit_euler")
    one_line_error(grad("square_drop", "implicit_euler_linear"), "integrator",
                   "contact planes")  # the integrator itself refuses planes
    one_line_error(lambda: hooke.gradient(hooke.scene("chain", n=2), losses.energy_at(0.0),
                                          ["kappa"], integrator="symplectic_euler", dt=0.01,
                                          t_end=0.02),
                   "params", "'kappa'", "no contact planes")
    assert base.names() == sorted(ADJOINT_INTEGRATORS)
