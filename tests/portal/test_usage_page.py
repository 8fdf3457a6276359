"""The usage-by-site page: its embedded chart data is an object the chart script can draw."""
from datetime import date

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from accounting.models import DailyUsage, Site
from tests.portal.test_categories_api import chart_data

pytestmark = pytest.mark.django_db


def test_chart_data_has_one_series_per_site_and_iso_date_inputs(client):
    site, other = Site.objects.create(name="MWT2"), Site.objects.create(name="AGLT2")
    for day, s, hours in [(date(2024, 3, 10), site, 6.0), (date(2024, 3, 11), other, 2.0)]:
        DailyUsage.objects.create(day=day, site=s, kind="batch", designation="batch", jobs=1, wall_hours=hours)
    client.force_login(User.objects.create_user("admin-user", password="pw", is_staff=True))
    html = client.get(reverse("usage-by-site"), {"start": "2024-03-01", "end": "2024-04-01"}).content.decode()
    data = chart_data(html, "usage-data")
    assert data["days"] == ["2024-03-10", "2024-03-11"]
    assert {s["name"]: s["values"] for s in data["series"]} == {"AGLT2": [0.0, 2.0], "MWT2": [6.0, 0.0]}
    assert 'value="2024-03-01"' in html and 'value="2024-04-01"' in html
