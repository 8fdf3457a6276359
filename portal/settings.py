"""GridLedger settings, read from the environment (CONTRACT.md).

Defaults give the zero-config demo: a SQLite file and Celery tasks run in-process. Production sets
`DATABASE_URL` (PostgreSQL through psycopg 3), `REDIS_URL` (Celery broker) and `DJANGO_SECRET_KEY`;
with `DJANGO_DEBUG` off the portal refuses to start without a secret key.
"""
import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("GRIDLEDGER_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


DEBUG = env_bool("DJANGO_DEBUG", False)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off (see README, 'Configuration')."
        )
    SECRET_KEY = "gridledger-insecure-demo-key"  # noqa: S105 - only ever used with DEBUG on

ALLOWED_HOSTS = [h.strip() for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h.strip()]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "accounting",
    "ingest",
    "portal",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "portal.context_processors.scope",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'gridledger.sqlite3'}",
        conn_max_age=60,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 30
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"

def _plotly_js_dir() -> str:
    """Plotly's own bundled JS (pinned in requirements.txt), served locally as static/vendor/plotly.min.js."""
    import plotly

    return str(Path(plotly.__file__).resolve().parent / "package_data")


STATICFILES_DIRS = [BASE_DIR / "static", ("vendor", _plotly_js_dir())]
STATIC_ROOT = VAR_DIR / "static_root"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
WHITENOISE_USE_FINDERS = True  # serve straight from STATICFILES_DIRS (no collectstatic needed for the demo)
MEDIA_ROOT = VAR_DIR / "media"

# Uploaded and pulled bundles are kept here for ever (re-parse after a fix), named by sha256.
BUNDLE_STORE = Path(os.environ.get("GRIDLEDGER_BUNDLE_STORE", VAR_DIR / "bundles"))
BUNDLE_MAX_UPLOAD_BYTES = int(os.environ.get("GRIDLEDGER_MAX_UPLOAD_BYTES", 512 * 1024 * 1024))
# Directories that glob sources (ingest.Source) may read below, os.pathsep-separated; empty: none.
GRIDLEDGER_SOURCE_ROOTS = [p for p in os.environ.get("GRIDLEDGER_SOURCE_ROOTS", "").split(os.pathsep) if p.strip()]
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

# Celery: a Redis broker when REDIS_URL is set, else tasks run in-process (the demo).
REDIS_URL = os.environ.get("REDIS_URL", "")
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("GRIDLEDGER_CELERY_QUEUE", "gridledger")
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A task whose worker died (SIGKILL, OOM, power) is never acknowledged (acks_late); Redis hands it to another
# worker once it has been unacknowledged for kombu's `visibility_timeout` (default 1 hour, swept every ~100 s),
# which must exceed the longest task or a task still running is delivered twice. Tests set
# GRIDLEDGER_VISIBILITY_TIMEOUT (seconds) to see it within seconds; the unacknowledged messages are then kept
# under the queue's own keys, so that the short timeout never touches another worker's tasks.
if os.environ.get("GRIDLEDGER_VISIBILITY_TIMEOUT"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": int(os.environ["GRIDLEDGER_VISIBILITY_TIMEOUT"]),
        "unacked_restore_interval": 1,
        "unacked_restore_throttle": 1,
        "unacked_key": f"unacked:{CELERY_TASK_DEFAULT_QUEUE}",
        "unacked_index_key": f"unacked_index:{CELERY_TASK_DEFAULT_QUEUE}",
        "unacked_mutex_key": f"unacked_mutex:{CELERY_TASK_DEFAULT_QUEUE}",
    }
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
# Synced into django-celery-beat's tables by `celery beat`; admins can change times in Django admin.
CELERY_BEAT_SCHEDULE = {
    "nightly-rebuild-trailing-week": {
        "task": "accounting.tasks.rebuild_trailing",
        "schedule": 24 * 3600,
        "kwargs": {"days": int(os.environ.get("GRIDLEDGER_NIGHTLY_DAYS", 7))},
    },
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",  # first, so a bad token answers 401
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 100,
    "URL_FORMAT_OVERRIDE": None,  # `format=csv|json` is a query parameter of ours (CONTRACT.md)
    "DEFAULT_THROTTLE_RATES": {"uploads": os.environ.get("GRIDLEDGER_UPLOAD_RATE", "60/hour")},
}
SPECTACULAR_SETTINGS = {
    "TITLE": "GridLedger API",
    "DESCRIPTION": "Grid accounting: reported usage, pilot-time categories, bundles and quotas.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Accounting rules (DOMAIN.md).
GRIDLEDGER_EARLY_WINDOW_SECONDS = int(os.environ.get("GRIDLEDGER_EARLY_WINDOW_SECONDS", 600))
GRIDLEDGER_MAX_DAY_RANGE = int(os.environ.get("GRIDLEDGER_MAX_DAY_RANGE", 400))
# Reports (portal): open the aggregate dashboard to anonymous visitors (no person-level data on it).
GRIDLEDGER_PUBLIC_SUMMARY = env_bool("GRIDLEDGER_PUBLIC_SUMMARY", False)
# Refresh the month rollup of the summaries after rebuilds (portal/rollups.py; needs `celery beat`).
CELERY_BEAT_SCHEDULE["refresh-usage-rollups"] = {"task": "portal.tasks.refresh_rollups", "schedule": 60.0}
# Quotas and reconciliation: quota alerts by Django mail (console in the demo), checks and late corrections by beat.
EMAIL_BACKEND = os.environ.get(
    "DJANGO_EMAIL_BACKEND",
    "django.core.mail.backends.console.EmailBackend" if DEBUG else "django.core.mail.backends.smtp.EmailBackend",
)
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", 25))
DEFAULT_FROM_EMAIL = os.environ.get("GRIDLEDGER_FROM_EMAIL", "gridledger@localhost")
GRIDLEDGER_BASE_URL = os.environ.get("GRIDLEDGER_BASE_URL", "http://127.0.0.1:8000")
GRIDLEDGER_SILENT_SOURCE_DAYS = int(os.environ.get("GRIDLEDGER_SILENT_SOURCE_DAYS", 3))
GRIDLEDGER_APEL_INFRASTRUCTURE = os.environ.get("GRIDLEDGER_APEL_INFRASTRUCTURE", "GridLedger")
CELERY_BEAT_SCHEDULE["check-quotas"] = {"task": "accounting.tasks.check_quotas", "schedule": 600.0}
CELERY_BEAT_SCHEDULE["apply-active-corrections"] = {"task": "accounting.tasks.apply_corrections", "schedule": 600.0}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("GRIDLEDGER_LOG_LEVEL", "WARNING")},
}
