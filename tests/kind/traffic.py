"""Steady traffic through the API's Service, run inside the cluster by tests/kind/test_upgrade.py
(in a pod of the project's image, standard library only): reads, project creations with an
Idempotency-Key, uploads, and streamed chat answers, one after another in each of THREADS
threads, until the file STOP exists; then one JSON line with what happened.

A client here follows docs/api.md's rules and nothing more: 429 and 409
`idempotency_in_progress` wait `Retry-After`; 503 with `Retry-After` waits it (the server's
"not now"); a write retries with its same Idempotency-Key. Anything else (a reset or refused
connection, a timeout, a 5xx without `Retry-After`, an unexpected status, a stream cut before
`done`) is a failure, counted and kept (the first 20) with when it happened. Each connection
serves one request: a kept-alive connection the server closes between two requests is a race
no client can avoid and not what this measures.

Environment: API (base URL), KEY (an API key with vault and chat scopes), PROJECT (a project
id for uploads), RUN (a tag naming this run's projects), THREADS (default 3), PAUSE (seconds
each thread waits between two requests, default 0.2: steady for an upgrade; the scale-out test
of tests/kind/test_scale_out.py runs more threads with a shorter pause, to load the pools),
STOP."""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
import urllib.parse
import uuid

API = urllib.parse.urlsplit(os.environ["API"])
KEY = os.environ["KEY"]
PROJECT = os.environ["PROJECT"]
RUN = os.environ["RUN"]
STOP = os.environ.get("STOP", "/tmp/stop")  # noqa: S108  the pod's own /tmp
THREADS = int(os.environ.get("THREADS", "3"))
PAUSE = float(os.environ.get("PAUSE", "0.2"))
WAITABLE = {429, 409}

lock = threading.Lock()
started = time.monotonic()
START_TIME = time.time()
counts: dict[str, int] = {}
failures: list[dict] = []
waits: list[dict] = []  # the first 20 answers waited out (429, 409, 503 with Retry-After)
writes: dict[str, str] = {}  # Idempotency-Key -> project id, for every write that succeeded
last_success = [started]
longest_pause = [0.0, 0.0]  # seconds, and when it ended (seconds after the start)


def note(what: str, **detail: object) -> None:
    with lock:
        counts[what] = counts.get(what, 0) + 1
        if what == "failure" and len(failures) < 20:
            failures.append({"at": round(time.monotonic() - started, 2), **detail})


def succeeded() -> None:
    now = time.monotonic()
    with lock:
        if now - last_success[0] > longest_pause[0]:
            longest_pause[:] = [now - last_success[0], now - started]
        last_success[0] = now


def call(method: str, path: str, body: bytes | None,
         headers: dict | None) -> tuple[int, dict[str, str], bytes]:  # fmt: skip
    connection = http.client.HTTPConnection(API.hostname, API.port or 80, timeout=30)
    try:
        sent = {"Authorization": f"Bearer {KEY}", "Connection": "close", **(headers or {})}
        connection.request(method, path, body=body, headers=sent)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def attempt(name: str, method: str, path: str, body: bytes | None = None,
            headers: dict | None = None, retry_writes: bool = False) -> bytes | None:  # fmt: skip
    """One logical request with the documented retries; its body on success, else None."""
    for _ in range(20):
        try:
            status, response_headers, data = call(method, path, body, headers)
        except (OSError, http.client.HTTPException) as error:
            note("failure", request=name, error=repr(error))
            if not retry_writes:
                return None
            time.sleep(1)  # a write's outcome is unknown: retry with its key (counted above)
            continue
        if 200 <= status < 300:
            note(name)
            succeeded()
            return data
        retry_after = response_headers.get("retry-after")
        if status in WAITABLE or (status == 503 and retry_after):
            note(f"waited {status}")
            with lock:
                if len(waits) < 20:  # (not `body`: the retry sends that again)
                    excerpt = data[:200].decode(errors="replace")
                    waits.append({"at": round(time.monotonic() - started, 2), "request": name,
                                  "status": status, "body": excerpt})  # fmt: skip
            time.sleep(min(int(retry_after or "1"), 5))
            continue
        note("failure", request=name, status=status, body=data[:300].decode(errors="replace"))
        return None
    note("failure", request=name, error="gave up after 20 tries")
    return None


def create_project(index: int) -> None:
    key = f"{RUN}-{uuid.uuid4()}"
    body = json.dumps({"name": f"{RUN} {index}", "project_type": "other"}).encode()
    data = attempt("create", "POST", "/api/v2/vault/projects", body,
                   {"Content-Type": "application/json", "Idempotency-Key": key},
                   retry_writes=True)  # fmt: skip
    if data is not None:
        with lock:
            writes[key] = json.loads(data)["id"]


def upload(index: int) -> None:
    boundary = uuid.uuid4().hex
    text = f"Upgrade traffic {RUN} {index}: the retention is released on completion.\n" * 20
    part = f"--{boundary}\r\nContent-Disposition: form-data; name="
    body = (
        f'{part}"project_id"\r\n\r\n{PROJECT}\r\n'
        f'{part}"file"; filename="u{index}.txt"\r\nContent-Type: text/plain\r\n\r\n'
        f"{text}\r\n--{boundary}--\r\n"
    ).encode()
    attempt("upload", "POST", "/api/v2/vault/documents", body,
            {"Content-Type": f"multipart/form-data; boundary={boundary}"})  # fmt: skip


def chat_stream() -> None:
    body = json.dumps({"query": "When is the retention released?", "project_ids": [PROJECT]})
    data = attempt("chat", "POST", "/api/v2/chat/stream", body.encode(),
                   {"Content-Type": "application/json", "Accept": "text/event-stream"})  # fmt: skip
    if data is not None and b"event: done" not in data:
        note("failure", request="chat", error="stream ended without done",
             tail=data[-200:].decode(errors="replace"))  # fmt: skip


def loop(worker: int) -> None:
    index = 0
    while not os.path.exists(STOP):
        index += 1
        step = index % 10
        if step in (1, 4, 7):
            create_project(worker * 100000 + index)
        elif step == 2:
            upload(worker * 100000 + index)
        elif step == 5 and worker == 0:
            chat_stream()
        elif step % 2:
            attempt("me", "GET", "/api/v2/me")
        else:
            attempt("list", "GET", "/api/v2/vault/projects?limit=5")
        time.sleep(PAUSE)  # by default steady, not saturating: an upgrade's correctness


def main() -> None:
    threads = [threading.Thread(target=loop, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    succeeded()  # a pause at the end counts too
    pause, pause_ended = longest_pause
    print(json.dumps({"seconds": round(time.monotonic() - started, 1), "counts": counts,
                      "failures": failures, "waits": waits, "writes": writes,
                      "started_at": START_TIME,
                      "longest_pause_s": round(pause, 2),
                      "longest_pause_ended_s": round(pause_ended, 1)}), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
