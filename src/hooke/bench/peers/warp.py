"""NVIDIA Warp (CPU, float64) as a W1/W2 peer: the same cloth, symplectic Euler, as two Warp
kernels (a spring kernel with atomic adds and an integration kernel). Warp's CPU backend runs a
kernel on one core (DESIGN §3)."""

from __future__ import annotations

MODULE = "warp"
DISTRIBUTION = "warp-lang"
NAME = "Warp"
PRECISION = "float64"


class Stepper:
    def __init__(self, data: dict):
        import numpy as np
        import warp as wp

        wp.config.quiet = True
        wp.init()

        @wp.kernel
        def spring_forces(x: wp.array(dtype=wp.vec3d), springs: wp.array(dtype=wp.int32, ndim=2),
                          rest: wp.array(dtype=wp.float64), k: wp.float64,
                          f: wp.array(dtype=wp.vec3d)):
            s = wp.tid()
            i = springs[s, 0]
            j = springs[s, 1]
            d = x[j] - x[i]
            length = wp.length(d)
            force = k * (length - rest[s]) / length * d
            wp.atomic_add(f, i, force)
            wp.atomic_sub(f, j, force)

        @wp.kernel
        def integrate(x: wp.array(dtype=wp.vec3d), v: wp.array(dtype=wp.vec3d),
                      f: wp.array(dtype=wp.vec3d), inv_mass: wp.array(dtype=wp.float64),
                      gravity: wp.vec3d, dt: wp.float64):
            p = wp.tid()
            w = inv_mass[p]
            if w > wp.float64(0.0):
                v[p] = v[p] + dt * (f[p] * w + gravity)
                x[p] = x[p] + dt * v[p]
            f[p] = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))

        device = "cpu"
        x = self.x = wp.array(data["x"], dtype=wp.vec3d, device=device)
        v, f = wp.zeros_like(x), wp.zeros_like(x)
        springs = wp.array(data["springs"], dtype=wp.int32, device=device)
        rest = wp.array(data["rest"], dtype=wp.float64, device=device)
        inv_mass = wp.array(((~data["pinned"]) / data["mass"]).astype(np.float64),
                            dtype=wp.float64, device=device)
        gravity = wp.vec3d(*data["gravity"])
        k, dt = wp.float64(data["k"]), wp.float64(data["dt"])
        n_springs, n_particles = springs.shape[0], x.shape[0]

        def run(count: int) -> None:
            for _ in range(count):
                wp.launch(spring_forces, dim=n_springs, inputs=[x, springs, rest, k, f],
                          device=device)
                wp.launch(integrate, dim=n_particles, inputs=[x, v, f, inv_mass, gravity, dt],
                          device=device)
            wp.synchronize()

        self.run = run

    def positions(self):
        return self.x.numpy()


def make(data: dict) -> Stepper:
    return Stepper(data)
