"""BM25's constants and term rarity, shared by the two places that score passages by words:
strongroom.retrieval.search.rank (over a pool from the database) and
strongroom.retrieval.term_memory (over held postings), which must give equal scores."""

from __future__ import annotations

import math

K1, B = 1.2, 0.75  # BM25's usual constants


def idf(total: int, seen: int) -> float:
    """The rarity of a term held by `seen` of `total` passages (never negative)."""
    return math.log(1 + (total - seen + 0.5) / (seen + 0.5))
