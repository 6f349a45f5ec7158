"""What the verification matrix runs: per built-in scene its horizon, compared frames and size,
the two configurations (full and quick), and the stated limitations.

Contract:
- :data:`SCENES` has one :class:`SceneCase` per built-in scene (a test checks that a new scene
  gets one): the horizon T, the interval Δ of the compared frames (positions of every particle
  at t = 0, Δ, 2Δ, …, T), the builder parameters when the scene is cloth-sized by default, and
  why the horizon is what it is. Δ is a whole number of the scene's steps and T a whole number
  of Δ; the ladder may move to steps up to ``max_coarsening`` (the largest power of 2 dividing
  Δ/dt) times the scene's dt, so that every ladder step divides Δ.
- :data:`FULL` runs every case with five ladder levels (four halvings); :data:`QUICK`, the
  reduced version the tests run, a few representative cases (1D, 2D cloth-sized, 3D with
  joints, contact) with three levels and short horizons.
- :data:`LIMITATIONS` maps (integrator, scene) to the cause of a cell that does not show its
  integrator's order: a stated limitation, rendered into the README, not a failure of
  ``hooke verify --all``. Every other cell off its order is a bug to fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction


@dataclass(frozen=True)
class SceneCase:
    """One scene of the matrix: horizon [s], compared frames every ``frame_interval`` [s]."""

    scene: str
    horizon: float
    frame_interval: float
    why: str
    parameters: dict = field(default_factory=dict)

    def frame_steps(self, dt: float) -> int:
        """Steps of ``dt`` between compared frames (a whole number, or an error)."""
        ratio = Fraction(self.frame_interval).limit_denominator(10**9) / Fraction(dt).limit_denominator(10**9)
        if ratio.denominator != 1:
            raise ValueError(f"{self.scene}: dt = {dt:g} s does not divide the frame interval "
                             f"{self.frame_interval:g} s")
        return int(ratio)

    @property
    def frames(self) -> int:
        """Compared frames after the start (T / Δ)."""
        count = round(self.horizon / self.frame_interval)
        if abs(count * self.frame_interval - self.horizon) > 1e-9 * self.horizon:
            raise ValueError(f"{self.scene}: the horizon {self.horizon:g} s is not a whole number "
                             f"of frame intervals {self.frame_interval:g} s")
        return count

    def max_coarsening(self, scene_dt: float) -> int:
        """How many doublings of the scene's dt still divide the frame interval."""
        steps = self.frame_steps(scene_dt)
        return (steps & -steps).bit_length() - 1


# Horizons: short enough that the whole matrix stays affordable (the finest of five levels has
# 16× the scene's steps) and the motion well conditioned, long enough to show the scene's
# physics. Frame intervals: 2^k scene steps, so that high-order methods may coarsen their ladder
# (their error at the scene's dt is near round-off; see hooke.verification.matrix).
SCENES: dict[str, SceneCase] = {case.scene: case for case in (
    SceneCase("spring1d", 2.56, 0.16, "1.3 periods of ω = √10"),
    SceneCase("oscillator", 1.6, 0.16, "2.5 periods of ω = 10"),
    SceneCase("chain", 0.96, 0.032, "the spring chain falls through its first half swing"),
    SceneCase("cloth2d", 0.06, 0.02, "the sheet's first sag and its fastest waves, 1200 particles "
              "(the implicit methods' 2400-unknown solves make longer runs costly)"),
    SceneCase("cloth", 0.0256, 0.0064, "the cloth's first sag; n = 20 instead of 100 (400 "
              "particles, 1482 springs), and 128 of its small steps (2e-4 s, tuned for symplectic "
              "Euler): the implicit methods' solves make longer runs costly", {"n": 20}),
    SceneCase("lattice", 0.2, 0.02, "the block's first sag; 6×6×6 instead of 10×10×10 "
              "(216 particles)", {"nx": 6, "ny": 6, "nz": 6}),
    SceneCase("soft3d", 0.1, 0.02, "the push's first 0.1 s: the stiff tet body starts to nod and "
              "sag (ω up to ~10³ rad/s)"),
    SceneCase("pendulum", 1.44, 0.08, "the double pendulum falls from the top; chaotic later"),
    SceneCase("npendulum", 0.96, 0.08, "the 5-pendulum's fall; chaotic later (two references "
              "at rtol 1e-12 and 1e-13 part by 1e-8 m already at 1 s)"),
    SceneCase("top", 1.024, 0.032, "1.6 turns of the spinning top"),
    SceneCase("crane", 2.048, 0.064, "the crane's sway in a steady wind (air drag); 2 s, "
              "10 periods of the load"),
    SceneCase("crane_wind", 2.048, 0.064, "the crane's sway in a gusting wind (air drag towards "
              "a wind that varies in time); 2 s, 10 periods of the load"),
    SceneCase("jointed_chain", 1.4, 0.04, "up to the whip of the free end at ~1.45 s (after it, "
              "two DOP853 runs at rtol 1e-10 and 1e-12 part by 3e-2 m at 1.75 s)"),
    SceneCase("square_drop", 0.5, 0.02, "the fall and first contact (at t = 0.32 s)"),
    SceneCase("square_slope", 0.5, 0.02, "the fall and landing on the slope"),
    SceneCase("square_compress", 0.5, 0.02, "the fall, landing, and the ceiling coming down"),
    SceneCase("square_press", 0.5, 0.02, "the first half of the press (in contact throughout)"),
    SceneCase("cloth_drop", 0.4, 0.02, "the fall and the first edge's landing (near 0.23 s)"),
    SceneCase("cloth_valley", 0.4, 0.02, "the fall and landing on both slopes"),
    SceneCase("soft3d_drop", 0.4, 0.02, "the drop and landing (near 0.2 s)"),
    SceneCase("squares_self_contact", 0.6, 0.02, "the fall, both landings and the upper square "
              "coming to rest on the lower one"),
    SceneCase("chain_pile", 0.32, 0.02, "the fall and the landing of the lowest links (the first "
              "at about 0.25 s); later the folds the chain piles into part at every level"),
    SceneCase("cloth_sphere", 0.4, 0.02, "the fall and landing on the ball (near 0.2 s); 16 × 16 "
              "instead of 40 × 40 (256 particles): the finest level's 640 steps with contact "
              "and self-contact make the full size costly", {"n": 16}),
    SceneCase("cloth_fold", 0.4, 0.02, "the fall, the lower edge's landing (near 0.1 s) and the "
              "first folds; 10 × 10 instead of 20 × 20: self-contact in every step of the finest "
              "level makes the full size costly", {"n": 10}),
    SceneCase("soft3d_pile", 0.4, 0.02, "the fall and the landings of the blocks on the ground and "
              "on each other (from about 0.07 s); 3 × 3 × 3-particle blocks instead of 5 × 5 × 5, "
              "shifted 15 mm each", {"n": 3, "shift": 0.015}),
)}


@dataclass(frozen=True)
class Configuration:
    """A matrix to run: its cases and the number of ladder levels (levels − 1 halvings)."""

    name: str
    cases: tuple[SceneCase, ...]
    levels: int


FULL = Configuration("full", tuple(SCENES.values()), levels=5)
QUICK = Configuration("quick", (
    replace(SCENES["spring1d"], horizon=1.28),
    replace(SCENES["cloth2d"], horizon=0.02),
    replace(SCENES["top"], horizon=0.256),
    replace(SCENES["square_drop"], horizon=0.4),
), levels=3)

# Causes shared by several cells.
BARRIER = ("the impact on the log barrier is not resolved: up to the first contact the differences "
           "between levels halve with dt; after it they stay at millimetres to centimetres at every "
           "level, with a tight Newton tolerance too. The barrier's stiffness "
           "Aκ/(2d̂)·(d̂/d + d̂²/d²) grows as the closest approach d shrinks — ~4e7 N/m on a 40 kg "
           "node of the square at d = 2 mm (ω ≈ 1000 rad/s), ~4e4 N/m on a 10 g cloth particle at "
           "0.4 mm (ω ≈ 2000 rad/s) — so ωh ≥ 0.6 at every level, and implicit Euler damps that "
           "vibration by an amount that depends on h (square_drop with a tight Newton tolerance is "
           "still pre-asymptotic at h = 2e-5 s)")
NEWTON_RULE = ("and at h = 6.25e-4 s the book's Newton rule, which the scene keeps to reproduce the "
               "book's run (‖p‖/h < 1e-2 checked before the first iteration: min_iterations = 0), "
               "takes no iteration from rest in free fall, where ‖p‖/h = g·h < 1e-2 for "
               "h < 1e-3 s: the square never falls (0.8 m apart); with min_iterations = 1, "
               "implicit_euler's default, it does")
FIFTH_ORDER = "no window of five levels shows rk45's fifth order between stability and round-off: "
WHIP = "pre-asymptotic in the free end's whip at the end of the horizon (1.2–1.4 s): local orders "

# (integrator, scene) -> the cause of a cell off its order (see the module docstring).
LIMITATIONS: dict[tuple[str, str], str] = {
    ("implicit_euler", "square_drop"): f"{BARRIER}; {NEWTON_RULE}",
    ("implicit_euler", "square_slope"): f"{BARRIER}; {NEWTON_RULE}",
    ("implicit_euler", "square_compress"): f"{BARRIER}; {NEWTON_RULE}",
    ("implicit_euler", "square_press"): (
        "the square starts 5 mm above the ground, inside the barrier's reach (d̂ = 1 cm), where "
        "the barrier pushes each bottom node up with 21 kN against its 392 N weight: the bounce "
        "that follows is as stiff as an impact (ω ≈ 430 rad/s at d = 5 mm) and not resolved at "
        "any level — differences of 2 to 5 mm from the first frame on, with a tight Newton "
        "tolerance and without friction too"),
    ("implicit_euler", "cloth_drop"): BARRIER,
    ("implicit_euler", "squares_self_contact"): (
        f"{BARRIER}. Here both squares land at 0.3 s, on the ground and on each other (the "
        "barrier between surfaces has the planes' d̂ and κ): with a tight Newton rule (tol = 1e-6, "
        "min_iterations = 1) the levels still differ by 5.4, 4.2, 2.4 and 1.7 cm; with the "
        "scene's book Newton rule (‖p‖/h < 1e-2 before the first iteration) the finest level "
        "(6.25e-4 s) takes no Newton iteration in free fall (g·h < 1e-2), as in the square scenes"),
    ("implicit_euler", "cloth_valley"): BARRIER,
    ("implicit_euler", "chain_pile"): (
        "the landing is not resolved: up to the first contact (over 0.24 s) the differences "
        "between levels halve with dt (order 1.00, 1.2e-3 to 1.5e-4 m from 2 ms); from 0.25 s "
        "on each link lands on the log barrier in an impact as stiff as the square's (see "
        "square_drop) and which side it then folds to is decided by differences that small: the "
        "levels part by 7 to 14 cm within 0.07 s, while the closest approach to the ground "
        "falls from 0.85 mm at 1 ms to 0.02 mm at 62.5 µs"),
    ("implicit_euler", "npendulum"): (
        "implicit_euler's Newton tolerance is an absolute velocity (tol = 1e-2 m/s), and the "
        "pendulum starts upright at 0.01 m/s, an unstable equilibrium: in that slow start a "
        "step stops after its first, linearly implicit, Newton iteration — more of them the "
        "smaller dt — and the instability amplifies the difference to the converged step, so "
        "the error constant changes along the ladder (local orders 1.14, 1.44, 1.45, 1.43); "
        "with tol = 1e-9 the same ladder converges at 1.07 (local orders 1.15, 1.08, 1.04, "
        "1.02)"),
    ("implicit_euler", "cloth_sphere"): (
        f"{BARRIER}. Here the 16 × 16 cloth lands on the ball at 0.24 s: up to then the "
        "differences between levels halve with dt (2.9, 1.3, 0.67, 0.36 mm at 0.24 s); from the "
        "landing on, as the sheet wraps the ball and wrinkles, they stay at 1.5 to 8 cm at every "
        "level (at 0.4 s, from 5 ms down to 0.3125 ms: 7.8, 6.2, 6.1, 2.7 cm), and with a tight "
        "Newton tolerance (tol = 1e-6) too (8.7 and 6.6 cm at 0.4 s for the first two pairs)"),
    ("implicit_euler", "cloth_fold"): (
        f"{BARRIER}. Here the 10 × 10 sheet's lower edge lands on the ground and the sheet "
        "buckles: which way each fold goes, and where its layers meet, follows from differences "
        "between levels that the landing leaves, so they do not fall with dt after it"),
    ("implicit_euler", "soft3d_pile"): (
        f"{BARRIER}. Here each block lands on the ground or on the block below, with friction "
        "between them: every landing is such an impact, and the differences between levels "
        "(the errors column) do not fall with dt"),
    ("rk45", "cloth2d"): FIFTH_ORDER + (
        "at the scene's steps it is superconvergent (local orders 5.9, 5.8, 5.1, 5.4 from 5 ms: "
        "the sheet's stiff damped modes, hω up to 1.4 and hγ 0.8 at 5 ms, are far from the "
        "asymptotic range), at 3e-4 s its error (7e-15 m) is within 10× of round-off, and "
        "coarser steps are unstable"),
    ("rk45", "cloth"): FIFTH_ORDER + (
        "from 8e-4 s (error 2.6e-10 m; coarser steps are pre-asymptotic or unstable) its error "
        "falls by 2^5.7 per halving and reaches round-off (3e-15 m) after three: the cloth "
        "barely moves in 0.0256 s"),
    ("rk45", "soft3d"): FIFTH_ORDER + (
        "the stiff tet body (ω up to ~10³ rad/s) is unstable at 5 ms and at the edge of stability "
        "at 2.5 ms (error 8e-5 m against 6e-7 m at 1.25 ms: a local order of 7); from 1.25 ms "
        "the local orders are 5.4, 5.2, 5.0, down to 1.2e-11 m at 1.6e-4 s, and a fifth level "
        "(~4e-13 m) would be within 10× of round-off (1e-13 of its 1.1 m extent)"),
    ("rk45", "lattice"): FIFTH_ORDER + (
        "the stiff lattice (ω up to ~4e3 rad/s) is unstable at 5 ms and at the edge of "
        "stability at 2.5 ms (error 5e-4 m against 1.5e-8 m at 1.25 ms: a local order of 15); "
        "from 1.25 ms the local orders are 5.5, 5.0, 4.9, and a fifth level would be at "
        "round-off"),
    ("rk4", "jointed_chain"): WHIP + "4.5, 5.0, 4.8, 4.6 from 1 ms to 62.5 µs (over the first "
                                    "1.2 s: 4.06)",
    ("rk45", "jointed_chain"): WHIP + "6.6, 8.2, 7.2 from 1 ms (self-convergence; 6.98 against "
                                     "the reference); over the first 1.2 s: 4.99",
}
