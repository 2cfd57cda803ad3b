"""When a corpus folder was last indexed, and when it last changed: one small JSON file per folder, beside the
embedding cache (`<cache>/engine/index-<folder hash>.json`).

The embedding cache itself is keyed by content hash and cannot say which corpus it holds nor since when; this
record can, so the console can say "indexed 10:42 · last changed yesterday" after a start or a `main.py index`.
It is written whole (a temporary file, then os.replace), so a reader never sees half of it; a missing, corrupt
or foreign file is read as "never indexed", never an error.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("engine.ingest")

VERSION = 1


@dataclass(frozen=True)
class IndexRecord:
    folder: str                # the corpus folder, resolved
    fingerprint: str           # Corpus.fingerprint when it was indexed
    files: int
    passages: int
    code_passages: int
    skipped: int               # files skipped (which and why: the index's report, not kept here)
    texts: int                 # passages and sentences embedded or found in the cache
    embedder: str              # whose vectors the cache holds for them
    indexed_at: float          # the clock's seconds since the epoch
    changed_at: float          # when the fingerprint last differed from the record before (first index: then)


_FIELDS = {f.name: f.type for f in dataclasses.fields(IndexRecord)}
_TYPES = {"str": (str,), "int": (int,), "float": (int, float)}


def manifest_path(cache_dir: Path, folder: Path) -> Path:
    key = hashlib.sha256(str(Path(folder).resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return Path(cache_dir) / f"index-{key}.json"


def read_record(cache_dir: Path, folder: Path) -> IndexRecord | None:
    """The folder's last index, or None: never indexed, or a file that cannot be read as one."""
    path = manifest_path(cache_dir, folder)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        log.warning("index record %s is unreadable (%s); the corpus counts as never indexed", path, exc)
        return None
    record = _record(data)
    if record is None or record.folder != str(Path(folder).resolve()):
        log.warning("index record %s is not a record of %s; the corpus counts as never indexed", path, folder)
        return None
    return record


def _record(data: object) -> IndexRecord | None:
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return None
    values = {}
    for name, kind in _FIELDS.items():
        value = data.get(name)
        if isinstance(value, bool) or not isinstance(value, _TYPES[kind]):   # bool is an int to Python, not here
            return None
        values[name] = value
    return IndexRecord(**values)


def next_record(previous: IndexRecord | None, **counts) -> IndexRecord:
    """The record of an index just built (counts: every field but changed_at); the last change stays when the
    fingerprint is the same as before."""
    unchanged = previous is not None and previous.fingerprint == counts["fingerprint"]
    return IndexRecord(**counts, changed_at=previous.changed_at if unchanged else counts["indexed_at"])


def write_record(cache_dir: Path, record: IndexRecord) -> bool:
    """Replaces the folder's record whole. False (and a warning) when it cannot be written: the index itself is
    in the cache all the same, only its date is not kept."""
    path = manifest_path(cache_dir, Path(record.folder))
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_text(json.dumps({"version": VERSION, **dataclasses.asdict(record)}, indent=1), encoding="utf-8")
        os.replace(temporary, path)
        return True
    except OSError as exc:
        log.warning("index record %s could not be written: %s", path, exc)
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        return False
