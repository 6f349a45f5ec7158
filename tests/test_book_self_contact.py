"""The squares_self_contact peer (hooke.bench.peers.book_self_contact: the book's self-contact
simulator in the book's Python style) solves hooke's problem: its point–edge distance has the
derivatives it claims, its pair barrier is ipctk's (the energy hooke's engine computes), and its
trajectory agrees with hooke's to round-off, with the same Newton iterations step by step,
through the first contact between the squares (step 26) and the ceiling's (step 67)."""

from __future__ import annotations

import numpy as np
import pytest

import hooke
from hooke.bench.peers import book_self_contact as peer
from hooke.energies import surface_barrier


def central_differences(function, z, h=1e-6):
    return np.array([(function(z + h * e) - function(z - h * e)) / (2 * h)
                     for e in np.eye(z.size)])


@pytest.mark.parametrize("point", [(0.3, 0.2), (-0.4, 0.1), (1.3, -0.2)],
                         ids=["interior", "beyond e0", "beyond e1"])
def test_point_edge_gradient_and_hessian_match_finite_differences(point):
    z = np.array([*point, 0.0, 0.0, 1.0, 0.1])
    d2, grad, hess = peer.point_edge(z[0:2], z[2:4], z[4:6])
    assert d2 == pytest.approx(peer.point_edge(z[0:2], z[2:4], z[4:6])[0])
    value = lambda w: peer.point_edge(w[0:2], w[2:4], w[4:6])[0]
    gradient = lambda w: peer.point_edge(w[0:2], w[2:4], w[4:6])[1]
    assert np.allclose(grad, central_differences(value, z), atol=1e-8)
    assert np.allclose(hess, central_differences(gradient, z), atol=1e-6)


def test_pair_barrier_is_the_energy_hooke_computes():
    """The lower square lifted to 3 mm under the upper one: four point–edge pairs at 3 mm
    (nodes 11 and 14 of the lower square's top under the upper's bottom segments, nodes 3 and 6
    of the upper's bottom over the lower's top segments), every other pair farther than d̂:
    hooke's surface barrier (ipctk) equals the sum of the peer's pair terms (w = ½ · the node's
    share of its boundary) to round-off."""
    scene = hooke.scene("squares_self_contact")
    model, data = scene.model, peer.scene_arrays()
    x = model.x0.copy()
    x[9:, 1] += x[3, 1] - 0.003 - x[14, 1]
    scene_peer = peer.Scene(data)
    terms = []
    for i, a, b in scene_peer.pairs:
        d2 = peer.point_edge(x[i], x[a], x[b])[0]
        if d2 < model.contact_dhat ** 2:
            terms.append((i, np.sqrt(d2), scene_peer.pair_barrier(d2, 0.5 * scene_peer.share[i])[0]))
    assert sorted(i for i, _, _ in terms) == [3, 6, 11, 14]
    assert all(d == pytest.approx(0.003) for _, d, _ in terms)
    assert surface_barrier.value(model, x) == pytest.approx(sum(e for _, _, e in terms), rel=1e-12)


def test_peer_agrees_with_hooke_to_round_off_through_both_contacts():
    steps = 70
    frames, iterations = peer.squares_self_contact(steps)
    scene = hooke.scene("squares_self_contact")
    stepper = hooke.get_integrator(scene.integrator)(hooke.System(scene.model), scene.dt,
                                                     **scene.options)
    state, mine, counts = scene.state, [scene.state.x], []
    for _ in range(steps):
        before = stepper.stats["newton_iterations"]
        state = stepper.step(state)
        mine.append(state.x)
        counts.append(stepper.stats["newton_iterations"] - before)
    assert np.array_equal(iterations, counts)
    assert np.abs(frames - np.array(mine)).max() < 1e-12
    # the run went through both contacts: the squares within d̂, the ceiling pressing down
    assert surface_barrier.min_distance(scene.model, mine[-1]) < scene.model.contact_dhat
    assert np.max(iterations) > 1
