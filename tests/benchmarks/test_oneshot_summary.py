"""The one-shot benchmark's helpers: the noise ceiling and the summary's reading of both table formats."""
import math

import pytest

from benchmarks.oneshot_noise import ceiling
from benchmarks.oneshot_summary import cell, number, read_rows


def test_ceiling_is_one_for_a_noiseless_reference_and_zero_for_pure_noise():
    assert ceiling(1.0) == pytest.approx(1.0)
    assert ceiling(0.0) == 0.0
    assert ceiling(-0.2) == 0.0


def test_ceiling_is_above_the_agreement_of_two_trainings():
    # two noisy trainings agree less than either agrees with the truth
    for tau in (0.2, 0.4, 0.61, 0.8):
        assert tau < ceiling(tau) < 1.0
    assert ceiling(0.61) == pytest.approx(2 / math.pi * math.asin(math.sqrt(math.sin(math.pi * 0.61 / 2))))


def test_summary_reads_old_and_new_table_headers(tmp_path):
    old = tmp_path / "old.md"
    old.write_text("# t\n\n| seed | evolution final acc % | one-shot final acc % | Kendall tau [95% interval] over random "
                   "paths |\n| --- | --- | --- | --- |\n| 2 | 99.16 | 99.72 | 0.43 [0.13, 0.65] (n=20) |\n")
    new = tmp_path / "new.md"
    new.write_text("| seed | one-shot final acc % (points), paths by accuracy | Kendall tau, supernet accuracy vs "
                   "stand-alone (the check, n=20) |\n| --- | --- | --- |\n| 3 | 98.61 (-0.28) | 0.52 [0.2, 0.7] (n=20) |\n")
    (row,) = read_rows(old)
    assert number(cell(row, "oneshot")) == 99.72 and number(cell(row, "tau")) == 0.43
    (row,) = read_rows(new)
    assert number(cell(row, "oneshot")) == 98.61 and number(cell(row, "tau")) == 0.52
    assert cell(row, "noise") is None


def test_the_mean_of_two_trainings_raises_the_ceiling():
    from benchmarks.oneshot_tau import mean_ceiling

    assert mean_ceiling(0.37, 1) == pytest.approx(ceiling(0.37))
    assert ceiling(0.37) < mean_ceiling(0.37, 2) < mean_ceiling(0.37, 3) < 1.0
    assert mean_ceiling(0.0, 2) == 0.0 and mean_ceiling(1.0, 2) == pytest.approx(1.0)


def test_the_summary_names_the_phase_that_puts_the_pipeline_over_a_fifth_and_reads_the_checks(tmp_path, monkeypatch):
    import json

    from benchmarks import oneshot_summary

    row = {"seed": "2", "evolution search device-s": "129.8", "supernet device-s": "19.8",
           "path search device-s": "4.7", "final training device-s (evolution / one-shot)": "9.0 / 10.3"}
    assert oneshot_summary.phase_text(row) == "0.143 + 0.034 + 0.074"
    text = oneshot_summary.pipeline_text([("oneshot-seed2.md", row)])
    assert "seed 2 by 7.0 s" in text and "supernet 19.8 s (0.143)" in text
    paths = [{"supernet_accuracy": 0.9 + i / 200, "supernet_loss": 0.5 - i / 100,
              "trainings": [{"accuracy": 0.8 + i / 100, "loss": 0.6 - i / 50},
                            {"accuracy": 0.8 + (i % 7) / 100, "loss": 0.6 - (i % 5) / 50}]} for i in range(24)]
    (tmp_path / "oneshot-check-seed2.json").write_text(json.dumps(
        [{"seed": 2, "taus": {}, "paths": paths, "repeats": 2, "supernet_s": 20.0, "check_s": 500.0}]))
    monkeypatch.setattr(oneshot_summary, "RESULTS", tmp_path)
    part = oneshot_summary.check_part()
    assert "| 2 | 20 | 1.00 " in part[2] and "| 2 | 24 | 1.00 " in part[2]  # the first 20 paths, then all
    assert "(seed 2)" in part[3] and oneshot_summary.budget_part() == []
