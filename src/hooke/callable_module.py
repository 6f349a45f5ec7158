"""Callable modules: one name for a module and the function it is about.

``hooke.integrators()`` lists the integrators while ``hooke.integrators.newmark`` is a module;
``hooke.simulate(scene)`` runs a scene while ``hooke.simulate.resume`` continues a stored run. Had
the package bound the function to that name, the name would no longer lead to the module:
``import hooke.integrators.newmark`` would give an ``hooke.integrators`` without ``newmark``. So
the module itself is made callable instead, and calling it calls its function.

Contract: :func:`make_callable` is called once, at the end of the module it changes; calling the
module then calls ``function`` with the same arguments, and ``inspect.signature`` (``help``, an
editor's hints) shows the function's signature.
"""

from __future__ import annotations

import inspect
import sys
import types
from typing import Callable


def make_callable(module_name: str, function: Callable) -> None:
    """Make the module ``module_name`` (pass ``__name__``) call ``function`` when called."""
    # A special method is looked up on the type, so each callable module gets its own class.
    sys.modules[module_name].__class__ = type("CallableModule", (types.ModuleType,), {
        "__call__": staticmethod(function), "__signature__": inspect.signature(function)})
