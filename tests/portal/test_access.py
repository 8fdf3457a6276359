"""Every URL of the URL conf, with every role: the allowed or denied answer, and no personal data
(DNs) of another VO in any page, JSON or CSV reached from there.

Roles (portal/roles.py): anonymous, a signed-in user without a role ("member"), council, the VO
manager of cms, admin. A URL added to the URL conf without a rule here fails the walk.
"""
import re
from urllib.parse import urlencode, urlsplit

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests.portal.conftest import ALICE, BOB, CAROL, DNS

pytestmark = pytest.mark.django_db

RANGE = {"start": "2024-01-01", "end": "2024-04-01"}
EXPLORER = RANGE | {"period": "month", "group_by": "site", "metric": "wall_hours", "chart": "bar", "top": "10"}

# URL name -> who may open it
RULES = {
    "login": "public",
    "logout": "post_only",
    "home": "aggregates",
    "explorer": "aggregates",
    "usage-by-site": "aggregates",
    "categories": "aggregates",
    "site-list": "aggregates", "site-detail": "aggregates",
    "vo-list": "aggregates", "vo-detail": "aggregates",
    "project-list": "aggregates", "project-detail": "aggregates",
    "science-domain-list": "aggregates", "science-domain-detail": "aggregates",
    "person-list": "people", "person-detail": "people",
    "record-list": "people",
    "bundle-list": "signed_in", "bundle-detail": "own_bundle",
    "api-bundles": "signed_in", "api-bundle-detail": "own_bundle",
    "api-usage": "aggregates", "api-categories": "aggregates",
    "api-site-list": "aggregates", "api-site-detail": "aggregates",
    "api-vo-list": "aggregates", "api-vo-detail": "aggregates",
    "api-project-list": "aggregates", "api-project-detail": "aggregates",
    "api-science-domain-list": "aggregates", "api-science-domain-detail": "aggregates",
    "api-person-list": "people", "api-person-detail": "people",
    "api-record-list": "people", "api-record-detail": "people",
    "api-schema": "signed_in", "api-docs": "signed_in",
    # quotas: VO managers (their VOs' quotas) and admins; notices: anyone signed in
    "quota-list": "quotas", "quota-detail": "quotas", "api-quotas": "quotas", "api-quota-check": "quotas",
    "notices": "signed_in", "quota-decide": "post_only", "reconciliation-actions": "post_only",
    # reconciliation and publishing: admins only
    "reconciliation": "admin_page", "reconciliation-sync": "admin_page", "reconciliation-queue": "admin_page",
    "publishing": "admin_page", "api-reconciliation-sync": "admin_page", "api-publish-apel": "admin_page",
    "api-publish-ncsa": "admin_page",
}  # fmt: skip
PENDING: set[str] = set()  # URLs of work in progress, walked only for "no error, no leak" until they get a rule
ROLES = ("anonymous", "member", "council", "manager", "admin")
ALLOWED = {
    "public": set(ROLES),
    "aggregates": {"council", "manager", "admin"},
    "people": {"manager", "admin"},
    "signed_in": {"member", "council", "manager", "admin"},
    "own_bundle": {"admin"},
    "admin": {"admin"},
    "quotas": {"manager", "admin"},
    "admin_page": {"admin"},
}


def walk(patterns, prefix=""):
    """(qualified name, needs arguments) of every named URL pattern."""
    for p in patterns:
        if isinstance(p, URLResolver):
            namespace = f"{prefix}{p.namespace}:" if p.namespace else prefix
            yield from walk(p.url_patterns, namespace)
        elif isinstance(p, URLPattern) and p.name:
            yield f"{prefix}{p.name}", bool(p.pattern.regex.groupindex)


def concrete_urls(grid) -> list[tuple[str, str]]:
    """(rule, URL) for every URL name; admin URLs that need an object are covered by their changelists."""
    pks = {
        "site-detail": grid.sites["SiteA"].pk, "vo-detail": grid.vos["cms"].pk,
        "project-detail": grid.projects["cms"].pk, "science-domain-detail": grid.domains["hep"].pk,
        "person-detail": grid.people[ALICE].pk, "bundle-detail": grid.bundle.pk, "api-bundle-detail": grid.bundle.pk,
        "api-site-detail": grid.sites["SiteA"].pk, "api-vo-detail": grid.vos["cms"].pk,
        "api-project-detail": grid.projects["cms"].pk, "api-science-domain-detail": grid.domains["hep"].pk,
        "api-person-detail": grid.people[ALICE].pk, "api-record-detail": grid.records[ALICE].pk,
        "quota-detail": cms_quota(grid).pk, "quota-decide": cms_quota(grid).pk, "reconciliation-queue": "unmatched",
    }  # fmt: skip
    urls = []
    for name, needs_args in sorted(set(walk(get_resolver().url_patterns))):
        if name.startswith("admin:"):
            if name == "admin:app_list":
                urls += [("admin", reverse(name, args=[app])) for app in ("accounting", "auth", "portal", "ingest")]
            elif name == "admin:login":
                urls.append(("admin_login", reverse(name)))
            elif name == "admin:logout":
                urls.append(("admin_logout", reverse(name)))
            elif not needs_args:
                urls.append(("admin", reverse(name)))
            continue
        if name in PENDING:
            if not needs_args:
                urls.append(("pending", reverse(name)))
            continue
        assert name in RULES, f"URL {name!r} has no access rule in this test"
        url = reverse(name, args=[pks[name]]) if needs_args else reverse(name)
        if name == "explorer":
            url += "?" + urlencode(EXPLORER)
        if name == "api-quota-check":
            url += "?" + urlencode({"subject_type": "vo", "subject": "cms"})
        urls.append((RULES[name], url))
    return urls


def cms_quota(grid):
    from datetime import date

    from accounting.models import Quota

    return Quota.objects.get_or_create(
        subject_type="vo", subject="cms", vo=grid.vos["cms"], period="custom", period_start=date(2024, 1, 1),
        period_end=date(2025, 1, 1), limit=1000, status="approved",
    )[0]  # fmt: skip


@pytest.fixture
def users(grid, member, council, manager, admin):
    grid.bundle.created_by = admin
    grid.bundle.save()
    return {"anonymous": None, "member": member, "council": council, "manager": manager, "admin": admin}


def login(client, user):
    client.logout()
    if user is not None:
        client.force_login(user)


def body(response) -> str:
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return content.decode("utf-8", "replace")


def admin_may_add(url: str) -> bool:
    """Whether the admin lets a superuser add objects of the model behind an `.../add/` URL
    (summaries, rollups and the like are read-only there)."""
    from django.contrib import admin
    from django.contrib.auth.models import User
    from django.test import RequestFactory

    request = RequestFactory().get(url)
    request.user = User(is_staff=True, is_superuser=True, is_active=True)
    app_label, model_name = url.strip("/").split("/")[1:3]
    model_admin = next(a for m, a in admin.site._registry.items() if (m._meta.app_label, m._meta.model_name) == (app_label, model_name))
    return model_admin.has_add_permission(request)


def expected(rule: str, role: str, url: str) -> int:
    api = url.startswith("/api/")
    if rule == "admin" and role == "admin" and url.endswith("/add/") and not admin_may_add(url):
        return 403
    if rule == "admin" and role == "admin" and url == reverse("admin:autocomplete"):
        return 403  # refuses a request without its field parameters
    if rule == "post_only":
        return 405
    if rule == "admin_logout":  # POST only, once past the admin's own staff check
        return 405 if role == "admin" else 302
    if rule == "admin_login":  # the form for everyone; staff already in go straight to the index
        return 302 if role == "admin" else 200
    if role in ALLOWED[rule]:
        return 200
    if role == "anonymous":
        return 401 if api else 302
    if rule == "admin":
        return 302  # to the admin login
    if rule == "own_bundle":
        return 404
    return 403


@pytest.mark.parametrize("role", ROLES)
def test_every_url_answers_each_role_as_its_rule_says(client, grid, users, role):
    login(client, users[role])
    urls = concrete_urls(grid)
    assert len(urls) > 60  # the whole URL conf, admin changelists included
    wrong = []
    for rule, url in urls:
        response = client.get(url)
        if rule == "pending":
            assert response.status_code < 500, url
            assert role != "anonymous" or response.status_code in (302, 401, 403, 405), url
            continue
        want = expected(rule, role, url)
        if response.status_code != want:
            wrong.append((url, rule, response.status_code, want))
        elif want == 302 and not rule.startswith("admin"):
            assert response.url.startswith(reverse("login")), url
    assert wrong == []


def test_public_summary_switch_opens_only_the_dashboard(client, grid, settings):
    settings.GRIDLEDGER_PUBLIC_SUMMARY = True
    response = client.get(reverse("home"))
    assert response.status_code == 200 and "core-hours" in body(response)
    assert not any(dn in body(response) for dn in DNS)
    assert client.get(reverse("explorer")).status_code == 302
    assert client.get(reverse("api-usage")).status_code == 401
    assert client.get(reverse("site-list")).status_code == 302
    settings.GRIDLEDGER_PUBLIC_SUMMARY = False
    assert client.get(reverse("home")).status_code == 302


def person_level_urls(grid) -> list[str]:
    """Queries that ask for person-level rows outright, including other VOs' people."""
    usage = reverse("api-usage")
    person = RANGE | {"period": "month", "group_by": "user"}
    return [
        f"{usage}?{urlencode(person)}",
        f"{usage}?{urlencode(person | {'format': 'csv'})}",
        f"{usage}?{urlencode(person | {'vo': 'ligo'})}",
        f"{usage}?{urlencode(RANGE | {'period': 'total', 'user': CAROL, 'group_by': 'user'})}",
        f"{usage}?{urlencode(RANGE | {'period': 'total', 'user': CAROL})}",
        f"{reverse('explorer')}?{urlencode(EXPLORER | {'group_by': 'user'})}",
        f"{reverse('explorer')}?{urlencode(EXPLORER | {'group_by': 'vo,user', 'vo': 'ligo'})}",
        f"{reverse('api-person-list')}?vo=ligo",
        f"{reverse('api-person-list')}?format=csv",
        f"{reverse('person-list')}?q=Carol",
        f"{reverse('api-record-list')}?vo=ligo",
        f"{reverse('api-record-list')}?format=csv",
        f"{reverse('record-list')}?user={CAROL}",
        reverse("person-detail", args=[grid.people[CAROL].pk]),
        reverse("api-person-detail", args=[grid.people[CAROL].pk]),
        reverse("api-record-detail", args=[grid.records[CAROL].pk]),
        reverse("vo-detail", args=[grid.vos["ligo"].pk]),
        reverse("project-detail", args=[grid.projects["ligo"].pk]),
        reverse("site-detail", args=[grid.sites["SiteB"].pk]),
    ]


HREF = re.compile(r'href="(/[^"#]*)"')


def crawl(client, start: list[str], limit: int = 600) -> dict[str, str]:
    """GET every start URL and every same-site link found on the HTML pages reached (two levels)."""
    seen: dict[str, str] = {}
    frontier = list(start)
    for _depth in range(3):
        following = []
        for url in frontier:
            if url in seen or len(seen) >= limit:
                continue
            path = urlsplit(url).path
            if path.startswith(("/admin/", "/static/", "/accounts/")):
                continue
            response = client.get(url.replace("&amp;", "&"))
            text = body(response)
            seen[url] = text
            if response.get("Content-Type", "").startswith("text/html"):
                following += HREF.findall(text)
        frontier = following
    return seen


@pytest.mark.parametrize("role", ROLES)
def test_no_page_json_or_csv_shows_a_person_the_role_may_not_see(client, grid, users, role):
    login(client, users[role])
    start = [url for rule, url in concrete_urls(grid) if not rule.startswith("admin") and rule != "post_only"] + person_level_urls(grid)
    pages = crawl(client, start)
    assert len(pages) > 40
    forbidden = {"admin": (), "manager": (CAROL,)}.get(role, DNS)
    # A filter the user typed is echoed back in its form field; that is not data shown to them.
    leaks = [(url, dn) for url, text in pages.items() for dn in forbidden if dn in text.replace(f'value="{dn}"', "")]
    assert leaks == []
    everything = "\n".join(pages.values())
    if role == "manager":  # their own VO's people are there, so the check above is not vacuous
        assert ALICE in everything and BOB in everything
    if role == "admin":
        assert all(dn in everything for dn in DNS)


def test_person_level_queries_answer_by_role(client, grid, users):
    person = RANGE | {"period": "total", "group_by": "user"}
    login(client, users["council"])
    response = client.get(reverse("api-usage"), person)
    assert response.status_code == 403 and response.json()["parameter"] == "group_by"
    response = client.get(reverse("api-usage"), RANGE | {"user": ALICE})
    assert response.status_code == 403 and response.json()["parameter"] == "user"
    assert client.get(reverse("explorer"), EXPLORER | {"group_by": "user"}).status_code == 403

    login(client, users["manager"])
    rows = client.get(reverse("api-usage"), person).json()["results"]
    assert {r["user"]: r["wall_hours"] for r in rows} == {ALICE: 16.0, BOB: 12.0}
    assert client.get(reverse("api-usage"), person | {"vo": "ligo"}).json()["results"] == []
    people = client.get(reverse("api-person-list")).json()
    assert [p["name"] for p in people["results"]] == [ALICE, BOB] and people["count"] == 2
    assert client.get(reverse("person-detail", args=[grid.people[CAROL].pk])).status_code == 404
    # Aggregates stay whole for a VO manager: every VO's core-hours in the site totals.
    totals = client.get(reverse("api-usage"), RANGE | {"period": "total", "group_by": "vo"}).json()["results"]
    assert {r["vo"]: r["wall_hours"] for r in totals} == {"cms": 28.0, "ligo": 52.0}

    login(client, users["admin"])
    rows = client.get(reverse("api-usage"), person).json()["results"]
    assert {r["user"]: r["wall_hours"] for r in rows} == {ALICE: 16.0, BOB: 12.0, CAROL: 52.0}


def test_token_authentication_follows_the_role(client, grid, users):
    from rest_framework.authtoken.models import Token

    for role, status in (("member", 403), ("council", 200), ("manager", 200)):
        token = Token.objects.create(user=users[role])
        response = client.get(reverse("api-usage"), RANGE, HTTP_AUTHORIZATION=f"Token {token.key}")
        assert response.status_code == status, role
        people = client.get(reverse("api-person-list"), HTTP_AUTHORIZATION=f"Token {token.key}")
        assert people.status_code == (200 if role == "manager" else 403)
