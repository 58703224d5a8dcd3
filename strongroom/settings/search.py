"""Search by words and by meaning: how the two are fused and what each process holds in memory."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class SearchSettings(BaseModel):
    """Search by words and by meaning: how the two are fused and what each process holds in
    memory."""

    search_lexical_weight: float = Field(
        default=0.4,
        ge=0,
        description=(
            "Hybrid search: weight of the lexical (BM25) score, min-max normalised over the "
            "candidates."
        ),
    )
    search_vector_weight: float = Field(
        default=0.6,
        ge=0,
        description=(
            "Hybrid search: weight of the vector (cosine) score, min-max normalised over the "
            "candidates."
        ),
    )
    search_fusion: Literal["blend", "rrf"] = Field(
        default="blend",
        description=(
            "Hybrid search: `blend` ranks by the weighted sum of both scores, each min-max "
            "normalised over the candidates; `rrf` by weighted reciprocal rank fusion (k = 60). "
            "Either way a passage holding every term of the query is placed above every passage "
            "that lacks one (issue 53: the words asked are never outranked by meaning alone)."
        ),
    )
    search_max_vectors: int = Field(
        default=20_000,
        ge=1,
        description=(
            "Hybrid search, when the vectors are read from the database per query (a tenant whose "
            "vectors do not fit `STRONGROOM_SEARCH_VECTOR_MEMORY_MB`, or it is 0): the most stored"
            " vectors one query reads. A search whose documents hold more passages than this "
            "scores by meaning only the passages found by words (up to 300), and its response is "
            "otherwise the same."
        ),
    )
    search_vector_memory_mb: int = Field(
        default=256,
        ge=0,
        description=(
            "Hybrid search on SQLite and on PostgreSQL without pgvector: memory (MiB) each process"
            " may hold passage vectors in, one matrix per tenant, environment and model, the least"
            " recently searched dropped first (256 MiB: about 170,000 vectors of 384 dimensions). "
            "Loaded at a tenant's first hybrid search and kept in step with the database "
            "(docs/embeddings.md). A tenant whose vectors do not fit, or `0`, reads them from the "
            "database on every search."
        ),
    )
    search_term_memory_mb: int = Field(
        default=256,
        ge=0,
        description=(
            "Search by words (every search, hybrid or not): memory (MiB) each process may hold "
            "passage terms in, one inverted index per tenant and environment, the least recently "
            "searched dropped first (about 100 MiB per 100,000 passages of contract prose). Loaded"
            " at a tenant's first search (in the background past 2,000 passages) and kept in step "
            "with the database like held vectors (docs/embeddings.md, Held terms). Whether a "
            "tenant fits is decided before building, at a cost of about the bound at most (issues "
            "28, 44.4): from its passage count (at least 140 bytes each), then from its passages' "
            "terms, streamed a few hundred at a time and counted (rows, postings, new terms) "
            "without being kept, refused as soon as the count passes the bound; a tenant that fits"
            " is then read again and built, batch by batch of at most 20,000 passages (so its "
            "first load reads its terms twice). A tenant whose terms do not fit, or `0`, is "
            "searched with the database's full-text index (GIN / FTS5): the same scores while at "
            "most 300 passages match, slower, and approximate past that."
        ),
    )
