"""Ingest models: bundles of log files and what reading them rejected."""
from ingest.models.bundles import Bundle, BundleError
from ingest.models.sources import Source

__all__ = ["Bundle", "BundleError", "Source"]
