"""hooke: dynamics of mass-spring systems.

    import hooke
    scene = hooke.scene("spring1d")
    result = hooke.simulate(scene, integrator="rk4", dt=0.01, t_end=5.0)
    result.x, result.energy["total"], scene.analytic(result.t)

Data flows one way: scene → Model + State → integrator steps → State → Result.
"""

from .source_date import import_numpy_f2py

import_numpy_f2py()  # first: it reads SOURCE_DATE_EPOCH on import (see hooke.source_date)

from .analysis import Modes, modes
from .builder import ModelBuilder
from .errors import HookeError, HookeInputError, SimulationError
from .integrators.base import get as get_integrator
from .integrators.base import names as _integrator_names
from .io.scene_file import load
from .io.store import open_result as open  # noqa: A001 - hooke.open(path) is the API
from .model import Model, State
from .result import Result
from .scene import Scene
from .scenes import names as _scene_names
from .scenes import scene
from .simulate import resume, simulate
from .sweep import SweepResult, sweep
from .system import System

__version__ = "0.1.0"


def integrators() -> list[str]:
    """Names of every registered integrator."""
    return _integrator_names()


def scenes() -> list[str]:
    """Names of every built-in scene."""
    return _scene_names()


__all__ = ["HookeError", "HookeInputError", "Model", "ModelBuilder", "Modes", "Result", "Scene",
           "SimulationError", "State", "System", "get_integrator", "integrators", "load", "open", "scene",
           "resume", "scenes", "simulate", "modes", "sweep", "SweepResult", "__version__"]
