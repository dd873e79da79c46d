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
