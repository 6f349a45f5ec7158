"""The W1/W2 cloth as plain arrays, for the peers.

Contract: :func:`cloth_arrays` gives exactly hooke's ``cloth`` scene of n × n particles (same
particles, springs, rest lengths, pins, k, m, dt, gravity; damping 0) as NumPy arrays, so every
peer runs the same problem.
"""

from __future__ import annotations

import numpy as np


def cloth_arrays(n: int) -> dict:
    from ...io.scene_file import builtin_scene

    scene = builtin_scene("cloth", n=n)
    model = scene.model
    return {"x": model.x0.copy(), "springs": model.spring_indices.astype(np.int32),
            "rest": model.spring_rest_length.copy(), "k": float(model.spring_stiffness[0]),
            "mass": float(model.mass[0]), "pinned": model.pinned.copy(),
            "gravity": model.gravity.copy(), "dt": scene.dt}
