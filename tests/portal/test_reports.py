"""Dashboard, explorer, detail pages and lists: the numbers they show equal the API's for the same query
string, worked by hand on the small grid of conftest.py (reported core-hours: SiteA 38, SiteB 42;
cms 28, ligo 52; unmatched payload hours, 100, never counted)."""
import csv
import io
import json
import re
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.http import StreamingHttpResponse
from django.urls import reverse

from tests.portal.conftest import ALICE, BOB, CAROL

pytestmark = pytest.mark.django_db

RANGE = {"start": "2024-01-01", "end": "2024-04-01"}
Q = RANGE | {"period": "month", "group_by": "site", "metric": "wall_hours", "chart": "bar", "top": "10"}


def chart_of(response, chart_id: str) -> dict:
    match = re.search(rf'<script id="{chart_id}-data" type="application/json">(.*?)</script>', response.content.decode(), re.S)
    assert match, f"no chart {chart_id}"
    return json.loads(match.group(1))


def csv_of(response) -> list[dict]:
    assert isinstance(response, StreamingHttpResponse)
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def api(client, params: dict) -> list[dict]:
    response = client.get(reverse("api-usage"), params)
    assert response.status_code == 200, response.content
    return response.json()["results"]


@pytest.fixture
def as_council(client, grid, council):
    client.force_login(council)
    return client


def test_explorer_fills_the_url_with_its_defaults(as_council):
    response = as_council.get(reverse("explorer"), {"vo": "cms"})
    assert response.status_code == 302
    state = parse_qs(urlsplit(response.url).query)
    # Data span 2024-01-10..2024-03-02 (under ~3 months): shown by day over the whole span.
    assert state == {
        "vo": ["cms"], "group_by": ["site"], "metric": ["wall_hours"], "chart": ["bar"], "top": ["10"],
        "start": ["2024-01-10"], "end": ["2024-03-03"], "period": ["day"],
    }  # fmt: skip
    assert as_council.get(response.url).status_code == 200


def test_explorer_chart_table_csv_and_api_agree_for_the_same_query_string(as_council):
    params = Q | {"top": "1"}
    page = as_council.get(reverse("explorer"), params)
    assert page.status_code == 200
    chart = chart_of(page, "explorer-chart")
    assert chart["periods"] == ["2024-01-01", "2024-02-01", "2024-03-01"]
    assert [(s["name"], s["values"]) for s in chart["series"]] == [("SiteB", [4.0, 30.0, 8.0]), ("(other)", [30.0, 6.0, 2.0])]
    assert chart["unit"] == "core-hours"
    rows = api(as_council, params)
    assert [(r["period"], r["site"], r["wall_hours"]) for r in rows] == [
        ("2024-01-01", "SiteB", 4.0), ("2024-01-01", "(other)", 30.0),
        ("2024-02-01", "SiteB", 30.0), ("2024-02-01", "(other)", 6.0),
        ("2024-03-01", "SiteB", 8.0), ("2024-03-01", "(other)", 2.0),
    ]  # fmt: skip
    exported = csv_of(as_council.get(reverse("api-usage"), params | {"format": "csv"}))
    assert [(r["period"], r["site"], float(r["wall_hours"]), int(r["jobs"])) for r in exported] == [
        (r["period"], r["site"], r["wall_hours"], r["jobs"]) for r in rows
    ]
    html = page.content.decode()
    assert "Total: 80.0 core-hours" in html  # 38 + 42, unmatched payload hours left out
    assert 'data-column="wall_hours">30.0<' in html
    # The page's own CSV and API links carry the same query string.
    for link_id in ("explorer-csv", "explorer-api"):
        href = re.search(rf'id="{link_id}" href="([^"]+)"', html).group(1).replace("&amp;", "&")
        assert {k: v for k, v in parse_qs(urlsplit(href).query).items() if k != "format"} == {k: [v] for k, v in params.items()}


def test_top_n_sums_the_rest_into_other_over_two_dimensions(as_council):
    rows = api(as_council, RANGE | {"period": "total", "group_by": "site,vo", "top": "2"})
    assert [(r["site"], r["vo"], r["wall_hours"], r["jobs"]) for r in rows] == [
        ("SiteA", "ligo", 22.0, 4), ("SiteB", "ligo", 30.0, 2), ("(other)", "(other)", 28.0, 8),
    ]  # fmt: skip


def test_metric_efficiency_and_pie_chart_of_totals(as_council):
    page = as_council.get(reverse("explorer"), Q | {"period": "total", "metric": "cpu_efficiency", "chart": "pie"})
    chart = chart_of(page, "explorer-chart")
    assert chart["chart"] == "pie" and chart["unit"] == "%"
    # SiteA: CPU 8 + 15 + 6 + 2 = 31 of 38 core-hours; SiteB: 1 + 12 + 4 = 17 of 42. Ranked by core-hours.
    assert [(s["name"], s["total"]) for s in chart["series"]] == [("SiteB", 40.48), ("SiteA", 81.58)]
    jobs = chart_of(as_council.get(reverse("explorer"), Q | {"metric": "jobs"}), "explorer-chart")
    assert {s["name"]: s["values"] for s in jobs["series"]} == {"SiteA": [5, 1, 1], "SiteB": [1, 2, 4]}


def test_clicking_a_series_drills_down_site_then_vo_then_people(client, grid, council, manager):
    client.force_login(council)
    chart = chart_of(client.get(reverse("explorer"), Q), "explorer-chart")
    drill = {s["name"]: parse_qs(urlsplit(s["drill"]).query) for s in chart["series"]}
    assert drill["SiteA"]["site"] == ["SiteA"] and drill["SiteA"]["group_by"] == ["vo"]
    assert drill["SiteA"]["start"] == [Q["start"]] and drill["SiteA"]["top"] == ["10"]
    vo_level = chart_of(client.get(reverse("explorer"), Q | {"site": "SiteA", "group_by": "vo"}), "explorer-chart")
    assert [s["name"] for s in vo_level["series"]] == ["ligo", "cms"]
    assert all(s["drill"] is None for s in vo_level["series"])  # council: no person level below VOs

    client.force_login(manager)
    vo_level = chart_of(client.get(reverse("explorer"), Q | {"site": "SiteA", "group_by": "vo"}), "explorer-chart")
    cms = next(s for s in vo_level["series"] if s["name"] == "cms")
    people_url = cms["drill"]
    assert parse_qs(urlsplit(people_url).query)["group_by"] == ["user"]
    people = chart_of(client.get(people_url), "explorer-chart")
    assert [(s["name"], s["values"]) for s in people["series"]] == [(ALICE, [10.0, 6.0])]


@pytest.mark.parametrize(
    ("params", "parameter"),
    [({"metric": "speed"}, "metric"), ({"chart": "radar"}, "chart"), ({"top": "0"}, "top"), ({"top": "ten"}, "top"), ({"group_by": "planet"}, "group_by")],
)
def test_bad_explorer_parameters_answer_400_naming_them_on_page_and_api(as_council, params, parameter):
    response = as_council.get(reverse("api-usage"), Q | params)
    assert response.status_code == 400 and response.json()["parameter"] == parameter
    page = as_council.get(reverse("explorer"), Q | params)
    assert page.status_code == 400 and f"{parameter}: " in page.content.decode()


def test_dashboard_numbers_carry_units_and_equal_the_api(as_council):
    page = as_council.get(reverse("home"))
    html = page.content.decode()
    assert "March 2024" in html
    assert "10.0 core-hours" in html  # March: 8 + 2
    assert "80.0 core-hours" in html  # April 2023 .. March 2024
    months = chart_of(page, "chart-months")
    monthly = api(as_council, {"start": "2023-04-01", "end": "2024-04-01", "period": "month"})
    assert months["series"][0]["values"] == [r["wall_hours"] for r in monthly] == [34.0, 36.0, 10.0]
    sites = chart_of(page, "chart-top-site")
    assert sites["chart"] == "pie" and [(s["name"], s["total"]) for s in sites["series"]] == [("SiteB", 42.0), ("SiteA", 38.0)]
    domains = chart_of(page, "chart-top-science_domain")
    assert [(s["name"], s["total"]) for s in domains["series"]] == [("Astrophysics", 52.0), ("High Energy Physics", 28.0)]
    assert "Pilot time by category" in html and "core-hours" in html


def test_site_detail_panels_equal_the_api_and_link_their_csv(client, grid, council):
    client.force_login(council)
    page = client.get(reverse("site-detail", args=[grid.sites["SiteA"].pk]), RANGE)
    html = page.content.decode()
    assert page.status_code == 200 and "FacA" in html
    monthly = chart_of(page, "chart-0")
    assert {s["name"]: s["values"] for s in monthly["series"]} == {"ligo": [20.0, 0.0, 2.0], "cms": [10.0, 6.0, 0.0]}
    by_vo = api(client, RANGE | {"period": "total", "group_by": "vo", "site": "SiteA"})
    assert [(r["vo"], r["wall_hours"]) for r in by_vo] == [("cms", 16.0), ("ligo", 22.0)]
    assert reverse("vo-detail", args=[grid.vos["cms"].pk]) in html  # table cells link to detail pages
    assert reverse("categories") in html
    assert html.count("format=csv") >= 4


def test_vo_detail_lists_people_only_for_its_manager_and_admins(client, grid, council, manager):
    url = reverse("vo-detail", args=[grid.vos["cms"].pk])
    client.force_login(manager)
    html = client.get(url, RANGE).content.decode()
    assert "By person" in html and ALICE in html and BOB in html
    client.force_login(council)
    html = client.get(url, RANGE).content.decode()
    assert "By person" not in html and ALICE not in html
    client.force_login(manager)
    html = client.get(reverse("vo-detail", args=[grid.vos["ligo"].pk]), RANGE).content.decode()
    assert "By person" not in html and CAROL not in html
    person = client.get(reverse("person-detail", args=[grid.people[BOB].pk]), RANGE)
    assert person.status_code == 200 and "SiteB" in person.content.decode()


def test_detail_pages_refuse_unknown_parameters_naming_them(as_council, grid):
    response = as_council.get(reverse("project-detail", args=[grid.projects["cms"].pk]), {"colour": "red"})
    assert response.status_code == 400 and "colour: unknown parameter" in response.content.decode()
    missing = as_council.get(reverse("science-domain-detail", args=[99999]))
    assert missing.status_code == 404


LISTS = [
    ("site-list", "api-site-list", {"q": "site", "facility": "FacA"}, ["SiteA"]),
    ("vo-list", "api-vo-list", {"science_domain": "Astrophysics"}, ["ligo"]),
    ("project-list", "api-project-list", {"pi": "pat"}, ["proj-cms"]),
    ("science-domain-list", "api-science-domain-list", {"q": "physics"}, ["Astrophysics", "High Energy Physics"]),
    ("person-list", "api-person-list", {"vo": "cms"}, [ALICE, BOB]),
]


@pytest.mark.parametrize(("page", "api_name", "params", "names"), LISTS)
def test_list_page_api_and_csv_share_one_filterset(client, grid, admin, page, api_name, params, names):
    client.force_login(admin)
    body = client.get(reverse(api_name), params).json()
    assert [r["name"] for r in body["results"]] == names and body["count"] == len(names)
    exported = csv_of(client.get(reverse(api_name), params | {"format": "csv"}))
    assert exported == [{k: "" if v is None else str(v) for k, v in r.items()} for r in body["results"]]
    html = client.get(reverse(page), params).content.decode()
    for name in names:
        assert name in html
    bad = client.get(reverse(api_name), params | {"colour": "red"})
    assert bad.status_code == 400 and bad.json() == {"error": "unknown parameter", "parameter": "colour"}
    assert client.get(reverse(page), {"colour": "red"}).status_code == 400


def test_list_pagination_ordering_and_details(client, grid, admin):
    client.force_login(admin)
    first = client.get(reverse("api-site-list"), {"limit": 1, "ordering": "-name"}).json()
    assert [r["name"] for r in first["results"]] == ["SiteB"] and first["count"] == 2
    second = client.get(first["next"]).json()
    assert [r["name"] for r in second["results"]] == ["SiteA"] and second["next"] is None
    assert client.get(reverse("api-site-list"), {"limit": "many"}).json()["parameter"] == "limit"
    site = client.get(reverse("api-site-detail", args=[grid.sites["SiteA"].pk])).json()
    assert site == {"id": grid.sites["SiteA"].pk, "name": "SiteA", "facility": "FacA"}
    assert client.get(reverse("api-site-detail", args=[99999])).status_code == 404
    page = client.get(reverse("site-list"), {"limit": 1, "ordering": "name"}).content.decode()
    assert "SiteA" in page and "SiteB" not in page and "offset=1" in page


def test_record_filters_use_the_usage_parameter_names(client, grid, admin, manager):
    client.force_login(admin)
    url = reverse("api-record-list")
    assert client.get(url, {"vo": "ligo"}).json()["count"] == 1
    assert client.get(url, {"user": ALICE, "kind": "batch"}).json()["results"][0]["local_user"] == "user0"
    assert client.get(url, {"start": "2024-01-11"}).json()["count"] == 0  # all three ended on 2024-01-10
    assert client.get(url, {"end": "2024-01-10"}).json()["count"] == 0  # none started before that day
    assert client.get(url, {"start": "2024-01-10", "end": "2024-01-11"}).json()["count"] == 3
    assert client.get(url, {"start": "someday"}).json()["parameter"] == "start"
    record = client.get(reverse("api-record-detail", args=[grid.records[ALICE].pk])).json()
    assert (record["user"], record["wall_seconds"], record["start"]) == (ALICE, 7200.0, "2024-01-10T01:00:00+00:00")
    client.force_login(manager)
    assert [r["user"] for r in client.get(url).json()["results"]] == [BOB, ALICE]  # newest first, cms only


def test_bundle_list_page_and_api_share_the_filterset(client, grid, uploader, admin):
    from ingest.models import Bundle

    Bundle.objects.create(original_name="mine.tgz", stored_path="m", sha256="1" * 64, created_by=uploader, status="done")
    client.force_login(uploader)
    body = client.get(reverse("api-bundles"), {"status": "done"}).json()
    assert [b["original_name"] for b in body["results"]] == ["mine.tgz"]
    assert client.get(reverse("api-bundles"), {"status": "queued"}).json()["count"] == 0
    assert "mine.tgz" in client.get(reverse("bundle-list"), {"q": "mine"}).content.decode()
    assert [r["original_name"] for r in csv_of(client.get(reverse("api-bundles"), {"format": "csv"}))] == ["mine.tgz"]
    client.force_login(admin)
    assert client.get(reverse("api-bundles")).json()["count"] == 2


@pytest.fixture
def many(grid):
    """Fifty more of everything, so an N+1 query shows as fifty more queries."""
    from datetime import UTC, datetime

    from accounting.models import VO, Person, Project, ScienceDomain, Site, UsageRecord
    from ingest.models import Bundle

    domain = ScienceDomain.objects.create(name="Chemistry")
    for n in range(50):
        site = Site.objects.create(name=f"S{n:02d}")
        vo = VO.objects.create(name=f"vo{n:02d}", field_of_science=domain)
        Project.objects.create(name=f"p{n:02d}", field_of_science=domain)
        person = Person.objects.create(name=f"/CN=person {n}")
        UsageRecord.objects.create(
            kind="batch", natural_key=f"k{n}", record_hash="x", source_format="slurm", site=site, vo=vo, person=person,
            start=datetime(2024, 1, 1, tzinfo=UTC), end=datetime(2024, 1, 2, tzinfo=UTC), wall_seconds=60,
        )  # fmt: skip
        Bundle.objects.create(original_name=f"b{n}", stored_path="x", sha256="2" * 64, created_by=None)
    return grid


LIST_URLS = [
    "site-list", "vo-list", "project-list", "science-domain-list", "person-list", "record-list", "bundle-list",
    "api-site-list", "api-vo-list", "api-project-list", "api-science-domain-list", "api-person-list",
    "api-record-list", "api-bundles",
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "params"), [(n, {}) for n in LIST_URLS] + [(n, {"format": "csv"}) for n in LIST_URLS if n.startswith("api-")]
)
def test_list_query_counts_do_not_grow_with_rows(client, many, admin, django_assert_max_num_queries, name, params):
    client.force_login(admin)
    # session + user, count + one page of rows (or the streamed rows), nothing per row
    with django_assert_max_num_queries(6):
        response = client.get(reverse(name), params)
        if response.streaming:
            b"".join(response.streaming_content)
    assert response.status_code == 200


@pytest.mark.parametrize("name", ["home", "explorer", "site-detail", "vo-detail", "person-detail"])
def test_report_page_query_counts(client, many, admin, django_assert_max_num_queries, name):
    client.force_login(admin)
    grid = many
    args = {"site-detail": [grid.sites["SiteA"].pk], "vo-detail": [grid.vos["cms"].pk], "person-detail": [grid.people[ALICE].pk]}
    params = Q if name == "explorer" else {}
    with django_assert_max_num_queries(25):
        assert client.get(reverse(name, args=args.get(name)), params).status_code == 200


def test_csv_of_usage_and_lists_streams(as_council):
    response = as_council.get(reverse("api-usage"), Q | {"format": "csv"})
    assert isinstance(response, StreamingHttpResponse) and response["Content-Type"].startswith("text/csv")
    assert isinstance(as_council.get(reverse("api-site-list"), {"format": "csv"}), StreamingHttpResponse)


def test_the_old_usage_page_equals_the_api(as_council):
    page = as_council.get(reverse("usage-by-site"), RANGE).content.decode()
    rows = api(as_council, RANGE | {"period": "day", "group_by": "site"})
    assert len(rows) == 7
    for row in rows:
        assert f"<td>{row['period']}</td><td>{row['site']}</td>" in page
    assert urlencode({"group_by": "site"}) in page


def test_openapi_schema_documents_every_endpoint_and_swagger_ui_is_local(as_council):
    schema = as_council.get(reverse("api-schema"), HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    for path in ("/api/v1/usage/", "/api/v1/sites/", "/api/v1/sites/{id}/", "/api/v1/vos/", "/api/v1/projects/",
                 "/api/v1/science-domains/", "/api/v1/people/", "/api/v1/records/", "/api/v1/bundles/"):
        assert path in schema["paths"], path
    records = {p["name"] for p in schema["paths"]["/api/v1/records/"]["get"]["parameters"]}
    assert {"site", "vo", "user", "start", "end", "limit", "offset", "format"} <= records
    usage = {p["name"] for p in schema["paths"]["/api/v1/usage/"]["get"]["parameters"]}
    assert {"top", "metric", "group_by", "designation"} <= usage
    docs = as_council.get(reverse("api-docs")).content.decode()
    assert "drf_spectacular_sidecar" in docs or "/static/" in docs
    assert "cdn" not in docs.lower() and "unpkg" not in docs.lower()
