"""Write the notebooks of docs/notebooks (one per seed, 06 on fitting, 07 the live 3D view) and execute them in
place, so that the committed files show their plots. Run: .venv/bin/python scripts/make_notebooks.py [NAME.ipynb ...]

CI runs every notebook top to bottom again with nbmake (``make test``); each is kept small, and
each carries its own per-cell time limit (``execution.timeout`` in its metadata, read by nbmake;
the Makefile's ``--nbmake-timeout`` is the default for any other): ``TIMEOUTS``, the slowest cell
measured on our 2-core machine (01: verify() 7.3 s; 04: the study 6.0 s; 06: the spring's two
fits 9.3 s, the pendulum's 3.6 s; others below 2 s) with room for Numba compiling its kernels on a
machine without a cache (20–40 s once; generalized-α with joints, 06's pendulum, 39 s).
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
            "05_square_drop.ipynb": 60, "06_fitting.ipynb": 90, "07_live_view.ipynb": 120}

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
        "(a bunny) becomes springs along every tet edge, k = 1e5, m = 1, its flat base fixed; "
        "gravity (0, −9.8, 0); a push at t = 0 (`spin`, an angular velocity about the base) sets "
        "it nodding; (M − h²K) v⁺ = M v + h f with a sparse solve per step. Its energies are "
        "plotted above its rest state, the static equilibrium.",
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
        "## The pins hold, the body nods\n\nThe base never moves; the top of the ears swings "
        "forward and back about the body's loaded shape:",
        """top = int(np.argmax(m.x0[:, 1]))
swing = result.x[:, top, 0] - m.x0[top, 0]
print("pinned displacement:", np.abs(result.x[:, m.pinned] - m.x0[m.pinned]).max())
print(f"top of the ears along x: from {swing.min():+.3f} m to {swing.max():+.3f} m")""",
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
    "06_fitting.ipynb": [
        "# Identifying parameters from observed motion\n\n`hooke.fit` fits a scene's parameters "
        "to observed positions (NaN where a particle is not seen) by least squares, and reports "
        "each value with its 1σ uncertainty from the Gauss–Newton Hessian, σ² (JᵀJ)⁻¹ with σ² "
        "from the residual. The observations here are synthetic: a run of the true model plus "
        "Gaussian noise, so the fitted values can be compared with the truth.",
        SETUP,
        """from hooke.adjoint.params import with_values


def record(scene, noise, t_end, save_every, seed=0, **settings):
    # (times, observed): the true run every save_every steps plus Gaussian noise [m]
    truth = hooke.simulate(scene, t_end=t_end, save_every=save_every, **settings)
    observed = truth.x + np.random.default_rng(seed).normal(0.0, noise, truth.x.shape)
    return truth.t, observed


def fitted_run(fit, times, **settings):
    # the fitted scene's run at the observed times
    step = round((times[1] - times[0]) / settings["dt"])
    return hooke.simulate(fit.scene, t_end=times[-1], save_every=step, **settings)""",
        "## The damped spring: k and c\n\nspring1d (k = 5 N/m, m = 0.5 kg) with a damping "
        "c = 0.3 N s/m along the spring, observed every 0.02 s for 4 s with 1 cm of noise. Both "
        "solvers start from k = 3, c = 0.1: Gauss–Newton / Levenberg–Marquardt (`least_squares`, "
        "the default) and L-BFGS-B on the exact adjoint gradient (`lbfgsb`). k and c are "
        "positive, so they are fitted as ln k and ln c.",
        """spring = with_values(hooke.scene("spring1d"), {"damping": np.array([0.3])})
times, observed = record(spring, 0.01, t_end=4.0, save_every=4, dt=0.005)
observed[:, 0] = np.nan  # the anchor is not observed
start = with_values(spring, {"stiffness": np.array([3.0]), "damping": np.array([0.1])})
spring_fits = {method: hooke.fit(start, observed, {"stiffness": "shared", "damping": "shared"},
                                 times=times, dt=0.005, method=method)
               for method in ["least_squares", "lbfgsb"]}
for method, fit in spring_fits.items():
    print(method); print(fit.text())
fit = spring_fits["least_squares"]
for name, truth in [("stiffness", 5.0), ("damping", 0.3)]:
    print(f"{name}: true {truth}, fitted {fit.values[name]:.4f} ± {fit.uncertainty[name]:.4f} "
          f"({abs(fit.values[name] - truth) / fit.uncertainty[name]:.1f} σ away)")
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.5))
for method, fit in spring_fits.items():
    left.semilogy(fit.history, "o-", label=method)
left.set_xlabel("iteration"); left.set_ylabel("loss ½|r|² [m²]"); left.legend()
run = fitted_run(spring_fits["least_squares"], times, dt=0.005)
right.plot(times, observed[:, 1, 0], ".", ms=3, label="observed")
right.plot(run.t, run.x[:, 1, 0], label="fitted")
right.set_xlabel("t [s]"); right.set_ylabel("x [m]"); right.legend(); plt.show()""",
        "## A cloth's stiffness from three tracked points\n\nAn 8 × 6 `cloth2d` (k = 500 N/m, "
        "damping 2 N s/m per spring) falls from rest; a camera tracks only three of its 48 "
        "points (the two bottom corners and one in the middle) every 0.02 s with 1 mm of noise. "
        "One shared stiffness and one shared damping are fitted, starting from k = 300, c = 1.",
        """cloth = hooke.scene("cloth2d", nx=8, ny=6, stiffness=500.0, damping=2.0)
times, observed = record(cloth, 1e-3, t_end=1.0, save_every=10, dt=0.002)
tracked = [0, 42, 27]  # particle i·ny + j: the bottom corners (0, 0), (7, 0) and (4, 3)
hidden = np.setdiff1d(np.arange(cloth.model.n_particles), tracked)
observed[:, hidden] = np.nan
start = hooke.scene("cloth2d", nx=8, ny=6, stiffness=300.0, damping=1.0)
cloth_fit = hooke.fit(start, observed, {"stiffness": "shared", "damping": "shared"}, times=times,
                      dt=0.002)
print(cloth_fit.text())
run = fitted_run(cloth_fit, times, dt=0.002)
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.5))
left.semilogy(cloth_fit.history, "o-"); left.set_xlabel("iteration"); left.set_ylabel("loss [m²]")
for i in tracked:
    right.plot(times, observed[:, i, 1], ".", ms=3)
    right.plot(run.t, run.x[:, i, 1], label=f"particle {i}")
right.set_xlabel("t [s]"); right.set_ylabel("y [m]: dots observed, lines fitted"); right.legend()
plt.show()""",
        "## The double pendulum: joint lengths and the mass ratio from a filmed record\n\n"
        "Seed 003's pendulum with links of 0.9 m and 0.7 m and masses 1 and 0.6 kg, released "
        "from rest with the links at 100° and 150° from the upward vertical, filmed at 60 fps for "
        "2 s: both masses' positions with 5 mm of noise. On rigid joints the motion depends on "
        "the masses' ratio only (scaling both scales the tensions, not the motion), so the lower "
        "mass is held at 1 kg and the upper one fitted ({\"mass\": [2]}); fitting both gives σ = "
        "inf along the direction that scales them together. The start: link lengths and initial "
        "positions measured on the first frame, equal masses. The initial positions are fitted too "
        "(`{\"x0\": [1, 2]}`): held at the first frame's noisy values they would bias the "
        "lengths. generalized-α at dt = 1/600 s (10 steps per frame) with a tight Newton "
        "tolerance, so that the differenced Jacobian is accurate.",
        """pendulum = hooke.scene("pendulum", masses=[1.0, 0.6], top_velocity=[0.0, 0.0, 0.0])
lengths = np.array([0.9, 0.7])
angles = np.radians([100.0, 150.0])
links = lengths[:, None] * np.stack([np.sin(angles), np.zeros(2), np.cos(angles)], axis=1)
true_pendulum = with_values(pendulum, {"joint_length": lengths,
                                       "x0": np.vstack([np.zeros(3), np.cumsum(links, axis=0)])})
settings = dict(integrator="generalized_alpha", dt=1 / 600, tol=1e-12)
times, observed = record(true_pendulum, 0.005, t_end=2.0, save_every=10, **settings)
observed[:, 0] = np.nan  # the support is not filmed
first = observed[0].copy(); first[0] = 0.0  # the support is at the origin
start = with_values(true_pendulum, {"x0": first, "mass": np.ones(3),
                                    "joint_length": np.linalg.norm(np.diff(first, axis=0), axis=1)})
pendulum_fit = hooke.fit(start, observed, {"joint_length": "each", "mass": [2], "x0": [1, 2]},
                         times=times, **settings)
print(pendulum_fit.text())
for label, truth in [("joint_length[0]", 0.9), ("joint_length[1]", 0.7), ("mass[2]", 0.6)]:
    k = pendulum_fit.labels.index(label)
    print(f"{label}: true {truth}, fitted {pendulum_fit.x[k]:.4f} ± {pendulum_fit.sigma[k]:.4f} "
          f"({abs(pendulum_fit.x[k] - truth) / pendulum_fit.sigma[k]:.1f} σ away)")
run = fitted_run(pendulum_fit, times, **settings)
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
left.semilogy(pendulum_fit.history, "o-"); left.set_xlabel("iteration"); left.set_ylabel("loss [m²]")
for i in (1, 2):
    right.plot(observed[:, i, 0], observed[:, i, 2], ".", ms=3)
    right.plot(run.x[:, i, 0], run.x[:, i, 2], label=f"mass {i}")
right.set_aspect("equal"); right.set_xlabel("x [m]"); right.set_ylabel("z [m]")
right.set_title("dots: filmed at 60 fps; lines: fitted"); right.legend(); plt.show()""",
    ],
    "07_live_view.ipynb": [
        """# A live 3D view with sliders

`hooke.viz.notebook.live_view(scene)` is seed 002's interactive notebook view for any built-in
scene: the body in a Plotly 3D view (lit surface, particles, pins, springs, joints, ground and
spheres; drag to orbit), a **Play** button that steps the real integrator, an integrator menu and
a slider per parameter of the scene; moving a slider restarts the run with that value. It needs
the `[notebook]` extra (`pip install 'hooke[notebook]'`: ipywidgets, and anywidget for Plotly's
`FigureWidget`).

The steps are those of `hooke run` and of the browser viewer (the same session code), bit for
bit. The cells below step the views from code, so that this notebook runs unattended (`make test`
runs it); press **Play** to watch them move.""",
        """import numpy as np
import hooke
from hooke.viz.notebook import live_view

view = live_view("cloth_drop", steps_per_frame=5)
view""",
        """#### Stepping from code

30 frames of 5 steps are 1.5 s: the cloth falls onto the ground at 30° and lies on it. The view's
state is `hooke.simulate`'s after the same steps, bit for bit.""",
        """view.advance(30)
x = view.state.x
print(view.readout.value)
print(f"lowest particle {x[:, 1].min():.4f} m above the ground (the barrier keeps it above 0)")
assert x[:, 1].min() > 0
scene = hooke.scene("cloth_drop")
steps = view.session.steps
result = hooke.simulate(scene, t_end=steps * scene.dt, save_every=steps)
print("identical to hooke.simulate after", steps, "steps:", np.array_equal(result.x[-1], view.state.x))
assert np.array_equal(result.x[-1], view.state.x)""",
        """#### Sliders, and a change that is refused

A slider restarts the run with its value; from code `restart(name=value)` does the same (here a
stiffer cloth). An integrator that cannot run the scene is refused with its reason, and the run
goes on.""",
        """view.restart(stiffness=5000.0)
print("stiffness now", view.session.scene.model.spring_stiffness[0], "N/m; t =", view.state.t)
view.integrator.value = "xpbd"
print(view.message.value)
view.advance(10)
print(view.readout.value)""",
        """## The top, with its joints

Seed 002's Kreisel: four masses on nine rigid joints spinning about its pinned tip
(generalized-α). Its joints hold to round-off of the Newton tolerance.""",
        """top = live_view("top", steps_per_frame=20)
top.advance(25)
print(top.readout.value)
print("worst joint length error:", top.session.scene.model.joint_length_error(top.state.x).max(), "m")
top""",
    ],
}


def build(name: str, cells: list[str]) -> nbformat.NotebookNode:
    notebook = new_notebook()
    notebook.cells = [new_markdown_cell(c) if c.startswith("#") else new_code_cell(c) for c in cells]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.metadata["execution"] = {"timeout": TIMEOUTS[name]}
    return notebook


if __name__ == "__main__":
    import sys

    chosen = sys.argv[1:] or list(NOTEBOOKS)  # names of notebooks to write (default: all)
    for name in chosen:
        cells = NOTEBOOKS[name]
        notebook = build(name, cells)
        # no widget state in the file: a live view's would be megabytes of figure updates
        NotebookClient(notebook, timeout=600, resources={"metadata": {"path": str(FOLDER)}},
                       store_widget_state=False).execute()
        nbformat.write(notebook, FOLDER / name)
        print("wrote", FOLDER / name)
