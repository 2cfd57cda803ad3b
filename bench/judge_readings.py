"""The judge's readings of candidate answers against their passages, on HotpotQA questions of one split: the
data the shipped reading is chosen from (docs/evaluation.md, "The judge reads with the context").

For each question: its top passages by the question's words (the context), honest candidates (the sentence of a
supporting passage that states the gold answer, the gold answer alone as a short LLM answer reads, the honest
paraphrase and extractive generators' answers) and the lies the evaluation's builders make of the gold
sentence (bench/evaluation/lies.py, which import nothing of the defence): a true sentence that does not answer,
two names exchanged, a splice of two passages, a name swapped within the passage, the gold answer replaced by
another entity. The judge (the shipped Qwen 1.5B, in-process) is asked, with the product's prompt and passages:
- for each candidate, "is the candidate the answer these passages give to the question?" (P(yes));
- once, its own short answer from the passages.
Every reading is written to a JSONL file (one row a question) so rules can be compared without the model:
`--analyse FILE` prints each rule's pass rate per kind. The rule that ships was chosen on dev by one stated
rule, written before test was read: the largest mean honest pass rate (gold sentence, gold alone, paraphrase)
less the mean lie pass rate over the five lies; within 0.01 of the best, the lowest pass rate of the worst lie.

    .venv/bin/python bench/judge_readings.py --split dev --limit 40 --out reports/judge/readings_dev.jsonl
    .venv/bin/python bench/judge_readings.py --analyse reports/judge/readings_dev.jsonl
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.evaluation.textmatch import contains_answer, tokens                  # noqa: E402

HONEST = ("gold-sentence", "gold-short", "paraphrase")
LIES = ("true-irrelevant", "role-swap", "splice", "swap-in-passage", "wrong-relevant")
CONTEXT = 5


def _context(question) -> list:
    from engine.types import Chunk
    wanted = set(tokens(question.question))
    ranked = sorted(question.passages, key=lambda p: -len(wanted & set(tokens(f"{p.title} {p.text}"))))
    return [Chunk(p.id, p.text, metadata={"title": p.title}) for p in ranked[:CONTEXT]]


def candidates_of(question, context, rng: random.Random) -> list[dict]:
    """[{kind, honest, right, text, cited}] for one question; [] when no context sentence states the gold."""
    from bench.evaluation.generation_metrics import contains_gold
    from bench.evaluation.honest_generators import HonestKind, generate_all
    from bench.evaluation.lies import Lie, role_swap, splice, swap_in_passage, true_irrelevant, wrong_relevant
    from engine.text import sentences
    supporting = frozenset(p.id for p in question.passages if p.gold)
    gold = list(question.answers)
    frame = next(((s, c) for c in context if c.id in supporting for s in sentences(c.text)
                  if any(contains_answer(s, g) for g in gold)), None)
    if frame is None:
        return []
    sentence, chunk = frame
    out = [{"kind": "gold-sentence", "honest": True, "right": True, "text": sentence, "cited": [chunk.id]},
           {"kind": "gold-short", "honest": True, "right": True, "text": gold[0], "cited": [chunk.id]}]
    honest = generate_all(question.question, tuple(context))
    for kind in (HonestKind.PARAPHRASE, HonestKind.EXTRACTIVE):
        g = honest[kind]
        if g.answer:
            out.append({"kind": kind.value, "honest": True, "right": contains_gold(g.answer, gold), "text": g.answer,
                        "cited": sorted({c for claim in g.claims for c in claim.citations})})
    said = [g.answer for g in honest.values()] + [c.text for g in honest.values() for c in g.claims] + [sentence]
    lies = (true_irrelevant(question.question, context, supporting, gold, said),
            role_swap(question.question, sentence, chunk),
            splice(question.question, sentence, chunk, context),
            swap_in_passage(question.question, sentence, chunk, gold, rng),
            wrong_relevant(question.question, sentence, chunk.id, context, supporting, gold, rng,
                           comparison=question.type == "comparison"))
    for lie in lies:
        if isinstance(lie, Lie):
            claim = lie.generation.claims[0]
            out.append({"kind": lie.kind.value, "honest": False, "right": contains_gold(lie.generation.answer, gold),
                        "text": lie.generation.answer, "cited": list(claim.citations)})
    return out


def read(args) -> int:
    from bench.evaluation.generation import load_questions
    from bench.evaluation.generation_metrics import contains_gold
    from bench.evaluation.splits import split_of
    from engine.engine import default_cache_dir
    from engine.generation.judge_passages import agrees, shown_passages
    from engine.verify import judge_prompt
    from engine.verify.judge_model import judge_model_path
    from engine.verify.judge_runtime import LocalJudgeModel
    rng = random.Random(0)
    questions = [q for q in load_questions(None) if split_of(q.id) == args.split][:args.limit]
    model = LocalJudgeModel(judge_model_path(default_cache_dir()))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if args.out.exists():
        done = {json.loads(line)["id"] for line in args.out.read_text().splitlines() if line.strip()}
    with args.out.open("a") as out:
        for number, question in enumerate(questions, start=1):
            if question.id in done:
                continue
            context = _context(question)
            found = candidates_of(question, context, rng)
            if not found:
                out.write(json.dumps({"id": question.id, "skipped": "no context sentence states the gold answer"}) + "\n")
                continue
            passages = shown_passages(question.question, context, [c for f in found for c in f["cited"]],
                                      [f["text"] for f in found])
            started = time.perf_counter()
            for item in found:
                t = time.perf_counter()
                item["p_yes"] = model.p_yes(judge_prompt.reading(question.question, passages, item["text"]))
                item["seconds"] = round(time.perf_counter() - t, 2)
            t = time.perf_counter()
            own = model.generate(judge_prompt.own_answer(question.question, passages), 24)
            own_s = round(time.perf_counter() - t, 2)
            for item in found:
                item["agrees"] = agrees(own, item["text"])
            row = {"id": question.id, "question": question.question, "gold": list(question.answers),
                   "passages": [{"title": p.metadata.get("title", ""), "text": p.text} for p in passages], "own_answer": own,
                   "own_right": contains_gold(own, question.answers), "own_seconds": own_s,
                   "seconds": round(time.perf_counter() - started, 2), "candidates": found}
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(f"{number}/{len(questions)} {row['seconds']} s", file=sys.stderr, flush=True)
    return 0


def rules() -> dict:
    """name -> rule(candidate, row) -> passes (True: given)."""
    def p(c):
        return c["p_yes"] if c["p_yes"] is not None else 0.0

    def best_other(c, row):
        others = [p(o) for o in row["candidates"] if o is not c and o["kind"] != c["kind"]]
        return max(others, default=0.0)
    def reference(c, row):
        """P(yes) of the engine's own reader's answer (the extractive one), 0 when it is the candidate itself."""
        ex = next((o for o in row["candidates"] if o["kind"] == "extractive"), None)
        return p(ex) if ex is not None and ex["text"].strip() != c["text"].strip() else 0.0
    out = {"SHIPPED p>=0.5 within 0.05 of the engine's answer":
           lambda c, row: p(c) >= 0.5 and p(c) >= reference(c, row) - 0.05}
    out |= {f"p>={t} within {m} of the engine's answer": (lambda t, m: lambda c, row: p(c) >= t and p(c) >= reference(
        c, row) - m)(t, m) for t in (0.4, 0.5) for m in (0.0, 0.1, 0.2)}
    out |= {f"p>={t}": (lambda t: lambda c, row: p(c) >= t)(t) for t in (0.3, 0.4, 0.5, 0.6, 0.7)}
    out["agrees"] = lambda c, row: c["agrees"] is True
    for t in (0.4, 0.5):
        out[f"p>={t} and agrees is not False"] = (lambda t: lambda c, row: p(c) >= t and c["agrees"] is not False)(t)
        out[f"p>={t} and (agrees is not False or p>=0.8)"] = (
            lambda t: lambda c, row: p(c) >= t and (c["agrees"] is not False or p(c) >= 0.8))(t)
    # A second design (not shipped; dev chose against it): a candidate within m of the engine's answer that says
    # something else (under half of its words new to the question are in the engine's answer) is a dispute, so
    # not given.
    from engine.generation.judge_passages import key_words

    def says_else(c, row):
        ex = next((o for o in row["candidates"] if o["kind"] == "extractive"), None)
        if ex is None or ex["text"].strip() == c["text"].strip() or p(ex) < 0.5:
            return False
        new = key_words(c["text"]) - key_words(row["question"])
        return bool(new) and len(new & key_words(ex["text"])) / len(new) < 0.5
    for m in (0.0, 0.05, 0.1):
        out[f"SHIPPED, and a dispute where within {m} above the engine's answer and saying else"] = (
            lambda m: lambda c, row: out["SHIPPED p>=0.5 within 0.05 of the engine's answer"](c, row) and not (
                says_else(c, row) and p(c) <= reference(c, row) + m))(m)
    for t in (0.3, 0.5, 0.7):
        out[f"agrees or (unknown and p>={t})"] = (lambda t: lambda c, row: c["agrees"] is True
                                                  or (c["agrees"] is None and p(c) >= t))(t)
        out[f"agrees or p>={t}+0.3"] = (lambda t: lambda c, row: c["agrees"] is True or p(c) >= min(0.99, t + 0.3))(t)
        out[f"(agrees and p>=0.1) or (unknown and p>={t})"] = (lambda t: lambda c, row: (
            c["agrees"] is True and p(c) >= 0.1) or (c["agrees"] is None and p(c) >= t))(t)
    return out


def auc(pos: list[float], neg: list[float]) -> float | None:
    if not pos or not neg:
        return None
    return round(sum((a > b) + 0.5 * (a == b) for a in pos for b in neg) / (len(pos) * len(neg)), 3)


def analyse(path: Path) -> int:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if "candidates" in r]
    kinds = list(HONEST) + ["extractive"] + list(LIES)
    print(f"{len(rows)} questions; judge's own answer right on {sum(r['own_right'] for r in rows)}; "
          f"seconds a question p50 {sorted(r['seconds'] for r in rows)[len(rows) // 2]}")
    print("rule | " + " | ".join(f"{k} (n)" for k in kinds))
    for name, rule in rules().items():
        cells = []
        for kind in kinds:
            mine = [(c, r) for r in rows for c in r["candidates"] if c["kind"] == kind
                    and (kind != "extractive" or c["right"])]
            cells.append(f"{sum(rule(c, r) for c, r in mine) / len(mine):.2f} ({len(mine)})" if mine else "-")
        print(f"{name} | " + " | ".join(cells))
    honest = [c["p_yes"] or 0.0 for r in rows for c in r["candidates"] if c["kind"] == "gold-short"]
    print("AUC of P(yes), gold-short against each lie: " + ", ".join(
        f"{k} {auc(honest, [c['p_yes'] or 0.0 for r in rows for c in r['candidates'] if c['kind'] == k])}"
        for k in LIES))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=("dev", "test"))
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--out", type=Path, default=Path("reports/judge/readings_dev.jsonl"))
    parser.add_argument("--analyse", type=Path, help="print the rules' pass rates from a readings file, no model")
    args = parser.parse_args(argv)
    return analyse(args.analyse) if args.analyse else read(args)


if __name__ == "__main__":
    sys.exit(main())
