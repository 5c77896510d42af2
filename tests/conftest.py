"""Fixtures shared by several test modules."""

from __future__ import annotations

import pytest

#: Executions per simulated set of the shared small report (the sections' test size).
SMALL_REPORT_EXECUTIONS = 400


@pytest.fixture(scope="session")
def small_report(tmp_path_factory):
    """``(out_dir, sections)`` of one small ``reproduce`` of every section (seed 2), made once per session.

    A reproduce takes minutes even at test sizes (E4 chooses the default fit inside every fold), so
    the tests that read its report (tests/test_reproduce.py) and its E4 section (tests/test_real.py)
    share it; each checks its own part.
    """
    from interfpred.experiments.reproduce import reproduce

    out = tmp_path_factory.mktemp("small_report") / "rep"
    sections = reproduce(out, executions=SMALL_REPORT_EXECUTIONS, seed=2, command="interfpred reproduce --test")
    return out, sections
