"""`grant_role`, `create_api_token` and `export` (CONTRACT.md "Commands")."""
import csv
import io
import json

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from portal.roles import scope_of
from tests.portal.conftest import ALICE

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_grant_role_creates_users_and_gives_each_role(grid):
    assert "created user ann: council" in run("grant_role", "ann", "council")
    ann = User.objects.get(username="ann")
    assert not ann.has_usable_password()
    assert scope_of(ann).aggregates and not scope_of(User.objects.get(pk=ann.pk)).people

    assert "created user vic: vo_manager of cms, ligo" in run("grant_role", "vic", "vo_manager", "--vo", "cms", "--vo", "ligo")
    vic = User.objects.get(username="vic")
    assert scope_of(vic).person_vo_ids == {grid.vos["cms"].pk, grid.vos["ligo"].pk}

    assert "updated user ann: admin" in run("grant_role", "ann", "admin")
    ann.refresh_from_db()
    assert ann.is_staff and ann.is_superuser


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("bob", "vo_manager"), "at least one --vo"),
        (("bob", "vo_manager", "--vo", "nosuchvo"), "unknown VO 'nosuchvo'"),
        (("bob", "council", "--vo", "cms"), "--vo only applies"),
    ],
)
def test_grant_role_refuses_what_it_cannot_do(grid, args, message):
    with pytest.raises(CommandError, match=message):
        run("grant_role", *args)
    assert not User.objects.filter(username="bob").exists()


def test_create_api_token_prints_a_working_token(client, grid):
    run("grant_role", "robot", "council")
    key = run("create_api_token", "robot").strip()
    assert run("create_api_token", "robot").strip() == key  # stable until rotated
    response = client.get(reverse("api-usage"), {"period": "total"}, HTTP_AUTHORIZATION=f"Token {key}")
    assert response.status_code == 200
    assert run("create_api_token", "robot", "--rotate").strip() != key
    with pytest.raises(CommandError, match="no user 'ghost'"):
        run("create_api_token", "ghost")


PARAMS = {"start": "2024-01-01", "end": "2024-04-01", "period": "month", "group_by": "site,user", "vo": "cms"}


def test_export_usage_writes_the_api_rows_as_csv_and_json(client, grid, admin):
    client.force_login(admin)
    api_csv = b"".join(client.get(reverse("api-usage"), PARAMS | {"format": "csv"}).streaming_content).decode()
    args = [arg for name, value in PARAMS.items() for arg in (f"--{name}", value)]
    exported = run("export", "usage", *args)
    assert exported == api_csv
    rows = list(csv.DictReader(io.StringIO(exported)))
    assert [(r["period"], r["site"], r["user"], r["wall_hours"]) for r in rows][0] == ("2024-01-01", "SiteA", ALICE, "10.0")

    api_json = client.get(reverse("api-usage"), PARAMS).json()
    as_json = json.loads(run("export", "usage", *args, "--format", "json"))
    assert as_json == api_json
    # --name=value and repeated names work as repeated query parameters do.
    both = json.loads(run("export", "usage", "--period=total", "--vo=cms", "--vo=ligo", "--start=2024-01-01", "--end=2024-04-01", "--format=json"))
    assert both["results"][0]["wall_hours"] == 80.0


def test_export_refuses_bad_parameters_naming_them(grid):
    with pytest.raises(CommandError, match="^group_by: unknown dimension"):
        run("export", "usage", "--group_by", "planet")
    with pytest.raises(CommandError, match="^colour: unknown parameter"):
        run("export", "usage", "--colour", "red")
    with pytest.raises(CommandError, match="needs a value"):
        run("export", "usage", "--vo")


def test_export_categories_equals_the_api(client, grid, admin):
    client.force_login(admin)
    params = {"start": "2024-01-01", "end": "2024-04-01", "period": "month"}
    api_json = client.get(reverse("api-categories"), params).json()
    exported = json.loads(run("export", "categories", *[a for k, v in params.items() for a in (f"--{k}", v)], "--format", "json"))
    assert exported == api_json


def test_export_kinds_come_from_the_registry(monkeypatch, grid):
    from portal import exporters

    def later(params):
        raise exporters.ExportUnavailable("later: not available yet")

    monkeypatch.setitem(exporters.EXPORTERS, "later", later)
    with pytest.raises(CommandError, match="later: not available yet"):
        run("export", "later")
    assert {"usage", "categories", "quotas"} <= set(exporters.EXPORTERS)
    with pytest.raises(CommandError, match="invalid choice"):
        run("export", "planets")
