"""The indexed corpus's passages (id → content hash), as the question's stages read them: a passage the
gateway blocks that is the corpus's own text is the document's doing, not its carrier's."""
from __future__ import annotations

from typing import Mapping


class CorpusHashes:
    """Swapped whole when the corpus is indexed (again), in a worker thread: one reference, safe beside
    questions that read it."""

    def __init__(self, hashes: Mapping[str, str] | None = None) -> None:
        self._hashes: Mapping[str, str] = hashes or {}

    @property
    def hashes(self) -> Mapping[str, str]:
        return self._hashes

    def replace(self, hashes: Mapping[str, str]) -> None:
        self._hashes = hashes
