"""W3 and W4: the implicit steps on the 100 × 100 cloth (29,994 DOFs).

Contract:
- W3: one ``implicit_euler`` Newton iteration's linear algebra: assembly, then factorisation and
  solve with every direct solver installed (hooke's factors reuse their analysis of the pattern,
  as in a run) and with the peers that redo it (pypardiso's public interface, SciPy's
  ``spsolve``), all timed in turn in every round (:func:`~hooke.bench.measure.interleaved`); a
  solver's time is quoted only when its solution agrees with hooke's choice's to 1e-8 (relative);
  and whole ``implicit_euler`` steps (line search, energies, convergence test included) from rest
  and from a crumpled configuration.
- W4: ``fast_mass_spring``: ms per local/global iteration (the difference of 24 and 4 iterations
  per step over 20) and its prefactorisation.
"""

from __future__ import annotations

import time

import numpy as np

from .measure import Options, interleaved, median_time, table

SOLUTION_TOLERANCE = 1e-8  # relative difference of two solvers' solutions of one system


def w3(options: Options, bandwidth: float = 0.0) -> dict:
    import scipy.sparse as sp

    from ..io.scene_file import builtin_scene
    from ..linalg import SparseSolver, installed_direct_solvers
    from ..model import State
    from ..system import System

    n = 20 if options.smoke else 100
    repeats = options.repeat(5)
    scene = builtin_scene("cloth", n=n)
    system = System(scene.model)
    rng = np.random.default_rng(0)
    # A crumpled configuration: 10% of the spacing at random (some springs compressed).
    x = scene.model.x0 + 0.1 / n * rng.normal(size=scene.model.x0.shape)
    h = scene.dt
    assembly = median_time(lambda: system.combined_matrix(x, 1.0, h * h, 0.0, project_psd=True),
                           repeats)
    matrix = system.combined_matrix(x, 1.0, h * h, 0.0, project_psd=True)
    rhs = rng.normal(size=matrix.shape[0])
    chosen = SparseSolver("direct").direct_factor(matrix.shape[0]).name
    factors = {}
    for name in installed_direct_solvers():
        factor = factors[name] = SparseSolver(name).direct_factor(matrix.shape[0])
        factor.factorize(matrix)  # the analysis, once
    contenders = {}
    for name, factor in factors.items():
        contenders[f"{name} factorisation"] = lambda f=factor: f.factorize(matrix)
        contenders[f"{name} solve"] = lambda f=factor: f.solve(rhs)
    peers = peer_solves(sp, matrix, rhs)
    contenders.update(peers)
    times = interleaved(contenders, repeats)
    reference = factors[chosen].solve(rhs)

    def agrees(solution) -> bool:
        return bool(np.max(np.abs(solution - reference))
                    <= SOLUTION_TOLERANCE * np.max(np.abs(reference)))

    rows = []
    for name, factor in factors.items():
        factorisation = np.median(times[f"{name} factorisation"])
        solve = np.median(times[f"{name} solve"])
        rows.append({"solver": name, "hooke": True, "chosen": name == chosen,
                     "agrees": agrees(factor.solve(rhs)), "factorisation_ms": 1e3 * factorisation,
                     "solve_ms": 1e3 * solve, "total_ms": 1e3 * (factorisation + solve)})
    for name, run in peers.items():
        rows.append({"solver": name, "hooke": False, "chosen": False, "agrees": agrees(run()),
                     "factorisation_ms": None, "solve_ms": None,
                     "total_ms": 1e3 * float(np.median(times[name]))})
    best = min(row["total_ms"] for row in rows if row["agrees"])

    def ms(value):
        return "" if value is None else f"{value:.1f}"

    table(f"W3: implicit_euler Newton iteration, cloth {n} x {n} ({matrix.shape[0]:,} DOFs, "
          f"{matrix.nnz:,} nonzeros); assembly {1e3 * assembly:.1f} ms; every solver in turn, "
          f"{repeats} rounds",
          ["solver", "factorisation ms", "solve ms", "total ms", "/ best", "solution"],
          [[("hooke " if row["hooke"] else "") + row["solver"]
            + (" (its choice)" if row["chosen"] else ""), ms(row["factorisation_ms"]),
            ms(row["solve_ms"]), ms(row["total_ms"]), f"{row['total_ms'] / best:.2f}",
            "agrees" if row["agrees"] else "DIFFERS"] for row in rows])
    starts = {"rest": scene.state, "crumpled": State(0.0, x, np.zeros_like(x))}
    steps = [whole_step(system, h, start, state, repeats) for start, state in starts.items()]
    for step in steps:
        print(f"  one whole implicit_euler step from {step['start']}: {step['ms']:.1f} ms, "
              f"{step['newton_iterations']:.2f} Newton iterations")
    return {"rows": rows, "n": n, "dofs": matrix.shape[0], "nonzeros": int(matrix.nnz),
            "assembly_ms": 1e3 * assembly, "whole_steps": steps, "repeats": repeats}


def peer_solves(sp, matrix, rhs) -> dict:
    """The peers of W3: solves that redo the analysis each time (pypardiso where installed,
    SciPy's spsolve), by name; each returns its solution."""
    import scipy.sparse.linalg as spla

    from ..linalg import PARDISO

    csc = sp.csc_matrix(matrix)
    peers = {}
    if PARDISO:
        csr = sp.csr_matrix(matrix)

        def pardiso_fresh():  # a new solver each time: pypardiso.spsolve would reuse its factor
            solver = PARDISO.load().PyPardisoSolver()
            solver.factorize(csr)
            result = solver.solve(csr, rhs)
            solver.free_memory(everything=True)
            return result

        peers["pypardiso, analysis each time"] = pardiso_fresh
    peers["SciPy spsolve"] = lambda: spla.spsolve(csc, rhs)
    return peers


def whole_step(system, h: float, start: str, state, repeats: int) -> dict:
    """The median time of a whole implicit_euler step from ``state`` and its Newton iterations
    (the same every time: the step always starts from ``state``)."""
    from ..integrators import get

    stepper = get("implicit_euler")(system, h)
    seconds = median_time(lambda: stepper.step(state), max(1, repeats // 2))
    iterations = stepper.stats["newton_iterations"] / stepper.stats["steps"]
    return {"start": start, "ms": 1e3 * seconds, "newton_iterations": iterations}


def w4(options: Options, bandwidth: float = 0.0) -> dict:
    from ..integrators import get
    from ..io.scene_file import builtin_scene
    from ..system import System

    n = 20 if options.smoke else 100
    repeats = options.repeat(5)
    scene = builtin_scene("cloth", n=n)
    cls = get("fast_mass_spring")
    # 4 and 24: fewer passes leave too much of a step undone on this cloth and are refused
    steppers = {iterations: cls(System(scene.model), scene.dt, iterations=iterations)
                for iterations in (4, 24)}
    times = interleaved({iterations: lambda s=stepper: s.step(scene.state)
                         for iterations, stepper in steppers.items()}, repeats)
    per_iteration = (np.median(times[24]) - np.median(times[4])) / 20
    start = time.perf_counter()
    cls(System(scene.model), scene.dt)
    setup = time.perf_counter() - start
    row = {"ms_per_iteration": 1e3 * per_iteration,
           "ms_per_step_4_iterations": 1e3 * float(np.median(times[4])),
           "ms_per_step_24_iterations": 1e3 * float(np.median(times[24])),
           "prefactorisation_ms": 1e3 * setup}
    table(f"W4: fast_mass_spring, cloth {n} x {n} ({n * n:,} nodes)",
          ["ms/iteration", "ms/step (4 it.)", "ms/step (24 it.)", "prefactorisation ms"],
          [[f"{value:.2f}" for value in row.values()]])
    return {"rows": [row], "n": n, "nodes": n * n, "repeats": repeats}
