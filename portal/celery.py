"""The Celery application. Broker from REDIS_URL; without it tasks run in-process (settings)."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("gridledger")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
