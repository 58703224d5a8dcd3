"""The ASGI application for Hypercorn workers: `strongroom.asgi:app`.

A worker's start is mostly imports, which make objects that live as long as the process: the
cyclic collector walked them over and over as they were made (about a tenth of the import's
time, issue 29). It is paused while the app is imported and made, and what was made is frozen
out of its way, as the app freezes what its start-up makes (app.py)."""

import gc

gc.disable()

from strongroom.app import create_app  # noqa: E402
from strongroom.logs import configure_logging  # noqa: E402
from strongroom.server import answer_unread_requests_with_problems  # noqa: E402
from strongroom.settings import Settings  # noqa: E402

settings = Settings()
configure_logging(settings.log_level)
answer_unread_requests_with_problems(settings.base_url)
app = create_app(settings)
gc.freeze()
gc.enable()
