"""A folder of documents (.md, .txt, .html/.htm, .pdf) → passages (Chunk) with metadata.

Front matter (optional) is a block of `key: value` lines between `---` lines at the top of a file;
known keys are title, source, authority (0..1), date (YYYY-MM-DD). A file without it gets its
file name as title, its path under the corpus folder as source, a neutral authority and no date: the
file's modification time is recorded as `modified`, never as `date` (see _modified).

Markdown is read as Markdown (engine.ingest.markdown), an HTML page as a page (engine.ingest.html_page) and
a PDF's text with pypdf (engine.ingest.pdf); each is cut into passages along its sections
(engine.ingest.passages): each chunk's metadata says its `section` and its `kind` (prose, or code, which is
cited and shown but never quoted as an answer). Front matter is read in .md and .txt files; a page's <title> or
a PDF's /Title is the title when front matter names none. A file too large, binary, not UTF-8 or a PDF without
readable text is skipped, and `Corpus.skipped` says which and why: nothing in a corpus stops the others from
loading.
"""
from __future__ import annotations

import datetime as dt
import hashlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import ConfigError
from .document import Document
from .html_page import decode_declared, read_page
from .markdown import plain_paragraphs
from .markdown import parse as parse_markdown
from .passages import passages
from .pdf import MAX_PDF_BYTES, UnreadablePdf, read_pdf
from ..text import content_hash, sentences
from ..types import Chunk

SUFFIXES = (".md", ".txt", ".html", ".htm", ".pdf")
FRONT_MATTER_SUFFIXES = (".md", ".txt")       # a page or a PDF names its title inside
HTML_SUFFIXES = (".html", ".htm")
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


def _doc_ids(root: Path, files: Sequence[Path]) -> dict[Path, str]:
    """A file's path under the root without its suffix ("papers/hippo"), the id its passages' ids start with;
    with the suffix when two files differ only by it (guide.md beside guide.pdf), so no two share an id."""
    stem = {p: p.relative_to(root).with_suffix("").as_posix() for p in files}
    count = Counter(stem.values())
    return {p: stem[p] if count[stem[p]] == 1 else p.relative_to(root).as_posix() for p in files}


def _metadata(path: Path, root: Path, meta: dict[str, str], doc_id: str) -> dict[str, object]:
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
    extra = {k: v for k, v in meta.items() if k not in ("title", "source", "authority", "date", "modified")}
    return {
        **extra,
        "doc_id": doc_id,
        "title": meta.get("title") or path.stem.replace("-", " ").replace("_", " "),
        "source": meta.get("source") or path.relative_to(root).as_posix(),
        "authority": authority,
        "date": date,
        "modified": _modified(path),
    }


def _modified(path: Path) -> str:
    """The file's modification date (YYYY-MM-DD, UTC), shown beside a passage. It is kept apart from `date`: a
    copy, a checkout or a touch changes it, so the rules that weigh dates (freshness, the newest of two
    disagreeing sources, two sources of two dates) read only a date the document itself declares."""
    try:
        return dt.datetime.fromtimestamp(path.stat().st_mtime, dt.timezone.utc).date().isoformat()
    except (OSError, ValueError, OverflowError):
        return ""


def embedding_texts(chunks: Sequence[Chunk]) -> list[str]:
    """What the engine embeds of a corpus, each once: the passages for secure retrieval, and their sentences for
    the evidence check of every claim (the engine's warm-up at start and `main.py index` both embed these)."""
    return list(dict.fromkeys([c.text for c in chunks] + [s for c in chunks for s in sentences(c.text)]))


def _document(path: Path, content: str | bytes) -> Document:
    """The file read as its format is read; raises UnreadablePdf for a PDF whose text cannot be had."""
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        return read_pdf(content)
    if suffix in HTML_SUFFIXES:
        return read_page(content)
    return Document(tuple(parse_markdown(content) if suffix == ".md" else plain_paragraphs(content)))


def _unreadable(path: Path) -> tuple[str | bytes, str]:
    """(content, "") or ("", why the file is skipped): a PDF's content is its bytes, any other file's its text."""
    suffix = path.suffix.lower()
    limit = MAX_PDF_BYTES if suffix == ".pdf" else MAX_FILE_BYTES
    if path.stat().st_size > limit:
        return "", f"larger than {limit:,} bytes"
    data = path.read_bytes()
    if suffix == ".pdf":
        return data, ""                          # binary by nature: engine.ingest.pdf judges it
    if b"\x00" in data[:8192]:
        return "", "binary (a NUL byte in its first 8 KiB)"
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError as exc:
        declared = decode_declared(data) if suffix in HTML_SUFFIXES else None
        if declared is not None:
            return declared, ""
        return "", f"not UTF-8 text ({exc.reason} at byte {exc.start})"


def load_corpus(root: Path) -> Corpus:
    root = Path(root).resolve()
    if not root.is_dir():
        raise ConfigError(str(root), "", "corpus folder does not exist")
    files = sorted(p for p in root.rglob("*") if p.suffix.lower() in SUFFIXES and p.is_file()
                   and not any(part.startswith(".") for part in p.relative_to(root).parts))   # .git, .venv, …
    doc_ids = _doc_ids(root, files)
    if not files:
        raise ConfigError(str(root), "", f"no {', '.join(SUFFIXES[:-1])} or {SUFFIXES[-1]} files in the corpus folder")
    chunks: list[Chunk] = []
    skipped: list[Skipped] = []
    for path in files:
        try:
            content, why = _unreadable(path)
        except OSError as exc:
            content, why = "", f"unreadable ({exc.strerror or exc})"
        meta: dict[str, str] = {}
        if not why and path.suffix.lower() in FRONT_MATTER_SUFFIXES:
            meta, content = _parse_front_matter(path, content)
        try:
            document = None if why else _document(path, content)
        except UnreadablePdf as exc:
            document, why = None, exc.reason
        if document is None:
            skipped.append(Skipped(path.relative_to(root).as_posix(), why))
            continue
        if document.title and not meta.get("title"):
            meta = {**meta, "title": document.title}
        metadata = _metadata(path, root, meta, doc_ids[path])
        for position, passage in enumerate(passages(document.blocks)):
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
