"""The serving app's process parts and settings, read one way (issue 54): create_app puts
them on the Quart app with `install_parts` and `install_settings`; request code reads them
here, typed as the part of them it uses (a Protocol of its own), never by their keys.
Its place in the layers (pyproject.toml): below every package that serves requests."""

from __future__ import annotations

from typing import Any, TypeVar, cast

from quart import Quart, current_app

from strongroom.settings import Settings

T = TypeVar("T")
_PARTS = "strongroom"
_SETTINGS = "STRONGROOM_SETTINGS"


def install_settings(app: Quart, settings: Settings) -> None:
    app.config[_SETTINGS] = settings


def install_parts(app: Quart, parts: Any) -> None:
    app.extensions[_PARTS] = parts


def current_parts(as_type: type[T]) -> T:
    """The app's process parts (its Runtime), as `as_type` (a Protocol it satisfies)."""
    return cast(T, current_app.extensions[_PARTS])


def current_settings() -> Settings:
    return settings_of(current_app)


def settings_of(app: Quart) -> Settings:
    """The settings of `app`, outside its requests too (its start, a mount)."""
    return app.config[_SETTINGS]
