"""Charging: the per-resource factor of the service-unit formula of NCSA exports (seed 004, "su")."""
from django.db import models
from django.db.models import Q


class ChargeFactor(models.Model):
    """Service units charged per unit of the formula's basis (e.g. per canonical core-hour) on a resource,
    from `valid_from` until its next factor. A resource without one is charged at the formula's default."""

    resource = models.ForeignKey("accounting.Resource", on_delete=models.CASCADE, related_name="charge_factors")
    factor = models.FloatField()
    valid_from = models.DateField()

    class Meta:
        ordering = ["resource", "valid_from"]
        constraints = [
            models.UniqueConstraint(fields=["resource", "valid_from"], name="chargefactor_unique_validity"),
            models.CheckConstraint(condition=Q(factor__gte=0), name="chargefactor_nonnegative"),
        ]

    def __str__(self) -> str:
        return f"{self.resource} x{self.factor:g} from {self.valid_from}"
