"""Time integrators, one module per family, all registered by name in :mod:`.base`."""

from . import adaptive, explicit, fast_mass_spring, implicit, newmark, xpbd  # noqa: F401  (importing registers them)
from .base import Integrator, get, names, register

__all__ = ["Integrator", "get", "names", "register"]
