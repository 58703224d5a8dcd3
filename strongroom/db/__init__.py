"""Database access: engine, column types, migrations (every table's metadata, which they compare
the models with, is strongroom.tables).

Constraint names follow one convention so that Alembic migrations name them the same on
PostgreSQL and SQLite. It is set here, before any table module imports `strongroom.db.types`.
"""

from sqlmodel import SQLModel

SQLModel.metadata.naming_convention = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
