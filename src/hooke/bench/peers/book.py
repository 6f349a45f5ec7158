"""A same-process peer for the square drop: the phys-sim-book's algorithm (seed 004, DESIGN.md §5)
written in the book's own style, the way its Python code spends its time: a Python loop per spring
for the energy, the gradient and the Hessian (a 4×4 block per spring, projected to PSD by its own
eigen-decomposition), a loop per node for the barrier, COO triplets assembled by SciPy and
``spsolve``. Written here for the benchmark, not copied; the numbers are DESIGN.md §5's.

Contract: :func:`square_drop(steps)` returns the positions of every frame (steps + 1, 25, 2) and the
Newton iterations of every step (``hooke bench contact`` times it against hooke).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve

N_SEG, SIDE, H, K, RHO, G, GROUND = 4, 1.0, 0.01, 2e4, 1000.0, 9.81, -1.0
DHAT, KAPPA, TOL = 0.01, 1e5, 1e-2
AREA = SIDE / N_SEG


def square():
    """Nodes (i·(n+1) + j at (−½ + i/n, −½ + j/n)), springs (pairs), their squared rest lengths."""
    x = []
    for i in range(N_SEG + 1):
        for j in range(N_SEG + 1):
            x.append([-SIDE / 2 + i * SIDE / N_SEG, -SIDE / 2 + j * SIDE / N_SEG])
    x = np.array(x)
    springs = []
    for i in range(N_SEG):
        for j in range(N_SEG + 1):
            springs.append([i * (N_SEG + 1) + j, (i + 1) * (N_SEG + 1) + j])  # along x
            springs.append([j * (N_SEG + 1) + i, j * (N_SEG + 1) + i + 1])  # along y
    for i in range(N_SEG):
        for j in range(N_SEG):
            springs.append([i * (N_SEG + 1) + j, (i + 1) * (N_SEG + 1) + j + 1])
            springs.append([(i + 1) * (N_SEG + 1) + j, i * (N_SEG + 1) + j + 1])
    rest2 = [float(np.dot(x[a] - x[b], x[a] - x[b])) for a, b in springs]
    return x, springs, rest2


def psd(matrix):
    values, vectors = np.linalg.eigh(matrix)
    values = np.maximum(values, 0.0)
    return vectors @ np.diag(values) @ vectors.T


class Energy:
    """Incremental potential ½|x − x̃|²_M + h²(E_spring + E_gravity + E_barrier) of one step."""

    def __init__(self, springs, rest2, mass):
        self.springs, self.rest2, self.mass = springs, rest2, mass

    def value(self, x, x_tilde):
        total = 0.0
        for i in range(len(x)):
            diff = x[i] - x_tilde[i]
            total += 0.5 * self.mass * diff.dot(diff)
        spring = 0.0
        for (a, b), l2 in zip(self.springs, self.rest2):
            diff = x[a] - x[b]
            strain = diff.dot(diff) / l2 - 1
            spring += 0.5 * K * l2 * strain * strain
        gravity = 0.0
        barrier = 0.0
        for i in range(len(x)):
            gravity += self.mass * G * x[i][1]
            d = x[i][1] - GROUND
            if d <= 0:
                return np.inf
            if d < DHAT:
                s = d / DHAT
                barrier += AREA * DHAT * KAPPA / 2 * (s - 1) * np.log(s)
        return total + H * H * (spring + gravity + barrier)

    def gradient(self, x, x_tilde):
        g = np.zeros_like(x)
        for i in range(len(x)):
            g[i] = self.mass * (x[i] - x_tilde[i])
            g[i][1] += H * H * self.mass * G
            d = x[i][1] - GROUND
            if d < DHAT:
                s = d / DHAT
                g[i][1] += H * H * AREA * KAPPA / 2 * (np.log(s) + (s - 1) / s)
        for (a, b), l2 in zip(self.springs, self.rest2):
            diff = x[a] - x[b]
            force = H * H * 2 * K * (diff.dot(diff) / l2 - 1) * diff
            g[a] += force
            g[b] -= force
        return g

    def hessian(self, x):
        rows, cols, vals = [], [], []
        for i in range(len(x)):
            for c in range(2):
                rows.append(2 * i + c)
                cols.append(2 * i + c)
                vals.append(self.mass)
            d = x[i][1] - GROUND
            if d < DHAT:
                rows.append(2 * i + 1)
                cols.append(2 * i + 1)
                vals.append(H * H * AREA * KAPPA / (2 * d * d) * (d + DHAT))
        for (a, b), l2 in zip(self.springs, self.rest2):
            diff = x[a] - x[b]
            block = 2 * K / l2 * (2 * np.outer(diff, diff) + (diff.dot(diff) - l2) * np.eye(2))
            local = psd(np.block([[block, -block], [-block, block]]))
            nodes = [a, b]
            for r in range(4):
                for c in range(4):
                    rows.append(2 * nodes[r // 2] + r % 2)
                    cols.append(2 * nodes[c // 2] + c % 2)
                    vals.append(H * H * local[r, c])
        n = 2 * len(x)
        return sp.coo_matrix((vals, (rows, cols)), shape=(n, n)).tocsr()


def step_size(x, p):
    """The first trial step: 0.9 of the first time any node would reach the ground, at most 1."""
    alpha = 1.0
    for i in range(len(x)):
        if p[i][1] < 0:
            alpha = min(alpha, 0.9 * (GROUND - x[i][1]) / p[i][1])
    return alpha


def square_drop(steps: int):
    x, springs, rest2 = square()
    mass = RHO * SIDE * SIDE / (N_SEG + 1) ** 2
    energy = Energy(springs, rest2, mass)
    v = np.zeros_like(x)
    frames, iterations = [x.copy()], []
    for _ in range(steps):
        x_start, x_tilde = x.copy(), x + H * v
        last = energy.value(x, x_tilde)
        p = spsolve(energy.hessian(x), -energy.gradient(x, x_tilde).reshape(-1)).reshape(x.shape)
        count = 0
        while np.linalg.norm(p, np.inf) / H > TOL:  # the book's rule: p's largest row sum
            alpha = step_size(x, p)
            while energy.value(x + alpha * p, x_tilde) > last:
                alpha /= 2
            x = x + alpha * p
            last = energy.value(x, x_tilde)
            p = spsolve(energy.hessian(x), -energy.gradient(x, x_tilde).reshape(-1)).reshape(x.shape)
            count += 1
        v = (x - x_start) / H
        frames.append(x.copy())
        iterations.append(count)
    return np.array(frames), np.array(iterations)

