"""One delivery attempt over HTTP (issue 30): POST the signed body, follow no redirect, keep
at most 1 KB of the answer, and never take longer than the timeout, whatever the receiver
does. The host is resolved and checked at every attempt (strongroom/outbox/addresses.py)
and the connection made to the very address checked: the URL's host is replaced by it, the
`Host` header and (for https) TLS's server name and certificate check keep the name.
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit, urlunsplit

import httpx

from strongroom.outbox.addresses import UnsafeUrl, resolve_public
from strongroom.outbox.attempt import DeliveryAttempt

KEPT_BYTES = 1024


class Sender:
    def __init__(self, *, timeout_seconds: float = 10.0, allow_private: bool = False) -> None:
        self.timeout_seconds = timeout_seconds
        self.allow_private = allow_private
        self._client = httpx.AsyncClient(
            follow_redirects=False,
            timeout=httpx.Timeout(timeout_seconds),
            trust_env=False,  # no proxy from the environment between us and the check
        )

    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> DeliveryAttempt:
        """One attempt; never raises for what the network or the receiver does."""
        started = time.monotonic()

        def failed(error: str) -> DeliveryAttempt:
            return DeliveryAttempt(None, "", error, time.monotonic() - started)

        try:
            async with asyncio.timeout(self.timeout_seconds):
                targets = await resolve_public(url, allow_private=self.allow_private)
                return await self._post_to(targets, url, body, headers, started)
        except UnsafeUrl as error:
            return failed(f"refused: the URL {error}")
        except (TimeoutError, httpx.TimeoutException):
            return failed(f"timed out after {self.timeout_seconds:g} s")
        except httpx.ConnectError as error:
            return failed(f"could not connect ({_reason(error)})")
        except httpx.HTTPError as error:
            return failed(f"{type(error).__name__} ({_reason(error)})")

    async def _post_to(
        self,
        targets: list[tuple[str, int]],
        url: str,
        body: bytes,
        headers: dict[str, str],
        started: float,
    ) -> DeliveryAttempt:
        parts = urlsplit(url)
        host = parts.hostname or ""
        extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
        last: httpx.ConnectError | None = None
        for address, port in targets:
            netloc = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
            pinned = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
            request = self._client.build_request(
                "POST",
                pinned,
                content=body,
                headers=headers | {"host": parts.netloc, "accept-encoding": "identity"},
                extensions=extensions,
            )
            try:
                response = await self._client.send(request, stream=True)
            except httpx.ConnectError as error:
                last = error  # the name's next address, if it has one
                continue
            try:
                kept = await _first_bytes(response)
            finally:
                await response.aclose()
            seconds = time.monotonic() - started
            error = None
            if response.is_redirect:
                error = f"redirect not followed ({response.status_code})"
            elif not response.is_success:
                error = f"answered {response.status_code}"
            return DeliveryAttempt(response.status_code, kept, error, seconds)
        assert last is not None
        raise last

    async def aclose(self) -> None:
        await self._client.aclose()


async def _first_bytes(response: httpx.Response) -> str:
    kept = b""
    async for chunk in response.aiter_raw():  # as sent: nothing is inflated here
        kept += chunk
        if len(kept) >= KEPT_BYTES:
            break
    return kept[:KEPT_BYTES].decode("utf-8", errors="replace")


def _reason(error: Exception) -> str:
    text = str(error) or type(error).__name__
    return text[:200]
