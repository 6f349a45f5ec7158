"""``gradient``: what ``hooke.gradient`` costs against the forward run it differentiates (issue 18
§4: at most 3×), against central finite differences (2P forward runs for P parameters) and, on
the cloth with symplectic Euler, against Warp's tape (:mod:`.peers.warp_tape`, ``--peers``).

Contract: every case (:data:`CASES`; the scene as shipped, its integrator and options, a dt at
which the run is stable, and P = 2 shared factors) differentiates the final-position loss ½ Σ_i
|x_i(t_end) − target_i|², the target being the end of a run with the stiffness 5% higher. Each
round times in turn (A B C …, ``rounds`` rounds after a warm-up): the forward run
(``hooke.simulate`` with the same arguments), ``hooke.gradient`` as it is by default (every state
kept while they fit in ``tape_memory``: nothing computed twice), ``hooke.gradient`` with about
√steps checkpoints (each state between them computed twice), the central differences (2P
forward runs) and, where Warp is installed and ``--peers`` asked, Warp's forward run and its
tape's gradient. Ratios are medians over the rounds of the ratios within a round. Before any
ratio: the central differences' gradient must agree with hooke's (to ``FD_AGREEMENT``, the
truncation error of the stencil), and Warp's trajectory (:func:`~hooke.bench.measure.agreement`)
and gradient (to ``PEER_AGREEMENT`` relative) with hooke's; otherwise the row says by how much
they differ and no ratio is quoted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..result import finite_or_none
from . import peers as peer_modules
from .measure import Options, agreement, fmt, interleaved, ratio, table

GOAL = 3.0  # issue 18 §4: a gradient costs at most 3× the forward run
TARGET_STIFFNESS = 1.05  # the target run's stiffness factor
FD_STEP = 1e-5  # the central differences' relative step in each factor
FD_AGREEMENT = 1e-4  # relative: their truncation and round-off error, far above the adjoint's
PEER_AGREEMENT = 1e-8  # relative: Warp's gradient of the same float64 scheme, to round-off


@dataclass(frozen=True)
class Case:
    label: str
    scene: str
    integrator: str
    dt: float
    t_end: float
    params: tuple[str, ...]
    options: dict = field(default_factory=dict)
    smoke_parameters: dict = field(default_factory=dict)  # the scene's parameters in a smoke run
    warp: bool = False  # Warp's tape runs it too


# cloth2d at dt = 0.0025 under symplectic Euler: its reference dt 0.005 sits at the edge of the
# method's stability region (scenes/cloth2d.toml), where gradients grow without bound.
CASES = (
    Case("cloth2d symplectic_euler", "cloth2d", "symplectic_euler", 0.0025, 1.0,
         ("stiffness", "damping"), smoke_parameters={"nx": 8, "ny": 6}, warp=True),
    Case("cloth2d implicit_euler_linear", "cloth2d", "implicit_euler_linear", 0.005, 0.5,
         ("stiffness", "damping"), smoke_parameters={"nx": 8, "ny": 6}),
    Case("soft3d implicit_euler_linear", "soft3d", "implicit_euler_linear", 0.005, 0.5,
         ("stiffness", "mass"), options={"solver": "cg"}),
)
SMOKE_STEPS = 5


def scene_of(case: Case, smoke: bool):
    from ..io.scene_file import builtin_scene

    return builtin_scene(case.scene, **(case.smoke_parameters if smoke else {}))


def finite_differences(run, scene, loss, params) -> dict[str, float]:
    """dL/dα of each shared factor α by central differences: 2 forward runs per parameter."""
    from ..adjoint.params import with_values

    out = {}
    for name in params:
        values = [loss(run(with_values(scene, {name: 1.0 + sign * FD_STEP})))
                  for sign in (1.0, -1.0)]
        out[name] = (values[0] - values[1]) / (2.0 * FD_STEP)
    return out


def relative_difference(mine: dict, theirs: dict) -> float:
    return max(abs(mine[name] - theirs[name]) / max(abs(mine[name]), 1e-300) for name in mine)


def measure_case(case: Case, options: Options) -> dict:
    from .. import losses
    from ..adjoint import gradient
    from ..adjoint.params import with_values
    from ..simulate import simulate

    scene = scene_of(case, options.smoke)
    t_end = SMOKE_STEPS * case.dt if options.smoke else case.t_end
    steps = int(round(t_end / case.dt))
    arguments = dict(integrator=case.integrator, dt=case.dt, t_end=t_end, save_every=steps,
                     **case.options)
    target = simulate(with_values(scene, {"stiffness": TARGET_STIFFNESS}), **arguments).x[-1]
    loss = losses.final_position(target)
    shared = {name: "shared" for name in case.params}
    sqrt_checkpoints = math.isqrt(steps - 1) + 1
    outputs = {}

    def forward(on=scene):
        return simulate(on, **arguments)

    def hooke_gradient(key, **more):
        def run():
            outputs[key] = gradient(scene, loss, shared, **arguments, **more)
        return run

    def central():
        outputs["fd"] = finite_differences(forward, scene, loss, case.params)

    contenders = {"forward run": forward, "hooke.gradient": hooke_gradient("default"),
                  f"hooke.gradient, {sqrt_checkpoints} checkpoints": hooke_gradient(
                      "checkpointed", checkpoints=sqrt_checkpoints),
                  f"central differences ({2 * len(case.params)} runs)": central}
    warp = start_warp(case, options, scene, steps, target, forward().x[-1]) if case.warp else None
    if warp is not None and warp["tape"] is not None:
        contenders["Warp forward run"] = warp["tape"].forward

        def warp_gradient():
            outputs["warp"] = warp["tape"].gradient()
        contenders["Warp tape gradient"] = warp_gradient
    times = interleaved(contenders, options.round(5))
    value, mine = outputs["default"]
    fd_difference = relative_difference(mine, outputs["fd"])
    rows = []
    for name, seconds in times.items():
        row = {"name": name, "seconds": finite_or_none(float(np.median(seconds))),
               "rounds": [finite_or_none(t) for t in seconds], "over_forward": None}
        if not name.startswith("Warp") and (not name.startswith("central")
                                            or fd_difference <= FD_AGREEMENT):
            row["over_forward"] = finite_or_none(ratio(seconds, times["forward run"]))
        rows.append(row)
    data = {"case": case.label, "scene": case.scene, "integrator": case.integrator,
            "dt": case.dt, "t_end": t_end, "steps": steps, "params": list(case.params),
            "particles": scene.model.n_particles, "springs": scene.model.n_springs,
            "options": case.options, "loss": value, "gradient": mine,
            "checkpointed_equal": outputs["checkpointed"][1] == mine,
            "sqrt_checkpoints": sqrt_checkpoints, "fd_gradient": outputs["fd"],
            "fd_relative_difference": fd_difference, "fd_agrees": fd_difference <= FD_AGREEMENT,
            "rows": rows, "gradient_over_forward": rows[1]["over_forward"],
            "checkpointed_over_forward": rows[2]["over_forward"]}
    if warp is not None:
        data["warp"] = warp_summary(warp, outputs.get("warp"), mine, times)
    return data


def start_warp(case, options, scene, steps, target, mine_x) -> dict:
    """Warp's tape on the case, its trajectory checked against hooke's; {"status", "version",
    "tape" (None unless it runs), "agrees", "difference_m"}."""
    from .peers import warp_tape

    entry = {"status": "not asked (--peers)", "version": None, "tape": None}
    if not options.peers:
        return entry
    entry.update(status=peer_modules.status("warp_tape"),
                 version=peer_modules.version("warp_tape"))
    if entry["status"] != "installed":
        print(f"  {warp_tape.NAME}: not installed (pip install hooke[bench])")
        return entry
    tape = warp_tape.ClothTape(scene.model, case.dt, steps, target)
    agrees, difference = agreement(mine_x, tape.forward(), scene.state.x, warp_tape.PRECISION)
    entry.update(agrees=agrees, difference_m=difference, tape=tape)
    print(f"  {warp_tape.NAME} {entry['version']}: after {steps} steps the positions differ from "
          f"hooke's by {difference:.2e} m "
          f"({'round-off: agrees' if agrees else 'MORE than round-off'})")
    return entry


def warp_summary(warp: dict, theirs, mine: dict, times: dict) -> dict:
    """Warp's row data: its gradient against hooke's, and hooke's speed over it when both agree."""
    out = {"status": warp["status"], "version": warp["version"],
           "trajectory_agrees": warp.get("agrees"), "difference_m": warp.get("difference_m"),
           "gradient": None, "gradient_relative_difference": None, "agrees": False,
           "hooke_over_warp": None, "warp_gradient_over_forward": None}
    if theirs is None:
        return out
    _, by_k, by_c = theirs
    out["gradient"] = {"stiffness": by_k, "damping": by_c}
    difference = relative_difference(mine, out["gradient"])
    out["gradient_relative_difference"] = difference
    out["agrees"] = bool(warp["agrees"]) and difference <= PEER_AGREEMENT
    out["warp_gradient_over_forward"] = finite_or_none(
        ratio(times["Warp tape gradient"], times["Warp forward run"]))
    if out["agrees"]:
        out["hooke_over_warp"] = finite_or_none(ratio(times["Warp tape gradient"],
                                                      times["hooke.gradient"]))
    return out


def print_case(data: dict) -> None:
    printed = [[row["name"], fmt(None if row["seconds"] is None else row["seconds"] * 1e3),
                fmt(row["over_forward"])] for row in data["rows"]]
    warp = data.get("warp")
    if warp is not None and warp["gradient"] is not None:
        printed[-1][2] = (f"{fmt(warp['warp_gradient_over_forward'])} of Warp's forward; hooke "
                          + ((f"{fmt(warp['hooke_over_warp'])}x faster" if warp["hooke_over_warp"] >= 1
                              else f"{fmt(1 / warp['hooke_over_warp'])}x slower") if warp["agrees"] else
                             f"DIFFERS by {warp['gradient_relative_difference']:.1e}: no ratio"))
    table(f"{data['case']}: {data['particles']} particles, {data['springs']} springs, dt "
          f"{data['dt']:g}, {data['steps']} steps, P = {len(data['params'])} "
          f"({', '.join(data['params'])})", ["", "ms", "/ forward run"], printed)
    verdict = "met" if (data["gradient_over_forward"] or math.inf) <= GOAL else "NOT met"
    print(f"  gradient / forward run {fmt(data['gradient_over_forward'])} (goal <= {GOAL:g}: "
          f"{verdict}); central differences agree to {data['fd_relative_difference']:.1e} "
          f"relative; checkpointed sweep "
          f"{'bit-identical' if data['checkpointed_equal'] else 'DIFFERS'}")
    if warp is not None and warp["gradient"] is None and warp["status"] != "installed":
        print(f"  Warp tape: {warp['status']}")


def gradient(options: Options, bandwidth: float = 0.0) -> dict:
    """The workload (module docstring): one row per case."""
    rows = []
    for case in CASES:
        data = measure_case(case, options)
        print_case(data)
        rows.append(data)
    return {"rows": rows, "rounds": options.round(5), "goal": GOAL}
