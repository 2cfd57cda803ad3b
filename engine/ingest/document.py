"""What a reader of one file format hands the corpus: the document's blocks and the title the file names."""
from __future__ import annotations

from dataclasses import dataclass

from .markdown import Block


@dataclass(frozen=True)
class Document:
    blocks: tuple[Block, ...]
    title: str = ""       # the title the file itself names (HTML <title>, PDF /Title); "" when it names none
