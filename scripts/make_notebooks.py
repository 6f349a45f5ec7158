"""Write the notebooks of docs/notebooks (one per seed) and execute them in place, so that the
committed files show their plots. Run: .venv/bin/python scripts/make_notebooks.py

CI runs every notebook top to bottom again with nbmake (``make test``); each is kept small, and
each carries its own per-cell time limit (``execution.timeout`` in its metadata, read by nbmake;
the Makefile's ``--nbmake-timeout`` is the default for any other): ``TIMEOUTS``, the slowest cell
measured on our 2-core machine (01: verify() 7.3 s; 04: the study 6.0 s; others below 2 s) with
room for Numba compiling its kernels on a machine without a cache (20–40 s once).
"""

from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

FOLDER = Path(__file__).resolve().parents[1] / "docs" / "notebooks"

SETUP = """import tempfile
from pathlib import Path
import numpy as np
import matplotlib.pyplot as plt
import hooke
%matplotlib inline
out = Path(tempfile.mkdtemp())  # files this notebook writes go here


def median_wall_time(run, repeats=3):
    # the median of run().wall_time [s] over `repeats` runs, after one more that is not
    # counted: Numba compiles (or loads its cache) in the first run
    run()
    return float(np.median([run().wall_time for _ in range(repeats)]))"""

# Per-cell time limits [s] for nbmake (measured slowest cells: see the module docstring).
TIMEOUTS = {"01_integrators_on_the_1d_spring.ipynb": 90, "02_soft_body_3d.ipynb": 60,
            "03_top_and_crane_modes.ipynb": 60, "04_pendulum_length_correction.ipynb": 90,
            "05_square_drop.ipynb": 60}

NOTEBOOKS = {
    "01_integrators_on_the_1d_spring.ipynb": [
        "# Seed 000: integrators on the 1D spring\n\nA particle on a zero-rest-length spring, "
        "f = −kx, with x0 = 2, k = 5, m = 0.5. The analytic solution is x(t) = x0 cos(√(k/m) t). "
        "Explicit Euler gains energy, linearised implicit Euler loses it, symplectic Euler keeps "
        "it bounded; RK2 and RK4 are accurate.",
        SETUP,
        """scene = hooke.scene("spring1d")
fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
for name in ["explicit_euler", "symplectic_euler", "rk2", "implicit_euler_linear"]:
    r = hooke.simulate(scene, integrator=name, dt=0.05, t_end=10.0)
    top.plot(r.t, r.x[:, 1, 0], label=name)
    bottom.plot(r.t, r.energy["total"], label=name)
top.plot(r.t, scene.analytic(r.t)[:, 1, 0], "k--", label="analytic")
top.set_ylabel("x [m]"); bottom.set_ylabel("total energy [J]"); bottom.set_xlabel("t [s]")
top.legend(fontsize=8); plt.show()""",
        "## Measured order of convergence and energy factor per step\n\n`hooke.verify` runs every "
        "registered integrator (the same table as `hooke verify`).",
        """from hooke.verify import verify, convergence_plot
reports = verify()
for r in reports:
    print(f"{r.name:24s} order {r.expected_order}  measured {r.measured_order:5.2f}   energy {r.behaviour:8s} E+/E - 1 = {r.energy_factor - 1:+.3e}")
h, omega2 = 0.005, 5.0 / 0.5
print("closed form for explicit Euler: (1 + w^2 h^2) - 1 =", omega2 * h * h)""",
        "## The convergence plot\n\nThe log-log plot of `hooke verify`: the error against dt, whose "
        "slope is the order.",
        """convergence_plot(reports)""",
    ],
    "02_soft_body_3d.ipynb": [
        "# Seed 001: a 3D soft body with linearly implicit Euler\n\nThe shipped tetrahedral mesh "
        "becomes springs along every tet edge, k = 1e5, m = 1, its bottom layer fixed; gravity "
        "(0, −9.8, 0); (M − h²K) v⁺ = M v + h f with a sparse solve per step.",
        SETUP,
        """scene = hooke.scene("soft3d")
m = scene.model
print(m.n_particles, "particles,", m.n_springs, "springs,", m.pinned.sum(), "fixed")
result = hooke.simulate(scene, t_end=0.5, save_every=5)
seconds = median_wall_time(lambda: hooke.simulate(scene, t_end=0.5, save_every=5))
print(f"{seconds:.2f} s for {result.stats['steps']} steps (median of 3 runs after a first, compiling one)")""",
        """from hooke.viz.plots import snapshot_plot, energy_plot
display(snapshot_plot(result))
display(energy_plot(result))""",
        "## The pins hold, the body sags\n\nThe lowest vertex layer never moves; the body sags and "
        "oscillates about its loaded shape:",
        """y = result.x[:, :, 1]
print("pinned displacement:", np.abs(result.x[:, m.pinned] - m.x0[m.pinned]).max())
print("top of the body: start", y[0].max(), " end", y[-1].max())""",
    ],
    "03_top_and_crane_modes.ipynb": [
        "# Seed 002: the spinning top and the crane\n\nJoints are rigid distance constraints "
        "(Lagrange multipliers); generalized-α with ρ∞ = 0.8 integrates the top. The crane's "
        "vibration analysis is a modal analysis about its static equilibrium.",
        SETUP,
        """top = hooke.scene("top")
r = hooke.simulate(top, t_end=2.0)
i, j = top.model.joint_indices.T
error = np.abs(np.linalg.norm(r.x[:, j] - r.x[:, i], axis=-1) - top.model.joint_length)
print(f"max joint length error over 2 s: {error.max():.2e} m")
plt.figure(figsize=(8, 3)); plt.plot(r.t, r.joint_force); plt.xlabel("t [s]"); plt.ylabel("joint tension [N]"); plt.show()""",
        """crane = hooke.scene("crane")
modes = hooke.modes(crane, k=5)
print(modes.table())
from hooke.viz.plots import mode_shapes_plot
mode_shapes_plot(crane, modes)""",
    ],
    "04_pendulum_length_correction.ipynb": [
        "# Seed 003: the double pendulum and the string-length correction force\n\nRK45 with "
        "rtol = atol = 1e-4 on the exact-tension equations drifts from the string lengths; the "
        "correction force [k_c (L − L0) + β_c (v·n)] n, weighted by the tensions, holds them. "
        "RK45 takes its own steps and interpolates the frames at the 0.01 s output times (dense "
        "output), as the seed's `solve_ivp` did. The full study, `hooke study pendulum-correction`, "
        "follows 100 s of motion (the README's table); here the first 20 s.",
        SETUP,
        """from hooke.studies import run_pendulum_correction_study
table = run_pendulum_correction_study(out, t_end=20.0)
print(table.text())
from IPython.display import Image
Image(table.plot)""",
    ],
    "05_square_drop.ipynb": [
        "# Seed 004: the elastic square dropped on the ground\n\nImplicit Euler as the minimisation "
        "of the incremental potential with a log-barrier for the ground and a line search capped "
        "by continuous collision detection: no node ever crosses the ground.",
        SETUP,
        """scene = hooke.scene("square_drop")
r = hooke.simulate(scene)
touch = int(np.argmax(r.contact_distance < scene.model.contact_dhat))
print(f"first touch at step {touch}, min distance {r.contact_distance.min():.2e} m")
seconds = median_wall_time(lambda: hooke.simulate(scene))
print(f"{1e3 * seconds / r.stats['steps']:.3f} ms per step, every frame saved "
      "(median of 3 runs after a first, compiling one)")""",
        """from hooke.viz.plots import snapshot_plot, penetration_plot
display(snapshot_plot(r, n_snapshots=5))
display(penetration_plot(r))""",
    ],
}


def build(name: str, cells: list[str]) -> nbformat.NotebookNode:
    notebook = new_notebook()
    notebook.cells = [new_markdown_cell(c) if c.startswith("#") else new_code_cell(c) for c in cells]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.metadata["execution"] = {"timeout": TIMEOUTS[name]}
    return notebook


if __name__ == "__main__":
    for name, cells in NOTEBOOKS.items():
        notebook = build(name, cells)
        NotebookClient(notebook, timeout=600, resources={"metadata": {"path": str(FOLDER)}}).execute()
        nbformat.write(notebook, FOLDER / name)
        print("wrote", FOLDER / name)
