"""hooke.gradient through air drag and wind (:mod:`hooke.energies.drag`, issue 17): the adjoint
against central finite differences of hooke.simulate for every adjoint integrator, on a 3D
network in a steady wind, a 2D cloth in a wind varying in time, and the crane scenes (the crane's
steady wind, crane_wind's gust); the drag's vector–Jacobian products against finite differences
of its force; the compiled symplectic Euler adjoint (which adds the drag's share in NumPy) against
the NumPy path; the drag and wind parameters' refusals. The finite-difference machinery and the
scenes without air are tests/test_adjoint.py's."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import hooke
from hooke import losses
from hooke.adjoint.forces import air_acceleration_vjp, air_vjp
from hooke.adjoint.params import current
from hooke.air import with_air
from hooke.energies import drag
from hooke.motion import Sinusoid
from hooke.system import System

from conftest import fd_gradient, random_network
from test_adjoint import (ADJOINT_INTEGRATORS, JOINT_INTEGRATORS, check_against_finite_differences,
                          one_line_error, target_loss)


def air_network():
    """A 3D network of squared-length springs with a pin, dashpots, initial velocities and
    gravity, every particle with its own drag towards a steady wind."""
    rng = np.random.default_rng(21)
    model = random_network(rng, 3, n=5, n_springs=8, spring_energy="squared_length",
                           damping=1.0, gravity=(0, -9.81, 0), velocities=0.5, pinned=(0,),
                           rest_scale=(0.8, 1.2))
    model = with_air(model, rng.uniform(0.2, 1.0, size=model.n_particles), wind=(3.0, -1.0, 2.0))
    return hooke.Scene(model, integrator="symplectic_euler", dt=0.002, t_end=0.1)


def gusty_cloth():
    """A small 2D cloth whose air sloshes at 5 rad/s: the wind changes by up to 1 % of itself
    within a step, so taking it at the wrong time in a step shows far above the tolerance. No
    dashpots: the drag is the only velocity force (implicit Euler's adjoint must put its C in
    the matrix itself)."""
    scene = hooke.scene("cloth2d", nx=4, ny=3, stiffness=500.0, damping=0.0)
    gust = Sinusoid(0.2, (0.6, 0.8), 5.0, 0.3)  # the air's velocity 1 m/s · cos(5t + 0.3)
    return dataclasses.replace(scene, model=with_air(scene.model, 0.5, (1.0, 0.0), gust))


# name → (scene, integrators, dt, t_end, ε), as tests/test_adjoint.py's SCENES
SCENES = {
    "air_network": (air_network, ADJOINT_INTEGRATORS, 0.002, 0.1, 1e-4),
    "gusty_cloth": (gusty_cloth, ADJOINT_INTEGRATORS, 0.002, 0.1, 1e-4),
    # the crane scene (seed 002's crane, its wind a real one with drag) and its gust
    "crane": (lambda: hooke.scene("crane"), JOINT_INTEGRATORS, 0.002, 0.1, 1e-4),
    "crane_wind": (lambda: hooke.scene("crane_wind"), JOINT_INTEGRATORS, 0.002, 0.1, 1e-4),
}
# the air's parameters, and those its force shares a derivative with (1/m, x and v through it)
PARAMETERS = (("drag", "each"), ("drag", "shared"), ("wind", "each"), ("mass", "each"),
              ("x0", "each"), ("v0", "each"))
# The force is linear in c and w, the motion smoothly nonlinear: the fourth-order stencil's
# truncation at this ε stays near 1e-8, while on the crane (c ≤ 0.005: a derivative ~1e-6 of the
# loss's scale) ε = 1e-4 left Newton's tolerance at 1.6e-6 of the wind's derivative (newmark;
# 1.7e-9 at ε = 1e-2).
AIR_EPS = 1e-2
CASES = [(scene, integrator, name, mode) for scene, (_, integrators, *_) in SCENES.items()
         for integrator in integrators for name, mode in PARAMETERS]


@pytest.mark.parametrize("scene_name, integrator, name, mode", CASES)
def test_gradient_with_air_matches_finite_differences(scene_name, integrator, name, mode):
    make, _, dt, t_end, eps = SCENES[scene_name]
    eps = AIR_EPS if name in ("drag", "wind") else eps
    scene = make()
    assert scene.model.has_drag
    check_against_finite_differences(scene, integrator, name, mode, dt, t_end, eps)


@pytest.mark.parametrize("gusting", [False, True])
def test_air_vjp_matches_finite_differences_of_the_drag_force(gusting):
    """∂(u·F_air)/∂v, ∂/∂c, ∂/∂w of :func:`air_vjp` and the 1/m partial of
    :func:`air_acceleration_vjp`, against central differences of ``drag.force``."""
    scene = gusty_cloth() if gusting else air_network()
    model, t = scene.model, 0.37
    rng = np.random.default_rng(22)
    v, u = rng.normal(size=model.x0.shape), rng.normal(size=model.x0.shape)

    def grads():
        return {"drag": np.zeros(model.n_particles), "wind": np.zeros(model.dim),
                "mass": np.zeros(model.n_particles)}

    def work(m=model, w=v):
        return float(np.sum(u * drag.force(m, w, t)))

    exact = grads()
    along_v = air_vjp(model, v, t, u, exact)
    # the force is linear in v, c and w: central differences are exact but for round-off
    close = dict(rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(along_v, fd_gradient(lambda w: work(w=w), v), **close)
    by_drag = fd_gradient(lambda c: work(m=dataclasses.replace(model, drag=c[:, 0])),
                          model.drag[:, None].copy())[:, 0]
    np.testing.assert_allclose(exact["drag"], by_drag, **close)
    by_wind = fd_gradient(lambda w: work(m=dataclasses.replace(model, wind=w[0])),
                          model.wind[None].copy())[0]
    np.testing.assert_allclose(exact["wind"], by_wind, **close)

    system = System(model)
    accelerations = grads()
    air_acceleration_vjp(system, v, t, u, accelerations)

    def power(m):  # u·M⁻¹F_air on the free particles
        return float(np.sum(u * drag.force(model, v, t) / m[:, None] * ~model.pinned[:, None]))

    by_mass = fd_gradient(lambda m: power(m[:, 0]), model.mass[:, None].copy())[:, 0]
    np.testing.assert_allclose(accelerations["mass"], by_mass, **close)


@pytest.mark.parametrize("make", [air_network, gusty_cloth])
def test_compiled_symplectic_euler_adjoint_with_air_equals_the_numpy_path(make, monkeypatch):
    """The compiled reverse step has no drag term: the adjoint adds its share in NumPy, which
    gives the NumPy path's gradient (whose force includes the drag) to round-off."""
    from hooke.adjoint import explicit

    scene = make()
    names = ["drag", "wind", "mass", "stiffness", "damping", "gravity", "x0", "v0"]
    end = hooke.simulate(scene, integrator="symplectic_euler", dt=0.002, t_end=0.05).x[-1]
    loss = losses.final_position(end + 0.01)

    def gradient():
        return hooke.gradient(scene, loss, names, integrator="symplectic_euler", dt=0.002,
                              t_end=0.05)[1]

    monkeypatch.setattr(explicit, "COMPILED", False)
    reference = gradient()
    monkeypatch.setattr(explicit, "COMPILED", True)
    fast = gradient()
    for name in names:
        scale = np.max(np.abs(reference[name]))
        assert scale > 0, name
        np.testing.assert_allclose(fast[name], reference[name], rtol=0, atol=1e-12 * scale,
                                   err_msg=name)


def test_the_crane_gradient_is_not_refused_and_drag_changes_it():
    """The crane in its wind: differentiated (no refusal), and not as the seed's crane with
    the same static load as a tilted gravity: the drag's damping is in the gradient."""
    from conftest import seed_crane

    loss = losses.energy_at(0.1, "kinetic")
    windy = hooke.gradient(hooke.scene("crane"), loss, ["x0"], dt=0.002, t_end=0.1)[1]["x0"]
    tilted = hooke.gradient(seed_crane(), loss, ["x0"], dt=0.002, t_end=0.1)[1]["x0"]
    assert np.all(np.isfinite(windy)) and np.max(np.abs(windy)) > 0
    assert not np.allclose(windy, tilted, rtol=1e-6, atol=0)


def test_air_parameters_need_air():
    scene = hooke.scene("spring1d")
    loss = losses.final_position(np.array([[0.0], [1.0]]))
    for name in ("drag", "wind"):
        one_line_error(lambda: hooke.gradient(scene, loss, [name], dt=0.005, t_end=0.05),
                       "params", f"'{name}'", "no air")
    one_line_error(lambda: hooke.gradient(air_network(), loss, {"wind": "shared"}, dt=0.002,
                                          t_end=0.01), "params.wind", "'shared'")


def test_zero_drag_is_air_with_a_derivative():
    """A drag array of zeros is no drag in the run, but ∂L/∂c there is defined: along a
    direction of positive drags it matches the one-sided (second-order) difference."""
    scene = hooke.scene("cloth2d", nx=4, ny=3, stiffness=500.0, damping=2.0)
    calm = dataclasses.replace(scene, model=with_air(scene.model, 0.0, (1.0, 0.5)))
    assert not calm.model.has_drag and current(calm, "drag").shape == (calm.model.n_particles,)
    settings = dict(integrator="implicit_euler_linear", dt=0.002, t_end=0.1, save_every=5)
    loss = target_loss(calm, **{key: settings[key] for key in ("integrator", "dt", "t_end")})
    _, grads = hooke.gradient(calm, loss, {"drag": "each"}, **settings)
    delta = np.random.default_rng(23).uniform(0.5, 1.5, size=calm.model.n_particles)
    eps = 1e-4
    base, once, twice = (loss(hooke.simulate(dataclasses.replace(calm, model=dataclasses.replace(
        calm.model, drag=step * delta)), **settings)) for step in (0.0, eps, 2 * eps))
    one_sided = (4 * once - twice - 3 * base) / (2 * eps)
    adjoint = float(np.sum(grads["drag"] * delta))
    assert abs(adjoint - one_sided) <= 1e-6 * abs(one_sided), (adjoint, one_sided)
