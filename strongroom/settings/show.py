"""The effective settings by area, secrets masked: what `strongroom config` prints."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import SecretStr

from strongroom.settings import AREAS, Settings

MASK = "********"

# A part of a setting's name (split at `_`) that marks its value as a secret, unless the value
# is a number or a switch (`key_cache_seconds`, `chat_openai_max_tokens` are neither secret).
SECRET_WORDS = frozenset({"password", "passwd", "secret", "key", "token", "pepper", "credential"})


def mask_url(value: str) -> str:
    """`value` with the password of its userinfo and any secret-named query parameter masked
    (`postgresql://app:***@db/x`, `...?password=***`); other text unchanged."""
    parts = urlsplit(value)
    if not parts.scheme or not parts.netloc:
        return value
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            netloc = f"{userinfo.split(':', 1)[0]}:{MASK}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_secret_name(key) for key, _ in pairs):
            masked = [(key, MASK if _secret_name(key) else item) for key, item in pairs]
            query = urlencode(masked, safe="*")
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def _secret_name(name: str) -> bool:
    return bool(set(name.lower().split("_")) & SECRET_WORDS)


def shown_value(name: str, value: object) -> str:
    """How `strongroom config` shows the value of setting `name`: `unset`, the mask for a
    secret that is set, else the value (mappings as JSON, switches as true/false)."""
    if value is None:
        return "unset"
    if isinstance(value, SecretStr):
        return MASK
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if _secret_name(name):
        return MASK
    if isinstance(value, dict):
        return json.dumps(value)
    text = str(value) if isinstance(value, Path | str) else repr(value)
    return mask_url(text)


def effective_settings(settings: Settings) -> list[tuple[str, list[tuple[str, str]]]]:
    """For each area, in order, its settings' variables and shown values."""
    return [
        (
            title,
            [
                (f"STRONGROOM_{name.upper()}", shown_value(name, getattr(settings, name)))
                for name in area.model_fields
            ],
        )
        for title, area in AREAS.items()
    ]


def render(settings: Settings) -> str:
    """The effective settings as text: a heading per area, a variable and its value a line."""
    areas = effective_settings(settings)
    width = max(len(name) for _, rows in areas for name, _ in rows)
    blocks = [
        "\n".join([title, *(f"  {name:<{width}}  {value}" for name, value in rows)])
        for title, rows in areas
    ]
    return "\n\n".join(blocks) + "\n"
