"""The metadata of every table, for Alembic: importing this registers them all."""

from sqlmodel import SQLModel

from strongroom.auth.models import ApiKey
from strongroom.billing.models import CreditEntry
from strongroom.oauth.models import (
    OAuthChain,
    OAuthClient,
    OAuthCode,
    OAuthConsent,
    OAuthRefreshToken,
    OAuthRevokedToken,
)
from strongroom.tenants.models import Tenant, User
from strongroom.vault.models import Project

metadata = SQLModel.metadata

__all__ = [
    "ApiKey",
    "CreditEntry",
    "OAuthChain",
    "OAuthClient",
    "OAuthCode",
    "OAuthConsent",
    "OAuthRefreshToken",
    "OAuthRevokedToken",
    "Project",
    "Tenant",
    "User",
    "metadata",
]
