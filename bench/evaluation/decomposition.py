"""How well the rule-based decomposer (`engine.stages.decompose`) finds multi-hop structure, on real data.

- MuSiQue-Ans train sample: every question has 2 to 4 hops and a gold decomposition with "#1"
  placeholders, so it measures detection, hop count and the wording of the sub-questions.
- HotpotQA dev sample: every question is `bridge` or `comparison`, so it measures the shape.
- Controls: single-hop questions show how often a plain question is wrongly split: MuSiQue's own gold
  sub-questions (those written as questions), and optionally the PoisonedRAG NQ targets (all lower
  case). Both data sets above are 100% multi-hop, so a decomposer that always said BRIDGE would look
  good on them; the controls and the majority baseline keep that honest.

Every figure is given for the dev and the test split (`splits.split_of` of the record id). The rules
were written and tuned while reading dev questions only; test questions were not looked at.
The data files are read where they lie (`../shared/data`, see its PROVENANCE.md).
"""
from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from engine.errors import InputError
from engine.stages.decompose import decompose
from engine.stages.model import Decomposition, QuestionShape
from engine.text import content_words
from .data import SHARED_DATA, read_jsonl_numbered
from .splits import DEV, TEST, split_of

DEFAULT_MUSIQUE = SHARED_DATA / "musique_train_sample.jsonl"
DEFAULT_HOTPOT = SHARED_DATA / "hotpotqa_dev_sample.jsonl"
DEFAULT_CONTROL = SHARED_DATA / "poisonedrag_nq.jsonl"
HOTPOT_TYPES = {"bridge": QuestionShape.BRIDGE, "comparison": QuestionShape.COMPARISON}


@dataclass(frozen=True)
class MusiqueFigures:
    n: int
    multi_hop: float | None          # share not SINGLE (gold always has 2+ hops)
    hop_count: float | None          # share with exactly the gold number of hops
    sub_question_f1: float | None    # mean content-word F1, hop by hop
    n_gold_steps: int                # gold sub-questions written as questions (not "X >> relation")
    gold_steps_split: float | None   # share of those single-hop questions split anyway (lower is better)


@dataclass(frozen=True)
class HotpotFigures:
    n: int
    n_bridge: int
    n_comparison: int
    shape_accuracy: float | None     # predicted shape = gold type (SINGLE is a miss)
    bridge_recall: float | None
    comparison_recall: float | None
    majority_baseline: float | None  # what always answering the commonest type would score


@dataclass(frozen=True)
class ControlFigures:
    n: int
    flagged_multi_hop: float | None  # share of single-hop questions split anyway (lower is better)


@dataclass(frozen=True)
class SplitFigures:
    musique: MusiqueFigures
    hotpot: HotpotFigures
    control: ControlFigures | None


@dataclass(frozen=True)
class DecompositionReport:
    dev: SplitFigures
    test: SplitFigures
    mean_us: float                   # mean decompose() time per question, microseconds
    sources: tuple[str, ...]


def measure(musique_path: Path, hotpot_path: Path, control_path: Path | None = None) -> DecompositionReport:
    musique = _musique_records(Path(musique_path))
    hotpot = _hotpot_records(Path(hotpot_path))
    control = _control_records(Path(control_path)) if control_path is not None else None
    questions = [r["question"] for r in musique + hotpot + (control or [])]
    questions += [step for r in musique for step in _gold_questions(r)]
    started = time.perf_counter()
    predicted = {q: decompose(q) for q in questions}
    mean_us = (time.perf_counter() - started) * 1e6 / max(len(predicted), 1)

    def figures(split: str) -> SplitFigures:
        mine = [r for r in musique if split_of(r["id"]) == split]
        hot = [r for r in hotpot if split_of(r["id"]) == split]
        ctl = None if control is None else [r for r in control if split_of(r["id"]) == split]
        return SplitFigures(_musique_figures(mine, predicted), _hotpot_figures(hot, predicted),
                            None if ctl is None else _control_figures(ctl, predicted))

    sources = tuple(str(p) for p in (musique_path, hotpot_path, control_path) if p is not None)
    return DecompositionReport(figures(DEV), figures(TEST), mean_us, sources)


# ---------------------------------------------------------------- figures

def _rate(count: float, n: int) -> float | None:
    return count / n if n else None


def _musique_figures(records: list[dict[str, Any]], predicted: dict[str, Decomposition]) -> MusiqueFigures:
    multi = hops = 0
    f1 = 0.0
    for r in records:
        d = predicted[r["question"]]
        gold = [step["question"] for step in r["question_decomposition"]]
        multi += d.shape is not QuestionShape.SINGLE
        hops += len(d.hops) == len(gold)
        f1 += decomposition_f1([h.text for h in d.hops], gold)
    n = len(records)
    steps = [step for r in records for step in _gold_questions(r)]
    split = sum(predicted[step].shape is not QuestionShape.SINGLE for step in steps)
    return MusiqueFigures(n, _rate(multi, n), _rate(hops, n), _rate(f1, n), len(steps), _rate(split, len(steps)))


def _gold_questions(record: dict[str, Any]) -> list[str]:
    """The gold sub-questions written as questions: single-hop by construction, so a control."""
    return [s["question"] for s in record["question_decomposition"]
            if ">>" not in s["question"] and any(ch.isalpha() for ch in s["question"])]


def _hotpot_figures(records: list[dict[str, Any]], predicted: dict[str, Decomposition]) -> HotpotFigures:
    right: Counter[str] = Counter()
    total: Counter[str] = Counter(r["type"] for r in records)
    for r in records:
        right[r["type"]] += predicted[r["question"]].shape is HOTPOT_TYPES[r["type"]]
    n = len(records)
    return HotpotFigures(n, total["bridge"], total["comparison"], _rate(sum(right.values()), n),
                         _rate(right["bridge"], total["bridge"]), _rate(right["comparison"], total["comparison"]),
                         _rate(max(total.values(), default=0), n))


def _control_figures(records: list[dict[str, Any]], predicted: dict[str, Decomposition]) -> ControlFigures:
    flagged = sum(predicted[r["question"]].shape is not QuestionShape.SINGLE for r in records)
    return ControlFigures(len(records), _rate(flagged, len(records)))


def _bag(text: str) -> Counter[str]:
    """Content words, without the "#n" placeholders and without a possessive "'s"."""
    return Counter(re.sub(r"['’]s$", "", w) for w in content_words(re.sub(r"#\d+", " ", text)))


def token_f1(predicted: str, gold: str) -> float:
    p, g = _bag(predicted), _bag(gold)
    common = sum((p & g).values())
    if not common:
        return 1.0 if not p and not g else 0.0
    precision, recall = common / sum(p.values()), common / sum(g.values())
    return 2 * precision * recall / (precision + recall)


def decomposition_f1(predicted: list[str], gold: list[str]) -> float:
    """Hop i against gold hop i; missing or extra hops score 0, so the mean is over the longer list."""
    if not predicted or not gold:
        return 0.0
    return sum(token_f1(p, g) for p, g in zip(predicted, gold)) / max(len(predicted), len(gold))


# ---------------------------------------------------------------- reading

def _records(path: Path, what: str, check: Callable[[dict[str, Any], str], None]) -> list[dict[str, Any]]:
    out = []
    for number, row in read_jsonl_numbered(path, what):
        where = f"{path}: line {number}"
        if not isinstance(row, dict):
            raise InputError(f"{where}: expected a JSON object, found {type(row).__name__}")
        for key in ("id", "question"):
            if not isinstance(row.get(key), str) or not row[key].strip():
                raise InputError(f"{where}: key '{key}' missing or not a non-empty string")
        check(row, where)
        out.append(row)
    return out


def _check_musique(row: dict[str, Any], where: str) -> None:
    steps = row.get("question_decomposition")
    if not isinstance(steps, list) or not steps:
        raise InputError(f"{where}: key 'question_decomposition' missing or not a non-empty list")
    for i, step in enumerate(steps):
        if not isinstance(step, dict) or not isinstance(step.get("question"), str):
            raise InputError(f"{where}: question_decomposition[{i}] needs a string 'question'")


def _check_hotpot(row: dict[str, Any], where: str) -> None:
    if row.get("type") not in HOTPOT_TYPES:
        raise InputError(f"{where}: key 'type' must be one of {sorted(HOTPOT_TYPES)}, found {row.get('type')!r}")


def _musique_records(path: Path) -> list[dict[str, Any]]:
    return _records(path, "MuSiQue sample", _check_musique)


def _hotpot_records(path: Path) -> list[dict[str, Any]]:
    return _records(path, "HotpotQA sample", _check_hotpot)


def _control_records(path: Path) -> list[dict[str, Any]]:
    return _records(path, "single-hop control questions", lambda row, where: None)


# ---------------------------------------------------------------- report

def _cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _rows(report: DecompositionReport) -> Iterable[tuple[str, str, str, str]]:
    d, t = report.dev, report.test
    yield "MuSiQue n", "questions (all 2 to 4 hops)", str(d.musique.n), str(t.musique.n)
    yield ("MuSiQue multi-hop detected", "share decomposed as BRIDGE or COMPARISON, not SINGLE",
           _cell(d.musique.multi_hop), _cell(t.musique.multi_hop))
    yield ("MuSiQue hop-count accuracy", "share with exactly as many hops as the gold decomposition",
           _cell(d.musique.hop_count), _cell(t.musique.hop_count))
    yield ("MuSiQue sub-question F1", "content-word F1 of hop i vs gold hop i, placeholders ignored, "
           "averaged over the longer list", _cell(d.musique.sub_question_f1), _cell(t.musique.sub_question_f1))
    yield ("HotpotQA n (bridge / comparison)", "questions by gold type",
           f"{d.hotpot.n} ({d.hotpot.n_bridge} / {d.hotpot.n_comparison})",
           f"{t.hotpot.n} ({t.hotpot.n_bridge} / {t.hotpot.n_comparison})")
    yield ("HotpotQA shape accuracy", "share whose shape equals the gold type (SINGLE counts as a miss)",
           _cell(d.hotpot.shape_accuracy), _cell(t.hotpot.shape_accuracy))
    yield ("HotpotQA bridge recall", "share of bridge questions decomposed as BRIDGE",
           _cell(d.hotpot.bridge_recall), _cell(t.hotpot.bridge_recall))
    yield ("HotpotQA comparison recall", "share of comparison questions decomposed as COMPARISON",
           _cell(d.hotpot.comparison_recall), _cell(t.hotpot.comparison_recall))
    yield ("HotpotQA majority baseline", "shape accuracy of always answering the commonest type",
           _cell(d.hotpot.majority_baseline), _cell(t.hotpot.majority_baseline))
    yield ("MuSiQue gold sub-questions: n", "gold hops written as questions (single-hop by construction)",
           str(d.musique.n_gold_steps), str(t.musique.n_gold_steps))
    yield ("MuSiQue gold sub-questions split anyway", "share of them decomposed into 2+ hops (lower is better)",
           _cell(d.musique.gold_steps_split), _cell(t.musique.gold_steps_split))
    if d.control is not None and t.control is not None:
        yield ("Single-hop control: n", "NQ questions (single-hop, lower case)", str(d.control.n), str(t.control.n))
        yield ("Single-hop control: split anyway", "share of them decomposed into 2+ hops (lower is better)",
               _cell(d.control.flagged_multi_hop), _cell(t.control.flagged_multi_hop))


def report_markdown(report: DecompositionReport) -> str:
    lines = ["| Metric | Definition | dev | test |", "|---|---|---|---|"]
    lines += [f"| {name} | {definition} | {dev} | {test} |" for name, definition, dev, test in _rows(report)]
    lines.append("")
    lines.append(f"Mean decomposition time: {report.mean_us:.0f} µs per question. "
                 "Rules tuned on dev questions only.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(report_markdown(measure(DEFAULT_MUSIQUE, DEFAULT_HOTPOT, DEFAULT_CONTROL)), end="")
