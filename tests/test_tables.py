"""The one table formatter: alignment, units in the header, percent at the edge, missing values."""

from __future__ import annotations

import numpy as np
import pytest

from interfpred.evaluation.text_tables import MISSING, Column, format_cell, markdown_table, percent, text_table


def test_numbers_right_aligned_text_left_aligned_under_one_rule():
    out = text_table(["method", "MSE"], [["RLS", 0.5], ["baseline: pair mean", 12.25]]).splitlines()
    assert out[0] == "method".ljust(19) + "  " + "MSE".rjust(5)
    assert out[1] == "-" * 19 + "  " + "-" * 5
    assert out[2] == "RLS".ljust(19) + "  " + "0.5".rjust(5)     # text pads right, numbers pad left
    assert out[3] == "baseline: pair mean  12.25"
    assert len({len(line) for line in out}) == 1          # every line as wide as the rule


def test_the_unit_is_in_the_header_and_a_percent_column_shows_fractions_times_100():
    rows = [["a", 0.0612, 0.4402], ["b", 1.042, 0.0]]
    out = text_table(["method", percent("MAPE"), Column("within 10 %", unit="% of rows", scale=100.0)], rows)
    header, _, a, b = out.splitlines()
    assert header.split("  ")[0] == "method" and "MAPE (%)" in header and header.endswith("within 10 % (% of rows)")
    assert a.split() == ["a", "6.12", "44.02"] and b.split() == ["b", "104.2", "0"]
    assert rows[0][1] == 0.0612                           # the data passed in is not changed


def test_missing_values_show_as_a_dash_and_keep_the_column_numeric():
    for missing in (None, float("nan"), np.float64("nan")):
        out = text_table(["k", percent("MAPE", spec=".2f")], [["x", missing], ["y", 0.25]]).splitlines()
        assert out[2] == "x" + " " * 9 + MISSING           # right aligned like the numbers
        assert out[3] == "y     25.00"
    assert format_cell(float("nan")) == MISSING == "-"


def test_markdown_marks_numeric_columns_right_aligned():
    md = markdown_table(["method", percent("MAPE"), ""], [["RLS", 0.05, "chosen"], ["SGD", np.nan, ""]])
    assert md.splitlines() == ["| method | MAPE (%) |  |", "|---|---:|---|", "| RLS | 5 | chosen |",
                               "| SGD | - |  |"]


def test_cells_keep_integers_numpy_scalars_and_the_significant_digits():
    out = text_table(["n", "x"], [[np.int64(1200), np.float32(0.5)], [3, 123456.0]], digits=3)
    assert out.splitlines()[2:] == ["1200  " + "0.5".rjust(8), "   3  1.23e+05"]
    assert format_cell(True) == "True" and format_cell(0.000123456) == "0.0001235"
    assert Column("x", spec=".1f").show(2) == "2.0" and Column("x", digits=2).show(0.12345) == "0.12"


def test_a_row_of_the_wrong_width_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"table row 1 has 1 cells for 2 columns"):
        text_table(["a", "b"], [[1, 2], [3]])
