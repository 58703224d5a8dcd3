"""The built-in workflows (D47). A workflow is a declaration: its id, what it does, the
pydantic model of its inputs (which gives `input_schema` and validates), and its named steps,
each an async function over the run's context. Adding one is adding a `Workflow` below.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlmodel import col, select

from strongroom.corpus.models import Document, DocumentChunk, DocumentStatus
from strongroom.services import Services
from strongroom.tenants.partition import Partition
from strongroom.vault.schemas import MAX_FILTER_IDS
from strongroom.workflows.analysis_types import Source

# Built-ins are as old as this release of the catalogue.
CATALOGUE_DATE = datetime(2026, 11, 22, tzinfo=UTC)
MAX_SOURCES = 20_000  # chunks one run reads at most


class DocumentSetInputs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    document_ids: list[uuid.UUID] | None = Field(
        default=None,
        max_length=MAX_FILTER_IDS,
        description="The documents to read (of the run's `project_id` too, when it is "
        "given); default: every ready document of the `project_id`. One of the two is "
        "required.",
    )


class CompareInputs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    left_document_id: uuid.UUID = Field(description="The earlier version.")
    right_document_id: uuid.UUID = Field(description="The later version.")


@dataclass
class RunContext:
    """What the steps of one run share: its partition, inputs, project, and a scratch
    `state` passed from step to step; the last step sets `output`."""

    services: Services
    partition: Partition
    inputs: BaseModel
    project_id: uuid.UUID | None
    state: dict[str, Any] = field(default_factory=dict)
    output: dict[str, Any] | None = None


StepFunction = Callable[[RunContext], Awaitable[None]]


@dataclass(frozen=True)
class Step:
    name: str
    run: StepFunction


@dataclass(frozen=True)
class Workflow:
    id: str
    name: str
    description: str
    inputs: type[BaseModel]
    steps: tuple[Step, ...]
    # Reads a set of documents: needs `project_id` or `inputs.document_ids`.
    reads_document_set: bool = False
    enabled: bool = True
    trigger_type: str = "manual"
    created_at: datetime = CATALOGUE_DATE

    @property
    def input_schema(self) -> dict[str, Any]:
        return self.inputs.model_json_schema()

    @property
    def updated_at(self) -> datetime:
        return self.created_at

    @property
    def position(self) -> tuple[datetime, uuid.UUID]:
        """Its place in the catalogue's keyset order (D5): a UUID derived from the id."""
        return self.created_at, uuid.uuid5(uuid.NAMESPACE_URL, f"strongroom:{self.id}")


async def load_sources(
    services: Services,
    partition: Partition,
    *,
    document_ids: list[uuid.UUID] | None = None,
    project_id: uuid.UUID | None = None,
) -> list[Source]:
    """The chunks of the partition's ready documents (the listed ones, of the project when
    one is given too), documents oldest first, each in reading order, at most MAX_SOURCES."""
    statement = (
        select(DocumentChunk, Document.name)
        .join(Document, Document.id == DocumentChunk.document_id)
        .where(
            Document.tenant_id == partition.tenant_id,
            Document.environment == partition.environment.value,
            Document.status == DocumentStatus.READY.value,
        )
    )
    if document_ids is not None:
        statement = statement.where(col(Document.id).in_(document_ids))
    if project_id is not None:
        statement = statement.where(Document.project_id == project_id)
    statement = statement.order_by(
        col(Document.created_at), col(Document.id), col(DocumentChunk.ordinal)
    ).limit(MAX_SOURCES)
    async with services.sessions() as session:
        rows = (await session.exec(statement)).all()
    return [
        Source(chunk.document_id, name, chunk.id, chunk.page_number, chunk.content)
        for chunk, name in rows
    ]


async def gather_documents(context: RunContext) -> None:
    inputs: DocumentSetInputs = context.inputs  # type: ignore[assignment]
    context.state["sources"] = await load_sources(
        context.services,
        context.partition,
        document_ids=inputs.document_ids,
        project_id=context.project_id,
    )


async def gather_pair(context: RunContext) -> None:
    inputs: CompareInputs = context.inputs  # type: ignore[assignment]
    for side, document_id in (
        ("left", inputs.left_document_id),
        ("right", inputs.right_document_id),
    ):
        context.state[side] = await load_sources(
            context.services, context.partition, document_ids=[document_id]
        )


# The analyses import on first use (issue 29): they are a job's work, and their patterns
# took a tenth of a second to compile on every start of the app, which only lists and
# starts runs.


async def write_summary(context: RunContext) -> None:
    from strongroom.workflows.analysis_summary import summarise

    summary = await context.services.in_job_thread(summarise, context.state["sources"])
    context.output = summary.to_json()


async def write_key_terms(context: RunContext) -> None:
    from strongroom.workflows.analysis_terms import extract_key_terms

    terms = await context.services.in_job_thread(extract_key_terms, context.state["sources"])
    context.output = terms.to_json()


async def write_comparison(context: RunContext) -> None:
    from strongroom.workflows.analysis_compare import compare_documents

    comparison = await context.services.in_job_thread(
        compare_documents, context.state["left"], context.state["right"]
    )
    context.output = comparison.to_json()


WORKFLOWS: dict[str, Workflow] = {
    workflow.id: workflow
    for workflow in (
        Workflow(
            id="wf_summarise_documents",
            name="Summarise documents",
            description="An extractive summary of a project's documents (or the listed ones): "
            "the most central sentences of each document and of all of them, with citations.",
            inputs=DocumentSetInputs,
            steps=(Step("gather_documents", gather_documents), Step("summarise", write_summary)),
            reads_document_set=True,
        ),
        Workflow(
            id="wf_extract_key_terms",
            name="Extract key terms",
            description="Parties, dates, amounts and governing law found in the documents, "
            "as structured values, each with the passage it comes from.",
            inputs=DocumentSetInputs,
            steps=(
                Step("gather_documents", gather_documents),
                Step("extract_key_terms", write_key_terms),
            ),
            reads_document_set=True,
        ),
        Workflow(
            id="wf_compare_documents",
            name="Compare two documents",
            description="Clause by clause: what the right document added, removed and changed "
            "against the left one, with citations on both sides.",
            inputs=CompareInputs,
            steps=(Step("gather_documents", gather_pair), Step("compare", write_comparison)),
        ),
    )
}


def catalogue() -> list[Workflow]:
    """Every workflow, in the catalogue's keyset order (newest first, D5)."""
    return sorted(WORKFLOWS.values(), key=lambda workflow: workflow.position, reverse=True)
