"""Credentials and principals: API keys (here), OAuth tokens (strongroom.oauth)."""
