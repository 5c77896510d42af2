"""Tests of the command line shell: version, help, error convention."""

from __future__ import annotations

import subprocess
import sys

from interfpred import __version__
from interfpred.cli import main


def test_version(capsys):
    try:
        main(["--version"])
    except SystemExit as exc:
        assert exc.code == 0
    assert capsys.readouterr().out.strip() == f"interfpred {__version__}"


def test_no_command_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    assert "usage: interfpred" in capsys.readouterr().err


def test_unknown_command_is_one_line_exit_2():
    proc = subprocess.run([sys.executable, "-m", "interfpred", "no-such-command"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("interfpred: error:")


def test_missing_input_file_is_one_readable_line(tmp_path, capsys):
    missing = tmp_path / "nope.csv"
    assert main(["ingest", str(missing), "--gpu", "l4", "--model", "m", "--batch-size", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"interfpred: error: {missing}: No such file or directory"]
