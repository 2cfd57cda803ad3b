"""`python main.py gateway train`: fits the injection classifier and writes its weights.

Training data (never the test split, never copied into the project):
- the dev split of `../shared/data/prompt_injections.jsonl` (labels as published);
- benign tool output the project owns: every passage of resources/corpus and every sentence of it
  (what the fleet's retrievers and extractive generators send), and resources/gateway/
  benign_agent_traffic.jsonl (emails, to-do lists, password resets, contact lines, written here);
- resources/gateway/attack_seeds.jsonl (injections written here, English and Chinese).
Logistic regression with class-balanced weights and L2, by AdaGrad over the sparse hashed features.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..corpus import load_corpus
from ..errors import InputError
from ..evaluation.data import SHARED_DATA, read_jsonl_numbered
from ..evaluation.splits import split_of
from ..text import sentences
from . import features
from .scanners.classifier import MODEL_PATH

RESOURCES = Path(__file__).resolve().parents[2] / "resources"
DEFAULT_DATA = SHARED_DATA / "prompt_injections.jsonl"
BENIGN = RESOURCES / "gateway" / "benign_agent_traffic.jsonl"
SEEDS = RESOURCES / "gateway" / "attack_seeds.jsonl"
EPOCHS, RATE, L2 = 12, 0.5, 1e-5


@dataclass(frozen=True)
class Example:
    text: str
    label: int
    origin: str


def examples(data: Path = DEFAULT_DATA, *, exclude_source: str = "") -> list[Example]:
    out = []
    for line, row in read_jsonl_numbered(data, "prompt-injection data"):
        if not isinstance(row, dict) or not isinstance(row.get("text"), str) or row.get("label") not in (0, 1):
            raise InputError(f"{data}: line {line}: expected text and label 0 or 1")
        if split_of(str(row.get("id", line))) == "dev" and row.get("source_short") != exclude_source:
            out.append(Example(row["text"], int(row["label"]), str(row.get("source_short", "data"))))
    out = _inserted_only(out)
    chunks = load_corpus(RESOURCES / "corpus").chunks
    out += [Example(c.text, 0, "corpus") for c in chunks]
    out += [Example(s, 0, "corpus-sentence") for s in dict.fromkeys(s for c in chunks for s in sentences(c.text))]
    for path, label in ((BENIGN, 0), (SEEDS, 1)):
        out += [Example(row["text"], label, path.stem) for _, row in read_jsonl_numbered(path, path.name)]
    return out


def _inserted_only(rows: list[Example]) -> list[Example]:
    """An injected record built by inserting an attack into a clean document whose clean copy is also
    here: its label belongs to the inserted text, not to the document around it (else the detector
    learns that emails are injections). Such a record trains on what was inserted."""
    clean = [e.text for e in rows if e.label == 0 and len(e.text) > 200]
    out = []
    for e in rows:
        host = next((c for c in clean if e.label == 1 and c in e.text), None) if e.label == 1 else None
        inserted = e.text.replace(host, " ").strip() if host else ""
        out.append(Example(inserted, 1, e.origin) if inserted else e)
    return out


def fit(train: list[Example], seed: int = 0) -> tuple[np.ndarray, float]:
    rng = np.random.default_rng(seed)
    vectors = [features.vector(e.text) for e in train]
    labels = np.array([e.label for e in train], dtype=np.float32)
    positive = labels.mean()
    weight_of = {1: 0.5 / positive, 0: 0.5 / (1 - positive)}      # each class counts half
    w = np.zeros(features.DIM, dtype=np.float64)
    b = 0.0
    g2 = np.full(features.DIM, 1e-8)
    gb2 = 1e-8
    for _ in range(EPOCHS):
        for i in rng.permutation(len(train)):
            idx, val = vectors[i]
            p = 1.0 / (1.0 + np.exp(-(w[idx] @ val + b)))
            grad = (p - labels[i]) * weight_of[int(labels[i])]
            gw = grad * val + L2 * w[idx]
            g2[idx] += gw * gw
            w[idx] -= RATE * gw / np.sqrt(g2[idx])
            gb2 += grad * grad
            b -= RATE * grad / np.sqrt(gb2)
    return w.astype(np.float16), float(b)


def save(w: np.ndarray, b: float, path: Path = MODEL_PATH) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, w=w, b=np.float32(b))
    return path


def main(data: Path = DEFAULT_DATA, out: Path = MODEL_PATH) -> dict:
    train = examples(data)
    w, b = fit(train)
    path = save(w, b, out)
    summary = {"examples": len(train), "positives": sum(e.label for e in train), "bytes": path.stat().st_size,
               "path": str(path)}
    print(json.dumps(summary))
    return summary
