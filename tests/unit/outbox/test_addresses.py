"""What a webhook URL may name (no server-side request forgery). Hermetic: IP literals, and
`localhost` from /etc/hosts."""

from __future__ import annotations

import pytest

from strongroom.outbox.addresses import UnsafeUrl, check_url_form, resolve_public


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1/hook", "loopback"),
        ("http://127.8.9.10:8080/", "loopback"),
        ("http://[::1]/", "loopback"),
        ("http://[::ffff:127.0.0.1]/", "loopback"),
        ("http://10.1.2.3/", "private"),
        ("http://172.16.0.1/", "private"),
        ("http://192.168.0.10/", "private"),
        ("http://[fd12::1]/", "private"),
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
        ("http://169.254.1.1/", "link-local"),
        ("http://[fe80::1]/", "link-local"),
        ("http://100.64.0.1/", "carrier-grade NAT"),
        ("http://0.0.0.0/", "unspecified"),
        ("http://224.0.0.1/", "multicast"),
        ("http://240.0.0.1/", "reserved"),
        ("http://localhost/", "loopback"),
    ],
)
async def test_addresses_that_are_not_public_are_refused(url, reason):
    with pytest.raises(UnsafeUrl, match=reason):
        await resolve_public(url, allow_private=False)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://93.184.216.34/hook", [("93.184.216.34", 443)]),
        ("http://93.184.216.34:8080/hook", [("93.184.216.34", 8080)]),
        ("https://[2606:4700::1111]/", [("2606:4700::1111", 443)]),
    ],
)
async def test_public_literals_are_accepted_without_dns(url, expected):
    assert await resolve_public(url, allow_private=False) == expected


async def test_private_addresses_are_accepted_when_allowed():
    assert await resolve_public("http://127.0.0.1:9/", allow_private=True) == [("127.0.0.1", 9)]


async def test_a_name_that_does_not_resolve_is_refused():
    with pytest.raises(UnsafeUrl, match="does not resolve"):
        await resolve_public("https://no-such-host.invalid/", allow_private=True)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://example.com/", "http or https"),
        ("https:///path", "no host"),
        ("https://user:pw@example.com/", "user name or password"),
        ("https://example.com/#top", "fragment"),
        ("https://example.com:99999/", "not a valid URL"),
        ("https://example.com/" + "a" * 2048, "longer than 2048"),
    ],
)
def test_malformed_urls_are_refused_by_their_form(url, reason):
    with pytest.raises(UnsafeUrl, match=reason):
        check_url_form(url)
