"""What the areas of the settings share."""

from __future__ import annotations

from pathlib import Path

DEFAULT_DATA_DIR = Path(".strongroom")

# The key of a field's `json_schema_extra` that gives its default in words, for a default that
# is worked out at start (a generated secret, a file under the data directory) or that a
# command changes (`strongroom dev`). docs/configuration.md shows it instead of the value.
SHOWN_DEFAULT = "x-shown-default"


def shown_default(text: str) -> dict[str, str]:
    """`json_schema_extra` for a field whose default docs/configuration.md says in words."""
    return {SHOWN_DEFAULT: text}
