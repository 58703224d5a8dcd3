"""Hypercorn with uvloop: the production server (`strongroom serve`) and the embedded one."""

from __future__ import annotations

from hypercorn.config import Config
from hypercorn.run import run

APPLICATION_PATH = "strongroom.api.asgi:app"


def hypercorn_config(host: str, port: int) -> Config:
    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.worker_class = "uvloop"
    config.accesslog = None  # the app writes one structured line per request
    config.graceful_timeout = 20
    return config


def serve_workers(*, host: str, port: int, workers: int) -> None:
    """Serve in `workers` processes sharing the listening socket; returns on shutdown."""
    config = hypercorn_config(host, port)
    config.application_path = APPLICATION_PATH
    config.workers = workers
    run(config)
