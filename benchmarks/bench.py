"""hooke's speed benchmark: workloads W1–W5 of issue 5, with peers side by side.

    .venv/bin/python benchmarks/bench.py                 # everything, peers when installed
    .venv/bin/python benchmarks/bench.py W1 W3 --repeats 7
    .venv/bin/python benchmarks/bench.py --smoke         # a few steps of small sizes, no peers
    .venv/bin/python benchmarks/bench.py --no-peers

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
measure hooke and the peers in turn ``--rounds`` times and report medians over the rounds. The
machine is shared: the header and the W1/W2 titles print the CPU share other processes used
meanwhile, and a table is worth re-running when that is high. Benchmarks print; they assert
nothing.
"""

from __future__ import annotations

import argparse
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

PEERS = ("taichi", "warp", "newton")
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


class LoadMonitor:
    """Context manager: ``others`` is the share of the machine's CPU time that other processes
    used while it was open (from /proc/stat, minus this process and its children); NaN where
    /proc/stat is missing."""

    def __enter__(self):
        self._start = self._sample()
        self.others = float("nan")
        return self

    def __exit__(self, *exc):
        end = self._sample()
        if self._start is not None and end is not None:
            busy, total, own = (b - a for a, b in zip(self._start, end))
            self.others = max(0.0, busy - own) / max(total, 1e-9)
        return False

    @staticmethod
    def _sample():
        try:
            fields = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        except OSError:
            return None
        ticks = os.sysconf("SC_CLK_TCK")
        times = os.times()
        own = (times.user + times.system + times.children_user + times.children_system) * ticks
        idle = fields[3] + fields[4]
        return sum(fields) - idle, sum(fields), own


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


def fmt(value: float, digits: int = 3) -> str:
    if value != value:  # NaN
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


def workload_explicit(label: str, n: int, steps: int, repeats: int, rounds: int, peers,
                      bandwidth: float, reference: dict[str, float]) -> None:
    """hooke (1 thread and all threads) and each peer measured in turn, ``rounds`` times over
    (a burst of load on the shared machine then hits everyone alike); medians over rounds."""
    threads = numba.get_num_threads()
    counts = sorted({1, threads})
    rates: dict[str, list[float]] = {}
    with LoadMonitor() as load:
        for _ in range(rounds):
            for count in counts:
                numba.set_num_threads(count)
                rate, system = explicit_rate(n, steps, repeats)
                rates.setdefault(f"hooke ({count} thread{'s' if count > 1 else ''})", []).append(rate)
            numba.set_num_threads(threads)
            for peer, rate in peer_rates(n, steps, repeats, peers).items():
                rates.setdefault(peer, []).append(rate)
    springs = system.model.n_springs
    medians = {name: float(np.median(values)) for name, values in rates.items()}
    hooke_rate = max(v for k, v in medians.items() if k.startswith("hooke"))
    rows = []
    for name, rate in medians.items():
        ratio = "" if name.startswith("hooke") else fmt(hooke_rate / rate)
        rows.append([name, fmt(rate), f"{rate * springs:.3g}", ratio,
                     fmt(reference.get(name, float("nan")))])
    per_spring, bound = bandwidth_bound(system, bandwidth)
    rows.append(["bandwidth bound", fmt(bound), f"{bound * springs:.3g}",
                 f"{per_spring:.1f} B/spring", ""])
    table(f"{label}: cloth {n} x {n}, {springs:,} springs, symplectic Euler "
          f"(medians of {rounds} rounds; other processes used {load.others:.0%} of the CPU)",
          ["", "steps/s", "springs*steps/s", "hooke/peer", "issue's figure"], rows)


def workload_w3(n: int, repeats: int) -> None:
    """Assembly, factorisation and solve of one Newton iteration, with every direct solver
    installed (hooke's factors reuse their analysis of the pattern, as in a run), against the
    peers that redo it (pypardiso's public interface, SciPy's spsolve)."""
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
        label = f"hooke {name}" + (" (its choice)" if name == chosen else "")
        rows.append([label, factorisation, solve, factorisation + solve])
    try:
        import pypardiso

        csr = sp.csr_matrix(matrix)

        def pardiso_fresh():  # a new solver each time: pypardiso.spsolve would reuse its factor
            solver = pypardiso.PyPardisoSolver()
            solver.factorize(csr)
            result = solver.solve(csr, rhs)
            solver.free_memory(everything=True)
            return result

        rows.append(["pypardiso, analysis each time", None, None,
                     median_time(pardiso_fresh, repeats)])
    except ImportError:
        pass
    csc = sp.csc_matrix(matrix)
    rows.append(["SciPy spsolve", None, None, median_time(lambda: spla.spsolve(csc, rhs),
                                                          repeats)])
    best = min(row[3] for row in rows)

    def ms(seconds):
        return "" if seconds is None else f"{1e3 * seconds:.1f}"

    table(f"W3: implicit_euler Newton iteration, cloth {n} x {n} ({matrix.shape[0]:,} DOFs, "
          f"{matrix.nnz:,} nonzeros); assembly {1e3 * assembly:.1f} ms",
          ["solver", "factorisation ms", "solve ms", "total ms", "/ best"],
          [[label, ms(f), ms(s), ms(total), f"{total / best:.2f}"] for label, f, s, total in rows])
    stepper = get_integrator("implicit_euler")(system, h)
    state = scene.state
    step_time = median_time(lambda: stepper.step(state), max(1, repeats // 2))
    print(f"  one whole implicit_euler step from rest: {1e3 * step_time:.1f} ms")


def workload_w4(n: int, repeats: int) -> None:
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
    table(f"W4: fast_mass_spring, cloth {n} x {n} ({n * n:,} nodes)",
          ["ms/iteration", "ms/step (1 it.)", "ms/step (21 it.)", "prefactorisation ms"],
          [[f"{1e3 * per_iteration:.2f}", f"{1e3 * times[1]:.2f}", f"{1e3 * times[21]:.2f}",
            f"{1e3 * setup:.1f}"]])


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


def workload_w5(sizes: dict[str, tuple[int, ...]], repeats: int) -> None:
    """Per scene and size a fresh process: its step time and its peak RSS. Memory per spring is
    the slope of peak RSS against springs (the fixed cost of Python, NumPy and compiled code
    drops out)."""
    rows, fits = [], {}
    for name, sides in sizes.items():
        for kind in ("symplectic_euler", "implicit_euler_linear"):
            springs, seconds, peaks = [], [], []
            for n in sides:
                code = W5_CHILD.format(here=str(HERE), name=name, n=n, repeats=repeats, kind=kind)
                done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                                      text=True, cwd=HERE)
                shape = " x ".join([str(n)] * (3 if name == "lattice" else 2))
                try:
                    out = json.loads(done.stdout.strip().splitlines()[-1])
                except (IndexError, ValueError):
                    rows.append([name, kind, shape, "failed", "", "", "", ""])
                    print(f"  ({name} {kind} at n = {n} failed: "
                          f"{done.stderr.strip().splitlines()[-1:]})")
                    continue
                springs.append(out["springs"])
                seconds.append(out["seconds"])
                peaks.append(out["peak"])
                rows.append([name, kind, shape, f"{out['springs']:,}",
                             f"{1e3 * out['seconds']:.3g}",
                             f"{out['seconds'] / out['springs'] * 1e9:.3g}",
                             f"{out['peak'] / 2**20:,.0f}", out["solver"]])
            if len(springs) >= 2:
                fits[name, kind] = (float(np.polyfit(np.log(springs), np.log(seconds), 1)[0]),
                                    float(np.polyfit(springs, peaks, 1)[0]))
    table("W5: one step against the number of springs (each size in a fresh process)",
          ["scene", "integrator", "particles", "springs", "ms/step", "ns/spring", "peak RSS MiB",
           "solver"], rows)
    for (name, kind), (exponent, per_spring) in fits.items():
        print(f"  {name} {kind}: fitted exponent (time ∝ springs^p) p = {exponent:.2f}; "
              f"peak memory {per_spring:.0f} bytes per spring (slope of peak RSS)")


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
    wanted = {w.upper() for w in args.workloads}
    if "W1" in wanted:
        workload_explicit("W1", 20 if smoke else 100, 20 if smoke else 2000, repeats, rounds,
                          peers, bandwidth, {"taichi": 1794, "warp": 1345, "newton": 1107})
    if "W2" in wanted:
        # Newton's Python ModelBuilder needs minutes for 4 million add_spring calls: not run.
        workload_explicit("W2", 60 if smoke else 1000, 3 if smoke else 20, repeats, rounds,
                          [p for p in peers if p != "newton"], bandwidth,
                          {"warp": 4.4e7 / 3_994_002})
    if "W3" in wanted:
        workload_w3(20 if smoke else 100, repeats)
    if "W4" in wanted:
        workload_w4(20 if smoke else 100, repeats)
    if "W5" in wanted:
        sizes = W5_SMOKE_SIZES if smoke else W5_SIZES
        workload_w5({name: sizes[name] for name in args.w5_scenes}, repeats)
    print(f"\npeak memory of this process: {peak_rss() / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
