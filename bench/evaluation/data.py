"""Poisoning cases from the shared public data: HotpotQA dev questions + PoisonedRAG's adversarial texts.

A case is one PoisonedRAG target question that is also in the HotpotQA sample:
`{id, question, correct_answers, incorrect_answer, passages: [{id, title, text, gold}], poison: [str],
dataset}`. Other data sets (biogen, nq, msmarco) are built into the same shape by `datasets`.
Its passages are the question's own paragraphs (`<qid>/p<i>`, gold = title in `supporting_titles`)
plus distractor paragraphs taken from the next questions of the sample in `dev_index` order.
The data files are read where they lie; nothing is copied into the project.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from engine.errors import InputError

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = PROJECT_ROOT.parent / "shared" / "data"
DEFAULT_HOTPOT = SHARED_DATA / "hotpotqa_dev_sample.jsonl"
DEFAULT_POISON = SHARED_DATA / "poisonedrag_hotpotqa.jsonl"
DEFAULT_DISTRACTORS = 40


@dataclass(frozen=True)
class Passage:
    id: str
    title: str
    text: str
    gold: bool = False


@dataclass(frozen=True)
class Case:
    id: str
    question: str
    correct_answers: tuple[str, ...]
    incorrect_answer: str
    passages: tuple[Passage, ...]
    poison: tuple[str, ...]
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    dataset: str = "hotpotqa"

    @property
    def answers_apply(self) -> bool:
        """Answer metrics mean something only where the corpus holds the correct answer and the incorrect
        answer is a short phrase: HotpotQA. biogen's incorrect answer is a vague sentence; nq and
        msmarco targets are injected into a corpus that does not hold their correct answer."""
        return self.dataset == "hotpotqa"

    @property
    def own_passages(self) -> tuple[Passage, ...]:
        return tuple(p for p in self.passages if p.id.startswith(f"{self.id}/"))

    @property
    def gold_passages(self) -> tuple[Passage, ...]:
        return tuple(p for p in self.passages if p.gold)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "question": self.question, "correct_answers": list(self.correct_answers),
                "incorrect_answer": self.incorrect_answer,
                "passages": [{"id": p.id, "title": p.title, "text": p.text, "gold": p.gold} for p in self.passages],
                "poison": list(self.poison), "dataset": self.dataset, **self.extra}

    @classmethod
    def from_json(cls, data: Any, where: str) -> "Case":
        if not isinstance(data, dict):
            raise InputError(f"{where}: expected a JSON object, found {type(data).__name__}")
        for key, kind in (("id", str), ("question", str), ("correct_answers", list), ("incorrect_answer", str),
                          ("passages", list), ("poison", list)):
            if not isinstance(data.get(key), kind):
                raise InputError(f"{where}: key '{key}' missing or not a {kind.__name__}")
        passages = []
        for i, p in enumerate(data["passages"]):
            if not isinstance(p, dict) or not all(isinstance(p.get(k), str) for k in ("id", "title", "text")):
                raise InputError(f"{where}: passages[{i}] needs string id, title and text")
            passages.append(Passage(p["id"], p["title"], p["text"], bool(p.get("gold", False))))
        if not all(isinstance(t, str) for t in data["poison"]) or not all(
                isinstance(a, str) for a in data["correct_answers"]):
            raise InputError(f"{where}: poison and correct_answers must be lists of strings")
        dataset = data.get("dataset", "hotpotqa")
        if not isinstance(dataset, str):
            raise InputError(f"{where}: key 'dataset' must be a string")
        known = {"id", "question", "correct_answers", "incorrect_answer", "passages", "poison", "dataset"}
        return cls(data["id"], data["question"], tuple(data["correct_answers"]), data["incorrect_answer"],
                   tuple(passages), tuple(data["poison"]), {k: v for k, v in data.items() if k not in known},
                   dataset)


def read_jsonl(path: Path, what: str) -> list[dict[str, Any]]:
    return [row for _, row in read_jsonl_numbered(path, what)]


def read_jsonl_numbered(path: Path, what: str) -> list[tuple[int, Any]]:
    """(line number, parsed value) for every non-blank line; InputError naming the file and line."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: {what} not found")
    rows = []
    try:
        with path.open(encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                if line.strip():
                    try:
                        rows.append((number, json.loads(line)))
                    except json.JSONDecodeError as exc:
                        raise InputError(f"{path}: line {number} is not JSON ({exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    return rows


def answer_aliases(answer: str) -> list[str]:
    """The answer plus aliases derivable from it alone: without a leading article, without a
    trailing parenthesis. Nothing is looked up; '8 km' never becomes '5 miles'."""
    out = [answer.strip()]
    for alias in (re.sub(r"^(the|a|an)\s+", "", answer.strip(), flags=re.I),
                  re.sub(r"\s*\([^)]*\)\s*$", "", answer.strip())):
        if alias and alias.lower() not in {a.lower() for a in out}:
            out.append(alias)
    return out


def _norm_space(text: str) -> str:
    return " ".join(text.split())


def build_cases(hotpot_rows: list[dict[str, Any]], poison_rows: list[dict[str, Any]],
                distractors_per_case: int = DEFAULT_DISTRACTORS) -> tuple[list[Case], list[str]]:
    """Cases in PoisonedRAG's order; also returns the ids of targets missing from the HotpotQA rows."""
    if distractors_per_case < 0:
        raise InputError(f"--distractors-per-case must not be negative, found {distractors_per_case}")
    for i, row in enumerate(hotpot_rows):
        for key in ("id", "question", "answer", "context", "supporting_titles"):
            if key not in row:
                raise InputError(f"HotpotQA record {i + 1}: key '{key}' missing")
    for i, row in enumerate(poison_rows):
        for key in ("id", "question", "incorrect_answer", "adv_texts"):
            if key not in row:
                raise InputError(f"PoisonedRAG record {i + 1}: key '{key}' missing")
    ordered = sorted(hotpot_rows, key=lambda r: (r.get("dev_index", 0), r["id"]))
    position = {row["id"]: i for i, row in enumerate(ordered)}
    cases, missing = [], []
    for target in poison_rows:
        if target["id"] not in position:
            missing.append(target["id"])
            continue
        at = position[target["id"]]
        row = ordered[at]
        supporting = set(row["supporting_titles"])
        passages: list[Passage] = []
        seen: set[str] = set()
        for i, para in enumerate(row["context"]):
            key = _norm_space(para["text"])
            if key in seen:
                continue
            seen.add(key)
            passages.append(Passage(f"{row['id']}/p{i}", para["title"], para["text"], para["title"] in supporting))
        added = 0
        for step in range(1, len(ordered)):
            if added >= distractors_per_case:
                break
            other = ordered[(at + step) % len(ordered)]
            for i, para in enumerate(other["context"]):
                key = _norm_space(para["text"])
                if added >= distractors_per_case or key in seen:
                    continue
                seen.add(key)
                passages.append(Passage(f"{other['id']}/p{i}", para["title"], para["text"], False))
                added += 1
        correct = answer_aliases(row["answer"])
        extra = {"dev_index": row.get("dev_index"), "type": row.get("type"),
                 "poisonedrag_correct_answer": target.get("correct_answer", ""),
                 # PoisonedRAG's targets were chosen against its own (LLM-made) correct answers; a few of
                 # its incorrect answers are HotpotQA's gold answer. Kept, and flagged.
                 "incorrect_is_gold": _same(target["incorrect_answer"], row["answer"])}
        cases.append(Case(row["id"], row["question"], tuple(correct), target["incorrect_answer"],
                          tuple(passages), tuple(target["adv_texts"]), extra))
    return cases, missing


def _same(a: str, b: str) -> bool:
    from .textmatch import normalize_tokens
    return normalize_tokens(a) == normalize_tokens(b)


def load_cases_from_sources(hotpot: Path | None = None, poison: Path | None = None,
                            distractors_per_case: int = DEFAULT_DISTRACTORS) -> tuple[list[Case], list[str]]:
    hotpot = Path(hotpot) if hotpot else DEFAULT_HOTPOT
    poison = Path(poison) if poison else DEFAULT_POISON
    return build_cases(read_jsonl(hotpot, "HotpotQA sample (--hotpot)"),
                       read_jsonl(poison, "PoisonedRAG targets (--poison)"), distractors_per_case)


def read_cases(path: Path) -> list[Case]:
    rows = read_jsonl(path, "cases file (--file)")
    cases = [Case.from_json(row, f"{path}: line {i + 1}") for i, row in enumerate(rows)]
    if not cases:
        raise InputError(f"{path}: no cases in the file")
    return cases


def write_cases(cases: Iterable[Case], path: Path) -> int:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as fh:
        for case in cases:
            fh.write(json.dumps(case.to_json(), ensure_ascii=False) + "\n")
            count += 1
    return count
