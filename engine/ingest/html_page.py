"""An HTML page as a reader sees it, read with the stdlib html.parser (broken markup is read as far as it goes).

The page becomes Blocks as a Markdown file does (engine.ingest.markdown): `<h1>`..`<h6>` open sections;
paragraphs, list items, quotes, definitions and any other text are prose with whitespace collapsed; `<pre>`, and
a `<code>` that stands alone in its block, are code with their line breaks; table rows become text ("Header:
cell; Header: cell."). Scripts, styles, forms, navigation, the page's header and footer, SVG and other widgets
leave nothing, nor do images (alt text is no sentence) or comments; links keep their text; entities are decoded.
`<title>` names the page. Nothing on the page is fetched, followed or run: it is only read.
"""
from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field

from .document import Document
from .markdown import Block, BlockKind, HtmlText, table_row

_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_CHROME = frozenset({"header", "footer"})              # the page's banner and footer, unless they head content
_CONTENT = frozenset({"article", "main", "section"})   # a <header> inside one of these is the content's own
_TABLE_PARTS = frozenset({"tr", "td", "th", "thead", "tbody", "tfoot"})
_BLOCKS = frozenset({
    "address", "article", "aside", "blockquote", "body", "caption", "center", "dd", "details", "dialog", "div",
    "dl", "dt", "fieldset", "figcaption", "figure", "footer", "header", "hr", "html", "legend", "li", "main",
    "ol", "p", "section", "summary", "ul",
})
_META_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([a-z0-9_:.-]+)""", re.IGNORECASE)
# Browsers read pages declared latin-1 or ASCII as windows-1252; so does this reader.
_LEGACY_CHARSETS = frozenset({"cp1252", "iso8859-1", "ascii"})


def _breaks(tag: str) -> bool:
    """Whether the tag separates words (a block, a heading, a line break), unlike <b> or <a> inside a word."""
    return tag in _BLOCKS or tag in _HEADINGS or tag in ("br", "pre")


def _collapsed(parts: list[str]) -> str:
    return " ".join("".join(parts).split())


@dataclass
class _Table:
    """A table being read (parser state, so mutable): its header and the row and cell open now."""
    header: list[str] = field(default_factory=list)
    row: list[str] | None = None
    cell: list[str] | None = None
    row_all_th: bool = True
    in_head: bool = False
    body_rows: int = 0


class _PageReader(HtmlText):
    """Blocks of a whole page. HtmlText counts the skipped elements; this reader routes the rest of the text to
    the title, a heading, a table cell, a code block or the prose block open now."""
    SKIP = HtmlText.SKIP | {"noscript", "template", "svg", "nav", "header", "footer", "form", "iframe", "object",
                            "canvas", "audio", "video", "button", "select"}

    def __init__(self) -> None:
        super().__init__()                    # self.parts: the prose block being read
        self.blocks: list[Block] = []
        self.title = ""
        self._title: list[str] | None = None
        self._sections: list[tuple[int, str]] = []      # (level, title) of the open sections
        self._heading: tuple[int, list[str]] | None = None
        self._pre: list[str] | None = None
        self._pre_depth = 0
        self._code: list[str] | None = None            # a <code> that may stand alone in its block
        self._code_depth = 0
        self._pending_code: str | None = None          # that <code>, closed, until its block shows it alone
        self._prose_has_text = False                   # whether self.parts holds more than whitespace
        self._tables: list[_Table] = []
        self._chrome: list[bool] = []                  # per open <header>/<footer>: skipped or kept
        self._content_depth = 0

    # -- where text goes --------------------------------------------------------------------------------------

    def _cell(self) -> list[str] | None:
        return self._tables[-1].cell if self._tables else None

    def handle_data(self, data):
        if self._skipping:
            return
        if self._title is not None:
            self._title.append(data)
        elif self._pre is not None:
            self._pre.append(data)
        elif self._code is not None:
            self._code.append(data)
        elif self._heading is not None:
            self._heading[1].append(data)
        elif self._cell() is not None:
            self._cell().append(data)
        else:
            if data.strip():
                self._prose_has_text = True
                if self._pending_code is not None:     # text after the <code>: it was inline
                    self.parts.append(self._pending_code)
                    self._pending_code = None
            self.parts.append(data)

    # -- tags --------------------------------------------------------------------------------------------------

    def handle_starttag(self, tag, attrs):
        if tag in _CHROME:
            kept = self._content_depth > 0 and not self._skipping
            self._chrome.append(not kept)
            if kept:
                self._boundary()
                return
        super().handle_starttag(tag, attrs)      # counts a skipped element
        if self._skipping:
            return
        if tag == "title" and not self.title and self._title is None:
            self._title = []
        elif tag == "body":
            self._end_title()
        if tag in _CONTENT:
            self._content_depth += 1
        if self._pre is not None:                # markup inside <pre> is highlighting: only its text counts
            if tag == "pre":
                self._pre_depth += 1
            elif tag == "br":
                self._pre.append("\n")
        elif self._cell() is not None and tag != "table" and tag not in _TABLE_PARTS:
            if _breaks(tag):                     # in a cell, everything is the cell's text
                self._cell().append(" ")
        elif tag == "br":
            self._line_break()
        elif tag == "code":
            self._start_code()
        elif tag in _HEADINGS:
            self._end_heading()
            self._boundary()
            self._heading = (_HEADINGS[tag], [])
        elif tag == "pre":
            self._end_heading()
            self._boundary()
            self._pre, self._pre_depth = [], 1
        elif tag == "table":
            self._end_heading()
            self._boundary()
            self._tables.append(_Table())
        elif tag in _TABLE_PARTS and self._tables:
            self._table_start(self._tables[-1], tag)
        elif tag in _BLOCKS or tag in _TABLE_PARTS:
            if self._heading is not None and tag != "div":
                self._end_heading()
            self._boundary()

    def handle_endtag(self, tag):
        if tag in _CHROME:
            if not self._chrome:
                return                           # a stray </header>
            if not self._chrome.pop():
                self._boundary()
                return
        super().handle_endtag(tag)
        if self._skipping or tag in self.SKIP:
            return
        if tag in ("title", "head"):
            self._end_title()
        if tag in _CONTENT and self._content_depth:
            self._content_depth -= 1
        if self._pre is not None:
            if tag == "pre":
                self._pre_depth -= 1
                if not self._pre_depth:
                    self._end_pre()
        elif self._cell() is not None and tag != "table" and tag not in _TABLE_PARTS:
            if _breaks(tag):
                self._cell().append(" ")
        elif tag == "code" and self._code is not None:
            self._code_depth -= 1
            if not self._code_depth:
                self._end_code()
        elif tag in _HEADINGS:
            self._end_heading()
        elif tag == "table" and self._tables:
            self._end_row(self._tables[-1])
            self._tables.pop()
            self._boundary()
        elif tag in _TABLE_PARTS and self._tables:
            table = self._tables[-1]
            if tag in ("td", "th"):
                self._end_cell(table)
            elif tag == "tr":
                self._end_row(table)
            elif tag == "thead":
                self._end_row(table)
                table.in_head = False
        elif tag in _BLOCKS or tag in _TABLE_PARTS:
            self._boundary()

    # -- blocks ------------------------------------------------------------------------------------------------

    def _section(self) -> tuple[str, ...]:
        return tuple(title for _, title in self._sections)

    def _boundary(self) -> None:
        """A block ends here: the prose (or the lone <code>) read so far becomes a block."""
        if self._heading is not None:
            self._heading[1].append(" ")
            return
        if self._code is not None:
            self._end_code()
        text = _collapsed(self.parts)
        self.parts, self._prose_has_text = [], False
        code, self._pending_code = self._pending_code, None
        if code is not None and not text:
            code = code.lstrip("\n").rstrip()
            if code.strip():
                self.blocks.append(Block(BlockKind.CODE, code, self._section()))
            return
        if code is not None:
            text = " ".join(f"{code} {text}".split())
        if text:
            self.blocks.append(Block(BlockKind.PROSE, text, self._section()))

    def _line_break(self) -> None:
        if self._code is not None:
            self._code.append("\n")
        elif self._heading is not None:
            self._heading[1].append(" ")
        else:
            self.parts.append(" ")

    def _end_title(self) -> None:
        if self._title is not None:
            self.title = _collapsed(self._title)
            self._title = None

    def _end_heading(self) -> None:
        if self._heading is None:
            return
        level, parts = self._heading
        self._heading = None
        while self._sections and self._sections[-1][0] >= level:
            self._sections.pop()
        title = _collapsed(parts)
        if title:
            self._sections.append((level, title))

    def _end_pre(self) -> None:
        code = "".join(self._pre or []).lstrip("\n").rstrip()
        self._pre, self._pre_depth = None, 0
        if code.strip():
            self.blocks.append(Block(BlockKind.CODE, code, self._section()))

    def _start_code(self) -> None:
        if self._code is not None:
            self._code_depth += 1
        elif self._heading is None and self._pending_code is None and not self._prose_has_text:
            self._code, self._code_depth = [], 1
        elif self._pending_code is not None:      # a second <code> in the block: both are inline
            self.parts.append(self._pending_code)
            self._pending_code, self._prose_has_text = None, True

    def _end_code(self) -> None:
        self._pending_code = "".join(self._code or [])
        self._code, self._code_depth = None, 0

    def _table_start(self, table: _Table, tag: str) -> None:
        if tag in ("td", "th"):
            self._end_cell(table)
            if table.row is None:
                table.row, table.row_all_th = [], True
            table.cell = []
            table.row_all_th &= tag == "th"
        else:                                    # tr, thead, tbody, tfoot: a new row
            self._end_row(table)
            if tag == "tr":
                table.row, table.row_all_th = [], True
            else:
                table.in_head = tag == "thead"
            self._boundary()                     # text before the rows (a caption) is prose

    def _end_cell(self, table: _Table) -> None:
        if table.cell is not None and table.row is not None:
            table.row.append(_collapsed(table.cell))
        table.cell = None

    def _end_row(self, table: _Table) -> None:
        self._end_cell(table)
        row, table.row = table.row, None
        if not row or not any(row):
            return
        if (table.in_head or table.row_all_th) and not table.header and not table.body_rows:
            table.header = row
        else:
            table.body_rows += 1
            self.blocks.append(Block(BlockKind.TABLE, table_row(table.header, row), self._section()))

    def finish(self) -> Document:
        """Whatever the markup left open is closed here, as a browser would at the end of the page."""
        self._end_title()
        if self._pre is not None:
            self._end_pre()
        self._end_heading()
        while self._tables:
            self._end_row(self._tables.pop())
        self._boundary()
        return Document(tuple(self.blocks), self.title)


def read_page(page: str) -> Document:
    """A page's blocks and its <title> ("" without one). Never raises on bad markup."""
    reader = _PageReader()
    try:
        reader.feed(page.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n"))
        reader.close()
    except (AssertionError, ValueError):     # markup html.parser gives up on: the page as far as it was read
        pass
    return reader.finish()


def decode_declared(data: bytes) -> str | None:
    """A page that is not UTF-8 but declares latin-1, windows-1252 or ASCII in a <meta>: its text, read as
    windows-1252 as browsers read all three. None for any other page."""
    match = _META_CHARSET.search(data[:4096])
    if not match:
        return None
    try:
        name = codecs.lookup(match.group(1).decode("ascii")).name
    except (LookupError, UnicodeDecodeError):
        return None
    if name not in _LEGACY_CHARSETS:
        return None
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:                 # the five bytes windows-1252 leaves undefined
        return data.decode("latin-1")
