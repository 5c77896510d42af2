"""The shared predictor contract (interfpred.evaluation.checks) over every registered predictor and parameter set."""

import pytest

from interfpred.evaluation.checks import _CHECKS
from interfpred.predictors import registered

CASES = [
    (cls, params)
    for _, cls in sorted(registered().items())
    for params in cls.contract_params()
]


@pytest.mark.parametrize("check", _CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("cls,params", CASES, ids=lambda v: v.__name__ if isinstance(v, type) else repr(v))
def test_contract(cls, params, check):
    check(cls(**params))
