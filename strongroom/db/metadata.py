"""The metadata of every table, for Alembic: importing this registers them all."""

from sqlmodel import SQLModel

from strongroom.auth.models import ApiKey
from strongroom.billing.models import CreditEntry
from strongroom.tenants.models import Tenant, User
from strongroom.vault.models import Project

metadata = SQLModel.metadata

__all__ = ["ApiKey", "CreditEntry", "Project", "Tenant", "User", "metadata"]
