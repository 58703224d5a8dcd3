"""Routines (issue 43): workflows that run themselves on a schedule or when a document
becomes ready, wait for review where asked, and say so (docs/routines.md)."""
