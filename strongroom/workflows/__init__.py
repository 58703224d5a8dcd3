"""Workflows (D47): named, multi-step document analyses run as background jobs."""
