"""Taichi (CPU, float64) as a W1/W2 peer: the same cloth, symplectic Euler, written the Taichi
way. The spring loop is serialised (``ti.loop_config(serialize=True)``): on this 2-core CPU
Taichi's parallel loop with atomic adds is about 5× slower than the serial one (DESIGN §3); the
particle update is a parallel loop."""

from __future__ import annotations

MODULE = DISTRIBUTION = "taichi"
NAME = "Taichi"
PRECISION = "float64"


class Stepper:
    def __init__(self, data: dict):
        import taichi as ti

        ti.init(arch=ti.cpu, default_fp=ti.f64, log_level=ti.ERROR)
        n_particles, n_springs = data["x"].shape[0], data["springs"].shape[0]
        x = self.x = ti.Vector.field(3, ti.f64, n_particles)
        v = ti.Vector.field(3, ti.f64, n_particles)
        f = ti.Vector.field(3, ti.f64, n_particles)
        inv_mass = ti.field(ti.f64, n_particles)
        springs = ti.Vector.field(2, ti.i32, n_springs)
        rest = ti.field(ti.f64, n_springs)
        x.from_numpy(data["x"])
        v.fill(0.0)
        inv_mass.from_numpy((~data["pinned"]) / data["mass"])
        springs.from_numpy(data["springs"])
        rest.from_numpy(data["rest"])
        k, dt = data["k"], data["dt"]
        gravity = ti.Vector(list(data["gravity"]))

        @ti.kernel
        def step():
            for p in f:
                f[p] = ti.Vector([0.0, 0.0, 0.0])
            ti.loop_config(serialize=True)
            for s in range(n_springs):
                i, j = springs[s][0], springs[s][1]
                d = x[j] - x[i]
                length = d.norm()
                force = k * (length - rest[s]) / length * d
                f[i] += force
                f[j] -= force
            for p in x:
                if inv_mass[p] > 0:
                    v[p] += dt * (f[p] * inv_mass[p] + gravity)
                    x[p] += dt * v[p]

        self.step, self.sync = step, ti.sync

    def run(self, count: int) -> None:
        for _ in range(count):
            self.step()
        self.sync()

    def positions(self):
        return self.x.to_numpy()


def make(data: dict) -> Stepper:
    return Stepper(data)
