"""The portal under gunicorn (2 workers, 127.0.0.1 only) for the HTTP benchmarks."""
from __future__ import annotations

import http.client
import os
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start_gunicorn(database_url: str, port: int, secret: str, timeout: int = 300) -> subprocess.Popen:
    """Start gunicorn on 127.0.0.1:`port` against `database_url` and wait until the login page answers."""
    env = os.environ | {
        "DATABASE_URL": database_url, "DJANGO_SECRET_KEY": secret, "DJANGO_DEBUG": "0",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1", "DJANGO_SETTINGS_MODULE": "portal.settings",
    }  # fmt: skip
    env.pop("REDIS_URL", None)
    server = subprocess.Popen(
        [str(ROOT / ".venv/bin/gunicorn"), "portal.wsgi", "--workers", "2", "--bind", f"127.0.0.1:{port}",
         "--timeout", str(timeout), "--log-level", "warning"],
        cwd=ROOT, env=env,
    )  # fmt: skip
    for _ in range(120):
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/accounts/login/")
            if conn.getresponse().status == 200:
                return server
        except OSError:
            pass
        time.sleep(0.5)
    server.terminate()
    raise SystemExit("gunicorn did not answer on 127.0.0.1")
