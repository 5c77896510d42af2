"""A campaign's results log: one JSON object a line, appended and fsynced as each result comes.

The log is the campaign's memory: a campaign started again with ``resume`` reads it and skips
every window and profile it records. A process killed while writing leaves at most one partial
last line; reading drops it (and :class:`ResultsLog` cuts it off before appending), while a bad
line anywhere else is refused naming the file and line.

Examples
--------
>>> import pathlib, tempfile
>>> path = pathlib.Path(tempfile.mkdtemp()) / "runs.jsonl"
>>> log = ResultsLog(path)
>>> log.append({"type": "window", "key": "k1"})
>>> _ = open(path, "a").write('{"type": "win')          # a write cut short by a kill
>>> [r["key"] for r in read_log(path)]
['k1']
>>> ResultsLog(path).append({"type": "window", "key": "k2"})
>>> [r["key"] for r in read_log(path)]
['k1', 'k2']
"""

from __future__ import annotations

import json
import os
from typing import Any

from interfpred.errors import InputError

__all__ = ["ResultsLog", "read_log"]


def read_log(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of the log at ``path`` (none when it does not exist); a partial last line is dropped."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return []
    lines = text.split("\n")
    complete, last = lines[:-1], lines[-1]   # ``last`` is empty when the file ends with a newline
    del last                                 # a line without its newline was cut short: never read
    out = []
    for i, line in enumerate(complete, start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            raise InputError("is not a line of the results log (one JSON object a line)", path=path, line=i) from None
        if not isinstance(rec, dict):
            raise InputError("is not a JSON object", path=path, line=i)
        out.append(rec)
    return out


class ResultsLog:
    """Appends records to the log at ``path``, each written, flushed and fsynced before :meth:`append` returns."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        if os.path.exists(self.path):
            with open(self.path, "rb+") as fh:       # cut a partial last line left by a kill
                data = fh.read()
                keep = data.rfind(b"\n") + 1
                if keep != len(data):
                    fh.truncate(keep)
                    fh.flush()
                    os.fsync(fh.fileno())

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as a line, durably."""
        line = json.dumps(record, allow_nan=False, separators=(",", ":")) + "\n"
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
