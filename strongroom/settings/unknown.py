"""`STRONGROOM_*` names in the environment that are no setting (issue 54 point 1).

pydantic-settings ignores them (`extra="ignore"`), so `STRONGROOM_EMBEDING_PROVIDER=none`
would leave meaning on without a word. `strongroom` names each one at start, with the closest
real name (difflib), and never its value, which may be a secret.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping

from strongroom.settings import Settings

PREFIX = "STRONGROOM_"

# Names of the prefix that other programs read, not the server: a client's API key (README,
# docs/webhooks.md) and the test suite's own variables.
NOT_SETTINGS = frozenset({"STRONGROOM_API_KEY"})
NOT_SETTINGS_PREFIXES = ("STRONGROOM_TEST_", "STRONGROOM_E2E_", "STRONGROOM_FUZZ_")

# How alike (difflib's ratio, over the part after the prefix) a name must be to a setting's
# to be suggested: EMBEDING_PROVIDER is 0.94 like EMBEDDINGS_PROVIDER.
CUTOFF = 0.75

logger = logging.getLogger("strongroom.settings")


def setting_names() -> list[str]:
    """Every setting's variable, `STRONGROOM_` and its attribute in capitals."""
    return [PREFIX + name.upper() for name in Settings.model_fields]


def unknown_names(environ: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """The `STRONGROOM_*` names of `environ` that are no setting (compared whatever their case,
    as pydantic-settings reads them), each with the closest setting's name or None."""
    known = setting_names()
    suffixes = {name.removeprefix(PREFIX): name for name in known}
    found = []
    for name in sorted(environ):
        upper = name.upper()
        if not upper.startswith(PREFIX) or upper in known or upper in NOT_SETTINGS:
            continue
        if upper.startswith(NOT_SETTINGS_PREFIXES):
            continue
        close = difflib.get_close_matches(upper.removeprefix(PREFIX), suffixes, n=1, cutoff=CUTOFF)
        found.append((name, suffixes[close[0]] if close else None))
    return found


def warn_unknown_names(environ: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """Log a warning for each unknown `STRONGROOM_*` name of `environ` (its name and the
    suggestion, never its value); return them."""
    found = unknown_names(environ)
    for name, suggestion in found:
        hint = f"; did you mean {suggestion}?" if suggestion else ""
        logger.warning(
            "%s is not a Strongroom setting and is ignored%s",
            name,
            hint,
            extra={"variable": name, "suggestion": suggestion},
        )
    return found
