"""Choosing among the due deliveries (strongroom/outbox/fairness.py): the tenant's share."""

from __future__ import annotations

import uuid

from strongroom.outbox.fairness import pick

A, B, C = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()


def _due(*tenants: uuid.UUID) -> list[tuple[uuid.UUID, uuid.UUID]]:
    return [(uuid.uuid4(), tenant) for tenant in tenants]


def test_a_tenant_holding_its_share_is_passed_over_for_the_next_in_turn():
    due = _due(A, B, A, C)
    picked = pick(due, free=3, held={A: 2}, tenant_share=3)
    assert picked == [due[0][0], due[1][0], due[3][0]]  # A's second would be its fourth slot


def test_no_more_are_picked_than_slots_are_free():
    due = _due(A, B, C)
    assert pick(due, free=2, held={}, tenant_share=3) == [due[0][0], due[1][0]]


def test_a_tenant_with_no_room_gets_nothing_however_long_its_deliveries_waited():
    due = _due(A, A, A, B)
    assert pick(due, free=4, held={A: 3}, tenant_share=3) == [due[3][0]]
