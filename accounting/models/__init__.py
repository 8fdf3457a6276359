"""Accounting domain models: topology and identities, raw usage records, rebuilt summaries."""
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
    "CapacitySnapshot",
    "CategoryDaily",
    "PilotJobRun",
    "BenchmarkFactor",
    "DailyUsage",
    "Frontend",
    "Person",
    "PilotDetails",
    "Project",
    "Resource",
    "ScienceDomain",
    "Site",
    "SummaryRun",
    "UsageRecord",
]
