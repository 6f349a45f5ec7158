"""W1 and W2: the ``cloth`` scene stepped by symplectic Euler, hooke against its peers.

The cloth: n × n particles, structural and shear springs, k = 100, m = 1e-4, dt = 2e-4, two
corners pinned, no damping, float64 (Newton: float32). W1 is 100 × 100 (39,402 springs), W2
1000 × 1000 (3,994,002 springs; Newton's Python ModelBuilder needs minutes for its 4 million
``add_spring`` calls: not run there).

Contract: every round measures hooke on one thread and on all of Numba's threads, then each
installed peer (``--peers``), each in its own long-lived process (:mod:`.peers.process`), in that
order, ``rounds`` times: A B C A B C … Each measurement is the median of ``repeats`` runs of
``steps`` steps after a warm-up. Before any timing, hooke and every peer run the same
``CHECK_STEPS`` steps from the scene's start; a peer's ratio (the median over the rounds of
hooke's best rate in a round over the peer's in the same round) is quoted only when its positions
then agree with hooke's to round-off (:func:`~hooke.bench.measure.agreement`: 1e-8 of the motion
in float64, 1e-4 and the positions' own rounding for a float32 peer), else its row says by how
much they differ. The data: per
name the rates of the rounds and their median, the agreement, and the bandwidth bound of the
fused step (bytes it must move per step against the machine's copy bandwidth).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from ..result import finite_or_none
from . import peers as peer_modules
from .measure import Options, agreement, fmt, median_time, table
from .peers.process import PeerProcess

CHECK_STEPS = 100
# The issue's own figures (steps/s on a machine like ours), printed beside the rates.
REFERENCE = {"W1": {"taichi": 1794, "warp": 1345, "newton": 1107}, "W2": {"warp": 4.4e7 / 3_994_002}}


def cloth_system(n: int):
    from ..io.scene_file import builtin_scene
    from ..system import System

    scene = builtin_scene("cloth", n=n)
    return scene, System(scene.model)


def symplectic_euler_rate(system, dt: float, steps: int, repeats: int) -> float:
    """Steps/s of symplectic Euler (the integrator's own step) on ``system`` from its model's
    initial state, each timed run continuing from where the previous one stopped."""
    from ..integrators import get

    stepper = get("symplectic_euler")(system, dt)
    state = [system.model.initial_state()]

    def run():
        s = state[0]
        for _ in range(steps):
            s = stepper.step(s)
        state[0] = s

    return steps / median_time(run, repeats)


def hooke_positions(n: int, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """(x after ``steps`` symplectic Euler steps from the start, x at the start), (n², 3)."""
    from ..integrators import get

    scene, system = cloth_system(n)
    stepper = get("symplectic_euler")(system, scene.dt)
    state = scene.state
    for _ in range(steps):
        state = stepper.step(state)
    return state.x, scene.state.x


def bandwidth_bound(system, bandwidth: float) -> tuple[float, float]:
    """(bytes moved per spring per step, steps/s at the copy bandwidth) of the fused step
    (:meth:`hooke.kernels.SpringGather.bytes_per_step`)."""
    moved = system.gather.bytes_per_step(system.model.x0.nbytes)
    return moved / system.model.n_springs, bandwidth / moved


def start_peers(names, n: int, steps: int) -> dict[str, dict]:
    """Each peer's process, started and checked: its CHECK_STEPS positions against hooke's."""
    mine, start = hooke_positions(n, steps)
    started = {}
    for name in names:
        module = peer_modules.module(name)
        entry = {"process": None, "status": peer_modules.status(name),
                 "version": peer_modules.version(name), "precision": module.PRECISION,
                 "agrees": None, "difference_m": None}
        started[name] = entry
        if entry["status"] != "installed":
            print(f"  {module.NAME}: not installed (pip install hooke[bench])")
            continue
        process = entry["process"] = PeerProcess(name, n)
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "x.npy"
            answer = process.request(check=steps, path=str(path))
            if "error" in answer:
                entry["status"] = f"failed: {answer['error']}"
                print(f"  {module.NAME}: {entry['status']}")
                continue
            theirs = np.load(path)
        agrees, difference = agreement(mine, theirs, start, module.PRECISION)
        entry.update(agrees=agrees, difference_m=difference)
        print(f"  {module.NAME} {entry['version']} ({module.PRECISION}): after {steps} steps the "
              f"positions differ from hooke's by {difference:.2e} m "
              f"({'round-off: agrees' if agrees else 'MORE than round-off: no ratio quoted'})")
    return started


def workload(label: str, n: int, steps: int, options: Options, bandwidth: float) -> dict:
    """One of W1/W2 (module docstring)."""
    import numba

    repeats, rounds = options.repeat(5), options.round(3)
    names = [name for name in peer_modules.CLOTH_PEERS
             if options.peers and not (label == "W2" and name == "newton")]
    check_steps = 10 if options.smoke else CHECK_STEPS
    peers = start_peers(names, n, check_steps)
    threads = numba.get_num_threads()
    counts = sorted({1, threads})
    rates: dict[str, list[float]] = {}
    try:
        for _ in range(rounds):
            for count in counts:
                numba.set_num_threads(count)
                scene, system = cloth_system(n)
                rate = symplectic_euler_rate(system, scene.dt, steps, repeats)
                rates.setdefault(f"hooke ({count} thread{'s' if count > 1 else ''})", []).append(rate)
            numba.set_num_threads(threads)
            for name, entry in peers.items():
                if entry["process"] is not None and entry["process"].error is None:
                    answer = entry["process"].request(time=steps, repeats=repeats)
                    rates.setdefault(name, []).append(steps / answer["seconds"]
                                                      if "seconds" in answer else float("nan"))
    finally:
        numba.set_num_threads(threads)
        for entry in peers.values():
            if entry["process"] is not None:
                if entry["process"].error and not entry["status"].startswith("failed"):
                    entry["status"] = f"failed: {entry['process'].error}"
                entry["process"].close()
    return report(label, system, steps, repeats, rounds, rates, peers, bandwidth)


def report(label, system, steps, repeats, rounds, rates, peers, bandwidth) -> dict:
    """Print W1/W2's table and return its data."""
    n = int(round(np.sqrt(system.model.n_particles)))
    springs = system.model.n_springs
    hooke_best = np.max([values for name, values in rates.items() if name.startswith("hooke")],
                        axis=0)
    rows = []
    for name, values in rates.items():
        row = {"name": name, "steps_per_s": finite_or_none(np.median(values)),
               "rounds": [finite_or_none(value) for value in values], "hooke_over_peer": None}
        if name in peers:
            entry = peers[name]
            row.update(precision=entry["precision"], agrees=entry["agrees"],
                       difference_m=entry["difference_m"])
            if entry["agrees"]:
                row["hooke_over_peer"] = finite_or_none(np.median(hooke_best / np.array(values)))
        rows.append(row)
    for name, entry in peers.items():
        if name not in rates:
            rows.append({"name": name, "steps_per_s": None, "rounds": [], "hooke_over_peer": None,
                         "status": entry["status"]})
    per_spring, bound = bandwidth_bound(system, bandwidth)
    printed = [[row["name"], fmt(row["steps_per_s"]),
                fmt(None if row["steps_per_s"] is None else row["steps_per_s"] * springs),
                fmt(row["hooke_over_peer"]) if row["steps_per_s"] is not None
                else row.get("status", ""), fmt(REFERENCE.get(label, {}).get(row["name"]))]
               for row in rows]
    printed.append(["bandwidth bound", fmt(bound), f"{bound * springs:.3g}",
                    f"{per_spring:.1f} B/spring", ""])
    table(f"{label}: cloth {n} x {n}, {springs:,} springs, symplectic Euler (medians of {rounds} "
          "rounds)", ["", "steps/s", "springs*steps/s", "hooke/peer", "issue's figure"], printed)
    return {"rows": rows, "n": n, "springs": springs, "steps": steps, "repeats": repeats,
            "rounds": rounds, "check_steps": CHECK_STEPS,
            "peer_versions": {name: entry["version"] for name, entry in peers.items()
                              if entry["version"]},
            "bandwidth_GB_per_s": bandwidth / 1e9,
            "bytes_per_spring": per_spring, "bound_steps_per_s": bound}


def w1(options: Options, bandwidth: float) -> dict:
    return workload("W1", 20 if options.smoke else 100, 20 if options.smoke else 2000, options,
                    bandwidth)


def w2(options: Options, bandwidth: float) -> dict:
    return workload("W2", 60 if options.smoke else 1000, 3 if options.smoke else 20, options,
                    bandwidth)
