"""W5: one step against the number of springs, 10³ … 4·10⁶, for the ``cloth`` (n × n) and the
``lattice`` (n × n × n, tetrahedra) scenes.

Contract: per scene, integrator (symplectic Euler; ``implicit_euler_linear`` with
``solver="auto"``, its choice reported) and size a fresh process (``python -m
hooke.bench.sizes``) times one step (median of ``repeats`` after a warm-up) and reports its peak
RSS. Fitted over the sizes: the exponent of time ∝ springs^p, and memory per spring as the slope
of peak RSS against springs (the fixed cost of Python, NumPy and compiled code drops out).
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from .measure import Options, fmt, median_time, peak_rss, table

# 1.1e3, 1.0e4, 1.0e5, 1.0e6, 4.0e6 springs for both scenes.
SIZES = {"cloth": (17, 51, 159, 501, 1000),   # n × n particles
         "lattice": (6, 12, 25, 53, 84)}      # n × n × n particles
SMOKE_SIZES = {"cloth": (10, 17), "lattice": (4, 6)}
KINDS = ("symplectic_euler", "implicit_euler_linear")


def w5(options: Options, bandwidth: float = 0.0) -> dict:
    sizes = SMOKE_SIZES if options.smoke else SIZES
    scenes = options.extra.get("w5_scenes") or list(sizes)
    repeats = options.repeat(5)
    rows, fits = [], []
    for name in scenes:
        for kind in KINDS:
            measured = [one_size(name, kind, n, repeats) for n in sizes[name]]
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
           "solver"], [cells(row) for row in rows])
    for fit in fits:
        print(f"  {fit['scene']} {fit['integrator']}: fitted exponent (time ∝ springs^p) "
              f"p = {fit['exponent']:.2f}; peak memory {fit['bytes_per_spring']:.0f} bytes per "
              "spring (slope of peak RSS)")
    return {"rows": rows, "fits": fits, "repeats": repeats}


def one_size(name: str, kind: str, n: int, repeats: int) -> dict:
    """One measurement in a fresh process (``failed`` when the process did not report)."""
    done = subprocess.run([sys.executable, "-m", "hooke.bench.sizes", name, kind, str(n),
                           str(repeats)], capture_output=True, text=True)
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


def cells(row: dict) -> list[str]:
    """A row as printed: scene, integrator, particles, springs, ms/step, ns/spring, peak RSS,
    solver."""
    shape = " x ".join([str(row["n"])] * row["dim"])
    if row["failed"]:
        return [row["scene"], row["integrator"], shape, "failed", "", "", "", ""]
    return [row["scene"], row["integrator"], shape, f"{row['springs']:,}", fmt(row["ms_per_step"]),
            fmt(1e6 * row["ms_per_step"] / row["springs"]), fmt(row["peak_rss_MiB"]),
            row["solver"]]


def child(name: str, kind: str, n: int, repeats: int) -> None:
    """The fresh process: one step of ``kind`` on the scene's size n, as one JSON line."""
    from ..integrators import get
    from ..io.scene_file import builtin_scene
    from ..system import System

    size = {"n": n} if name == "cloth" else {"nx": n, "ny": n, "nz": n}
    scene = builtin_scene(name, **size)
    options = {"solver": "auto"} if kind == "implicit_euler_linear" else {}
    stepper = get(kind)(System(scene.model), scene.dt, **options)
    seconds = median_time(lambda: stepper.step(scene.state), repeats)
    print(json.dumps({"springs": scene.model.n_springs, "seconds": seconds, "peak": peak_rss(),
                      "solver": getattr(getattr(stepper, "linear_solver", None), "name", "")}))


if __name__ == "__main__":
    child(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
