"""NVIDIA Warp's tape (CPU, float64) as the ``gradient`` workload's peer: the same 2D cloth as
hooke's ``cloth2d`` (springs with damping along them, two pinned corners, gravity), stepped by
symplectic Euler in two Warp kernels per step, and the gradient of ½ Σ_i |x_i(t_end) −
target_i|² with respect to one factor on every spring's stiffness and one on its damping (hooke's
``{"stiffness": "shared", "damping": "shared"}``), by ``wp.Tape`` over the whole run.

Contract: :class:`ClothTape` is made from the scene's model, dt, the number of steps and the
target; ``forward()`` runs the steps (no tape) and returns x(t_end) (n, 2); ``gradient()`` runs
them under a tape, then its backward pass, and returns (loss, dL/dk factor, dL/dc factor). Every
step has its own position, velocity and force arrays (a tape replays the launches backwards, so
no array may be overwritten): memory O(steps), allocated once. Warp's CPU backend runs a kernel
on one core (DESIGN §3); its kernels are compiled on first use (then cached by Warp).
"""

from __future__ import annotations

import numpy as np

MODULE = "warp"
DISTRIBUTION = "warp-lang"
NAME = "Warp tape"
PRECISION = "float64"


class ClothTape:
    def __init__(self, model, dt: float, steps: int, target: np.ndarray):
        import warp as wp

        wp.config.quiet = True
        wp.init()
        self.wp = wp

        @wp.kernel
        def spring_forces(x: wp.array(dtype=wp.vec2d), v: wp.array(dtype=wp.vec2d),
                          pairs: wp.array(dtype=wp.int32, ndim=2),
                          rest: wp.array(dtype=wp.float64), k: wp.array(dtype=wp.float64),
                          c: wp.array(dtype=wp.float64), factors: wp.array(dtype=wp.float64),
                          f: wp.array(dtype=wp.vec2d)):
            s = wp.tid()
            i = pairs[s, 0]
            j = pairs[s, 1]
            d = x[j] - x[i]
            length = wp.length(d)
            n = d / length
            speed = wp.dot(v[j] - v[i], n)
            # the force on i: the spring's pull k (L − l0) n and the damping's c (Δv·n) n
            pull = (factors[0] * k[s] * (length - rest[s]) + factors[1] * c[s] * speed) * n
            wp.atomic_add(f, i, pull)
            wp.atomic_sub(f, j, pull)

        @wp.kernel
        def integrate(x: wp.array(dtype=wp.vec2d), v: wp.array(dtype=wp.vec2d),
                      f: wp.array(dtype=wp.vec2d), inverse_mass: wp.array(dtype=wp.float64),
                      gravity: wp.vec2d, h: wp.float64, x_out: wp.array(dtype=wp.vec2d),
                      v_out: wp.array(dtype=wp.vec2d)):
            p = wp.tid()
            w = inverse_mass[p]
            if w > wp.float64(0.0):
                v_new = v[p] + h * (f[p] * w + gravity)
                v_out[p] = v_new
                x_out[p] = x[p] + h * v_new
            else:
                v_out[p] = v[p]
                x_out[p] = x[p]

        @wp.kernel
        def misfit(x: wp.array(dtype=wp.vec2d), target: wp.array(dtype=wp.vec2d),
                   loss: wp.array(dtype=wp.float64)):
            p = wp.tid()
            d = x[p] - target[p]
            wp.atomic_add(loss, 0, wp.float64(0.5) * wp.dot(d, d))

        self.kernels = spring_forces, integrate, misfit
        self.steps, self.h = steps, wp.float64(dt)
        self.gravity = wp.vec2d(*(float(g) for g in model.gravity))
        as_vectors = lambda a: wp.array(np.asarray(a, dtype=np.float64), dtype=wp.vec2d,
                                        requires_grad=True)
        self.x = [as_vectors(model.x0) for _ in range(steps + 1)]
        self.v = [as_vectors(model.v0) for _ in range(steps + 1)]
        self.f = [as_vectors(np.zeros_like(model.x0)) for _ in range(steps)]
        self.pairs = wp.array(model.spring_indices.astype(np.int32), dtype=wp.int32)
        scalars = lambda a: wp.array(np.asarray(a, dtype=np.float64), dtype=wp.float64)
        self.rest, self.k, self.c = (scalars(a) for a in (model.spring_rest_length,
                                                           model.spring_stiffness,
                                                           model.spring_damping))
        self.inverse_mass = scalars(np.where(model.pinned, 0.0, 1.0 / model.mass))
        self.factors = wp.array(np.ones(2), dtype=wp.float64, requires_grad=True)
        self.target = wp.array(np.asarray(target, dtype=np.float64), dtype=wp.vec2d)
        self.loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
        self.start_x, self.start_v = np.asarray(model.x0, float), np.asarray(model.v0, float)

    def _run(self) -> None:
        wp = self.wp
        spring_forces, integrate, misfit = self.kernels
        n_springs, n_particles = self.pairs.shape[0], self.x[0].shape[0]
        for step in range(self.steps):
            x, v, f = self.x[step], self.v[step], self.f[step]
            wp.launch(spring_forces, dim=n_springs, device="cpu",
                      inputs=[x, v, self.pairs, self.rest, self.k, self.c, self.factors, f])
            wp.launch(integrate, dim=n_particles, device="cpu",
                      inputs=[x, v, f, self.inverse_mass, self.gravity, self.h,
                              self.x[step + 1], self.v[step + 1]])
        wp.launch(misfit, dim=n_particles, device="cpu",
                  inputs=[self.x[-1], self.target, self.loss])

    def _reset(self) -> None:
        for force in self.f:
            force.zero_()
        self.loss.zero_()

    def forward(self) -> np.ndarray:
        self._reset()
        self._run()
        self.wp.synchronize()
        return self.x[-1].numpy()

    def gradient(self) -> tuple[float, float, float]:
        wp = self.wp
        self._reset()
        tape = wp.Tape()
        with tape:
            self._run()
        tape.backward(loss=self.loss)
        wp.synchronize()
        by_factor = self.factors.grad.numpy().copy()
        loss = float(self.loss.numpy()[0])
        tape.zero()
        return loss, float(by_factor[0]), float(by_factor[1])
