"""What the commands of ``hooke`` share: where they print, how they fail, loading a scene by
name or file, reading ``--option KEY=VALUE``.

Contract: ``console`` is stdout (a command's results), ``errors`` is stderr (errors, notes and
progress bars); :func:`fail` prints each line of a message as ``error: line`` on stderr and exits
with ``code`` (2: bad input, the default), never with a traceback; a line (an error's, a
:func:`note`) is :func:`~hooke.errors.one_line`, and so is a path the command line puts into a
message itself (``fail`` prints each line of a message as an error: ``--out $'a\\nb'`` split
one into two); :func:`flagged` words an API error in the CLI's terms (``--port``, not
``port``); :func:`environment_problem` checks the environment variables a command reads before
anything reads them; :func:`output_directory` creates a directory, proves it writable or fails
naming the flag it came from, :func:`repeated_option` refuses an option of one value given twice,
and :func:`output_files` refuses output files that may not be replaced; :func:`load_scene` and
:func:`parse_option` raise :class:`HookeInputError` for bad input; :class:`OutputsHold` is a
run's hold on its output directory.
"""

from __future__ import annotations

import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from .console_text import shown  # noqa: F401  (the commands take it from here)
from .errors import HookeError, HookeInputError, one_line

# Piped or logged output gets room for the wide tables (verify, sweep) instead of 80 columns.
# No emoji codes: a value such as 'log:-1:5' or ':smile:' is printed as typed, not as 👎 or 😄.
console = Console(soft_wrap=True, width=None if sys.stdout and sys.stdout.isatty() else 120,
                  emoji=False)
errors = Console(stderr=True, emoji=False)
ERRORS_PRINTED: list[str] = []  # a stop that printed none is said at exit (cli_stop)


def print_error(line: str) -> None:
    """``error: line`` on stderr; the line is escaped, as a value such as ``[nan, 0.0]`` would
    otherwise be taken for Rich markup and vanish, and a carriage return or a terminal's escape
    sequence in it is shown, not obeyed (:func:`~hooke.errors.one_line`). Counted in
    ``ERRORS_PRINTED``."""
    ERRORS_PRINTED.append(line)
    errors.print(f"[bold red]error:[/] {escape(one_line(line))}", highlight=False, markup=True,
                 soft_wrap=True)


def note(line: str) -> None:
    """``note: line`` on stderr (no markup), one line as an error is."""
    errors.print(f"note: {one_line(line)}", markup=False, highlight=False, soft_wrap=True)


def fail(message: str, code: int = 2) -> None:
    """Each line of ``message`` as an error on stderr, then exit with ``code``."""
    for line in str(message).splitlines():
        print_error(line)
    raise typer.Exit(code)


def output_directory(path: Path, flag: str = "--out") -> Path:
    """``path`` as a directory (created if missing) that a file can be written in; a clear error
    naming ``flag`` when it cannot be one (:func:`hooke.io.outputs.writable_directory`)."""
    from .io.outputs import writable_directory

    try:
        return writable_directory(path, flag)
    except HookeInputError as error:
        fail(str(error))


def output_files(paths, flag: str = "--out") -> None:
    """Fail naming ``flag`` and the path when one of ``paths``, a command's output files, is
    one a new file may not replace: a directory, a FIFO, a device, a read-only file
    (:func:`hooke.io.outputs.check_replaceables`); called before the command's work."""
    from .io.outputs import check_replaceables

    try:
        check_replaceables(paths, flag)
    except HookeInputError as error:
        fail(str(error))


def empty_argument(command, args: list[str]) -> str | None:
    """The one line refusing an empty argument (``--out ""``, ``--out=``, ``DIR`` as ""), or
    None: typer reads an empty path as ".", so `hooke run --out ""` wrote into the current
    directory, and `hooke run --resume ""` resumed whatever run was there. It names the flag
    whose value it is or the positional argument it fills (``command()``: the Click command of
    ``hooke``, made only when an argument is empty, says which options take a value)."""
    if not any(arg == "" or (arg.startswith("--") and arg.endswith("=")) for arg in args):
        return None
    params = _params(command, args)
    takes_value = {opt for param in params if param.param_type_name == "option"
                   and not param.is_flag for opt in param.opts}
    positionals = [param.metavar or param.name.upper() for param in params
                   if param.param_type_name == "argument"]
    name, given = None, 0  # the argument named; positional arguments seen
    for k, arg in enumerate(args[1:], start=1):
        if arg.startswith("--") and arg.endswith("=") and arg[:-1] in takes_value:
            name = arg[:-1]
        elif args[k - 1] in takes_value and k > 1:
            name = args[k - 1] if arg == "" else None
        elif arg == "":
            name = positionals[min(given, len(positionals) - 1)] if positionals else "argument"
        elif not arg.startswith("-"):
            given += 1
        if name is not None:
            return f"{name}: must not be empty, got ''"
    return None


def _params(command, args: list[str]) -> list:
    """The Click parameters of the subcommand ``args[0]`` names ([] when it names none)."""
    sub = getattr(command(), "commands", {}).get(args[0]) if args else None
    return getattr(sub, "params", [])


def repeated_option(command, args: list[str]) -> str | None:
    """The one line refusing an option that takes one value given twice (``--dt 0.1 --dt
    0.01``, ``-o a --out b``), or None: Click kept the last in silence, so a run went on with a
    value the user may not have meant. A repeatable option (``--option``, ``--param``, ``--kind``
    …) and an on/off flag (``--quiet -q``: the same either way) may be given more than once.
    ``command()``, as for :func:`empty_argument`, is made only when an option is repeated."""
    options = [arg.partition("=")[0] for arg in args[1:] if arg.startswith("-") and arg != "-"]
    if len(options) == len(set(options)) and not any(len(o) == 2 for o in options):
        return None  # no name twice (a short alias of a long one is counted below)
    valued = [param for param in _params(command, args)
              if param.param_type_name == "option" and not param.is_flag]
    single = {opt: param for param in valued if not param.multiple
              for opt in param.opts + param.secondary_opts}
    takes_value = {opt for param in valued for opt in param.opts + param.secondary_opts}
    seen: dict = {}  # param → the (option, value) typed first
    k = 1
    while k < len(args):
        arg = args[k]
        if arg == "--":
            break
        name, sep, value = arg.partition("=") if arg.startswith("--") else (arg[:2], "", arg[2:])
        if not arg.startswith("-") or name not in takes_value:
            k += 1
            continue
        if not sep and not value:  # the value is the next argument
            value = args[k + 1] if k + 1 < len(args) else ""
            k += 1
        k += 1
        if name not in single:
            continue
        param = single[name]
        if param in seen:
            first, given = seen[param]
            return (f"{max(param.opts, key=len)}: takes one value, given twice ({first} "
                    f"{given!r}, then {name} {value!r}), got {value!r}")
        seen[param] = (name, value)
    return None


def environment_problem() -> str | None:
    """The line refusing a NUMBA_NUM_THREADS that Numba cannot use, else None: at import Numba
    raised a bare ValueError for 0 or a negative count (a "bug in hooke" line) and printed
    a traceback of its own for a word, then went on with its default. So did any other NUMBA_
    variable it cannot parse (``NUMBA_OPT=bogus``): Numba's settings are read here, only when
    one is set, and the first it refused is the line. MPLBACKEND is dropped: the command line
    draws with Agg whatever it names, and matplotlib's import refused a name it does not know."""
    os.environ.pop("MPLBACKEND", None)
    text = os.environ.get("NUMBA_NUM_THREADS")
    if text is not None and not (text.isascii() and text.isdigit() and int(text) >= 1):
        return (f"NUMBA_NUM_THREADS: must be an integer >= 1 (the threads of Numba's parallel "
                f"kernels) or unset, got {text!r}")
    if any(name.startswith("NUMBA_") and name != "NUMBA_NUM_THREADS" for name in os.environ):
        return _numba_setting_problem() or _threading_layer_problem()
    return None


def _threading_layer_problem() -> str | None:
    """NUMBA_THREADING_LAYER that Numba cannot load (a word it does not know, or ``tbb``
    without TBB) as a line: Numba reads it only at the first parallel kernel, which failed
    as "step 1 failed: … ValueError …; Try a smaller dt", exit 1. Its threads are launched here,
    only when it is set, as that kernel would launch them."""
    value = os.environ.get("NUMBA_THREADING_LAYER")
    if value is None:
        return None
    from numba.np.ufunc import parallel

    try:
        parallel._launch_threads()
    except ValueError as error:
        reason = str(error).strip().splitlines()[0].rstrip(".")
        return f"NUMBA_THREADING_LAYER: Numba cannot load it ({reason}), got {value!r}"
    return None


def _numba_setting_problem() -> str | None:
    """The first NUMBA_ variable Numba's settings warned they could not parse, as a line."""
    import re
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import numba.core.config  # noqa: F401  (reads the variables, warning of each it refuses)
    for warning in caught:
        found = re.match(r"Environment variable '(\w+)' is defined but", str(warning.message))
        if found:
            name, lines = found.group(1), str(warning.message).strip().splitlines()
            reason = lines[-1].partition(": ")[2] or lines[-1]  # the exception's own words
            return f"{name}: Numba cannot parse it ({reason}), got {os.environ.get(name)!r}"
    return None


def write_reason(error: Exception) -> str:
    """Why an output could not be written, for a one-line error: an OSError's own words (a full
    disk), or what a HookeInputError found at a path (a folder or a FIFO made there meanwhile)."""
    if isinstance(error, HookeInputError) and error.value is not None:
        return f"{error.value}: {error.problem}"
    return getattr(error, "strerror", None) or str(error)


@contextmanager
def write_failure_exits(field: str, what: str, target: Path):
    """Inside: an OSError (a full disk while ``what`` is written into ``target``) is one line
    naming ``field``, exit 1; the files are written aside, so none is left half written."""
    try:
        yield
    except OSError as error:
        fail(f"{field}: cannot write {what} ({write_reason(error)}), got {str(target)!r}",
             code=1)


def given_flags(**values) -> dict[str, str]:
    """API argument → its flag (``save_every`` → ``--save-every``), for the ones given (not
    None): :func:`flagged` then names a refused setting by the flag the user typed."""
    return {name: "--" + name.replace("_", "-") for name, value in values.items()
            if value is not None}


def flagged(error: HookeError, flags: dict[str, str]) -> str:
    """The message of ``error`` with its field, when it is an API argument of ``flags``, named
    as the command-line flag (or argument) that gave it: ``port: …`` → ``--port: …``, and an
    entry of one ``initial.stiffness: …`` → ``--initial stiffness: …``, a place in one
    ``observed bad.csv line 2: …`` → ``--observed bad.csv line 2: …``; each line of several
    problems at once (:class:`~hooke.errors.HookeInputErrors`) names its own."""

    def named(line: str) -> str:
        field, sep, rest = line.partition(": ")
        argument, dot, entry = field.partition(".")
        first, space, where = field.partition(" ")  # "observed bad.csv line 2": a place in it
        if sep and field in flags:
            return f"{flags[field]}{sep}{rest}"
        if sep and dot and argument in flags:
            return f"{flags[argument]} {entry}{sep}{rest}"
        if sep and space and first in flags:
            return f"{flags[first]} {where}{sep}{rest}"
        return line

    return "\n".join(named(line) for line in str(error).splitlines())


def load_scene(scene_or_file: str):
    from .io.scene_file import named_scene

    return named_scene(scene_or_file, "SCENE_OR_FILE")


def typed_float(text: str) -> float:
    """A float flag's value as typed (Typer's ``parser``), read as ``--option`` and ``--param``
    read a number (:func:`~hooke.io.scene_file.parse_value`: TOML's grammar, 1_000 and 0x10
    included, else ASCII as Python reads it, .5): float() took "١٢" or "１２" as 12, which no
    scene file and no ``-O`` reads as a number. A number past the largest float (1e400) is
    refused, instead of read as the inf the flag's own check then showed, a value nobody typed."""
    from .io.scene_file import parse_value

    if isinstance(text, float):  # the option's default, which Typer hands to the parser too
        return text
    try:
        value = parse_value(text, "")
    except HookeInputError as error:
        raise typer.BadParameter(f"{error.problem}, got {text!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise typer.BadParameter(f"must be a number, got {text!r}")
    return float(value)


def typed_int(text: str) -> int:
    """An integer flag's value as typed (Typer's ``parser``): digits with an optional sign.
    Typer's own coercion read ``--save-every 2.0`` or ``-k 3.0`` as 2 and 3, where ``2.5`` was
    refused and the API, the scene files and ``-O substeps=2.0`` refuse a float for a count."""
    if isinstance(text, int):  # the option's default, which Typer hands to the parser too
        return text
    if re.fullmatch(r"[+-]?[0-9]+(_[0-9]+)*", text.strip()) is None:
        raise typer.BadParameter(f"must be an integer, got {text!r}")
    if len(text.strip()) > 100:  # past Python's 4,300 digits int() said "Value error, Exceeds…"
        raise typer.BadParameter(f"must be an integer of at most 100 digits, got "
                                 f"{text.strip()[:20]!r}… ({len(text.strip())} characters)")
    return int(text)


def parse_option(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` of ``--option``: VALUE as ``--param`` reads it (``parse_value``: 1e-8, 25,
    inf, a word …), and in any case true/false as a bool and none/null as None (Python options
    take None, which TOML has no word for)."""
    from .io.scene_file import parse_value

    key, sep, value = text.partition("=")
    key, value = key.strip(), value.strip()
    if not sep or not key:
        raise HookeInputError("--option", "must be KEY=VALUE", text)
    words = {"true": True, "false": False, "none": None, "null": None}
    return key, words[value.lower()] if value.lower() in words else parse_value(value, f"--option {key}")


def parse_options(texts: list[str] | None, *targets) -> dict:
    """The integrator options of repeated ``--option KEY=VALUE``, which the command hands to
    ``targets`` (hooke.simulate; hooke.fit, and through it hooke.simulate) as ``**options``: a
    key given twice, or one that is a target's own argument (dt, integrator …), is refused."""
    import inspect

    owners = {name: target.__name__ for target in reversed(targets)
              for name, parameter in inspect.signature(target).parameters.items()
              if parameter.kind is not parameter.VAR_KEYWORD}
    options: dict = {}
    for text in texts or []:
        key, value = parse_option(text)
        if key in options:
            raise HookeInputError("--option", f"{key} given more than once", text)
        if key in owners:
            raise HookeInputError("--option", f"{key} is not an integrator option but an argument "
                                  f"of hooke.{owners[key]} (a flag of its own where the command "
                                  "has one)", text)
        options[key] = value
    return options


class OutputsHold:
    """A run's hold on its --out directory (``summary.json.lock``) from before its first write
    until its plots and summary are written: another ``hooke run`` there is refused meanwhile.
    The trajectory's own lock ends with the file, so a second run started then had the first
    one's plots written over its own (the confirmation pass of issue 15)."""

    def __init__(self):
        self.lock = None

    def take(self, out: Path, flag: str) -> None:
        """Refuses (HookeInputError naming ``flag``) while another run holds ``out``; a folder
        where the lock cannot be made (read-only) is left to the run's own checks, which say
        why. Then removes the partial outputs a run killed while writing them left
        (``.summary.partial.json``…)."""
        from .io.lock import LockHeld, OutputLock
        from .io.outputs import remove_stale_partials
        from .run_report import output_paths

        try:
            self.lock = OutputLock(out / "summary.json", flag)
        except LockHeld:
            raise
        except HookeInputError:
            pass
        remove_stale_partials(output_paths(out))

    def release(self) -> None:
        if self.lock is not None:
            self.lock.release()
