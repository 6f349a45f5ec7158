"""hooke: dynamics of mass-spring systems.

    import hooke
    scene = hooke.scene("spring1d")
    result = hooke.simulate(scene, integrator="rk4", dt=0.01, t_end=5.0)
    result.x, result.energy["total"], scene.analytic(result.t)

Data flows one way: scene → Model + State → integrator steps → State → Result.
"""

from .source_date import import_numpy_f2py

import_numpy_f2py()  # first: it reads SOURCE_DATE_EPOCH on import (see hooke.source_date)

# integrators, scenes, simulate and sweep are callable modules (hooke.callable_module): the
# names lead both to the functions and to the modules (hooke.integrators.newmark).
from . import integrators, scenes, simulate, sweep  # noqa: E402
from .analysis import Modes, modes
from .builder import ModelBuilder
from .errors import HookeError, HookeInputError, SimulationError
from .integrators.base import get as get_integrator
from .io.scene_file import builtin_scene as scene
from .io.scene_file import load
from .io.store import open_result as open  # noqa: A001 - hooke.open(path) is the API
from .model import Model, State
from .result import Result
from .scene_setup import Scene
from .simulate import resume
from .sweep import SweepResult
from .system import System
from .version import __version__

__all__ = ["HookeError", "HookeInputError", "Model", "ModelBuilder", "Modes", "Result", "Scene",
           "SimulationError", "State", "System", "get_integrator", "integrators", "load", "open", "scene",
           "resume", "scenes", "simulate", "modes", "sweep", "SweepResult", "__version__"]
