"""Fits the injection classifier and writes its weights (`main.py gateway train`, bench/train/cli.py).

Training data (never the test split, never copied into the project):
- the dev split of `../shared/data/prompt_injections.jsonl` (labels as published). An injected record
  whose clean copy is also in dev trains on what was inserted; one whose clean copy is not in dev is
  left out (its label belongs to a line we cannot find, and the rest of it is somebody's e-mail);
- benign tool output the project owns, the dev half of it (split by the same hash as the shared data,
  so the other half measures false positives): resources/corpus passages, and resources/gateway/
  benign_agent_traffic.jsonl (e-mails, to-do lists, password resets, API results, code, EN and ZH);
- resources/gateway/benign_operator_requests.jsonl (ordinary questions and requests an operator types);
- resources/gateway/attack_seeds.jsonl (injections written here, English and Chinese; a seed that
  paraphrases a public family's template names it in "paraphrases", for the leave-one-out folds).

Two heads over the same hashed features (engine/gateway/features.py): DATA (passages, tool results, agent
messages: any order addressed to the reader is an injection, a bare "Write a poem" included) and USER
(the operator's own words: asking for a poem is normal, overriding the engine's rules is not).
Negatives train on every piece they are scored in (windows and sentences), positives on their windows.
Each source counts by the square root of its size (one large source does not drown the others) and the
classes count half each. L2-regularised logistic regression, fitted by L-BFGS: deterministic.

Calibration: the operating point of each head is picked on out-of-fold scores of the dev data (5
folds, records that share a host document in one fold), at a false-positive rate well under the
target, then folded into the bias so that DATA 0.5 and USER 0.6 (GatewaySettings data_block and
user_escalate) are that point.
"""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from bench.evaluation.data import SHARED_DATA, read_jsonl_numbered
from bench.evaluation.splits import DEV, split_of
from engine.errors import InputError
from engine.gateway import features
from engine.gateway.scanners.classifier import MODEL_PATH, USER_POINT
from engine.ingest.corpus import load_corpus

RESOURCES = Path(__file__).resolve().parents[2] / "resources"
DEFAULT_DATA = SHARED_DATA / "prompt_injections.jsonl"
CORPUS = RESOURCES / "corpus"
BENIGN = RESOURCES / "gateway" / "benign_agent_traffic.jsonl"
OPERATOR = RESOURCES / "gateway" / "benign_operator_requests.jsonl"
SEEDS = RESOURCES / "gateway" / "attack_seeds.jsonl"
# seed kinds that are attacks in the operator's own words too (the rest only inside data)
USER_KINDS = frozenset({"override", "jailbreak", "leak", "fake-system"})
HEADS = ("data", "user")

L2 = 3e-6                 # on the mean weighted log-loss
SOURCE_POWER = 0.5        # a source of n examples weighs n ** SOURCE_POWER
FOLDS = 5
# the operating point: the out-of-fold benign score (dev records and the project's benign texts) that
# this share of them reach, per head
TARGET_FPR = {"data": 0.01, "user": 0.01}     # half the data target (0.02): the margin
MARGIN = 0.25             # and this much further up in logit units


@dataclass(frozen=True)
class Example:
    text: str
    label: int
    origin: str
    head: str = "data"      # "data", "user" or "both": which head learns it
    group: str = ""         # examples of one group share a fold (a host document and its injected copies)
    paraphrases: str = ""   # the public family (injection_loso's unit) a project text paraphrases, if any: it
                            # does not train a fold that holds that family out


def content_id(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def read_rows(data: Path = DEFAULT_DATA) -> list[dict]:
    """Every record of the file, checked; each keeps its line number as "id" when it has none."""
    out = []
    for line, row in read_jsonl_numbered(data, "prompt-injection data"):
        if not isinstance(row, dict) or not isinstance(row.get("text"), str) or row.get("label") not in (0, 1):
            raise InputError(f"{data}: line {line}: expected text and label 0 or 1")
        if row.get("channel", "data") not in ("data", "user"):
            raise InputError(f"{data}: line {line}: 'channel' must be \"data\" or \"user\"")
        out.append({**row, "id": str(row.get("id", line))})
    return out


def dev_rows(data: Path = DEFAULT_DATA) -> list[dict]:
    return [row for row in read_rows(data) if split_of(row["id"]) == DEV]


def shared_examples(rows: Sequence[dict], *, exclude_source: str = "") -> tuple[list[Example], list[dict]]:
    """The dev rows as examples, and the injected records left out (no clean copy in dev: see
    located())."""
    rows = [r for r in rows if str(r.get("source_short", "data")) != exclude_source or not exclude_source]
    clean = {r["text"]: content_id(r["text"]) for r in rows if r["label"] == 0 and len(r["text"]) > 200}
    out, skipped = [], []
    for r in rows:
        text, label, channel = r["text"], int(r["label"]), r.get("channel", "data")
        origin = str(r.get("source_short", "data"))
        group = content_id(text)
        host = next((c for c in clean if c in text), None) if label == 1 and r.get("derived") else None
        if host is not None:
            text, group = text.replace(host, " ").strip(), clean[host]
        elif label == 1 and "injected" in str(r.get("category", "")):
            skipped.append(r)     # a copy of a document that is not in dev: which line was inserted is unknown
            continue
        head = ("both" if label == 1 else "user") if channel == "user" else "data"
        out.append(Example(text, label, origin, head, group))
    return out, skipped


def located(skipped: Sequence[dict], w: np.ndarray, b: float) -> list[Example]:
    """Injected records without their clean copy: the inserted text is the sentence or line a first
    model finds most like an injection (multiple-instance learning, one round)."""
    out = []
    for r in skipped:
        parts = features.segments(r["text"]) or features.windows(r["text"])
        best = max(parts, key=lambda p: float(w[features.vector(p)[0]] @ features.vector(p)[1]))
        out.append(Example(best, 1, str(r.get("source_short", "data")), "data", content_id(r["text"])))
    return out


def project_examples(*, split: str | None = DEV) -> list[Example]:
    """The project's own texts; benign tool output only from `split` (None: all of it)."""
    keep = (lambda text: True) if split is None else (lambda text: split_of(content_id(text)) == split)
    out = [Example(c.text, 0, "corpus", "both", content_id(c.text)) for c in load_corpus(CORPUS).chunks
           if keep(c.text)]
    out += [Example(r["text"], 0, "benign_agent_traffic", "both", content_id(r["text"])) for r in _rows(BENIGN)
            if keep(r["text"])]
    out += [Example(r["text"], 0, "benign_operator_requests", "user", content_id(r["text"])) for r in _rows(OPERATOR)]
    out += [Example(r["text"], 1, "attack_seeds", "both" if r.get("kind") in USER_KINDS else "data",
                    content_id(r["text"]), str(r.get("paraphrases", ""))) for r in _rows(SEEDS)]
    return out


def _rows(path: Path) -> list[dict]:
    return [row for _, row in read_jsonl_numbered(path, path.name)]


def examples(data: Path = DEFAULT_DATA, *, exclude_source: str = "") -> list[Example]:
    """Every training example but the located injections (see fit_all)."""
    return shared_examples(dev_rows(data), exclude_source=exclude_source)[0] + project_examples()


def fit_all(rows: Sequence[dict], project: Sequence[Example], l2: float = L2
            ) -> tuple[dict[str, tuple[np.ndarray, float]], list[Example]]:
    """Both heads on `rows` (dev records) and the project's examples; the data head is fitted twice,
    the second time with the injections located by the first. Returns the heads and every example."""
    shared, skipped = shared_examples(rows)
    every = shared + list(project)
    heads = {"user": fit(for_head(every, "user"), l2=l2)}
    first = fit(for_head(every, "data"), l2=l2)
    every += located(skipped, *first) if skipped else []
    heads["data"] = fit(for_head(every, "data"), l2=l2) if skipped else first
    return heads, every


def for_head(train: Iterable[Example], head: str) -> list[Example]:
    return [e for e in train if e.head in (head, "both")]


# --- fitting ---------------------------------------------------------------------------------------

def _expand(train: Sequence[Example]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Training pieces: every piece of a negative, every window of a positive. Returns texts, labels and
    weights (each (label, origin) counts by the square root of its number of examples; classes half)."""
    size = Counter((e.label, e.origin) for e in train)
    texts, labels, weights = [], [], []
    for e in train:
        parts = features.windows(e.text) if e.label else features.pieces(e.text)
        share = size[(e.label, e.origin)] ** SOURCE_POWER / size[(e.label, e.origin)] / len(parts)
        for p in parts:
            texts.append(p)
            labels.append(e.label)
            weights.append(share)
    y, c = np.array(labels, dtype=np.float64), np.array(weights, dtype=np.float64)
    for label in (0, 1):
        if (y == label).any():
            c[y == label] *= 0.5 / c[y == label].sum()
    return texts, y, c


def matrix(texts: Sequence[str]):
    from scipy import sparse
    indptr, indices, values = [0], [], []
    for t in texts:
        idx, val = features.vector(t)
        indices.append(idx)
        values.append(val)
        indptr.append(indptr[-1] + len(idx))
    return sparse.csr_matrix((np.concatenate(values) if values else np.zeros(0, np.float32),
                              np.concatenate(indices) if indices else np.zeros(0, np.int64), indptr),
                             shape=(len(texts), features.DIM), dtype=np.float64)


def fit(train: Sequence[Example], seed: int = 0, l2: float = L2) -> tuple[np.ndarray, float]:
    """(weights, bias) of one head (all of `train`; pick a head's examples with for_head). `seed` is
    unused: the fit is deterministic."""
    from scipy.optimize import minimize
    texts, y, c = _expand(train)
    if not texts or len(set(y.tolist())) < 2:
        raise InputError("training needs at least one injection and one benign text")
    X = matrix(texts)
    Xt = X.T.tocsr()

    def loss(params: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = params[:-1], params[-1]
        z = X @ w + b
        p = 1.0 / (1.0 + np.exp(-z))
        value = float(c @ (np.logaddexp(0.0, z) - y * z)) + 0.5 * l2 * float(w @ w)
        r = c * (p - y)
        return value, np.concatenate([Xt @ r + l2 * w, [r.sum()]])

    found = minimize(loss, np.zeros(features.DIM + 1), jac=True, method="L-BFGS-B",
                     options={"maxiter": 500, "gtol": 1e-7})
    return found.x[:-1].astype(np.float32), float(found.x[-1])


def logits(w: np.ndarray, b: float, text: str) -> float:
    """The highest raw logit over the text's pieces (what the scanner scores, before calibration)."""
    return max(float(w[idx] @ val) + b for idx, val in (features.vector(p) for p in features.pieces(text)))


def _fold(key: str, k: int = FOLDS) -> int:
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest(), 16) % k


def row_group(row: dict, clean: Sequence[str]) -> str:
    """Rows that share a host document (a clean e-mail and its injected copies) share a group."""
    if row["label"] == 1 and row.get("derived"):
        host = next((c for c in clean if c in row["text"]), None)
        if host is not None:
            return content_id(host)
    return content_id(row["text"])


@dataclass(frozen=True)
class Scored:
    text: str
    label: int
    origin: str
    head: str         # the head that scored it ("data" or "user")
    logit: float      # the highest raw logit over its pieces, from a model that never saw its fold


def out_of_fold(rows: Sequence[dict], project: Sequence[Example], l2: float = L2, k: int = FOLDS,
                progress=None) -> list[Scored]:
    """Every dev record (in its own channel's head) and every benign project text (in each head that
    reads it) scored by models fitted without its fold; records that share a host share a fold."""
    clean = [r["text"] for r in rows if r["label"] == 0 and len(r["text"]) > 200]
    row_fold = [_fold(row_group(r, clean), k) for r in rows]
    own_fold = [_fold(e.group or content_id(e.text), k) for e in project]
    out: list[Scored] = []
    for fold in range(k):
        if progress:
            progress(f"fold {fold + 1}/{k}")
        heads, _ = fit_all([r for r, f in zip(rows, row_fold) if f != fold],
                           [e for e, f in zip(project, own_fold) if f != fold], l2)
        for r, f in zip(rows, row_fold):
            if f == fold:
                head = r.get("channel", "data")
                out.append(Scored(r["text"], int(r["label"]), str(r.get("source_short", "data")), head,
                                  logits(*heads[head], r["text"])))
        for e, f in zip(project, own_fold):
            if f == fold and e.label == 0:
                for head in HEADS:
                    if e.head in (head, "both"):
                        out.append(Scored(e.text, 0, e.origin, head, logits(*heads[head], e.text)))
    return out


def operating_logit(scored: Sequence[Scored], head: str) -> float:
    """The raw logit at which a head flags: the benign out-of-fold score at TARGET_FPR, plus MARGIN."""
    benign = sorted((s.logit for s in scored if s.head == head and s.label == 0), reverse=True)
    at = int(np.floor(TARGET_FPR[head] * len(benign)))
    return benign[min(at, len(benign) - 1)] + MARGIN


def calibrated(w: np.ndarray, b: float, threshold: float, point: float) -> tuple[np.ndarray, float]:
    """Shifts the bias so the raw `threshold` maps to the score `point` (0.5 or USER_POINT)."""
    return w, b - threshold + float(np.log(point / (1 - point)))


def save(heads: dict[str, tuple[np.ndarray, float]], path: Path = MODEL_PATH, meta: dict | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    (w, b), (wu, bu) = heads["data"], heads["user"]
    np.savez_compressed(path, w=w.astype(np.float16), b=np.float32(b), w_user=wu.astype(np.float16),
                        b_user=np.float32(bu), meta=np.array(json.dumps(meta or {}, sort_keys=True)))
    return path


def calibrated_heads(rows: Sequence[dict], project: Sequence[Example], l2: float = L2, folds: int = FOLDS,
                     progress=None) -> tuple[dict[str, tuple[np.ndarray, float]], dict, list[Example]]:
    """Both heads fitted on `rows` and `project`, each calibrated at its out-of-fold operating point.
    Returns the heads, the operating points (raw threshold, out-of-fold fpr and tpr) and every example."""
    scored = out_of_fold(rows, project, l2, folds, progress)
    if progress:
        progress("final fit on all the training rows")
    raw, every = fit_all(rows, project, l2)
    heads, points = {}, {}
    for head in HEADS:
        threshold = operating_logit(scored, head)
        heads[head] = calibrated(*raw[head], threshold, 0.5 if head == "data" else USER_POINT)
        mine = [s for s in scored if s.head == head]
        points[head] = {"raw_threshold": round(threshold, 3),
                        "oof_fpr": _rate([s.logit >= threshold for s in mine if s.label == 0]),
                        "oof_tpr": _rate([s.logit >= threshold for s in mine if s.label == 1])}
    return heads, points, every


def train(data: Path = DEFAULT_DATA, out: Path = MODEL_PATH, *, l2: float = L2, folds: int = FOLDS,
          progress=None) -> dict:
    """Fits both heads on dev, calibrates them on out-of-fold dev scores and writes the artifact."""
    rows = dev_rows(data)
    project = project_examples()
    heads, points, every = calibrated_heads(rows, project, l2, folds, progress)
    counts = Counter((str(r.get("source_short", "data")), int(r["label"])) for r in rows)
    meta = {"data": data.name, "data_sha256": hashlib.sha256(data.read_bytes()).hexdigest(), "split": DEV,
            "l2": l2, "operating_points": points}
    path = save(heads, out, meta)
    return {"path": str(path), "bytes": path.stat().st_size, "dev_rows": len(rows),
            "by_source_label": {f"{s}/{label}": n for (s, label), n in sorted(counts.items())},
            "injected_located": len(shared_examples(rows)[1]),
            "project": dict(sorted(Counter(f"{e.origin}/{e.label}" for e in project).items())),
            "examples": {head: len(for_head(every, head)) for head in HEADS},
            "operating_points": points}


def _rate(flags: Sequence[bool]) -> float | None:
    return round(float(np.mean(flags)), 4) if flags else None


# --- the seed-similarity scanner's calibration -----------------------------------------------------

SEED_TARGET_FPR = 0.005   # seeds only name near-paraphrases of known attacks: a strict point
SEED_MARGIN = 0.03        # in cosine
SEED_MIN_BENIGN = 30      # benign texts a script needs for a midpoint of its own


def calibrate_seeds(embedder, data: Path = DEFAULT_DATA, out: Path | None = None, progress=None) -> dict:
    """The cosine midpoints of the seed scanner for `embedder`, per channel and script (Latin, CJK), from
    the dev split and the dev half of the project's benign texts (the same examples the classifier trains
    on), written into seeds_calibration.json under the embedder's name. The seeds themselves are not
    scored. A script with fewer than SEED_MIN_BENIGN benign texts gets a point above its closest benign
    text and at least the other script's."""
    from engine.gateway.scanners.base import Channel
    from engine.gateway.scanners.seeds import CALIBRATION_PATH, SeedSimilarity, load_calibration
    out = out or CALIBRATION_PATH
    scanner = SeedSimilarity(embedder, calibration={})
    found: dict[str, dict] = {}
    for head, items in seed_texts(dev_rows(data), project_examples()).items():
        if progress:
            progress(f"seeds: embedding {len(items)} {head} texts")
        pieces = seed_pieces(scanner, [t for t, _, _ in items], Channel(head))
        labels = [label for _, label, _ in items]
        midpoint = seed_midpoints(pieces, labels)
        flagged = seed_flags(pieces, midpoint)
        found[head] = {"midpoint": midpoint["latin"], "midpoint_cjk": midpoint["cjk"],
                       "dev_fpr": _rate([flagged.get(i, False) for i, label in enumerate(labels) if label == 0]),
                       "dev_tpr": _rate([flagged.get(i, False) for i, label in enumerate(labels) if label == 1])}
    calibration = load_calibration(out) if out.exists() else {}
    calibration[scanner._key[0]] = {"data": found["data"]["midpoint"], "user": found["user"]["midpoint"],
                                    "data_cjk": found["data"]["midpoint_cjk"], "user_cjk": found["user"]["midpoint_cjk"],
                                    "split": DEV, "target_fpr": SEED_TARGET_FPR, "margin": SEED_MARGIN,
                                    "dev": {"data": found["data"], "user": found["user"]}}
    out.write_text(json.dumps(calibration, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return {"path": str(out), "embedder": scanner._key[0], **{head: found[head] for head in HEADS}}


SeedPiece = tuple[float, str, int]      # (cosine to the nearest seed, the piece's script, the text's index)


def seed_texts(rows: Sequence[dict], project: Sequence[Example]) -> dict[str, list[tuple[str, int, str | None]]]:
    """Per head, the texts the seed midpoints are read from: (text, label, record id) of each record in its
    own channel, then (text, 0, None) of each benign project text in every head that reads it."""
    out: dict[str, list[tuple[str, int, str | None]]] = {head: [] for head in HEADS}
    for r in rows:
        out[r.get("channel", "data")].append((r["text"], int(r["label"]), r.get("id")))
    for e in project:
        if e.label == 0:
            for head in HEADS:
                if e.head in (head, "both"):
                    out[head].append((e.text, 0, None))
    return out


def seed_pieces(scanner, texts: Sequence[str], channel) -> list[SeedPiece]:
    """Every candidate piece of every text, read once (embedding is the costly part)."""
    from engine.gateway.scanners.seeds import script
    return [(cos, script(piece), i) for i, t in enumerate(texts) for cos, piece, _ in scanner.nearest(t, channel)]


def seed_midpoints(pieces: Sequence[SeedPiece], labels: Sequence[int | None]) -> dict[str, float]:
    """The cosine midpoint per script from the benign texts' closest pieces; a text labelled None is left
    out (not part of this calibration)."""
    best: dict[tuple[int, str], float] = {}         # per benign text and script: its closest piece
    for c, s, i in pieces:
        if labels[i] == 0:
            best[(i, s)] = max(best.get((i, s), -1.0), c)
    midpoint, few = {}, []
    for written in ("latin", "cjk"):
        benign = sorted((c for (_, s), c in best.items() if s == written), reverse=True)
        if len(benign) < SEED_MIN_BENIGN:
            few.append(written)        # too few to take a quantile: above the closest one
            midpoint[written] = (benign[0] if benign else 0.0) + SEED_MARGIN
            continue
        at = min(int(np.floor(SEED_TARGET_FPR * len(benign))), len(benign) - 1)
        midpoint[written] = benign[at] + SEED_MARGIN
    for written in few:               # and never below the other script's point
        midpoint[written] = max(midpoint.values())
    return {k: round(v, 4) for k, v in midpoint.items()}


def seed_flags(pieces: Sequence[SeedPiece], midpoint: dict[str, float]) -> dict[int, bool]:
    flagged: dict[int, bool] = {}
    for c, s, i in pieces:
        flagged[i] = flagged.get(i, False) or c >= midpoint[s]
    return flagged
