"""Vault (D41, D42): the projects and documents resources, and the jobs that make a document
searchable (ingestion, re-embedding) from the stages in strongroom.ingest and
strongroom.retrieval."""
