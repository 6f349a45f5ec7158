"""hooke: dynamics of mass-spring systems::

    import hooke
    scene = hooke.scene("spring1d")
    result = hooke.simulate(scene, integrator="rk4", dt=0.01, t_end=5.0)
    result.x, result.energy["total"], scene.analytic(result.t)

Data flows one way: scene → Model + State → integrator steps → State → Result.

Contract of the import: ``import hooke`` loads NumPy and hooke's own light modules only; every
public name below (``hooke.simulate``, ``hooke.scene``, ``hooke.System`` …) and every submodule
(``hooke.kernels``) is imported on first use (PEP 562 ``__getattr__``), so a script or a
``hooke --help`` that needs no integrator does not pay for Numba, SciPy, pydantic, h5py or the
optional solvers (tests/test_startup.py lists the modules ``import hooke`` must not load).
"""

from __future__ import annotations

import importlib
import importlib.util

from .source_date import import_numpy_f2py

import_numpy_f2py()  # first: it reads SOURCE_DATE_EPOCH on import (see hooke.source_date)

from .errors import HookeError, HookeInputError, SimulationError  # noqa: E402
from .version import __version__  # noqa: E402

# Public name → (module, attribute; None: the module itself). integrators, scenes, simulate and
# sweep are callable modules (hooke.callable_module): the names lead both to the functions and
# to the modules (hooke.integrators.newmark).
_LAZY = {
    "integrators": ("hooke.integrators", None), "scenes": ("hooke.scenes", None),
    "simulate": ("hooke.simulate", None), "sweep": ("hooke.sweep", None),
    "Modes": ("hooke.analysis", "Modes"), "modes": ("hooke.analysis", "modes"),
    "ModelBuilder": ("hooke.builder", "ModelBuilder"),
    "get_integrator": ("hooke.integrators.base", "get"),
    "scene": ("hooke.io.scene_file", "builtin_scene"), "load": ("hooke.io.scene_file", "load"),
    "open": ("hooke.io.store", "open_result"),
    "Model": ("hooke.model", "Model"), "State": ("hooke.model", "State"),
    "Result": ("hooke.result", "Result"), "Scene": ("hooke.scene_setup", "Scene"),
    "resume": ("hooke.simulate", "resume"), "SweepResult": ("hooke.sweep", "SweepResult"),
    "System": ("hooke.system", "System"), "gradient": ("hooke.adjoint", "gradient"),
    "fit": ("hooke.fitting", "fit"), "FitResult": ("hooke.fitting", "FitResult"),
}

__all__ = ["FitResult", "HookeError", "HookeInputError", "Model", "ModelBuilder", "Modes", "Result", "Scene",
           "SimulationError", "State", "System", "get_integrator", "fit", "gradient", "integrators", "load", "open", "scene",
           "resume", "scenes", "simulate", "modes", "sweep", "SweepResult", "__version__"]


def __getattr__(name: str):
    """A public name or a submodule, imported on first use and kept as an attribute."""
    if name in _LAZY:
        module_name, attribute = _LAZY[name]
        module = importlib.import_module(module_name)
        value = module if attribute is None else getattr(module, attribute)
    elif not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
