"""The sign-in and consent pages in a real headless Chromium (Debian's chromium and
chromium-driver packages, which `make test` installs; nothing is fetched from the internet).

The browser signs in on the dev page, approves on the consent page, and lands on the
client's redirect URI, served here by a small callback server; the test then exchanges the
code and calls the API with the token."""

from __future__ import annotations

import asyncio
import shutil
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import urlencode

import httpx
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from strongroom.runtime import Runtime
from tests.conftest import issue_credential
from tests.oauth.flow import pkce_pair, query_of
from tests.processes import ServeProcess, free_port


class _Callback(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<title>callback</title>signed in")

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def callback_server():
    server = HTTPServer(("127.0.0.1", free_port()), _Callback)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/callback"
    server.shutdown()


def chromium() -> webdriver.Chrome:
    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert binary and driver, "install Debian's chromium and chromium-driver (make test does)"
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
    ):
        options.add_argument(flag)  # fmt: skip
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)


def sign_in_and_consent(authorize_url: str, email: str, redirect_uri: str) -> tuple[str, list]:
    """In the browser: sign in, approve, and return the callback URL and the cookies."""
    browser = chromium()
    try:
        wait = WebDriverWait(browser, 20)
        browser.get(authorize_url)
        wait.until(expected_conditions.presence_of_element_located((By.ID, "email")))
        assert "Sign in" in browser.title
        browser.find_element(By.ID, "email").send_keys(email)
        browser.find_element(By.ID, "sign-in").click()
        wait.until(expected_conditions.presence_of_element_located((By.ID, "approve")))
        assert "Allow access?" in browser.page_source and "vault:read" in browser.page_source
        cookies = browser.get_cookies()
        browser.find_element(By.ID, "approve").click()
        wait.until(lambda b: b.current_url.startswith(redirect_uri))
        return browser.current_url, cookies
    finally:
        browser.quit()


async def test_sign_in_and_consent_pages_work_in_a_real_browser(postgres_settings, callback_server):
    runtime = Runtime.create(postgres_settings)
    user = await issue_credential(runtime, email="browser@example.com")
    await runtime.close()
    async with ServeProcess(postgres_settings) as server:
        async with httpx.AsyncClient(base_url=server.base) as http:
            registered = (await http.post("/api/v2/oauth/register", json={
                "client_name": "Browser test app", "redirect_uris": [callback_server],
                "token_endpoint_auth_method": "none"})).json()  # fmt: skip
            verifier, challenge = pkce_pair()
            query = urlencode({
                "response_type": "code", "client_id": registered["client_id"],
                "redirect_uri": callback_server, "scope": "vault:read meta:read",
                "state": "browser-state", "code_challenge": challenge,
                "code_challenge_method": "S256"})  # fmt: skip
            landed, cookies = await asyncio.to_thread(
                sign_in_and_consent, f"{server.base}/api/v2/oauth/authorize?{query}",
                user.user.email, callback_server,
            )  # fmt: skip
            answer = query_of(landed)
            assert answer["state"] == "browser-state" and answer["iss"] == server.env[
                "STRONGROOM_BASE_URL"]  # fmt: skip
            [session] = [c for c in cookies if c["name"] == "strongroom_session"]
            assert session["httpOnly"] and session["sameSite"] == "Lax"
            token = await http.post("/api/v2/oauth/token", data={
                "grant_type": "authorization_code", "code": answer["code"],
                "redirect_uri": callback_server, "client_id": registered["client_id"],
                "code_verifier": verifier})  # fmt: skip
            assert token.status_code == 200, token.text
            me = await http.get("/api/v2/me", headers={
                "Authorization": f"Bearer {token.json()['access_token']}"})  # fmt: skip
            assert me.status_code == 200 and me.json()["email"] == "browser@example.com"
