"""The W1/W2 cloth as plain arrays, shared by the peer implementations (``peers_*.py``).

Contract: :func:`cloth_arrays` gives exactly hooke's ``cloth`` scene (same particles, springs,
rest lengths, pins, k, m, dt, gravity) as NumPy arrays, so every peer runs the same problem.
A peer module has ``available() -> bool`` (:func:`importable`) and
``steps_per_second(n, steps, repeats) -> float`` (median over ``repeats`` timed runs of ``steps``
symplectic Euler steps after a warm-up).
"""

from __future__ import annotations

import importlib.util
import time

import numpy as np

import hooke


def importable(module: str) -> bool:
    """Whether ``module`` is installed (found without importing it: importing a peer is slow)."""
    return importlib.util.find_spec(module) is not None


def cloth_arrays(n: int) -> dict:
    scene = hooke.scene("cloth", n=n)
    model = scene.model
    return {"x": model.x0.copy(), "springs": model.spring_indices.astype(np.int32),
            "rest": model.spring_rest_length.copy(), "k": float(model.spring_stiffness[0]),
            "mass": float(model.mass[0]), "pinned": model.pinned.copy(),
            "gravity": model.gravity.copy(), "dt": scene.dt}


def median_rate(run_steps, steps: int, repeats: int, sync=lambda: None) -> float:
    """Median steps/s of ``run_steps(steps)`` over ``repeats`` runs, after one warm-up run."""
    run_steps(min(steps, 10))
    sync()
    rates = []
    for _ in range(repeats):
        started = time.perf_counter()
        run_steps(steps)
        sync()
        rates.append(steps / (time.perf_counter() - started))
    return float(np.median(rates))
