"""A benchmark's own PostgreSQL database on 127.0.0.1, migrated, with Django set up against it."""
from __future__ import annotations

import os

ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def database_url(db: str) -> str:
    return f"postgres://postgres@127.0.0.1:5432/{db}"


def setup_django(db: str, secret: str, *, fresh: bool = False, env: dict[str, str] | None = None) -> None:
    """Create `db` (dropped first when `fresh`, else reused if it exists), point Django at it with tasks
    in-process and `env` added to the environment, and migrate it."""
    import psycopg

    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        if fresh:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [db]).fetchone():
            conn.execute(f'CREATE DATABASE "{db}"')
    os.environ.update({"DATABASE_URL": database_url(db), "DJANGO_SECRET_KEY": secret,
                       "DJANGO_SETTINGS_MODULE": "portal.settings", **(env or {})})  # fmt: skip
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
