"""Workflow tests reuse the vault's fixtures (workflows read documents)."""

from tests.vault.conftest import owner_and_strangers, vault, worker  # noqa: F401 (fixtures)
