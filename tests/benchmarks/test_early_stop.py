"""benchmarks/early_stop.py and early_stop_real.py: the accounting of where the curve pruner's epochs go, and
recordings of disjoint index ranges replayed as one pool (numpy only, no training)."""
import json

from benchmarks import early_stop, early_stop_real


def test_where_the_epochs_go_adds_up_to_the_epochs_trained():
    pool = early_stop.mixed_pool(0, "even", 40, 10)
    run = early_stop.replay(pool, "curve", early_stop.PRUNERS["curve"], 0, 4)
    where = run["where"]
    assert where["never bounded"] + where["bounded, went on"] + where["stopped"] == run["epochs"]
    assert run["first_epochs"] <= where["never bounded"]
    assert where["stops"] == 0 or where["stopped"] >= where["stops"]  # a stop comes after one epoch at least
    rows = early_stop.where({"none": [run], "curve": [run]})
    assert [r[0] for r in rows] == ["curve"]


def test_recordings_of_disjoint_ranges_replay_as_one_pool(tmp_path):
    parts = []
    for first, shape in ((0, "step"), (2, "cosine")):
        path = tmp_path / f"curves-{first}.json"
        path.write_text(json.dumps({"epochs": 3, "values": [[0.1, 0.2, 0.3], [0.2, 0.4, 0.5]], "shapes": [shape] * 2,
                                    "costs": [1.0, 3.0], "seconds": 5.0, "first": first, "complete": True}))
        parts.append(path)
    saved = early_stop_real.merged(parts)
    assert len(saved["values"]) == 4 and saved["seconds"] == 10.0 and saved["complete"]
    assert saved["shapes"] == ["step", "step", "cosine", "cosine"]
    pool = early_stop_real.pool_of(saved, 1)
    assert sorted(pool.shapes) == sorted(saved["shapes"]) and pool.steps == [1.0, 2.0, 3.0]


def test_a_pausing_pruner_counts_each_epoch_once_and_leaves_none_paused():
    """curve-pause on the simulated slots: a paused candidate frees its slot and is stopped or resumed from its
    epoch; every candidate ends trained or stopped, its epochs counted once, none beyond the budget."""
    pool = early_stop.mixed_pool(1, "even", 60, 10)
    run = early_stop.replay(pool, "curve-pause", early_stop.PRUNERS["curve-pause"], 1, 4)
    where = run["where"]
    assert where["paused"] > 0 and where["stopped while paused"] + where["resumed, then stopped"] <= where["paused"]
    assert where["stopped while paused"] + where["resumed, then stopped"] <= where["stops"]
    assert where["never bounded"] + where["bounded, went on"] + where["stopped"] == run["epochs"] <= 60 * 10
    assert run["review_us"] is not None
    rows = early_stop.where({"none": [run], "curve-pause": [run]})
    assert rows[0][0] == "curve-pause" and rows[0][-4] == f"{where['paused']:.1f}"
