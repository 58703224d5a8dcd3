"""Workflows made for a test, put in this process's catalogue for the test's length."""

from __future__ import annotations

import pytest

from strongroom.workflows import catalogue
from strongroom.workflows.catalogue import DocumentSetInputs, Step, Workflow


def register(
    monkeypatch: pytest.MonkeyPatch,
    workflow_id: str,
    *steps: Step,
    name: str = "For tests",
    reads_document_set: bool = True,
) -> Workflow:
    """A workflow of `steps` over a set of documents, in the catalogue until the test ends
    (only this process's: a worker process does not know it)."""
    workflow = Workflow(
        id=workflow_id,
        name=name,
        description="For tests.",
        inputs=DocumentSetInputs,
        steps=steps,
        reads_document_set=reads_document_set,
    )
    monkeypatch.setitem(catalogue.WORKFLOWS, workflow_id, workflow)
    return workflow
