"""The erasure of a deleted tenant's data (issue 42)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class TenantSettings(BaseModel):
    """The erasure of a deleted tenant's data (issue 42)."""

    tenant_erasure_days: int = Field(
        default=30,
        ge=0,
        description=(
            "Issue 42: days after a tenant is deleted (its Tenant resource deleted) before its "
            "data is erased: documents, stored files, passages, vectors, conversations, projects, "
            "template fills, workflow runs, jobs and webhooks, in both environments. Its row, "
            "users, API key records and credit ledger stay for audit. `0`: erased at the next "
            "check, within a minute. Read when the tenant is deleted (the operator's setting): "
            "changing it later does not move a date already set. `strongroom tenants erase NAME` "
            "erases a deleted tenant at once ([operator.md](operator.md#erasure)). Helm: "
            "`tenants.erasureDays`."
        ),
    )
    tenant_erasure_check_seconds: float = Field(
        default=30.0,
        gt=0,
        le=30,
        description=(
            "How often a process that runs jobs (`strongroom worker`, the embedded default), and "
            "once at its start, looks for deleted tenants whose erasure is due; at most 30."
        ),
    )
