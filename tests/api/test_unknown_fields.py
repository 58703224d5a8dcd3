"""The near-miss suggestion of an unknown field's 422 message (issue 31), on models of
its own: a plural for a singular, a typo, a nested model, and no suggestion when none is
near."""

from __future__ import annotations

from pydantic import BaseModel

from strongroom.api.unknown_fields import unknown_field_message

SAID = "Extra inputs are not permitted"


class Inner(BaseModel):
    document_ids: list[str]


class Outer(BaseModel):
    project_ids: list[str]
    conversation_id: str
    inputs: Inner


def test_a_near_miss_names_the_field_meant():
    assert unknown_field_message(Outer, ("project_id",), SAID).endswith("`project_ids`?")
    assert unknown_field_message(Outer, ("conversaton_id",), SAID).endswith("`conversation_id`?")
    assert unknown_field_message(Outer, ("inputs", "document_id"), SAID).endswith("`document_ids`?")


def test_a_name_near_nothing_keeps_the_plain_message():
    assert unknown_field_message(Outer, ("colour",), SAID) == SAID
    assert unknown_field_message(Outer, ("project_ids", 0, "x"), SAID) == SAID
