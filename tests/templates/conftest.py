"""Template tests reuse the vault's fixtures (templates are filled from documents)."""

from tests.vault.conftest import owner_and_strangers, vault, worker  # noqa: F401 (fixtures)
