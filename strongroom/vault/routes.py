"""Vault endpoints: projects (spec 4, D41), documents (D42), ingestion jobs (D46) and
search (D43)."""

from __future__ import annotations

import uuid
from urllib.parse import quote

from quart import Response

from strongroom.api.capability import Call, Capability, Routes
from strongroom.api.pagination import PageQuery, page_of
from strongroom.auth.scopes import Scope
from strongroom.corpus.models import DocumentType
from strongroom.problems import Problem
from strongroom.retrieval.filters import Filters
from strongroom.retrieval.search import search_chunks
from strongroom.services import Services
from strongroom.vault import documents, project_deletion, projects
from strongroom.vault.schemas import (
    CreateProject,
    DocumentPage,
    DocumentPageQuery,
    DocumentView,
    IngestionJobView,
    ProjectDeletion,
    ProjectDetail,
    ProjectPage,
    SearchHit,
    SearchRequest,
    SearchResults,
    UpdateProject,
    UploadForm,
)
from strongroom.vault.scope import require_own_filters

routes = Routes()

VAULT_READ = frozenset({Scope.VAULT_READ.value})
VAULT_WRITE = frozenset({Scope.VAULT_WRITE.value})


@routes.capability(
    Capability(
        name="vault.list_projects",
        method="GET",
        path="/api/v2/vault/projects",
        summary="List projects, newest first",
        tag="vault",
        scopes=VAULT_READ,
        cost=1,
        query=PageQuery,
        response=ProjectPage,
    )
)
async def list_projects(call: Call[Services]) -> ProjectPage:
    query: PageQuery = call.query
    scope = "vault.list_projects"
    after = call.services.cursors.after(scope, query.cursor)
    rows, has_more = await projects.list_projects(
        call.services.reads, call.principal, limit=query.page_size, after=after
    )
    return page_of(ProjectPage, rows, has_more, cursors=call.services.cursors, scope=scope)


@routes.capability(
    Capability(
        name="vault.get_project",
        method="GET",
        path="/api/v2/vault/projects/<uuid:project_id>",
        summary="Get a project",
        tag="vault",
        scopes=VAULT_READ,
        cost=1,
        response=ProjectDetail,
    )
)
async def get_project(call: Call[Services]) -> ProjectDetail:
    project = await projects.get_project(call.session, call.principal, call.path["project_id"])
    if project is None:
        raise Problem("not_found", "No such project.")
    return ProjectDetail.model_validate(project)


@routes.capability(
    Capability(
        name="vault.update_project",
        method="PATCH",
        path="/api/v2/vault/projects/<uuid:project_id>",
        summary="Change a project",
        description="Only the fields sent change: `name`, `project_type`, `description`, "
        "`location` (null clears it), `status` (`active`, `on_hold`, `completed`, "
        "`archived`).",
        tag="vault",
        scopes=VAULT_WRITE,
        cost=1,
        oauth=False,
        body=UpdateProject,
        response=ProjectDetail,
        problems=frozenset({"not_found"}),
    )
)
async def update_project(call: Call[Services]) -> ProjectDetail:
    project = await projects.update_project(
        call.session, call.principal, call.path["project_id"], call.body
    )
    return ProjectDetail.model_validate(project)


@routes.capability(
    Capability(
        name="vault.delete_project",
        method="DELETE",
        path="/api/v2/vault/projects/<uuid:project_id>",
        summary="Delete a project and its documents",
        description="The project and its documents leave every list, lookup, search and "
        "answer at once, and a `project.deleted` event goes to the endpoints subscribed to "
        "it; a job then removes the documents, their passages and stored files (a project "
        "may hold thousands). An `Idempotency-Key` makes a retry answer the same 202.",
        tag="vault",
        scopes=VAULT_WRITE,
        cost=1,
        oauth=False,
        status=202,
        response=ProjectDeletion,
        problems=frozenset({"not_found"}),
    )
)
async def delete_project(call: Call[Services]) -> ProjectDeletion:
    return await project_deletion.delete_project(call, call.path["project_id"])


@routes.capability(
    Capability(
        name="vault.create_project",
        method="POST",
        path="/api/v2/vault/projects",
        summary="Create a project",
        description="An `Idempotency-Key` makes a retry safe (optional).",
        tag="vault",
        scopes=VAULT_WRITE,
        cost=2,
        oauth=False,
        status=201,
        body=CreateProject,
        response=ProjectDetail,
    )
)
async def create_project(call: Call[Services]) -> ProjectDetail:
    project = projects.create_project(call, call.principal, call.body)
    return ProjectDetail.model_validate(project)


@routes.capability(
    Capability(
        name="vault.upload_document",
        method="POST",
        path="/api/v2/vault/documents",
        summary="Upload a document",
        description="multipart/form-data with `file`, `project_id` and optional `name`. The "
        "type is detected from the content; the document is `processing` until its ingestion "
        "job has indexed it. Not idempotent: an `Idempotency-Key` is ignored, so a retry "
        "uploads another copy.",
        tag="vault",
        scopes=VAULT_WRITE,
        cost=10,
        oauth=False,
        status=202,
        upload=UploadForm,
        media_types=tuple(
            document_type.content_type.split(";")[0] for document_type in DocumentType
        ),
        honours_idempotency_key=False,
        response=DocumentView,
        problems=frozenset({"not_found", "unsupported_file_type"}),  # the project; the file
    )
)
async def upload_document(call: Call[Services]) -> DocumentView:
    form = call.upload
    if form.file is None:
        raise _form_error("file", "a file is required")
    project_id = _form_uuid(form.fields.get("project_id"), "project_id")
    name = printable(form.fields.get("name", "")) or printable(form.file.filename) or "document"
    if len(name) > 255:
        raise _form_error("name", "at most 255 characters")
    document = await documents.accept_upload(call, project_id, name, form.file)
    return DocumentView.model_validate(document)


def printable(text: str) -> str:
    """`text` with runs of white space as one space and other unprintable characters (a file
    name may carry any) dropped, trimmed."""
    kept = "".join(ch if ch.isprintable() or ch.isspace() else "" for ch in text)
    return " ".join(kept.split())


def _form_uuid(value: str | None, field: str) -> uuid.UUID:
    if value is None:
        raise _form_error(field, "required")
    try:
        return uuid.UUID(value.strip())
    except ValueError as error:
        raise _form_error(field, "not a UUID") from error


def _form_error(field: str, message: str) -> Problem:
    return Problem(
        "validation_error",
        "The upload form is invalid.",
        errors=[{"field": field, "message": message}],
    )


def download_name(name: str) -> str:
    """The file name a download offers: the last path component of `name` (issue 18: a name
    uploaded as `../../x` must not be saved outside the browser's download folder), never
    empty, `.` or `..`; leading dots are dropped (no hidden files)."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1].strip().lstrip(".").strip()
    return base or "download"


@routes.capability(
    Capability(
        name="vault.list_documents",
        method="GET",
        path="/api/v2/vault/documents",
        summary="List documents, newest first",
        tag="vault",
        scopes=VAULT_READ,
        cost=1,
        query=DocumentPageQuery,
        response=DocumentPage,
        problems=frozenset({"not_found"}),  # the project
    )
)
async def list_documents(call: Call[Services]) -> DocumentPage:
    query: DocumentPageQuery = call.query
    scope = f"vault.list_documents:{query.project_id or ''}"
    after = call.services.cursors.after(scope, query.cursor)
    rows, has_more = await documents.list_documents(
        call, project_id=query.project_id, limit=query.page_size, after=after
    )
    return page_of(DocumentPage, rows, has_more, cursors=call.services.cursors, scope=scope)


@routes.capability(
    Capability(
        name="vault.get_document",
        method="GET",
        path="/api/v2/vault/documents/<uuid:document_id>",
        summary="Get a document",
        tag="vault",
        scopes=VAULT_READ,
        cost=1,
        response=DocumentView,
    )
)
async def get_document(call: Call[Services]) -> DocumentView:
    return DocumentView.model_validate(await documents.get_document(call, call.path["document_id"]))


@routes.capability(
    Capability(
        name="vault.delete_document",
        method="DELETE",
        path="/api/v2/vault/documents/<uuid:document_id>",
        summary="Delete a document",
        description="The document, its passages and its ingestion job go at once: no search "
        "or answer finds it after the 204; its stored file is removed after. A "
        "`document.deleted` event goes to the endpoints subscribed to it.",
        tag="vault",
        scopes=VAULT_WRITE,
        cost=1,
        oauth=False,
        status=204,
        problems=frozenset({"not_found"}),
    )
)
async def delete_document(call: Call[Services]) -> Response:
    await documents.delete_document(call, call.path["document_id"])
    return Response(b"", status=204)


@routes.capability(
    Capability(
        name="vault.reprocess_document",
        method="POST",
        path="/api/v2/vault/documents/<uuid:document_id>/reprocess",
        summary="Ingest a document again from its stored file",
        description="Keeps the document's id: its text is read, cut into passages and "
        "indexed again with today's readers and embedding provider (after a failure, say). "
        "The document is `processing` under a new `ingestion_job_id` until that job ends, "
        "and not searched meanwhile; an ingestion of it still running is cancelled. Costs as "
        "an upload; an `Idempotency-Key` makes a retry answer the same 202.",
        tag="vault",
        scopes=VAULT_WRITE,
        cost=10,
        oauth=False,
        status=202,
        response=DocumentView,
        problems=frozenset({"not_found"}),
    )
)
async def reprocess_document(call: Call[Services]) -> DocumentView:
    document = await documents.reprocess_document(call, call.path["document_id"])
    return DocumentView.model_validate(document)


@routes.capability(
    Capability(
        name="vault.get_document_content",
        method="GET",
        path="/api/v2/vault/documents/<uuid:document_id>/content",
        summary="Download a document's original bytes",
        tag="vault",
        scopes=VAULT_READ,
        cost=1,
        raw_response=True,
        # Text types carry the charset they were uploaded in (`; charset=windows-1252`...).
        media_types=tuple(kind.content_type.split(";")[0] for kind in DocumentType),
    )
)
async def get_document_content(call: Call[Services]) -> Response:
    document = await documents.get_document(call, call.path["document_id"])
    return await blob_download(
        call, document.blob_key, document.name, document.content_type, document.size_bytes
    )


async def blob_download(
    call: Call[Services], key: str, name: str, content_type: str, size: int | None = None
) -> Response:
    """The blob under `key` streamed as an attachment named `name`; 404 if it is missing."""
    chunks = call.services.blobs.stream(key)
    try:
        first = await anext(chunks)
    except FileNotFoundError as error:
        raise Problem("not_found", "The stored file is missing.") from error

    async def body():
        yield first
        async for chunk in chunks:
            yield chunk

    response = Response(body(), content_type=content_type)
    response.timeout = None  # large files take as long as the client reads
    if size is not None:
        response.headers["Content-Length"] = str(size)
    response.headers["Content-Disposition"] = content_disposition(name)
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def content_disposition(name: str) -> str:
    """An attachment named `name`, without any directory part (its last `/` or `\\`
    component; `..` alone becomes `download`): an ASCII fallback and the exact name (RFC
    6266, 8187)."""
    name = download_name(name)
    fallback = "".join(ch if 32 <= ord(ch) < 127 and ch not in '"\\' else "_" for ch in name)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


@routes.capability(
    Capability(
        name="vault.get_ingestion_job",
        method="GET",
        path="/api/v2/vault/ingestion-jobs/<uuid:job_id>",
        summary="Get a document's ingestion job",
        tag="vault",
        scopes=VAULT_READ,
        cost=1,
        response=IngestionJobView,
    )
)
async def get_ingestion_job(call: Call[Services]) -> IngestionJobView:
    job = await documents.get_ingestion_job(call, call.path["job_id"])
    return IngestionJobView.model_validate(job)


@routes.capability(
    Capability(
        name="vault.search",
        method="POST",
        path="/api/v2/vault/search",
        summary="Search document passages",
        description="Ranked full-text search with stemming over the caller's documents.",
        tag="vault",
        scopes=VAULT_READ,
        cost=5,
        body=SearchRequest,
        response=SearchResults,
        problems=frozenset({"not_found"}),  # a project or document id not the caller's
    )
)
async def search(call: Call[Services]) -> SearchResults:
    request: SearchRequest = call.body
    filters = Filters(project_ids=request.project_ids, document_ids=request.document_ids)
    await require_own_filters(call.session, call.principal, filters)
    hits = await search_chunks(
        call.session,
        call.principal,
        request.query,
        k=request.k,
        filters=filters,
        semantic=call.services.semantic(),
        terms=call.services.terms,
    )
    return SearchResults(
        data=[
            SearchHit(
                document_id=hit.chunk.document_id,
                document_name=hit.document_name,
                project_id=hit.chunk.project_id,
                chunk_id=hit.chunk.id,
                page_number=hit.chunk.page_number,
                content=hit.chunk.content,
                snippet=hit.snippet,
                score=hit.score,
            )
            for hit in hits
        ]
    )
