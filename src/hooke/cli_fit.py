"""``hooke fit``: identify a scene's parameters from observed motion (:func:`hooke.fit`).

Contract: reads the observed positions (:mod:`hooke.io.observed`: a ``.h5`` trajectory hooke
wrote or a ``.csv`` with columns t, particle, x[, y[, z]]), fits the ``--param`` names (a
shareable name is one shared value unless written ``NAME:each``), prints a line per iteration
on stderr (the loss) and then the fitted values ± 1σ, and writes the JSON summary to ``--out``.
Bad input (an unknown parameter, observed data of the wrong shape or times outside the run,
malformed ``--bounds``/``--initial``, an integrator without an adjoint for ``--method lbfgsb``)
is one line on stderr and exit 2, and so is an ``--out`` that cannot be written or names a
folder (``sub/``, ``sub/.``), checked before the fit (an earlier summary there is replaced only
whole). Registered on the ``hooke`` app by :mod:`hooke.cli`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from .cli_common import (console, errors, fail, flagged, given_flags, load_scene, parse_options,
                         shown, typed_float, typed_int)
from .errors import HookeInputError, SimulationError
from .io.outputs import check_replaceable, output_file, writable_directory, written_aside


def parse_params(text: str) -> dict[str, str]:
    """``stiffness,damping,mass:each`` → {name: mode}: shared where the name can be."""
    from .adjoint.params import SHAREABLE

    params: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        name, _, mode = item.partition(":")
        if not name:
            raise HookeInputError("--param", "must be names separated by commas, e.g. "
                                  "stiffness,damping (NAME:each for one value per element)", text)
        if name in params:
            raise HookeInputError("--param", f"{name} given more than once", text)
        params[name] = mode or ("shared" if name in SHAREABLE else "each")
    return params


def parse_pairs(texts: list[str], flag: str, bounds: bool) -> dict:
    """``NAME=VALUE`` (``--initial``) or ``NAME=LOW:HIGH`` (``--bounds``; an empty side: none)."""
    from .io.scene_file import parse_value

    out: dict = {}
    for text in texts or []:
        name, sep, value = (part.strip() for part in text.partition("="))
        if not sep or not name or name in out:
            raise HookeInputError(flag, f"must be NAME={'LOW:HIGH' if bounds else 'VALUE'}, each "
                                  "name once", text)
        if bounds:
            low, colon, high = value.partition(":")
            if not colon:
                raise HookeInputError(flag, "must be NAME=LOW:HIGH (e.g. stiffness=1:100)", text)
            out[name] = tuple(None if not side.strip() else parse_value(side.strip(),
                                                                        f"{flag} {name}")
                              for side in (low, high))
        else:
            out[name] = parse_value(value, f"{flag} {name}")
    return out


def fit_command(
    scene_or_file: str = typer.Argument(..., metavar="SCENE_OR_FILE",
                                        help="a built-in scene name or a .toml scene file: the model and the start"),
    observed: Path = typer.Option(..., "--observed", help="observed positions: a .h5 trajectory "
                                  "hooke wrote or a .csv with columns t, particle, x[, y[, z]]"),
    param: list[str] = typer.Option(..., "--param", "-p", help="parameters to fit, e.g. "
                                    "stiffness,damping (NAME:each: one per element; repeatable)"),
    initial: list[str] = typer.Option(None, "--initial", help="NAME=VALUE to start from (repeatable)"),
    bounds: list[str] = typer.Option(None, "--bounds", help="NAME=LOW:HIGH (repeatable; an empty side: none)"),
    method: str = typer.Option("least_squares", "--method", help="least_squares (Gauss–Newton / "
                               "Levenberg–Marquardt) or lbfgsb (L-BFGS-B on the adjoint gradient)"),
    integrator: Optional[str] = typer.Option(None, "--integrator", "-i", help="integrator name"),
    dt: Optional[float] = typer.Option(None, "--dt", help="time step [s]", parser=typed_float),
    t_end: Optional[float] = typer.Option(None, "--t-end", help="duration [s] (default: the last observed time)", parser=typed_float),
    max_iterations: int = typer.Option(100, "--max-iterations", parser=typed_int,
                                       help="at most this many iterations"),
    option: list[str] = typer.Option(None, "--option", "-O", help="an integrator option KEY=VALUE (repeatable)"),
    out_text: Optional[str] = typer.Option(None, "--out", "-o", metavar="PATH",
                                           help="write the JSON summary to this file"),
) -> None:
    """Fit a scene's parameters to observed positions: prints the fitted values ± 1σ (from the
    Gauss–Newton Hessian) and the residual; --out writes them as JSON."""
    from .fitting import fit
    from .simulate import simulate
    from .io.observed import read_observed

    def progress(iteration: int, loss: float) -> None:
        errors.print(f"iteration {iteration}: loss {loss:.6e}", highlight=False, markup=False)

    try:
        options = parse_options(option, fit, simulate)
        params = parse_params(",".join(param))  # -p stiffness -p mass: both (the last alone was fitted)
        start = parse_pairs(initial, "--initial", bounds=False)
        limits = parse_pairs(bounds, "--bounds", bounds=True)
        out = None if out_text is None else output_file(out_text, "--out")  # (a str: 'sub/.')
        if out is not None:  # before the fit's minutes: a summary it could not write is lost
            writable_directory(out.parent, "--out")
            check_replaceable(out, "--out")
            if out.exists() and observed.exists() and out.samefile(observed):
                raise HookeInputError("--out", "is the --observed file, which the summary would "
                                      "replace; choose another path", str(out))
        scene = load_scene(scene_or_file)
        record = read_observed(observed, scene.model.n_particles, scene.model.dim)
        result = fit(scene, record, params, limits or None, method=method, initial=start or None,
                     integrator=integrator, dt=dt, t_end=t_end, max_iterations=max_iterations,
                     progress=progress, **options)
    except HookeInputError as error:  # hooke.fit's arguments are named as the command's flags
        fail(flagged(error, {**given_flags(integrator=integrator, dt=dt, t_end=t_end,
                                           max_iterations=max_iterations, method=method),
                             "params": "--param", "initial": "--initial", "bounds": "--bounds",
                             "observed": "--observed"}))
    except SimulationError as error:
        fail(str(error), code=1)
    console.print(result.text(), highlight=False)
    if out is not None:
        summary = {"scene": scene_or_file, "observed": str(observed), **result.summary()}
        try:
            with written_aside(out) as partial:
                partial.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        except OSError as error:
            fail(f"--out: cannot write the summary ({error.strerror or error}), got {str(out)!r}",
                 code=1)
        console.print(f"summary: {shown(out)}", highlight=False)
