"""The ASGI application for Hypercorn workers: `strongroom.asgi:app`."""

from strongroom.app import create_app
from strongroom.logs import configure_logging
from strongroom.server import answer_unread_requests_with_problems
from strongroom.settings import Settings

settings = Settings()
configure_logging(settings.log_level)
answer_unread_requests_with_problems(settings.base_url)
app = create_app(settings)
