"""A same-process peer for ``squares_self_contact``: the phys-sim-book's self-contact simulator
written in the book's own Python style — Python loops over springs, nodes and point–edge pairs,
NumPy per element (a 4×4 or 6×6 block, projected to PSD by its own eigen-decomposition), COO
triplets assembled by SciPy and ``spsolve`` — for the same problem as hooke's scene. Written here
for the benchmark, not copied.

The problem is hooke's scene (the squares' nodes, springs, masses and boundary segments are read
from its model; the numbers are the scene file's): squared-length springs (the book's
mass-spring energy), gravity, the ground y = −1 and the ceiling moving down (the book's
log-barrier on the distance to a plane, its CCD, the ceiling carrying the nodes it pushes into
the Newton start), lagged smoothed friction with the ground (the book's square-on-slope
friction: normal force and tangent fixed at the step start, ε = ε_v·h), and between the squares'
boundaries the point–edge barrier on the squared distance with the additive CCD of Li et al.
2021, both in the form hooke's engine (ipctk) uses, so that the two solve the same equations:

    E_pair = w·κ/8·d̂·(−(s² − 1)² ln s²),  s = d/d̂,  w = ½·A (A: the node's share of its
    boundary, 0.225 m here: the book's ½·contact area per point–edge pair)

(the book's own point–edge barrier, w·κ/2·(s² − 1)·ln s² … is C¹ at d̂, ipctk's C², and would
part from hooke's run at the first contact between the squares). Newton: the book's loop — the
incremental potential, p = −H⁻¹∇E, stop when the largest row sum of |p|/h is below tol (checked
before the first iteration), the first trial step capped by CCD, halving while E increases.

One difference is left: a pair whose closest points are two vertices is counted once by ipctk
and once per segment meeting at the vertex here (the book's loop over point–edge pairs); in this
scene no corner meets a corner, which the agreement check of the bench confirms.

Contract: :func:`squares_self_contact(steps)` returns the positions of every frame
(steps + 1, 18, 2) and the Newton iterations of every step.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve

CCD_RESCALING = 0.9  # the additive CCD's conservative rescaling, and the planes' CCD fraction


def scene_arrays() -> dict:
    """The scene's numbers and hooke's model of it as plain arrays."""
    from ...io.scene_file import builtin_scene

    scene = builtin_scene("squares_self_contact")
    model = scene.model
    x0, edges = model.x0, model.surface_faces
    # a node's share of its boundary: half the rest lengths of the segments meeting there
    share = np.zeros(model.n_particles)
    for a, b in edges:
        length = float(np.linalg.norm(x0[b] - x0[a]))
        share[a] += length / 2
        share[b] += length / 2
    return {"x": x0.copy(), "springs": model.spring_indices.tolist(),
            "rest2": (model.spring_rest_length ** 2).tolist(), "k": float(model.spring_stiffness[0]),
            "mass": model.mass.copy(), "area": model.contact_area.copy(), "share": share,
            "edges": edges.tolist(), "g": model.gravity.copy(), "h": scene.dt,
            "dhat": model.contact_dhat, "kappa": model.contact_kappa, "epsv": model.contact_epsv,
            "mu": float(model.plane_friction[0]), "ground": -1.0, "ceiling": 0.27,
            "speed": 0.5, "until": 1.94, "tol": scene.options["tol"]}


def psd(matrix):
    values, vectors = np.linalg.eigh(matrix)
    return vectors @ np.diag(np.maximum(values, 0.0)) @ vectors.T


def point_edge(p, e0, e1):
    """(squared distance, its gradient (6,) and Hessian (6, 6) over (p, e0, e1))."""
    e = e1 - e0
    a = p - e0
    t = a.dot(e) / e.dot(e)
    if t < 0 or t > 1:  # the closest point is an end: the point–point distance
        end = e0 if t < 0 else e1
        d = p - end
        grad, hess = np.zeros(6), np.zeros((6, 6))
        k = 2 if t < 0 else 4
        grad[0:2], grad[k:k + 2] = 2 * d, -2 * d
        for r, sr in ((0, 1), (k, -1)):
            for c, sc in ((0, 1), (k, -1)):
                hess[r:r + 2, c:c + 2] = 2 * sr * sc * np.eye(2)
        return d.dot(d), grad, hess
    # d² = c²/L with c = a × e, L = |e|², over z = (a, e); then (p, e0, e1) by z = A x
    J = np.array([[0.0, 1.0], [-1.0, 0.0]])
    c = a[0] * e[1] - a[1] * e[0]
    L = e.dot(e)
    gc = np.concatenate([J @ e, -J @ a])
    Hc = np.block([[np.zeros((2, 2)), J], [J.T, np.zeros((2, 2))]])
    gL = np.concatenate([np.zeros(2), 2 * e])
    HL = np.block([[np.zeros((2, 2)), np.zeros((2, 2))], [np.zeros((2, 2)), 2 * np.eye(2)]])
    gz = 2 * c * gc / L - c * c / L ** 2 * gL
    Hz = (2 * np.outer(gc, gc) / L + 2 * c * Hc / L
          - 2 * c / L ** 2 * (np.outer(gc, gL) + np.outer(gL, gc))
          - c * c / L ** 2 * HL + 2 * c * c / L ** 3 * np.outer(gL, gL))
    A = np.block([[np.eye(2), -np.eye(2), np.zeros((2, 2))],
                  [np.zeros((2, 2)), -np.eye(2), np.eye(2)]])
    return c * c / L, A.T @ gz, A.T @ Hz @ A


def additive_ccd(x, dx, distance2, max_disp):
    """Li et al.'s additive CCD: the conservative time of impact in [0, 1], or 1 if none."""
    d2 = distance2(x)
    d = math.sqrt(d2)
    gap = (1 - CCD_RESCALING) * d2 / d
    toi = 0.0
    while True:
        step = CCD_RESCALING * d2 / (d * max_disp)
        x = x + step * dx
        d2 = distance2(x)
        d = math.sqrt(d2)
        if toi > 0 and d2 / d < gap:
            return toi
        toi += step
        if toi > 1:
            return 1.0


class Scene:
    def __init__(self, data):
        self.__dict__.update(data)
        self.n = len(self.x)
        # the point–edge pairs: every boundary node against every boundary segment not its own
        nodes = sorted({i for edge in self.edges for i in edge})
        self.pairs = [(i, a, b) for i in nodes for a, b in self.edges if i not in (a, b)]

    def ceiling_at(self, t):
        return self.ceiling - self.speed * min(t, self.until)

    # -- the incremental potential of one step ------------------------------------------------
    def pair_barrier(self, d2, weight):
        """(b, b', b'') of w·κ/8·d̂·(−(s² − 1)² ln s²) in the squared distance q = d²."""
        Q = self.dhat ** 2
        scale = weight * self.kappa / (8 * self.dhat ** 3)
        r = d2 - Q
        log = math.log(d2 / Q)
        return (-scale * r * r * log, -scale * (2 * r * log + r * r / d2),
                -scale * (2 * log + 4 * r / d2 - r * r / (d2 * d2)))

    def plane_barrier(self, d, area):
        """(b, b', b'') of A·d̂·κ/2·(s − 1)·ln s, s = d/d̂."""
        s = d / self.dhat
        return (area * self.dhat * self.kappa / 2 * (s - 1) * math.log(s),
                area * self.kappa / 2 * (math.log(s) + (s - 1) / s),
                area * self.kappa * (d + self.dhat) / (2 * d * d))

    def energy(self, x, x_tilde, ceiling, friction):
        h2 = self.h * self.h
        total = 0.0
        for i in range(self.n):
            diff = x[i] - x_tilde[i]
            total += 0.5 * self.mass[i] * diff.dot(diff) - h2 * self.mass[i] * self.g.dot(x[i])
        for (a, b), l2 in zip(self.springs, self.rest2):
            diff = x[a] - x[b]
            strain = diff.dot(diff) / l2 - 1
            total += h2 * 0.5 * self.k * l2 * strain * strain
        for i in range(self.n):
            for d in (x[i][1] - self.ground, ceiling - x[i][1]):
                if d <= 0:
                    return math.inf
                if d < self.dhat:
                    total += h2 * self.plane_barrier(d, self.area[i])[0]
        for i, a, b in self.pairs:
            d2 = point_edge(x[i], x[a], x[b])[0]
            if d2 <= 0:
                return math.inf
            if d2 < self.dhat ** 2:
                total += h2 * self.pair_barrier(d2, 0.5 * self.share[i])[0]
        for i, weight, anchor in friction:
            y = abs(x[i][0] - anchor)
            eps = self.epsv * self.h
            f0 = y if y >= eps else y * y * (eps - y / 3) / (eps * eps) + eps / 3
            total += h2 * weight * f0
        return total

    def gradient(self, x, x_tilde, ceiling, friction):
        h2 = self.h * self.h
        g = np.zeros_like(x)
        for i in range(self.n):
            g[i] = self.mass[i] * (x[i] - x_tilde[i]) - h2 * self.mass[i] * self.g
            d = x[i][1] - self.ground
            if d < self.dhat:
                g[i][1] += h2 * self.plane_barrier(d, self.area[i])[1]
            d = ceiling - x[i][1]
            if d < self.dhat:
                g[i][1] -= h2 * self.plane_barrier(d, self.area[i])[1]
        for (a, b), l2 in zip(self.springs, self.rest2):
            diff = x[a] - x[b]
            force = h2 * 2 * self.k * (diff.dot(diff) / l2 - 1) * diff
            g[a] += force
            g[b] -= force
        for i, a, b in self.pairs:
            d2, grad, _ = point_edge(x[i], x[a], x[b])
            if d2 < self.dhat ** 2:
                local = h2 * self.pair_barrier(d2, 0.5 * self.share[i])[1] * grad
                for slot, node in enumerate((i, a, b)):
                    g[node] += local[2 * slot:2 * slot + 2]
        for i, weight, anchor in friction:
            u = x[i][0] - anchor
            y, eps = abs(u), self.epsv * self.h
            if y > 0:
                g[i][0] += h2 * weight * (1 / y if y >= eps else (2 * eps - y) / (eps * eps)) * u
        return g

    def hessian(self, x, ceiling, friction):
        h2 = self.h * self.h
        rows, cols, vals = [], [], []

        def add(nodes, block):
            for r in range(2 * len(nodes)):
                for c in range(2 * len(nodes)):
                    rows.append(2 * nodes[r // 2] + r % 2)
                    cols.append(2 * nodes[c // 2] + c % 2)
                    vals.append(h2 * block[r, c])

        for i in range(self.n):
            for c in range(2):
                rows.append(2 * i + c)
                cols.append(2 * i + c)
                vals.append(self.mass[i])
            for d in (x[i][1] - self.ground, ceiling - x[i][1]):
                if d < self.dhat:
                    rows.append(2 * i + 1)
                    cols.append(2 * i + 1)
                    vals.append(h2 * self.plane_barrier(d, self.area[i])[2])
        for (a, b), l2 in zip(self.springs, self.rest2):
            diff = x[a] - x[b]
            block = 2 * self.k / l2 * (2 * np.outer(diff, diff) + (diff.dot(diff) - l2) * np.eye(2))
            add([a, b], psd(np.block([[block, -block], [-block, block]])))
        for i, a, b in self.pairs:
            d2, grad, hess = point_edge(x[i], x[a], x[b])
            if d2 < self.dhat ** 2:
                _, db, ddb = self.pair_barrier(d2, 0.5 * self.share[i])
                add([i, a, b], psd(ddb * np.outer(grad, grad) + db * hess))
        for i, weight, anchor in friction:
            y, eps = abs(x[i][0] - anchor), self.epsv * self.h
            # along the ground: f1/y + (f1' y − f1)/y³ · u² = f1'(y)
            rows.append(2 * i)
            cols.append(2 * i)
            vals.append(h2 * weight * (0.0 if y >= eps else (2 * eps - 2 * y) / (eps * eps)))
        n = 2 * self.n
        return sp.coo_matrix((vals, (rows, cols)), shape=(n, n)).tocsr()

    # -- the step ------------------------------------------------------------------------------
    def step_size(self, x, p, ceiling):
        alpha = 1.0
        for i in range(self.n):
            if p[i][1] < 0:
                alpha = min(alpha, CCD_RESCALING * (self.ground - x[i][1]) / p[i][1])
            if p[i][1] > 0:
                alpha = min(alpha, CCD_RESCALING * (ceiling - x[i][1]) / p[i][1])
        for i, a, b in self.pairs:
            start, move = np.array([x[i], x[a], x[b]]), np.array([p[i], p[a], p[b]])
            end = start + move
            low, high = np.minimum(start, end), np.maximum(start, end)
            edge_low, edge_high = low[1:].min(axis=0), high[1:].max(axis=0)
            if np.any(high[0] < edge_low) or np.any(low[0] > edge_high):
                continue  # the boxes of the point's and the segment's paths do not overlap
            move = move - move.mean(axis=0)
            max_disp = (np.linalg.norm(move[0])
                        + math.sqrt(max(move[1].dot(move[1]), move[2].dot(move[2]))))
            if max_disp > 0:
                alpha = min(alpha, additive_ccd(start.reshape(-1), move.reshape(-1),
                                                lambda z: point_edge(z[0:2], z[2:4], z[4:6])[0],
                                                max_disp))
        return alpha

    def friction_pairs(self, x):
        """(node, μλ, anchor x) of every node the ground's barrier pushes at the step start."""
        pairs = []
        for i in range(self.n):
            d = x[i][1] - self.ground
            if d < self.dhat and self.area[i] > 0:
                pairs.append((i, -self.mu * self.plane_barrier(d, self.area[i])[1], x[i][0]))
        return pairs

    def step(self, x, v, t):
        h = self.h
        x_tilde = x + h * v
        ceiling_now, ceiling = self.ceiling_at(t), self.ceiling_at(t + h)
        friction = self.friction_pairs(x)
        y = x.copy()
        push = ceiling_now - ceiling  # the ceiling carries the nodes it pushes by its motion
        if push > 0:
            for i in range(self.n):
                if ceiling_now - x[i][1] < self.dhat + push:
                    y[i][1] -= push
        last = self.energy(y, x_tilde, ceiling, friction)
        count = 0
        while True:
            p = spsolve(self.hessian(y, ceiling, friction),
                        -self.gradient(y, x_tilde, ceiling, friction).reshape(-1)).reshape(x.shape)
            if np.linalg.norm(p, np.inf) / h < self.tol:  # the largest row sum of |p|
                break
            alpha = self.step_size(y, p, ceiling)
            while self.energy(y + alpha * p, x_tilde, ceiling, friction) > last:
                alpha /= 2
            y = y + alpha * p
            last = self.energy(y, x_tilde, ceiling, friction)
            count += 1
        return y, (y - x) / h, count


def squares_self_contact(steps: int):
    scene = Scene(scene_arrays())
    x = scene.x.copy()
    v = np.zeros_like(x)
    frames, iterations = [x.copy()], []
    for k in range(steps):
        x, v, count = scene.step(x, v, k * scene.h)
        frames.append(x.copy())
        iterations.append(count)
    return np.array(frames), np.array(iterations)
