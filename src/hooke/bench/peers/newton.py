"""NVIDIA Newton (CPU) as a W1/W2 peer: the same cloth in Newton's ModelBuilder (particles and
springs, spring damping 0), stepped by ``SolverSemiImplicit`` (symplectic Euler). Triangle
contact is off and no particle grid is built, so the step is the spring force and the
integration alone (DESIGN §3: contact otherwise dominates its step). Newton keeps particle
positions in float32: its trajectory agrees with hooke's float64 one to float32 round-off only."""

from __future__ import annotations

MODULE = DISTRIBUTION = "newton"
NAME = "Newton"
PRECISION = "float32"


class Stepper:
    def __init__(self, data: dict):
        import newton
        import warp as wp

        wp.config.quiet = True
        builder = newton.ModelBuilder(up_axis=newton.Axis.Y, gravity=tuple(data["gravity"]))
        for p, position in enumerate(data["x"]):
            builder.add_particle(tuple(position), (0.0, 0.0, 0.0),
                                 0.0 if data["pinned"][p] else data["mass"], radius=0.0)
        for (i, j) in data["springs"]:
            builder.add_spring(int(i), int(j), data["k"], 0.0, 0.0)
        model = builder.finalize(device="cpu")
        solver = newton.solvers.SolverSemiImplicit(model, enable_tri_contact=False)
        states = self.states = [model.state(), model.state()]
        dt = data["dt"]

        def run(count: int) -> None:
            for _ in range(count):
                states[0].clear_forces()
                solver.step(states[0], states[1], None, None, dt)
                states.reverse()
            wp.synchronize()

        self.run = run

    def positions(self):
        return self.states[0].particle_q.numpy()


def make(data: dict) -> Stepper:
    return Stepper(data)
