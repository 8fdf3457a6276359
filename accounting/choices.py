"""Constants of the accounting domain (DOMAIN.md), in one place."""
from django.db import models


class RecordKind(models.TextChoices):
    """What a usage record is (DOMAIN.md "Records")."""

    BATCH = "batch", "Batch job"
    PILOT = "pilot", "Pilot"
    PAYLOAD = "payload", "Payload"


class Designation(models.TextChoices):
    """How a summary row's hours count under the payload-only-refines rule (DOMAIN.md)."""

    BATCH = "batch", "Batch job"
    PAYLOAD = "payload", "Payload (refines its pilot)"
    PILOT_RESIDUAL = "pilot_residual", "Pilot residual"
    PAYLOAD_EXCESS = "payload_excess", "Payload excess"
    PAYLOAD_UNMATCHED = "payload_unmatched", "Payload unmatched"


# Designations that make up reported totals, charts and quota usage. Excess and unmatched never do.
REPORTED_DESIGNATIONS = (Designation.BATCH, Designation.PAYLOAD, Designation.PILOT_RESIDUAL)


class Benchmark(models.TextChoices):
    """Benchmarks a resource's per-core factor may be given in; normalised to HS06 as APEL does."""

    HS06 = "HS06", "HEPSPEC06"
    HS23 = "HS23", "HEPScore23"
    SI2K = "SI2K", "SPECint2000"


# Conversion to HS06 per core. APEL: SI2K / 250. HS23 is calibrated to equal HS06 on the reference machine.
BENCHMARK_TO_HS06 = {Benchmark.HS06: 1.0, Benchmark.HS23: 1.0, Benchmark.SI2K: 1.0 / 250.0}


class Category(models.TextChoices):
    """The eight categories of pilot time in canonical units (GlideinWMS report, seed 002; DOMAIN.md)."""

    VALIDATION_FAILS = "validation_fails", "Validation fails"
    DECISION_PROBLEM = "decision_problem", "Decision problem"
    MISCONFIGURATION_BADPUT = "misconfiguration_badput", "Pilot misconfiguration badput"
    GOODPUT = "goodput", "Pilot goodput"
    PREEMPTION_BADPUT = "preemption_badput", "Pilot preemption badput"
    OVERHEAD = "overhead", "Pilot overhead"
    PROVISIONING_BOTTLENECK = "provisioning_bottleneck", "Provisioning bottleneck"
    INSUFFICIENT_DEMAND = "insufficient_demand", "Insufficient demand"


# Canonical unit: 1 CPU core + 2 GB of memory (seed 002).
CANONICAL_MB_PER_CORE = 2048
