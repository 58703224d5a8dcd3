# The two commands of the README: `make run` and `make test`. Everything else they need is
# installed here, into ./.tools (the pinned uv) and ./.venv (the locked dependencies).
SHELL := /bin/bash
PYTHON ?= python3
UV_VERSION := 0.9.5
UV := .tools/bin/uv
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := .venv

.PHONY: install run test lint openapi bench

$(UV):
	$(PYTHON) -m venv .tools
	.tools/bin/pip install --quiet uv==$(UV_VERSION)

install: $(UV)
	$(UV) sync --frozen --python $(PYTHON) --quiet

## Run the embedded default on 127.0.0.1:8080 (PORT=9000 make run for another port).
run: install
	.venv/bin/strongroom dev --port $(or $(PORT),8080)

## Run the whole suite against the local PostgreSQL and Redis.
test: install
	.venv/bin/pytest $(PYTEST_ARGS)

lint: install
	.venv/bin/ruff check strongroom tests bench
	.venv/bin/ruff format --check strongroom tests bench

openapi: install
	.venv/bin/strongroom openapi

## Load the API with wrk and print the table for bench/RESULTS.md.
bench: install
	.venv/bin/python bench/http_bench.py
