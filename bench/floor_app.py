"""The floor of bench/http_bench.py: a bare Quart app under Hypercorn (uvloop), as
`strongroom serve` runs, with no request path, no ORM and no pydantic.

    GET /          {"status":"ok"}, as `/healthz` answers: what Quart and Hypercorn cost
    GET /projects  the page of 25 projects that `GET /api/v2/vault/projects?limit=25` reads,
                   by the same SQL through psycopg alone (a pool per worker), as JSON

so the benchmark's table shows what the framework, the request path and the ORM each cost.
Run by http_bench.py with `hypercorn bench.floor_app:app`; FLOOR_DATABASE_URL (libpq),
FLOOR_TENANT_ID and FLOOR_ENVIRONMENT say which tenant's projects to read.
"""

from __future__ import annotations

import json
import os

from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool
from quart import Quart, Response

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

app = Quart("floor")
pool = AsyncConnectionPool(
    os.environ.get("FLOOR_DATABASE_URL", ""),
    min_size=10,
    max_size=10,
    open=False,
    kwargs={"row_factory": dict_row, "autocommit": True},
)


@app.before_serving
async def open_pool() -> None:
    await pool.open(wait=True)


@app.after_serving
async def close_pool() -> None:
    await pool.close()


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
