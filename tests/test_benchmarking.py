"""The benchmark table library and the ``interfpred bench`` subcommand (correctness, not speed)."""

import math
import re

import pytest

from interfpred import RLS, OnlineSGD
from interfpred._core.params import parse_params
from interfpred.cli import main
from interfpred.errors import InterfpredError
from interfpred.experiments.benchmarking import format_bench, parse_param, run_bench

COLUMNS = ("predict_one", "update_one", "predict_batch", "update_batch")


def parse_table(text):
    """The rows of format_bench's table: (name, d, {column: (us, ratio)}), '-' read as NaN; columns are
    two or more spaces apart, each cell within its header's span."""
    lines = text.splitlines()
    split = re.compile(r"\s{2,}")
    assert split.split(lines[0]) == ["predictor", "d", *(w for c in COLUMNS for w in (f"{c} (us)", "x RLS"))]
    assert set(lines[1]) <= {"-", " "} and len(lines[1]) >= len(lines[0])
    rows = []
    for line in lines[2:]:
        name, d, *values = split.split(line.strip())
        assert len(values) == 2 * len(COLUMNS), line
        cells = {c: tuple(math.nan if v == "-" else float(v) for v in values[2 * k:2 * k + 2])
                 for k, c in enumerate(COLUMNS)}
        rows.append((name, int(d), cells))
    return rows


def test_run_bench_rows_and_ratios():
    rows = run_bench(ds=[4], predictors=[RLS(), OnlineSGD()], n=30, repeats=1, peers=True)
    names = [r.name for r in rows]
    assert names[:2] == ["RLS()", "OnlineSGD()"]
    assert "river LinearRegression" in names and "sklearn SGDRegressor" in names
    for r in rows:
        assert r.update_one > 0 and r.predict_one > 0
    table = parse_table(format_bench(rows))
    assert [(name, d) for name, d, _ in table] == [(r.name, 4) for r in rows]
    rls = rows[0]
    for (name, _, cells), r in zip(table, rows):
        for c in COLUMNS:
            us, ratio = cells[c]
            value = getattr(r, c)
            if math.isnan(value):
                assert math.isnan(us) and math.isnan(ratio)
                continue
            assert us == pytest.approx(value, abs=1e-3)
            assert ratio == pytest.approx(value / getattr(rls, c), abs=0.05)
        if name == "RLS()":
            assert [cells[c][1] for c in COLUMNS] == pytest.approx([1.0] * 4)
    with pytest.raises(InterfpredError, match="n must be"):
        run_bench(ds=[3], n=0)


def test_parse_param():
    assert parse_param("delta=10") == ("delta", 10)
    assert parse_param("fit_intercept=False") == ("fit_intercept", False)
    assert parse_params(["a=1", "b=none", "a=x"]) == {"a": "x", "b": None}
    with pytest.raises(InterfpredError, match="name=value"):
        parse_param("oops")


def test_cli_bench(capsys):
    assert main(["bench", "--widths", "3", "--calls", "20", "--no-peers", "--predictor", "online_sgd",
                 "--param", "learning_rate=0.1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("first RLS update+predict in this process") and out[0].endswith(" ms")
    table = parse_table("\n".join(out[1:]))
    assert [(name, d) for name, d, _ in table] == [("RLS()", 3), ("OnlineSGD(learning_rate=0.1)", 3)]
    assert all(us > 0 for _, _, cells in table for us, _ in cells.values())
    assert main(["bench", "--widths", "3", "--calls", "5", "--no-peers", "--param", "forgetting=2"]) == 2
    assert "forgetting" in capsys.readouterr().err


def test_run_bench_says_which_width_of_how_many():
    from interfpred import RLS
    from interfpred.experiments.benchmarking import run_bench

    said: list[str] = []
    rows = run_bench(ds=[3, 5], predictors=[RLS()], n=20, repeats=1, peers=False, progress=said.append)
    assert said == ["width 1 of 2 (d=3)", "width 2 of 2 (d=5), 1 rows measured"] and len(rows) == 2
