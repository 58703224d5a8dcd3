"""What a 422 says of a field the body may not have: Pydantic's "Extra inputs are not
permitted", and, when the name is a near miss of one the body takes, which one (issue 31:
`POST /chat` with `project_id`, the singular every other call uses, for `project_ids`).
Unknown fields stay refused: a misspelt filter must not be silently ignored."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from pydantic import BaseModel


def unknown_field_message(
    model: type[BaseModel], location: Sequence[str | int], message: str
) -> str:
    """Pydantic's `message` for the unknown field at `location` (its `loc`) of `model`,
    with the field meant when the name is a near miss."""
    taken = _fields_at(model, location[:-1])
    name = str(location[-1]) if location else ""
    near = _near_miss(name, taken)
    return f"{message}; did you mean `{near}`?" if near else message


def _fields_at(model: type[BaseModel], path: Sequence[str | int]) -> list[str]:
    """The field names of the model `path` leads to inside `model`; none if it leads
    elsewhere (a list item, a dict)."""
    for part in path:
        field = model.model_fields.get(str(part))
        annotation = field.annotation if field is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model = annotation
    return list(model.model_fields)


def _near_miss(name: str, taken: list[str]) -> str | None:
    for field in taken:  # a singular for a plural, or the other way round
        if field in (f"{name}s", name.removesuffix("s")) and field != name:
            return field
    close = difflib.get_close_matches(name, taken, n=1, cutoff=0.8)
    return close[0] if close else None
