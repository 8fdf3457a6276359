"""`GET /api/v1/categories/` and the categories page: columns, CSV = JSON, validation, who may see them."""
import csv
import io
from datetime import date

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse

from accounting.models import VO, CategoryDaily, Site

pytestmark = pytest.mark.django_db


@pytest.fixture
def council(db):
    user = User.objects.create_user("council-member", password="pw")
    user.groups.add(Group.objects.get_or_create(name="council")[0])
    return user


@pytest.fixture
def rows(db):
    site, other = Site.objects.create(name="MWT2"), Site.objects.create(name="AGLT2")
    vo = VO.objects.create(name="osg")
    for day, s, category, hours, estimated in [
        (date(2024, 3, 10), site, "goodput", 5.0, False), (date(2024, 3, 10), site, "overhead", 27.0, False),
        (date(2024, 3, 11), site, "goodput", 2.5, True), (date(2024, 4, 2), other, "validation_fails", 4.0, False),
    ]:  # fmt: skip
        CategoryDaily.objects.create(day=day, site=s, vo=vo, category=category, core_hours=hours, estimated=estimated)


def test_columns_grouping_and_estimated_flag(client, council, rows):
    client.force_login(council)
    body = client.get(reverse("api-categories"), {"start": "2024-03-01", "end": "2024-05-01", "group_by": "site"}).json()
    assert body["columns"] == ["period", "site", "category", "core_hours", "gpu_hours", "estimated"]
    assert [(r["period"], r["site"], r["category"], r["core_hours"], r["estimated"]) for r in body["results"]] == [
        ("2024-03-01", "MWT2", "goodput", 7.5, True),
        ("2024-03-01", "MWT2", "overhead", 27.0, False),
        ("2024-04-01", "AGLT2", "validation_fails", 4.0, False),
    ]


def test_csv_equals_json(client, council, rows):
    client.force_login(council)
    params = {"start": "2024-03-01", "end": "2024-05-01", "period": "day", "site": "MWT2"}
    data = client.get(reverse("api-categories"), params).json()["results"]
    response = client.get(reverse("api-categories"), params | {"format": "csv"})
    parsed = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [(r["period"], r["category"], float(r["core_hours"])) for r in parsed] == [(r["period"], r["category"], r["core_hours"]) for r in data]


@pytest.mark.parametrize(("params", "parameter"), [({"group_by": "user"}, "group_by"), ({"category": "fun"}, "category"),
                                                   ({"start": "x"}, "start"), ({"colour": "1"}, "colour")])  # fmt: skip
def test_bad_parameters_are_named(client, council, params, parameter):
    client.force_login(council)
    response = client.get(reverse("api-categories"), params)
    assert (response.status_code, response.json()["parameter"]) == (400, parameter)


def test_who_may_see_categories(client, council, rows):
    assert client.get(reverse("api-categories")).status_code in (401, 403)
    assert client.get(reverse("categories")).status_code == 302
    client.force_login(User.objects.create_user("nobody", password="pw"))
    assert client.get(reverse("api-categories")).status_code == 403
    client.force_login(council)
    assert client.get(reverse("api-categories")).status_code == 200
    page = client.get(reverse("categories"), {"start": "2024-03-01", "end": "2024-05-01"})
    assert page.status_code == 200
    html = page.content.decode()
    assert "Pilot goodput" in html and "core-hours" in html and "estimated" in html


def chart_data(html: str, element_id: str):
    import json
    import re

    match = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', html, re.S)
    return json.loads(match.group(1))


def test_the_page_embeds_chart_data_as_an_object_the_script_can_draw(client, council, rows):
    client.force_login(council)
    html = client.get(reverse("categories"), {"start": "2024-03-01", "end": "2024-05-01", "period": "month"}).content.decode()
    data = chart_data(html, "category-data")
    assert data["periods"] == ["2024-03-01", "2024-04-01"]
    goodput = next(s for s in data["series"] if s["name"] == "Pilot goodput")
    assert goodput["values"] == [7.5, 0.0]
    assert 'value="2024-03-01"' in html  # date inputs carry ISO dates
