"""Upload limits of the API (issue 3): over the size limit 413, over the rate limit 429, each with a clear answer."""
import io

import pytest
from django.contrib.auth.models import Permission, User
from django.core.cache import cache
from django.urls import reverse

from ingest.models import Bundle

pytestmark = pytest.mark.django_db

HISTORY = b'GlobalJobId = "ap1.example.org#1.0#1"\nRemoteWallClockTime = 60\nCompletionDate = 1710079200\n'


@pytest.fixture(autouse=True)
def throttle_history():
    """The throttle counts uploads in the cache: start and end each test with none."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def two_an_hour(settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"uploads": "2/hour"}}


def post(client, name="history", content=HISTORY):
    upload = io.BytesIO(content)
    upload.name = name
    return client.post(reverse("api-bundles"), {"file": upload})


def test_the_upload_over_the_rate_limit_is_429_with_the_limit_and_when_to_retry(client, uploader, bundle_store, two_an_hour):
    client.force_login(uploader)
    assert [post(client).status_code for _ in range(2)] == [202, 202]
    response = post(client)
    assert response.status_code == 429
    retry = int(response["Retry-After"])
    assert 3500 < retry <= 3600
    assert response.json() == {
        "error": f"too many uploads: the limit is 2 uploads per hour for each user; try again in {retry} s",
        "retry_after": retry,
    }
    assert Bundle.objects.count() == 2  # the refused upload was not kept
    assert client.get(reverse("api-bundles")).status_code == 200  # reading the list is not limited


def test_the_rate_limit_is_per_user(client, uploader, bundle_store, two_an_hour):
    other = User.objects.create_user("other-uploader", password="pw")
    other.user_permissions.add(Permission.objects.get(codename="add_bundle"))
    client.force_login(uploader)
    assert [post(client).status_code for _ in range(3)] == [202, 202, 429]
    client.force_login(other)
    assert post(client).status_code == 202


def test_the_rate_is_read_from_the_settings_at_each_request(client, uploader, bundle_store, settings):
    from portal.api.bundles import UploadThrottle

    throttle = UploadThrottle()
    throttle.scope = "uploads"
    assert throttle.get_rate() == settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["uploads"]
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"uploads": "1/minute"}}
    assert (throttle.get_rate(), throttle.describe()) == ("1/minute", "1 upload per minute")


def test_the_upload_over_the_size_limit_is_413_with_the_limit(client, uploader, bundle_store, settings):
    settings.BUNDLE_MAX_UPLOAD_BYTES = 100
    client.force_login(uploader)
    response = post(client, content=b"x" * 1000)
    assert response.status_code == 413
    assert response.json() == {"error": "upload larger than 100 bytes"}
    assert not Bundle.objects.exists()
