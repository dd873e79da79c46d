"""The learning-curves chart and the pruning summary: data in, figure dict or text out, no browser."""
from __future__ import annotations

from webapp.dashboard.curve_chart import Z90, learning_curves
from webapp.searches.pruning_stats import describe, saved_epochs

ROWS = [
    {"number": 0, "status": "done", "prune": {},
     "curve": [{"epoch": 1, "val_accuracy": 0.5}, {"epoch": 2, "val_accuracy": 0.7}, {"epoch": 3, "val_accuracy": 0.8}]},
    {"number": 1, "status": "pruned",
     "prune": {"stop": True, "predicted": 0.6, "spread": 0.02, "reason": "predicted 0.6 +- 0.033 at epoch 3"},
     "curve": [{"epoch": 1, "val_accuracy": 0.3}, {"epoch": 1.5, "val_accuracy": 0.4}]},
    {"number": 2, "status": "running", "prune": {}, "curve": [{"epoch": 1, "val_accuracy": 0.45}]},
]


def test_every_curve_is_a_trace_and_a_pruned_one_has_its_dashed_prediction():
    figure = learning_curves(ROWS, 3.0)
    by_name = {trace["name"]: trace for trace in figure["data"]}
    assert set(by_name) == {"#0", "#1", "#1 predicted", "#2"}
    assert by_name["#0"]["y"] == [0.5, 0.7, 0.8] and by_name["#2"]["x"] == [1]
    assert by_name["#1"]["line"]["color"] != by_name["#0"]["line"]["color"] != by_name["#2"]["line"]["color"]
    predicted = by_name["#1 predicted"]
    assert predicted["line"]["dash"] == "dash"
    assert predicted["x"] == [1.5, 3.0] and predicted["y"] == [0.4, 0.6]
    assert abs(predicted["error_y"]["array"][1] - Z90 * 0.02) < 1e-12
    assert "predicted 0.6" in predicted["hovertemplate"]


def test_an_empty_search_shows_the_empty_note():
    figure = learning_curves([], 3.0)
    assert figure["data"] == [] and figure["layout"]["annotations"][0]["text"] == "No learning curve yet"


def test_the_pruning_summary_counts_epochs_saved_and_false_stops():
    stats = {"pruning": {"pruner": "curve", "epochs_trained": 150.0, "epochs_budget": 200.0, "pruned": 7,
                         "audit": {"audited": 3, "finished": 2, "false_stops": 1, "rate": 0.5}}}
    saved = saved_epochs(stats)
    assert saved["saved"] == 50.0 and saved["share"] == 0.25 and saved["false_stop_rate"] == 0.5
    assert describe(stats) == "pruned 7: 150 of 200 epochs trained (25% saved); false stops 50% of 2 audited"
    assert saved_epochs({}) is None and describe(None) == ""


def test_a_stated_interval_is_drawn_as_it_is_asymmetric():
    rows = [{**ROWS[1], "prune": {**ROWS[1]["prune"], "low": 0.5, "high": 0.9}}]
    error = next(t for t in learning_curves(rows, 3.0)["data"] if t["name"] == "#1 predicted")["error_y"]
    assert error["symmetric"] is False
    assert abs(error["array"][1] - 0.3) < 1e-12 and abs(error["arrayminus"][1] - 0.1) < 1e-12


def test_a_curve_of_one_epoch_is_a_visible_point():
    """Issue 36, item 4: trained for one epoch, each individual's curve is one point: drawn as a marker, and the
    panel never says "No results yet" when there are curves."""
    rows = [{"number": n, "status": "done", "prune": {}, "curve": [{"epoch": 1, "val_accuracy": 0.8 + n / 100}]}
            for n in range(10)]
    figure = learning_curves(rows, 1.0)
    assert len(figure["data"]) == 10 and "annotations" not in figure["layout"]
    assert all("markers" in trace["mode"] and trace["x"] == [1] for trace in figure["data"])
    assert figure["layout"]["yaxis"]["autorangeoptions"] == {"clipmin": -0.03, "clipmax": 1.03}


def test_the_finished_event_carries_the_curve_a_page_never_saw_grow():
    from types import SimpleNamespace

    from webapp.searches.broadcast import finished_event

    individual = SimpleNamespace(pk=7, number=3, status="done", fitness=0.8, key="k", description="d", generation=0,
                                 operator="", role="search", node="n", device="cpu", slot="n/cpu/0", failure="", attempts=1,
                                 metrics={}, dispatched=None, started=None, finished=None, duration=1.0,
                                 curve=[{"epoch": 1, "val_accuracy": 0.8, "val_loss": 0.4}, {"epoch": 2}])
    assert finished_event(individual)["curve"] == [[1, 0.8]]
