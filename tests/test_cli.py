"""Tests of the command line shell: version, help, error convention."""

from __future__ import annotations

import subprocess
import sys

import pytest

from interfpred import __version__
from interfpred.cli import build_parser, main


def test_version(capsys):
    try:
        code = main(["--version"])
    except SystemExit as exc:  # argparse's version action exits; a returned status must be 0 as well
        code = exc.code
    assert code == 0
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


@pytest.mark.parametrize("argv, prefix, full", [
    (["evaluate", "--model", "m.json", "--trace", "t.csv"], "--model", "--model-file"),
    (["predict", "--model-file", "m.json", "--quantile", "0.9", "--out", "p.csv"], "--quantile", "--quantiles"),
    (["reproduce", "--see", "3"], "--see", "--seed"),
])
def test_an_option_is_taken_by_its_full_name_only(capsys, argv, prefix, full):
    assert build_parser().parse_args([full if a == prefix else a for a in argv]).command == argv[0]
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(argv)
    assert exc.value.code == 2
    assert f"unrecognized arguments: {prefix}" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["evaluate", "--measurements", "dataset:gavel_v100"],
    ["predict", "--measurements", "dataset:gavel_v100", "--out", "p.csv"],
])
def test_model_file_is_required(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("interfpred: error: --model-file is required")


def _help(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args([*argv, "--help"])
    assert exc.value.code == 0
    return capsys.readouterr().out


def test_docs_name_every_flag_of_every_command(capsys):
    import pathlib
    import re

    doc = (pathlib.Path(__file__).parent.parent / "docs" / "cli.md").read_text()
    sections = {m.group(1): m.start() for m in re.finditer(r"^## `interfpred ([\w-]+)`", doc, flags=re.M)}
    starts = sorted(sections.values()) + [len(doc)]
    names = re.findall(r"^    ([\w-]+)", _help(capsys, []), re.M)  # the COMMAND list
    assert sorted(names) == sorted(sections)
    for name in names:
        start = sections[name]
        text = doc[start:starts[starts.index(start) + 1]]
        flags = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", _help(capsys, [name]))) - {"--help"}
        assert flags, name
        missing = sorted(f for f in flags if f not in text)
        assert not missing, (name, missing)
