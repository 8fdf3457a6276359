"""Settings for the test suite: the real local PostgreSQL and Redis unless the environment says otherwise."""
import os
import tempfile

os.environ.setdefault("DJANGO_SECRET_KEY", "gridledger-test-secret")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gridledger")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")
os.environ.setdefault("GRIDLEDGER_VAR_DIR", tempfile.mkdtemp(prefix="gridledger-test-"))

from portal.settings import *  # noqa: E402,F403

# Tests that need a real broker start a worker themselves; everything else runs tasks in-process.
CELERY_TASK_ALWAYS_EAGER = True
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
