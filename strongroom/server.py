"""Hypercorn with uvloop: the production server (`strongroom serve`) and the embedded one."""

from __future__ import annotations

import os
import tempfile

from hypercorn.config import Config
from hypercorn.run import run

APPLICATION_PATH = "strongroom.asgi:app"


def hypercorn_config(host: str, port: int) -> Config:
    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.worker_class = "uvloop"
    config.accesslog = None  # the app writes one structured line per request
    config.graceful_timeout = 20
    return config


def serve_workers(*, host: str, port: int, workers: int, metrics_port: int | None) -> None:
    """Serve in `workers` processes sharing the listening socket, with their metrics summed
    on `metrics_port`; returns on shutdown."""
    if metrics_port:
        # Before any worker starts (and before this process imports prometheus metrics).
        directory = tempfile.mkdtemp(prefix="strongroom-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
        from strongroom.metrics import serve_multiprocess_metrics

        serve_multiprocess_metrics(host, metrics_port, directory)
    config = hypercorn_config(host, port)
    config.application_path = APPLICATION_PATH
    config.workers = workers
    run(config)
