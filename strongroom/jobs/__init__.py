"""Durable background jobs (D46): one state machine for ingestion, template fills and
workflow runs, a queue (procrastinate on PostgreSQL, in-process in the embedded default) and
the runner that moves a job through its states."""
