"""The lie builders' own reading of a text: which sentences look most like the question, and which words are
names. Written apart from the engine's checks (engine.verify, engine.cascade, engine.gateway.scanners and
engine.retrieval), which an import-linter contract forbids the builders: a lie made with the defence's own rule
for what a name or a relevant sentence is would be built to be caught. Its sentences and content words come from
the builders' own helpers (attack_text), not engine.text."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from engine.types import Chunk
from .attack_text import content_words, sentences

# A capitalised word, and the capitalised words joined to it (by a space, or by "of"/"the"/"de" between).
_NAME = re.compile(r"[A-Z][\w'’\-\.]*[\w]|[A-Z]")
_JOINERS = frozenset({"of", "the", "de", "da", "von", "van", "del", "la"})


@dataclass(frozen=True)
class RankedSentence:
    text: str
    chunk_id: str
    score: float


def ranked_sentences(question: str, context: Sequence[Chunk]) -> list[RankedSentence]:
    """Every sentence of the context, most question-like first: the share of the question's content words it
    holds, earlier passages first among equals."""
    wanted = set(content_words(question))
    out = []
    for rank, chunk in enumerate(context):
        for sentence in sentences(chunk.text):
            shared = len(wanted & set(content_words(sentence)))
            out.append((shared / max(1, len(wanted)), -rank, RankedSentence(sentence, chunk.id, shared)))
    out.sort(key=lambda item: (-item[0], -item[1]))
    return [ranked for _, _, ranked in out]


def proper_names(sentence: str) -> list[str]:
    """Runs of capitalised words that do not open the sentence ("the Great Red Spot", "Asaph Hall"), each once,
    in order; words joined by "of" or "the" stay one name ("Duke of York")."""
    tokens = [(m.group(0), m.start(), m.end()) for m in re.finditer(r"\S+", sentence)]
    names: list[str] = []
    run: list[tuple[str, int, int]] = []

    def close() -> None:
        while run and run[-1][0].lower() in _JOINERS:
            run.pop()
        if run:
            names.append(sentence[run[0][1]:run[-1][2]].strip(".,;:!?\"'()"))
        run.clear()
    for i, (token, start, end) in enumerate(tokens):
        word = re.sub(r"['’]s$", "", token.strip(".,;:!?\"'()"))
        capitalised = bool(word) and bool(_NAME.fullmatch(word)) and not word.isupper()
        if capitalised and i > 0:
            run.append((word, start, start + len(token.rstrip(".,;:!?\"')"))))
        elif run and word.lower() in _JOINERS:
            run.append((word, start, end))
        else:
            close()
        if token[-1:] in ",;:" or (token[-1:] in ".!?" and run):
            close()
    close()
    return list(dict.fromkeys(n for n in names if n))
