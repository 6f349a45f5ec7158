"""pydantic's validation errors as hooke's input errors: one line per problem, of the form
``path.of.field: problem, got value`` (:mod:`hooke.errors`).

Contract: a location is written as the schema's own field path (``springs[3].stiffness``), never
with the union tags pydantic adds; a rule of a whole model keeps its message, which names the
field itself. Scene files, builder parameters and sweep settings all report through here.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from ..errors import HookeInputErrors, cut, format_value


def _members(annotation) -> list:
    """The types a value of ``annotation`` may have: Annotated, Optional and unions unwrapped."""
    if get_origin(annotation) is Annotated:
        return _members(get_args(annotation)[0])
    if get_origin(annotation) in (Union, types.UnionType):
        return [member for arg in get_args(annotation) for member in _members(arg)]
    return [] if annotation is type(None) else [annotation]


def field_path(loc: tuple, model: type[BaseModel], extra: bool = False) -> str:
    """pydantic's error location as a field path such as ``springs[3].stiffness``.

    pydantic puts a tag in the location for each union it tries (``constrained-float``,
    ``list[constrained-float]``, a motion's ``sinusoid``); following the schema's own fields
    tells them from field names. ``extra``: the last part is an unknown key (kept as written,
    cut short past :data:`hooke.errors.MAX_NAME_SHOWN` characters as every name is)."""
    text, candidates = "", [model]
    for position, part in enumerate(loc):
        candidates = [member for annotation in candidates for member in _members(annotation)]
        if isinstance(part, int):
            text += f"[{part}]"
            candidates = [get_args(c)[0] for c in candidates if get_origin(c) is list]
            continue
        owners = [c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)
                  and part in c.model_fields]
        if owners:
            candidates = [owner.model_fields[part].annotation for owner in owners]
        elif any(get_origin(c) is dict for c in candidates) or (extra and position == len(loc) - 1):
            candidates = [Any]
        else:
            continue  # a union tag
        text += ("." if text else "") + cut(str(part))
    return text or "scene"


def validation_errors(error: ValidationError, model: type[BaseModel],
                      prefix: str = "") -> HookeInputErrors:
    """One line per pydantic error: ``path: problem, got value``."""
    return HookeInputErrors(error_lines(error.errors(), model, prefix))


def error_lines(errors: list, model: type[BaseModel], prefix: str = "") -> list[str]:
    """The lines of pydantic's ``ValidationError.errors()`` against ``model``, each path under
    ``prefix`` when one is given."""
    lines = []
    for item in errors:
        where = field_path(item["loc"], model, extra=item["type"] == "extra_forbidden")
        where = f"{prefix}.{where}" if prefix and where != "scene" else (prefix or where)
        message = item["msg"].replace("Value error, ", "")
        if not item["loc"]:  # a whole-model rule: its message names the field itself
            lines.append(message)
        elif item["type"] == "missing":
            lines.append(f"{where}: field required")
        elif item["type"] == "extra_forbidden":
            lines.append(f"{where}: unknown field, got {format_value(item['input'])}")
        elif item["type"] in ("union_tag_invalid", "union_tag_not_found"):
            lines.append(_tag_line(where, item))
        else:
            lines.append(f"{where}: {message}, got {format_value(item['input'])}")
    return lines


def _tag_line(where: str, item: dict) -> str:
    """A tagged table (a motion's ``type``) with no tag or an unknown one, in the file's words:
    pydantic's "Unable to extract tag using discriminator 'type'" named neither the key nor
    the kinds."""
    context = item.get("ctx", {})
    key = str(context.get("discriminator", "type")).strip("'")
    if item["type"] == "union_tag_not_found":
        return (f"{where}: needs a '{key}' naming its kind, got "
                f"{format_value(item['input'])}")
    known = str(context.get("expected_tags", "")).replace("'", "")
    return (f"{where}.{key}: unknown kind (known: {known}), got "
            f"{format_value(context.get('tag'))}")
