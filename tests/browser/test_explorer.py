"""The explorer in a real browser: log in, change group-by and period, see the bars redraw, drill down by
clicking a bar and a legend entry, and download the CSV whose totals equal the API's."""
import csv
import io

import pytest
from django.contrib.auth.models import Group, User

from portal.models import VOManager
from tests.portal.conftest import ALICE, BOB, Grid

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHART = "#explorer-chart"


@pytest.fixture
def grid(transactional_db):
    return Grid()


def user_with_role(username: str, role: str, vo=None) -> User:
    user = User.objects.create_user(username, password="secret-pw")
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    if vo is not None:
        VOManager.objects.create(user=user, vo=vo)
    return user


def log_in(page, username: str) -> None:
    page.goto("/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", "secret-pw")
    page.click("button[type=submit]")
    page.wait_for_url("**/")


def bars(page) -> list[tuple[str, list[float]]]:
    """The chart as Plotly drew it: (series name, bar heights)."""
    page.wait_for_selector(f'{CHART}[data-drawn="1"]')
    return [tuple(t) for t in page.eval_on_selector(CHART, "el => el.data.map(t => [t.name, t.y])")]


def click_bar(page, trace: int, point: int) -> None:
    box = page.locator(f"{CHART} .trace.bars").nth(trace).locator(".point path").nth(point).bounding_box()
    with page.expect_navigation():
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def test_explore_redraw_drill_down_and_csv(page, grid, live_server):
    user_with_role("carla", "council")
    log_in(page, "carla")
    assert "core-hours" in page.inner_text("main")  # the dashboard

    page.goto("/explore/")
    assert "period=day" in page.url and "group_by=site" in page.url  # the whole state is in the URL
    page.select_option("select[name=group_by]", "vo")
    page.select_option("select[name=period]", "month")
    page.fill("input[name=start]", "2024-01-01")
    page.fill("input[name=end]", "2024-04-01")
    with page.expect_navigation():
        page.click("#explorer-form button[type=submit]")
    assert "group_by=vo" in page.url and "period=month" in page.url
    assert bars(page) == [("ligo", [20, 30, 2]), ("cms", [14, 6, 8])]
    assert page.locator(f"{CHART} .trace.bars .point").count() == 6

    page.select_option("select[name=group_by]", "site")
    with page.expect_navigation():
        page.click("#explorer-form button[type=submit]")
    assert bars(page) == [("SiteB", [4, 30, 8]), ("SiteA", [30, 6, 2])]

    click_bar(page, trace=1, point=0)  # SiteA, January
    assert "site=SiteA" in page.url and "group_by=vo" in page.url
    assert bars(page) == [("ligo", [20, 0, 2]), ("cms", [10, 6, 0])]
    assert page.locator(".legend .traces").count() == 2

    with page.expect_download() as download:
        page.click("#explorer-csv")
    rows = list(csv.DictReader(io.StringIO(download.value.path().read_text())))
    api = page.request.get(page.locator("#explorer-api").get_attribute("href")).json()
    assert sum(float(r["wall_hours"]) for r in rows) == sum(r["wall_hours"] for r in api["results"]) == 38.0
    assert sorted((r["period"], r["vo"], float(r["wall_hours"])) for r in rows) == sorted(
        (r["period"], r["vo"], r["wall_hours"]) for r in api["results"]
    )


def test_vo_manager_drills_from_a_legend_entry_to_their_people(page, grid):
    user_with_role("vera", "vo_manager", vo=grid.vos["cms"])
    log_in(page, "vera")
    page.goto("/explore/?start=2024-01-01&end=2024-04-01&period=month&group_by=vo&metric=wall_hours&chart=bar&top=10")
    assert [name for name, _ in bars(page)] == ["ligo", "cms"]
    ligo = page.eval_on_selector("#explorer-chart-data", "el => JSON.parse(el.textContent).series[0]")
    assert ligo["name"] == "ligo" and ligo["drill"] is None  # not their VO: no way down to its people
    with page.expect_navigation():
        page.locator(".legend .traces", has_text="cms").locator(".legendtoggle").click()
    assert "vo=cms" in page.url and "group_by=user" in page.url
    assert sorted(bars(page)) == sorted([(ALICE, [10, 6, 0]), (BOB, [4, 0, 8])])
    assert "Carol" not in page.content()
