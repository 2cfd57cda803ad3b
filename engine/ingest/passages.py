"""Blocks → passages that follow the document's sections, with ids that survive edits elsewhere in the file.

Within a section, prose and table rows are merged up to MAX_PASSAGE_WORDS; a longer run is split between
sentences, and the next passage repeats the last sentence of the one before (a small overlap, so a fact that
straddles the cut is whole in one of them). Code is a passage of its own. Ids: `N` for passages before the
first heading (a file without headings keeps the ids it always had: `doc#0`), `<section-slug>-N` inside a
section, so re-indexing a file whose other sections changed keeps this section's ids.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..text import sentences
from .markdown import Block, BlockKind

MAX_PASSAGE_WORDS = 160
OVERLAP_SENTENCES = 1


@dataclass(frozen=True)
class Passage:
    key: str                        # the id within its document ("0", "installation-1")
    text: str
    kind: BlockKind                 # PROSE (tables included) or CODE
    section: tuple[str, ...]


def slug(title: str) -> str:
    words = re.findall(r"[a-z0-9]+", title.lower())
    return "-".join(words)[:60].strip("-") or "section"


def _sentence_pieces(text: str) -> list[str]:
    if len(text.split()) <= MAX_PASSAGE_WORDS:
        return [text]
    return sentences(text) or [text]


def _ended(text: str) -> str:
    """A block joined to others ends as a sentence does, so a list item cannot run into the next one."""
    return text if text[-1:] in ".!?:;" else text + "."


def _prose_passages(blocks: Sequence[Block]) -> list[str]:
    pieces = [p for b in blocks for p in _sentence_pieces(_ended(b.text) if len(blocks) > 1 else b.text)]
    passages: list[str] = []
    current: list[str] = []
    for piece in pieces:
        if current and len(" ".join(current + [piece]).split()) > MAX_PASSAGE_WORDS:
            passages.append(" ".join(current))
            carried = current[-OVERLAP_SENTENCES:] if OVERLAP_SENTENCES else []
            # The overlap only when it leaves room for new text: a lone long sentence is not repeated.
            current = carried if len(" ".join(carried + [piece]).split()) <= MAX_PASSAGE_WORDS else []
        current.append(piece)
    if current:
        passages.append(" ".join(current))
    return passages


def _runs(blocks: Iterable[Block]) -> list[tuple[tuple[str, ...], list[Block]]]:
    """Consecutive blocks of one section and one kind (prose with tables, or a single code block)."""
    runs: list[tuple[tuple[str, ...], list[Block]]] = []
    for block in blocks:
        last = runs[-1] if runs else None
        if (last and last[0] == block.section and block.kind is not BlockKind.CODE
                and last[1][-1].kind is not BlockKind.CODE):
            last[1].append(block)
        else:
            runs.append((block.section, [block]))
    return runs


def passages(blocks: Sequence[Block]) -> list[Passage]:
    out: list[Passage] = []
    counters: dict[tuple[str, ...], int] = {}
    slugs: dict[tuple[str, ...], str] = {}
    used: set[str] = set()
    for section, run in _runs(blocks):
        if section and section not in slugs:
            base = slug(section[-1])
            name, n = base, 2
            while name in used:
                name, n = f"{base}-{n}", n + 1
            slugs[section] = name
            used.add(name)
        if run[0].kind is BlockKind.CODE:
            texts, kind = [run[0].text], BlockKind.CODE
        else:
            texts, kind = _prose_passages(run), BlockKind.PROSE
        for text in texts:
            number = counters.get(section, 0)
            counters[section] = number + 1
            key = f"{slugs[section]}-{number}" if section else str(number)
            out.append(Passage(key, text, kind, section))
    return out
