"""The ASGI application for Hypercorn workers: `strongroom.asgi:app`."""

from strongroom.app import create_app
from strongroom.logs import configure_logging
from strongroom.settings import Settings

settings = Settings()
configure_logging(settings.log_level)
app = create_app(settings)
