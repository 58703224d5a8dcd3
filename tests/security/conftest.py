"""Security tests reuse the vault's worker (documents are ingested by it on PostgreSQL) and
the stand-in chat provider (chat's `openai` engine with an upstream key)."""

from tests.chat_upstream import chat_upstream  # noqa: F401 (fixture)
from tests.vault.conftest import worker  # noqa: F401 (fixture)
