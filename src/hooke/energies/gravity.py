"""Gravitational potential U = −Σ m_i g·x_i; constant force, zero Hessian."""

from __future__ import annotations

import numpy as np

NAME = "gravity"
_EMPTY = np.empty(0, dtype=np.int64)


def active(model) -> bool:
    return bool(np.any(model.gravity != 0))


def value(model, x: np.ndarray) -> float:
    return -float(np.sum(model.mass * (x @ model.gravity)))


def gradient(model, x: np.ndarray) -> np.ndarray:
    return -model.mass[:, None] * model.gravity[None, :] * np.ones_like(x)


def hessian_structure(model):
    return _EMPTY, _EMPTY


def hessian_values(model, x: np.ndarray, project_psd: bool = False) -> np.ndarray:
    return np.empty(0)
