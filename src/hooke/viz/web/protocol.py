"""The viewer's WebSocket messages from the page to the server, validated by pydantic.

Contract: :func:`parse_command` turns one text message into exactly one command model or raises
:class:`ProtocolError` with a one-line reason (for a command's field: its path, the rule and
the value sent, and the field as :attr:`ProtocolError.field`, which the page marks). A message
is JSON text of at most ``MAX_MESSAGE_BYTES`` bytes holding an object whose ``type`` picks the command; unknown fields,
a key given twice, wrong types, non-finite numbers and out-of-range values are errors. Commands (page → server):

- ``{"type": "load", "scene": NAME}``: open a built-in scene with its own defaults.
- ``{"type": "restart", "integrator": NAME, "dt": H, "parameters": {NAME: NUMBER, ...}}``:
  rebuild the current scene with these parameters (missing ones keep the scene's defaults) and
  start again from t = 0.
- ``{"type": "set", "integrator"?: NAME, "dt"?: H, "steps_per_frame"?: N}``: change how the run
  goes on, keeping the current state.
- ``{"type": "pause", "paused": BOOL}``, ``{"type": "step"}`` (one step, then paused).
- ``{"type": "drag", "particle": I, "target": [X, (Y, (Z))]}``: attach (or move) the cursor
  spring from particle I to the target; ``{"type": "release"}`` detaches it.

Whether a name, index or parameter fits the scene is checked by the session, not here.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ...errors import cut, format_value

MAX_MESSAGE_BYTES = 64 * 1024
MAX_STEPS_PER_FRAME = 10_000
SHOWN = 80  # characters of a value sent shown in an error (a message may be 64 KiB)

Name = Annotated[str, Field(min_length=1, max_length=100)]
PositiveFinite = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Finite = Annotated[float, Field(allow_inf_nan=False)]


class ProtocolError(ValueError):
    """A message that is not a valid command; the text says why, in one line. ``field``: the
    command's field it is about, as the session names it (``dt``, ``parameters.mass``), when
    there is one."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


class Command(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Load(Command):
    type: Literal["load"]
    scene: Name


class Restart(Command):
    type: Literal["restart"]
    integrator: Name
    dt: PositiveFinite
    parameters: Annotated[dict[Name, Finite], Field(max_length=64)] = Field(default_factory=dict)


class Set(Command):
    type: Literal["set"]
    integrator: Name | None = None
    dt: PositiveFinite | None = None
    steps_per_frame: Annotated[int, Field(ge=1, le=MAX_STEPS_PER_FRAME)] | None = None


class Pause(Command):
    type: Literal["pause"]
    paused: bool


class Step(Command):
    type: Literal["step"]


class Drag(Command):
    type: Literal["drag"]
    particle: Annotated[int, Field(ge=0)]
    target: Annotated[list[Finite], Field(min_length=1, max_length=3)]


class Release(Command):
    type: Literal["release"]


AnyCommand = Annotated[Union[Load, Restart, Set, Pause, Step, Drag, Release],
                       Field(discriminator="type")]
_ADAPTER = TypeAdapter(AnyCommand)
# Every command's fields (a key given twice is named as the field when it is one of them).
COMMAND_FIELDS = frozenset(name for command in (Load, Restart, Set, Pause, Step, Drag, Release)
                           for name in command.model_fields)


class DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(format_value(key, most=SHOWN))
        self.key = cut(key, SHOWN)


def unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object's members as a dict, or DuplicateKey: ``{"type": "load", "scene": "a",
    "scene": "b"}`` was taken as scene b, the first value dropped unsaid."""
    data = dict(pairs)
    if len(data) < len(pairs):
        seen = set()
        raise DuplicateKey(next(key for key, _ in pairs if key in seen or seen.add(key)))
    return data


def parse_command(text: str) -> Command:
    """The command in one text message, or :class:`ProtocolError`."""
    size = len(text.encode("utf-8", errors="replace"))
    if size > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"message too large: {size} bytes (limit {MAX_MESSAGE_BYTES})")
    try:
        data = json.loads(text, object_pairs_hook=unique_keys)
    except DuplicateKey as error:
        raise ProtocolError(f"malformed JSON (the key {error} is given twice)",
                            error.key if error.key in COMMAND_FIELDS else None) from None
    except json.JSONDecodeError as error:
        raise ProtocolError(f"malformed JSON ({error.msg} at position {error.pos})") from None
    except RecursionError:
        raise ProtocolError("malformed JSON (nested too deeply)") from None
    except ValueError:  # an integer of more than sys.get_int_max_str_digits() (4,300) digits
        raise ProtocolError("malformed JSON (a number with too many digits)") from None
    if not isinstance(data, dict) or "type" not in data:
        raise ProtocolError("a message must be a JSON object with a 'type'")
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as error:
        items = error.errors()
        fields = {command_field(item["loc"]) for item in items}
        raise ProtocolError("invalid message: " + "; ".join(map(problem, items[:5])),
                            fields.pop() if len(fields) == 1 else None) from None


def command_field(loc: tuple) -> str | None:
    """The field of a command that ``loc`` (pydantic's: the command's type, then the path in
    it) is about: ``dt``, ``target``, ``parameters.NAME``; ``parameters`` for a name that is
    refused itself (empty, too long); None for the message as a whole."""
    if len(loc) < 2:
        return None
    if loc[1] == "parameters" and len(loc) > 2 and loc[-1] != "[key]":
        return f"parameters.{shown_part(loc[2])}"
    return str(loc[1])


def shown_part(part) -> str:
    """One part of a field's path as an error shows it: a parameter name the page sent, cut
    short past ``SHOWN`` characters (a name of 60,000 characters was echoed whole, twice)."""
    return cut(str(part), SHOWN)


def where(loc: tuple) -> str:
    """Where a problem is, as ``set.dt`` or ``restart.parameters.mass``; a refused parameter
    name itself is ``restart.parameters[name]`` (the name is the value shown)."""
    if loc and loc[-1] == "[key]":
        return ".".join(map(shown_part, loc[:2])) + "[name]"
    return ".".join(map(shown_part, loc)) or "message"


def problem(item: dict) -> str:
    """One problem pydantic found, naming where and the value sent (set.dt: Input should be
    greater than 0, got -1.5); an unknown type shown cut short (it was echoed whole)."""
    if item["type"] == "union_tag_invalid":
        return (f"type: must be one of {item['ctx']['expected_tags']}, got "
                f"{format_value(item['input'].get('type'), most=SHOWN)}")
    if item["type"] == "missing":  # its input is the whole message
        return f"{where(item['loc'])}: {item['msg']}"
    return f"{where(item['loc'])}: {item['msg']}, got {format_value(item['input'], most=SHOWN)}"
