"""Webhooks (issue 30): the endpoints API (routes, schemas, endpoints.py) and the events of
job ends (events.py). Recording and delivering events is the outbox's (strongroom/outbox/)."""
