"""Reciprocal rank fusion of a follow-up's two searches (chat/service.py)."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

from strongroom.chat.service import fuse_rankings


def hits(*names: str) -> list:
    return [SimpleNamespace(chunk=SimpleNamespace(id=CHUNKS[name]), name=name) for name in names]


CHUNKS = {name: uuid.uuid4() for name in "abcdef"}


def names(fused) -> list[str]:
    return [hit.name for hit in fused]


def test_what_both_rankings_hold_high_comes_first():
    fused = fuse_rankings([(hits("a", "b", "c"), 1.0), (hits("b", "d", "a"), 1.0)], k=4)
    assert names(fused) == ["b", "a", "d", "c"]


def test_ties_keep_the_first_rankings_order_and_k_cuts():
    fused = fuse_rankings([(hits("a", "b"), 1.0), (hits("c", "d"), 1.0)], k=3)
    assert names(fused) == ["a", "c", "b"]


def test_a_hit_keeps_the_first_rankings_copy():
    first, second = hits("a"), hits("a")
    fused = fuse_rankings([(first, 1.0), (second, 1.0)], k=1)
    assert fused[0] is first[0]


def test_weights_scale_a_rankings_say():
    fused = fuse_rankings([(hits("a", "b"), 1.0), (hits("b"), 0.01)], k=2)
    assert names(fused) == ["a", "b"]
