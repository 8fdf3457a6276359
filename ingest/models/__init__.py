"""Ingest models: bundles of log files and what reading them rejected."""
from ingest.models.bundles import Bundle, BundleError

__all__ = ["Bundle", "BundleError"]
