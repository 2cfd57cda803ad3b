"""Records for the cascade evaluation, from HotpotQA-format or MuSiQue-format JSONL (detected per file).

A record is one multi-hop question with its own paragraphs (HotpotQA: 10, MuSiQue: 20, gold and
distractors), its gold answers, MuSiQue's gold decomposition where there is one, and PoisonedRAG's
adversarial texts for the question where PoisonedRAG targeted it (the retrieval cascade's
counterfactual). Files are read where they lie.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import InputError
from engine.types import Chunk
from .data import DEFAULT_POISON, SHARED_DATA, _norm_space, answer_aliases, read_jsonl_numbered

DEFAULT_HOTPOT = SHARED_DATA / "hotpotqa_dev_sample.jsonl"
DEFAULT_MUSIQUE = SHARED_DATA / "musique_train_sample.jsonl"


@dataclass(frozen=True)
class CascadeRecord:
    id: str
    question: str
    answers: tuple[str, ...]
    paragraphs: tuple[Chunk, ...]
    dataset: str                                   # hotpotqa | musique
    kind: str = ""                                 # HotpotQA's type: bridge | comparison
    gold_hops: tuple[str, ...] = ()                # MuSiQue's gold sub-questions
    poison: tuple[str, ...] = ()                   # PoisonedRAG's adversarial texts for this question


def detect_format(row: Any, where: str) -> str:
    if isinstance(row, dict) and "question_decomposition" in row and "paragraphs" in row:
        return "musique"
    if isinstance(row, dict) and "context" in row and "question" in row:
        return "hotpotqa"
    raise InputError(f"{where}: neither a HotpotQA record (question, answer, context) nor a MuSiQue record "
                     "(question, answer, paragraphs, question_decomposition)")


def load_records(path: Path, poison_path: Path | None = DEFAULT_POISON) -> list[CascadeRecord]:
    numbered = read_jsonl_numbered(path, "cascade evaluation data")
    if not numbered:
        raise InputError(f"{path}: no records")
    poison = _poison(poison_path) if poison_path and Path(poison_path).is_file() else {}
    records = []
    for line, row in numbered:
        where = f"{path}: line {line}"
        form = detect_format(row, where)
        records.append(_musique(row, where) if form == "musique" else _hotpot(row, where, poison))
    return records


def _poison(path: Path) -> dict[str, tuple[str, ...]]:
    out = {}
    for _, row in read_jsonl_numbered(path, "PoisonedRAG texts"):
        if isinstance(row, dict) and isinstance(row.get("adv_texts"), list):
            out[str(row.get("id"))] = tuple(str(t) for t in row["adv_texts"] if str(t).strip())
    return out


def _text(row: dict, key: str, where: str) -> str:
    value = row.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)          # MuSiQue has numeric answers ("1945")
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}: '{key}' missing or not a non-empty string")
    return value


def _hotpot(row: dict, where: str, poison: dict) -> CascadeRecord:
    rid, question, answer = _text(row, "id", where), _text(row, "question", where), _text(row, "answer", where)
    if not isinstance(row["context"], list) or not row["context"]:
        raise InputError(f"{where}: 'context' must be a non-empty list of paragraphs")
    chunks = []
    for i, p in enumerate(row["context"]):
        if not isinstance(p, dict) or not isinstance(p.get("title"), str) or not isinstance(p.get("text"), str):
            raise InputError(f"{where}: context[{i}] needs string title and text")
        chunks.append(Chunk(f"{rid}/p{i}", _norm_space(p["text"]), source=p["title"], metadata={"title": p["title"]}))
    return CascadeRecord(rid, question, tuple(answer_aliases(answer)), tuple(chunks), "hotpotqa",
                         kind=str(row.get("type", "")), poison=poison.get(rid, ()))


def _musique(row: dict, where: str) -> CascadeRecord:
    rid, question = _text(row, "id", where), _text(row, "question", where)
    raw = row.get("answer")
    # A few MuSiQue answers are lists ([273, 282]): each element is an accepted answer.
    answer = ", ".join(str(x) for x in raw) if isinstance(raw, list) and raw else _text(row, "answer", where)
    aliases = [str(a) for a in (raw if isinstance(raw, list) else [])]
    aliases += [a for a in row.get("answer_aliases") or [] if isinstance(a, str)]
    chunks = []
    for i, p in enumerate(row["paragraphs"]):
        if not isinstance(p, dict) or not isinstance(p.get("title"), str) or not isinstance(p.get("text"), str):
            raise InputError(f"{where}: paragraphs[{i}] needs string title and text")
        chunks.append(Chunk(f"{rid}/p{i}", _norm_space(p["text"]), source=p["title"],
                            metadata={"title": p["title"]}))
    hops = tuple(str(h.get("question", "")) for h in row["question_decomposition"] if isinstance(h, dict))
    return CascadeRecord(rid, question, tuple(dict.fromkeys([*answer_aliases(answer), *aliases])), tuple(chunks),
                         "musique", kind=f"{len(hops)}-hop", gold_hops=hops)
