"""`make demo`'s path: SQLite, tasks in-process, the Python engine; run as a real subprocess."""
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_demo_runs_on_sqlite_with_tasks_in_process(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(DJANGO_DEBUG="1", DATABASE_URL="", REDIS_URL="", GRIDLEDGER_VAR_DIR=str(tmp_path))
    for args in (["migrate", "--no-input", "-v0"], ["demo", "--scale", "0.01"]):
        result = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
    assert "Open http://127.0.0.1:8000/" in result.stdout
    with sqlite3.connect(tmp_path / "gridledger.sqlite3") as db:
        (usage,) = db.execute("SELECT count(*) FROM accounting_dailyusage").fetchone()
        categories = dict(db.execute("SELECT category, sum(core_hours) FROM accounting_categorydaily GROUP BY category"))
        (snapshots,) = db.execute("SELECT count(*) FROM accounting_capacitysnapshot").fetchone()
        (pilot_hours,) = db.execute(
            "SELECT sum(wall_seconds * cores) / 3600.0 FROM accounting_usagerecord WHERE kind = 'pilot'").fetchone()  # fmt: skip
    assert usage > 0
    assert categories.get("goodput", 0) > 0 and categories.get("overhead", 0) > 0
    # the rebuild covers every day with records: categories 1-6 split exactly every pilot's cores x life;
    # 7 and 8 come from the demo's capacity snapshots
    from_pilots = sum(h for name, h in categories.items() if name not in ("provisioning_bottleneck", "insufficient_demand"))
    assert abs(from_pilots - pilot_hours) < 1e-3
    assert snapshots > 0 and categories["provisioning_bottleneck"] > 0 and categories["insufficient_demand"] > 0
