"""The LLM judge and the meaning verifier on the same claims: HotpotQA questions of one split, the honest
extractive and paraphrased claims against the role swaps, splices and in-passage swaps the evaluation's lie
builders make of them, and (the answers task) the honest answer against the true-but-irrelevant lie (bench/evaluation/lies.py, which import nothing of the defence). Each claim is read
against its aligned evidence, as the product reads it. Prints per-kind P(yes) rates and AUCs, writes a JSON report.

    make judge; .venv/bin/python bench/judge_pairs.py --split dev --limit 40 --json reports/judge/pairs_dev.json

About 1.5 s a judged claim on two idle cores (40 questions: about 4 minutes)."""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.evaluation.generation import load_questions           # noqa: E402
from bench.evaluation.generation_metrics import contains_gold     # noqa: E402
from bench.evaluation.honest_generators import HonestKind, generate_all   # noqa: E402
from bench.evaluation.lies import Lie, role_swap, splice, swap_in_passage, true_irrelevant   # noqa: E402
from bench.evaluation.splits import split_of                      # noqa: E402
from engine.engine import default_cache_dir                       # noqa: E402
from engine.text import aligned_evidence                          # noqa: E402
from engine.types import Chunk                                    # noqa: E402
from engine.verify.judge import ANSWERS_AT, SUPPORTED_AT, QwenYesNo          # noqa: E402
from engine.verify.judge_model import judge_model_path            # noqa: E402
from engine.verify.meaning import ANSWERS, ENTAILS, MeaningModel  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
THRESHOLDS = (0.3, 0.5, 0.7, 0.8, 0.9, 0.95)


def auc(pos: list[float], neg: list[float]) -> float | None:
    if not pos or not neg:
        return None
    return round(sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg)), 3)


def prepared(question) -> tuple[tuple[Chunk, ...], dict]:
    """The question's passages as chunks, and what each honest generator answers from them."""
    context = tuple(Chunk(p.id, p.text, metadata={"title": p.title}) for p in question.passages)
    return context, generate_all(question.question, context)


def claims_of(question, context: tuple[Chunk, ...], honest: dict, rng: random.Random) -> list[tuple[str, bool, str, str]]:
    """(kind, honest, claim, premise) for one question."""
    by_id = {c.id: c for c in context}
    out = []
    for kind in (HonestKind.EXTRACTIVE, HonestKind.PARAPHRASE):
        generation = honest[kind]
        for claim in generation.claims:
            cited = [by_id[c].text for c in claim.citations if c in by_id]
            out.append((kind.value, True, claim.text, aligned_evidence(claim.text, cited)))
    base = honest[HonestKind.EXTRACTIVE]
    if not base.claims or not base.claims[0].citations:
        return out
    sentence, chunk = base.claims[0].text, by_id.get(base.claims[0].citations[0])
    if chunk is None:
        return out
    for lie in (role_swap(question.question, sentence, chunk), splice(question.question, sentence, chunk, context),
                swap_in_passage(question.question, sentence, chunk, question.answers, rng)):
        if isinstance(lie, Lie):
            claim = lie.generation.claims[0]
            cited = [by_id[c].text for c in claim.citations if c in by_id]
            out.append((lie.kind.value, False, claim.text, aligned_evidence(claim.text, cited)))
    return out


def answers_of(question, context: tuple[Chunk, ...], honest: dict) -> list[tuple[str, bool, str]]:
    """(kind, holds the gold answer, answer) for the answers task: the honest extractive answer, the gold answer
    alone (as a short LLM answer reads), and the true-but-irrelevant lie (a true sentence of a passage that does
    not support the answer)."""
    out = []
    base = honest[HonestKind.EXTRACTIVE]
    if base.answer:
        gold = contains_gold(base.answer, question.answers)
        out.append(("honest holding gold" if gold else "honest without gold", gold, base.answer))
    out.append(("gold alone", True, question.answers[0]))
    said = [g.answer for g in honest.values()] + [c.text for g in honest.values() for c in g.claims]
    supporting = frozenset(p.id for p in question.passages if p.gold)
    lie = true_irrelevant(question.question, context, supporting, question.answers, said)
    if isinstance(lie, Lie):
        out.append(("true-irrelevant", False, lie.text))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=("dev", "test"))
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--answers-only", action="store_true", help="skip the claims: the answers task alone")
    args = parser.parse_args(argv)
    rng = random.Random(0)
    questions = [q for q in load_questions(None) if split_of(q.id) == args.split][:args.limit]
    made = [(q, *prepared(q)) for q in questions]
    rows = [] if args.answers_only else [
        row for q, context, honest in made for row in claims_of(q, context, honest, rng) if row[3]]
    judge = QwenYesNo(judge_model_path(default_cache_dir()))
    meaning = MeaningModel(ROOT / "resources" / "models" / "meaning")
    entails = meaning.score(ENTAILS, [(premise, claim) for _, _, claim, premise in rows]) if rows else []
    scored, started = [], time.perf_counter()
    for number, (row, p_entails) in enumerate(zip(rows, entails), start=1):
        scored.append((*row, judge.p_yes(row[3], row[2]), p_entails))
        print(f"\r{number}/{len(rows)} claims judged", end="", file=sys.stderr, flush=True)
    per_claim_s = (time.perf_counter() - started) / max(1, len(rows))
    print(file=sys.stderr)
    answers = [(q.question, *row) for q, context, honest in made for row in answers_of(q, context, honest)]
    answers_meaning = meaning.score(ANSWERS, [(question, text) for question, _, _, text in answers])
    answers_judge = [judge.p_answers(question, text) for question, _, _, text in answers]
    report = {"split": args.split, "questions": len(questions), "claims": len(rows), "judge_s_per_claim":
              round(per_claim_s, 2), "supported_at": SUPPORTED_AT, "answers_at": ANSWERS_AT, "meaning_threshold": 0.5,
              "kinds": {}}
    honest_judge = [s[4] for s in scored if s[1]]
    honest_meaning = [s[5] for s in scored if s[1]]
    for kind in dict.fromkeys(s[0] for s in scored):
        mine = [s for s in scored if s[0] == kind]
        entry = {"n": len(mine), "judge_supported": round(sum(s[4] >= SUPPORTED_AT for s in mine) / len(mine), 3),
                 "meaning_supported": round(sum(s[5] >= 0.5 for s in mine) / len(mine), 3)}
        entry["judge_supported_at"] = {str(t): round(sum(s[4] >= t for s in mine) / len(mine), 3)
                                       for t in THRESHOLDS}
        if not mine[0][1]:
            entry["judge_auc_vs_honest"] = auc(honest_judge, [s[4] for s in mine])
            entry["meaning_auc_vs_honest"] = auc(honest_meaning, [s[5] for s in mine])
        report["kinds"][kind] = entry
    report["answers"] = {}
    for kind in dict.fromkeys(a[1] for a in answers):
        picked = [i for i, a in enumerate(answers) if a[1] == kind]
        report["answers"][kind] = {
            "n": len(picked),
            "judge_answers": round(sum(answers_judge[i] >= ANSWERS_AT for i in picked) / len(picked), 3),
            "judge_answers_at": {str(t): round(sum(answers_judge[i] >= t for i in picked) / len(picked), 3)
                                 for t in THRESHOLDS},
            "meaning_answers": round(sum(answers_meaning[i] >= 0.5 for i in picked) / len(picked), 3)}
    gold = [i for i, a in enumerate(answers) if a[2]]
    lies = [i for i, a in enumerate(answers) if a[1] == "true-irrelevant"]
    report["answers_auc_gold_vs_irrelevant"] = {
        "judge": auc([answers_judge[i] for i in gold], [answers_judge[i] for i in lies]),
        "meaning": auc([answers_meaning[i] for i in gold], [answers_meaning[i] for i in lies])}
    print(json.dumps(report, indent=2))
    report["claims_scored"] = [{"kind": k, "honest": h, "claim": c, "premise": p, "judge": round(j, 4),
                                "meaning": round(m, 4)} for k, h, c, p, j, m in scored]
    report["answers_scored"] = [{"kind": kind, "holds_gold": gold, "question": question, "answer": text,
                                 "judge": round(j, 4), "meaning": round(m, 4)}
                                for (question, kind, gold, text), j, m in zip(answers, answers_judge, answers_meaning)]
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
