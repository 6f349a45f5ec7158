"""hooke.contact_matrix: the Newton matrix of springs and changing contact pairs on one growing
block pattern equals the generic term-by-term assembly to round-off (with and without the PSD
projection, in 2D and 3D, with planes, a sphere, friction and self-contact), keeps its pattern
(the solver's analysis) while the pairs stay within it, and grows when a new pair appears."""

from __future__ import annotations

import numpy as np
import pytest

import hooke
from hooke.energies import surface_barrier
from hooke.system import System


def in_contact(name: str, steps: int | None = None, **parameters):
    """A scene's system, the first state (of at most 400 implicit steps) where a pair of its
    surfaces is within d̂ (or the state after ``steps`` steps), and the step terms there."""
    scene = hooke.scene(name, **parameters)
    system = System(scene.model)
    stepper = hooke.get_integrator(scene.integrator)(system, scene.dt, **scene.options)
    state = scene.state
    for k in range(400):
        state = stepper.step(state)
        if (k + 1 == steps or steps is None and surface_barrier.min_distance(
                scene.model, state.x) < scene.model.contact_dhat):
            return scene, system, state, system.step_terms(state, scene.dt)
    raise AssertionError(f"{name}: no contact between surfaces in 400 steps")


@pytest.mark.parametrize("name, parameters", [
    ("squares_self_contact", {}),  # the upper square landing on the lower, on the ground
    ("cloth_sphere", {"n": 12, "steps": 60}),  # on the ball and the ground, both with friction
    ("cloth_fold", {}),  # folding onto itself
    ("soft3d_pile", {}),  # blocks on blocks, surface friction
])
def test_contact_matrix_equals_the_generic_assembly(name, parameters):
    scene, system, state, terms = in_contact(name, **parameters)
    assert system._contact_blocks_fit(terms)
    h = scene.dt
    for project in (False, True):
        fast = system.combined_matrix(state.x, 1.0, h * h, h, project, terms)
        generic = system.generic_combined_matrix(state.x, 1.0, h * h, h, project, terms)
        scale = abs(generic).max()
        assert abs(fast - generic).max() <= 1e-14 * scale
    damping = system.combined_matrix(state.x, 0.0, 0.0, 1.0)
    generic = system.generic_combined_matrix(state.x, 0.0, 0.0, 1.0)
    assert abs(damping - generic).max() <= 1e-14 * max(abs(generic).max(), 1.0)


def test_pattern_is_kept_while_the_pairs_stay_and_grows_for_a_new_pair():
    scene, system, state, terms = in_contact("squares_self_contact")
    h = scene.dt
    first = system.combined_matrix(state.x, 1.0, h * h, h, True, terms)
    contact = system._contact_matrix
    growths = contact.growths
    again = system.combined_matrix(state.x + 1e-6, 1.0, h * h, h, True, terms)
    assert again.indptr is first.indptr and contact.growths == growths  # the same analysis
    # lift the lower square (particles 9–17) apart: its pairs leave, their blocks stay (zeros)
    apart = state.x.copy()
    apart[9:, 1] -= 0.1
    apart[:9, 1] += 0.05
    kept = system.combined_matrix(apart, 1.0, h * h, h, True, system.terms)
    assert kept.indptr is first.indptr and contact.growths == growths
    # the upper square's corner 6 against the lower's top node 17's segments: a new pair
    moved = state.x.copy()
    moved[9:, 0] += 0.3
    dist = np.linalg.norm(moved[9:] - moved[6], axis=1)
    assert dist.min() > scene.model.contact_dhat  # no contact yet: move closer
    shift = moved[9 + np.argmin(dist)] - moved[6]
    moved[9:] -= shift * (1 - 0.5 * scene.model.contact_dhat / np.linalg.norm(shift))
    grown = system.combined_matrix(moved, 1.0, h * h, h, True, system.terms)
    assert contact.growths == growths + 1 and grown.nnz > first.nnz
    generic = system.generic_combined_matrix(moved, 1.0, h * h, h, True, system.terms)
    assert abs(grown - generic).max() <= 1e-14 * abs(generic).max()
