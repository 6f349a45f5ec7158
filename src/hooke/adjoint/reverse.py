"""``hooke.gradient``: a loss of a run's saved frames and its exact gradient by the discrete adjoint.

Contract: the forward run is the one ``hooke.simulate`` makes with the same arguments (the same
integrator object steps it, so the frames are bit-identical); the gradient is that of the
discrete trajectory — every step's map differentiated exactly (:mod:`.explicit`,
:mod:`.implicit`, :mod:`.alpha`), not the ODE's — and matches central finite differences of
``hooke.simulate`` to their truncation error (for the Newton-solved steps, to the solver's
tolerance: the implicit function theorem gives the gradient of the exact step). Memory: the
states of :class:`.checkpoint.Tape` (by default all of them while they fit in ``tape_memory``
bytes, else about √steps; ``checkpoints=`` bounds them) plus the saved frames the loss reads.

The reverse sweep, from the last step to the first: at each step n the loss's ∂L/∂x_n, ∂L/∂v_n
are added where n is a saved frame; the pinned rows of x_n (put at the model's x0 by step n − 1)
go to x0's gradient and those of v_n (always 0) are dropped; then the step's adjoint gives the
adjoints of step n − 1 and adds the parameters' contributions. At step 0 what is left is the
gradient with respect to the initial state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import HookeInputError, SimulationError
from ..simulate import plan
from . import alpha, base, explicit, implicit  # noqa: F401  (registers the adjoint steps)
from . import params as parameters
from .checkpoint import TAPE_MEMORY, Tape, segment_length, snapshot


@dataclass
class Frames:
    """The saved frames a loss reads: t (frames,), x and v (frames, n, d), the scene."""

    t: np.ndarray
    x: np.ndarray
    v: np.ndarray
    scene: object


def check_loss(loss) -> None:
    if not callable(loss) or not callable(getattr(loss, "gradient", None)):
        raise HookeInputError("loss", "must be a hooke.losses loss (or a Loss subclass with "
                              "__call__ and gradient)", type(loss).__name__)


def loss_value(loss, frames: Frames) -> float:
    value = loss(frames)
    if np.ndim(value) != 0:
        raise HookeInputError("loss", "must return a scalar", np.shape(value))
    value = float(value)
    if not np.isfinite(value):
        raise HookeInputError("loss", "returned a non-finite value", value)
    return value


def loss_gradient(loss, frames: Frames) -> tuple[np.ndarray, np.ndarray]:
    gx, gv = (np.asarray(g, dtype=float) for g in loss.gradient(frames))
    for label, grad in (("x", gx), ("v", gv)):
        if grad.shape != frames.x.shape:
            raise HookeInputError("loss", f"gradient with respect to {label} must have the "
                                  f"frames' shape {frames.x.shape}", grad.shape)
        if not np.all(np.isfinite(grad)):
            raise HookeInputError("loss", f"gradient with respect to {label} is not finite",
                                  label)
    return gx, gv


def finite_adjoints(step, t: float, *args) -> tuple[np.ndarray, np.ndarray]:
    """``step(*args)``'s adjoints (λx, λv) at time ``t``, refused once not finite: a loss whose
    scale (weights 1e308) overflows the sweep, which NumPy only warns of and SciPy's solves
    refuse in words of their own."""
    with np.errstate(over="ignore", invalid="ignore"):
        try:
            lam_x, lam_v = step(*args)
        except ValueError as error:
            if "infs or NaNs" not in str(error):
                raise
            lam_x = lam_v = np.array([np.nan])
    if not (np.all(np.isfinite(lam_x)) and np.all(np.isfinite(lam_v))):
        raise SimulationError(f"gradient: the adjoint ∂L/∂(x, v) overflowed to inf or NaN at "
                              f"t = {t:.6g}: the loss's scale (its weights or targets) is past "
                              "double precision; scale the loss down")
    return lam_x, lam_v


def gradient(scene, loss, params, integrator=None, dt=None, t_end=None, **options):
    """(L, {name: ∂L/∂name}) for ``loss`` of the run ``hooke.simulate(scene, integrator, dt,
    t_end, save_every=…, **options)`` would make.

    Args:
        scene, integrator, dt, t_end: as for :func:`hooke.simulate`.
        loss: a :mod:`hooke.losses` loss (value and gradient with respect to the frames).
        params: names (and modes) of :mod:`hooke.adjoint.params`: a gradient per element
            (the array's shape) or, ``{"stiffness": "shared"}``, one float for a shared factor.
        **options: ``save_every`` (the frames the loss sees), ``checkpoints`` (the most states
            kept for the reverse sweep; None: every state while they fit in ``tape_memory``
            bytes, default :data:`~hooke.adjoint.checkpoint.TAPE_MEMORY`, else about √steps),
            and the integrator's options.
    """
    save_every = options.pop("save_every", None)
    checkpoints = options.pop("checkpoints", None)
    memory = options.pop("tape_memory", TAPE_MEMORY)
    run = plan(scene, integrator, dt, t_end, save_every, **options)
    model = scene.model
    step = base.get(run.name)
    base.check_model(model, step)
    adjoint = step(run.system, run.stepper)
    parsed = parameters.parse(params, model)
    check_loss(loss)
    state_bytes = 2 * scene.state.x.nbytes + sum(
        value.nbytes for value in snapshot(run.stepper).values() if isinstance(value, np.ndarray))
    tape = Tape(run.stepper, run.n_steps,
                segment_length(run.n_steps, checkpoints, state_bytes, memory),
                lambda: type(run.stepper)(run.system, run.dt, **run.stepper.options))
    frame_of_step = {int(step): frame for frame, step in enumerate(run.steps)}
    shape = (run.steps.size, model.n_particles, model.dim)
    frames = Frames(scene.state.t + run.steps * run.dt, np.empty(shape), np.empty(shape), scene)

    def record(step, state):
        frame = frame_of_step.get(step)
        if frame is not None:
            frames.x[frame], frames.v[frame] = state.x, state.v

    tape.forward(scene.state, record)
    value = loss_value(loss, frames)
    gx, gv = loss_gradient(loss, frames)
    grads = {name: np.zeros(np.shape(getattr(model, attribute)))
             for name, attribute in parameters.ELEMENT_ARRAYS.items()}
    grads["pins"] = np.zeros(shape[1:])
    pins = np.flatnonzero(model.pinned)
    lam_x, lam_v = np.zeros(shape[1:]), np.zeros(shape[1:])
    for first, states, carried in tape.segments():
        for k in range(len(states) - 1, 0, -1):
            frame = frame_of_step.get(first + k)
            if frame is not None:
                lam_x, lam_v = lam_x + gx[frame], lam_v + gv[frame]
            # in place: the adjoints are this loop's own arrays (a step returns new ones)
            grads["pins"][pins] += lam_x[pins]
            lam_x[pins] = 0.0
            lam_v[pins] = 0.0
            lam_x, lam_v = finite_adjoints(adjoint.reverse, states[k - 1].t, states[k - 1],
                                           states[k], lam_x, lam_v, grads, carried[k - 1:k + 1])
    start, carried = tape.kept[0]
    lam_x, lam_v = finite_adjoints(adjoint.finish, start.t, start, lam_x, lam_v, grads, carried)
    lam_x, lam_v = finite_adjoints(adjoint.begin, start.t, scene.state, start, lam_x, lam_v,
                                   grads)
    grads["x0"] = lam_x + gx[0] + grads["pins"]
    grads["v0"] = lam_v + gv[0]
    for name, direct in loss.param_gradient(frames).items():
        grads[name] = grads[name] + direct
    return value, parameters.reduce(scene, parsed, grads)
