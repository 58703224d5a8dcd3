"""Vault: projects (here), documents and search (later issues)."""
