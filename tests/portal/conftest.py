"""Users of every role and a small grid whose numbers are worked by hand in the tests."""
from datetime import UTC, date, datetime

import pytest
from django.contrib.auth.models import Group, Permission, User

from accounting.models import VO, DailyUsage, Person, Project, Resource, ScienceDomain, Site, UsageRecord
from ingest.models import Bundle
from portal.models import VOManager

# The DNs: personal data, each visible only to admins and to managers of the person's VO.
ALICE = "/DC=org/DC=cilogon/C=US/O=Example/CN=Alice Cms A1"
BOB = "/DC=org/DC=cilogon/C=US/O=Example/CN=Bob Cms B2"
CAROL = "/DC=org/DC=cilogon/C=US/O=Example/CN=Carol Ligo C3"
DNS = (ALICE, BOB, CAROL)


@pytest.fixture
def member(db):
    """A logged-in user without special rights."""
    return User.objects.create_user("member", password="pw")


@pytest.fixture
def uploader(db):
    user = User.objects.create_user("uploader", password="pw")
    user.user_permissions.add(Permission.objects.get(codename="add_bundle"))
    return user


@pytest.fixture
def council(db):
    user = User.objects.create_user("council", password="pw")
    user.groups.add(Group.objects.get_or_create(name="council")[0])
    return user


@pytest.fixture
def admin(db):
    return User.objects.create_user("boss", password="pw", is_staff=True, is_superuser=True)


@pytest.fixture
def manager(db, grid):
    """A VO manager of cms (not of ligo)."""
    user = User.objects.create_user("cms-manager", password="pw")
    user.groups.add(Group.objects.get_or_create(name="vo_manager")[0])
    VOManager.objects.create(user=user, vo=grid.vos["cms"])
    return user


class Grid:
    """Two sites, two VOs (cms: Alice and Bob; ligo: Carol), one project each, three months of 2024."""

    def __init__(self):
        hep = ScienceDomain.objects.create(name="High Energy Physics")
        astro = ScienceDomain.objects.create(name="Astrophysics")
        self.domains = {"hep": hep, "astro": astro}
        self.sites = {n: Site.objects.create(name=n, facility=f) for n, f in (("SiteA", "FacA"), ("SiteB", "FacB"))}
        self.resources = {
            "ce-a": Resource.objects.create(name="ce-a.example.org", site=self.sites["SiteA"]),
            "ce-b": Resource.objects.create(name="ce-b.example.org", site=self.sites["SiteB"]),
        }
        self.vos = {"cms": VO.objects.create(name="cms", field_of_science=hep), "ligo": VO.objects.create(name="ligo", field_of_science=astro)}
        self.projects = {
            "cms": Project.objects.create(name="proj-cms", field_of_science=hep, pi="Pat", institution="Uni A"),
            "ligo": Project.objects.create(name="proj-ligo", field_of_science=astro, pi="Quinn", institution="Uni B"),
        }
        self.people = {dn: Person.objects.create(name=dn) for dn in DNS}
        vo_of = {ALICE: "cms", BOB: "cms", CAROL: "ligo"}
        # (day, site, resource, dn, jobs, core-hours, cpu hours)
        rows = [
            (date(2024, 1, 10), "SiteA", "ce-a", ALICE, 2, 10.0, 8.0),
            (date(2024, 1, 11), "SiteB", "ce-b", BOB, 1, 4.0, 1.0),
            (date(2024, 1, 12), "SiteA", "ce-a", CAROL, 3, 20.0, 15.0),
            (date(2024, 2, 5), "SiteA", "ce-a", ALICE, 1, 6.0, 6.0),
            (date(2024, 2, 6), "SiteB", "ce-b", CAROL, 2, 30.0, 12.0),
            (date(2024, 3, 1), "SiteB", "ce-b", BOB, 4, 8.0, 4.0),
            (date(2024, 3, 2), "SiteA", "ce-a", CAROL, 1, 2.0, 2.0),
        ]
        for day, site, resource, dn, jobs, wall, cpu in rows:
            vo = vo_of[dn]
            DailyUsage.objects.create(
                day=day, site=self.sites[site], resource=self.resources[resource], vo=self.vos[vo],
                person=self.people[dn], project=self.projects[vo], science_domain=self.vos[vo].field_of_science,
                kind="batch", designation="batch", jobs=jobs, wall_hours=wall, cpu_hours=cpu,
                normalized_hours=wall * 10, gpu_hours=0.0,
            )  # fmt: skip
        # Unmatched payload hours: never in reported totals.
        DailyUsage.objects.create(
            day=date(2024, 1, 10), site=self.sites["SiteA"], vo=self.vos["cms"], person=self.people[ALICE],
            kind="payload", designation="payload_unmatched", jobs=1, wall_hours=100.0, cpu_hours=100.0,
        )  # fmt: skip
        self.records = {}
        for n, dn in enumerate(DNS):
            vo = vo_of[dn]
            self.records[dn] = UsageRecord.objects.create(
                kind="batch", natural_key=f"ap1#{n}.0#1", record_hash="x", source_format="htcondor-history",
                site=self.sites["SiteA"], resource=self.resources["ce-a"], vo=self.vos[vo], person=self.people[dn],
                project=self.projects[vo], start=datetime(2024, 1, 10, 1, tzinfo=UTC), end=datetime(2024, 1, 10, 3, tzinfo=UTC),
                wall_seconds=7200, cores=2, local_user=f"user{n}",
            )  # fmt: skip
        self.bundle = Bundle.objects.create(original_name="b.tgz", stored_path="b", sha256="0" * 64)


@pytest.fixture
def grid(db):
    return Grid()
