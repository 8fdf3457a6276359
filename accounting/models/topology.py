"""Where jobs ran and on whose behalf: the mapping tables that summaries join against (DOMAIN.md)."""
from django.db import models

from accounting.choices import Benchmark


class NamedQuerySet(models.QuerySet):
    def names(self) -> dict[str, int]:
        return dict(self.values_list("name", "id"))


class ScienceDomain(models.Model):
    """A field of science. Reached from a project, falling back to the VO's default (DOMAIN.md)."""

    name = models.CharField(max_length=200, unique=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Site(models.Model):
    """A grid site (OSG/WLCG topology): owns resources; the unit councils report on."""

    name = models.CharField(max_length=200, unique=True)
    facility = models.CharField(max_length=200, blank=True)
    objects = NamedQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Resource(models.Model):
    """A CE, a GlideinWMS factory entry or a `GLIDEIN_ResourceName`; belongs to a site.

    The `sites` mapping file sets `site`; records then count under that site whatever site name they carried.
    """

    name = models.CharField(max_length=255, unique=True)
    site = models.ForeignKey(Site, null=True, blank=True, on_delete=models.SET_NULL, related_name="resources")
    objects = NamedQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class VO(models.Model):
    """A virtual organisation; `field_of_science` is its default science domain."""

    name = models.CharField(max_length=200, unique=True)
    field_of_science = models.ForeignKey(ScienceDomain, null=True, blank=True, on_delete=models.SET_NULL)
    objects = NamedQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        verbose_name = "VO"

    def __str__(self) -> str:
        return self.name


class Person(models.Model):
    """A user identified by an X.509 DN or a token subject (personal data: shown to admins and own VO managers)."""

    name = models.CharField(max_length=500, unique=True, help_text="DN or token subject")
    objects = NamedQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "people"

    def __str__(self) -> str:
        return self.name


class Project(models.Model):
    """A project (allocation); its field of science decides the science domain of its jobs."""

    name = models.CharField(max_length=200, unique=True)
    field_of_science = models.ForeignKey(ScienceDomain, null=True, blank=True, on_delete=models.SET_NULL)
    pi = models.CharField("PI", max_length=200, blank=True)
    institution = models.CharField(max_length=200, blank=True)
    objects = NamedQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Frontend(models.Model):
    """A GlideinWMS frontend client name and the VO its pilots serve (pilot residual goes to that VO)."""

    client = models.CharField(max_length=255, unique=True)
    vo = models.ForeignKey(VO, on_delete=models.CASCADE, related_name="frontends")

    class Meta:
        ordering = ["client"]

    def __str__(self) -> str:
        return f"{self.client} -> {self.vo}"


class BenchmarkFactor(models.Model):
    """A resource's per-core benchmark value from `valid_from` until the next factor (APEL normalisation)."""

    resource = models.ForeignKey(Resource, on_delete=models.CASCADE, related_name="benchmarks")
    benchmark = models.CharField(max_length=8, choices=Benchmark.choices)
    value = models.FloatField(help_text="benchmark value per core")
    valid_from = models.DateField()

    class Meta:
        ordering = ["resource", "valid_from"]
        constraints = [
            models.UniqueConstraint(fields=["resource", "benchmark", "valid_from"], name="benchmark_unique_validity"),
            models.CheckConstraint(condition=models.Q(value__gt=0), name="benchmark_value_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.resource} {self.benchmark}={self.value} from {self.valid_from}"
