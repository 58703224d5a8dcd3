"""Template fill (D45): accept a DOCX template, and fill its fields from the caller's
documents in a background job (D46), which answers each field as chat answers its question
(the same search, the same k, the same engine and citations), narrowed to the value asked,
then writes the values into a copy of the template.

The request only stores the template (issue 18): the job reads it, in a child process with
the job's memory and CPU limits (strongroom/jobs/bounded.py) after the archive's sizes and
tags were checked while streaming (strongroom/ingest/office_limits.py). A template
that is not a DOCX, has no placeholders or too many, or passes a limit fails its job.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import update
from sqlmodel import col, select

from strongroom.api.capability import Call
from strongroom.api.multipart import SpooledFile
from strongroom.chat import service as chat
from strongroom.chat.schemas import ChatRequest
from strongroom.jobs.models import Job, JobKind
from strongroom.jobs.runner import JobContext, JobFailed
from strongroom.problems import Problem
from strongroom.retrieval.filters import Filters
from strongroom.services import Services, queue_at_commit
from strongroom.settings import Settings
from strongroom.storage.base import remove_quietly, spool_file
from strongroom.templates.fill_types import (
    InstructionTooLong,
    Placeholder,
    TemplateError,
    TemplateLimits,
    TemplateTooLarge,
)
from strongroom.templates.models import TemplateFill
from strongroom.tenants.partition import DataPartition
from strongroom.text.question import Question
from strongroom.vault import documents, projects
from strongroom.vault.schemas import MAX_FILTER_IDS

# A field is answered as chat answers its question (issue 53 item 6): over as many passages
# as chat retrieves by default, by the same engine, with the same citations.
PASSAGES_PER_FIELD = ChatRequest.model_fields["k"].default
MAX_FIELDS = 200  # each is a search and an answer (a model call with the openai engine)
MAX_NAME_CHARS = 255
_MARKERS = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")


def parse_document_ids(value: str | None) -> list[uuid.UUID] | None:
    """`document_ids` as a form field: a JSON array or comma-separated ids; raises Problem."""
    if value is None or not value.strip():
        return None
    try:
        items = json.loads(value) if value.strip().startswith("[") else value.split(",")
        ids = [uuid.UUID(str(item).strip()) for item in items]
    except (ValueError, TypeError, AttributeError, RecursionError) as error:
        # RecursionError: a JSON array nested too deeply to parse
        raise _form_error("document_ids", "a JSON array or comma-separated list of ids") from error
    if len(ids) > MAX_FILTER_IDS:
        raise _form_error("document_ids", f"at most {MAX_FILTER_IDS} ids")
    return ids


def _form_error(field: str, message: str) -> Problem:
    return Problem(
        "validation_error",
        "The template form is invalid.",
        errors=[{"field": field, "message": message}],
    )


async def accept_stored_template(
    call: Call[Services],
    template_document_id: uuid.UUID,
    *,
    project_id: uuid.UUID | None,
    document_ids: list[uuid.UUID] | None,
) -> tuple[Job, TemplateFill]:
    """`accept_template` for a DOCX already uploaded to the vault: a copy of its bytes is
    the template (the document stays as it is). Raises Problem 404 for a document that is
    not the caller's, and whatever `accept_template` raises."""
    document = await documents.get_document(call, template_document_id)
    fd, copy = spool_file(call.services.blobs.spool_dir)
    os.close(fd)
    try:
        try:
            async with call.services.blobs.local_copy(document.blob_key) as stored:
                await asyncio.to_thread(shutil.copyfile, stored, copy)
        except FileNotFoundError as error:
            raise Problem("not_found", "The stored file is missing.") from error
        template = SpooledFile(
            path=copy, filename=document.name, size=document.size_bytes, sha256=""
        )
        return await accept_template(
            call, template, project_id=project_id, document_ids=document_ids, name=document.name
        )
    finally:
        await asyncio.to_thread(remove_quietly, copy)  # taken over by the blob store, or not


async def accept_template(
    call: Call[Services],
    file: SpooledFile,
    *,
    project_id: uuid.UUID | None,
    document_ids: list[uuid.UUID] | None,
    name: str,
) -> tuple[Job, TemplateFill]:
    """Store the template and queue the job that reads and fills it.

    Nothing here parses the template (issue 18): a hostile DOCX costs its job, within the
    job's limits, not the API process; the template's placeholders are read in the job.
    Raises Problem: 404 (a project or document not the caller's), 422 `validation_error`
    (empty), 400 `unsupported_file_type` (not even a zip archive)."""
    principal, services = call.principal, call.services
    if file.size == 0:
        raise _form_error("file", "the file is empty")
    if not await asyncio.to_thread(_is_zip, file.path):
        raise Problem("unsupported_file_type", "A template must be a DOCX document.")
    job_id = uuid.uuid4()
    key = f"{principal.tenant_id}/{principal.environment.value}/templates/{job_id}"
    # Stored before the request's session is first used: no connection waits on storage.
    await services.blobs.put_file(f"{key}/template.docx", file.path)
    call.undo_unless_committed(lambda: services.blobs.delete(f"{key}/template.docx"))
    if project_id is not None:
        if await projects.get_project(call.session, principal, project_id) is None:
            raise Problem("not_found", "No such project.")
    if document_ids:
        await documents.require_documents(call.session, principal, document_ids)
    job = Job(
        id=job_id,
        tenant_id=principal.tenant_id,
        environment=principal.environment.value,
        kind=JobKind.TEMPLATE_FILL.value,
        subject_id=job_id,  # the fill's row shares the job's id
    )
    fill = TemplateFill(
        id=job.id,
        tenant_id=principal.tenant_id,
        environment=principal.environment.value,
        owner_id=principal.user_id,
        project_id=project_id,
        document_ids=[str(i) for i in document_ids] if document_ids else None,
        template_name=_shortened(name),
        template_blob_key=f"{key}/template.docx",
    )
    call.session.add(job)
    await call.session.flush()  # the job row first: the fill's id refers to it
    call.session.add(fill)
    await queue_at_commit(call, job)
    return job, fill


def _is_zip(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(4) == b"PK\x03\x04"


def _docx_fill():
    """strongroom/templates/docx_fill.py, imported when a job first reads a template: it
    imports python-docx, which the app's start need not pay for (issue 29)."""
    from strongroom.templates import docx_fill

    return docx_fill


def template_limits(settings: Settings) -> TemplateLimits:
    return TemplateLimits(
        max_unzipped_bytes=settings.template_max_unzipped_bytes,
        max_xml_bytes=settings.template_max_xml_bytes,
        max_xml_tags=settings.template_max_xml_elements,
    )


async def find_fill(call: Call[Services], job_id: uuid.UUID) -> tuple[Job, TemplateFill]:
    """The caller's template-fill job; raises Problem 404 for any other."""
    statement = select(Job, TemplateFill).where(
        Job.id == job_id,
        TemplateFill.id == Job.id,
        TemplateFill.tenant_id == call.principal.tenant_id,
        TemplateFill.environment == call.principal.environment.value,
    )
    row = (await call.session.exec(statement)).first()
    if row is None:
        raise Problem("not_found", "No such template-fill job.")
    return row


def _shortened(name: str) -> str:
    """`name` cut to MAX_NAME_CHARS, keeping its extension."""
    if len(name) <= MAX_NAME_CHARS:
        return name
    stem, dot, suffix = name.rpartition(".")
    if not dot or len(suffix) > 10:
        return name[:MAX_NAME_CHARS]
    return stem[: MAX_NAME_CHARS - len(suffix) - 1] + "." + suffix


def question_for(placeholder: Placeholder) -> str:
    """What to ask the answer engine: the instruction, or the field name as words."""
    if placeholder.instruction:
        return placeholder.instruction
    words = re.sub(r"[_.\-]+", " ", placeholder.name).strip()
    return f"What is the {words}?"


def value_of(answer: chat.Answer) -> str | None:
    """The answer without its citation markers; None when the engine found none (a "not
    found", whose citations are only the closest passages) or cited nothing (no value)."""
    if answer.answer_type == "not_found" or not answer.citations:
        return None
    return _MARKERS.sub("", answer.text).strip() or None


async def fill_template(context: JobContext[Services]) -> None:
    services = context.services
    async with services.sessions() as session:
        fill = await session.get(TemplateFill, context.job.subject_id)
    if fill is None:
        raise JobFailed("not_found", "The template-fill job's record is missing.")
    partition = DataPartition.of(fill)
    filters = Filters(
        project_ids=[fill.project_id] if fill.project_id else None,
        document_ids=[uuid.UUID(i) for i in fill.document_ids] if fill.document_ids else None,
    )
    limits = template_limits(services.settings)
    result_key = fill.template_blob_key.rsplit("/", 1)[0] + "/result.docx"
    async with services.blobs.local_copy(fill.template_blob_key) as template:
        try:
            placeholders = await services.work.run(
                _docx_fill().find_placeholders, template, limits=limits
            )
        except InstructionTooLong as error:
            raise JobFailed("validation_error", str(error)) from error
        except TemplateTooLarge as error:
            raise JobFailed("template_too_large", str(error)) from error
        except TemplateError as error:
            raise JobFailed("unsupported_file_type", str(error)) from error
        if not placeholders:
            raise JobFailed("validation_error", "The template has no {{placeholders}} to fill.")
        if len(placeholders) > MAX_FIELDS:
            raise JobFailed("validation_error", f"The template has more than {MAX_FIELDS} fields.")
        fields: list[dict[str, Any]] = []
        await _save_fields(services, fill.id, fields)  # a retry starts again from the first
        for done, placeholder in enumerate(placeholders):
            fields.append(await _answer_field(services, partition, filters, placeholder))
            await _save_fields(services, fill.id, fields)
            await context.progress((done + 1) / (len(placeholders) + 1))
        values = {field["name"]: field["value"] for field in fields if field["found"]}
        fd, output = await asyncio.to_thread(spool_file, services.blobs.spool_dir)
        await asyncio.to_thread(os.close, fd)
        try:
            try:
                await services.work.run(
                    _docx_fill().fill_docx,
                    template,
                    values,
                    output,
                    limits=limits,
                )
            except TemplateError as error:
                raise JobFailed("unsupported_file_type", str(error)) from error
            await services.blobs.put_file(result_key, output)
        finally:
            await asyncio.to_thread(remove_quietly, output)
    async with services.sessions() as session:
        statement = update(TemplateFill).where(col(TemplateFill.id) == fill.id)
        await session.exec(statement.values(result_blob_key=result_key))  # type: ignore[call-overload]
        await session.commit()


async def _answer_field(services, partition, filters, placeholder: Placeholder) -> dict[str, Any]:
    question = Question.read(question_for(placeholder))
    async with services.sessions() as session:
        passages = await chat.retrieve(
            session,
            partition,
            question,
            k=PASSAGES_PER_FIELD,
            filters=filters,
            semantic=services.semantic(),
            terms=services.terms,
        )
    engine = services.answers
    answer = await chat.collect(
        chat.answer_events(engine, question, passages, brief=True),
        chat.Answer(engine.name, len(passages)),
    )
    value = value_of(answer)
    return {
        "name": placeholder.name,
        "instruction": placeholder.instruction,
        "value": value,
        "found": value is not None,
        "citations": [c.model_dump(mode="json") for c in answer.citations] if value else [],
    }


async def _save_fields(services, fill_id: uuid.UUID, fields: list[dict[str, Any]]) -> None:
    async with services.sessions() as session:
        statement = update(TemplateFill).where(col(TemplateFill.id) == fill_id)
        await session.exec(statement.values(fields=fields))  # type: ignore[call-overload]
        await session.commit()
