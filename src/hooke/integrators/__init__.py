"""Time integrators, one module per family, all registered by name in :mod:`.base`.

``hooke.integrators()`` lists the registered names: this package is callable
(:mod:`hooke.callable_module`), so ``hooke.integrators.newmark`` stays the module.
"""

from ..callable_module import make_callable
from . import adaptive, explicit, fast_mass_spring, implicit, newmark, xpbd  # noqa: F401  (importing registers them)
from .base import Integrator, get, names, register

__all__ = ["Integrator", "get", "names", "register"]

make_callable(__name__, names)
