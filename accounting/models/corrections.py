"""Corrections (as GRACC's): raw VO, project, site or resource names mapped to known ones, and the history of
every re-attribution of a record, so that none is lost and each can be undone."""
from django.conf import settings
from django.db import models


class Correction(models.Model):
    """Map a raw value of a record's VO, project, site or resource (the exact name, or a regular expression
    matching the whole name) to a known one.

    Applying it re-attributes the matching records to `target` (each change kept as a `RecordChange`) and
    rebuilds exactly the days those records touch. While `active`, records arriving later under a matching
    name are re-attributed too (before the rebuild of their days, and by the periodic beat task). For a site,
    remember that a resource's site from the `sites` mapping wins over the record's own site.
    """

    class Field(models.TextChoices):
        VO = "vo", "VO"
        PROJECT = "project", "project"
        SITE = "site", "site"
        RESOURCE = "resource", "resource"

    class Match(models.TextChoices):
        EXACT = "exact", "exact name"
        REGEX = "regex", "regular expression (whole name)"

    field = models.CharField(max_length=10, choices=Field.choices)
    match = models.CharField(max_length=5, choices=Match.choices, default=Match.EXACT)
    pattern = models.CharField(max_length=500, help_text="raw name, or a regular expression that must match all of it")
    target = models.CharField(max_length=500, help_text="name of the known VO, project, site or resource")
    active = models.BooleanField(default=True, help_text="also re-attribute records that arrive later")
    note = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    applied_at = models.DateTimeField(null=True, blank=True)
    rows_changed = models.IntegerField(default=0, help_text="records re-attributed so far")

    class Meta:
        ordering = ["field", "pattern"]
        constraints = [models.UniqueConstraint(fields=["field", "match", "pattern"], name="correction_unique_rule")]

    def __str__(self) -> str:
        how = "~" if self.match == self.Match.REGEX else "="
        return f"{self.field} {how} {self.pattern!r} -> {self.target!r}"


class RecordChange(models.Model):
    """One change of one record made by an admin or a correction: the field, its value before and after
    (ids of the dimension rows, the pilot reference, or the void flag, as text). Kept for ever: it is the
    history of re-attributed records and what reverting a correction restores."""

    record = models.ForeignKey("accounting.UsageRecord", on_delete=models.CASCADE, related_name="changes")
    field = models.CharField(max_length=20)
    old_value = models.CharField(max_length=500, blank=True)
    new_value = models.CharField(max_length=500, blank=True)
    correction = models.ForeignKey(Correction, null=True, blank=True, on_delete=models.SET_NULL, related_name="changes")
    audit = models.ForeignKey("accounting.AuditEntry", null=True, blank=True, on_delete=models.SET_NULL, related_name="changes")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["correction", "field"], name="recordchange_correction")]

    def __str__(self) -> str:
        return f"record {self.record_id} {self.field}: {self.old_value or '-'} -> {self.new_value or '-'}"


class TopologyMerge(models.Model):
    """A renamed site or resource merged into its new name (OSG's most common topology complaint).

    The old row is kept with its name, emptied of records, resources and snapshots; this row says where they
    went, when and by whom, and the correction it created routes records still arriving under the old name
    to the new one.
    """

    class Kind(models.TextChoices):
        SITE = "site", "site"
        RESOURCE = "resource", "resource"

    kind = models.CharField(max_length=8, choices=Kind.choices)
    old_name = models.CharField(max_length=255)
    old_id = models.BigIntegerField()
    new_name = models.CharField(max_length=255)
    new_id = models.BigIntegerField()
    records_moved = models.IntegerField(default=0)
    details = models.JSONField(default=dict, blank=True, help_text="other rows moved, by table")
    correction = models.ForeignKey(Correction, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    audit = models.ForeignKey("accounting.AuditEntry", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    merged_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    merged_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-merged_at"]

    def __str__(self) -> str:
        return f"{self.kind} {self.old_name} merged into {self.new_name}"
