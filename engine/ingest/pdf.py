"""The text of a PDF, read with pypdf (pure Python): each page's text cut into paragraphs of prose.

A PDF holds no paragraphs, only lines placed on a page: a blank line ends a paragraph, a word hyphenated at the
end of a line is joined again ("exam-" + "ple" → "example"), and the other line breaks inside a paragraph are
spaces. The document's metadata title names it when it looks like a title (not "untitled" or a file name). A
PDF that is encrypted, broken or has no text (a scan: pictures of pages) raises UnreadablePdf, whose reason the
corpus shows beside the skipped file. At most MAX_PDF_PAGES pages are read.
"""
from __future__ import annotations

import io
import logging
import re
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

from .document import Document
from .markdown import Block, BlockKind

if TYPE_CHECKING:
    from pypdf import PdfReader

MAX_PDF_BYTES = 20_000_000       # a PDF carries fonts and pictures besides its text: more room than a text file
MAX_PDF_PAGES = 500
MAX_TITLE_CHARS = 200

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_HYPHEN_BREAK = re.compile(r"(?<=[^\W\d_])-[ \t]*\n\s*(?=[^\W\d_A-Z])")    # "exam-\nple", not "1-\n2" or "X-\nRay"
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_NOT_A_TITLE = re.compile(r"^(untitled|title|document\d*)$|\.(pdf|docx?|odt|rtf|tex|dvi|ps|pptx?|indd)$"
                          r"|^microsoft (word|powerpoint) - ", re.IGNORECASE)


class UnreadablePdf(Exception):
    """A PDF whose text cannot be had; `reason` says why ("PDF: encrypted (…)")."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@contextmanager
def _quiet_pypdf() -> Iterator[None]:
    """pypdf logs a warning for each flaw it reads past in a file; one loose PDF would flood the console."""
    logger = logging.getLogger("pypdf")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _message(exc: Exception) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 120 else text[:119] + "…"


def paragraphs(page_text: str) -> list[str]:
    """A page's text as paragraphs; a paragraph with no letter (a page number, a rule) is no prose."""
    out = []
    for part in _PARAGRAPH_BREAK.split(_CONTROL.sub("", page_text)):
        text = " ".join(_HYPHEN_BREAK.sub("", part).split())
        if any(char.isalpha() for char in text):
            out.append(text)
    return out


def _open(data: bytes) -> PdfReader:
    # Imported here: pypdf takes about 0.1 s to import, which every engine and agent start would pay for nothing
    # in a corpus without PDFs.
    from pypdf import PdfReader
    from pypdf.errors import DependencyError

    reader = PdfReader(io.BytesIO(data), strict=False)
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")      # many PDFs are encrypted only against editing, with no password
        except DependencyError:
            raise UnreadablePdf("PDF: encrypted (AES, which needs the cryptography package)") from None
        if not opened:
            raise UnreadablePdf("PDF: encrypted (a password is needed)")
    return reader


def _title(reader: PdfReader) -> str:
    try:
        raw = reader.metadata.title if reader.metadata else None
    except Exception:                         # a broken info dictionary costs the title, not the document
        return ""
    title = " ".join(_CONTROL.sub("", str(raw or "")).split())
    if len(title) > MAX_TITLE_CHARS or not any(c.isalpha() for c in title) or _NOT_A_TITLE.search(title):
        return ""
    return title


def read_pdf(data: bytes) -> Document:
    """The PDF's paragraphs as prose blocks (no sections: a PDF's headings are only bigger letters) and its title.
    Raises UnreadablePdf; never anything else for what a file holds."""
    failures: list[str] = []
    blocks: list[Block] = []
    with _quiet_pypdf():
        # pypdf raises its own errors on most broken files, but ValueError, KeyError, TypeError, RecursionError and
        # others on some: whichever it is, the file cannot be read, and the engine goes on with the others.
        try:
            reader = _open(data)
            pages = reader.pages
            count = min(len(pages), MAX_PDF_PAGES)
        except UnreadablePdf:
            raise
        except Exception as exc:
            raise UnreadablePdf(f"PDF: unreadable ({_message(exc)})") from None
        for number in range(count):
            try:
                text = pages[number].extract_text() or ""
            except Exception as exc:          # one broken page costs that page
                failures.append(_message(exc))
                continue
            blocks.extend(Block(BlockKind.PROSE, paragraph, ()) for paragraph in paragraphs(text))
        title = _title(reader)
    if not blocks and failures:
        raise UnreadablePdf(f"PDF: unreadable ({failures[0]})")
    if not blocks:
        raise UnreadablePdf("PDF: no extractable text (scanned images?)")
    return Document(tuple(blocks), title)
