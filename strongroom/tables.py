"""The metadata of every table, for Alembic and the tests that compare the migrations with the
models: importing this registers them all. It imports every package's models, so only the
migrations' env.py and tests import it (docs/development.md, "Who may import whom")."""

from sqlmodel import SQLModel

from strongroom.auth.models import ApiKey
from strongroom.billing.models import CreditEntry
from strongroom.chat.models import Conversation, Message
from strongroom.corpus.models import Document, DocumentChunk, VaultGeneration
from strongroom.idempotency.models import IdempotencyRecord
from strongroom.jobs.models import Job
from strongroom.oauth.models import (
    OAuthChain,
    OAuthClient,
    OAuthCode,
    OAuthConsent,
    OAuthRefreshToken,
    OAuthRevokedToken,
)
from strongroom.outbox.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from strongroom.routines.models import Routine, RoutineRun
from strongroom.templates.models import TemplateFill
from strongroom.tenants.models import Tenant, User
from strongroom.vault.models import Project
from strongroom.workflows.models import WorkflowRun

metadata = SQLModel.metadata

# Schema the models do not declare, made by hand in migrations or by a library: the full-text
# index of chunks (migration 0004), the pgvector column and its HNSW indexes where the
# extension exists (migration 0013, strongroom.retrieval.vector_pgvector) and procrastinate's job
# queue (`strongroom migrate`).
_UNMODELLED_COLUMNS = {
    ("document_chunks", "search_vector"),
    ("document_chunks", "embedding_vector"),
}
_UNMODELLED_INDEXES = {"ix_document_chunks_search"}
_UNMODELLED_INDEX_PREFIXES = ("document_chunks_hnsw_",)
_UNMODELLED_TABLE_PREFIXES = ("document_chunks_fts", "procrastinate_")


def include_object(item, name, kind, reflected, compare_to) -> bool:
    """Alembic's filter: leave the schema of `_UNMODELLED_*` out of comparisons."""
    if kind == "table":
        return not (name or "").startswith(_UNMODELLED_TABLE_PREFIXES)
    if kind == "column":
        return (item.table.name, name) not in _UNMODELLED_COLUMNS
    if kind == "index":
        return name not in _UNMODELLED_INDEXES and not (name or "").startswith(
            _UNMODELLED_INDEX_PREFIXES
        )
    return True


__all__ = [
    "ApiKey",
    "Conversation",
    "CreditEntry",
    "Document",
    "DocumentChunk",
    "IdempotencyRecord",
    "Job",
    "Message",
    "OAuthChain",
    "OAuthClient",
    "OAuthCode",
    "OAuthConsent",
    "OAuthRefreshToken",
    "OAuthRevokedToken",
    "Project",
    "Routine",
    "RoutineRun",
    "TemplateFill",
    "Tenant",
    "User",
    "VaultGeneration",
    "WebhookDelivery",
    "WebhookEndpoint",
    "WebhookEvent",
    "WorkflowRun",
    "include_object",
    "metadata",
]
