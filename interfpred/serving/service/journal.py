"""Durable state of ``interfpred serve``: a snapshot and an fsynced append-only log, replayed on start.

The state folder holds ``snapshot.json`` (written atomically: a temporary file, fsynced, renamed
over the old one, the folder fsynced) and ``log.jsonl``, one event a line: its CRC-32, a space,
its JSON. :meth:`Journal.append` returns only once the line is on disk (``fsync``), so an event
the service has acknowledged survives a crash, ``kill -9`` or power loss. A crash while a line is
being written leaves at most that last line torn; :meth:`Journal.open` drops it (it was never
acknowledged) and cuts the file back to the last whole line. A line that fails its CRC anywhere
else is damage the journal cannot explain, and is refused naming the line. ``lock`` keeps a
second server off the same folder while one runs.

Examples
--------
>>> import tempfile
>>> folder = tempfile.mkdtemp()
>>> j = Journal(folder)
>>> j.open()
(None, [])
>>> j.append({"seq": 1, "op": "start"})
>>> j.close()
>>> with open(f"{folder}/log.jsonl", "a") as fh:    # a crash in the middle of the next line
...     _ = fh.write('0badc0de {"seq": 2, "op"')
>>> j = Journal(folder)
>>> j.open()
(None, [{'seq': 1, 'op': 'start'}])
>>> j.close()
"""

from __future__ import annotations

import contextlib
import json
import os
import zlib
from pathlib import Path
from typing import IO, Any

from interfpred._core.atomic import atomic_write_text, recover
from interfpred.errors import InterfpredError

__all__ = ["Journal"]

SNAPSHOT = "snapshot.json"
LOG = "log.jsonl"
LOCK = "lock"


def _line(record: dict[str, Any]) -> bytes:
    text = json.dumps(record, separators=(",", ":"), allow_nan=False).encode()
    return b"%08x %s\n" % (zlib.crc32(text), text)


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Journal:
    """The snapshot and the log in one folder (created if missing)."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self._log: IO[bytes] | None = None
        self._lock_fd: int | None = None

    def open(self) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """Lock the folder; return the snapshot (None before the first) and the log's records after it.

        A torn last line is cut off; the log is then open for :meth:`append`.
        """
        import fcntl

        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise InterfpredError(f"{self.folder}: another interfpred serve holds this state folder") from None
        self._lock_fd = fd
        snap_path = self.folder / SNAPSHOT
        recover(snap_path)        # a snapshot half-written by a killed server: its temporary file goes
        snapshot = None
        if snap_path.exists():
            try:
                snapshot = json.loads(snap_path.read_bytes())
            except ValueError as exc:
                raise InterfpredError(f"{snap_path}: not a snapshot ({exc})") from None
        path = self.folder / LOG
        records: list[dict[str, Any]] = []
        good = 0
        if path.exists():
            data = path.read_bytes()
            pos = 0
            while pos < len(data):
                end = data.find(b"\n", pos)
                if end < 0:
                    break                       # torn last line: never acknowledged
                rec = self._parse(data[pos:end])
                if rec is None:
                    if data.find(b"\n", end + 1) >= 0:
                        raise InterfpredError(f"{path} line {len(records) + 1}: damaged (CRC or JSON), "
                                              "and not the last line: the log cannot be replayed")
                    break
                records.append(rec)
                pos = good = end + 1
        self._log = open(path, "ab")   # noqa: SIM115 (held open until close)
        if self._log.tell() != good:
            self._log.truncate(good)
            self._log.seek(good)
            os.fsync(self._log.fileno())
        _fsync_folder(self.folder)
        return snapshot, records

    @staticmethod
    def _parse(line: bytes) -> dict[str, Any] | None:
        crc, _, text = line.partition(b" ")
        try:
            if int(crc, 16) != zlib.crc32(text):
                return None
            rec = json.loads(text)
        except ValueError:
            return None
        return rec if isinstance(rec, dict) else None

    @property
    def is_open(self) -> bool:
        """Whether :meth:`open` was called and :meth:`close` not yet."""
        return self._log is not None

    def append(self, record: dict[str, Any]) -> None:
        """Write ``record`` as one line and return once it is on disk."""
        if self._log is None:
            raise InterfpredError("the journal is not open")
        self._log.write(_line(record))
        self._log.flush()
        os.fdatasync(self._log.fileno())

    def write_snapshot(self, snapshot: dict[str, Any]) -> None:
        """Replace the snapshot atomically, then empty the log (every record in it is in the snapshot)."""
        if self._log is None:
            raise InterfpredError("the journal is not open")
        atomic_write_text(self.folder / SNAPSHOT, json.dumps(snapshot, separators=(",", ":"), allow_nan=False))
        _fsync_folder(self.folder)
        self._log.truncate(0)
        self._log.seek(0)
        os.fsync(self._log.fileno())

    def close(self) -> None:
        """Close the log and release the folder."""
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)
            self._lock_fd = None
