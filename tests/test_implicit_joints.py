"""implicit_euler with joints (Newton–KKT on the joints' manifold, hooke.integrators.implicit_joints):
the joints held to the α-methods' tolerance at every step, first order against an independent
reference, implicit Euler's energy decay, and joints together with contact — a pendulum coming to
rest on the ground, the chain_pile scene, a chain that cannot pass through itself."""

from __future__ import annotations

import numpy as np
import pytest

import hooke
from hooke.constraints import JOINT_TOL, JointSet, length_scale
from hooke.errors import SimulationError
from hooke.integrators.newmark import AlphaMethod
from hooke.verification.reference import dae_reference


def lengths(model, x: np.ndarray) -> np.ndarray:
    """(frames, joints) |x_j − x_i|, from the positions alone."""
    i, j = model.joint_indices.T
    return np.linalg.norm(x[:, j] - x[:, i], axis=2)


def joint_error(model, x: np.ndarray) -> float:
    return float(np.max(np.abs(lengths(model, x) - model.joint_length)))


# (scene, horizon [s], compared frames every [s], dt₀ [s], options): horizons short enough for a
# test, long enough for the motion (the top turns a quarter, the crane sways, the pendulum falls
# from upright through its first swing).
ORDER_CASES = {
    "top": (0.256, 0.032, 1e-3, {}),
    "crane": (0.512, 0.064, 2e-3, {}),
    # the upright start is slow (0.01 m/s) and unstable: implicit_euler's absolute velocity
    # tolerance (1e-2 m/s) lets its first steps stop after the first, linearly implicit, Newton
    # iteration, and the instability amplifies the difference (local orders 1.08, 1.04, 1.54,
    # 1.38 at the default); solved tightly it is backward Euler's
    "pendulum": (1.04, 0.08, 1e-2, {"tol": 1e-9}),
}


@pytest.fixture(scope="module", params=sorted(ORDER_CASES))
def ladder(request):
    """The case's five runs (dt₀/2^k, every step saved) and the DOP853 reference at the frames."""
    name = request.param
    horizon, interval, dt0, options = ORDER_CASES[name]
    scene = hooke.scene(name)
    reference = dae_reference(scene, np.arange(round(horizon / interval) + 1) * interval)
    runs = []
    for k in range(5):
        dt = dt0 / 2**k
        runs.append(hooke.simulate(scene, integrator="implicit_euler", dt=dt, t_end=horizon,
                                   **options))
    return name, scene, reference, runs


def test_joints_are_kept_to_the_alpha_methods_tolerance_at_every_step(ladder):
    name, scene, _, runs = ladder
    bound = JOINT_TOL * length_scale(scene.model)
    assert JOINT_TOL == AlphaMethod.solver_defaults["tol"] == 1e-10
    assert bound == {"top": 2.0, "crane": 6.0, "pendulum": 2.0}[name] * 1e-10
    for run in runs:
        assert run.complete and run.n_frames == run.stats["steps"] + 1
        assert joint_error(scene.model, run.x) <= bound
        # the velocities are projected onto G v = 0 (as the α-methods do)
        i, j = scene.model.joint_indices.T
        rates = np.einsum("fkd,fkd->fk", run.v[:, j] - run.v[:, i], run.x[:, j] - run.x[:, i])
        assert np.max(np.abs(rates[1:])) < 1e-9


def test_first_order_against_the_dae_reference(ladder):
    """Four halvings: the error against DOP853 on the index-1 equations (independent of hooke's
    integrators) halves with dt. Measured local orders: top 0.988, 0.994, 0.997, 0.998; crane
    0.82, 0.90, 0.95, 0.975 (implicit Euler damps the load's 5 Hz bounce by a factor that
    depends on h: the coarse steps are pre-asymptotic); pendulum 1.08, 1.04, 1.02, 1.01."""
    name, _, reference, runs = ladder
    horizon, interval, dt0, _ = ORDER_CASES[name]
    errors = np.array([np.max(np.abs(run.x[::round(interval / (dt0 / 2**k))] - reference.x))
                       for k, run in enumerate(runs)])
    assert errors[-1] > 1e3 * reference.error
    local = np.log2(errors[:-1] / errors[1:])
    slope = np.polyfit(np.log(dt0 / 2.0 ** np.arange(5)), np.log(errors), 1)[0]
    assert abs(slope - 1.0) <= 0.1, (slope, errors)
    assert abs(local[-1] - 1.0) <= 0.03, local  # the finest halving: order 1
    assert np.all(np.diff(np.abs(local - 1.0)) <= 1e-3), local  # approaching it


def test_energy_decays_as_implicit_euler_damps():
    """The top (conservative: no damping, no friction) loses energy at every step; the pendulum's
    energy never rises by more than the joints' tolerance can move its potential."""
    top = hooke.simulate(hooke.scene("top"), integrator="implicit_euler", dt=1e-3, t_end=1.0)
    total = top.energy["total"]
    assert np.all(np.diff(total) < 0)
    assert 0.05 < 1 - total[-1] / total[0] < 0.12  # measured: 7.6 % over 1 s
    pendulum = hooke.scene("pendulum")
    run = hooke.simulate(pendulum, integrator="implicit_euler", dt=0.01, t_end=4.0)
    total = run.energy["total"]
    assert np.max(np.diff(total)) < 1e-8 * total[0]  # measured 5.2e-8 J of 30 J
    assert total[-1] < 0.6 * total[0]


def test_a_moving_support_drags_the_pendulum_inside_the_solve():
    """Seed 003's moving support (box(t) = 0.1 sin(3t) along x): the pin is placed at t + h
    before the Newton–KKT solve, which brings the joints back to their lengths."""
    scene = hooke.scene("pendulum", support_amplitude=0.1, support_omega=3.0)
    run = hooke.simulate(scene, integrator="implicit_euler", dt=0.01, t_end=2.0)
    np.testing.assert_allclose(run.x[:, 0, 0], 0.1 * np.sin(3.0 * run.t), rtol=0, atol=1e-12)
    assert joint_error(scene.model, run.x) <= JOINT_TOL * length_scale(scene.model)


def test_joints_take_the_generic_path_and_name_both_residuals_when_newton_fails():
    scene = hooke.scene("top")
    integrator = hooke.integrators.base.get("implicit_euler")(hooke.System(scene.model), 1e-3)
    assert not integrator.compiled
    # the first step of the top: 10 m/s along the joints' tangents, then the curvature's 0.1 mm
    with pytest.raises(SimulationError, match=r"implicit_euler: Newton did not converge in 1 "
                                              r"iteration at t = 0 \(last \(‖p‖∞/h, max \|g\| "
                                              r"\[m\]\): \(1\.000e\+01, 0\.000e\+00\), "
                                              r"\(5\.080e-02, 1\.000e-04\); tol = 0\.01, joints "
                                              r"within 2e-10 m\); try a smaller dt"):
        hooke.simulate(scene, integrator="implicit_euler", dt=1e-3, t_end=0.01, max_iterations=1)


@pytest.mark.parametrize("solver", ["superlu", "cholmod", "pardiso", "cg", "amg"])
def test_every_solver_takes_the_saddle_point_matrix(solver):
    """A 120-link chain: 360 unknowns in the KKT system, above the dense limit. It is indefinite:
    CG and AMG hand it to the direct solver, CHOLMOD to SuperLU; every choice gives the same
    steps as "auto" (PARDISO here)."""
    from hooke.linalg import DIRECT_SOLVERS

    if solver in DIRECT_SOLVERS and not DIRECT_SOLVERS[solver][1]:
        pytest.skip(f"{solver} is not installed")
    scene = hooke.scene("jointed_chain", n=120)
    auto = hooke.simulate(scene, integrator="implicit_euler", dt=1e-3, t_end=0.05)
    run = hooke.simulate(scene, integrator="implicit_euler", dt=1e-3, t_end=0.05, solver=solver)
    assert run.stats == auto.stats == {"steps": 50, "newton_iterations": 143,
                                       "line_search_halvings": 0}
    np.testing.assert_allclose(run.x, auto.x, rtol=0, atol=1e-12)
    assert joint_error(scene.model, run.x) <= JOINT_TOL * length_scale(scene.model)


def pendulum_over_ground(friction: float = 0.5):
    """A 1 m pendulum (1 kg bob) released horizontally in 2D; the ground 0.9 m below the support
    cuts its circle, so the bob swings into it at x ≈ 0.436 m."""
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    support = b.add_particle((0.0, 0.0), pinned=True)
    bob = b.add_particle((1.0, 0.0), mass=1.0)
    b.add_joint(support, bob)
    b.add_plane((0.0, 1.0), (0.0, -0.9), friction=friction)
    return hooke.Scene(b.finalize(), integrator="implicit_euler", dt=0.005, t_end=3.0)


def test_a_pendulum_hits_the_ground_and_rests_on_it_with_its_joint_kept():
    scene = pendulum_over_ground()
    run = hooke.simulate(scene)
    height = run.x[:, 1, 1] + 0.9  # the bob's distance to the ground
    dhat = scene.model.contact_dhat
    assert np.all(height > 0)  # every step: the CCD never lets it reach the ground
    first = int(np.argmax(height < dhat))
    assert 0.3 < run.t[first] < 0.6  # measured 0.45 s: a quarter swing, shortened by the ground
    assert 0 < height[-1] < dhat
    assert joint_error(scene.model, run.x) <= JOINT_TOL * length_scale(scene.model)
    assert np.max(np.abs(run.v[-1])) < 1e-3  # at rest
    # where the circle meets the ground, on the side it came from
    assert run.x[-1, 1, 0] == pytest.approx(np.sqrt(1 - (0.9 - height[-1]) ** 2), abs=1e-9)
    # the ground pushes back with a barrier of A·κ = 1e5 N/m: a few newtons need a shallow
    # intrusion into its reach (measured: the bob rests 9.9 mm above the ground)
    assert 0.9 * dhat < height[-1]
    assert run.contact_distance.min() == pytest.approx(height.min(), rel=1e-12)


def test_a_start_off_its_joints_is_projected_unless_that_goes_through_the_ground():
    """A double pendulum whose first joint is given 1 m at a distance of 0.9 m, 5 m above the
    ground: its start is projected onto the joints (the run from there equals, bit for bit,
    the run started at the projected positions; left to the first step, which closed the 0.1 m
    gap in one dt, it did not converge: tests/test_joints.py). A bob on a 1 m joint from a pin
    1 m above the ground, started 0.95 m below the pin: its projection is the ground itself
    (y = −4e-17 m, where the barrier is NaN), so that start is left to the first step, whose
    Newton iterations the CCD caps (as before the start's projection: the bob then rests
    1e-17 m above the ground)."""
    def scene(positions, joints, plane_height):
        b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
        b.add_particle(positions[0], pinned=True)
        for x in positions[1:]:
            b.add_particle(x, mass=1.0)
        for i, j, length in joints:
            b.add_joint(i, j, length=length)
        b.add_plane((0.0, 1.0), (0.0, plane_height))
        return hooke.Scene(b.finalize(), integrator="implicit_euler", dt=0.01, t_end=0.2)

    joints = [(0, 1, 1.0), (1, 2, None)]
    off = scene([(0.0, 0.0), (0.9, 0.0), (1.4, 0.3)], joints, -5.0)
    x0 = off.state.x
    on, _ = JointSet(off.model).project(x0, off.state.v, 0.0)
    projected = scene(on, [(0, 1, 1.0), (1, 2, float(np.linalg.norm(x0[2] - x0[1])))], -5.0)
    run = hooke.simulate(off)
    assert np.array_equal(run.x[0], x0)
    assert np.array_equal(run.x[1:], hooke.simulate(projected).x[1:])

    below = hooke.simulate(scene([(0.0, 1.0), (0.0, 0.05)], [(0, 1, 1.0)], 0.0))
    assert np.all(below.x[:, 1, 1] > 0)
    assert below.x[-1, 1, 1] < 1e-16


def test_the_cranes_load_bounces_on_a_platform_that_it_would_sink_below():
    """Seed 002's crane with a platform 15 mm below its load: the load, bouncing on its spring
    (static stretch 9.8 mm), would sink to z = 1.981 m; the platform's barrier stops it, while
    the tower and boom keep their joints."""
    from hooke.builder import add_contact

    scene = hooke.scene("crane")
    free = hooke.simulate(scene, integrator="implicit_euler", dt=0.002, t_end=2.0)
    assert free.x[:, 7, 2].min() < 1.985 - 0.003  # measured 1.9813 m
    model = add_contact(scene.model, [dict(normal=(0.0, 0.0, 1.0), point=(0.0, 0.0, 1.985))])
    run = hooke.simulate(hooke.Scene(model, integrator="implicit_euler", dt=0.002, t_end=2.0))
    gap = run.x[:, 7, 2] - 1.985
    assert np.all(gap > 0) and gap[-1] < model.contact_dhat  # resting on the platform
    assert joint_error(model, run.x) <= JOINT_TOL * length_scale(model)


@pytest.fixture(scope="module")
def pile():
    scene = hooke.scene("chain_pile")
    return scene, hooke.simulate(scene)


def segment_distances(x: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """(frames, pairs) distance between segments (x[a], x[a+1]) and (x[b], x[b+1]) for each pair
    (a, b): the smallest of the four point–segment distances (exact for segments that do not
    cross), and 0 where they cross (a sign change of both orientation tests)."""
    def point_segment(p, a, b):
        ab = b - a
        s = np.clip(np.einsum("...d,...d", p - a, ab) / np.einsum("...d,...d", ab, ab), 0.0, 1.0)
        return np.linalg.norm(p - a - s[..., None] * ab, axis=-1)

    def orientation(a, b, c):
        return (b[..., 0] - a[..., 0]) * (c[..., 1] - a[..., 1]) - \
               (b[..., 1] - a[..., 1]) * (c[..., 0] - a[..., 0])

    p0, p1 = x[:, pairs[:, 0]], x[:, pairs[:, 0] + 1]
    q0, q1 = x[:, pairs[:, 1]], x[:, pairs[:, 1] + 1]
    distance = np.minimum.reduce([point_segment(p0, q0, q1), point_segment(p1, q0, q1),
                                  point_segment(q0, p0, p1), point_segment(q1, p0, p1)])
    cross = ((orientation(p0, p1, q0) * orientation(p0, p1, q1) < 0)
             & (orientation(q0, q1, p0) * orientation(q0, q1, p1) < 0))
    return np.where(cross, 0.0, distance)


def non_adjacent_links(n: int) -> np.ndarray:
    a, b = np.triu_indices(n, k=2)  # links a and a + 1 share a particle
    return np.stack([a, b], axis=1)


def test_chain_pile_keeps_its_joints_and_stays_above_the_ground(pile):
    scene, run = pile
    model = scene.model
    assert run.complete and model.n_joints == 30 and model.self_contact
    assert (scene.dt, scene.t_end, run.n_frames) == (0.002, 1.2, 601)
    assert joint_error(model, run.x) <= JOINT_TOL * length_scale(model)
    assert np.min(run.x[..., 1]) > 0  # every particle above the ground y = 0 in every frame
    # it has landed and piled up: every particle within 6 cm of the ground at the end, at rest
    # from 1.1 s (its kinetic energy peaked at about 1 J as it landed)
    assert np.max(run.x[-1, :, 1]) < 0.06
    kinetic = run.energy["kinetic"]
    assert kinetic.max() > 0.5 and np.max(kinetic[run.t >= 1.1]) < 1e-4


def test_chain_pile_never_passes_through_itself(pile):
    scene, run = pile
    distances = segment_distances(run.x, non_adjacent_links(scene.model.n_joints))
    assert np.min(distances) > 0
    # the links do press on each other in the pile: within the barrier's reach
    assert np.min(distances) < scene.model.contact_dhat
    # the same as the barrier's own account (ipctk), where it has one (a pair within d̂)
    near = np.isfinite(run.surface_distance)
    assert near.sum() > 100
    np.testing.assert_allclose(np.min(distances, axis=1)[near], run.surface_distance[near],
                               rtol=1e-9)


def test_without_self_contact_the_same_chain_passes_through_itself():
    """The check above can see a crossing: with the barrier between links off, the same drop
    puts links through each other."""
    from dataclasses import replace

    scene = hooke.scene("chain_pile")
    free = hooke.Scene(replace(scene.model, self_contact=False), integrator="implicit_euler",
                       dt=scene.dt, t_end=scene.t_end)
    run = hooke.simulate(free)
    distances = segment_distances(run.x, non_adjacent_links(scene.model.n_joints))
    assert np.sum(np.min(distances, axis=1) == 0) > 10  # frames with crossing links
    assert joint_error(scene.model, run.x) <= JOINT_TOL * length_scale(scene.model)


def test_a_tight_tol_converges_on_joints_with_a_swinging_pin():
    """A chain of two joints and a spring hanging from a pin swung by a sinusoid (redJ's case):
    implicit_euler at tol 1e-10, dt 0.01, stalled at step 13 with (‖p‖/h, max |g|) = (5.979e-10,
    0) for 100 iterations, the merit's round-off judged by |E + ν|g|₁| where its parts cancel
    (tests/test_implicit.py has the unconstrained case). It converges, to the joints' tolerance."""
    from hooke.motion import Sinusoid

    b = hooke.ModelBuilder(dim=2, gravity=(0, -9.81))
    pin = b.add_particle((0, 0), mass=1.0, pinned=True,
                         motion=Sinusoid(amplitude=0.1, direction=(1.0, 0.3), omega=4.0,
                                         phase=np.pi / 2))
    ids = [b.add_particle(p, mass=m) for p, m in (((0.5, 0.2), 0.7), ((1.0, 0.1), 0.4),
                                                  ((1.4, -0.2), 0.3))]
    b.add_joint(pin, ids[0])
    b.add_joint(ids[0], ids[1])
    b.add_spring(ids[1], ids[2], stiffness=80.0, rest_length=0.4)
    scene = hooke.Scene(b.finalize(), integrator="implicit_euler", dt=0.01, t_end=0.5)
    result = hooke.simulate(scene, tol=1e-10)
    assert result.complete and result.n_frames == 51
    x = result.x[-1]
    lengths = [np.linalg.norm(x[1] - x[0]), np.linalg.norm(x[2] - x[1])]
    np.testing.assert_allclose(lengths, scene.model.joint_length, rtol=0,
                               atol=JOINT_TOL * length_scale(scene.model))
