"""The run command's first user: created once, its password shown once, or taken from the environment."""
import pytest
from django.contrib.auth import authenticate
from django.test import RequestFactory

from webapp.stack.users import ensure_local_user

pytestmark = pytest.mark.django_db


def sign_in(username: str, password: str):
    """As the sign-in page does: the throttle (django-axes) needs the request."""
    return authenticate(RequestFactory().post("/accounts/login/"), username=username, password=password)


def test_first_run_creates_a_superuser_and_returns_its_password_once(monkeypatch):
    monkeypatch.delenv("NAS_ADMIN_PASSWORD", raising=False)
    password = ensure_local_user("admin")
    assert password and len(password) >= 12
    user = sign_in("admin", password)
    assert user is not None and user.is_superuser
    assert ensure_local_user("admin") is None  # the second run neither creates nor reveals anything


def test_password_from_the_environment(monkeypatch):
    monkeypatch.setenv("NAS_ADMIN_PASSWORD", "chosen-by-the-user-42")
    assert ensure_local_user("ada") == "chosen-by-the-user-42"
    assert sign_in("ada", "chosen-by-the-user-42") is not None
