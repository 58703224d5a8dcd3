"""Finding passages (D43, issue 16): BM25 over held terms or the database's full-text
index, the ranking by meaning over held vectors or pgvector, and their fusion."""
