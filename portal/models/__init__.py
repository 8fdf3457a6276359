"""Portal models: who may see what (roles), and the month rollup that keeps reports fast."""
from portal.models.roles import VOManager
from portal.models.rollups import MonthlyUsage, RollupState

__all__ = ["MonthlyUsage", "RollupState", "VOManager"]
