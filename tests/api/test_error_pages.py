"""Issue 19 point 4: a problem's `type` URL (`/errors/<code>`) leads to a page saying what the
code is, when it happens and what to do, generated from the registry the problems come from
(strongroom/problems.py `PROBLEM_TYPES`, and the OAuth endpoints' codes)."""

from __future__ import annotations

import html
from urllib.parse import urlsplit

from strongroom.api.error_pages import error_pages
from strongroom.oauth.errors import STATUS as OAUTH_STATUS
from strongroom.problems import PROBLEM_TYPES
from tests.api.test_problems import assert_problem


def text_of(page: str) -> str:
    """The page's text with code spans as the registry writes them."""
    return html.unescape(page.replace("<code>", "`").replace("</code>", "`"))


def test_every_problem_code_has_when_and_what_to_do():
    for code, problem in PROBLEM_TYPES.items():
        assert len(problem.when) > 20 and len(problem.action) > 20, code


async def test_a_problems_type_url_answers_its_page(client):
    problem = await assert_problem(await client.get("/api/v2/me"), 401, "missing_api_key")
    response = await client.get(urlsplit(problem["type"]).path)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    page = text_of(await response.get_data(as_text=True))
    entry = PROBLEM_TYPES["missing_api_key"]
    assert entry.title in page and "401" in page
    assert entry.when in page and entry.action in page


async def test_every_code_a_response_can_carry_has_a_page(client):
    codes = set(PROBLEM_TYPES) | set(OAUTH_STATUS)
    assert set(error_pages()) == codes
    for code in codes:
        response = await client.get(f"/errors/{code}")
        assert response.status_code == 200, code
        page = text_of(await response.get_data(as_text=True))
        assert f"`{code}`" in page and error_pages()[code].title in page, code
        assert "When it happens" in page and "What to do" in page, code


async def test_the_index_links_every_page(client):
    response = await client.get("/errors")
    assert response.status_code == 200
    page = await response.get_data(as_text=True)
    for code in error_pages():
        assert f'href="errors/{code}"' in page, code


async def test_pages_run_no_script_and_load_nothing_from_elsewhere(client):
    response = await client.get("/errors/rate_limited")
    assert "default-src 'none'" in response.headers["Content-Security-Policy"]
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert "<script" not in await response.get_data(as_text=True)


async def test_an_unknown_code_is_a_not_found_problem_not_echoed(client):
    response = await client.get("/errors/%3Cscript%3Enot_a_code")
    body = await assert_problem(response, 404, "not_found")
    assert "script" not in str(body)


async def test_the_pages_are_not_api_operations(client):
    spec = await (await client.get("/api/v2/openapi.json")).get_json()
    assert not any(path.startswith("/errors") for path in spec["paths"])
