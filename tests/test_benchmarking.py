"""The benchmark table library and the ``interfpred bench`` subcommand (correctness, not speed)."""

import pytest

from interfpred import RLS, OnlineSGD
from interfpred.benchmarking import format_bench, parse_param, run_bench
from interfpred.cli import main
from interfpred.errors import InterfpredError


def test_run_bench_rows_and_ratios():
    rows = run_bench(ds=[4], predictors=[RLS(), OnlineSGD()], n=30, repeats=1, peers=True)
    names = [r.name for r in rows]
    assert names[:2] == ["RLS()", "OnlineSGD()"]
    assert "river LinearRegression" in names and "sklearn SGDRegressor" in names
    for r in rows:
        assert r.update_one > 0 and r.predict_one > 0
    table = format_bench(rows)
    assert table.splitlines()[2].split()[:2] == ["RLS()", "4"]
    assert "1.0" in table.splitlines()[2]
    with pytest.raises(InterfpredError, match="n must be"):
        run_bench(ds=[3], n=0)


def test_parse_param():
    assert parse_param("delta=10") == ("delta", 10)
    assert parse_param("fit_intercept=False") == ("fit_intercept", False)
    with pytest.raises(InterfpredError, match="name=value"):
        parse_param("oops")


def test_cli_bench(capsys):
    assert main(["bench", "--d", "3", "--n", "20", "--no-peers", "--predictor", "online_sgd",
                 "--param", "learning_rate=0.1"]) == 0
    out = capsys.readouterr().out
    assert "OnlineSGD(learning_rate=0.1)" in out and "RLS()" in out and "first RLS" in out
    assert main(["bench", "--d", "3", "--n", "5", "--no-peers", "--param", "forgetting=2"]) == 2
    assert "forgetting" in capsys.readouterr().err
