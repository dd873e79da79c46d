"""The home page in a real browser: content, Redis status (to staff), and signing in with the login form."""
import pytest

from tests.browser.live_stack import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def live_home(live_server, settings, redis_url):
    settings.REDIS_URL = redis_url
    return live_server.url + "/"


def test_home_page_shows_the_product_and_redis_status_to_staff(page, live_home, live_server, django_user_model):
    page.goto(live_home)
    assert page.title() == "Evolutionary NAS"
    assert page.locator("h1").inner_text() == "Distributed evolutionary neural architecture search"
    assert page.locator("#system-status").count() == 0  # a stranger sees no infrastructure
    staff = django_user_model.objects.create_user(username="root", password="a-long-password-1", is_staff=True)
    sign_in(page, live_server.url, staff)
    page.goto(live_home)
    status = page.locator("#system-status dd.ok").first
    assert "reachable" in status.inner_text()
    # The stylesheet is served and applied (the top bar is dark), not a bare unstyled page.
    colour = page.locator("header.topbar").evaluate("el => getComputedStyle(el).backgroundColor")
    assert colour == "rgb(20, 33, 61)"


def test_sign_in_with_the_form(page, live_home, django_user_model, settings):
    from webapp.services import lifecycle
    from benchmarks.bulk import bulk_search

    ada = django_user_model.objects.create_user(username="ada", password="a-long-password-1")
    bulk_search(ada, 40, name="digits, regularized")
    lifecycle.create_search(ada, "the same with nsga2", {"strategy": {"name": "nsga2"}})
    page.goto(live_home)
    page.get_by_role("link", name="Sign in").first.click()
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password]", "wrong-password")
    page.click("button[type=submit]")
    # Wait for the answer to the POST: content() during the navigation can be empty.
    assert "Please enter a correct username and password" in page.locator(".errorlist").first.inner_text()
    assert page.locator(".errorlist").count() == 1  # said once
    page.fill("input[name=password]", "a-long-password-1")
    page.click("button[type=submit]")
    page.wait_for_url(live_home)
    assert page.locator(".who").inner_text() == "ada"
    # Their latest searches, newest first, with status and progress.
    rows = page.locator("#recent-searches tbody tr")
    assert rows.count() == 2 and "the same with nsga2" in rows.nth(0).inner_text()
    assert "running" in rows.nth(1).inner_text() and "40/41" in rows.nth(1).inner_text()
    # The README's screenshot comes from here (copied from the state folder by hand when the page changes).
    shots = settings.STATE_DIR / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1100, "height": 560})
    page.screenshot(path=str(shots / "home.png"))
    assert (shots / "home.png").stat().st_size > 10_000
