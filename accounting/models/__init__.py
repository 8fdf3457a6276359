"""Accounting domain models: topology and identities, raw usage records, rebuilt summaries."""
from accounting.models.audit import AuditEntry
from accounting.models.charging import ChargeFactor
from accounting.models.corrections import Correction, RecordChange, TopologyMerge
from accounting.models.quotas import Notice, Quota, QuotaAlert
from accounting.models.records import PilotDetails, UsageRecord
from accounting.models.reported import ApelSummary, CapacitySnapshot, PilotJobRun
from accounting.models.summaries import CategoryDaily, DailyUsage, SummaryRun
from accounting.models.topology import (
    VO,
    BenchmarkFactor,
    Frontend,
    Person,
    Project,
    Resource,
    ScienceDomain,
    Site,
)

__all__ = [
    "VO",
    "ApelSummary",
    "AuditEntry",
    "CapacitySnapshot",
    "CategoryDaily",
    "ChargeFactor",
    "Correction",
    "PilotJobRun",
    "BenchmarkFactor",
    "DailyUsage",
    "Frontend",
    "Notice",
    "Person",
    "PilotDetails",
    "Project",
    "Quota",
    "QuotaAlert",
    "RecordChange",
    "Resource",
    "ScienceDomain",
    "Site",
    "SummaryRun",
    "TopologyMerge",
    "UsageRecord",
]
