"""hooke's speed benchmark: workloads W1–W5 of issue 5, with peers side by side.

    .venv/bin/python benchmarks/bench.py                 # everything, peers when installed
    .venv/bin/python benchmarks/bench.py W1 W3 --repeats 7
    .venv/bin/python benchmarks/bench.py --smoke         # a few steps of small sizes, no peers
    .venv/bin/python benchmarks/bench.py --no-peers
    .venv/bin/python benchmarks/bench.py --data docs/data   # also write docs/data/bench_W1.json …

Workloads (the cloth is the ``cloth`` scene: n × n particles, structural + shear springs,
k = 100, m = 1e-4, dt = 2e-4, two corners pinned):
- W1: cloth 100 × 100 (39,402 springs), symplectic Euler: steps/s and springs·steps/s, hooke and
  the peers (Taichi CPU, Warp CPU, Newton's SolverSemiImplicit; ``pip install -e .[bench]``),
  ratio hooke/peer; the bandwidth bound.
- W2: the same at 1000 × 1000 (3,994,002 springs).
- W3: one ``implicit_euler`` Newton iteration's linear algebra on the 100 × 100 cloth (29,994
  DOFs): assembly, factorisation and solve with every direct solver installed (analysis reused),
  against peers that redo the analysis; hooke's choice against the best.
- W4: ``fast_mass_spring`` on the 100 × 100 cloth: ms per local/global iteration.
- W5: one explicit (symplectic Euler) and one implicit (``implicit_euler_linear``, solver "auto")
  step against the number of springs, 10³ … 4·10⁶, for the ``cloth`` and the ``lattice`` scenes,
  each size in its own process: time, fitted exponent, peak memory per spring (peak RSS of that
  process over its springs).

Every time is the median of ``--repeats`` runs after a warm-up (compilation excluded); W1 and W2
measure hooke and the peers in turn ``--rounds`` times and report medians over the rounds (and the
median over the rounds of hooke's rate over the peer's in the same round). The machine is shared:
the header and every workload print the CPU share other processes used meanwhile, and a table is
worth re-running when that is high. With ``--data DIR`` each workload also writes its numbers with
their provenance (command, date, machine, load; ``hooke.provenance``) to ``DIR/bench_W<k>.json``,
from which ``scripts/readme_tables.py`` renders the README's tables. Benchmarks print; they
assert nothing.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numba
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import hooke  # noqa: E402
from hooke.integrators import get as get_integrator  # noqa: E402
from hooke.linalg import SparseSolver, installed_direct_solvers  # noqa: E402
from hooke.provenance import LoadMonitor, command_line, write_measurement  # noqa: E402
from hooke.result import finite_or_none  # noqa: E402

PEERS = ("taichi", "warp", "newton")
DISTRIBUTIONS = {"taichi": "taichi", "warp": "warp-lang", "newton": "newton"}  # pip's names
# W5 sizes: 1.1e3, 1.0e4, 1.0e5, 1.0e6, 4.0e6 springs for both scenes.
W5_SIZES = {"cloth": (17, 51, 159, 501, 1000),   # n × n particles
            "lattice": (6, 12, 25, 53, 84)}      # n × n × n particles
W5_SMOKE_SIZES = {"cloth": (10, 17), "lattice": (4, 6)}


# -- measuring ------------------------------------------------------------------------------------

def median_time(function, repeats: int, warmup: int = 1) -> float:
    for _ in range(warmup):
        function()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return float(np.median(times))


def peak_rss() -> int:
    """This process's peak resident set size [bytes]: VmHWM, which starts afresh at exec (Linux
    keeps ru_maxrss across fork + exec, so a child would report its parent's peak)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def memory_bandwidth(megabytes: int = 256, repeats: int = 5) -> float:
    """Copy bandwidth [bytes/s]: read + write of a ``megabytes`` array by NumPy (one core)."""
    source = np.ones(megabytes * 2**20 // 8)
    target = np.empty_like(source)
    seconds = median_time(lambda: np.copyto(target, source), repeats)
    return 2 * source.nbytes / seconds


def table(title: str, header: list[str], rows: list[list]) -> None:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[k]) for r in cells)) if cells else len(h)
              for k, h in enumerate(header)]
    print(f"\n{title}")
    print("  ".join(h.rjust(w) for h, w in zip(header, widths)))
    for row in cells:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)))


def fmt(value: float | None, digits: int = 3) -> str:
    if value is None or value != value:  # not measured, or NaN
        return "-"
    return f"{value:.{digits}g}" if abs(value) < 1e4 else f"{value:,.0f}"


# -- workloads ---------------------------------------------------------------------------------

def symplectic_euler_rate(system, dt: float, steps: int, repeats: int) -> float:
    """Steps/s of symplectic Euler (the integrator's own step) on ``system`` from its model's
    initial state, each timed run continuing from where the previous one stopped."""
    stepper = get_integrator("symplectic_euler")(system, dt)
    state = [system.model.initial_state()]

    def run():
        s = state[0]
        for _ in range(steps):
            s = stepper.step(s)
        state[0] = s

    return steps / median_time(run, repeats)


def explicit_rate(n: int, steps: int, repeats: int) -> tuple[float, object]:
    """hooke's symplectic Euler steps/s on the n × n cloth."""
    scene = hooke.scene("cloth", n=n)
    system = hooke.System(scene.model)
    return symplectic_euler_rate(system, scene.dt, steps, repeats), system


def bandwidth_bound(system, bandwidth: float) -> tuple[float, float]:
    """(bytes moved per spring per step, steps/s at the copy bandwidth) of the fused step
    (:meth:`hooke.kernels.SpringGather.bytes_per_step`)."""
    moved = system.gather.bytes_per_step(system.model.x0.nbytes)
    return moved / system.model.n_springs, bandwidth / moved


def peer_rates(n: int, steps: int, repeats: int, peers) -> dict[str, float]:
    """steps/s of each installed peer, each in its own process (their runtimes do not mix)."""
    rates = {}
    for peer in peers:
        code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); import peers_{peer} as p; "
                f"print(p.steps_per_second({n}, {steps}, {repeats}) if p.available() else 'nan')")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        lines = done.stdout.strip().splitlines()
        try:
            rates[peer] = float(lines[-1])
        except (IndexError, ValueError):
            rates[peer] = float("nan")
            print(f"  ({peer} failed: {done.stderr.strip().splitlines()[-1:]})")
    return rates


def peer_versions(peers) -> dict[str, str]:
    """The installed version of each peer, by name (missing ones left out)."""
    versions = {}
    for peer in peers:
        try:
            versions[peer] = importlib.metadata.version(DISTRIBUTIONS[peer])
        except importlib.metadata.PackageNotFoundError:
            pass
    return versions


def workload_explicit(label: str, n: int, steps: int, repeats: int, rounds: int, peers,
                      bandwidth: float, reference: dict[str, float]) -> dict:
    """hooke (1 thread and all threads) and each peer measured in turn, ``rounds`` times over
    (a burst of load on the shared machine then hits everyone alike). Its data: per name the
    rates of the rounds and their median; per peer the median over the rounds of hooke's best
    rate in a round over the peer's in the same round; the bandwidth bound."""
    threads = numba.get_num_threads()
    counts = sorted({1, threads})
    rates: dict[str, list[float]] = {}
    for _ in range(rounds):
        for count in counts:
            numba.set_num_threads(count)
            rate, system = explicit_rate(n, steps, repeats)
            rates.setdefault(f"hooke ({count} thread{'s' if count > 1 else ''})", []).append(rate)
        numba.set_num_threads(threads)
        for peer, rate in peer_rates(n, steps, repeats, peers).items():
            rates.setdefault(peer, []).append(rate)
    springs = system.model.n_springs
    hooke_best = np.max([values for name, values in rates.items() if name.startswith("hooke")],
                        axis=0)
    rows = [{"name": name, "steps_per_s": finite_or_none(np.median(values)),
             "rounds": [finite_or_none(value) for value in values],
             "hooke_over_peer": None if name.startswith("hooke")
             else finite_or_none(np.median(hooke_best / np.array(values)))}
            for name, values in rates.items()]
    per_spring, bound = bandwidth_bound(system, bandwidth)
    printed = [[row["name"], fmt(row["steps_per_s"]),
                fmt(None if row["steps_per_s"] is None else row["steps_per_s"] * springs),
                fmt(row["hooke_over_peer"]), fmt(reference.get(row["name"]))] for row in rows]
    printed.append(["bandwidth bound", fmt(bound), f"{bound * springs:.3g}",
                    f"{per_spring:.1f} B/spring", ""])
    table(f"{label}: cloth {n} x {n}, {springs:,} springs, symplectic Euler (medians of {rounds} "
          "rounds)", ["", "steps/s", "springs*steps/s", "hooke/peer", "issue's figure"], printed)
    return {"rows": rows, "n": n, "springs": springs, "steps": steps, "repeats": repeats,
            "rounds": rounds, "peer_versions": peer_versions(peers),
            "bandwidth_GB_per_s": bandwidth / 1e9,
            "bytes_per_spring": per_spring, "bound_steps_per_s": bound}


def workload_w3(n: int, repeats: int) -> dict:
    """Assembly, factorisation and solve of one Newton iteration, with every direct solver
    installed (hooke's factors reuse their analysis of the pattern, as in a run), against the
    peers that redo it (pypardiso's public interface, SciPy's spsolve); and whole
    ``implicit_euler`` steps, which add the line search, energies and the convergence test to
    every iteration: from rest and from the crumpled configuration."""
    scene = hooke.scene("cloth", n=n)
    system = hooke.System(scene.model)
    rng = np.random.default_rng(0)
    # A crumpled configuration: 10% of the spacing at random (some springs compressed).
    x = scene.model.x0 + 0.1 / n * rng.normal(size=scene.model.x0.shape)
    h = scene.dt
    assembly = median_time(lambda: system.combined_matrix(x, 1.0, h * h, 0.0, project_psd=True),
                           repeats)
    matrix = system.combined_matrix(x, 1.0, h * h, 0.0, project_psd=True)
    rhs = rng.normal(size=matrix.shape[0])
    rows = []
    chosen = SparseSolver("direct").direct_factor(matrix.shape[0]).name
    for name in installed_direct_solvers():
        factor = SparseSolver(name).direct_factor(matrix.shape[0])
        factor.factorize(matrix)  # the analysis, once
        factorisation = median_time(lambda f=factor: f.factorize(matrix), repeats)
        solve = median_time(lambda f=factor: f.solve(rhs), repeats)
        rows.append({"solver": name, "hooke": True, "chosen": name == chosen,
                     "factorisation_ms": 1e3 * factorisation, "solve_ms": 1e3 * solve,
                     "total_ms": 1e3 * (factorisation + solve)})
    for name, run in peer_solves(matrix, rhs).items():
        rows.append({"solver": name, "hooke": False, "chosen": False, "factorisation_ms": None,
                     "solve_ms": None, "total_ms": 1e3 * median_time(run, repeats)})
    best = min(row["total_ms"] for row in rows)

    def ms(value):
        return "" if value is None else f"{value:.1f}"

    table(f"W3: implicit_euler Newton iteration, cloth {n} x {n} ({matrix.shape[0]:,} DOFs, "
          f"{matrix.nnz:,} nonzeros); assembly {1e3 * assembly:.1f} ms",
          ["solver", "factorisation ms", "solve ms", "total ms", "/ best"],
          [[("hooke " if row["hooke"] else "") + row["solver"]
            + (" (its choice)" if row["chosen"] else ""), ms(row["factorisation_ms"]),
            ms(row["solve_ms"]), ms(row["total_ms"]), f"{row['total_ms'] / best:.2f}"]
           for row in rows])
    starts = {"rest": scene.state, "crumpled": hooke.State(0.0, x, np.zeros_like(x))}
    steps = [whole_step(system, h, start, state, repeats) for start, state in starts.items()]
    for step in steps:
        print(f"  one whole implicit_euler step from {step['start']}: {step['ms']:.1f} ms, "
              f"{step['newton_iterations']:.2f} Newton iterations")
    return {"rows": rows, "n": n, "dofs": matrix.shape[0], "nonzeros": int(matrix.nnz),
            "assembly_ms": 1e3 * assembly, "whole_steps": steps}


def peer_solves(matrix, rhs) -> dict:
    """The peers of W3: solves that redo the analysis each time (pypardiso where installed,
    SciPy's spsolve), by name."""
    csc = sp.csc_matrix(matrix)
    peers = {}
    try:
        import pypardiso

        csr = sp.csr_matrix(matrix)

        def pardiso_fresh():  # a new solver each time: pypardiso.spsolve would reuse its factor
            solver = pypardiso.PyPardisoSolver()
            solver.factorize(csr)
            result = solver.solve(csr, rhs)
            solver.free_memory(everything=True)
            return result

        peers["pypardiso, analysis each time"] = pardiso_fresh
    except ImportError:
        pass
    peers["SciPy spsolve"] = lambda: spla.spsolve(csc, rhs)
    return peers


def whole_step(system, h: float, start: str, state, repeats: int) -> dict:
    """The median time of a whole implicit_euler step from ``state`` and its Newton iterations
    (the same every time: the step always starts from ``state``)."""
    stepper = get_integrator("implicit_euler")(system, h)
    seconds = median_time(lambda: stepper.step(state), max(1, repeats // 2))
    iterations = stepper.stats["newton_iterations"] / stepper.stats["steps"]
    return {"start": start, "ms": 1e3 * seconds, "newton_iterations": iterations}


def workload_w4(n: int, repeats: int) -> dict:
    scene = hooke.scene("cloth", n=n)
    cls = get_integrator("fast_mass_spring")
    times = {}
    for iterations in (1, 21):
        stepper = cls(hooke.System(scene.model), scene.dt, iterations=iterations)
        times[iterations] = median_time(lambda s=stepper: s.step(scene.state), repeats)
    per_iteration = (times[21] - times[1]) / 20
    start = time.perf_counter()
    cls(hooke.System(scene.model), scene.dt)
    setup = time.perf_counter() - start
    row = {"ms_per_iteration": 1e3 * per_iteration, "ms_per_step_1_iteration": 1e3 * times[1],
           "ms_per_step_21_iterations": 1e3 * times[21], "prefactorisation_ms": 1e3 * setup}
    table(f"W4: fast_mass_spring, cloth {n} x {n} ({n * n:,} nodes)",
          ["ms/iteration", "ms/step (1 it.)", "ms/step (21 it.)", "prefactorisation ms"],
          [[f"{value:.2f}" for value in row.values()]])
    return {"rows": [row], "n": n, "nodes": n * n}


W5_CHILD = """
import json, resource, sys, time
import numpy as np
sys.path.insert(0, {here!r})
import hooke
from hooke.integrators import get
from bench import median_time, peak_rss
name, n, repeats, kind = {name!r}, {n}, {repeats}, {kind!r}
size = {{"n": n}} if name == "cloth" else {{"nx": n, "ny": n, "nz": n}}
scene = hooke.scene(name, **size)
system = hooke.System(scene.model)
options = {{"solver": "auto"}} if kind == "implicit_euler_linear" else {{}}
stepper = get(kind)(system, scene.dt, **options)
state = scene.state
seconds = median_time(lambda: stepper.step(state), repeats)
peak = peak_rss()
print(json.dumps({{"springs": scene.model.n_springs, "seconds": seconds, "peak": peak,
                   "solver": getattr(getattr(stepper, "linear_solver", None), "name", "")}}))
"""


def workload_w5(sizes: dict[str, tuple[int, ...]], repeats: int) -> dict:
    """Per scene and size a fresh process: its step time and its peak RSS. Memory per spring is
    the slope of peak RSS against springs (the fixed cost of Python, NumPy and compiled code
    drops out)."""
    rows, fits = [], []
    for name, sides in sizes.items():
        for kind in ("symplectic_euler", "implicit_euler_linear"):
            measured = [w5_size(name, kind, n, repeats) for n in sides]
            rows += measured
            ok = [row for row in measured if not row["failed"]]
            if len(ok) >= 2:
                springs = [row["springs"] for row in ok]
                fits.append({"scene": name, "integrator": kind, "exponent": float(np.polyfit(
                    np.log(springs), np.log([row["ms_per_step"] for row in ok]), 1)[0]),
                    "bytes_per_spring": float(np.polyfit(
                        springs, [row["peak_rss_MiB"] * 2**20 for row in ok], 1)[0])})
    table("W5: one step against the number of springs (each size in a fresh process)",
          ["scene", "integrator", "particles", "springs", "ms/step", "ns/spring", "peak RSS MiB",
           "solver"],
          [w5_cells(row) for row in rows])
    for fit in fits:
        print(f"  {fit['scene']} {fit['integrator']}: fitted exponent (time ∝ springs^p) "
              f"p = {fit['exponent']:.2f}; peak memory {fit['bytes_per_spring']:.0f} bytes per "
              "spring (slope of peak RSS)")
    return {"rows": rows, "fits": fits}


def w5_size(name: str, kind: str, n: int, repeats: int) -> dict:
    """One W5 measurement in a fresh process (``failed`` when the process did not report)."""
    code = W5_CHILD.format(here=str(HERE), name=name, n=n, repeats=repeats, kind=kind)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=HERE)
    row = {"scene": name, "integrator": kind, "n": n, "dim": 3 if name == "lattice" else 2,
           "failed": True, "springs": None, "ms_per_step": None, "peak_rss_MiB": None,
           "solver": ""}
    try:
        out = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        print(f"  ({name} {kind} at n = {n} failed: {done.stderr.strip().splitlines()[-1:]})")
        return row
    return {**row, "failed": False, "springs": out["springs"], "ms_per_step": 1e3 * out["seconds"],
            "peak_rss_MiB": out["peak"] / 2**20, "solver": out["solver"]}


def w5_cells(row: dict) -> list[str]:
    """A W5 row as printed: scene, integrator, particles, springs, ms/step, ns/spring, peak RSS,
    solver."""
    shape = " x ".join([str(row["n"])] * row["dim"])
    if row["failed"]:
        return [row["scene"], row["integrator"], shape, "failed", "", "", "", ""]
    return [row["scene"], row["integrator"], shape, f"{row['springs']:,}", fmt(row["ms_per_step"]),
            fmt(1e6 * row["ms_per_step"] / row["springs"]), fmt(row["peak_rss_MiB"]),
            row["solver"]]


# -- entry ----------------------------------------------------------------------------------------

def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workloads", nargs="*", default=["W1", "W2", "W3", "W4", "W5"])
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per measurement")
    parser.add_argument("--rounds", type=int, default=3,
                        help="W1/W2: hooke and the peers measured in turn, this many times")
    parser.add_argument("--smoke", action="store_true", help="a few steps of small sizes, no peers")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--w5-scenes", nargs="*", choices=list(W5_SIZES), default=list(W5_SIZES),
                        help="W5: the scenes to size (default: all)")
    parser.add_argument("--data", type=Path, default=None,
                        help="also write each workload's numbers with their provenance to "
                             "DIR/bench_W<k>.json (docs/data: the README's tables)")
    args = parser.parse_args(argv)
    smoke = args.smoke
    repeats = 1 if smoke else args.repeats
    rounds = 1 if smoke else args.rounds
    peers = () if smoke or args.no_peers else PEERS
    print(f"hooke {hooke.__version__} | numpy {np.__version__} | numba {numba.__version__} "
          f"({numba.get_num_threads()} threads) | {os.cpu_count()} CPUs")
    with LoadMonitor() as load:
        time.sleep(0.5)
    print(f"other processes' share of the CPU just now: {load.others:.0%} "
          f"| load average {os.getloadavg()[0]:.2f}")
    bandwidth = memory_bandwidth(32 if smoke else 256, repeats=max(repeats, 3))
    print(f"memory bandwidth (NumPy copy, read + write): {bandwidth / 1e9:.1f} GB/s")
    command = command_line("python benchmarks/bench.py", argv)
    sizes = W5_SMOKE_SIZES if smoke else W5_SIZES
    workloads = {
        "W1": lambda: workload_explicit("W1", 20 if smoke else 100, 20 if smoke else 2000,
                                        repeats, rounds, peers, bandwidth,
                                        {"taichi": 1794, "warp": 1345, "newton": 1107}),
        # Newton's Python ModelBuilder needs minutes for 4 million add_spring calls: not run.
        "W2": lambda: workload_explicit("W2", 60 if smoke else 1000, 3 if smoke else 20,
                                        repeats, rounds, [p for p in peers if p != "newton"],
                                        bandwidth, {"warp": 4.4e7 / 3_994_002}),
        "W3": lambda: workload_w3(20 if smoke else 100, repeats),
        "W4": lambda: workload_w4(20 if smoke else 100, repeats),
        "W5": lambda: workload_w5({name: sizes[name] for name in args.w5_scenes}, repeats),
    }
    wanted = {w.upper() for w in args.workloads}
    for name, workload in workloads.items():
        if name in wanted:
            with LoadMonitor() as load:
                data = workload()
            print(f"  (other processes used {load.others:.0%} of the CPU during {name})")
            if args.data is not None:
                path = write_measurement(args.data / f"bench_{name}.json", data.pop("rows"),
                                         command, load.others, smoke=smoke, **data)
                print(f"  data: {path}")
    print(f"\npeak memory of this process: {peak_rss() / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
