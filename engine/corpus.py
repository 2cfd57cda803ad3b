"""A folder of .md/.txt files → passages (Chunk) with metadata.

Front matter (optional) is a block of `key: value` lines between `---` lines at the top of a file;
known keys are title, source, authority (0..1), date (YYYY-MM-DD). A file without it gets its
file name as title, the folder as source and a neutral authority.

Markdown is read as Markdown (engine.ingest.markdown) and cut into passages along its sections
(engine.ingest.passages): each chunk's metadata says its `section` and its `kind` (prose, or code, which is
cited and shown but never quoted as an answer). A file too large, binary or not UTF-8 is skipped, and
`Corpus.skipped` says which and why: nothing in a corpus stops the others from loading.
"""
from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .errors import ConfigError
from .ingest.markdown import Block, plain_paragraphs
from .ingest.markdown import parse as parse_markdown
from .ingest.passages import passages
from .text import sentences
from .types import Chunk

SUFFIXES = (".md", ".txt")
MAX_FILE_BYTES = 2_000_000
NEUTRAL_AUTHORITY = 0.5


@dataclass(frozen=True)
class Skipped:
    path: str              # relative to the corpus root
    reason: str


@dataclass(frozen=True)
class Corpus:
    root: Path
    chunks: tuple[Chunk, ...]
    skipped: tuple[Skipped, ...] = ()

    @property
    def fingerprint(self) -> str:
        """Changes whenever any passage text or its metadata changes."""
        digest = hashlib.sha256()
        for chunk in self.chunks:
            digest.update(chunk.id.encode())
            digest.update(content_hash(chunk.text).encode())
        return digest.hexdigest()[:16]


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _parse_front_matter(path: Path, text: str) -> tuple[dict[str, str], str]:
    if not text.startswith("---"):
        return {}, text
    lines = text.splitlines()
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise ConfigError(str(path), "front matter", "opening '---' has no closing '---'") from None
    meta: dict[str, str] = {}
    for number, line in enumerate(lines[1:end], start=2):
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        if not sep or not key.strip():
            raise ConfigError(str(path), f"line {number}", f"expected 'key: value', found {line!r}")
        meta[key.strip().lower()] = value.strip()
    return meta, "\n".join(lines[end + 1:])


def _metadata(path: Path, root: Path, meta: dict[str, str]) -> dict[str, object]:
    doc_id = path.relative_to(root).with_suffix("").as_posix()
    authority = NEUTRAL_AUTHORITY
    if "authority" in meta:
        try:
            authority = float(meta["authority"])
        except ValueError:
            raise ConfigError(str(path), "authority", f"expected a number 0..1, found {meta['authority']!r}") from None
        if not 0 <= authority <= 1:
            raise ConfigError(str(path), "authority", f"expected a number 0..1, found {authority}")
    date = meta.get("date", "")
    if date:
        try:
            dt.date.fromisoformat(date)
        except ValueError:
            raise ConfigError(str(path), "date", f"expected YYYY-MM-DD, found {date!r}") from None
    extra = {k: v for k, v in meta.items() if k not in ("title", "source", "authority", "date")}
    return {
        **extra,
        "doc_id": doc_id,
        "title": meta.get("title") or path.stem.replace("-", " ").replace("_", " "),
        "source": meta.get("source") or root.name,
        "authority": authority,
        "date": date,
    }


def embedding_texts(chunks: Sequence[Chunk]) -> list[str]:
    """What the engine embeds of a corpus, each once: the passages for secure retrieval, and their sentences for
    the evidence check of every claim (the engine's warm-up at start and `main.py index` both embed these)."""
    return list(dict.fromkeys([c.text for c in chunks] + [s for c in chunks for s in sentences(c.text)]))


def _blocks(path: Path, body: str) -> list[Block]:
    return parse_markdown(body) if path.suffix.lower() == ".md" else plain_paragraphs(body)


def _unreadable(path: Path) -> tuple[str, str]:
    """(text, "") or ("", why the file is skipped)."""
    if path.stat().st_size > MAX_FILE_BYTES:
        return "", f"larger than {MAX_FILE_BYTES:,} bytes"
    data = path.read_bytes()
    if b"\x00" in data[:8192]:
        return "", "binary (a NUL byte in its first 8 KiB)"
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError as exc:
        return "", f"not UTF-8 text ({exc.reason} at byte {exc.start})"


def load_corpus(root: Path) -> Corpus:
    root = Path(root).resolve()
    if not root.is_dir():
        raise ConfigError(str(root), "", "corpus folder does not exist")
    files = sorted(p for p in root.rglob("*") if p.suffix.lower() in SUFFIXES and p.is_file())
    if not files:
        raise ConfigError(str(root), "", f"no {' or '.join(SUFFIXES)} files in the corpus folder")
    chunks: list[Chunk] = []
    skipped: list[Skipped] = []
    for path in files:
        try:
            text, why = _unreadable(path)
        except OSError as exc:
            text, why = "", f"unreadable ({exc.strerror or exc})"
        if why:
            skipped.append(Skipped(path.relative_to(root).as_posix(), why))
            continue
        meta, body = _parse_front_matter(path, text)
        metadata = _metadata(path, root, meta)
        for position, passage in enumerate(passages(_blocks(path, body))):
            chunks.append(Chunk(
                id=f"{metadata['doc_id']}#{passage.key}",
                text=passage.text,
                source=str(metadata["source"]),
                metadata={**metadata, "position": position, "kind": passage.kind.value,
                          **({"section": " › ".join(passage.section)} if passage.section else {})},
            ))
    if not chunks and skipped:
        raise ConfigError(str(root), "", f"no readable file in the corpus folder ({skipped[0].path}: "
                                         f"{skipped[0].reason}{' …' if len(skipped) > 1 else ''})")
    return Corpus(root=root, chunks=tuple(chunks), skipped=tuple(skipped))
