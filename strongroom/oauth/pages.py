"""The few HTML pages of the authorization server: sign-in (dev), consent, and errors.
Every value is escaped; forms carry a CSRF token."""

from __future__ import annotations

from html import escape

from quart import Response

_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem}"
    "button{padding:.5rem 1rem;margin-right:.5rem}input{padding:.4rem;width:100%}"
    ".error{color:#a00}"
)


def _page(title: str, body: str, status: int = 200) -> Response:
    html = (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{escape(title)}"
        f"</title><style>{_STYLE}</style></head><body><h1>{escape(title)}</h1>{body}"
        "</body></html>"
    )
    response = Response(html, status=status, content_type="text/html; charset=utf-8")
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Frame-Options"] = "DENY"
    # No form-action: browsers apply it to the redirect that follows a form post, which
    # would block the way back to the client's redirect URI.
    response.headers["Content-Security-Policy"] = (
        "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"
    )
    return response


def _hidden(fields: dict[str, str]) -> str:
    return "".join(
        f'<input type=hidden name="{escape(name)}" value="{escape(value)}">'
        for name, value in fields.items()
    )


# OAuth tokens act in a tenant's live environment (D13); a newcomer signing in on `make run`
# expects the data of the test key it printed (issue 31), so both pages say where it lands.
LIVE_NOTICE = (
    "The application will act in your organisation's <strong>live</strong> environment: its "
    "live data, billed in credits. Data added with a <code>test</code> API key "
    "(<code>ak_test_...</code>) is not visible there."
)


def error_page(message: str, status: int = 400) -> Response:
    """For errors that must not redirect (unknown client, unregistered redirect URI: D36)."""
    return _page("Sign-in request refused", f"<p class=error>{escape(message)}</p>", status)


def sign_in_page(*, csrf: str, next_url: str, error: str | None = None, status: int = 200):
    notice = f"<p class=error>{escape(error)}</p>" if error else ""
    return _page(
        "Sign in to Strongroom",
        f"{notice}<p>Development sign-in: enter the e-mail of a provisioned user.</p>"
        f"<p>{LIVE_NOTICE}</p>"
        '<form method=post action="/api/v2/oauth/sign-in">'
        f"{_hidden({'csrf_token': csrf, 'next': next_url})}"
        "<label>E-mail <input type=email name=email id=email required autofocus></label>"
        "<p><button type=submit id=sign-in>Sign in</button></p></form>",
        status,
    )


def consent_page(*, client_name: str, email: str, scopes: list[str], csrf: str,
                 fields: dict[str, str]) -> Response:  # fmt: skip
    items = "".join(f"<li><code>{escape(scope)}</code></li>" for scope in scopes)
    return _page(
        "Allow access?",
        f"<p><strong>{escape(client_name)}</strong> asks to act for <strong>{escape(email)}"
        f"</strong> with these permissions:</p><ul>{items}</ul><p>{LIVE_NOTICE}</p>"
        '<form method=post action="/api/v2/oauth/authorize">'
        f"{_hidden(fields | {'csrf_token': csrf})}"
        "<button type=submit name=decision value=approve id=approve>Allow</button>"
        "<button type=submit name=decision value=deny id=deny>Deny</button></form>",
    )
