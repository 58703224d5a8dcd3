"""The `chat_upstream` fixture: a running stand-in LLM provider (tests/chat_upstream.py)."""

from tests.chat_upstream import chat_upstream  # noqa: F401
