import pytest
from django.contrib.auth.models import Permission, User


@pytest.fixture
def member(db):
    """A logged-in user without special rights."""
    return User.objects.create_user("member", password="pw")


@pytest.fixture
def uploader(db):
    user = User.objects.create_user("uploader", password="pw")
    user.user_permissions.add(Permission.objects.get(codename="add_bundle"))
    return user
