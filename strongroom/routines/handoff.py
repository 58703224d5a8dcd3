"""What a step hands to a later one (issue 43: "a step may use the previous step's result
where the workflow allows it").

A step with `documents_from_step: N` reads the documents that step N's result cites,
instead of the trigger's document or the project's: the documents a chat answer cites (an
answer that found nothing cites none), those a workflow run's output quotes as evidence,
those a template fill's fields were found in. In order of first citation, those still there
(a document deleted since, say during a review, is left out), at most MAX_FILTER_IDS of them
(what a step's document filter holds). The capability the step calls checks them again as
the caller's, as for any document a step names.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.chat.models import Message
from strongroom.corpus.models import Document
from strongroom.templates.models import TemplateFill
from strongroom.tenants.partition import Partition
from strongroom.vault.schemas import MAX_FILTER_IDS
from strongroom.vault.scope import own_ids
from strongroom.workflows.models import WorkflowRun, parse_run_id

CONSIDERED = 10  # times MAX_FILTER_IDS: the cited documents looked up at most


async def cited_documents(
    session: AsyncSession, partition: Partition, step: dict[str, Any]
) -> list[uuid.UUID]:
    """The documents of `partition` a finished step's result cites and that are still there;
    [] when it cites none or is gone."""
    result_type, result_id = step.get("result_type"), step.get("result_id")
    if result_id is None:
        return []
    cited: Any = None
    if result_type == "chat_message":
        message = await session.get(Message, uuid.UUID(result_id))
        if message is not None and message.answer_type != "not_found":
            cited = message.citations
    elif result_type == "workflow_run":
        run = await session.get(WorkflowRun, parse_run_id(result_id))
        cited = None if run is None else run.output
    elif result_type == "template_fill":
        fill = await session.get(TemplateFill, uuid.UUID(result_id))
        cited = None if fill is None else fill.fields
    # In order, without repeats; a bound on the lookup for a result that cites thousands.
    found = list(dict.fromkeys(_document_ids(cited)))[: CONSIDERED * MAX_FILTER_IDS]
    return (await own_ids(session, partition, Document, found))[:MAX_FILTER_IDS]


def _document_ids(value: Any) -> Iterator[uuid.UUID]:
    """Every `document_id` in a result's JSON (its citations and evidence), depth first."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "document_id" and isinstance(item, str):
                try:
                    yield uuid.UUID(item)
                except ValueError:
                    continue
            else:
                yield from _document_ids(item)
    elif isinstance(value, list):
        for item in value:
            yield from _document_ids(item)
