"""NVIDIA Newton (CPU) peer for W1/W2: the same cloth in Newton's ModelBuilder (particles and
springs, spring damping 0), stepped by ``SolverSemiImplicit`` (symplectic Euler). Triangle
contact is off and no particle grid is built, so the step is the spring force and the
integration alone (DESIGN §3: contact otherwise dominates its step)."""

from __future__ import annotations

from peers_common import cloth_arrays, importable, median_rate


def available() -> bool:
    return importable("newton")


def steps_per_second(n: int, steps: int, repeats: int) -> float:
    import newton
    import warp as wp

    wp.config.quiet = True
    data = cloth_arrays(n)
    builder = newton.ModelBuilder(up_axis=newton.Axis.Y, gravity=tuple(data["gravity"]))
    for p, position in enumerate(data["x"]):
        builder.add_particle(tuple(position), (0.0, 0.0, 0.0),
                             0.0 if data["pinned"][p] else data["mass"], radius=0.0)
    for (i, j) in data["springs"]:
        builder.add_spring(int(i), int(j), data["k"], 0.0, 0.0)
    model = builder.finalize(device="cpu")
    solver = newton.solvers.SolverSemiImplicit(model, enable_tri_contact=False)
    states = [model.state(), model.state()]
    dt = data["dt"]

    def run(count):
        for _ in range(count):
            states[0].clear_forces()
            solver.step(states[0], states[1], None, None, dt)
            states.reverse()

    return median_rate(run, steps, repeats, sync=wp.synchronize)
