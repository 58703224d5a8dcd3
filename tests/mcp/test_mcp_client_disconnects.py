"""Issue 28: 20,000 stalled /mcp bodies logged 27,966 tracebacks. A body cut off at its read
deadline is answered 408 and logged once by strongroom.api; the MCP SDK's traceback of the
request whose client "went away" is dropped, its other errors kept."""

from __future__ import annotations

import logging
import sys

from starlette.requests import ClientDisconnect

from strongroom.mcp.mount import client_went_away


def record_of(error: BaseException | None) -> logging.LogRecord:
    exc_info = (type(error), error, None) if error else None
    return logging.LogRecord(
        "mcp.server.streamable_http", logging.ERROR, __file__, 1, "Error handling POST request",
        None, exc_info,
    )  # fmt: skip


def test_the_sdks_traceback_of_a_client_gone_before_its_body_is_dropped():
    assert not client_went_away(record_of(ClientDisconnect()))


def test_its_other_errors_are_kept():
    assert client_went_away(record_of(ValueError("bad")))
    assert client_went_away(record_of(None))


def test_the_filter_is_on_the_sdks_logger():
    assert client_went_away in logging.getLogger("mcp.server.streamable_http").filters
    assert "strongroom.mcp.mount" in sys.modules
