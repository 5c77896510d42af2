"""The README's and the guide's runnable snippets run as written.

A fenced block whose info string holds the word ``runnable`` (```` ```bash runnable ````,
```` ```console runnable ````, ```` ```python runnable ````) is extracted and run, the blocks of one
page in order, in one scratch folder per page that holds a link to the repository's ``tests/data``:
a ``bash`` block is one ``interfpred`` command per line (a trailing ``\\`` continues it, ``#``
starts a comment), a ``console`` block the lines after ``$ ``, and the Python blocks of a page
share one namespace, like a doctest. A runnable block may only call ``interfpred``: what needs a GPU,
a profiler or an install stays unmarked. Pages list their blocks so that a block losing its mark
is noticed.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from interfpred.cli import main

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
#: The number of runnable blocks each page must hold (pages not named hold none).
EXPECTED = {"README.md": 3, "capture.md": 2, "embedding.md": 1, "measure.md": 1, "predictors.md": 1}


def runnable_blocks(text: str) -> list[tuple[str, str, int]]:
    """(language, code, line of the fence) of every block marked runnable, in page order."""
    out = []
    for m in _FENCE.finditer(text):
        words = m.group(1).split()
        if "runnable" in words:
            out.append((words[0], m.group(2), text.count("\n", 0, m.start()) + 1))
    return out


def shell_commands(lang: str, code: str) -> list[list[str]]:
    """The command lines of a bash or console block, split as the shell would."""
    lines, cur = [], ""
    for raw in code.splitlines():
        if lang == "console":
            if raw.startswith("$ "):
                cur = raw[2:]
            elif cur and raw.startswith(" "):
                cur += " " + raw.strip()
            else:
                continue
        else:
            cur += (" " if cur else "") + raw.strip()
        if cur.endswith("\\"):
            cur = cur[:-1]
            continue
        argv = shlex.split(cur, comments=True)
        cur = ""
        if argv:
            lines.append(argv)
    return lines


def test_the_extraction_finds_each_kind_of_block():
    text = ("x\n```bash runnable\ninterfpred a \\\n  --b c   # note\n```\n```python\nskip()\n```\n"
            "```console runnable\n$ interfpred d\noutput line\n$ interfpred e \\\n      f\n```\n")
    blocks = runnable_blocks(text)
    assert [(lang, line) for lang, _, line in blocks] == [("bash", 2), ("console", 9)]
    assert shell_commands(*blocks[0][:2]) == [["interfpred", "a", "--b", "c"]]
    assert shell_commands(*blocks[1][:2]) == [["interfpred", "d"], ["interfpred", "e", "f"]]


def test_every_page_holds_the_runnable_blocks_it_should():
    found = {p.name: len(runnable_blocks(p.read_text())) for p in PAGES}
    assert {k: v for k, v in found.items() if v} == EXPECTED


@pytest.mark.parametrize("page", [p for p in PAGES if p.name in EXPECTED], ids=lambda p: p.name)
def test_runnable_snippets_run_as_written(page, tmp_path, monkeypatch, capsys):
    (tmp_path / "tests").mkdir()
    os.symlink(ROOT / "tests" / "data", tmp_path / "tests" / "data")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__snippet__"}
    for lang, code, line in runnable_blocks(page.read_text()):
        where = f"{page.name} line {line}"
        if lang == "python":
            exec(compile(code, where, "exec"), namespace)
            continue
        assert lang in ("bash", "console"), f"{where}: a runnable block is bash, console or python, not {lang}"
        for argv in shell_commands(lang, code):
            assert argv[0] == "interfpred", f"{where}: a runnable shell block runs interfpred only: {argv}"
            code_ = main(argv[1:])
            err = capsys.readouterr().err
            assert code_ == 0, f"{where}: {shlex.join(argv)} exited {code_}: {err}"
