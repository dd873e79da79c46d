"""Sign-in throttling (django-axes with webapp.dashboard.lockout) against the real Redis: failed sign-ins lock
the account (per account) and the address (per address), the right password included, with a 429 that says
when to retry; a success resets its account's count; the counts are shared by every web process; an unreachable
cache lets sign-ins through."""
from __future__ import annotations

import itertools
import subprocess
from datetime import timedelta

import pytest
import redis
from asgiref.sync import async_to_sync
from django.test import AsyncClient, Client
from django.urls import reverse

from tests.conftest import manage, manage_env
from tests.engine.conftest import wait_until
from webapp.settings.env import redis_cache

PREFIX = "nas-login"  # the settings' own, so that another process started by a test counts in the same keys
_addresses = itertools.count(1)


@pytest.fixture
def login_cache(settings, redis_url):
    """The ``login`` cache in the session's Redis, emptied of this test's counters afterwards."""
    settings.CACHES = {**settings.CACHES, "login": redis_cache(redis_url, PREFIX)}
    yield
    client = redis.Redis.from_url(redis_url)
    keys = client.keys(f"{PREFIX}:*")
    if keys:
        client.delete(*keys)


@pytest.fixture
def ada(django_user_model):
    return django_user_model.objects.create_user("ada", password="right-password-1")


def address() -> str:
    """A fresh client address for each use, so tests never share an address's count."""
    number = next(_addresses)
    return f"10.1.{number // 250}.{number % 250 + 1}"


def sign_in(client: Client, username: str, password: str, remote: str):
    return client.post(reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=remote)


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.mark.django_db
def test_twenty_wrong_passwords_lock_the_account_and_the_right_one_is_refused(client, ada, login_cache, settings):
    settings.NAS_LOGIN_FAILURES = 5
    remote = address()
    answers = [sign_in(client, "ada", f"wrong-{i}", remote) for i in range(20)]
    assert [a.status_code for a in answers[:4]] == [200] * 4
    assert "Please enter a correct username and password" in answers[0].content.decode()
    assert {a.status_code for a in answers[4:]} == {429}  # the fifth failure locks it
    refused = sign_in(client, "ada", "right-password-1", address())  # another address: the account is locked
    assert refused.status_code == 429 and not signed_in(client)
    text = refused.content.decode()
    assert "Too many failed sign-ins" in text and "try again in" in text
    assert 0 < int(refused["Retry-After"]) <= settings.NAS_LOGIN_LOCKOUT
    assert 'name="password"' in text  # the sign-in page itself, to try again from


@pytest.mark.django_db
def test_the_lockout_page_under_asgi(ada, login_cache, settings):
    """The web server runs Django's asynchronous handler, where axes's middleware takes another path."""
    settings.NAS_LOGIN_FAILURES = 2
    client = AsyncClient()  # always from 127.0.0.1: the account's limit is the one reached
    post = async_to_sync(client.post)
    assert post(reverse("login"), {"username": "ada", "password": "wrong"}).status_code == 200
    refused = post(reverse("login"), {"username": "ada", "password": "wrong"})
    assert refused.status_code == 429 and "try again in" in refused.content.decode()
    assert 0 < int(refused["Retry-After"]) <= settings.NAS_LOGIN_LOCKOUT


@pytest.mark.django_db
def test_an_address_that_fails_too_often_is_locked_for_every_account(client, ada, login_cache, settings,
                                                                     django_user_model):
    settings.NAS_LOGIN_ADDRESS_FAILURES = 6
    remote = address()
    for i in range(6):  # one failure each for six accounts: no account reaches its own limit
        sign_in(client, f"guess-{i}", "nope", remote)
    assert sign_in(client, "ada", "right-password-1", remote).status_code == 429 and not signed_in(client)
    assert sign_in(client, "ada", "right-password-1", address()).status_code == 302 and signed_in(client)


@pytest.mark.django_db
def test_a_successful_sign_in_resets_the_account_count(client, ada, login_cache, settings):
    settings.NAS_LOGIN_FAILURES = 5
    remote = address()
    for _ in range(2):
        for i in range(4):
            assert sign_in(client, "ada", f"wrong-{i}", remote).status_code == 200
        assert sign_in(client, "ada", "right-password-1", remote).status_code == 302
        client.logout()


@pytest.mark.django_db
def test_a_successful_sign_in_leaves_the_address_count(client, ada, login_cache, settings):
    """One's own account cannot be used to reset the count of guesses at others."""
    settings.NAS_LOGIN_ADDRESS_FAILURES = 6
    remote = address()
    for i in range(5):
        sign_in(client, f"guess-{i}", "nope", remote)
    assert sign_in(client, "ada", "right-password-1", remote).status_code == 302
    client.logout()
    assert sign_in(client, "guess-5", "nope", remote).status_code == 429  # the sixth from this address


@pytest.mark.django_db
def test_the_lock_expires(client, ada, login_cache, settings):
    settings.NAS_LOGIN_FAILURES, settings.AXES_COOLOFF_TIME = 2, timedelta(seconds=1)
    remote = address()
    sign_in(client, "ada", "wrong", remote)
    refused = sign_in(client, "ada", "wrong", remote)
    assert refused.status_code == 429 and refused["Retry-After"] == "1"
    # Each refused attempt starts the cool-off again: tries must be further apart than it.
    wait_until(lambda: sign_in(client, "ada", "right-password-1", remote).status_code == 302, timeout=60,
               interval=1.5, message="a sign-in after the lock expired")


@pytest.mark.django_db
def test_the_admin_sign_in_is_throttled_too(client, django_user_model, login_cache, settings):
    django_user_model.objects.create_user("root", password="right-password-1", is_staff=True, is_superuser=True)
    settings.NAS_LOGIN_FAILURES = 3
    remote = address()
    for _ in range(3):
        client.post("/admin/login/", {"username": "root", "password": "wrong"}, REMOTE_ADDR=remote)
    right = {"username": "root", "password": "right-password-1"}
    refused = client.post("/admin/login/", right, REMOTE_ADDR=remote)
    assert refused.status_code == 429 and "Retry-After" in refused and not signed_in(client)


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_failures_in_another_web_process_count(client, ada, login_cache, settings, redis_url):
    """Several web processes share one count: failures made in a separate process (as another web process of the
    compose file would) add to those made here."""
    settings.NAS_LOGIN_FAILURES = 5
    remote = address()
    for i in range(3):
        assert sign_in(client, "ada", f"wrong-{i}", remote).status_code == 200
    script = ("from django.contrib.auth import authenticate\n"
              "from django.test import RequestFactory\n"
              f"request = lambda: RequestFactory().post('/accounts/login/', REMOTE_ADDR={address()!r})\n"
              "print([authenticate(request(), username='ada', password='wrong') for _ in range(2)])")
    env = manage_env(redis_url, settings.STATE_DIR, NAS_USE_TEST_DB="1", NAS_LOGIN_FAILURES="5")
    other = subprocess.run(manage("shell", "-c", script), env=env, capture_output=True, text=True, timeout=120)
    assert other.returncode == 0 and "[None, None]" in other.stdout, other.stdout + other.stderr
    refused = sign_in(client, "ada", "right-password-1", address())
    assert refused.status_code == 429 and not signed_in(client)


@pytest.mark.django_db
def test_an_unreachable_cache_lets_sign_ins_through(client, ada, settings, caplog):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.CACHES = {**settings.CACHES, "login": redis_cache(f"redis://127.0.0.1:{port}/0", PREFIX)}
    remote = address()
    assert sign_in(client, "ada", "wrong", remote).status_code == 200
    assert sign_in(client, "ada", "right-password-1", remote).status_code == 302 and signed_in(client)
    assert "login cache is unreachable" in caplog.text
