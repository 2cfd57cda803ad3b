"""What a judge reads an answer against, and whether the judge's own answer agrees with a candidate.

The judge reads every candidate of one question against the same passages: the ones the candidates cite
first (context order), then the rest of the safe context, up to judge_prompt.MAX_PASSAGES. The same
passages for every candidate make their readings comparable, and one prompt prefix that a caching server
reads once. Each passage is cut to its sentences closest to the question and to what the candidates cite,
so the prompt stays short on a CPU.

`agrees` compares the judge's own short answer from the passages ("William Herschel") with a candidate
sentence: every content word or number of the judge's answer must be in the candidate.
"""
from __future__ import annotations

import dataclasses
import re
import unicodedata
from typing import Sequence

from ..text import STOPWORDS, sentences, spelled_numbers
from ..types import Chunk
from ..verify.judge_prompt import MAX_PASSAGE_CHARS, MAX_PASSAGES, said_unknown

_TOKEN = re.compile(r"[0-9a-z]+")


def _tokens(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKD", text)
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch)).lower()
    folded = re.sub(r"(?<=\d)[,.](?=\d{3}\b)", "", folded.replace("'", "").replace("’", ""))
    return _TOKEN.findall(folded)


def focus(text: str, wanted: set[str], limit: int = MAX_PASSAGE_CHARS) -> str:
    """The passage's sentences that share the most words with `wanted`, in passage order, up to `limit`
    characters; the whole passage when it fits."""
    if len(text) <= limit:
        return text
    split = sentences(text)
    ranked = sorted(range(len(split)), key=lambda i: (-len(wanted & set(_tokens(split[i]))), i))
    kept, size = set(), 0
    for i in ranked:
        if size + len(split[i]) + 1 > limit and kept:
            continue
        kept.add(i)
        size += len(split[i]) + 1
    return " ".join(split[i] for i in sorted(kept))[:limit]


def shown_passages(question: str, context: Sequence[Chunk], cited: Sequence[str],
                   candidates: Sequence[str] = ()) -> tuple[Chunk, ...]:
    """The passages a judge reads one question's candidates against (see the module's docstring), each cut to
    what bears on them."""
    cited_ids = set(cited)
    ordered = [c for c in context if c.id in cited_ids] + [c for c in context if c.id not in cited_ids]
    wanted = set(_tokens(question)) | {t for text in candidates for t in _tokens(text)}
    wanted -= STOPWORDS
    return tuple(dataclasses.replace(c, text=focus(c.text, wanted)) for c in ordered[:MAX_PASSAGES])


def _as_digits(token: str) -> str:
    """A number written out ("four") as its digits, so "4" and "four" are one word; any other token as it is."""
    return next(iter(spelled_numbers(token)), token)


def key_words(answer: str) -> set[str]:
    """The content words and numbers of a short answer, numbers written out as digits."""
    return {_as_digits(t) for t in _tokens(answer) if t not in STOPWORDS or spelled_numbers(t)}


def agrees(own_answer: str, candidate: str) -> bool | None:
    """Does the candidate state the judge's own answer? None when the judge said the passages do not answer."""
    if said_unknown(own_answer):
        return None
    wanted = key_words(own_answer)
    if not wanted:
        return None
    return wanted <= {_as_digits(t) for t in _tokens(candidate)}
