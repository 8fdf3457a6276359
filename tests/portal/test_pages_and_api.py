"""Pages and API: authentication, the usage endpoint's contract, uploads and bundle status."""
import csv
import io

import pytest
from django.urls import reverse

from accounting.models import DailyUsage
from ingest.models import Bundle

pytestmark = pytest.mark.django_db

AD = '''*** ClusterId = {n}
GlobalJobId = "ap1.example.org#{n}.0#1"
x509UserProxyVOName = "{vo}"
RemoteWallClockTime = {wall}
RequestCpus = 2
RemoteUserCpu = {cpu}
CompletionDate = {end}
'''


def history(*jobs) -> bytes:
    return "".join(AD.format(n=n, vo=vo, wall=wall, cpu=wall, end=end) for n, vo, wall, end in jobs).encode()


PAGES = ["usage-by-site", "bundle-list"]
API = ["api-usage", "api-bundles", "api-schema"]


@pytest.mark.parametrize("name", PAGES)
def test_pages_redirect_anonymous_users_to_login(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))


@pytest.mark.parametrize("name", API)
def test_api_refuses_anonymous_users(client, name):
    assert client.get(reverse(name)).status_code in (401, 403)


@pytest.mark.parametrize("name", PAGES + API + ["api-docs"])
def test_pages_and_api_answer_users_with_a_role(client, council, name):
    client.force_login(council)
    assert client.get(reverse(name)).status_code == 200


@pytest.mark.parametrize(("name", "status"), [("usage-by-site", 403), ("api-usage", 403), ("bundle-list", 200), ("api-bundles", 200)])
def test_users_without_a_role_see_their_bundles_but_no_usage(client, member, name, status):
    """A signed-in user with no role (portal/roles.py) may upload with the permission, not read reports."""
    client.force_login(member)
    assert client.get(reverse(name)).status_code == status


def test_plotly_is_served_locally(client, council):
    client.force_login(council)
    page = client.get(reverse("usage-by-site")).content.decode()
    assert "/static/vendor/plotly.min.js" in page and "cdn" not in page.lower()


def test_token_authentication(client, council):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=council)
    assert client.get(reverse("api-usage"), HTTP_AUTHORIZATION=f"Token {token.key}").status_code == 200
    assert client.get(reverse("api-usage"), HTTP_AUTHORIZATION="Token wrong").status_code == 401


@pytest.fixture
def usage(bundle_store, tmp_path, django_capture_on_commit_callbacks):
    from accounting.services.summaries import rebuild
    from ingest.services.bundles import create_bundle_from_path, ingest_bundle

    path = tmp_path / "h"
    # 2024-03-10 and 2024-04-02, two VOs; 2 cores each
    path.write_bytes(history((1, "cms", 3600, 1710079200), (2, "atlas", 7200, 1710079200), (3, "cms", 1800, 1712052000)))
    ingest_bundle(create_bundle_from_path(path, site="CE1").pk)
    rebuild()


def test_usage_api_columns_periods_and_groups(client, council, usage):
    client.force_login(council)
    response = client.get(reverse("api-usage"), {"start": "2024-03-01", "end": "2024-05-01", "period": "month", "group_by": "vo"})
    body = response.json()
    assert body["columns"] == ["period", "vo", "jobs", "wall_hours", "cpu_hours", "normalized_hours", "gpu_hours"]
    rows = [(r["period"], r["vo"], r["jobs"], r["wall_hours"], r["cpu_hours"]) for r in body["results"]]
    assert rows == [("2024-03-01", "atlas", 1, 4.0, 2.0), ("2024-03-01", "cms", 1, 2.0, 1.0), ("2024-04-01", "cms", 1, 1.0, 0.5)]
    total = client.get(reverse("api-usage"), {"start": "2024-03-01", "end": "2024-05-01", "period": "total"}).json()
    assert total["columns"][0] == "jobs" and total["results"][0]["wall_hours"] == 7.0
    filtered = client.get(reverse("api-usage"), {"start": "2024-03-01", "end": "2024-05-01", "period": "total", "vo": "cms"}).json()
    assert filtered["results"][0]["wall_hours"] == 3.0


def test_usage_csv_matches_json(client, council, usage):
    client.force_login(council)
    params = {"start": "2024-03-01", "end": "2024-05-01", "period": "day", "group_by": "site,vo"}
    data = client.get(reverse("api-usage"), params).json()["results"]
    response = client.get(reverse("api-usage"), params | {"format": "csv"})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [float(r["wall_hours"]) for r in rows] == [r["wall_hours"] for r in data]
    assert list(rows[0]) == ["period", "site", "vo", "jobs", "wall_hours", "cpu_hours", "normalized_hours", "gpu_hours"]


@pytest.mark.parametrize(
    ("params", "parameter"),
    [
        ({"start": "yesterday"}, "start"),
        ({"group_by": "planet"}, "group_by"),
        ({"period": "fortnight"}, "period"),
        ({"colour": "red"}, "colour"),
        ({"designation": "some"}, "designation"),
        ({"start": "2020-01-01", "end": "2024-01-01", "period": "day"}, "end"),
        ({"start": "2024-01-02", "end": "2024-01-01"}, "end"),
        ({"format": "xml"}, "format"),
    ],
)
def test_usage_api_rejects_bad_parameters_naming_them(client, council, params, parameter):
    client.force_login(council)
    response = client.get(reverse("api-usage"), params)
    assert response.status_code == 400
    assert response.json()["parameter"] == parameter


def test_usage_page_shows_the_rows_with_units(client, council, usage):
    client.force_login(council)
    page = client.get(reverse("usage-by-site"), {"start": "2024-03-01", "end": "2024-04-30"}).content.decode()
    assert "CE1" in page and "core-hours" in page
    assert "2024-03-10" in page and "6.0" in page  # 2 + 4 core-hours on that day
    assert "format=csv" in page


def test_upload_is_queued_and_reported_through_the_api(client, uploader, bundle_store, django_capture_on_commit_callbacks):
    client.force_login(uploader)
    upload = io.BytesIO(history((1, "cms", 3600, 1710079200)) + b"\nGlobalJobId = \"x#1.0#1\"\nRemoteWallClockTime = oops\nCompletionDate = 1\n")
    upload.name = "history.1"
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("api-bundles"), {"file": upload, "source": "test"})
    assert response.status_code == 202
    body = response.json()
    assert body["url"] == reverse("api-bundle-detail", args=[body["id"]])
    detail = client.get(body["url"]).json()
    assert (detail["status"], detail["records_inserted"], detail["rejected"]) == ("done", 1, 1)
    (error,) = detail["errors"]
    assert error["file"] == "history.1" and error["line"] == 9 and "not a number" in error["reason"]
    assert DailyUsage.objects.reported().count() == 1
    page = client.get(reverse("bundle-detail", args=[body["id"]])).content.decode()
    assert "not a number" in page and "done" in page


def test_upload_needs_permission_and_a_file(client, member, uploader, bundle_store):
    client.force_login(member)
    assert client.post(reverse("api-bundles"), {"file": io.BytesIO(b"x")}).status_code == 403
    client.force_login(uploader)
    response = client.post(reverse("api-bundles"), {"source": "no file"})
    assert response.status_code == 400 and "file" in response.json()


def test_upload_over_the_size_limit_is_413(client, uploader, bundle_store, settings):
    settings.BUNDLE_MAX_UPLOAD_BYTES = 100
    client.force_login(uploader)
    upload = io.BytesIO(b"x" * 1000)
    upload.name = "big"
    assert client.post(reverse("api-bundles"), {"file": upload}).status_code == 413
    assert not Bundle.objects.exists()


def test_users_see_only_their_own_bundles_admins_all(client, member, uploader, admin_user, bundle_store):
    bundle = Bundle.objects.create(original_name="x", stored_path="x", sha256="0" * 64, created_by=uploader)
    client.force_login(member)
    assert client.get(reverse("api-bundle-detail", args=[bundle.pk])).status_code == 404
    client.force_login(uploader)
    assert client.get(reverse("api-bundle-detail", args=[bundle.pk])).status_code == 200
    client.force_login(admin_user)
    assert client.get(reverse("bundle-detail", args=[bundle.pk])).status_code == 200


def test_production_settings_refuse_to_start_without_secret_key():
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SECRET_KEY", "DJANGO_DEBUG")}
    env["DJANGO_SETTINGS_MODULE"] = "portal.settings"
    result = subprocess.run([sys.executable, "manage.py", "check"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "DJANGO_SECRET_KEY must be set" in result.stderr
