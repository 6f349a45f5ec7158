"""The ``hooke`` command.

Contract: bad input (unknown scene or integrator, invalid scene file, dt ≤ 0, a flag typer cannot
parse, …) prints one line per problem to stderr and exits with code 2, never a traceback. A run
that blows up writes the frames it computed before it stopped and exits with code 1. An unexpected
exception (a bug) prints one line naming it and exits with code 1; ``HOOKE_DEBUG=1`` shows its
traceback.

``hooke --version`` prints the version; ``hooke run --quiet`` prints nothing on stdout (errors and
notes still go to stderr). Help is plain text (click's layout) in at most 100 columns.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from . import pending_stop
from .cli_common import (OutputsHold, console, empty_argument, environment_problem, errors, fail,
                         flagged, given_flags, load_scene, note, output_directory, output_files,
                         parse_options, print_error, repeated_option, shown, typed_float,
                         typed_int, write_reason)
from .cli_fit import fit_command
from .cli_progress import LazyProgress
from .cli_stdout import StdoutUnwritable, checked_stdout
from .cli_stop import forget_stops, stop_kind, stop_on_signals, stopped, unreported_stop
from .cli_study import study_command
from .cli_verify import verify_command
from .errors import (CompleteRunError, HookeInputError, OutputWriteError, SimulationError,
                     StoreWriteError, format_value, one_line)
from .io.outputs import (check_replaceable, check_replaceables, made_for_the_work, missing_folders,
                         remove_empty)
from .run_report import (output_paths, plural, print_summary, remove_outputs, summary_data,
                         write_outputs)
from .scenes import names as scene_names
from .viz import plot_worker

try:  # typer vendors click from 0.2x on; its parse errors are click's classes
    from typer._click import exceptions as parse_errors
except ImportError:  # pragma: no cover - an older typer runs on click itself
    from click import exceptions as parse_errors

# Help as plain text (click's layout), not Rich's: Rich reads "[s]" in "time step [s]" as markup
# and drops the unit, and keeps a docstring's line breaks in the command list, which it then wraps
# again (ragged lines). Up to 100 columns on a wide terminal.
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None, context_settings={"max_content_width": 100},
                  help="hooke: dynamics of mass-spring systems.")


def show_version(value: bool) -> None:
    if value:
        from .version import __version__

        # Rich, not click's echo, whose own stream lost a failed write to stdout without a word
        console.print(f"hooke {__version__}", markup=False, highlight=False)
        raise typer.Exit()


@app.callback()
def main_options(
    version: bool = typer.Option(False, "--version", is_eager=True, callback=show_version,
                                 help="print hooke's version and exit"),
) -> None:
    pass  # --version acts as it is parsed (show_version)


@app.command("list")
def list_command() -> None:
    """List the built-in scenes and the integrators."""
    from .integrators import base as integrator_registry
    from .io.scene_file import builtin_scene

    table = Table(title="scenes", title_justify="left")
    table.add_column("name", style="bold")
    table.add_column("description")
    for name in scene_names():
        table.add_row(name, builtin_scene(name).description)
    console.print(table)
    table = Table(title="integrators", title_justify="left")
    table.add_column("name", style="bold")
    table.add_column("order", justify="right")
    table.add_column("method")
    for name in integrator_registry.names():
        cls = integrator_registry.get(name)
        table.add_row(name, str(cls.order), cls.summary)
    console.print(table)


@app.command("run")
def run_command(
    scene_or_file: Optional[str] = typer.Argument(
        None, metavar="SCENE_OR_FILE", help="a built-in scene name (see `hooke list`) or a .toml scene file"),
    integrator: Optional[str] = typer.Option(None, "--integrator", "-i", help="integrator name"),
    dt: Optional[float] = typer.Option(None, "--dt", help="time step [s]", parser=typed_float),
    t_end: Optional[float] = typer.Option(None, "--t-end", help="duration [s]", parser=typed_float),
    save_every: Optional[int] = typer.Option(
        None, "--save-every", metavar="N", parser=typed_int, help="save a frame every N steps "
        "(default: the scene file's save_every, else ⌈steps / 1000⌉: at most about 1,000 frames; the last step is "
        "always saved)"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="output directory (default: "
                                       "out; with --resume, the run's own)"),
    option: list[str] = typer.Option(
        None, "--option", "-O", metavar="KEY=VALUE", help="an integrator option KEY=VALUE, e.g. "
        "rtol=1e-8 or stabilization=none (repeatable; VALUE: a number, true/false, none or a word)"),
    resume: Optional[Path] = typer.Option(None, "--resume", metavar="DIR", help="continue the "
                                          "interrupted run stored in DIR (or its trajectory.h5)"),
    max_energy_growth: Optional[float] = typer.Option(
        None, "--max-energy-growth", parser=typed_float,
        help="stop when the total energy grows by more than this factor of its scale"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print no progress and no summary "
                               "(errors and notes still go to stderr; the files are written)"),
) -> None:
    """Simulate a scene. Keeps at most about 1,000 frames unless --save-every or the scene file's
    save_every says otherwise. Writes into --out: trajectory.h5 (frame by frame, as the run goes) with
    its ParaView sidecar trajectory.xdmf, energy.png, snapshot.png, analytic.png (when the scene
    has an analytic solution) and summary.json; prints a summary (not with --quiet). A scene's own
    integrator options that another --integrator does not take are dropped, with a note."""
    from .io.compaction import compacted
    from .simulate import FRAME_BUDGET, scene_options, simulate
    from .simulate import resume as resume_run

    if resume is not None:
        given = [flag for flag, value in (
            ("SCENE_OR_FILE", scene_or_file), ("--integrator", integrator), ("--dt", dt),
            ("--t-end", t_end), ("--save-every", save_every), ("--option", option or None),
            ("--max-energy-growth", max_energy_growth)) if value is not None]
        if given:  # (`--dt 0` too: it was ignored as false)
            fail("--resume: continues the stored run with its own settings (--save-every and "
                 f"--max-energy-growth included); give no scene or settings with it, got "
                 f"{'/'.join(given)}")
        # a FIFO or a device is a file too, not a directory to look in (os.path's functions:
        # Path's raise for a name too long for the system)
        a_file = os.path.exists(resume) and not os.path.isdir(resume)
        if a_file and resume.name != "trajectory.h5":  # its plots, summary and sidecar are
            # written beside it under the names of a run's directory
            fail(f"--resume: must be a run's directory or the trajectory.h5 in it (rename the "
                 f"file to trajectory.h5 in a folder of its own), got {str(resume)!r}")
        if out is not None:  # it was ignored: the outputs went to DIR all the same
            fail("--out: a resumed run goes on where it is stored (--resume's directory); give "
                 f"no --out with --resume, got {str(out)!r}")
        out = resume.parent if a_file else resume
    elif scene_or_file is None:
        fail("SCENE_OR_FILE: missing (or use --resume DIR), got nothing")
    out = Path("out") if out is None else out
    hold, worker, result = OutputsHold(), None, None  # hold: till the plots and summary are written
    flag = "--out" if resume is None else "--resume"  # the one that gave out, as errors name it
    made, refused = ([] if resume is not None else missing_folders(out)), False
    restore_signals = stop_on_signals()  # a scheduler's or a shell's kill, as a Ctrl-C
    try:
        progress = None if quiet else LazyProgress(shown(scene_or_file or resume))
        try:
            try:
                if resume is not None:
                    if os.path.isdir(out):
                        check_replaceables(output_paths(out), flag)
                        hold.take(out, flag)
                    result = resume_run(out / "trajectory.h5", progress=progress)
                else:
                    options = parse_options(option, simulate)
                    scene = load_scene(scene_or_file)
                    dropped = scene_options(scene, integrator or scene.integrator)[1]
                    if dropped:
                        note(f"{integrator} does not take {scene.name}'s option(s) "
                             f"{', '.join(dropped)}; dropped")
                    output_directory(out)
                    check_replaceables(output_paths(out), flag)  # (trajectory.h5: the store's)
                    worker = plot_worker.start(scene)  # before the lock, which it must not hold
                    hold.take(out, flag)
                    result = simulate(scene, integrator=integrator, dt=dt, t_end=t_end,
                                      save_every=save_every, progress=progress,
                                      store=out / "trajectory.h5", store_outputs=output_paths(out),
                                      max_energy_growth=max_energy_growth,
                                      max_frames=FRAME_BUDGET if save_every is None else None,
                                      **options)
                if not compacted(out / "trajectory.h5"):  # its close found no room to compact
                    note_uncompressed(out)
            finally:
                if progress is not None:
                    progress.close()
        except CompleteRunError:  # its plots and summary are written again, below
            result = finish_complete_run(out)
        except HookeInputError as error:  # a setting given as a flag is named as the flag
            fail(flagged(error, {**given_flags(integrator=integrator, dt=dt, t_end=t_end,
                                               save_every=save_every,
                                               max_energy_growth=max_energy_growth),
                                 "store": "--out", "path": flag}))  # (the store's "path")
        except StoreWriteError as error:  # a full disk: the file keeps its frames; nothing more fits
            if error.frames_kept:  # this run's file replaced the one an earlier run's outputs show
                remove_outputs(out)
            fail(flagged(error, {"path": flag}), code=1)
        except SimulationError as error:
            partial = getattr(error, "result", None)
            if partial is not None and partial.n_frames > 0:
                report(partial, out, quiet, worker, flag)
            fail(flagged(error, {"path": flag}), code=1)  # (a trajectory moved mid-run)
        except KeyboardInterrupt as interrupt:  # (after the run returned: its progress bar's close)
            stopped(interrupt, out, result)
        try:
            report(result, out, quiet, worker, flag)
            pending_stop.raise_if_pending()  # one Python swallowed while the outputs were written
        except KeyboardInterrupt as interrupt:  # its file is whole: --resume writes them again
            stopped(interrupt, out, result)
    except typer.Exit as stop:
        refused = stop.exit_code == 2
        raise
    finally:
        if worker is not None:
            worker.close()
        hold.release()
        restore_signals()
        if refused:  # the folders made for a run refused leave no trace (once unlocked)
            remove_empty(made)


def finish_complete_run(out: Path):
    """``--resume`` of a run that has all its frames: finish what a kill in its last moments
    (the final compaction, the plots) may have left undone, and say so: a kill or a disk too
    full for the compacting copy left the file uncompressed. Returns the run, whose plots and
    summary the caller writes again."""
    from .io.compaction import compact
    from .io.lock import OutputLock
    from .io.store import NoRoom, open_result

    path = out / "trajectory.h5"
    try:
        lock = OutputLock(path)  # no other process may write it meanwhile
        try:
            try:
                compact(path)
            except NoRoom:  # complete and readable, only larger: said as the run's close says it
                note_uncompressed(out)
            result = open_result(path)
        finally:
            lock.release()
    except HookeInputError as error:
        fail(flagged(error, {"path": "--resume"}))
    note(f"{path} holds a complete run, nothing to continue; its plots and summary are written "
         "again")
    return result


def note_uncompressed(out: Path) -> None:
    """The note of a run in ``out`` whose file is complete but left uncompressed: the disk had
    no room for its compacted copy."""
    note(f"{out / 'trajectory.h5'} is left uncompressed (no room for its compacted copy); once "
         f"there is, `hooke run --resume {out}` compacts it")


def report(result, out: Path, quiet: bool = False, worker=None, flag: str = "--out") -> None:
    """Write a run's plots (by ``worker`` when given: :mod:`hooke.viz.plot_worker`) and summary
    (:mod:`hooke.run_report`) and print the summary (unless ``quiet``); one line (exit 1) naming
    ``flag``, the one that gave ``out``, when they cannot be written (a full disk)."""
    try:
        written = write_outputs(result, out, worker)
    except (OSError, HookeInputError) as error:  # a full disk; a folder or FIFO made at a plot's path
        fail(f"{flag}: cannot write the plots and summary ({write_reason(error)}); the "
             f"trajectory is in {one_line(out / 'trajectory.h5')}, got {str(out)!r}", code=1)
    if not quiet:
        print_summary(console, summary_data(result), written)


@app.command("plot")
def plot_command(
    directory: Path = typer.Argument(..., metavar="DIR", help="a run's output directory"),
    kind: list[str] = typer.Option(None, "--kind", "-k",
                                   help="energy, phase, analytic, drift, penetration, snapshot (default: all that apply)"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="where to write the PNGs (default: DIR)"),
) -> None:
    """Plot a stored run: PNG files named after each kind."""
    from .io.store import open_result
    from .viz import plots

    try:
        result = open_result(directory / "trajectory.h5")
    except HookeInputError as error:  # the reader's "path" is the DIR argument's file
        fail(flagged(error, {"path": "DIR"}))
    kinds = list(dict.fromkeys(kind or plots.available(result)))  # a kind given twice: drawn once
    for name in kinds:  # all checked before any is drawn
        try:
            plots.check_kind(result, name, field="--kind")
        except HookeInputError as error:
            fail(str(error))
    target = output_directory(directory if out is None else out)
    output_files([target / f"{name}.png" for name in kinds])
    for name in kinds:
        try:
            plots.PLOTS[name](result, target / f"{name}.png")
        except OSError as error:  # reading errors are HookeInputErrors: this is writing (a full disk)
            # written aside: no truncated picture stands there, and an earlier one is kept
            fail(f"--out: cannot write {name}.png ({error.strerror or error}), got "
                 f"{str(target)!r}", code=1)
        console.print(f"wrote {shown(target / f'{name}.png')}")


@app.command("export")
def export_command(
    directory: Path = typer.Argument(..., metavar="DIR", help="a run's output directory"),
    vtu: bool = typer.Option(False, "--vtu", help="one .vtu file per frame (+ frames.pvd) in "
                             "DIR/vtu: the same as --format vtu"),
    formats: list[str] = typer.Option(
        None, "--format", "-f", help="vtu, obj or ply (repeatable): one file per frame in "
        "DIR/<format>; vtu has every cell and the point data, obj and ply the body's surface"),
) -> None:
    """Export a stored run for ParaView and other tools (the XDMF sidecar is always rewritten)."""
    from .io.export import export_frames, write_xdmf

    chosen = list(dict.fromkeys((["vtu"] if vtu else []) + list(formats or [])))
    progress = LazyProgress("export", unit="files")
    try:  # every frame is read and every format checked first: nothing is written on an error
        check_replaceable(directory / "trajectory.xdmf", "DIR")
        try:
            written = export_frames(directory / "trajectory.h5", directory, chosen,
                                    progress=progress, field="--format",
                                    out_field="DIR") if chosen else []
        finally:
            progress.close()
        # the frames exported above were read through their checksums; else they are read here
        written.insert(0, write_xdmf(directory / "trajectory.h5", verify=not chosen))
    except HookeInputError as error:  # the reader's "path" is the DIR argument's file
        fail(flagged(error, {"path": "DIR"}))
    except OSError as error:  # reading errors are HookeInputErrors: this is writing
        fail(f"DIR: cannot write the export ({error.strerror or error}), got {str(directory)!r}",
             code=1)
    console.print(f"wrote {len(written)} file(s): {shown(written[0])}" + (f" … {shown(written[-1])}" if len(written) > 1 else ""))


@app.command("animate")
def animate_command(
    directory: Path = typer.Argument(..., metavar="DIR", help="a run's output directory"),
    out: Path = typer.Option(Path("movie.mp4"), "--out", "-o", help="movie file, .mp4 or .gif"),
    fps: float = typer.Option(30.0, "--fps", help="frames per second", parser=typed_float),
    duration: Optional[float] = typer.Option(None, "--duration", help="movie length [s] (default: real time)", parser=typed_float),
) -> None:
    """Render a stored run as a movie (1D, 2D and 3D scenes)."""
    from .io.store import open_result
    from .viz.animate import animate

    if duration is not None and not duration > 0:  # NaN too
        fail(f"--duration: must be a number > 0 (seconds), got {duration}")
    try:
        result = open_result(directory / "trajectory.h5")
    except HookeInputError as error:  # the reader's "path" is the DIR argument's file
        fail(flagged(error, {"path": "DIR"}))
    progress = LazyProgress("animate", unit="frames")
    try:
        path = animate(result, out, fps=fps, duration=duration, progress=progress)
    except HookeInputError as error:
        fail(flagged(error, {"path": "--out", "fps": "--fps", "duration": "--duration"}))
    except OSError as error:  # writing the movie (a full disk): animate left no partial movie
        # imageio's error for an mp4 is ffmpeg's command and log, many lines: ffmpeg printed
        # its reason above already
        reason = error.strerror or str(error).splitlines()[0]
        fail(f"--out: cannot write the movie ({reason}), got {str(out)!r}", code=1)
    finally:
        progress.close()
    console.print(f"wrote {shown(path)}")


@app.command("modes")
def modes_command(
    scene_or_file: str = typer.Argument(..., metavar="SCENE_OR_FILE"),
    k: int = typer.Option(10, "-k", help="number of modes", parser=typed_int),
    out: Path = typer.Option(Path("out/modes"), "--out", "-o", help="where to write mode-shape plots"),
) -> None:
    """Modal analysis: static equilibrium (joints as constraints), lowest eigenfrequencies [Hz]
    and mode-shape plots."""
    from .analysis import modes
    from .viz.plots import mode_shapes_plot

    try:
        scene = load_scene(scene_or_file)
        output_directory(out)  # before the analysis: a place the plot cannot go is one line
        check_replaceable(out / "modes.png", "--out")
        model = scene.model
        count = model.free_dofs.size - model.n_joints  # hooke.modes returns min(k, count) modes
        if 0 < count < k:  # said first: every mode of a large scene takes minutes (lattice: 2700)
            note(f"{scene.name} has {plural(count, 'mode')}: {model.free_dofs.size} degrees of "
                 f"freedom − {model.n_joints} joints")
        result = modes(scene, k=k)
    except HookeInputError as error:
        fail(flagged(error, {"k": "-k"}))
    except SimulationError as error:
        fail(str(error), code=1)
    console.print(result.table(), markup=False, highlight=False)  # "[rad/s]" is not markup
    try:
        mode_shapes_plot(scene, result, out / "modes.png")
    except OSError as error:  # a full disk: the table is printed all the same
        fail(f"--out: cannot write modes.png ({error.strerror or error}), got {str(out)!r}", code=1)
    console.print(f"mode shapes: {shown(out / 'modes.png')}")


app.command("study")(study_command)  # the command's body: hooke.cli_study


@app.command("bench")
def bench_command(
    workloads: list[str] = typer.Argument(
        None, metavar="[WORKLOAD]...",
        help="W1 … W6, W8, joints, contact, startup, gradient (default: all)"),
    peers: bool = typer.Option(False, "--peers", help="also the installed peers, timed in turn "
                               "with hooke (Taichi, Warp, Newton, Warp's tape: pip install "
                               "hooke[bench])"),
    smoke: bool = typer.Option(False, "--smoke", help="a few steps of small sizes: a check that "
                               "it runs, not a measurement"),
    data: Optional[Path] = typer.Option(None, "--data", help="also write DIR/bench_<workload>.json "
                                        "with the provenance (docs/data: the README's tables)"),
    repeats: Optional[int] = typer.Option(None, "--repeats", parser=typed_int,
                                          help="timed runs per measurement (default: each "
                                          "workload's)"),
    rounds: Optional[int] = typer.Option(None, "--rounds", parser=typed_int, help="W1, W2: hooke "
                                         "and the peers in turn this many times (default 3)"),
) -> None:
    """Run the speed workloads and print their tables: the machine's load, medians, ratios to
    the peers of the same run (quoted once both computed the same trajectory). See hooke.bench."""
    from .bench import WORKLOADS, Options, resolve, run
    from .bench.measure import MAX_REPEATS, MAX_ROUNDS
    from .provenance import command_line

    try:
        resolve(workloads or [])
    except ValueError as unknown:
        fail(f"WORKLOAD: unknown workload (known: {', '.join(WORKLOADS)}), got "
             f"{format_value(unknown.args[0])}")
    for flag, value, most in (("--repeats", repeats, MAX_REPEATS), ("--rounds", rounds, MAX_ROUNDS)):
        if value is not None and not 1 <= value <= most:
            fail(f"{flag}: must be an integer from 1 to {most}, got {value}")
    if data is not None:  # before the first workload: a table it cannot write is lost
        output_directory(data, "--data")
        output_files([data / f"bench_{name}.json" for name in resolve(workloads or [])], "--data")
    try:
        run(workloads or [], Options(smoke=smoke, peers=peers, repeats=repeats, rounds=rounds),
            data, command_line("hooke"))
    except OutputWriteError as error:
        fail(flagged(error, {"data": "--data"}), code=error.exit_code)


@app.command("check")
def check_command(
    scene_file: Path = typer.Argument(..., metavar="FILE", help="a .toml scene file"),
) -> None:
    """Validate a scene file without running it: every problem, one line each (exit 2); then its
    run settings exactly as `hooke run` would (integrator options, whole number of steps)."""
    from .constraints import start_off_joints
    from .io.scene_file import load
    from .simulate import plan

    try:
        scene = load(scene_file)
        run = plan(scene)
    except HookeInputError as error:
        fail(flagged(error, {"path": "FILE"}))  # (the file itself: missing, a directory)
    model = scene.model
    options = "".join(f", {key} = {value!r}" for key, value in scene.options.items())
    console.print(f"{shown(scene_file)}: valid — {plural(model.n_particles, 'particle')}, "
                  f"{plural(model.n_springs, 'spring')}, {plural(model.n_joints, 'joint')}, "
                  f"{plural(model.n_planes, 'plane')}, {model.dim}D; {scene.integrator}, "
                  f"dt = {scene.dt:g}, t_end = {scene.t_end:g} ({plural(run.n_steps, 'step')})"
                  f"{options}", highlight=False)
    if off := start_off_joints(model):
        start = model.initial_state()
        how = ("a run puts it on them first" if run.stepper.consistent_start(start) is not start
               else f"{run.name} starts from it as given")
        console.print(f"{shown(scene_file)}: {off}; {how}", highlight=False)


@app.command("schema")
def schema_command() -> None:
    """Print the JSON schema of scene files."""
    from .io.scene_file import SceneFile

    typer.echo(json.dumps(SceneFile.model_json_schema(), indent=2))


app.command("verify")(verify_command)


@app.command("serve")
def serve_command(
    scene: str = typer.Argument("spring1d", metavar="SCENE", help="the built-in scene the page opens with"),
    port: int = typer.Option(8000, "--port", help="TCP port", parser=typed_int),
    host: str = typer.Option("127.0.0.1", "--host", help="address to bind (default: this machine only)"),
    allow_host: list[str] = typer.Option(None, "--allow-host", metavar="NAME", help="another name "
                                         "it answers to, e.g. with --host 0.0.0.0 (repeatable)"),
    observed: Optional[str] = typer.Option(None, "--observed", metavar="FILE.h5|csv", help="observed "
                                           "motion of SCENE (as hooke fit reads it), drawn beside the "
                                           "simulated one"),
) -> None:
    """Open the browser viewer: the scene simulated live, with controls and plots (works offline)."""
    from .viz.web.server import create_app, listen, run, url

    restore_signals = stop_on_signals()  # a SIGTERM said as `hooke run` says it (cli_stop)
    try:
        try:
            viewer = create_app(scene, host=host, allow_hosts=allow_host or (), observed=observed)
        except HookeInputError as error:
            fail(flagged(error, {"observed": "--observed", "allow-host": "--allow-host"}))
        try:  # bound before the address is printed: a bad host, a bad or busy port is one line
            listener = listen(host, port)
        except HookeInputError as error:
            fail(flagged(error, {"host": "--host", "port": "--port"}))
        console.print(f"hooke viewer: open {url(host, listener.getsockname()[1])} in a browser "
                      "(Ctrl-C stops it)")
        run(viewer, host=host, listener=listener)
    finally:
        restore_signals()


@app.command("sweep")
def sweep_command(
    scene_or_file: Optional[str] = typer.Argument(
        None, metavar="SCENE_OR_FILE", help="a built-in scene name, a .toml scene file, or a sweep "
        "file (a .toml with 'scene', or a shipped one: pendulum_correction)"),
    param: list[str] = typer.Option(None, "--param", "-p",
                                    help="PATH=v1,v2,… | PATH=lo:hi | PATH=log:lo:hi (repeatable)"),
    file: Optional[Path] = typer.Option(None, "--file", "-f", help="a sweep file (TOML) or a shipped one "
                                         "(pendulum_correction); the options below override it, "
                                         "a --param in every grid"),
    random: Optional[int] = typer.Option(None, "--random", parser=typed_int,
                                         help="N random members instead of the grid"),
    seed: Optional[int] = typer.Option(None, "--seed", parser=typed_int,
                                       help="seed of the random members (default 0)"),
    out: Path = typer.Option(Path("out/sweep"), "--out", "-o", help="the sweep's directory (same DIR resumes)"),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="a Dask scheduler address, e.g. tcp://host:8786"),
    retries: Optional[int] = typer.Option(None, "--retries", parser=typed_int,
                                          help="re-run a failed member up to N more times"),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="seconds a member may run", parser=typed_float),
    summary_only: bool = typer.Option(False, "--summary-only", help="keep only the table, no trajectories"),
    plot_metric: Optional[str] = typer.Option(None, "--plot-metric", help="energy_error (default), constraint_drift, "
                                              "penetration, wall_time, steps or rejected"),
    save_every: Optional[int] = typer.Option(None, "--save-every", parser=typed_int,
                                             help="save a frame every N steps"),
) -> None:
    """Parameter study on Dask: one simulation per member of a grid (or --random N samples),
    on a local cluster or --scheduler. Writes DIR/summary.parquet, summary.csv, a plot of the
    metric, and DIR/members/<id>/ (trajectory.h5, row.json). Exits 1 when a member failed or
    timed out. See `hooke.sweep`'s documentation."""
    from rich.progress import MofNCompleteColumn

    from .sweep import is_sweep_file, read_sweep_file, sweep
    from .sweep.settings import parse_params

    try:
        settings: dict = {}
        if file is not None and scene_or_file is not None:
            fail(f"SCENE_OR_FILE: give a scene or --file, not both, got {scene_or_file!r}")
        if scene_or_file is not None and is_sweep_file(scene_or_file):
            file, scene_or_file = Path(scene_or_file), None
        if file is not None:
            spec = read_sweep_file(file)
            scene, grids = spec.scene, [dict(grid) for grid in spec.params]
            settings = spec.model_dump(exclude={"scene", "description", "params"})
        elif scene_or_file is None:
            fail("SCENE_OR_FILE: missing (or use --file SWEEP.toml), got nothing")
        elif not param:
            fail(f"--param: missing for scene {scene_or_file!r}: give at least one (e.g. --param "
                 "spring.k=1e3,1e4) or a sweep file (--file), got nothing")
        else:
            scene, grids = scene_or_file, [{}]
        given = parse_params(param or [], settings.get("random") if random is None else random)
        for grid in grids:
            grid.update(given)
        options = {"random": random, "seed": seed, "retries": retries, "timeout": timeout,
                   "metric": plot_metric, "save_every": save_every}
        settings.update({key: value for key, value in options.items() if value is not None})
        settings["summary_only"] = summary_only or settings.get("summary_only", False)
        bar = Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TextColumn("members"),
                       TimeElapsedColumn(), TimeRemainingColumn(), console=errors, transient=True)

        def progress(done: int, total: int) -> None:
            if not errors.is_terminal:  # elsewhere Rich ends a bar with an empty line
                return
            if not bar.tasks:  # started once the input is checked and the cluster is up
                bar.start()
                bar.add_task("sweep", total=total)
            bar.update(bar.task_ids[0], completed=done)

        restore_signals = stop_on_signals()  # a scheduler's time limit (SIGTERM) as a Ctrl-C
        try:
            with made_for_the_work(out):
                output_directory(out)
                result = sweep(scene, grids, client=scheduler, out=out, progress=progress, **settings)
        finally:
            restore_signals()
            if bar.tasks:  # stopping a bar never started prints an empty line too
                bar.stop()
    except HookeInputError as error:  # a setting given as a flag is named as the flag
        fail(flagged(error, {**given_flags(random=random, seed=seed, retries=retries,
                                           timeout=timeout, save_every=save_every),
                             **({"client": "--scheduler"} if scheduler is not None else {}),
                             **({"metric": "--plot-metric"} if plot_metric is not None else {}),
                             **({"scene": "SCENE_OR_FILE"} if file is None else {}),
                             "out": "--out"}), code=error.exit_code)  # 1: a full disk
    except KeyboardInterrupt as interrupt:
        code, what = stop_kind(interrupt)
        fail(f"{what}: finished members are kept in {one_line(out)}; the same command continues "
             "the sweep", code=code)
    console.print(result.text(), highlight=False)
    console.print(f"table: {shown(result.parquet)}, {shown(result.csv)}\nplot: {shown(result.plot)}", highlight=False)
    if result.failed:
        kinds = ", ".join(f"{n} {status}" for status, n in result.counts().items()
                          if status != "ok" and n)
        fail(f"{result.failed} of {len(result.table)} member(s) did not finish ok ({kinds}); "
             f"their errors are in {one_line(result.csv)}", code=1)


app.command("fit")(fit_command)  # the command's body: hooke.cli_fit


def usage_error(error: parse_errors.UsageError) -> str:
    """A command-line parse error as one line naming the flag or argument and the value."""
    command = error.ctx.command_path if error.ctx is not None else "hooke"
    message = " ".join(str(error.message).split()).rstrip(".")
    if isinstance(error, parse_errors.NoSuchOption):
        hint = f" (did you mean {', '.join(error.possibilities)}?)" if error.possibilities else ""
        return f"{error.option_name}: no such option of `{command}`{hint}, got {error.option_name!r}"
    param = getattr(error, "param", None)
    if isinstance(error, parse_errors.MissingParameter) and param is not None:
        return f"{_parameter_name(param)}: missing (see `{command} --help`), got nothing"
    if isinstance(error, parse_errors.BadParameter) and param is not None:
        cause = error.__cause__  # typer's coercion: a pydantic ValidationError holding the input
        value = f", got {format_value(cause.errors()[0]['input'])}" if hasattr(cause, "errors") else ""
        return f"{_parameter_name(param)}: {message}{value}"
    if isinstance(error, parse_errors.BadOptionUsage):
        return f"{error.option_name}: {message}"
    return f"{command}: {message} (see `{command} --help`)"


def _parameter_name(param) -> str:
    if param.param_type_name == "option":
        return max(param.opts, key=len)
    return param.metavar or param.name.upper()


def main() -> None:
    for stream in (sys.stdout, sys.stderr):  # an ASCII terminal (PYTHONIOENCODING=ascii) gets
        # "\u207a" for "⁺", not a UnicodeEncodeError in the middle of a table
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    forget_stops()
    given_stdout = sys.stdout
    checked_stdout()  # a closed stdout or one on a full disk: one line, exit 1 (cli_stdout)
    # SIGTERM as a Ctrl-C in every command: its default ended plot, export, animate, fit … at
    # once and silently, their .partial files left beside the outputs
    restore_signals = stop_on_signals()
    try:
        problem = environment_problem()
        if problem is not None:
            print_error(problem)
            sys.exit(2)
        for check in (empty_argument, repeated_option):
            problem = check(lambda: typer.main.get_command(app), sys.argv[1:])
            if problem is not None:
                print_error(problem)
                sys.exit(2)
        code = app(standalone_mode=False, prog_name="hooke")
    except parse_errors.NoArgsIsHelpError as error:  # bare `hooke`: the help, as before
        error.show()
        code = error.exit_code
    except parse_errors.UsageError as error:
        print_error(usage_error(error))
        code = 2
    except StdoutUnwritable as error:
        print_error(str(error))
        code = 1
    except (KeyboardInterrupt, typer.Abort):  # Ctrl-C: a clean message (below), not a traceback
        code = 130
    except Exception as error:  # the last resort: a bug, reported in one line
        if os.environ.get("HOOKE_DEBUG"):
            raise
        if pending_stop.is_pending():  # the stop broke what it interrupted: said as the stop
            code = 130  # (unreported_stop, below: "stopped by SIGTERM", 143, or "interrupted")
        else:
            print_error(f"unexpected {type(error).__name__}: {' '.join(str(error).split())} (a "
                        "bug in hooke; run with HOOKE_DEBUG=1 to see the traceback)")
            code = 1
    finally:
        sys.stdout = given_stdout  # a caller's own stream again (tests call main in-process)
        restore_signals()
    # The work is done and said: a Ctrl-C in the interpreter's shutdown can stop nothing, and
    # gave a KeyboardInterrupt traceback from an atexit callback, or exit -2. (The last one
    # registered, this runs first; not before, as a test's process calls main and goes on.)
    atexit.register(signal.signal, signal.SIGINT, signal.SIG_IGN)
    sys.exit(unreported_stop(code))


if __name__ == "__main__":
    main()
