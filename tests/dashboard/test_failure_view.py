"""The individual's page says why it failed (issue 34 item 2), and never shows a secret."""
from __future__ import annotations

from webapp.searches.models import Individual


def test_the_page_of_a_failed_individual_shows_type_message_traceback_node_device_and_peak(owner_client, search,
                                                                                         settings, monkeypatch):
    signing_key = settings.SECRET_KEY  # changing it would void the session
    assert len(signing_key) >= 6
    settings.NAS_TASK_KEY = "the-task-key-4242"
    monkeypatch.setenv("MY_API_TOKEN", "token-from-the-environment")
    individual = Individual.objects.get(search=search, number=3)
    individual.failure, individual.node, individual.device, individual.slot = "error", "gpu7", "cuda:1", "gpu7/cuda:1/0"
    individual.message = (
        f"RuntimeError: cannot reach redis://:the-task-key-4242@db:6379 with {signing_key} and "
        "token-from-the-environment\nTraceback (last 2 frames):\n  evaluators/training.py:88 in fit: loss.backward()\n"
        "  /usr/lib/python3/dist-packages/torch/autograd/__init__.py:200 in backward: run()")
    individual.metrics = {**(individual.metrics or {}), "peak_memory_bytes": 1_500_000_000}
    individual.save()
    page = owner_client.get(f"/searches/{search.pk}/individuals/3/").content.decode()
    assert 'id="why-failed"' in page
    assert "<code>RuntimeError</code>" in page and "cannot reach redis://[redacted]@db:6379" in page
    assert "evaluators/training.py:88 in fit: loss.backward()" in page
    assert "__init__.py:200 in backward" in page and "/usr/lib" not in page
    assert "gpu7 / cuda:1" in page and "1.50 GB" in page
    for secret in (signing_key, "the-task-key-4242", "token-from-the-environment"):
        assert secret not in page


def test_a_done_individual_has_no_failure_panel(owner_client, search):
    page = owner_client.get(f"/searches/{search.pk}/individuals/0/").content.decode()
    assert 'id="why-failed"' not in page
