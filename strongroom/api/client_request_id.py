"""Which client `X-Request-Id` may be written to the log (issue 28).

The header is the client's to fill, and clients have sent API keys in it: logged as it came,
a key ended up in the log. So the log keeps it only if it is a short token of safe
characters that does not look like a credential; otherwise the line carries the server's
own `request_id` alone. What looks like a credential: an API key's prefix, a JWT (`eyJ...`
with dots), a run of 32 or more letters and digits with no separator (random secrets;
a UUID's or a ULID's runs are shorter), a run of 16 or more that mixes small and capital
letters and digits (issue 44), or a run of 16 or more of base32's alphabet alone, capitals
and 2-7 (a slice of a key's random body, which is base32: issue 52; a ULID starts with its
time, 0 or 1 until the year 2248, a hex id is small letters and digits).
"""

from __future__ import annotations

import re

from strongroom.auth.keys import KEY_LIKE

_SAFE = re.compile(r"[A-Za-z0-9._:\-]+")
_JWT_LIKE = re.compile(r"ey[A-Za-z0-9_\-]+\.")
_LONG_RUN = re.compile(r"[A-Za-z0-9]{32,}")
_RUN = re.compile(r"[A-Za-z0-9]{16,}")
_BASE32 = re.compile(r"[A-Z2-7]+")  # RFC 4648's alphabet: an API key's body (auth.keys)


def _mixed(run: str) -> bool:
    return (
        any(c.islower() for c in run)
        and any(c.isupper() for c in run)
        and any(c.isdigit() for c in run)
    )


def loggable(value: str | None, max_chars: int) -> str | None:
    """`value` if it is at most `max_chars` safe characters and no credential's look-alike,
    else None."""
    if not value or len(value) > max_chars or not _SAFE.fullmatch(value):
        return None
    if KEY_LIKE.search(value) or _JWT_LIKE.match(value) or _LONG_RUN.search(value):
        return None
    if any(_mixed(run) or _BASE32.fullmatch(run) for run in _RUN.findall(value)):
        return None
    return value
