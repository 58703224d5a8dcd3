"""The floor of bench/http_bench.py: a bare Quart app under Hypercorn (uvloop), as
`strongroom serve` runs, with no request path, no ORM and no pydantic: `GET /` answers as
`/healthz` does; `GET /projects` reads the page of 25 projects the list route reads and
`POST /projects` writes the row the create route writes, by the same SQL through psycopg
alone. FLOOR_DATABASE_URL (libpq), FLOOR_TENANT_ID, FLOOR_OWNER_ID and FLOOR_ENVIRONMENT say
whose projects.
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime

from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool
from quart import Quart, Response, request

# What the list route runs (strongroom.vault.projects.list_projects, newest_first): the
# first page, one row more than the page to know whether more exist.
LIST_SQL = """
SELECT id, tenant_id, environment, owner_id, name, description, project_type, status,
       location, created_at, updated_at
FROM projects
WHERE tenant_id = %s AND environment = %s
ORDER BY created_at DESC, id DESC
LIMIT %s
"""
PAGE = 25
# What the create route runs (strongroom.vault.projects.create_project).
INSERT_SQL = """
INSERT INTO projects (id, tenant_id, environment, owner_id, name, description, project_type,
                      status, location, created_at, updated_at)
VALUES (%(id)s, %(tenant_id)s, %(environment)s, %(owner_id)s, %(name)s, %(description)s,
        %(project_type)s, %(status)s, %(location)s, %(created_at)s, %(updated_at)s)
"""

app = Quart("floor")
pool = AsyncConnectionPool(
    os.environ.get("FLOOR_DATABASE_URL", ""),
    min_size=10,
    max_size=10,
    open=False,
    kwargs={"row_factory": dict_row, "autocommit": True},
)
writes = AsyncConnectionPool(
    os.environ.get("FLOOR_DATABASE_URL", ""), min_size=10, max_size=10, open=False
)


@app.before_serving
async def open_pool() -> None:
    await pool.open(wait=True)
    await writes.open(wait=True)


@app.after_serving
async def close_pool() -> None:
    await pool.close()
    await writes.close()


@app.get("/")
async def bare() -> Response:
    return Response('{"status":"ok"}', content_type="application/json")


@app.get("/projects")
async def projects() -> Response:
    tenant, environment = os.environ["FLOOR_TENANT_ID"], os.environ["FLOOR_ENVIRONMENT"]
    async with pool.connection() as connection:
        cursor = await connection.execute(LIST_SQL, (tenant, environment, PAGE + 1))
        rows = await cursor.fetchall()
    body = {"data": rows[:PAGE], "next_cursor": None, "has_more": len(rows) > PAGE}
    return Response(json.dumps(body, default=str), content_type="application/json")


@app.post("/projects")
async def create_project() -> Response:
    body = await request.get_json()
    now = datetime.now(UTC)
    row = {
        "id": uuid.uuid4(),
        "tenant_id": os.environ["FLOOR_TENANT_ID"],
        "environment": os.environ["FLOOR_ENVIRONMENT"],
        "owner_id": os.environ["FLOOR_OWNER_ID"],
        "name": body["name"],
        "description": body.get("description", ""),
        "project_type": body["project_type"],
        "status": "active",
        "location": body.get("location"),
        "created_at": now,
        "updated_at": now,
    }
    async with writes.connection() as connection:  # BEGIN ... COMMIT, as the session's
        await connection.execute(INSERT_SQL, row)
    return Response(json.dumps(row, default=str), status=201, content_type="application/json")
