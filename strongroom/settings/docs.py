"""docs/configuration.md's table of settings, written from their declarations (issue 54).

`python -m strongroom.settings.docs [PATH]` rewrites the table between the markers of PATH
(default docs/configuration.md) and leaves the prose around it as it is; `--check` only says
whether it is current. tests/test_configuration_doc.py fails when it is not.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic.fields import FieldInfo

from strongroom.settings import AREAS
from strongroom.settings.base import SHOWN_DEFAULT

BEGIN = (
    "<!-- The table below is generated from strongroom/settings/ by "
    "`python -m strongroom.settings.docs`; edit the settings' descriptions, not the table. -->"
)
END = "<!-- End of the generated table. -->"
HEADER = "| Area | Variable | Default | Meaning |\n|---|---|---|---|"

_UNITS = ((1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB"))


def shown_default(name: str, field: FieldInfo) -> str:
    """A field's default as the table shows it: its words if it has some (`shown_default`),
    `unset` for None, else the value in code style, a count of bytes (a name ending in
    `_bytes`) also in KiB, MiB or GiB."""
    extra = field.json_schema_extra
    if isinstance(extra, dict) and SHOWN_DEFAULT in extra:
        return str(extra[SHOWN_DEFAULT])
    value = field.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{'true' if value else 'false'}`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, dict):
        return f"`{json.dumps(value)}`"
    text = f"`{value}`"
    if name.endswith("_bytes") and isinstance(value, int) and value >= 1024:
        for size, unit in _UNITS:
            if value % size == 0:
                return f"{text} ({value // size} {unit})"
    return text


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def settings_table() -> str:
    """One Markdown table of every setting, area by area in the order of `AREAS`."""
    rows = [
        f"| {title} | `STRONGROOM_{name.upper()}` | {_cell(shown_default(name, field))} | "
        f"{_cell(field.description or '')} |"
        for title, area in AREAS.items()
        for name, field in area.model_fields.items()
    ]
    return "\n".join([HEADER, *rows])


def with_table(doc: str) -> str:
    """`doc` with the text between its markers replaced by the current table.

    Raises ValueError when `doc` lacks either marker."""
    if BEGIN not in doc or END not in doc:
        raise ValueError(f"the doc has no generated-table markers ({BEGIN!r} ... {END!r})")
    before, rest = doc.split(BEGIN, 1)
    _, after = rest.split(END, 1)
    return f"{before}{BEGIN}\n\n{settings_table()}\n\n{END}{after}"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [arg for arg in argv if arg != "--check"]
    path = Path(paths[0] if paths else "docs/configuration.md")
    text = path.read_text()
    current = with_table(text)
    if current == text:
        return 0
    if check:
        print(f"{path} is out of date: python -m strongroom.settings.docs {path}", file=sys.stderr)
        return 1
    path.write_text(current)
    print(f"wrote the settings table of {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
