"""The evaluation's data sets, each turned into poisoning cases of one shape (data.Case).

- hotpotqa: PoisonedRAG's HotpotQA targets in the HotpotQA sample (data.build_cases).
- biogen: RobustRAG's "Tell me a bio of X?" questions. Each question keeps its 23-36 web passages
  (honest repetition: several sources state the same facts), plus distractors (the next questions'
  passages); its poison is the poisoned biography cut into paragraphs, as an honest page would be.
- nq, msmarco: PoisonedRAG's targets injected into a distractor corpus of HotpotQA paragraphs
  (DEFAULT_INJECTED_DISTRACTORS per case, drawn per case with a seeded generator). The correct answer is
  not in that corpus, so only whether the poison reaches the context is judged.

Only hotpotqa cases carry answer metrics (Case.answers_apply).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.errors import InputError
from .attacks import seeded
from .data import (DEFAULT_DISTRACTORS, DEFAULT_HOTPOT, SHARED_DATA, Case, Passage, _norm_space, answer_aliases,
                   build_cases, read_jsonl, read_jsonl_numbered)

DATASETS = ("hotpotqa", "biogen", "nq", "msmarco")
DEFAULT_BIOGEN = SHARED_DATA / "robustrag_biogen.jsonl"
DEFAULT_POISON_FILES = {name: SHARED_DATA / f"poisonedrag_{name}.jsonl" for name in ("hotpotqa", "nq", "msmarco")}
DEFAULT_INJECTED_DISTRACTORS = 50


def paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs, whitespace collapsed, empty ones dropped."""
    return [_norm_space(p) for p in text.replace("\r\n", "\n").split("\n\n") if p.strip()]


def _need(row: Any, where: str, fields: dict[str, type]) -> None:
    if not isinstance(row, dict):
        raise InputError(f"{where}: expected a JSON object, found {type(row).__name__}")
    for key, kind in fields.items():
        if not isinstance(row.get(key), kind):
            raise InputError(f"{where}: key '{key}' missing or not a {kind.__name__}")


def build_biogen(numbered: list[tuple[int, Any]], path: Path, distractors_per_case: int) -> list[Case]:
    if distractors_per_case < 0:
        raise InputError(f"--distractors-per-case must not be negative, found {distractors_per_case}")
    questions = []
    for line, row in numbered:
        where = f"{path}: line {line}"
        _need(row, where, {"id": str, "question": str, "incorrect_answer": str, "passages": list,
                           "adv_texts": list})
        own = []
        for i, p in enumerate(row["passages"]):
            if not isinstance(p, dict) or not all(isinstance(p.get(k), str) for k in ("id", "title", "text")):
                raise InputError(f"{where}: passages[{i}] needs string id, title and text")
            if p["text"].strip():
                # Ids under the question ("<qid>/<id>"), as HotpotQA's, so Case.own_passages finds them.
                own.append(Passage(f"{row['id']}/{p['id']}", p["title"], _norm_space(p["text"]), False))
        if not all(isinstance(t, str) for t in row["adv_texts"]) or not row["adv_texts"]:
            raise InputError(f"{where}: adv_texts must be a non-empty list of strings")
        poison = [para for text in row["adv_texts"] for para in paragraphs(text)]
        if not poison:
            raise InputError(f"{where}: adv_texts holds no text")
        questions.append((row, own, poison))
    cases = []
    for at, (row, own, poison) in enumerate(questions):
        seen: set[str] = set()
        passages = []
        for p in own:
            if p.text not in seen:
                seen.add(p.text)
                passages.append(p)
        added = 0
        for step in range(1, len(questions)):
            if added >= distractors_per_case:
                break
            for p in questions[(at + step) % len(questions)][1]:
                if added >= distractors_per_case:
                    break
                if p.text not in seen:
                    seen.add(p.text)
                    passages.append(p)
                    added += 1
        correct = row.get("correct_answer", "")
        cases.append(Case(row["id"], row["question"], (correct,) if isinstance(correct, str) and correct else (),
                          row["incorrect_answer"], tuple(passages), tuple(poison),
                          {"own_passages": len(own)}, dataset="biogen"))
    return cases


def build_injected(dataset: str, numbered: list[tuple[int, Any]], path: Path, hotpot_rows: list[dict[str, Any]],
                   per_case: int = DEFAULT_INJECTED_DISTRACTORS) -> list[Case]:
    """PoisonedRAG targets with a corpus of `per_case` HotpotQA paragraphs each (no gold passage)."""
    if per_case < 1:
        raise InputError(f"--distractors-per-case must be at least 1 for {dataset}, found {per_case}")
    pool: list[Passage] = []
    seen: set[str] = set()
    for i, row in enumerate(sorted(hotpot_rows, key=lambda r: (r.get("dev_index", 0), str(r.get("id"))))):
        if not isinstance(row.get("context"), list):
            raise InputError(f"HotpotQA record {i + 1}: key 'context' missing or not a list")
        for j, para in enumerate(row["context"]):
            key = _norm_space(para.get("text", ""))
            if key and key not in seen:
                seen.add(key)
                pool.append(Passage(f"{row['id']}/p{j}", para.get("title", ""), para["text"], False))
    cases = []
    for line, row in numbered:
        where = f"{path}: line {line}"
        _need(row, where, {"id": str, "question": str, "correct_answer": str, "incorrect_answer": str,
                           "adv_texts": list})
        if not row["adv_texts"] or not all(isinstance(t, str) for t in row["adv_texts"]):
            raise InputError(f"{where}: adv_texts must be a non-empty list of strings")
        picked = sorted(seeded(dataset, row["id"], "distractors").sample(range(len(pool)), min(per_case, len(pool))))
        cases.append(Case(row["id"], row["question"], tuple(answer_aliases(row["correct_answer"])),
                          row["incorrect_answer"], tuple(pool[i] for i in picked), tuple(row["adv_texts"]),
                          {}, dataset=dataset))
    return cases


def load_dataset(dataset: str, *, hotpot: Path | None = None, poison: Path | None = None,
                 biogen: Path | None = None, distractors_per_case: int | None = None) -> tuple[list[Case], list[str], dict]:
    """(cases, ids of targets skipped, the sources used)."""
    if dataset not in DATASETS:
        raise InputError(f"--dataset: expected one of {', '.join(DATASETS)}, found {dataset!r}")
    hotpot = Path(hotpot) if hotpot else DEFAULT_HOTPOT
    if dataset == "biogen":
        path = Path(biogen) if biogen else DEFAULT_BIOGEN
        per_case = DEFAULT_DISTRACTORS if distractors_per_case is None else distractors_per_case
        cases = build_biogen(read_jsonl_numbered(path, "RobustRAG biogen file (--biogen)"), path, per_case)
        return cases, [], {"biogen": str(path), "distractors_per_case": per_case}
    poison = Path(poison) if poison else DEFAULT_POISON_FILES[dataset]
    hotpot_rows = read_jsonl(hotpot, "HotpotQA sample (--hotpot)")
    if dataset == "hotpotqa":
        per_case = DEFAULT_DISTRACTORS if distractors_per_case is None else distractors_per_case
        cases, missing = build_cases(hotpot_rows, read_jsonl(poison, "PoisonedRAG targets (--poison)"), per_case)
    else:
        per_case = DEFAULT_INJECTED_DISTRACTORS if distractors_per_case is None else distractors_per_case
        cases = build_injected(dataset, read_jsonl_numbered(poison, "PoisonedRAG targets (--poison)"), poison,
                               hotpot_rows, per_case)
        missing = []
    return cases, missing, {"hotpot": str(hotpot), "poison": str(poison), "distractors_per_case": per_case}
