"""The search page's gang scaling panel: rows per (gang size, compression) from the individuals' recorded
metrics (``webapp.services.scaling``), and the page that shows or hides it."""
from __future__ import annotations

import pytest
from django.urls import reverse

from webapp.searches.models import Individual
from webapp.services.scaling import gang_scaling

pytestmark = pytest.mark.django_db


def gang(size: int, compression: str, steps: int, sent: int, dense: int, compute: float, communicate: float):
    return {"gang": str(size), "ranks": size, "compression": compression, "steps": steps, "bytes_sent": sent,
            "bytes_dense": dense, "timings": {"train": compute + communicate, "compute": compute,
                                              "communicate": communicate}}


#: number -> metrics written over the fixture's: #3 failed (left out); #6-#9 one device without a step count.
RECORDED = {
    0: {"steps": 10, "timings": {"train": 1.0}},  # 0.1 s per step
    1: {"steps": 20, "timings": {"train": 1.0}},  # 0.05 s per step
    2: gang(2, "segment_topk", 10, 2400, 80000, 0.4, 0.1),  # 0.05 s per step, 120 B of 4 kB per rank and step
    4: gang(2, "segment_topk", 20, 4800, 160000, 0.3, 0.2),  # 0.025 s per step, the same bytes per step
    5: gang(4, "none", 10, 100000, 100000, 0.25, 0.25),  # 0.05 s per step, 2.5 kB per rank and step
}


def record(search, recorded):
    for individual in Individual.objects.filter(search=search, number__in=recorded):
        individual.metrics = {**individual.metrics, **recorded[individual.number]}
        individual.save()


def test_rows_hold_the_means_per_gang_size_and_compression(search):
    record(search, RECORDED)
    scaling = gang_scaling(search)
    one, two, four = scaling["rows"]
    assert scaling["baseline"] == pytest.approx(0.075)
    assert (one["size"], one["compression"], one["evaluations"]) == (1, "none", 6)
    assert one["communicate_share"] == 0.0 and one["sent_per_step"] is None and one["speed"] == pytest.approx(1.0)
    assert (two["size"], two["compression"], two["evaluations"]) == (2, "segment_topk", 2)
    assert two["step_seconds"] == pytest.approx(0.0375) and two["speed"] == pytest.approx(2.0)
    assert two["communicate_share"] == pytest.approx(0.3)
    assert two["sent_per_step"] == pytest.approx(120) and two["dense_per_step"] == pytest.approx(4000)
    assert two["sent_share"] == pytest.approx(0.03)
    assert (four["size"], four["compression"], four["evaluations"]) == (4, "none", 1)
    assert four["speed"] == pytest.approx(1.5) and four["communicate_share"] == pytest.approx(0.5)
    assert four["sent_per_step"] == pytest.approx(2500) and four["sent_share"] == pytest.approx(1.0)


def test_the_page_shows_the_panel_only_for_a_search_with_gangs(owner_client, search):
    url = reverse("search-detail", args=[search.pk])
    assert gang_scaling(search) == {"rows": [], "baseline": None}
    assert 'id="gang-scaling"' not in owner_client.get(url).content.decode()
    record(search, RECORDED)
    html = owner_client.get(url).content.decode()
    assert 'id="gang-scaling"' in html and "segment_topk" in html and "2.00x (100% per device)" in html
    assert "120 B of 4.00 kB (3.00%)" in html and 'id="no-single"' not in html


def test_without_one_device_evaluations_the_panel_says_so(owner_client, search):
    record(search, {n: gang(2, "fp16", 10, 1000, 2000, 0.5, 0.5) for n in (0, 1, 2, 4, 5, 6, 7, 8, 9)})
    scaling = gang_scaling(search)
    assert [(r["size"], r["compression"], r["evaluations"]) for r in scaling["rows"]] == [(2, "fp16", 9)]
    assert scaling["rows"][0]["speed"] is None
    html = owner_client.get(reverse("search-detail", args=[search.pk])).content.decode()
    assert "No single-device evaluations to compare." in html
