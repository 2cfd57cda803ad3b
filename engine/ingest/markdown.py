"""Markdown as a reader sees it: a CommonMark parse (markdown-it-py), not regular expressions.

A document becomes a list of Blocks, each in the section its headings open: prose (paragraphs, list items and
quotes, their markers gone), table rows as text ("Header: cell; Header: cell"), and code (fences, indented code,
and file trees), kept as code so it can be shown and cited but never quoted as an answer sentence. HTML is
reduced to its text (`<h1>` and its kin open sections; images and badges leave nothing), links keep their text,
inline code its content.
"""
from __future__ import annotations

import enum
import html
import re
from dataclasses import dataclass
from html.parser import HTMLParser

from markdown_it import MarkdownIt
from markdown_it.token import Token


class BlockKind(str, enum.Enum):
    PROSE = "prose"
    TABLE = "table"
    CODE = "code"


@dataclass(frozen=True)
class Block:
    kind: BlockKind
    text: str
    section: tuple[str, ...]      # the headings above it, outermost first (empty before the first heading)


_PARSER = MarkdownIt("commonmark", {"html": True}).enable("table")
_HTML_HEADING = re.compile(r"<h([1-6])\b", re.IGNORECASE)
_TREE = re.compile(r"^[\s│|]*(├──|└──|\+--|`--)", re.MULTILINE)   # a file tree drawn in text


class HtmlText(HTMLParser):
    """The text of an HTML fragment: tags dropped, scripts and styles with their content, entities decoded."""
    SKIP = frozenset({"script", "style"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self._skipping += 1
        elif tag in ("br", "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6"):
            self.parts.append(" ")

    def handle_endtag(self, tag):
        if tag in self.SKIP and self._skipping:
            self._skipping -= 1

    def handle_data(self, data):
        if not self._skipping:
            self.parts.append(data)


def html_text(fragment: str) -> str:
    parser = HtmlText()
    try:
        parser.feed(fragment)
        parser.close()
    except (AssertionError, ValueError):        # malformed markup: its text as far as it could be read
        pass
    return " ".join("".join(parser.parts).split())


def inline_text(token: Token) -> str:
    """An inline token's text as read: links and emphasis keep their words, images and raw HTML tags none."""
    parts: list[str] = []
    for child in token.children or ():
        if child.type == "image":
            continue                     # alt text of a badge or a logo is no sentence
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "html_inline":
            parts.append(" " if child.content.lower().startswith("<br") else "")
    return " ".join("".join(parts).split())


def parse(text: str) -> list[Block]:
    """The document's blocks in order, each with its section."""
    tokens = _PARSER.parse(text)
    blocks: list[Block] = []
    headings: list[tuple[int, str]] = []      # (level, title) of the open sections
    table_header: list[str] = []
    row: list[str] = []
    in_header = False
    i = 0

    def section() -> tuple[str, ...]:
        return tuple(title for _, title in headings)

    def open_section(level: int, title: str) -> None:
        while headings and headings[-1][0] >= level:
            headings.pop()
        if title:
            headings.append((level, title))

    while i < len(tokens):
        token = tokens[i]
        kind = token.type
        if kind == "heading_open":
            open_section(int(token.tag[1]), inline_text(tokens[i + 1]))
            i += 3
            continue
        if kind == "inline":
            text = inline_text(token)
            if _in_table(tokens, i):
                row.append(text)
            elif len(_TREE.findall(token.content)) >= 2:      # a file tree drawn outside a code fence
                blocks.append(Block(BlockKind.CODE, token.content, section()))
            elif text:
                blocks.append(Block(BlockKind.PROSE, text, section()))
        elif kind in ("fence", "code_block"):
            code = token.content.rstrip("\n")
            if code.strip():
                blocks.append(Block(BlockKind.CODE, code, section()))
        elif kind == "html_block":
            heading = _HTML_HEADING.search(token.content)
            text = html_text(token.content)
            if heading and text:
                open_section(int(heading.group(1)), text)
            elif text:
                blocks.append(Block(BlockKind.PROSE, text, section()))
        elif kind == "thead_open":
            in_header, table_header = True, []
        elif kind == "thead_close":
            in_header = False
        elif kind == "tr_open":
            row = []
        elif kind == "tr_close":
            if in_header:
                table_header = row
            elif any(row):
                blocks.append(Block(BlockKind.TABLE, table_row(table_header, row), section()))
            row = []
        i += 1
    return blocks


def table_row(header: list[str], row: list[str]) -> str:
    """A table row as a sentence: "Header: cell; Header: cell." (empty cells left out)."""
    cells = [f"{head}: {cell}" if head else cell for head, cell in zip(header + [""] * len(row), row) if cell]
    return "; ".join(cells) + "."


def _in_table(tokens: list[Token], index: int) -> bool:
    return index > 0 and tokens[index - 1].type in ("th_open", "td_open")


def plain_paragraphs(text: str) -> list[Block]:
    """A .txt file: paragraphs of prose, no markup to read."""
    return [Block(BlockKind.PROSE, " ".join(html.unescape(p).split()), ())
            for p in re.split(r"\n\s*\n", text) if p.strip()]
