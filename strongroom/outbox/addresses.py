"""No server-side request forgery (issue 30): a webhook URL must name a public host.

`resolve_public` answers the addresses a delivery may connect to, refusing the URL when any
address its host resolves to is loopback, private, link-local (cloud metadata), shared
(carrier-grade NAT), multicast, reserved or unspecified. The sender connects to exactly the
addresses checked here, so a name that resolves differently a moment later gains nothing.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import urlsplit

MAX_URL_LENGTH = 2048
RESOLVE_SECONDS = 5.0
_METADATA = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
_SHARED = ipaddress.ip_network("100.64.0.0/10")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class UnsafeUrl(ValueError):
    """The URL may not be delivered to; the message says why, in the client's terms."""


def check_url_form(url: str) -> None:
    """The URL's shape alone: http(s), a host, no user or password, no fragment."""
    if len(url) > MAX_URL_LENGTH:
        raise UnsafeUrl(f"longer than {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise UnsafeUrl(f"not a valid URL ({error})") from error
    if parts.scheme not in {"http", "https"}:
        raise UnsafeUrl("must be an http or https URL")
    if not parts.hostname:
        raise UnsafeUrl("has no host")
    if parts.username is not None or parts.password is not None:
        raise UnsafeUrl("must not carry a user name or password")
    if parts.fragment:
        raise UnsafeUrl("must not have a #fragment")
    if port == 0:
        raise UnsafeUrl("port 0 is not a port")


def refused_address(address: Address) -> str | None:
    """None for a public address; else what kind of address it is."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour or (address.teredo or (None, None))[1]
        if embedded is not None:
            return refused_address(embedded)
    if address in _METADATA:
        return "link-local (cloud metadata)"
    for reason, test in (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("shared (carrier-grade NAT)", address in _SHARED),
        ("reserved", address.is_reserved),
        ("private", address.is_private),
    ):
        if test:
            return reason
    return None if address.is_global else "not public"


async def resolve_public(url: str, *, allow_private: bool) -> list[tuple[str, int]]:
    """The (address, port) pairs a delivery to `url` may connect to. Raises UnsafeUrl when the
    URL is malformed, its host does not resolve, or (unless `allow_private`) any address it
    resolves to is not public."""
    check_url_form(url)
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        addresses = [ipaddress.ip_address(host)]
    except ValueError:
        addresses = await _resolve(host, port)
    if not allow_private:
        for address in addresses:
            if (reason := refused_address(address)) is not None:
                raise UnsafeUrl(f"its host resolves to {address}, a {reason} address")
    return [(str(address), port) for address in dict.fromkeys(addresses)]


async def _resolve(host: str, port: int) -> list[Address]:
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(RESOLVE_SECONDS):
            found = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except TimeoutError as error:
        raise UnsafeUrl(f"its host {host} did not resolve in time") from error
    except (OSError, UnicodeError) as error:
        raise UnsafeUrl(f"its host {host} does not resolve") from error
    addresses = [ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in found]
    if not addresses:
        raise UnsafeUrl(f"its host {host} does not resolve")
    return addresses
