"""A scene file's integrator options judged when its model cannot be built, so that a file's
problems are all reported at once (``hooke check``, ``hooke.load``): the model's and its
``[run.options]``'s together.

Contract: :func:`option_problems` returns the lines (``key: problem, got value``) the file's
``[run]`` integrator gives for its ``[run.options]`` when made on a stand-in model — two
particles of the file's ``dim`` on a spring, one pinned — exactly as ``hooke run`` makes it on
the real one, keeping only the lines about the options themselves (none about the stand-in).
It returns [] when ``[run]`` cannot say: an unknown integrator or options that are not a table
(those are the file's own problems, reported by the schema).
"""

from __future__ import annotations

from ..errors import HookeInputError, HookeInputErrors, is_number


def _stand_in(dim):
    from ..builder import ModelBuilder
    from ..system import System

    builder = ModelBuilder(dim=dim if dim in (1, 2, 3) and not isinstance(dim, bool) else 1)
    builder.add_particle([0.0] * builder.dim, pinned=True)
    builder.add_particle([1.0] + [0.0] * (builder.dim - 1))
    builder.add_spring(0, 1, stiffness=1.0)
    return System(builder.finalize())


def option_problems(data: dict) -> list[str]:
    """The problems of ``data``'s (a parsed scene file's) ``[run.options]``; see the contract."""
    from ..integrators import get
    from ..scene_setup import Scene

    run = data.get("run") if isinstance(data.get("run"), dict) else {}
    options = run.get("options", {})
    name = run.get("integrator", Scene.integrator)  # the default of a file that names none
    dt = run.get("dt", Scene.dt)
    try:
        integrator = get(name)
    except HookeInputError:
        return []
    if not isinstance(options, dict) or not options:
        return []
    dt = dt if is_number(dt) and dt > 0 else Scene.dt
    try:
        integrator(_stand_in(data.get("dim")), float(dt), **options)
    except HookeInputErrors as error:
        problems = error.problems
    except HookeInputError as error:
        problems = [str(error)]
    else:
        return []
    return [line for line in problems if line.split(":", 1)[0] in options]
