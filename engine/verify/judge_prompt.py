"""Every prompt a judge is asked, built here and nowhere else: the reading of an answer against its passages,
the judge's own short answer from them, and a claim against its evidence.

Each prompt is a list of chat messages, so a local model (engine.verify.judge_runtime) and any
OpenAI-compatible server (engine.agents.openai_judge) are asked the very same words. The texts in them
(question, passages, candidate answers, claims) were written by agents, documents and operators: they are
untrusted, and go in as plain data:
- a chat-template marker inside them ("<|im_end|>") is broken apart, so it stays letters and cannot end the turn;
- runs of whitespace, line breaks included, become one space, so a passage cannot start a line that reads as
  one of the prompt's own labels ("Candidate answer: ...");
- each is cut to a length, so one long passage cannot push the question out of the model's window.

The passages, the question and what is asked come first and the candidate last: readings of several
candidates to one question share everything up to the candidate, which a server that caches prompt prefixes
reads once, so each further candidate costs only its own words.
"""
from __future__ import annotations

import re
from typing import Sequence

from ..types import Chunk

SYSTEM = "You are a careful reader. You judge only from the passages and texts you are given."
READ_ASK = ("Is the candidate answer below the answer that these passages give to the question? "
            "Answer Yes or No.")
OWN_ASK = "Answer the question from the passages alone, in a few words. If they do not answer it, say: unknown."
ENTAILS_ASK = "Is the hypothesis fully supported by the premise alone? Answer Yes or No."
UNKNOWN = "unknown"

MAX_PASSAGE_CHARS = 700       # each passage (about 170 tokens); the reading is about the sentences that answer
MAX_FIELD_CHARS = 500         # a question, a candidate answer, a claim
MAX_PASSAGES = 4
_MARKER = re.compile(r"<\|")


def plain(text: str, limit: int = MAX_FIELD_CHARS) -> str:
    """Untrusted text as one line of data: template markers broken, whitespace collapsed, cut at `limit`."""
    flat = " ".join(_MARKER.sub("< |", text).replace("|>", "| >").split())
    return flat if len(flat) <= limit else flat[:limit - 1].rstrip() + "…"


def title_of(chunk: Chunk) -> str:
    """What a passage is about, for the judge: its title, else its source."""
    return str(chunk.metadata.get("title") or chunk.source or "")


def _context(question: str, passages: Sequence[Chunk]) -> str:
    lines = ["Passages:"]
    for number, passage in enumerate(passages[:MAX_PASSAGES], start=1):
        title = plain(title_of(passage), 120)
        lines.append(f"[{number}] {title + ': ' if title else ''}{plain(passage.text, MAX_PASSAGE_CHARS)}")
    if len(lines) == 1:
        lines.append("(none)")
    lines.append(f"Question: {plain(question)}")
    return "\n".join(lines)


def messages(user: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def reading(question: str, passages: Sequence[Chunk], candidate: str) -> list[dict]:
    """Is `candidate` the answer the passages give to the question? (P(yes) from the first token)"""
    return messages(f"{_context(question, passages)}\n{READ_ASK}\nCandidate answer: {plain(candidate)}")


def own_answer(question: str, passages: Sequence[Chunk]) -> list[dict]:
    """The judge's own short answer from the passages (a few generated words, or "unknown")."""
    return messages(f"{_context(question, passages)}\n{OWN_ASK}")


def entails(premise: str, hypothesis: str) -> list[dict]:
    """Does the premise alone support the hypothesis? (P(yes) from the first token)"""
    return messages(f"Premise: {plain(premise, MAX_PASSAGE_CHARS)}\nHypothesis: {plain(hypothesis)}\n{ENTAILS_ASK}")


def said_unknown(answer: str) -> bool:
    """The judge's own answer says the passages do not answer (or says nothing)."""
    words = re.findall(r"[a-z]+", answer.lower())
    return not words or words[:1] == [UNKNOWN] or " ".join(words[:4]) in {"the passages do not", "not mentioned"}
