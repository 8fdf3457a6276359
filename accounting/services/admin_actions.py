"""Admin actions as persisted jobs: each is an `AuditEntry` queued with its arguments (who, what), run by
a worker by id (`accounting.tasks.run_admin_action`), reporting progress and how many rows it changed.

The `queue_*` functions validate and record the request; `run` does it. Pages, Django admin actions and
commands all go through here, so every action is audited the same way.
"""
from __future__ import annotations

from datetime import date

from accounting.models import AuditEntry, Correction, Resource, Site, UsageRecord
from accounting.services import audit, corrections, merges, record_actions
from accounting.services.record_actions import ActionError

Action = AuditEntry.Action


def queue_void(user, record_ids: list[int], void: bool = True) -> AuditEntry:
    ids = sorted(set(UsageRecord.objects.filter(pk__in=record_ids).values_list("pk", flat=True)))
    if not ids:
        raise ActionError("no such records")
    what = f"{len(ids)} record{'s' if len(ids) != 1 else ''}"
    return audit.queue(user, Action.VOID if void else Action.UNVOID, what, {"records": ids})


def queue_relink(user, payload: UsageRecord, pilot: UsageRecord) -> AuditEntry:
    if payload.kind != "payload" or pilot.kind != "pilot":
        raise ActionError("re-link needs a payload and a pilot")
    target = f"payload {payload.natural_key} -> pilot {pilot.natural_key}"
    return audit.queue(user, Action.RELINK, target, {"payload": payload.pk, "pilot": pilot.pk, "old_ref": payload.pilot_ref})


def queue_rebuild(user, first: date, last: date) -> AuditEntry:
    if last < first:
        raise ActionError(f"the range ends ({last}) before it starts ({first})")
    return audit.queue(user, Action.REBUILD, f"days {first}..{last}", {"first": first.isoformat(), "last": last.isoformat()})


def queue_correction(user, correction: Correction, revert: bool = False) -> AuditEntry:
    corrections.validate(correction.field, correction.match, correction.pattern, correction.target)
    action = Action.CORRECTION_REVERT if revert else Action.CORRECTION_APPLY
    return audit.queue(user, action, f"correction {correction.pk}: {correction}", {"correction": correction.pk})


def queue_merge(user, kind: str, old, new) -> AuditEntry:
    if old.pk == new.pk:
        raise ActionError(f"a {kind} cannot be merged into itself")
    action = Action.MERGE_SITE if kind == "site" else Action.MERGE_RESOURCE
    return audit.queue(user, action, f"{kind} {old.name} into {new.name}", {"old": old.pk, "new": new.pk})


def run(entry_id: int) -> AuditEntry:
    """Do a queued action, recording its progress, rows and days on its AuditEntry (failed, with the error,
    when it raises)."""
    entry = AuditEntry.objects.get(pk=entry_id)
    audit.start(entry_id)

    def progress(done: int, total: int) -> None:
        audit.progress(entry_id, done, total)

    try:
        rows, days, details = HANDLERS[entry.action](entry, progress)
    except Exception as exc:
        audit.fail(entry_id, f"{type(exc).__name__}: {exc}")
        raise
    audit.finish(entry_id, rows=rows, days=days, details=details)
    return AuditEntry.objects.get(pk=entry_id)


def _void(entry, progress):
    done = record_actions.set_void(entry.details["records"], entry.action == Action.VOID, entry.pk, progress)
    return done.rows, len(done.days), {"runs": done.runs}


def _relink(entry, progress):
    done = record_actions.relink(entry.details["payload"], entry.details["pilot"], entry.pk)
    return done.rows, len(done.days), {"runs": done.runs}


def _rebuild(entry, progress):
    first, last = date.fromisoformat(entry.details["first"]), date.fromisoformat(entry.details["last"])
    done = record_actions.rebuild_range(first, last, progress)
    return 0, len(done.days), {"runs": done.runs, "summary_rows": done.rows}


def _correction(entry, progress):
    operation = corrections.revert if entry.action == Action.CORRECTION_REVERT else corrections.apply
    done = operation(entry.details["correction"], entry.pk, progress)
    return done.rows, len(done.days), {"runs": done.runs}


def _merge(entry, progress):
    if entry.action == Action.MERGE_SITE:
        Site.objects.get(pk=entry.details["new"])
        done = merges.merge_site(entry.details["old"], entry.details["new"], entry.user, entry.pk, progress)
    else:
        Resource.objects.get(pk=entry.details["new"])
        done = merges.merge_resource(entry.details["old"], entry.details["new"], entry.user, entry.pk, progress)
    return done.rows, len(done.days), {"runs": done.runs, "merge": done.merge.pk}


HANDLERS = {
    Action.VOID: _void,
    Action.UNVOID: _void,
    Action.RELINK: _relink,
    Action.REBUILD: _rebuild,
    Action.CORRECTION_APPLY: _correction,
    Action.CORRECTION_REVERT: _correction,
    Action.MERGE_SITE: _merge,
    Action.MERGE_RESOURCE: _merge,
}
