"""Masses an implicit step cannot resolve (issue 15): a cloth of 1e-202 kg per particle silently
stopped falling under implicit Euler (4e-9 m instead of ½gt² = 5e-4 m in 0.01 s), since its
mass was lost to round-off in M + h²K. Every integrator whose step solves with that matrix now
refuses it up front, naming the particle's mass, the bound and the dt that would resolve it;
no registered integrator gives a silently wrong fall."""

from __future__ import annotations

import numpy as np
import pytest

import hooke
from hooke.integrators import get as get_integrator
from hooke.integrators.resolution import EPS, MASS_DIGITS
from hooke.simulate import plan

from conftest import INTEGRATORS, run_main

DT, T_END, N = 2e-4, 0.004, 4
FREE_FALL = 0.5 * 9.81 * T_END ** 2  # the cloth's first moments: every free particle falls at g
REFUSING = [name for name in INTEGRATORS if get_integrator(name).stiffness_in_step_matrix]


def cloth(mass: float) -> hooke.Scene:
    return hooke.scene("cloth", n=N, mass=mass, stiffness=100.0)


def mean_drop(result) -> float:
    """How far the free particles fell on average [m] (implicit Euler lags ½gt² by a step)."""
    free = np.ones(N * N, dtype=bool)
    free[[0, N - 1]] = False  # the cloth hangs from these two corners
    return float(result.x[0][free, 1].mean() - result.x[-1][free, 1].mean())


def test_the_implicit_steps_are_the_ones_that_refuse():
    assert set(REFUSING) == {"implicit_euler_linear", "implicit_euler", "fast_mass_spring",
                             "newmark", "generalized_alpha"}


@pytest.mark.parametrize("name", REFUSING)
def test_a_mass_lost_to_round_off_is_refused_with_its_bound(name):
    with pytest.raises(hooke.HookeInputError) as info:
        hooke.simulate(cloth(1e-202), integrator=name, dt=DT, t_end=T_END)
    message = str(info.value)
    assert "\n" not in message and message.endswith(", got 1e-202"), message
    # An interior particle of the 4 × 4 cloth has 8 springs of 100 N/m: Σk = 800 N/m.
    bound = MASS_DIGITS * EPS * DT ** 2 * 800.0
    assert message.startswith("particles[5].mass: is lost to round-off"), message
    assert f"= {bound:.3g} kg at dt = 0.0002 s (Σk = 800 N/m" in message, message
    dt_max = np.sqrt(1e-202 / (MASS_DIGITS * EPS * 800.0))
    assert f"take dt <= {dt_max:.3g} s" in message


@pytest.mark.parametrize("name", REFUSING)
def test_the_bound_is_sharp_and_a_resolved_mass_falls(name):
    bound = MASS_DIGITS * EPS * DT ** 2 * 800.0
    with pytest.raises(hooke.HookeInputError, match=r"particles\[\d+\]\.mass"):
        plan(cloth(0.99 * bound), integrator=name, dt=DT, t_end=T_END)
    if name == "fast_mass_spring":  # its iterations need far more (tests/test_fast_methods.py)
        with pytest.raises(hooke.HookeInputError, match="is too light for fast_mass_spring's"):
            plan(cloth(1.01 * bound), integrator=name, dt=DT, t_end=T_END)
    else:
        plan(cloth(1.01 * bound), integrator=name, dt=DT, t_end=T_END)
    result = hooke.simulate(cloth(1e-4), integrator=name, dt=DT, t_end=T_END)
    assert mean_drop(result) == pytest.approx(FREE_FALL, rel=0.1)


@pytest.mark.parametrize("name", INTEGRATORS)
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # explicit steps overflow on the way to inf
def test_no_integrator_gives_a_silently_wrong_fall_of_a_tiny_mass(name):
    """At 1e-202 kg per particle each integrator refuses the model, stops with an error, or
    makes the cloth fall as it must (xpbd's constraints see the masses only through ratios);
    rk45's steps shrank to 1e-13 s and it ran for hours, it now stops once its pace shows it."""
    try:
        result = hooke.simulate(cloth(1e-202), integrator=name, dt=DT, t_end=T_END)
    except (hooke.HookeInputError, hooke.SimulationError):
        return
    assert mean_drop(result) == pytest.approx(FREE_FALL, rel=0.1), name


def test_hooke_check_refuses_the_scene_file(tmp_path, monkeypatch, capsys):
    scene = tmp_path / "tiny.toml"
    scene.write_text('builder = "cloth"\n[parameters]\nn = 4\nsize = 1.0\nheight = 1.0\n'
                     'mass = 1e-202\nstiffness = 100.0\ndamping = 0.0\n'
                     'gravity = [0.0, -9.81, 0.0]\n'
                     '[run]\nintegrator = "implicit_euler"\ndt = 2e-4\nt_end = 0.004\n',
                     encoding="utf-8")
    code, lines = run_main(monkeypatch, capsys, "check", str(scene))
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("error: particles[5].mass: is lost to round-off"), lines


def test_rk45_stops_once_its_steps_cannot_reach_t_end_within_the_bound():
    with pytest.raises(hooke.SimulationError) as info:
        hooke.simulate(cloth(1e-202), integrator="rk45", dt=DT, t_end=T_END)
    assert "rk45: its steps have shrunk to" in str(info.value)
    assert "more than the 1e+08 a run may have" in str(info.value)


# -- contact barriers and joints -------------------------------------------------------------------

INCLINE = np.radians(30.0)
NORMAL = np.array([-np.sin(INCLINE), np.cos(INCLINE)])  # a 30° incline through the origin
BARRIER = 1.0 * 1e5 / 0.01  # A·κ/d̂ [N/m]: the least stiffness the barrier has while active


def bead_on_incline(mass: float, start: float = 0.005, sphere: bool = False) -> hooke.Scene:
    """One particle without springs, `start` m off a plane (or a sphere's surface) within its
    barrier's reach d̂ = 0.01 m (A = 1, κ = 1e5), sliding under gravity, h = 0.01 s."""
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    if sphere:
        b.add_sphere((0.0, -1.0), 1.0)
        b.add_particle((0.0, start), mass=mass)
    else:
        b.add_plane(NORMAL, (0.0, 0.0))
        b.add_particle(tuple(start * NORMAL), mass=mass)
    b.set_contact(dhat=0.01, kappa=1e5, area=1.0)
    return hooke.Scene(b.finalize(), dt=0.01, t_end=0.1)


def test_the_contact_barrier_counts_towards_the_bound():
    """Issue 15: a 1e-13 kg bead resting on an incline within the barrier's reach jumped 2.2 cm
    off it under implicit Euler (a bead that light sits at d ≈ d̂: its inertia is nothing against
    the barrier), lighter ones failed Newton with "try a smaller dt", though it has no springs
    for the bound to see. The barrier adds at least A·κ/d̂ = 1e7 N/m while active (b''(d̂),
    more nearer the plane); a contact particle's bound counts it."""
    bound = MASS_DIGITS * EPS * 0.01 ** 2 * BARRIER
    for sphere in (False, True):
        with pytest.raises(hooke.HookeInputError) as info:
            hooke.simulate(bead_on_incline(1e-13, sphere=sphere), integrator="implicit_euler")
        assert str(info.value).startswith(
            f"particles[0].mass: is lost to round-off in implicit_euler's step matrix M + dt²·K: "
            f"it must be at least 1000·ε·dt²·Σk = {bound:.3g} kg at dt = 0.01 s (Σk = 1e+07 N/m "
            "over its springs and the contact barrier's A·κ/d̂ = 1e+07 N/m); take dt <= "), info.value
        assert str(info.value).endswith(" s or larger masses, got 1e-13")  # only it has contact
        with pytest.raises(hooke.HookeInputError, match=r"particles\[0\]\.mass"):
            plan(bead_on_incline(0.99 * bound, sphere=sphere), integrator="implicit_euler")
        plan(bead_on_incline(1.01 * bound, sphere=sphere), integrator="implicit_euler")
    # resolved, it rests on the barrier's edge (overdamped: ωh = 1e3) and slides down
    result = hooke.simulate(bead_on_incline(1e-6), integrator="implicit_euler")
    distance = result.x[:, 0] @ NORMAL
    assert np.all(distance[1:] > 0.0099) and np.all(distance[1:] < 0.01)
    assert (result.x[-1, 0] - result.x[0, 0]) @ np.array([np.cos(INCLINE), np.sin(INCLINE)]) \
        == pytest.approx(-0.02698, rel=1e-3)  # implicit Euler's lag of ½ g sin 30° t² = 0.0245 m


def test_joints_add_no_stiffness_to_the_bound():
    """Joints are exact constraints in every integrator that solves with M + h²K (a KKT or
    saddle-point matrix with their multipliers): a light bob on a joint is no stiffer to that
    matrix than on nothing, and is not refused by any of them."""
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    b.add_particle((0.0, 0.0), pinned=True)
    b.add_particle((1.0, 0.0), mass=1e-9)
    b.add_joint(0, 1)
    scene = hooke.Scene(b.finalize(), dt=0.01, t_end=0.1)
    for name in REFUSING:
        if get_integrator(name).supports_joints:
            result = hooke.simulate(scene, integrator=name)
            # it swings as a pendulum on its joint, whatever its mass
            assert np.linalg.norm(result.x[-1, 1]) == pytest.approx(1.0, abs=1e-6), name
            assert result.x[-1, 1, 1] < -0.01, name


@pytest.mark.parametrize("contact", [dict(dhat=1e-320), dict(kappa=1e308, dhat=1e-3),
                                     dict(area=1e308, dhat=1e-3)])
def test_a_barrier_stiffness_past_the_largest_float_is_named_by_the_contact_settings(
        contact, recwarn):
    """Issue 15 (confirmation pass, stop 28): a scene file's [contact] dhat = 1e-320 (or a
    kappa or area so large that A·κ/d̂ overflows) printed NumPy's 'overflow encountered in
    divide' and was refused as 'particles[1].mass: … at least … = inf kg …; take dt <= 0 s or
    larger masses', advice no dt or mass can follow; the contact settings are the fault."""
    b = hooke.ModelBuilder(dim=2, gravity=(0.0, -9.81))
    b.add_particle((0.0, 1.0))
    b.add_plane((0.0, 1.0), (0.0, 0.0))
    b.set_contact(**{"area": 0.25, **contact})
    scene = hooke.Scene(b.finalize(), integrator="implicit_euler", dt=0.01, t_end=0.05)
    with pytest.raises(hooke.HookeInputError) as info:
        hooke.simulate(scene)
    area, kappa, dhat = contact.get("area", 0.25), contact.get("kappa", 1e5), contact["dhat"]
    assert str(info.value) == (
        "contact: the barrier's least stiffness A·κ/d̂ on particle 0 is past the largest float: "
        f"give a larger dhat, or a smaller kappa or area, got {{'dhat': {dhat!r}, 'kappa': {float(kappa)!r}, 'area': {float(area)!r}}}")
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_spring_stiffnesses_summing_past_the_largest_float_are_named_by_the_springs():
    """Issue 15 (confirmation pass, stop 28): two springs of 1e308 N/m at one particle were
    refused under implicit_euler as 'particles[1].mass: … at least … = inf kg … (Σk = inf
    N/m over its springs); take dt <= 0 s, larger masses, …', advice no dt or mass can follow."""
    b = hooke.ModelBuilder(dim=1)
    b.add_particle([0.0], pinned=True)
    b.add_particle([1.0])
    b.add_particle([2.0], pinned=True)
    b.add_spring(0, 1, stiffness=1e308)
    b.add_spring(1, 2, stiffness=1e308)
    scene = hooke.Scene(b.finalize(), integrator="implicit_euler", dt=0.01, t_end=0.05)
    with pytest.raises(hooke.HookeInputError) as info:
        hooke.simulate(scene)
    assert str(info.value) == (
        "springs: the stiffnesses of the springs at particle 1 sum past the largest float "
        "(Σk = inf N/m): give smaller stiffnesses, got [1e+308, 1e+308]")
