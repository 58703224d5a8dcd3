"""Webhooks (issue 30): signed events to customers' endpoints."""
