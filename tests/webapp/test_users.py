"""The run command's first user: created once, its password shown once, or taken from the environment."""
import pytest
from django.contrib.auth import authenticate

from webapp.stack.users import ensure_local_user

pytestmark = pytest.mark.django_db


def test_first_run_creates_a_superuser_and_returns_its_password_once(monkeypatch):
    monkeypatch.delenv("NAS_ADMIN_PASSWORD", raising=False)
    password = ensure_local_user("admin")
    assert password and len(password) >= 12
    user = authenticate(username="admin", password=password)
    assert user is not None and user.is_superuser
    assert ensure_local_user("admin") is None  # the second run neither creates nor reveals anything


def test_password_from_the_environment(monkeypatch):
    monkeypatch.setenv("NAS_ADMIN_PASSWORD", "chosen-by-the-user-42")
    assert ensure_local_user("ada") == "chosen-by-the-user-42"
    assert authenticate(username="ada", password="chosen-by-the-user-42") is not None
